#include "hist.h"

#include "core_sqrt.h"
#include "jsonw.h"

void hist_reset(struct hist *h)
{
    __builtin_memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    dst->sumsq += src->sumsq;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

void hist_bucket_bounds(unsigned idx, uint64_t *lo, uint64_t *hi)
{
    if (idx < HIST_LINEAR) {
        *lo = idx;
        *hi = (uint64_t)idx + 1;
        return;
    }
    unsigned k = idx - HIST_LINEAR;
    unsigned msb = HIST_SUB_BITS + k / HIST_PER_OCTAVE;
    uint64_t top = HIST_PER_OCTAVE + k % HIST_PER_OCTAVE;   /* top 8 bits */
    unsigned shift = msb - (HIST_SUB_BITS - 1);
    *lo = top << shift;
    uint64_t width = (uint64_t)1 << shift;
    *hi = *lo > UINT64_MAX - width ? UINT64_MAX : *lo + width;
}

/* llround and ceil for the non-negative values below, without libm. */
static uint64_t round_half_up(double v)
{
    uint64_t r = (uint64_t)v;
    return v - (double)r >= 0.5 ? r + 1 : r;
}

static uint64_t ceil_u64(double v)
{
    uint64_t r = (uint64_t)v;
    return (double)r < v ? r + 1 : r;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0;
    /* Nearest rank: the smallest value with at least p % of samples <= it,
     * i.e. rank = ceil(p/100 * count). Computed in integers with p scaled by
     * 10^4 (percentiles have at most 4 decimals): in floating point, 99.9 % of
     * 1000 is 999.0000000000001 and the rank would be off by one. Beyond
     * 1.8e13 samples the product would overflow; double is then exact enough. */
    uint64_t p_scaled = round_half_up(p * 10000.0);
    uint64_t rank;
    if (h->count <= UINT64_MAX / 1000000u)
        rank = (p_scaled * h->count + 999999u) / 1000000u;
    else
        rank = ceil_u64((double)p_scaled / 1e6 * (double)h->count);
    if (rank < 1)
        rank = 1;
    /* The first and last ranks are the exact extremes, which are kept. */
    if (rank == 1)
        return h->min;
    if (rank >= h->count)
        return h->max;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            hist_bucket_bounds(i, &lo, &hi);
            uint64_t v = lo + (hi - lo) / 2;   /* exact when width is 1 */
            /* The exact extremes are known: never report beyond them. */
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double hist_stddev(const struct hist *h)
{
    if (h->count == 0)
        return 0.0;
    double mean = hist_mean(h);
    double var = h->sumsq / (double)h->count - mean * mean;
    return var > 0 ? core_sqrt(var) : 0.0;
}

void hist_write_json(const struct hist *h, struct jw *w, const char *key)
{
    jw_obj(w, key);
    jw_str(w, "scheme", "log-linear");
    jw_int(w, "sub_bucket_bits", HIST_SUB_BITS);
    jw_arr(w, "buckets");
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        if (!h->buckets[i])
            continue;
        uint64_t lo, hi;
        hist_bucket_bounds(i, &lo, &hi);
        jw_arr(w, NULL);
        jw_uint(w, NULL, lo);
        jw_uint(w, NULL, hi);
        jw_uint(w, NULL, h->buckets[i]);
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}

static const struct {
    const char *field;
    double p;
} stat_percentiles[] = {
    {"p50_ns", 50}, {"p90_ns", 90}, {"p99_ns", 99}, {"p999_ns", 99.9},
    {"p9999_ns", 99.99}, {"p99999_ns", 99.999}, {"p999999_ns", 99.9999},
};

void hist_write_stats(const struct hist *h, struct jw *w)
{
    jw_uint(w, "count", h->count);
    if (h->count) {
        jw_uint(w, "min_ns", h->min);
        jw_double(w, "avg_ns", hist_mean(h));
        jw_uint(w, "max_ns", h->max);
        jw_double(w, "stddev_ns", hist_stddev(h));
        for (unsigned i = 0; i < sizeof stat_percentiles / sizeof *stat_percentiles; i++)
            jw_uint(w, stat_percentiles[i].field, hist_percentile(h, stat_percentiles[i].p));
    } else {
        static const char *const empty[] = {"min_ns", "avg_ns", "max_ns", "stddev_ns"};
        for (unsigned i = 0; i < sizeof empty / sizeof *empty; i++)
            jw_null(w, empty[i]);
        for (unsigned i = 0; i < sizeof stat_percentiles / sizeof *stat_percentiles; i++)
            jw_null(w, stat_percentiles[i].field);
    }
}
