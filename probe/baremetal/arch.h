/*
 * What an architecture supplies the shared part of the image (serve.c,
 * console.c, irqlat*.c, clock.c): each lives in probe/baremetal/<arch>/,
 * with its start-up, board header (board.h) and linker script.
 *
 * <arch>/cpu.h, inline, as each is a few instructions on a measured path:
 *   ARCH_NAME                     the `arch` of the records
 *   uint64_t counter_now(void)    the free-running counter, in ticks
 *   uint64_t counter_hz(void)     its frequency
 *   void timer_arm(uint64_t t)    the timer interrupt fires once the counter
 *                                 reaches t, and stays pending until the timer
 *                                 is armed again or off (a level interrupt)
 *   void timer_off(void)
 *   void irq_mask(void), irq_unmask(void)
 *   void wait_for_interrupt(void) returns once an interrupt is pending, also
 *                                 while interrupts are masked
 *
 * Out of line, below: the UART, the interrupt dispatch, power-off and what
 * the `meta` record says of how the image was entered.
 */
#ifndef RTVB_BM_ARCH_H
#define RTVB_BM_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

struct jw;

/* The board's UART, polled both ways, the line as firmware or QEMU set it. */
void uart_init(void);
void uart_write(const char *s, size_t n);
/* The next received byte, or -1 when none is waiting. */
int uart_getc(void);

static inline void uart_puts(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    uart_write(s, n);
}

/* The timer's interrupt calls the handler of whoever armed the timer, with
 * the counter read as the very first thing the image does on the interrupt,
 * so a latency includes no dispatch of the image's own. */
typedef void (*timer_handler)(uint64_t now);

void irq_init(void);
void irq_set_timer_handler(timer_handler h);
/* Called as every interrupt returns, once the interrupt controller knows it
 * ended: where the port's scheduler switches to a task the interrupt made
 * ready (probe/port/baremetal). NULL for none. */
void irq_set_exit_handler(void (*h)(void));

/* Asks the firmware to power the machine off; returns if it refuses. */
void system_off(void);

/* The architecture's own keys of the `meta` record (how it was entered). */
void arch_write_meta(struct jw *w);
/* What `sysinfo` adds of it: the MMU's state and, where the `meta` record
 * does not say it, where the counter's frequency came from. */
void arch_write_sysinfo(struct jw *w);

#endif
