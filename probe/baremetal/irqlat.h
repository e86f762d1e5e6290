/*
 * `latency` on the bare-metal image: timer interrupt latency, the analogue
 * of the Linux probe's `latency` (a thread's wake-up latency there).
 *
 * The virtual timer is armed for a deadline every interval; the interrupt
 * handler (irqlat_handler.c) reads the counter first, so a latency is
 * counter - deadline: how late the interrupt reached its handler. The
 * handler only queues it; the main loop records it into the histogram, off
 * the interrupt path. A deadline that passed before the activation before
 * it was handled is missed: counted, not measured, and skipped, so
 * count + missed = activations, as in the Linux probe.
 */
#ifndef RTVB_BM_IRQLAT_H
#define RTVB_BM_IRQLAT_H

#include <stdint.h>

#define IRQLAT_RING 1024u   /* latencies the handler may queue ahead of the main loop */

/* Shared by the handler and the main loop; the main loop reads the
 * handler's fields with interrupts masked, or only ever increasing ones. */
struct irqlat_state {
    uint64_t interval;      /* ticks */
    uint64_t activations;   /* deadlines in the run */
    uint64_t deadline;      /* the armed deadline, ticks */
    uint64_t index;         /* its activation index, from 0 */
    uint64_t handled, missed, lost;
    int done;
    uint32_t head, tail;    /* ring: the handler writes at head, the main loop reads at tail */
    uint64_t ring_latency[IRQLAT_RING], ring_index[IRQLAT_RING];
};

extern volatile struct irqlat_state irqlat;

void irqlat_on_timer(uint64_t now);

/* The `latency` command: argv[0] is "latency". Returns its exit status. */
int irqlat_command(int argc, char **argv);

#endif
