/*
 * Unit tests of the log-linear histogram against exact answers computed from
 * the raw samples: every reported percentile within 1 % of the exact
 * nearest-rank value, merge equal to the histogram of the union, bucket
 * bounds contiguous over the whole 64-bit range.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hist.h"
#include "xorshift.h"


static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return xorshift64s(&rng_state); }
static double rnd01(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p)
{
    /* ceil(p/100 * n) without floating point: p has at most 4 decimals. */
    uint64_t p_scaled = (uint64_t)llround(p * 10000.0);
    size_t rank = (size_t)((p_scaled * n + 999999u) / 1000000u);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static void check_percentiles(const char *name, uint64_t *v, size_t n)
{
    static const double ps[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 99.9999, 100};
    struct hist *h = malloc(sizeof *h);
    hist_reset(h);
    for (size_t i = 0; i < n; i++)
        hist_record(h, v[i]);
    qsort(v, n, sizeof *v, cmp_u64);

    CHECK(h->count == n, "%s: count %llu != %zu", name, (unsigned long long)h->count, n);
    CHECK(h->min == v[0], "%s: min", name);
    CHECK(h->max == v[n - 1], "%s: max", name);
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        uint64_t exact = exact_percentile(v, n, ps[i]);
        uint64_t got = hist_percentile(h, ps[i]);
        double err = exact ? fabs((double)got - (double)exact) / (double)exact : (double)got;
        CHECK(err <= 0.01, "%s: p%g = %llu, exact %llu (error %.3f %%)", name, ps[i],
              (unsigned long long)got, (unsigned long long)exact, err * 100);
    }
    long double sum = 0, sumsq = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        sumsq += (long double)v[i] * v[i];
    }
    double mean = (double)(sum / n);
    double sd = sqrt((double)(sumsq / n - (sum / n) * (sum / n)));
    CHECK(fabs(hist_mean(h) - mean) <= 1e-9 * mean + 1e-9, "%s: mean %f != %f", name, hist_mean(h), mean);
    CHECK(fabs(hist_stddev(h) - sd) <= 1e-6 * (sd + mean) + 1e-6, "%s: stddev %f != %f", name, hist_stddev(h), sd);
    free(h);
}

static void test_distributions(void)
{
    enum { N = 200000 };
    uint64_t *v = malloc(N * sizeof *v);

    for (size_t i = 0; i < N; i++)                       /* uniform 1 us .. 100 us */
        v[i] = 1000 + rnd() % 99000;
    check_percentiles("uniform", v, N);

    for (size_t i = 0; i < N; i++)                       /* exponential, mean 20 us, + 5 us floor */
        v[i] = 5000 + (uint64_t)(-log(1.0 - rnd01()) * 20000.0);
    check_percentiles("exponential", v, N);

    for (size_t i = 0; i < N; i++)                       /* bimodal: 90 % near 10 us, 10 % near 400 us */
        v[i] = (rnd() % 10 ? 10000 : 400000) + rnd() % 2000;
    check_percentiles("bimodal", v, N);

    for (size_t i = 0; i < N; i++)                       /* small values: exact buckets */
        v[i] = 1 + rnd() % 300;
    check_percentiles("small", v, N);

    for (size_t i = 0; i < N; i++)                       /* one 1-hour outlier among 20 us samples */
        v[i] = 20000 + rnd() % 100;
    v[N / 2] = 3600ull * 1000000000ull;
    check_percentiles("hour-outlier", v, N);
    free(v);
}

static void test_merge_is_union(void)
{
    struct hist *a = malloc(sizeof *a), *b = malloc(sizeof *b), *u = malloc(sizeof *u);
    hist_reset(a);
    hist_reset(b);
    hist_reset(u);
    for (int i = 0; i < 100000; i++) {
        uint64_t x = 3000 + rnd() % 50000, y = (rnd() % 1000) * (rnd() % 100000);
        hist_record(a, x);
        hist_record(u, x);
        hist_record(b, y);
        hist_record(u, y);
    }
    hist_merge(a, b);
    CHECK(memcmp(a->buckets, u->buckets, sizeof a->buckets) == 0, "merged buckets differ from the union's");
    CHECK(a->count == u->count && a->min == u->min && a->max == u->max && a->sum == u->sum,
          "merged scalars differ from the union's");
    free(a);
    free(b);
    free(u);
}

static void test_bucket_scheme(void)
{
    uint64_t prev_hi = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        uint64_t lo, hi;
        hist_bucket_bounds(i, &lo, &hi);
        CHECK(lo == prev_hi, "bucket %u starts at %llu, previous ended at %llu", i,
              (unsigned long long)lo, (unsigned long long)prev_hi);
        CHECK(hist_index(lo) == i, "index(lo) of bucket %u is %u", i, hist_index(lo));
        if (hi != UINT64_MAX) {
            CHECK(hist_index(hi - 1) == i, "index(hi-1) of bucket %u is %u", i, hist_index(hi - 1));
            CHECK(lo < HIST_LINEAR || (double)(hi - lo) / (double)lo <= 1.0 / 128 + 1e-12,
                  "bucket %u is wider than 1/128 of its lower bound", i);
        }
        prev_hi = hi;
    }
    CHECK(prev_hi == UINT64_MAX, "the last bucket does not reach UINT64_MAX");
    CHECK(hist_index(UINT64_MAX) == HIST_BUCKETS - 1, "UINT64_MAX is not in the last bucket");
}

static void test_empty(void)
{
    struct hist *h = malloc(sizeof *h);
    hist_reset(h);
    CHECK(hist_percentile(h, 99) == 0, "percentile of an empty histogram");
    CHECK(hist_mean(h) == 0 && hist_stddev(h) == 0, "mean/stddev of an empty histogram");
    free(h);
}

int main(void)
{
    test_bucket_scheme();
    test_distributions();
    test_merge_is_union();
    test_empty();
    return check_verdict("test_hist");
}
