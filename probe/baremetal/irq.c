#include "irq.h"

#include "board.h"
#include "cpu.h"
#include "gic.h"
#include "pl011.h"

static timer_handler on_timer;

void irq_init(void)
{
    gic_init();
    gic_enable(BOARD_TIMER_IRQ);
}

void irq_set_timer_handler(timer_handler h) { on_timer = h; }

void irq_handle(void);   /* called by vectors.S */
void irq_handle(void)
{
    uint64_t now = counter_now();
    uint32_t iar = gic_acknowledge();
    unsigned intid = iar & 0x3ffu;
    if (intid == GIC_SPURIOUS)
        return;
    if (intid == BOARD_TIMER_IRQ) {
        if (on_timer)
            on_timer(now);
        else
            vtimer_off();   /* nobody waits for it: a level interrupt would fire forever */
    }
    gic_end(iar);
}

static void put_hex(uint64_t v)
{
    char b[19] = "0x";
    for (int i = 0; i < 16; i++)
        b[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
    b[18] = '\0';
    uart_puts(b);
}

/* A bug of the image: say which exception, where, and stop serving (the
 * host sees no tick any more and no answer). */
void exception_fatal(uint64_t kind, uint64_t esr, uint64_t elr);   /* called by vectors.S */
void exception_fatal(uint64_t kind, uint64_t esr, uint64_t elr)
{
    uart_puts("\nlog fatal exception: vector ");
    put_hex(kind);
    uart_puts(" esr ");
    put_hex(esr);
    uart_puts(" elr ");
    put_hex(elr);
    uart_puts("\n");
    for (;;)
        wait_for_interrupt();
}
