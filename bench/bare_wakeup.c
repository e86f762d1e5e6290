/*
 * The physical floor of a periodic wake-up: the least a measuring loop can
 * do, for bench/latency_vs_cyclictest.py. One thread pinned to CPU C at
 * SCHED_FIFO 80, memory locked, /dev/cpu_dma_latency held at 0 (as
 * cyclictest and rtvb-probe do); it sleeps to absolute deadlines I us apart
 * (clock_nanosleep, CLOCK_MONOTONIC) and reads the clock at once. Prints the
 * minimum, 1st percentile and median of N wake-up latencies in ns as JSON.
 *
 * usage: bare_wakeup LOOPS INTERVAL_US CPU
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    size_t loops = strtoull(argv[1], NULL, 10);
    uint64_t interval = strtoull(argv[2], NULL, 10) * 1000;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[3]), &set);
    struct sched_param sp = {.sched_priority = 80};
    int32_t zero = 0;
    int qos = open("/dev/cpu_dma_latency", O_WRONLY);
    if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, SCHED_FIFO, &sp) ||
        mlockall(MCL_CURRENT | MCL_FUTURE) || qos < 0 || write(qos, &zero, sizeof zero) != sizeof zero) {
        perror("bare_wakeup: setup (needs root)");
        return 1;
    }
    uint64_t *lat = calloc(loops, sizeof *lat), deadline = now_ns() + interval;
    for (size_t i = 0; i < loops; i++, deadline += interval) {
        struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        uint64_t now = now_ns();
        lat[i] = now > deadline ? now - deadline : 0;
    }
    qsort(lat, loops, sizeof *lat, cmp_u64);
    printf("{\"min_ns\": %llu, \"p1_ns\": %llu, \"p50_ns\": %llu}\n", (unsigned long long)lat[0],
           (unsigned long long)lat[loops / 100], (unsigned long long)lat[loops / 2]);
    return 0;
}
