/*
 * Interrupt dispatch: the timer's interrupt calls the handler of whoever
 * armed the timer, with the counter read as the very first thing the
 * image does on the interrupt (before even the GIC is asked which one it
 * is), so a latency includes no dispatch of the image's own.
 *
 * Built with -mgeneral-regs-only, as everything an interrupt runs: the
 * vectors save no FP/SIMD registers.
 */
#ifndef RTVB_BM_IRQ_H
#define RTVB_BM_IRQ_H

#include <stdint.h>

typedef void (*timer_handler)(uint64_t now);

void irq_init(void);
void irq_set_timer_handler(timer_handler h);

#endif
