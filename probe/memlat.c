/*
 * mem-lat: memory read latency by pointer chasing.
 *
 * Every load's address is the value of the previous load, so no two loads
 * of the chain can overlap: time / loads is the latency of one access at
 * the level of the hierarchy the working set fits in. Two chains per size:
 *  - seq:    slot i points to slot i+1, `stride` bytes apart. Hardware
 *            prefetchers see the constant stride and hide much of the
 *            latency: the "sequential" curve;
 *  - random: the same slots in a random cyclic order, which no stride
 *            prefetcher can follow: the "random read" curve, the true
 *            load-to-use latency (including TLB misses at large sizes).
 * Timing is the shared harness (calibrated, loop overhead subtracted,
 * repeated to 1 % standard error); each repetition maps a fresh buffer and
 * builds a fresh chain, so the spread across repetitions includes the
 * physical page placement, as successive lat_mem_rd runs do.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memutil.h"
#include "opts.h"
#include "probe.h"
#include "timing.h"

#define SUB "mem-lat"
/* Slots warmed before timing: enough to fill any cache level that can
 * still hold the set, small enough to cost < 0.1 s when the set is DRAM. */
#define WARM_LOADS (1u << 20)

enum { MODE_SEQ = 1, MODE_RANDOM = 2 };

struct lat_opts {
    uint64_t sizes[MEM_MAX_SIZES];
    int nsizes;
    uint64_t stride;
    unsigned modes;
    int repetitions;
    enum hugepages hugepages;
    uint64_t seed;
    int cpu;
    int quick;
    struct timing_opts timing;
};

static const char *const mode_names[] = {"seq", "random", "both"};
static const int mode_values[] = {MODE_SEQ, MODE_RANDOM, MODE_SEQ | MODE_RANDOM};

/* Slots hold pointers, so the stride is a whole number of them. */
static int parse_stride(const struct opt *t, const char *arg)
{
    uint64_t u;
    if (parse_size(arg, (uint64_t)t->min, t->max, &u) || u % sizeof(void *))
        return -1;
    *(uint64_t *)t->field = u;
    return 0;
}

static int parse_options(int argc, char **argv, struct lat_opts *o)
{
    const char *sizes = NULL;
    *o = (struct lat_opts){.stride = 64, .modes = MODE_SEQ | MODE_RANDOM, .repetitions = 1,
                           .hugepages = HP_OFF, .seed = 1, .cpu = -1};
    struct opt table[] = {
        {MEM_OPT_SIZES(&sizes, 1, "working-set sizes: 16K,64M or ranges 512-256M (powers of two\n"
                               "and 1.5x points); suffixes K, M, G (default 512-256M)")},
        {OPT_C("stride", parse_stride, &o->stride, "N",
               sizeof(void *) == 8 ? "a multiple of 8 bytes up to 1G" : "a multiple of 4 bytes up to 1G",
               "bytes between slots, and slot size of the random chain (default 64)"),
         .min = sizeof(void *), .max = 1ull << 30},
        {OPT_E("mode", &o->modes, mode_names, mode_values, 3, "chain order (default both)")},
        {MEM_OPT_REPETITIONS(&o->repetitions, "fresh buffer and chain per repetition, each value reported (default 1)")},
        {MEM_OPT_HUGEPAGES(&o->hugepages)},
        {MEM_OPT_SEED(&o->seed)},
        {MEM_OPT_CPU(&o->cpu)},
        {MEM_OPT_QUICK(&o->quick, "sizes 1K-64M in powers of 4, shorter timing (a fast smoke run)")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    const struct opt *so = opts_find(table, "sizes");
    if (rc)
        return rc;
    if (sizes) {
        o->nsizes = mem_parse_size_list(sizes, (uint64_t)so->min, so->max, o->sizes, so->cap);
        if (o->nsizes <= 0)
            return usage_error(SUB, "--sizes must be a list of sizes or ranges from 1 byte to %lluM such as "
                               "16K,64M or 512-256M (at most %d sizes), got '%s'.",
                               (unsigned long long)(MEM_MAX_BYTES >> 20), MEM_MAX_SIZES, sizes);
    } else if (o->quick) {
        static const uint64_t q[] = {1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                     1 << 20, 4 << 20, 16 << 20, 64 << 20};
        o->nsizes = (int)(sizeof q / sizeof *q);
        memcpy(o->sizes, q, sizeof q);
    } else {
        o->nsizes = mem_parse_size_list("512-256M", (uint64_t)so->min, so->max, o->sizes, so->cap);
    }
    if (!sizes) {
        /* The default sweep simply starts where two slots fit. */
        int k = 0;
        for (int i = 0; i < o->nsizes; i++)
            if (o->sizes[i] >= 2 * o->stride)
                o->sizes[k++] = o->sizes[i];
        o->nsizes = k;
    }
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] < 2 * o->stride)
            return usage_error(SUB, "size %llu holds fewer than two %llu-byte slots; use sizes of at least "
                               "twice --stride.", (unsigned long long)o->sizes[i],
                               (unsigned long long)o->stride);
    mem_timing(&o->timing, o->quick);
    return mem_resolve_cpu(SUB, &o->cpu);
}

static void print_meta(int argc, char **argv, const struct lat_opts *o, int pinned)
{
    struct jw w = {0};
    char thp[32];
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_arr(&w, "sizes_bytes");
    for (int i = 0; i < o->nsizes; i++)
        jw_uint(&w, NULL, o->sizes[i]);
    jw_end(&w);
    jw_uint(&w, "stride_bytes", o->stride);
    jw_str(&w, "mode", o->modes == MODE_SEQ ? "seq" : o->modes == MODE_RANDOM ? "random" : "both");
    jw_int(&w, "repetitions", o->repetitions);
    jw_str(&w, "hugepages", mem_hugepage_names[o->hugepages]);
    jw_uint(&w, "seed", o->seed);
    jw_int(&w, "cpu", o->cpu);
    jw_bool(&w, "quick", o->quick);
    jw_int(&w, "loads_per_op", CHASE_UNROLL);
    jw_uint(&w, "min_sample_ns", o->timing.min_sample_ns);
    jw_uint(&w, "max_time_ns", o->timing.max_time_ns);
    jw_int(&w, "min_samples", o->timing.min_samples);
    jw_double(&w, "target_rel_error", o->timing.target_rel_error);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_bool(&w, "cpu_pinned", pinned);
    jw_str(&w, "thp_mode", mem_thp_mode(thp, sizeof thp));
    long free_pages = mem_hugetlb_free_pages();
    if (free_pages < 0)
        jw_null(&w, "mem_hugetlb_free_pages");
    else
        jw_int(&w, "mem_hugetlb_free_pages", free_pages);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

/* Per-run state of the huge-page warnings: each is printed once. */
struct hp_state {
    int warned_hugetlb, warned_thp, warned_share;
};

/* Map a buffer of the requested kind; hugetlb falls back to THP with a
 * warning when the pool refuses. */
static int map_buffer(struct mem_buf *b, uint64_t size, const struct lat_opts *o, struct hp_state *hs)
{
    int rc = mem_buf_map(b, size, o->hugepages);
    if (rc == -2) {
        if (!hs->warned_hugetlb++)
            jw_warning("hugetlb_refused",
                       "MAP_HUGETLB was refused for %llu bytes (the hugetlb pool is empty or too small), so "
                       "transparent huge pages are requested instead; reserve pages with "
                       "'sysctl vm.nr_hugepages=N' to get hugetlb pages.", (unsigned long long)size);
        rc = mem_buf_map(b, size, HP_THP);
    }
    return rc;
}

/* One measurement: fresh buffer, fresh chain, warm, time. Returns ns per
 * load, or a negative value if memory ran out. */
static double measure(const struct lat_opts *o, int random, uint64_t size, int rep, struct hp_state *hs,
                      struct timing *t, int64_t *huge_bytes, enum hugepages *kind, double *share)
{
    struct mem_buf b;
    if (map_buffer(&b, size, o, hs))
        return -1;
    uint32_t n = (uint32_t)(size / o->stride);
    struct mem_chain_layout l = {.step = (size_t)o->stride, .skew = 0, .wrap = 1};
    /* Different repetitions and sizes get different permutations. */
    uint64_t seed = o->seed ^ (size * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)rep << 48);
    void *cursor = mem_chain_build(b.p, n, &l, random, seed);
    if (!cursor) {
        mem_buf_unmap(&b);
        return -1;
    }
    *huge_bytes = mem_buf_huge_bytes(&b);
    *kind = b.kind;
    uint64_t warm = n < WARM_LOADS ? n : WARM_LOADS;
    cursor = mem_chase(cursor, warm / CHASE_UNROLL + 1);
    double ns = mem_chase_time(&cursor, &o->timing, t, share);
    mem_buf_unmap(&b);
    return ns;
}

static void emit_result(const struct lat_opts *o, int random, uint64_t size, const double *v,
                        const struct timing *worst, int samples, int converged, int64_t huge_bytes,
                        enum hugepages kind, double share)
{
    struct jw w = {0};
    int r = o->repetitions;
    double lo = v[0], hi = v[0], sum = 0;
    for (int i = 0; i < r; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        sum += v[i];
    }
    jw_record(&w, "result");
    jw_str(&w, "mode", random ? "random" : "seq");
    jw_uint(&w, "size_bytes", size);
    jw_uint(&w, "stride_bytes", o->stride);
    jw_uint(&w, "slots", size / o->stride);
    jw_double(&w, "ns_per_access", mem_median(v, r));
    jw_double(&w, "mean_ns", sum / r);
    jw_double(&w, "min_ns", lo);
    jw_double(&w, "max_ns", hi);
    jw_arr(&w, "values_ns");
    for (int i = 0; i < r; i++)
        jw_double(&w, NULL, v[i]);
    jw_end(&w);
    jw_double(&w, "rel_error", worst->rel_error);
    jw_bool(&w, "converged", converged);
    jw_int(&w, "samples", samples);
    jw_double(&w, "cpu_share", share);
    jw_str(&w, "hugepages", mem_hugepage_names[kind]);
    if (huge_bytes < 0)
        jw_null(&w, "hugepage_bytes");
    else
        jw_int(&w, "hugepage_bytes", huge_bytes);
    jw_emit(&w);
    jw_free(&w);
}

int cmd_mem_lat(int argc, char **argv)
{
    uint64_t t0 = mono_ns();
    struct lat_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    int pin_err = mem_pin_self(o.cpu);
    mem_catch_stop();
    print_meta(argc, argv, &o, pin_err == 0);
    if (pin_err)
        jw_warning("cpu_unavailable", "could not pin to CPU %d (%s), so the scheduler may migrate the chase "
                   "and cold caches add to some samples; check the CPU affinity.", o.cpu, strerror(pin_err));

    struct hp_state hs = {0};
    double *values = calloc((size_t)o.repetitions, sizeof *values);
    const char *error = NULL;
    if (!values)
        error = "out of memory";
    for (int m = MODE_SEQ; m <= MODE_RANDOM && !error && !mem_stop; m <<= 1) {
        if (!(o.modes & (unsigned)m))
            continue;
        for (int s = 0; s < o.nsizes && !error && !mem_stop; s++) {
            struct timing t, worst = {0};
            int samples = 0, converged = 1;
            int64_t huge = INT64_MAX;
            enum hugepages kind = o.hugepages;
            double share = 1;
            for (int r = 0; r < o.repetitions && !error && !mem_stop; r++) {
                int64_t hb;
                double sh;
                values[r] = measure(&o, m == MODE_RANDOM, o.sizes[s], r, &hs, &t, &hb, &kind, &sh);
                if (values[r] < 0) {
                    error = "cannot map the buffer";
                    jw_warning("out_of_memory", "no memory for a %llu-byte buffer and its chain; use smaller "
                               "--sizes.", (unsigned long long)o.sizes[s]);
                    break;
                }
                share = sh < share ? sh : share;
                samples += t.samples;
                converged &= t.converged;
                if (t.rel_error >= worst.rel_error)
                    worst = t;
                huge = hb < 0 || huge < 0 ? -1 : hb < huge ? hb : huge;
            }
            if (error || mem_stop)
                break;
            if (o.hugepages != HP_OFF && huge >= 0 && (uint64_t)huge < o.sizes[s] && !hs.warned_thp++)
                jw_warning("hugepages_partial", "only %lld of the %llu bytes of a buffer were backed by huge "
                           "pages (THP mode and fragmentation decide); results at that size mix page sizes.",
                           (long long)huge, (unsigned long long)o.sizes[s]);
            mem_warn_contention(share, &hs.warned_share);
            emit_result(&o, m == MODE_RANDOM, o.sizes[s], values, &worst, samples, converged, huge, kind, share);
        }
    }
    free(values);
    emit_end(error ? "error" : mem_stop ? "interrupted" : "ok", mono_ns() - t0, error);
    return error ? EXIT_ENV : EXIT_OK;
}
