#include "arch.h"
#include "console.h"

#define SIE_STIE (1u << 5)
#define SCAUSE_INTERRUPT (1ull << 63)
#define IRQ_S_TIMER 5u

static timer_handler on_timer;
static void (*on_exit)(void);

void irq_init(void)
{
    __asm__ volatile("csrs sie, %0" ::"r"(SIE_STIE) : "memory");
}

void irq_set_timer_handler(timer_handler h) { on_timer = h; }
void irq_set_exit_handler(void (*h)(void)) { on_exit = h; }

/* Only the supervisor timer interrupt is enabled; any other trap is a bug
 * of the image: say which, where, and stop serving (the host sees no tick
 * any more and no answer). */
void trap_handle(uint64_t now, uint64_t scause, uint64_t sepc, uint64_t stval);   /* called by trap.S */
void trap_handle(uint64_t now, uint64_t scause, uint64_t sepc, uint64_t stval)
{
    if (scause == (SCAUSE_INTERRUPT | IRQ_S_TIMER)) {
        if (on_timer)
            on_timer(now);
        else
            timer_off();   /* nobody waits for it: it would stay pending forever */
        if (on_exit)
            on_exit();
        return;
    }
    console_fatal("scause", scause, "sepc", sepc, "stval", stval);
    irq_mask();
    __asm__ volatile("csrw sie, zero" ::: "memory");
    for (;;)
        wait_for_interrupt();
}
