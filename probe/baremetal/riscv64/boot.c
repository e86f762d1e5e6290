/* What the riscv64 image learns at boot (the counter's frequency, the
 * timer's path), its SBI calls outside the timer: power-off, and the
 * `meta` record's keys. */
#include "arch.h"
#include "board.h"
#include "fdt.h"
#include "jsonw.h"

#define SBI_EXT_SRST 0x53525354u
#define FDT_MAX_SIZE (2u << 20)   /* QEMU's is 1 MiB at most; read no further whatever the header says */

uint64_t timebase_hz;
int timer_sstc;
static uint64_t hart_id;
static int timebase_from_fdt;

/* Sstc's stimecmp when the board says so, or when it leaves it to the
 * device tree and the tree's ISA of this hart names sstc (firmware that
 * knows Sstc then lets S-mode write stimecmp, menvcfg.STCE). */
static int use_sstc(uint64_t hart, const void *fdt)
{
    if (BOARD_TIMER_PATH != BOARD_TIMER_AUTO)
        return BOARD_TIMER_PATH == BOARD_TIMER_SSTC;
    return fdt_hart_has_extension(fdt, FDT_MAX_SIZE, hart, "sstc") == 1;
}

void arch_boot(uint64_t hart, const void *fdt);   /* called by start.S */
void arch_boot(uint64_t hart, const void *fdt)
{
    hart_id = hart;
    timebase_hz = fdt_timebase_hz(fdt, FDT_MAX_SIZE);
    timebase_from_fdt = timebase_hz != 0;
    if (!timebase_hz)
        timebase_hz = BOARD_TIMEBASE_HZ;
    timer_sstc = use_sstc(hart, fdt);
}

/* SBI system reset: shutdown, no reason. */
void system_off(void)
{
    register uint64_t a0 __asm__("a0") = 0;
    register uint64_t a1 __asm__("a1") = 0;
    register uint64_t a6 __asm__("a6") = 0;
    register uint64_t a7 __asm__("a7") = SBI_EXT_SRST;
    __asm__ volatile("ecall" : "+r"(a0), "+r"(a1) : "r"(a6), "r"(a7) : "memory");
}

void arch_write_meta(struct jw *w)
{
    jw_str(w, "entered_mode", "S");
    jw_uint(w, "hart", hart_id);
    jw_str(w, "counter_hz_from", timebase_from_fdt ? "fdt" : "board");
    jw_str(w, "timer", timer_sstc ? "sstc" : "sbi");
}

void arch_write_sysinfo(struct jw *w)
{
    uint64_t satp;
    __asm__ volatile("csrr %0, satp" : "=r"(satp));
    jw_bool(w, "mmu_on", satp != 0);
    /* Without translation RAM is cacheable as the platform's PMAs define it. */
    jw_bool(w, "caches_on", 1);
}
