/*
 * Cost of hist_record(), in ns per sample.
 *
 * Values come from a precomputed array of realistic latencies (a 15 us floor
 * with an exponential tail), so the figure is the histogram's own cost, not a
 * random number generator's. The same loop without the record call is timed
 * alternately (the order flips every round) and subtracted; the median of the
 * rounds is reported, as the machine is shared and noisy. With a file name
 * (make bench: build/bench/hist_record.json), the per-round ratios of the loop
 * with the record call to the bare loop go there too, with their median and
 * range and the load averages, as bench/figures.py writes them for summary.py.
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

static uint64_t with_record(struct hist *h, const uint64_t *values)
{
    uint64_t t0 = now_ns();
    for (int p = 0; p < PASSES; p++)
        for (unsigned i = 0; i < N; i++)
            hist_record(h, values[i]);
    return now_ns() - t0;
}

static uint64_t bare_loop(const uint64_t *values, volatile uint64_t *sink)
{
    uint64_t t0 = now_ns(), acc = 0;
    for (int p = 0; p < PASSES; p++)
        for (unsigned i = 0; i < N; i++) {
            acc += values[i];
            __asm__ volatile("" : "+r"(acc));   /* keep the baseline loop honest */
        }
    *sink += acc;
    return now_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
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

    double with[ROUNDS], without[ROUNDS], cost[ROUNDS], ratio[ROUNDS];
    double load_before[3] = {0}, load_after[3] = {0};
    getloadavg(load_before, 3);
    volatile uint64_t sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t_with, t_bare;
        if (r % 2) {
            t_bare = bare_loop(values, &sink);
            t_with = with_record(h, values);
        } else {
            t_with = with_record(h, values);
            t_bare = bare_loop(values, &sink);
        }
        with[r] = (double)t_with / ((double)N * PASSES);
        without[r] = (double)t_bare / ((double)N * PASSES);
        cost[r] = with[r] - without[r];
        ratio[r] = with[r] / without[r];
    }
    getloadavg(load_after, 3);
    qsort(with, ROUNDS, sizeof *with, cmp_double);
    qsort(without, ROUNDS, sizeof *without, cmp_double);
    qsort(cost, ROUNDS, sizeof *cost, cmp_double);
    qsort(ratio, ROUNDS, sizeof *ratio, cmp_double);
    printf("hist_record: %.2f ns/sample (median of %d rounds; loop with record %.2f ns, bare loop %.2f ns, "
           "ratio %.2f, range %.2f..%.2f; load average %.2f -> %.2f; check %llu samples)\n", cost[ROUNDS / 2],
           ROUNDS, with[ROUNDS / 2], without[ROUNDS / 2], ratio[ROUNDS / 2], ratio[0], ratio[ROUNDS - 1],
           load_before[0], load_after[0], (unsigned long long)h->count);
    if (argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (!f) {
            perror(argv[1]);
            return 1;
        }
        fprintf(f, "{\"bench\": \"hist_record\", \"load_before\": [%.2f, %.2f, %.2f], "
                "\"load_after\": [%.2f, %.2f, %.2f], \"rows\": [{\"figure\": \"ns per sample, "
                "hist_record loop / bare loop\", \"baseline\": \"the same loop without hist_record\", "
                "\"rounds\": %d, \"median\": %.4f, \"min\": %.4f, \"max\": %.4f, \"goal\": null, "
                "\"met\": null}]}\n", load_before[0], load_before[1], load_before[2], load_after[0], load_after[1],
                load_after[2], ROUNDS, ratio[ROUNDS / 2], ratio[0], ratio[ROUNDS - 1]);
        if (fclose(f) != 0) {
            perror(argv[1]);
            return 1;
        }
    }
    return sink == 0;
}
