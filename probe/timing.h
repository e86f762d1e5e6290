/*
 * Timing harness shared by the throughput and cost benchmarks (os, mem-bw,
 * mem-alloc, work): time an operation until the figure is trustworthy.
 *
 * The operation is a function that performs `n` operations in a loop. The
 * harness
 *  1. calibrates n so one sample lasts at least `min_sample_ns` (so clock
 *     resolution and the timer call cost are negligible);
 *  2. takes samples until the standard error of their mean is below
 *     `target_rel_error` (default 1 %) with at least `min_samples`, or
 *     `max_time_ns` has passed (then `converged` is 0 and says so);
 *  3. subtracts the cost of the bare loop (an empty loop of the same n,
 *     timed the same way), so ns/op is the operation's own cost. The
 *     correction is bounded: a sample it would take below zero (an operation
 *     cheaper than the noise of its loop) is 0, counted in `clamped`, and the
 *     figure is then not converged: no time is ever negative.
 *
 * A figure that is the difference of two measurements (a cost with and
 * without the thing of interest) is timed with time_op_diff: the error
 * target applies to the difference, which is the figure, and counts the
 * error of both measurements.
 */
#ifndef RTVB_TIMING_H
#define RTVB_TIMING_H

#include <stdint.h>

#include "jsonw_fd.h"

#define TIMING_MAX_SAMPLES 256

typedef void (*timed_fn)(void *arg, uint64_t n);
/* What the last call of an operation spent, in ns per operation, on work
 * that is not the operation but had to happen inside the timed call (a
 * region replaced after its pages were faulted, a batch's directories):
 * the call times that work itself, and it is subtracted from the sample
 * before the error is judged, so the harness targets the operation. */
typedef double (*aside_fn)(void *arg);

struct timed_op {
    timed_fn fn;
    void *arg;
    aside_fn aside;             /* NULL: nothing aside */
};

struct timing_opts {
    uint64_t min_sample_ns;     /* default 10 ms */
    uint64_t max_time_ns;       /* default 3 s per measurement */
    int min_samples;            /* default 5 */
    double target_rel_error;    /* default 0.01 */
    uint64_t max_n;             /* upper bound on n per sample (0 = none) */
    int subtract_loop;          /* default 1; 0 for ops whose loop is not a plain counted loop */
    aside_fn aside;             /* time_op: subtract what each call reports aside (NULL: none) */
};

struct timing {
    double ns_per_op;           /* mean over samples, loop overhead subtracted */
    double median_ns, min_ns, max_ns, stddev_ns;   /* per-op, over samples */
    double rel_error;           /* standard error of the mean / mean */
    double loop_overhead_ns;    /* subtracted per op */
    uint64_t n_per_sample;
    int samples;
    int converged;
    int clamped;                /* samples the correction took below zero, set to 0 (then not converged) */
    double values[TIMING_MAX_SAMPLES];   /* per-sample ns/op */
};

void timing_defaults(struct timing_opts *o);
/* An operation that can fail records its error in its own arg and stops. */
void time_op(timed_fn fn, void *arg, const struct timing_opts *o, struct timing *out);

/* The figure a * scale - b, where a contains b's work plus the thing
 * measured. Timed apart, each would stop at the target error on its own, yet
 * the difference is smaller than either, so its relative error is theirs
 * times a / (a - b): the difference must decide when to stop. Within
 * max_time_ns (calibration excepted), blocks alternate:
 *  - b, min_samples: a first estimate of what will be subtracted;
 *  - a, one sample's worth run and dropped, then samples back to back (an
 *    operation whose state settles while it runs, such as the scheduler's in
 *    a ring of processes, is not broken up) until a's error is within its
 *    share (3/4 of the variance) relative to the difference as it stands;
 *  - b again, min_samples at least (even past the limit), so b brackets a
 *    and a change of the machine during a shows in b's error; then until
 *    the difference reaches the target or b its share (1/4);
 *  - another a and b only if that b moved the difference away from a's
 *    share.
 * Sample i of `d` is a_i * scale - mean(b), bounded at zero like any
 * correction; d's rel_error is that of the two means together. `ta` and
 * `tb` are the raw sides (their `converged`: each reached the target on its
 * own, informative). */
void time_op_diff(const struct timed_op *a, const struct timed_op *b, double scale, const struct timing_opts *o,
                  struct timing *ta, struct timing *tb, struct timing *d);

/* Recompute mean, median, extremes, spread and relative error from
 * t->values[0 .. samples). */
void timing_summarize(struct timing *t);

/* Write the timing as members of the current JSON object:
 * ns_per_op, median_ns, min_ns, max_ns, stddev_ns, rel_error, samples,
 * n_per_sample, loop_overhead_ns, converged, clamped_samples, values_ns [...] */
void timing_write_json(const struct timing *t, struct jw *w);

#endif
