/*
 * mem-bw: memory bandwidth of plain loops and of libc's memcpy/memset.
 *
 * Each operation is one pass over a buffer; the shared harness times passes
 * (calibrated, loop overhead subtracted, repeated to 1 % standard error) and
 * the bandwidth is bytes counted per pass / median time per pass.
 *
 * What counts as a byte (docs/probe/memory.md): the buffer size, once, for
 * every operation. read counts bytes read, write and memset bytes written,
 * rmw bytes updated (each read and written back), memcpy and copyloop bytes
 * copied (read from the source and written to the destination, counted
 * once). This is the counting of lmbench's bw_mem and sysbench memory;
 * STREAM and stress-ng --stream count a copy twice (read + write).
 *
 * rand_rd and rand_wr visit the buffer's 64-byte lines in a random order
 * (a permutation fixed per size), so no prefetcher can run ahead: each
 * line is read or written whole, once per pass.
 *
 * With --threads N every thread has its own buffers, pinned to its CPU,
 * and all start together at a barrier. A thread that has its figure keeps
 * running the same operation, untimed, until the last thread has its own,
 * so that every timed sample of every thread ran while all N threads were
 * loading memory: the aggregate is the sum of the per-thread figures.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memutil.h"
#include "opts.h"
#include "probe.h"
#include "timing.h"

#define SUB "mem-bw"
#define MAX_THREADS 256

enum op { OP_READ, OP_WRITE, OP_RMW, OP_MEMCPY, OP_MEMSET, OP_COPYLOOP, OP_RAND_RD, OP_RAND_WR, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"read", "write", "rmw", "memcpy", "memset", "copyloop",
                                               "rand_rd", "rand_wr"};
#define IS_RANDOM(op) ((op) == OP_RAND_RD || (op) == OP_RAND_WR)

struct bw_opts {
    uint64_t sizes[MEM_MAX_SIZES];
    int nsizes;
    unsigned ops;           /* bit mask of enum op */
    int threads;
    int cpus[MAX_THREADS];  /* CPU of each thread */
    int ncpu_list;          /* length of the --cpus list (0 = default) */
    enum hugepages hugepages;
    int quick;
    struct timing_opts timing;
};

/* One worker thread and the buffers it owns. */
struct bw_worker {
    pthread_t thread;
    int index, cpu, pinned;
    struct mem_buf src, dst;    /* dst only for the copies */
    uint64_t size;              /* size of src (0: none) */
    int alloc_failed;
    struct timing t;
    double share;               /* CPU share during the timing (mem_time_op) */
    uint64_t pass;              /* passes so far: varies the value written */
    uint32_t *order;            /* random ops: line indices in visiting order */
    uint64_t order_size;        /* buffer size `order` was made for (0: none) */
    /* Random ops, checked before timing on this buffer: the sums of one
     * random-order and one sequential pass, words a random write missed. */
    uint64_t rand_sum, seq_sum, unwritten;
};

/* The job all workers run next, set by the main thread between barriers. */
static struct {
    enum op op;
    uint64_t size;
    int quit;
} job;
static pthread_barrier_t start_bar, ready_bar, done_bar;
static atomic_int finished;
static const struct bw_opts *opts;
static volatile uint64_t sink;   /* where read results go, so reads stay */

static int parse_options(int argc, char **argv, struct bw_opts *o)
{
    const char *sizes = NULL;
    int list[MAX_THREADS];

    *o = (struct bw_opts){.ops = (1u << OP_COUNT) - 1, .threads = 1, .hugepages = HP_OFF};
    struct opt table[] = {
        {MEM_OPT_SIZES(&sizes, 1024, "buffer sizes per thread, multiples of 64 from 1K: 16K,64M or ranges\n"
                               "4K-64M; suffixes K, M, G (default 4K,16K,64K,256K,1M,4M,16M,64M)")},
        {OPT_L("ops", &o->ops, op_names, OP_COUNT,
               "read,write,rmw,memcpy,memset,copyloop,rand_rd,rand_wr (default: all);\n"
               "rand_*: the 64-byte lines in a random order fixed per size")},
        {OPT_I("threads", &o->threads, 1, MAX_THREADS, "N", "threads, each with its own buffers (default 1)")},
        {OPT_CPU_LIST("cpus", list, &o->ncpu_list, "CPUs the threads are pinned to, in turn (default: all allowed)")},
        {MEM_OPT_HUGEPAGES(&o->hugepages)},
        {MEM_OPT_QUICK(&o->quick, "sizes 16K,1M,64M and shorter timing (a fast smoke run)")},
        {OPT_TEXT("Bytes per pass = the buffer size, counted once (a copy is not counted as read + write).")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;

    const char *def = o->quick ? "16K,1M,64M" : "4K,16K,64K,256K,1M,4M,16M,64M";
    const struct opt *so = opts_find(table, "sizes");
    o->nsizes = mem_parse_size_list(sizes ? sizes : def, (uint64_t)so->min, so->max, o->sizes, so->cap);
    if (o->nsizes <= 0)
        return usage_error(SUB, "--sizes must be a list of sizes or ranges from 1K to %lluM such as 16K,64M "
                           "or 4K-64M (at most %d sizes), got '%s'.",
                           (unsigned long long)(MEM_MAX_BYTES >> 20), MEM_MAX_SIZES, sizes);
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] % 64)
            return usage_error(SUB, "size %llu is not a multiple of 64 bytes; the loops move whole cache lines.",
                               (unsigned long long)o->sizes[i]);

    if (!o->ncpu_list) {
        o->ncpu_list = allowed_cpus(list, MAX_THREADS);
        if (o->ncpu_list <= 0)
            return usage_error(SUB, "cannot read this process's CPU affinity.");
    }
    for (int i = 0; i < o->threads; i++)
        o->cpus[i] = list[i % o->ncpu_list];
    mem_timing(&o->timing, o->quick);
    return 0;
}

/* One pass of the current job's operation. */
static void one_pass(struct bw_worker *w)
{
    size_t size = (size_t)job.size, words = size / 8;
    uint64_t *s = (uint64_t *)(void *)w->src.p, *d = (uint64_t *)(void *)w->dst.p;
    uint64_t v = ++w->pass;
    switch (job.op) {
    case OP_READ: sink = mem_k_read(s, words); break;
    case OP_WRITE: mem_k_write(s, words, v); break;
    case OP_RMW: mem_k_rmw(s, words, v); break;
    case OP_MEMCPY: memcpy(d, s, size); break;
    case OP_MEMSET: memset(s, (int)(v & 0xff), size); break;
    case OP_COPYLOOP: mem_k_copyloop(d, s, words); break;
    case OP_RAND_RD: sink = mem_k_rand_read(s, w->order, words / MEM_LINE_WORDS); break;
    case OP_RAND_WR: mem_k_rand_write(s, w->order, words / MEM_LINE_WORDS, v); break;
    case OP_COUNT: break;
    }
    /* Passes stay distinct: nothing is hoisted or merged across them. */
    __asm__ volatile("" ::: "memory");
}

static void passes(void *arg, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        one_pass(arg);
}

/* Map and touch one buffer (first touch by the thread that uses it places
 * it on its NUMA node); not timed. 0 or -1. */
static int make_buffer(struct mem_buf *b, uint64_t size, int fill)
{
    mem_buf_unmap(b);
    if (mem_buf_map(b, size, opts->hugepages) == -2)
        mem_buf_map(b, size, HP_THP);
    if (!b->p)
        return -1;
    memset(b->p, fill, b->len);
    return 0;
}

/* The random visiting order of a buffer of `size` bytes: its line indices
 * shuffled (Fisher-Yates) by a generator seeded with the size, so every
 * run, thread and operation visits a size's lines in the same order. Then
 * the check: the buffer gets a distinct value per word (word i: the i-th
 * output of splitmix64 from state 0), and one random-order read pass must
 * give the sequential read's sum, one random-order write pass must leave no
 * word unwritten: a line visited twice or never would show. 0 or -1. */
static int make_order(struct bw_worker *w, enum op op)
{
    size_t lines = (size_t)(w->size / 64), words = lines * MEM_LINE_WORDS;
    if (w->order_size != w->size) {
        free(w->order);
        w->order_size = 0;
        w->order = malloc(lines * sizeof *w->order);
        if (!w->order)
            return -1;
        mem_line_order(w->order, lines, w->size);
        w->order_size = w->size;
    }
    uint64_t *p = (uint64_t *)(void *)w->src.p;
    struct mem_rng fill = {0};
    for (size_t i = 0; i < words; i++)
        p[i] = mem_rng_next(&fill);
    w->seq_sum = mem_k_read(p, words);
    w->rand_sum = mem_k_rand_read(p, w->order, lines);
    w->unwritten = 0;
    if (op == OP_RAND_WR) {
        uint64_t v = 0x5a5a5a5a5a5a5a5aull;   /* no word of the fill is likely to hold it */
        mem_k_rand_write(p, w->order, lines, v);
        for (size_t i = 0; i < words; i++)
            w->unwritten += p[i] != v;
    }
    return 0;
}

/* Buffers for the job: the source (the only one most operations use) and,
 * for the copies, the destination; kept while the size stays the same. */
static void ensure_buffers(struct bw_worker *w)
{
    int copy = job.op == OP_MEMCPY || job.op == OP_COPYLOOP;
    w->alloc_failed = 0;
    if (w->size != job.size) {
        mem_buf_unmap(&w->dst);
        w->size = 0;
        if (make_buffer(&w->src, job.size, 1)) {
            w->alloc_failed = 1;
            return;
        }
        w->size = job.size;
    }
    if (copy && w->dst.len != w->size && make_buffer(&w->dst, w->size, 2))
        w->alloc_failed = 1;
    if (IS_RANDOM(job.op) && make_order(w, job.op))
        w->alloc_failed = 1;
}

static void *worker_main(void *arg)
{
    struct bw_worker *w = arg;
    w->pinned = mem_pin_self(w->cpu) == 0;
    for (;;) {
        pthread_barrier_wait(&start_bar);
        if (job.quit)
            break;
        ensure_buffers(w);
        pthread_barrier_wait(&ready_bar);
        if (!w->alloc_failed) {
            w->share = mem_time_op(passes, w, &opts->timing, &w->t);
            atomic_fetch_add(&finished, 1);
            /* Keep loading memory until every thread has its figure. */
            while (atomic_load(&finished) < opts->threads)
                one_pass(w);
        } else {
            atomic_fetch_add(&finished, 1);
        }
        pthread_barrier_wait(&done_bar);
    }
    mem_buf_unmap(&w->src);
    mem_buf_unmap(&w->dst);
    free(w->order);
    return NULL;
}

static void print_meta(int argc, char **argv, const struct bw_opts *o)
{
    struct jw w = {0};
    char thp[32];
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_arr(&w, "sizes_bytes");
    for (int i = 0; i < o->nsizes; i++)
        jw_uint(&w, NULL, o->sizes[i]);
    jw_end(&w);
    jw_arr(&w, "ops");
    for (int i = 0; i < OP_COUNT; i++)
        if (o->ops & (1u << i))
            jw_str(&w, NULL, op_names[i]);
    jw_end(&w);
    jw_int(&w, "threads", o->threads);
    jw_arr(&w, "cpus");
    for (int i = 0; i < o->threads; i++)
        jw_int(&w, NULL, o->cpus[i]);
    jw_end(&w);
    jw_str(&w, "hugepages", mem_hugepage_names[o->hugepages]);
    jw_bool(&w, "quick", o->quick);
    jw_str(&w, "bytes_counted", "buffer size per pass, once (copies: bytes copied)");
    jw_uint(&w, "min_sample_ns", o->timing.min_sample_ns);
    jw_uint(&w, "max_time_ns", o->timing.max_time_ns);
    jw_int(&w, "min_samples", o->timing.min_samples);
    jw_double(&w, "target_rel_error", o->timing.target_rel_error);
    jw_end(&w);
    jw_obj(&w, "privileges");
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

static double bps_of(uint64_t bytes, double ns)
{
    return ns > 0 ? (double)bytes * 1e9 / ns : 0;
}

static void emit_thread(const struct bw_worker *w, enum op op, uint64_t size)
{
    const struct timing *t = &w->t;
    struct jw j = {0};
    jw_record(&j, "result");
    jw_str(&j, "op", op_names[op]);
    jw_uint(&j, "size_bytes", size);
    jw_uint(&j, "bytes_per_pass", size);
    jw_int(&j, "threads", opts->threads);
    jw_int(&j, "thread", w->index);
    if (IS_RANDOM(op)) {
        jw_str(&j, "order", "random lines");
        jw_uint(&j, "lines", size / 64);
        jw_uint(&j, "order_seed", size);
        jw_uint(&j, "random_sum", w->rand_sum);
        jw_uint(&j, "sequential_sum", w->seq_sum);
        if (op == OP_RAND_WR)
            jw_uint(&j, "words_not_written", w->unwritten);
        jw_bool(&j, "order_verified", w->rand_sum == w->seq_sum && !w->unwritten);
    }
    jw_int(&j, "cpu", w->cpu);
    jw_uint(&j, "bps", (uint64_t)(bps_of(size, t->median_ns) + 0.5));
    jw_uint(&j, "mean_bps", (uint64_t)(bps_of(size, t->ns_per_op) + 0.5));
    jw_uint(&j, "min_bps", (uint64_t)(bps_of(size, t->max_ns) + 0.5));
    jw_uint(&j, "max_bps", (uint64_t)(bps_of(size, t->min_ns) + 0.5));
    jw_double(&j, "ns_per_pass", t->median_ns);
    jw_arr(&j, "values_bps");
    for (int i = 0; i < t->samples; i++)
        jw_uint(&j, NULL, (uint64_t)(bps_of(size, t->values[i]) + 0.5));
    jw_end(&j);
    jw_double(&j, "rel_error", t->rel_error);
    jw_int(&j, "samples", t->samples);
    jw_uint(&j, "passes_per_sample", t->n_per_sample);
    jw_bool(&j, "converged", t->converged);
    jw_double(&j, "cpu_share", w->share);
    jw_str(&j, "hugepages", mem_hugepage_names[w->src.kind]);
    int64_t hb = mem_buf_huge_bytes(&w->src);
    if (hb < 0)
        jw_null(&j, "hugepage_bytes");
    else
        jw_int(&j, "hugepage_bytes", hb);
    jw_emit(&j);
    jw_free(&j);
}

static void emit_all(const struct bw_worker *ws, enum op op, uint64_t size)
{
    double sum = 0, lo = 0, hi = 0;
    int converged = 1;
    for (int i = 0; i < opts->threads; i++) {
        double b = bps_of(size, ws[i].t.median_ns);
        sum += b;
        lo = i == 0 || b < lo ? b : lo;
        hi = i == 0 || b > hi ? b : hi;
        converged &= ws[i].t.converged;
    }
    struct jw j = {0};
    jw_record(&j, "result");
    jw_str(&j, "op", op_names[op]);
    jw_uint(&j, "size_bytes", size);
    jw_uint(&j, "bytes_per_pass", size);
    jw_int(&j, "threads", opts->threads);
    jw_str(&j, "thread", "all");
    jw_uint(&j, "bps", (uint64_t)(sum + 0.5));
    jw_uint(&j, "thread_min_bps", (uint64_t)(lo + 0.5));
    jw_uint(&j, "thread_max_bps", (uint64_t)(hi + 0.5));
    jw_bool(&j, "converged", converged);
    jw_emit(&j);
    jw_free(&j);
}

int cmd_mem_bw(int argc, char **argv)
{
    uint64_t t0 = mono_ns();
    static struct bw_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    opts = &o;

    struct bw_worker *ws = calloc((size_t)o.threads, sizeof *ws);
    if (!ws) {
        fprintf(stderr, "rtvb-probe mem-bw: out of memory.\n");
        return EXIT_ENV;
    }
    mem_catch_stop();
    print_meta(argc, argv, &o);

    unsigned parties = (unsigned)o.threads;
    pthread_barrier_init(&start_bar, NULL, parties + 1);
    pthread_barrier_init(&ready_bar, NULL, parties);
    pthread_barrier_init(&done_bar, NULL, parties + 1);
    for (int i = 0; i < o.threads; i++) {
        ws[i].index = i;
        ws[i].cpu = o.cpus[i];
        int err = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
        if (err) {
            /* Fewer threads than asked would be a different measurement. */
            jw_warning("thread_failed", "cannot start thread %d: %s; use fewer --threads.", i, strerror(err));
            emit_end("error", mono_ns() - t0, "cannot start the threads");
            _exit(EXIT_ENV);
        }
    }

    const char *error = NULL;
    int warned_pin = 0, warned_huge = 0, warned_share = 0;
    if (o.threads > o.ncpu_list)
        jw_warning("cpus_oversubscribed", "%d threads share %d CPUs, so they take turns and the aggregate is "
                   "not a parallel bandwidth; use at most one thread per CPU.", o.threads, o.ncpu_list);
    for (int s = 0; s < o.nsizes && !error && !mem_stop; s++) {
        for (int op = 0; op < OP_COUNT && !error && !mem_stop; op++) {
            if (!(o.ops & (1u << op)))
                continue;
            job.op = (enum op)op;
            job.size = o.sizes[s];
            atomic_store(&finished, 0);
            pthread_barrier_wait(&start_bar);
            pthread_barrier_wait(&done_bar);
            for (int i = 0; i < o.threads; i++) {
                if (ws[i].alloc_failed) {
                    jw_warning("out_of_memory", "thread %d could not map its %llu-byte buffers; use smaller "
                               "--sizes or fewer --threads.", i, (unsigned long long)job.size);
                    error = "cannot map the buffers";
                } else if (!ws[i].pinned && !warned_pin++) {
                    jw_warning("cpu_unavailable", "thread %d could not be pinned to CPU %d, so threads may "
                               "migrate; check the CPU affinity.", i, ws[i].cpu);
                }
                if (o.hugepages == HP_HUGETLB && ws[i].src.kind != HP_HUGETLB && !ws[i].alloc_failed &&
                    !warned_huge++)
                    jw_warning("hugetlb_refused", "MAP_HUGETLB was refused (the hugetlb pool is empty or too "
                               "small), so transparent huge pages are requested instead; reserve pages with "
                               "'sysctl vm.nr_hugepages=N'.");
            }
            if (error)
                break;
            for (int i = 0; i < o.threads; i++) {
                mem_warn_contention(ws[i].share, &warned_share);
                emit_thread(&ws[i], job.op, job.size);
            }
            emit_all(ws, job.op, job.size);
        }
    }
    job.quit = 1;
    pthread_barrier_wait(&start_bar);
    for (int i = 0; i < o.threads; i++)
        pthread_join(ws[i].thread, NULL);
    free(ws);
    emit_end(error ? "error" : mem_stop ? "interrupted" : "ok", mono_ns() - t0, error);
    return error ? EXIT_ENV : EXIT_OK;
}
