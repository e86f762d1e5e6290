#include "irqlat.h"

#include "arch.h"

volatile struct irqlat_state irqlat;

void irqlat_on_timer(uint64_t now)
{
    volatile struct irqlat_state *s = &irqlat;
    uint64_t deadline = s->deadline, index = s->index;
    uint64_t late = now > deadline ? now - deadline : 0;
    uint32_t head = s->head;
    if (head - s->tail < IRQLAT_RING) {
        s->ring_latency[head % IRQLAT_RING] = late;
        s->ring_index[head % IRQLAT_RING] = index;
        s->head = head + 1;
    } else {
        s->lost++;
    }
    s->handled++;
    /* Deadlines that passed before this activation was handled; those
     * after the run's last are none of the run's. */
    uint64_t skipped = late / s->interval, left = s->activations - index - 1;
    if (skipped > left)
        skipped = left;
    s->missed += skipped;
    index += skipped + 1;
    if (index >= s->activations) {
        timer_off();
        s->done = 1;
        return;
    }
    s->index = index;
    s->deadline = deadline + (skipped + 1) * s->interval;
    timer_arm(s->deadline);
}
