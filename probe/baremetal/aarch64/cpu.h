/*
 * The aarch64 registers the image uses: the generic timer's virtual counter
 * and EL1 virtual timer (CNTVCT, CNTFRQ, CNTV_CVAL, CNTV_CTL), interrupt
 * masking: the inline part of arch.h's interface.
 */
#ifndef RTVB_BM_CPU_H
#define RTVB_BM_CPU_H

#include <stdint.h>

#include "board.h"

/* The exception level start.S was entered at: 1, or 2 when it dropped to EL1. */
extern unsigned boot_el;

#define ARCH_NAME "aarch64"

#define CNTV_CTL_ENABLE 1u
#define CNTV_CTL_IMASK 2u

/* The isb keeps the read from being done ahead of the code before it. */
static inline uint64_t counter_now(void)
{
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
}

/* CNTFRQ_EL0 is what firmware wrote there; the board's BOARD_COUNTER_HZ
 * stands in where it wrote nothing. */
static inline uint64_t counter_hz(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
    return v ? v : BOARD_COUNTER_HZ;
}

/* Fires when the virtual counter reaches `deadline` (a level interrupt:
 * it stays pending until the deadline moves on or the timer is off). */
static inline void timer_arm(uint64_t deadline)
{
    __asm__ volatile("msr cntv_cval_el0, %0\n\tmsr cntv_ctl_el0, %1\n\tisb"
                     ::"r"(deadline), "r"((uint64_t)CNTV_CTL_ENABLE) : "memory");
}

static inline void timer_off(void)
{
    __asm__ volatile("msr cntv_ctl_el0, %0\n\tisb" ::"r"((uint64_t)0) : "memory");
}

static inline void irq_mask(void) { __asm__ volatile("msr daifset, #2" ::: "memory"); }
static inline void irq_unmask(void) { __asm__ volatile("msr daifclr, #2" ::: "memory"); }
/* Waits for an interrupt even while IRQs are masked: masked, check, wait,
 * unmask leaves no window where a wake-up is lost. */
static inline void wait_for_interrupt(void) { __asm__ volatile("wfi" ::: "memory"); }

#endif
