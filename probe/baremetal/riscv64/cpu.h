/*
 * The riscv64 side of arch.h's inline interface, in S-mode under SBI
 * firmware: the `time` CSR (rdtime) as the counter, its frequency from the
 * device tree (boot.c), the timer armed by Sstc's stimecmp or through the
 * SBI TIME extension, the supervisor timer interrupt masked by sstatus.SIE.
 */
#ifndef RTVB_BM_CPU_H
#define RTVB_BM_CPU_H

#include <stdint.h>

#define ARCH_NAME "riscv64"

#define SBI_EXT_TIME 0x54494d45u
#define SSTATUS_SIE (1u << 1)

/* The counter's frequency, read once at boot (boot.c). */
extern uint64_t timebase_hz;

static inline uint64_t counter_now(void)
{
    uint64_t v;
    __asm__ volatile("rdtime %0" : "=r"(v)::"memory");
    return v;
}

static inline uint64_t counter_hz(void) { return timebase_hz; }

/* How the timer is armed, chosen once at boot (boot.c): Sstc's stimecmp
 * (1) or the SBI call (0). */
extern int timer_sstc;

#define CSR_STIMECMP 0x14d

/* Sstc: the supervisor timer interrupt is pending while `time` >= stimecmp,
 * and a later stimecmp clears it. sbi_set_timer: the firmware does the same
 * from M-mode, so either way it stays pending until the next arming, as a
 * level interrupt does. */
static inline void timer_arm(uint64_t deadline)
{
    if (timer_sstc) {
        __asm__ volatile("csrw %0, %1" ::"i"(CSR_STIMECMP), "r"(deadline) : "memory");
        return;
    }
    register uint64_t a0 __asm__("a0") = deadline;
    register uint64_t a1 __asm__("a1");
    register uint64_t a6 __asm__("a6") = 0;
    register uint64_t a7 __asm__("a7") = SBI_EXT_TIME;
    __asm__ volatile("ecall" : "+r"(a0), "=r"(a1) : "r"(a6), "r"(a7) : "memory");
}

/* A deadline the counter never reaches. */
static inline void timer_off(void) { timer_arm(UINT64_MAX); }

static inline void irq_mask(void) { __asm__ volatile("csrc sstatus, %0" ::"r"(SSTATUS_SIE) : "memory"); }
static inline void irq_unmask(void) { __asm__ volatile("csrs sstatus, %0" ::"r"(SSTATUS_SIE) : "memory"); }
/* Waits until an interrupt enabled in `sie` is pending, whatever
 * sstatus.SIE says: masked, check, wait, unmask loses no wake-up. */
static inline void wait_for_interrupt(void) { __asm__ volatile("wfi" ::: "memory"); }

#endif
