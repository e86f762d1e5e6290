#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

void timing_defaults(struct timing_opts *o)
{
    *o = (struct timing_opts){
        .min_sample_ns = 10 * 1000000ull,
        .max_time_ns = 3 * 1000000000ull,
        .min_samples = 5,
        .target_rel_error = 0.01,
        .subtract_loop = 1,
    };
}

/* The bare loop the operations' own loops are made of; the empty asm keeps
 * the compiler from deleting it. */
static void empty_loop(void *arg, uint64_t n)
{
    (void)arg;
    for (uint64_t i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
}

static uint64_t run_once(timed_fn fn, void *arg, uint64_t n)
{
    uint64_t t0 = mono_ns();
    fn(arg, n);
    return mono_ns() - t0;
}

/* Smallest n (doubling) whose run lasts at least min_ns. */
static uint64_t calibrate(timed_fn fn, void *arg, uint64_t min_ns, uint64_t max_n)
{
    uint64_t n = 1;
    for (;;) {
        uint64_t t = run_once(fn, arg, n);
        if (t >= min_ns || (max_n && n >= max_n))
            return n;
        /* Jump close to the target once a run is long enough to extrapolate. */
        if (t > 100000) {
            double want = (double)n * (double)min_ns / (double)t * 1.1;
            n = want > (double)n * 2 ? (uint64_t)want : n * 2;
        } else {
            n *= 2;
        }
        if (max_n && n > max_n)
            n = max_n;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double loop_overhead_per_op(uint64_t n)
{
    /* Median of a few runs: the bare loop is short and easily disturbed. */
    double v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (double)run_once(empty_loop, NULL, n) / (double)n;
    qsort(v, 7, sizeof *v, cmp_double);
    return v[3];
}

/* Calibrate n for one operation and measure its bare loop: what every
 * sample of it then uses. */
static void prepare(const struct timed_op *op, const struct timing_opts *o, struct timing *t)
{
    memset(t, 0, sizeof *t);
    t->n_per_sample = calibrate(op->fn, op->arg, o->min_sample_ns, o->max_n);
    t->loop_overhead_ns = o->subtract_loop ? loop_overhead_per_op(t->n_per_sample) : 0.0;
}

/* Append a value to the samples. The correction is bounded: a value below
 * zero (an operation cheaper than the noise of what was subtracted from it)
 * is 0 and counted, so no time is ever negative. */
static double add_value(struct timing *t, double v)
{
    if (v < 0) {
        v = 0;
        t->clamped++;
    }
    t->values[t->samples++] = v;
    return v;
}

/* One sample of op: ns per operation, bare loop and what the call did
 * aside subtracted. */
static double take_sample(const struct timed_op *op, struct timing *t)
{
    double ns = (double)run_once(op->fn, op->arg, t->n_per_sample);
    double aside = op->aside ? op->aside(op->arg) : 0.0;
    return add_value(t, ns / (double)t->n_per_sample - t->loop_overhead_ns - aside);
}

void timing_summarize(struct timing *t)
{
    int k = t->samples;
    double sum = 0, sorted[TIMING_MAX_SAMPLES];
    if (k <= 0)
        return;
    for (int i = 0; i < k; i++)
        sum += sorted[i] = t->values[i];
    double mean = sum / k, ss = 0;
    for (int i = 0; i < k; i++)
        ss += (t->values[i] - mean) * (t->values[i] - mean);
    qsort(sorted, (size_t)k, sizeof *sorted, cmp_double);
    double var = k > 1 ? ss / (k - 1) : 0;
    t->ns_per_op = mean;
    t->median_ns = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    t->min_ns = sorted[0];
    t->max_ns = sorted[k - 1];
    t->stddev_ns = sqrt(var);
    t->rel_error = mean > 0 ? sqrt(var / k) / mean : 0;
}

/* Enough samples, the target error reached, nothing clamped. */
static int settled(struct timing *t, const struct timing_opts *o)
{
    if (t->samples < o->min_samples)
        return 0;
    timing_summarize(t);
    return t->rel_error < o->target_rel_error && !t->clamped;
}

static int out_of_time(const struct timing *t, uint64_t start, const struct timing_opts *o)
{
    return t->samples == TIMING_MAX_SAMPLES || mono_ns() - start > o->max_time_ns;
}

void time_op(timed_fn fn, void *arg, const struct timing_opts *o, struct timing *out)
{
    const struct timed_op op = {fn, arg, o->aside};
    prepare(&op, o, out);
    uint64_t start = mono_ns();
    for (;;) {
        take_sample(&op, out);
        if ((out->converged = settled(out, o)) || out_of_time(out, start, o))
            break;
    }
    timing_summarize(out);
}

/* Standard error of t's mean, after timing_summarize. */
static double std_error(const struct timing *t)
{
    return t->samples > 0 ? t->stddev_ns / sqrt(t->samples) : INFINITY;
}

/* d = ta * scale - mean of tb, sample by sample, bounded at zero; its error
 * is that of the two means together. */
static void diff_summarize(const struct timing *ta, const struct timing *tb, double scale, struct timing *d)
{
    memset(d, 0, sizeof *d);
    for (int i = 0; i < ta->samples; i++)
        add_value(d, ta->values[i] * scale - tb->ns_per_op);
    timing_summarize(d);
    double se = hypot(std_error(ta) * scale, std_error(tb));
    d->rel_error = d->ns_per_op > 0 ? se / d->ns_per_op : INFINITY;
    d->n_per_sample = ta->n_per_sample;
    d->loop_overhead_ns = ta->loop_overhead_ns * scale;
}

/* Share of the difference's error variance that a may use; b gets the rest.
 * b is the cheaper to tighten (one process, a narrow spread: about a third
 * of a ring's per hop), and with equal sample times the variance is least
 * when each side's share is in proportion to its spread. */
#define DIFF_SHARE_A 0.75

/* a's mean is within its share of the error of the difference as it now
 * stands, and no sample of a would be clamped. */
static int a_settled(const struct timing *ta, const struct timing *tb, double scale, const struct timing_opts *o)
{
    if (ta->samples < o->min_samples)
        return 0;
    double diff = ta->ns_per_op * scale - tb->ns_per_op;
    return std_error(ta) * scale < sqrt(DIFF_SHARE_A) * o->target_rel_error * diff &&
           ta->min_ns * scale > tb->ns_per_op;
}

/* The difference reached the target, or b its share (more of b would not
 * help an a that is short of its own), or it is lost in the noise. */
static int b_settled(const struct timing *tb, const struct timing *d, const struct timing_opts *o)
{
    double target = o->target_rel_error;
    return d->rel_error < target || d->ns_per_op <= 0 ||
           std_error(tb) < sqrt(1 - DIFF_SHARE_A) * target * d->ns_per_op;
}

/* A block of a: one sample's worth run and dropped first, since a state a
 * settles into while it runs (a ring's scheduling) was disturbed by the
 * block of b before it; then samples back to back until a is settled. */
static void a_block(const struct timed_op *a, struct timing *ta, const struct timing *tb, double scale,
                    const struct timing_opts *o, uint64_t start)
{
    run_once(a->fn, a->arg, ta->n_per_sample);
    do {
        take_sample(a, ta);
        timing_summarize(ta);
    } while (!a_settled(ta, tb, scale, o) && !out_of_time(ta, start, o));
}

/* A block of b: min_samples at least, even past the time limit, so that b is
 * measured on both sides of each block of a and a change of the machine
 * shows in b's spread and error instead of silently in the difference; then
 * until b is settled. */
static void b_block(const struct timed_op *b, const struct timing *ta, struct timing *tb, double scale,
                    const struct timing_opts *o, uint64_t start, struct timing *d)
{
    int first = tb->samples;
    for (;;) {
        if (tb->samples == TIMING_MAX_SAMPLES)
            break;
        if (tb->samples - first >= o->min_samples && (!ta || b_settled(tb, d, o) || out_of_time(tb, start, o)))
            break;
        take_sample(b, tb);
        timing_summarize(tb);
        if (ta)
            diff_summarize(ta, tb, scale, d);
    }
}

void time_op_diff(const struct timed_op *a, const struct timed_op *b, double scale, const struct timing_opts *o,
                  struct timing *ta, struct timing *tb, struct timing *d)
{
    prepare(b, o, tb);
    uint64_t start = mono_ns();
    b_block(b, NULL, tb, scale, o, start, d);
    prepare(a, o, ta);
    for (;;) {
        a_block(a, ta, tb, scale, o, start);
        diff_summarize(ta, tb, scale, d);
        b_block(b, ta, tb, scale, o, start, d);
        /* Another round only if b moved the difference away from a's share. */
        if (d->rel_error < o->target_rel_error || d->ns_per_op <= 0 || out_of_time(ta, start, o) ||
            out_of_time(tb, start, o))
            break;
    }
    d->converged = ta->samples >= o->min_samples && d->rel_error < o->target_rel_error && !d->clamped;
    /* Each side on its own: did it reach the target too (informative; the
     * figure is d). */
    ta->converged = ta->rel_error < o->target_rel_error && !ta->clamped;
    tb->converged = tb->rel_error < o->target_rel_error && !tb->clamped;
}

void timing_write_json(const struct timing *t, struct jw *w)
{
    jw_double(w, "ns_per_op", t->ns_per_op);
    jw_double(w, "median_ns", t->median_ns);
    jw_double(w, "min_ns", t->min_ns);
    jw_double(w, "max_ns", t->max_ns);
    jw_double(w, "stddev_ns", t->stddev_ns);
    jw_double(w, "rel_error", t->rel_error);
    jw_int(w, "samples", t->samples);
    jw_uint(w, "n_per_sample", t->n_per_sample);
    jw_double(w, "loop_overhead_ns", t->loop_overhead_ns);
    jw_bool(w, "converged", t->converged);
    jw_int(w, "clamped_samples", t->clamped);
    jw_arr(w, "values_ns");
    for (int i = 0; i < t->samples; i++)
        jw_double(w, NULL, t->values[i]);
    jw_end(w);
}
