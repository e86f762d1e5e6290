#include "arch.h"
#include "board.h"
#include "console.h"
#include "gic.h"
#include "jsonw.h"

unsigned boot_el;   /* set by start.S */

static timer_handler on_timer;
static void (*on_exit)(void);

void irq_init(void)
{
    gic_init();
    gic_enable(BOARD_TIMER_IRQ);
}

void irq_set_timer_handler(timer_handler h) { on_timer = h; }
void irq_set_exit_handler(void (*h)(void)) { on_exit = h; }

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
            timer_off();   /* nobody waits for it: a level interrupt would fire forever */
    }
    gic_end(iar);
    if (on_exit)
        on_exit();
}

/* A bug of the image: say which exception, where, and stop serving (the
 * host sees no tick any more and no answer). */
void exception_fatal(uint64_t kind, uint64_t esr, uint64_t elr);   /* called by vectors.S */
void exception_fatal(uint64_t kind, uint64_t esr, uint64_t elr)
{
    console_fatal("vector", kind, "esr", esr, "elr", elr);
    for (;;)
        wait_for_interrupt();
}

/* PSCI SYSTEM_OFF, by HVC from EL1 (QEMU's `virt` answers it itself) or
 * SMC when the image was entered at EL2 (QEMU then has it at EL3). */
void system_off(void)
{
    register uint64_t x0 __asm__("x0") = 0x84000008u;
    if (boot_el == 2)
        __asm__ volatile("smc #0" : "+r"(x0)::"memory");
    else
        __asm__ volatile("hvc #0" : "+r"(x0)::"memory");
}

/* `caches_on`: read back from SCTLR_EL1, the MMU (M) and data cache (C)
 * bits that start.S set (mmu.c), so a record says its memory was cacheable. */
void arch_write_meta(struct jw *w)
{
    uint64_t sctlr;
    __asm__ volatile("mrs %0, sctlr_el1" : "=r"(sctlr));
    jw_uint(w, "entered_el", boot_el);
    jw_bool(w, "caches_on", (sctlr & 5u) == 5u);
    jw_uint(w, "gic_version", BOARD_GIC_VERSION);
}

void arch_write_sysinfo(struct jw *w)
{
    uint64_t sctlr;
    __asm__ volatile("mrs %0, sctlr_el1" : "=r"(sctlr));
    jw_str(w, "counter_hz_from", "cntfrq");    /* CNTFRQ_EL0, as the firmware or QEMU set it */
    jw_bool(w, "mmu_on", sctlr & 1u);
}
