/*
 * Log-linear latency histogram (HDR-style).
 *
 * Values below 256 get one bucket each (exact). Above, every power of two
 * [2^m, 2^(m+1)) is split into 128 equal buckets, so a bucket is at most
 * 1/128 = 0.78 % as wide as its lower bound; reporting its midpoint keeps the
 * relative error under 0.4 %. The scheme covers the whole uint64_t range
 * (7424 buckets, 59 KiB), so there is no overflow bucket and no sample can
 * ever be dropped, whatever its size or the number of samples.
 *
 * Exact min, max, sum and sum of squares are kept beside the buckets, so the
 * extremes, mean and standard deviation carry no histogram error at all.
 */
#ifndef RTVB_HIST_H
#define RTVB_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 8
#define HIST_LINEAR (1u << HIST_SUB_BITS)           /* exact buckets: 0..255 */
#define HIST_PER_OCTAVE (HIST_LINEAR / 2)           /* buckets per power of two */
#define HIST_BUCKETS (HIST_LINEAR + (64 - HIST_SUB_BITS) * HIST_PER_OCTAVE)

struct hist {
    uint64_t count;
    uint64_t min, max;
    uint64_t sum;        /* ns: overflows only after ~584 years of latency */
    double sumsq;        /* double: squares of ns overflow uint64_t quickly */
    uint64_t buckets[HIST_BUCKETS];
};

static inline unsigned hist_index(uint64_t v)
{
    if (v < HIST_LINEAR)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);   /* >= HIST_SUB_BITS */
    unsigned shift = msb - (HIST_SUB_BITS - 1);          /* keep the top 8 bits */
    return HIST_LINEAR + (msb - HIST_SUB_BITS) * HIST_PER_OCTAVE
         + (unsigned)(v >> shift) - HIST_PER_OCTAVE;
}

/* The hot path: a handful of instructions, no branches but min/max. */
static inline void hist_record(struct hist *h, uint64_t v)
{
    h->buckets[hist_index(v)]++;
    h->count++;
    h->sum += v;
    h->sumsq += (double)v * (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_reset(struct hist *h);
/* dst += src: exact, since both use the same bucket scheme. */
void hist_merge(struct hist *dst, const struct hist *src);
/* Bucket bounds: lo inclusive, hi exclusive (saturates at UINT64_MAX). */
void hist_bucket_bounds(unsigned idx, uint64_t *lo, uint64_t *hi);
/* Nearest-rank percentile, p in [0, 100]; 0 for an empty histogram. */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);
double hist_stddev(const struct hist *h);   /* population standard deviation */

struct jw;
/* Write "histogram": {"scheme": ..., "buckets": [[lo, hi, count], ...]} */
void hist_write_json(const struct hist *h, struct jw *w, const char *key);
/* Write count, min_ns, avg_ns, max_ns, stddev_ns and the percentiles p50_ns,
 * p90_ns, p99_ns, p999_ns ... p999999_ns as members of the current object
 * (null, but the count, when the histogram is empty). */
void hist_write_stats(const struct hist *h, struct jw *w);

#endif
