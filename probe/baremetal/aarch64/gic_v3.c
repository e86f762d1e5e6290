/*
 * GICv3: affinity routing on, the distributor for group 1, this CPU's
 * redistributor woken and its PPI enabled there, and the CPU interface
 * through the ICC_* system registers (start.S opens them to EL1 when it
 * was entered at EL2). A PPI is configured in the redistributor's SGI
 * frame, not the distributor, once affinity routing is on.
 */
#include "gic.h"

#include "board.h"

#if BOARD_GIC_VERSION == 3

#define GICD_CTLR 0x0000
#define GICD_CTLR_RWP (1u << 31)
/* Enable group 1 (both the non-secure view's bit 0 and the single security
 * state's bit 1) with affinity routing (bit 4), as the GIC's two views need. */
#define GICD_CTLR_ENABLE (1u << 0 | 1u << 1 | 1u << 4)

#define GICR_FRAME 0x20000u         /* RD_base and SGI_base, 64 KiB each */
#define GICR_FRAME_VLPI 0x40000u    /* GICv4 adds two frames for virtual LPIs */
#define GICR_WAKER 0x0014
#define GICR_TYPER 0x0008
#define GICR_TYPER_VLPIS (1u << 1)
#define GICR_TYPER_LAST (1u << 4)
#define GICR_WAKER_SLEEP (1u << 1)
#define GICR_WAKER_CHILDREN_ASLEEP (1u << 2)
#define GICR_SGI 0x10000u
#define GICR_IGROUPR0 0x0080
#define GICR_ISENABLER0 0x0100
#define GICR_IPRIORITYR 0x0400

#define PRIORITY_TIMER 0x80   /* any value above PMR's threshold would do */
#define MAX_REDISTRIBUTORS 512u

static inline volatile uint32_t *reg32(uint64_t base, unsigned off)
{
    return (volatile uint32_t *)(uintptr_t)(base + off);
}

/* The redistributor whose GICR_TYPER affinity is this CPU's MPIDR
 * affinity; the first one when none says so (a board that lists one). */
static uint64_t my_redistributor(void)
{
    uint64_t mpidr;
    __asm__ volatile("mrs %0, mpidr_el1" : "=r"(mpidr));
    uint32_t affinity = (uint32_t)((mpidr & 0xffffffu) | (mpidr >> 32 & 0xffu) << 24);
    uint64_t rd = BOARD_GICR_BASE;
    for (unsigned i = 0; i < MAX_REDISTRIBUTORS; i++) {
        uint64_t typer = (uint64_t)*reg32(rd, GICR_TYPER + 4) << 32 | *reg32(rd, GICR_TYPER);
        if ((uint32_t)(typer >> 32) == affinity)
            return rd;
        if (typer & GICR_TYPER_LAST)
            break;
        rd += (typer & GICR_TYPER_VLPIS) ? GICR_FRAME_VLPI : GICR_FRAME;
    }
    return BOARD_GICR_BASE;
}

static uint64_t redistributor;

void gic_init(void)
{
    *reg32(BOARD_GICD_BASE, GICD_CTLR) = GICD_CTLR_ENABLE;
    while (*reg32(BOARD_GICD_BASE, GICD_CTLR) & GICD_CTLR_RWP)
        ;
    redistributor = my_redistributor();
    volatile uint32_t *waker = reg32(redistributor, GICR_WAKER);
    *waker &= ~GICR_WAKER_SLEEP;
    while (*waker & GICR_WAKER_CHILDREN_ASLEEP)
        ;
    uint64_t sre;
    __asm__ volatile("mrs %0, icc_sre_el1" : "=r"(sre));
    __asm__ volatile("msr icc_sre_el1, %0\n\tisb" ::"r"(sre | 1u));
    __asm__ volatile("msr icc_pmr_el1, %0" ::"r"((uint64_t)0xff));   /* let every priority through */
    __asm__ volatile("msr icc_igrpen1_el1, %0\n\tisb" ::"r"((uint64_t)1));
}

void gic_enable(unsigned intid)
{
    uint64_t sgi = redistributor + GICR_SGI;
    volatile uint32_t *prio = reg32(sgi, GICR_IPRIORITYR + (intid & ~3u));
    unsigned shift = (intid & 3u) * 8;
    *prio = (*prio & ~(0xffu << shift)) | ((uint32_t)PRIORITY_TIMER << shift);
    *reg32(sgi, GICR_IGROUPR0) |= 1u << intid;   /* group 1: what ICC_IAR1_EL1 acknowledges */
    *reg32(sgi, GICR_ISENABLER0) = 1u << intid;
}

uint32_t gic_acknowledge(void)
{
    uint64_t iar;
    __asm__ volatile("mrs %0, icc_iar1_el1" : "=r"(iar)::"memory");
    return (uint32_t)iar;
}

void gic_end(uint32_t iar)
{
    __asm__ volatile("msr icc_eoir1_el1, %0\n\tisb" ::"r"((uint64_t)iar) : "memory");
}

#endif
