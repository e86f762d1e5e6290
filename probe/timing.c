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

void time_op(timed_fn fn, void *arg, const struct timing_opts *o, struct timing *out)
{
    memset(out, 0, sizeof *out);
    uint64_t n = calibrate(fn, arg, o->min_sample_ns, o->max_n);
    double overhead = o->subtract_loop ? loop_overhead_per_op(n) : 0.0;
    uint64_t start = mono_ns();
    double sum = 0, sumsq = 0;
    int k = 0;

    for (;;) {
        double per_op = (double)run_once(fn, arg, n) / (double)n - overhead;
        if (per_op < 0) {
            per_op = 0;
            out->clamped++;
        }
        out->values[k++] = per_op;
        sum += per_op;
        sumsq += per_op * per_op;
        if (k >= o->min_samples) {
            double mean = sum / k;
            double var = (sumsq - sum * sum / k) / (k - 1);
            double se = var > 0 ? sqrt(var / k) : 0;
            out->rel_error = mean > 0 ? se / mean : 0;
            if (out->rel_error < o->target_rel_error && !out->clamped) {
                out->converged = 1;
                break;
            }
        }
        if (k == TIMING_MAX_SAMPLES || mono_ns() - start > o->max_time_ns)
            break;
    }

    double sorted[TIMING_MAX_SAMPLES];
    memcpy(sorted, out->values, (size_t)k * sizeof *sorted);
    qsort(sorted, (size_t)k, sizeof *sorted, cmp_double);
    double mean = sum / k;
    out->ns_per_op = mean;
    out->median_ns = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    out->min_ns = sorted[0];
    out->max_ns = sorted[k - 1];
    out->stddev_ns = k > 1 ? sqrt(fmax(0, (sumsq - sum * sum / k) / (k - 1))) : 0;
    out->loop_overhead_ns = overhead;
    out->n_per_sample = n;
    out->samples = k;
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
