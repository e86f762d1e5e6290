/*
 * Shared state of the `latency` subcommand: options, per-CPU worker state,
 * and the writers for its three output formats (latency_output.c).
 */
#ifndef RTVB_LATENCY_H
#define RTVB_LATENCY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "hist.h"
#include "trace.h"

#define LAT_MAX_THRESHOLDS 16
#define LAT_MAX_CPUS 1024
#define LAT_WINDOW_RING 256        /* closed windows awaiting print, per CPU */
#define LAT_MAX_OVERFLOW_CYCLES 1024

enum lat_mode { MODE_ABSTIME, MODE_RELATIVE };
enum lat_format { FORMAT_JSONL, FORMAT_CYCLICTEST, FORMAT_CYCLICTEST_JSON };

struct lat_options {
    uint64_t interval_ns;
    uint64_t loops;            /* 0 = no limit */
    uint64_t duration_ns;      /* 0 = no limit */
    int priority;
    int policy;                /* SCHED_FIFO, SCHED_RR, SCHED_OTHER */
    int cpus[LAT_MAX_CPUS];
    int ncpus;
    uint64_t thresholds_ns[LAT_MAX_THRESHOLDS];
    int nthresholds;
    uint64_t window_ns;        /* 0 = no windows */
    enum lat_mode mode;
    enum lat_format format;
    unsigned histogram_us;     /* cyclictest histogram rows, 0 = none */
    int dma_latency_us;        /* value for /dev/cpu_dma_latency, -1 = leave it */
    uint64_t work_ns;          /* fixed work after each wake-up ("victim"), 0 = none */
    struct trace_options trace; /* kernel trace capture on a breach; threshold 0 = off */
};

/* What the process actually obtained, reported in meta. */
struct lat_privileges {
    int policy;
    int priority;
    int rt_granted;
    int mlockall;
    int dma_latency;           /* 1 set, 0 refused, -1 not requested or absent */
    int trace;                 /* 1 capturing, 0 refused, -1 not requested */
};

struct window_summary {
    uint64_t index, t_start_ns, t_end_ns, count, missed, min_ns, max_ns, p99_ns;
    uint64_t response_max_ns, deadline_misses;   /* with --work-us only */
};

struct lat_worker {
    int cpu;
    pid_t tid;
    pthread_t thread;
    const struct lat_options *opt;

    /* Written by the worker only; read by the main thread after join. */
    struct hist *total;        /* every sample of the run */
    struct hist *window;       /* samples of the current window */
    uint64_t missed, window_missed;
    uint64_t over[LAT_MAX_THRESHOLDS];
    uint64_t last_ns;          /* latest latency, cyclictest's "Act" */
    struct hist *response;     /* work completion - deadline, with --work-us */
    uint64_t work_loops;       /* iterations of the work loop that take work_ns */
    uint64_t traced, untraced; /* wake-ups over the trace threshold: saved, not saved */
    uint64_t deadline_misses, window_deadline_misses, window_response_max;
    uint64_t *us_buckets;      /* cyclictest histogram, histogram_us rows */
    uint64_t us_overflows;
    uint64_t overflow_cycles[LAT_MAX_OVERFLOW_CYCLES];
    unsigned n_overflow_cycles;
    int error;                 /* errno of a failed clock_nanosleep, 0 if none */

    /* Single-producer (worker) single-consumer (main) ring of closed windows. */
    struct window_summary ring[LAT_WINDOW_RING];
    atomic_uint ring_head, ring_tail;
    atomic_uint windows_dropped;
    atomic_int done;
};

/* latency_output.c */
void lat_print_window(const struct window_summary *s, int cpu, int with_work);
void lat_print_results(struct lat_worker *w, int n, const struct lat_options *o);
void lat_print_cyclictest(struct lat_worker *w, int n, const struct lat_options *o);
void lat_print_cyclictest_json(struct lat_worker *w, int n, const struct lat_options *o,
                               int argc, char **argv, time_t start, time_t end, int rc);

#endif
