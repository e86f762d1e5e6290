/*
 * mem-alloc: the cost of getting memory, and of translating addresses.
 *
 * alloc: allocate a block, touch it, free it, N times in a row per size,
 * each iteration timed on its own (an alloc/dealloc-style test):
 *  - malloc: malloc + touch + free. The allocator decides whether a freed
 *            block goes back to the kernel (glibc: blocks above its mmap
 *            threshold, which adapts up to 32 MiB on 64-bit), so some sizes
 *            fault on every iteration and some only on the first ones.
 *            Each touch kind's series runs in a child process of its own,
 *            so that it starts from a fresh allocator, not from the state
 *            the previous series left;
 *  - mmap:   mmap + touch + munmap: every iteration is a first touch;
 *  - reuse:  one mapping touched N times: a first touch, then warm.
 * mmap and reuse map base pages (MADV_NOHUGEPAGE) so that their figures
 * are per page whatever the system's THP setting; malloc gets whatever the
 * allocator and the system give a program.
 * Touch is `page` (one 32-bit store per page, the classic alloc/dealloc touch) or
 * `memset` (every byte written). The minor page faults of every iteration
 * are counted (getrusage), which is what tells cold from warm: an
 * iteration is cold when it took page faults. The harness is not used
 * here: the first iterations differ from the rest by design, and a mean
 * over calibrated repeats would erase exactly that.
 *
 * tlb: two pointer chases over the same number of cache lines in a random
 * cyclic order; `spread` puts one line on each of N base pages (every
 * access needs its own translation, far beyond the TLB's reach), `packed`
 * puts them side by side in N * 64 / page_size pages (the TLB covers them).
 * Both touch the same amount of data, so their difference is the cost of a
 * TLB miss (a page-table walk, two-stage in a guest).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memutil.h"
#include "opts.h"
#include "probe.h"
#include "timing.h"

#define SUB "mem-alloc"
#define MAX_ITER 1000
#define LINE 64

enum method { M_MALLOC, M_MMAP, M_REUSE, M_COUNT };
static const char *const method_names[M_COUNT] = {"malloc", "mmap", "reuse"};
enum touch { T_PAGE, T_MEMSET, T_COUNT };
static const char *const touch_names[T_COUNT] = {"page", "memset"};
enum test { TEST_ALLOC, TEST_TLB, TEST_COUNT };
static const char *const test_names[TEST_COUNT] = {"alloc", "tlb"};

struct alloc_opts {
    uint64_t sizes[MEM_MAX_SIZES];
    int nsizes;
    unsigned methods, touches, tests;
    int iterations;
    uint64_t tlb_lines;
    int repetitions;
    uint64_t seed;
    int cpu;
    int quick;
    size_t page;
    struct timing_opts timing;
};

static int parse_options(int argc, char **argv, struct alloc_opts *o)
{
    const char *sizes = NULL;

    *o = (struct alloc_opts){.methods = (1u << M_COUNT) - 1, .touches = (1u << T_COUNT) - 1,
                             .tests = (1u << TEST_COUNT) - 1, .iterations = 10, .tlb_lines = 8192,
                             .repetitions = 3, .seed = 1, .cpu = -1};
    o->page = (size_t)sysconf(_SC_PAGESIZE);
    struct opt table[] = {
        {OPT_L("tests", &o->tests, test_names, TEST_COUNT, "alloc,tlb (default both)")},
        {MEM_OPT_SIZES(&sizes, o->page, "block sizes, suffixes K, M, G (default 2M,4M,8M,16M,32M,48M,64M)")},
        {OPT_L("methods", &o->methods, method_names, M_COUNT, "malloc,mmap,reuse (default all)")},
        {OPT_L("touch", &o->touches, touch_names, T_COUNT, "page (one store per page), memset (every byte) (default both)")},
        {OPT_I("iterations", &o->iterations, 1, MAX_ITER, "N", "allocate/touch/free cycles per size, each reported (default 10)")},
        /* Packed, the lines must fill at least two pages; spread, each line
         * maps a page of its own. */
        {OPT_I("tlb-lines", &o->tlb_lines, 2 * o->page / LINE, MEM_MAX_BYTES / o->page, "N",
               "cache lines of the TLB chases (default 8192 with 4 KiB pages)")},
        {MEM_OPT_REPETITIONS(&o->repetitions, "TLB chases per layout, fresh buffers each (default 3)")},
        {MEM_OPT_SEED(&o->seed)},
        {MEM_OPT_CPU(&o->cpu)},
        {MEM_OPT_QUICK(&o->quick, "sizes 2M,16M, 5 iterations, 4096 lines, shorter timing")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    int lines_set = opts_seen(table, "tlb-lines");

    const char *def = o->quick ? "2M,16M" : "2M,4M,8M,16M,32M,48M,64M";
    const struct opt *so = opts_find(table, "sizes");
    o->nsizes = mem_parse_size_list(sizes ? sizes : def, (uint64_t)so->min, so->max, o->sizes, so->cap);
    if (o->nsizes <= 0)
        return usage_error(SUB, "--sizes must be a list of sizes from one page (%zu) to %lluM such as 2M,64M "
                           "(at most %d sizes), got '%s'.", o->page,
                           (unsigned long long)(MEM_MAX_BYTES >> 20), MEM_MAX_SIZES, sizes);
    if (!lines_set && o->page > 4096) {
        /* 8192 lines would map 512 MiB with 64 KiB pages: keep the span at
         * 128 MiB, still far beyond any TLB's reach at that page size. */
        uint64_t by_span = (128ull << 20) / o->page, by_packed = 2 * o->page / LINE;
        o->tlb_lines = by_span > by_packed ? by_span : by_packed;
    }
    if (o->quick) {
        if (!opts_seen(table, "iterations"))
            o->iterations = 5;
        if (!lines_set && o->page <= 4096)
            o->tlb_lines = 4096;
    }
    mem_timing(&o->timing, o->quick);
    return mem_resolve_cpu(SUB, &o->cpu);
}

static void print_list(struct jw *w, const char *key, unsigned mask, const char *const *names, int n)
{
    jw_arr(w, key);
    for (int i = 0; i < n; i++)
        if (mask & (1u << i))
            jw_str(w, NULL, names[i]);
    jw_end(w);
}

static void print_meta(int argc, char **argv, const struct alloc_opts *o, int pinned)
{
    struct jw w = {0};
    char thp[32];
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    print_list(&w, "tests", o->tests, test_names, TEST_COUNT);
    jw_arr(&w, "sizes_bytes");
    for (int i = 0; i < o->nsizes; i++)
        jw_uint(&w, NULL, o->sizes[i]);
    jw_end(&w);
    print_list(&w, "methods", o->methods, method_names, M_COUNT);
    print_list(&w, "touch", o->touches, touch_names, T_COUNT);
    jw_int(&w, "iterations", o->iterations);
    jw_uint(&w, "tlb_lines", o->tlb_lines);
    jw_int(&w, "line_bytes", LINE);
    jw_int(&w, "repetitions", o->repetitions);
    jw_uint(&w, "seed", o->seed);
    jw_int(&w, "cpu", o->cpu);
    jw_bool(&w, "quick", o->quick);
    jw_uint(&w, "page_bytes", o->page);
    jw_uint(&w, "min_sample_ns", o->timing.min_sample_ns);
    jw_uint(&w, "max_time_ns", o->timing.max_time_ns);
    jw_int(&w, "min_samples", o->timing.min_samples);
    jw_double(&w, "target_rel_error", o->timing.target_rel_error);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_bool(&w, "cpu_pinned", pinned);
    jw_str(&w, "thp_mode", mem_thp_mode(thp, sizeof thp));
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static void touch(char *p, size_t len, size_t page, enum touch t, uint32_t v)
{
    if (t == T_MEMSET) {
        memset(p, (int)(v & 0xff), len);
    } else {
        /* One 32-bit store per page is enough to make the kernel provide it. */
        for (size_t off = 0; off < len; off += page)
            *(uint32_t *)(void *)(p + off) = v;
    }
    /* The block is "used": the compiler may not drop the stores (it knows
     * that memory about to be freed is otherwise dead). */
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* One allocate/touch/free cycle; returns its duration or 0 on failure. */
static uint64_t cycle(enum method m, enum touch t, size_t len, size_t page, struct mem_buf *keep, uint32_t v)
{
    uint64_t t0 = mono_ns();
    switch (m) {
    case M_MALLOC: {
        char *p = malloc(len);
        if (!p)
            return 0;
        touch(p, len, page, t, v);
        free(p);
        break;
    }
    case M_MMAP: {
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        /* Base pages, as `reuse`, whatever the THP setting: the cost per
         * page is the figure (a syscall of well under 1 us). */
        madvise(p, len, MADV_NOHUGEPAGE);
        touch(p, len, page, t, v);
        munmap(p, len);
        break;
    }
    case M_REUSE:
        touch(keep->p, len, page, t, v);
        break;
    case M_COUNT:
        break;
    }
    uint64_t d = mono_ns() - t0;
    return d ? d : 1;
}

/* Median of the iterations that did (cold != 0) or did not fault. */
static int median_where(const uint64_t *ns, const uint64_t *flt, int n, int cold, double *out)
{
    double v[MAX_ITER];
    int k = 0;
    for (int i = 0; i < n; i++)
        if ((flt[i] > 0) == cold)
            v[k++] = (double)ns[i];
    *out = k ? mem_median(v, k) : 0;
    return k;
}

static void emit_alloc(enum method m, enum touch t, uint64_t size, size_t page, const uint64_t *ns,
                       const uint64_t *flt, int n)
{
    struct jw w = {0};
    double cold, warm;
    int ncold = median_where(ns, flt, n, 1, &cold);
    int nwarm = median_where(ns, flt, n, 0, &warm);
    uint64_t pages = (size + page - 1) / page;

    jw_record(&w, "result");
    jw_str(&w, "test", "alloc");
    jw_str(&w, "method", method_names[m]);
    jw_str(&w, "touch", touch_names[t]);
    jw_uint(&w, "size_bytes", size);
    jw_uint(&w, "pages", pages);
    jw_int(&w, "iterations", n);
    jw_arr(&w, "values_ns");
    for (int i = 0; i < n; i++)
        jw_uint(&w, NULL, ns[i]);
    jw_end(&w);
    jw_arr(&w, "minflt");
    for (int i = 0; i < n; i++)
        jw_uint(&w, NULL, flt[i]);
    jw_end(&w);
    jw_uint(&w, "first_ns", ns[0]);
    /* Over every cycle, cold and warm alike: the Ave / Min / Max of an
     * alloc_dealloc table. */
    uint64_t lo = ns[0], hi = ns[0], sum = 0;
    for (int i = 0; i < n; i++) {
        sum += ns[i];
        lo = ns[i] < lo ? ns[i] : lo;
        hi = ns[i] > hi ? ns[i] : hi;
    }
    jw_double(&w, "avg_ns", (double)sum / n);
    jw_uint(&w, "min_ns", lo);
    jw_uint(&w, "max_ns", hi);
    jw_int(&w, "cold_count", ncold);
    if (ncold) {
        jw_uint(&w, "cold_median_ns", (uint64_t)(cold + 0.5));
        jw_double(&w, "cold_ns_per_page", cold / (double)pages);
    } else {
        jw_null(&w, "cold_median_ns");
        jw_null(&w, "cold_ns_per_page");
    }
    jw_int(&w, "warm_count", nwarm);
    if (nwarm)
        jw_uint(&w, "warm_median_ns", (uint64_t)(warm + 0.5));
    else
        jw_null(&w, "warm_median_ns");
    jw_emit(&w);
    jw_free(&w);
}

/* One method x touch x size: `iterations` timed cycles. Returns 0 or -1 when
 * memory could not be had. */
static int run_alloc(const struct alloc_opts *o, enum method m, enum touch t, uint64_t size)
{
    uint64_t ns[MAX_ITER], flt[MAX_ITER];
    struct mem_buf keep = {0};
    size_t len = (size_t)size;

    /* reuse: a mapping of base pages, so a "page" touch is one fault each. */
    if (m == M_REUSE && mem_buf_map(&keep, size, HP_OFF))
        return -1;
    for (int i = 0; i < o->iterations; i++) {
        uint64_t f0 = mem_thread_minflt();
        ns[i] = cycle(m, t, len, o->page, &keep, (uint32_t)i + 1);
        flt[i] = mem_thread_minflt() - f0;
        if (!ns[i]) {
            mem_buf_unmap(&keep);
            return -1;
        }
    }
    mem_buf_unmap(&keep);
    emit_alloc(m, t, size, o->page, ns, flt, o->iterations);
    return 0;
}

/* Time one layout's chase on fresh buffers; ns per access or < 0. */
static double tlb_chase(const struct alloc_opts *o, int spread, uint64_t seed, int64_t *huge, double *share)
{
    struct mem_buf b;
    uint32_t n = (uint32_t)o->tlb_lines;
    struct mem_chain_layout l;
    uint64_t span;
    if (spread) {
        /* Line i on page i, at line (i mod lines-per-page) of it, so that the
         * lines fall in every cache set rather than all in one. */
        l = (struct mem_chain_layout){.step = o->page, .skew = LINE, .wrap = (uint32_t)(o->page / LINE)};
        span = (uint64_t)n * o->page;
    } else {
        l = (struct mem_chain_layout){.step = LINE, .skew = 0, .wrap = 1};
        span = (uint64_t)n * LINE;
    }
    /* Base pages only: a huge page would put 512 lines under one entry. */
    if (mem_buf_map(&b, span, HP_OFF))
        return -1;
    void *cursor = mem_chain_build(b.p, n, &l, 1, seed);
    if (!cursor) {
        mem_buf_unmap(&b);
        return -1;
    }
    *huge = mem_buf_huge_bytes(&b);
    struct timing t;
    cursor = mem_chase(cursor, n / CHASE_UNROLL + 1);
    double ns = mem_chase_time(&cursor, &o->timing, &t, share);
    mem_buf_unmap(&b);
    return ns;
}

static int run_tlb(const struct alloc_opts *o)
{
    double spread[MAX_ITER], packed[MAX_ITER], share = 1, sh = 1;
    int64_t huge = 0, h;
    int warned = 0;
    for (int r = 0; r < o->repetitions && !mem_stop; r++) {
        /* Same permutation for both layouts: only the addresses differ. */
        uint64_t seed = o->seed + (uint64_t)r * 0x9e3779b97f4a7c15ull;
        spread[r] = tlb_chase(o, 1, seed, &h, &sh);
        huge = h > huge ? h : huge;
        share = sh < share ? sh : share;
        packed[r] = tlb_chase(o, 0, seed, &h, &sh);
        huge = h > huge ? h : huge;
        share = sh < share ? sh : share;
        if (spread[r] < 0 || packed[r] < 0)
            return -1;
    }
    if (mem_stop)
        return 0;
    if (huge > 0)
        jw_warning("hugepages_used", "the kernel backed %lld bytes of the TLB test with huge pages despite "
                   "MADV_NOHUGEPAGE, so fewer TLB misses happen than the test intends.", (long long)huge);
    mem_warn_contention(share, &warned);
    int n = o->repetitions;
    double ms = mem_median(spread, n), mp = mem_median(packed, n);
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "test", "tlb");
    jw_uint(&w, "lines", o->tlb_lines);
    jw_uint(&w, "page_bytes", o->page);
    jw_uint(&w, "spread_pages", o->tlb_lines);
    jw_uint(&w, "packed_pages", (o->tlb_lines * LINE + o->page - 1) / o->page);
    jw_double(&w, "spread_ns_per_access", ms);
    jw_double(&w, "packed_ns_per_access", mp);
    jw_double(&w, "tlb_miss_ns", ms - mp);
    jw_double(&w, "cpu_share", share);
    jw_arr(&w, "spread_values_ns");
    for (int i = 0; i < n; i++)
        jw_double(&w, NULL, spread[i]);
    jw_end(&w);
    jw_arr(&w, "packed_values_ns");
    for (int i = 0; i < n; i++)
        jw_double(&w, NULL, packed[i]);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
    return 0;
}

/* All sizes of one method and touch kind; 0, or -1 when memory ran out. */
static int run_series(const struct alloc_opts *o, enum method m, enum touch t)
{
    for (int s = 0; s < o->nsizes && !mem_stop; s++)
        if (run_alloc(o, m, t, o->sizes[s])) {
            jw_warning("out_of_memory", "could not allocate %llu bytes with %s; use smaller --sizes.",
                       (unsigned long long)o->sizes[s], method_names[m]);
            return -1;
        }
    return 0;
}

/* A malloc series in a child process: the allocator's adaptive state (its
 * mmap threshold, the memory it kept) then comes from nothing but this
 * series. The child prints its own records. */
static int run_series_forked(const struct alloc_opts *o, enum method m, enum touch t)
{
    pid_t pid = fork();
    if (pid < 0)
        return run_series(o, m, t);
    if (pid == 0)
        _exit(run_series(o, m, t) ? EXIT_ENV : EXIT_OK);
    int status = 0;
    /* A stop signal interrupts the wait; the child got it too and stops. */
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == EXIT_OK ? 0 : -1;
}

int cmd_mem_alloc(int argc, char **argv)
{
    uint64_t t0 = mono_ns();
    struct alloc_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    int pin_err = mem_pin_self(o.cpu);
    mem_catch_stop();
    print_meta(argc, argv, &o, pin_err == 0);
    if (pin_err)
        jw_warning("cpu_unavailable", "could not pin to CPU %d (%s), so the scheduler may migrate the test; "
                   "check the CPU affinity.", o.cpu, strerror(pin_err));

    const char *error = NULL;
    if (o.tests & (1u << TEST_ALLOC)) {
        for (int m = 0; m < M_COUNT && !error && !mem_stop; m++) {
            if (!(o.methods & (1u << m)))
                continue;
            for (int t = 0; t < T_COUNT && !error && !mem_stop; t++) {
                if (!(o.touches & (1u << t)))
                    continue;
                int r = m == M_MALLOC ? run_series_forked(&o, (enum method)m, (enum touch)t)
                                      : run_series(&o, (enum method)m, (enum touch)t);
                if (r)
                    error = "cannot allocate a block";
            }
        }
    }
    if ((o.tests & (1u << TEST_TLB)) && !error && !mem_stop && run_tlb(&o)) {
        jw_warning("out_of_memory", "could not map the %llu pages of the TLB test; use fewer --tlb-lines.",
                   (unsigned long long)o.tlb_lines);
        error = "cannot map the TLB test buffers";
    }
    emit_end(error ? "error" : mem_stop ? "interrupted" : "ok", mono_ns() - t0, error);
    return error ? EXIT_ENV : EXIT_OK;
}
