/*
 * Counter ticks and nanoseconds: the counter counts at counter_hz()
 * (62.5 MHz on aarch64's `virt`, 10 MHz on riscv64's), the records speak ns.
 */
#ifndef RTVB_BM_CLOCK_H
#define RTVB_BM_CLOCK_H

#include <stdint.h>

uint64_t ticks_to_ns(uint64_t ticks);
/* Rounded up: a duration is never shortened to a tick less. */
uint64_t ns_to_ticks(uint64_t ns);
/* Since the counter started (the machine's reset on QEMU). */
uint64_t clock_ns(void);

#endif
