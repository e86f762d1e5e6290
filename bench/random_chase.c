/*
 * A plain random pointer chase, the reference for rtvb-probe mem-lat's
 * random chain (bench/memlat_compare.py): one 64-byte slot per cache line of
 * a buffer of SIZE MiB, linked in one random cycle, followed once round to
 * warm, then 5 timed runs of LOADS dependent loads; prints the fastest run's
 * ns per load as {"size_bytes": ..., "ns_per_load": ...}. Transparent huge
 * pages are refused on the buffer (the probe's default, --hugepages off).
 *
 * usage: random_chase SIZE_MIB [LOADS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    size_t bytes = strtoull(argv[1], NULL, 10) << 20, slots = bytes / 64;
    size_t loads = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000000;
    char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t *order = malloc(slots * sizeof *order);
    if (buf == MAP_FAILED || !order)
        return 1;
    madvise(buf, bytes, MADV_NOHUGEPAGE);
    memset(buf, 0, bytes);
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < slots; i++)
        order[i] = i;
    for (size_t i = slots - 1; i > 0; i--) {   /* Fisher-Yates, xorshift */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % (i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (size_t i = 0; i < slots; i++)
        *(void **)(buf + order[i] * 64) = buf + order[(i + 1) % slots] * 64;
    void **p = (void **)(buf + order[0] * 64);
    for (size_t i = 0; i < slots; i++)
        p = *p;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now_ns();
        for (size_t i = 0; i < loads; i++)
            p = *p;
        double t = (now_ns() - t0) / (double)loads;
        best = t < best ? t : best;
    }
    printf("{\"size_bytes\": %zu, \"ns_per_load\": %.2f, \"end\": %d}\n", bytes, best, p != NULL);
    return 0;
}
