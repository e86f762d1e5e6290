/*
 * Cost of hist_record(), in ns per sample.
 *
 * Values come from a precomputed array of realistic latencies (a 15 us floor
 * with an exponential tail), so the figure is the histogram's own cost, not a
 * random number generator's. The same loop without the record call is timed
 * alternately and subtracted; the median of the rounds is reported, as the
 * machine is shared and noisy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hist.h"

#define N (1u << 20)
#define ROUNDS 15
#define PASSES 32

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    uint64_t *values = malloc(N * sizeof *values);
    struct hist *h = malloc(sizeof *h);
    uint64_t s = 88172645463325252ull;
    for (unsigned i = 0; i < N; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double u = (double)(s >> 11) / 9007199254740992.0;
        values[i] = 15000 + (uint64_t)(-log(1.0 - u) * 3000.0);
    }
    hist_reset(h);

    double with[ROUNDS], without[ROUNDS], cost[ROUNDS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t0 = now_ns();
        for (int p = 0; p < PASSES; p++)
            for (unsigned i = 0; i < N; i++)
                hist_record(h, values[i]);
        uint64_t t1 = now_ns();
        uint64_t acc = 0;
        for (int p = 0; p < PASSES; p++)
            for (unsigned i = 0; i < N; i++) {
                acc += values[i];
                __asm__ volatile("" : "+r"(acc));   /* keep the baseline loop honest */
            }
        uint64_t t2 = now_ns();
        sink += acc;
        with[r] = (double)(t1 - t0) / ((double)N * PASSES);
        without[r] = (double)(t2 - t1) / ((double)N * PASSES);
        cost[r] = with[r] - without[r];
    }
    qsort(with, ROUNDS, sizeof *with, cmp_double);
    qsort(without, ROUNDS, sizeof *without, cmp_double);
    qsort(cost, ROUNDS, sizeof *cost, cmp_double);
    printf("hist_record: %.2f ns/sample (median of %d rounds; loop with record %.2f ns, bare loop %.2f ns; "
           "check %llu samples)\n", cost[ROUNDS / 2], ROUNDS, with[ROUNDS / 2], without[ROUNDS / 2],
           (unsigned long long)h->count);
    return sink == 0;
}
