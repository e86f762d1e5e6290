/* GICv2: the distributor and this CPU's memory-mapped interface. */
#include "gic.h"

#include "board.h"

#if BOARD_GIC_VERSION == 2

#define GICD_CTLR 0x000
#define GICD_ISENABLER 0x100
#define GICD_IPRIORITYR 0x400
#define GICC_CTLR 0x000
#define GICC_PMR 0x004
#define GICC_IAR 0x00c
#define GICC_EOIR 0x010

#define PRIORITY_TIMER 0x80   /* any value above PMR's threshold would do */

static inline volatile uint32_t *gicd(unsigned off)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_GICD_BASE + off);
}

static inline volatile uint32_t *gicc(unsigned off)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_GICC_BASE + off);
}

void gic_init(void)
{
    *gicd(GICD_CTLR) = 1;
    *gicc(GICC_PMR) = 0xff;    /* let every priority through */
    *gicc(GICC_CTLR) = 1;
}

void gic_enable(unsigned intid)
{
    /* Byte-wide priority fields, written as a word: the MMU is off, so all
     * memory is Device memory and the image makes only aligned accesses. */
    volatile uint32_t *prio = gicd(GICD_IPRIORITYR + (intid & ~3u));
    unsigned shift = (intid & 3u) * 8;
    *prio = (*prio & ~(0xffu << shift)) | ((uint32_t)PRIORITY_TIMER << shift);
    gicd(GICD_ISENABLER)[intid / 32] = 1u << (intid % 32);
}

uint32_t gic_acknowledge(void) { return *gicc(GICC_IAR); }

void gic_end(uint32_t iar) { *gicc(GICC_EOIR) = iar; }

#endif
