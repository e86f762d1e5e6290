/*
 * The GIC, version 2 (gic.c, QEMU's `virt` with gic-version=2) or 3
 * (gic_v3.c, gic-version=3) as the board says (BOARD_GIC_VERSION), with
 * just what the image needs: one private interrupt (the timer's PPI)
 * enabled, acknowledged and ended.
 */
#ifndef RTVB_BM_GIC_H
#define RTVB_BM_GIC_H

#include <stdint.h>

#define GIC_SPURIOUS 1023u

void gic_init(void);
void gic_enable(unsigned intid);
/* The interrupt being taken: its INTID in the low 10 bits (GIC_SPURIOUS
 * when none is pending); hand the whole value back to gic_end. */
uint32_t gic_acknowledge(void);
void gic_end(uint32_t iar);

#endif
