/*
 * `mem-bw` on the bare-metal image: the Linux probe's bandwidth kernels
 * (probe/core/memloops.c) over a list of sizes in the static memory area,
 * one thread, bytes counted as the Linux probe counts them (the buffer
 * size once a pass). memcpy and memset are not offered: the image's are
 * byte loops of its own, not a C library's. Each sample times
 * max(1, 1 MiB / size) passes on the counter; the figure is the median of
 * --samples.
 *
 * What a host can check exactly: the source starts as words of splitmix64
 * from state 0 (as the Linux probe fills it for its random-order check),
 * and after the timed passes each result says `passes` (the warm-up pass
 * included, pass k writing or adding k) and `sum`, the read kernel's sum of
 * the buffer the operation last wrote (the source; the destination for
 * copyloop), which follows from the pattern and the passes alone; rand_rd
 * adds its random-order and sequential sums of the pattern, rand_wr and
 * write the words their last pass missed.
 */
#include "membw.h"

#include <stdbool.h>
#include <stddef.h>

#include "arch.h"
#include "clock.h"
#include "jsonw.h"
#include "memarea.h"
#include "memloops.h"
#include "parse.h"
#include "records.h"
#include "stop.h"

#define SUB "mem-bw"
#define MAX_SIZES 32
#define SAMPLE_BYTES (1u << 20)

enum op { OP_READ, OP_WRITE, OP_RMW, OP_COPYLOOP, OP_RAND_RD, OP_RAND_WR, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"read", "write", "rmw", "copyloop", "rand_rd", "rand_wr"};

struct bw_opts {
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    unsigned ops;
    uint64_t samples;
};

/* What one operation at one size leaves to report. */
struct bw_run {
    uint64_t ticks[MEM_SAMPLES_MAX];
    uint64_t passes, per_sample, sum, random_sum, sequential_sum, unwritten;
};

static volatile uint64_t sink;   /* where read results go, so reads stay */

static int usage(const char *what, const char *arg, const char *fix) { return record_usage(SUB, what, arg, fix); }

/* Source, destination and the random order (4 bytes a line). */
static uint64_t footprint(uint64_t size) { return 2 * size + size / 64 * 4; }

/* name is exactly the n bytes at s */
static bool names(const char *name, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && name[i] == s[i]; i++)
        ;
    return i == n && !name[n];
}

static int parse_ops(const char *arg, unsigned *ops)
{
    *ops = 0;
    while (*arg) {
        size_t n = 0;
        while (arg[n] && arg[n] != ',')
            n++;
        int found = -1;
        for (int k = 0; k < OP_COUNT; k++)
            if (names(op_names[k], arg, n))
                found = k;
        if (found < 0)
            return -1;
        *ops |= 1u << found;
        arg += n + (arg[n] == ',');
    }
    return *ops ? 0 : -1;
}

static int parse_options(int argc, char **argv, struct bw_opts *o)
{
    *o = (struct bw_opts){.ops = (1u << OP_COUNT) - 1, .samples = 5};
    const char *sizes = "16K,256K,4M,32M";
    for (int i = 1; i < argc; i++) {
        const char *name, *arg;
        if (record_option(SUB, argc, argv, &i, &name, &arg))
            return 2;
        int bad = 0;
        if (!__builtin_strcmp(name, "--sizes"))
            sizes = arg;
        else if (!__builtin_strcmp(name, "--ops"))
            bad = parse_ops(arg, &o->ops);
        else if (!__builtin_strcmp(name, "--samples"))
            bad = parse_u64(arg, MEM_SAMPLES_MAX, &o->samples) || !o->samples;
        else
            return usage("unknown option", name, "the image's mem-bw takes --sizes, --ops and --samples.");
        if (bad)
            return usage("bad value", arg, "--ops: a list of read, write, rmw, copyloop, rand_rd, rand_wr; "
                         "--samples: 1 to 100.");
    }
    o->nsizes = mem_sizes(SUB, sizes, "give up to 32 sizes such as 16K,4M (suffixes K, M, G).",
                          o->sizes, MAX_SIZES);
    if (o->nsizes < 0)
        return 2;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] % 64 || footprint(o->sizes[i]) > BOARD_MEM_AREA_BYTES)
            return usage("a size does not fit", NULL, "each size must be a multiple of 64 bytes, and two "
                         "buffers of it and 4 bytes a line fit the image's memory area (BOARD_MEM_AREA_BYTES).");
    return 0;
}

static void print_meta(int argc, char **argv, const struct bw_opts *o)
{
    struct jw w = {0};
    record_meta_begin(&w, SUB, argc, argv);
    mem_params_begin(&w, o->sizes, o->nsizes);
    jw_arr(&w, "ops");
    for (int k = 0; k < OP_COUNT; k++)
        if (o->ops & (1u << k))
            jw_str(&w, NULL, op_names[k]);
    jw_end(&w);
    jw_int(&w, "threads", 1);
    jw_uint(&w, "samples", o->samples);
    jw_str(&w, "bytes_counted", "buffer size per pass, once (copies: bytes copied)");
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static void one_pass(enum op op, uint64_t *src, uint64_t *dst, const uint32_t *order, size_t words, uint64_t v)
{
    switch (op) {
    case OP_READ: sink = mem_k_read(src, words); break;
    case OP_WRITE: mem_k_write(src, words, v); break;
    case OP_RMW: mem_k_rmw(src, words, v); break;
    case OP_COPYLOOP: mem_k_copyloop(dst, src, words); break;
    case OP_RAND_RD: sink = mem_k_rand_read(src, order, words / MEM_LINE_WORDS); break;
    case OP_RAND_WR: mem_k_rand_write(src, order, words / MEM_LINE_WORDS, v); break;
    case OP_COUNT: break;
    }
    __asm__ volatile("" ::: "memory");
}

static uint64_t count_unwritten(const uint64_t *p, size_t words, uint64_t v)
{
    uint64_t n = 0;
    for (size_t i = 0; i < words; i++)
        n += p[i] != v;
    return n;
}

static void run_op(enum op op, uint64_t size, uint64_t samples, struct bw_run *r, uint64_t *next_tick)
{
    size_t words = (size_t)(size / 8), lines = words / MEM_LINE_WORDS;
    uint64_t *src = (uint64_t *)(void *)mem_area, *dst = (uint64_t *)(void *)(mem_area + size);
    uint32_t *order = (uint32_t *)(void *)(mem_area + 2 * size);
    struct mem_rng fill = {0};
    for (size_t i = 0; i < words; i++) {
        src[i] = mem_rng_next(&fill);
        dst[i] = 0;
    }
    if (op == OP_RAND_RD || op == OP_RAND_WR) {
        mem_line_order(order, lines, size);   /* seeded with the size, as the Linux probe's */
        r->random_sum = mem_k_rand_read(src, order, lines);
        r->sequential_sum = mem_k_read(src, words);
    }
    r->per_sample = size >= SAMPLE_BYTES ? 1 : SAMPLE_BYTES / size;
    r->passes = 1;
    one_pass(op, src, dst, order, words, r->passes);   /* warm */
    for (uint64_t s = 0; s < samples; s++) {
        uint64_t t0 = counter_now();
        for (uint64_t k = 0; k < r->per_sample; k++)
            one_pass(op, src, dst, order, words, ++r->passes);
        r->ticks[s] = counter_now() - t0;
        record_tick_due(next_tick);
    }
    r->sum = mem_k_read(op == OP_COPYLOOP ? dst : src, words);
    r->unwritten = op == OP_WRITE || op == OP_RAND_WR ? count_unwritten(src, words, r->passes) : 0;
}

static double bps(uint64_t bytes, uint64_t ticks)
{
    uint64_t ns = ticks_to_ns(ticks);
    return ns ? (double)bytes * 1e9 / (double)ns : 0;
}

static void print_result(enum op op, uint64_t size, uint64_t samples, struct bw_run *r, bool all)
{
    uint64_t bytes = size * r->per_sample, sum = 0, lo = UINT64_MAX, hi = 0;
    for (uint64_t s = 0; s < samples; s++) {
        sum += r->ticks[s];
        lo = r->ticks[s] < lo ? r->ticks[s] : lo;
        hi = r->ticks[s] > hi ? r->ticks[s] : hi;
    }
    uint64_t sorted[MEM_SAMPLES_MAX];
    for (uint64_t s = 0; s < samples; s++)
        sorted[s] = r->ticks[s];
    uint64_t median = median_u64(sorted, (int)samples);
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "op", op_names[op]);
    jw_uint(&w, "size_bytes", size);
    jw_uint(&w, "bytes_per_pass", size);
    jw_int(&w, "threads", 1);
    if (all)
        jw_str(&w, "thread", "all");
    else
        jw_int(&w, "thread", 0);
    jw_double(&w, "bps", bps(bytes, median));
    jw_double(&w, "mean_bps", bps(bytes * samples, sum));
    jw_double(&w, "min_bps", bps(bytes, hi));
    jw_double(&w, "max_bps", bps(bytes, lo));
    jw_double(&w, "ns_per_pass", (double)ticks_to_ns(median) / (double)r->per_sample);
    jw_uint(&w, "samples", samples);
    jw_uint(&w, "passes_per_sample", r->per_sample);
    jw_uint(&w, "passes", r->passes);
    jw_uint(&w, "sum", r->sum);
    if (op == OP_RAND_RD || op == OP_RAND_WR) {
        jw_str(&w, "order", "random lines");
        jw_uint(&w, "lines", size / 64);
        jw_uint(&w, "order_seed", size);
        jw_uint(&w, "random_sum", r->random_sum);
        jw_uint(&w, "sequential_sum", r->sequential_sum);
        jw_bool(&w, "order_verified", r->random_sum == r->sequential_sum);
    }
    if (op == OP_WRITE || op == OP_RAND_WR)
        jw_uint(&w, "unwritten_words", r->unwritten);
    jw_emit(&w);
    jw_free(&w);
}

int membw_command(int argc, char **argv)
{
    struct bw_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    print_meta(argc, argv, &o);
    uint64_t start = counter_now(), next_tick = clock_ns() + 1000000000ull;
    static struct bw_run r;
    for (int i = 0; i < o.nsizes; i++)
        for (int k = 0; k < OP_COUNT; k++)
            if (o.ops & (1u << k) && !stop_requested()) {
                run_op((enum op)k, o.sizes[i], o.samples, &r, &next_tick);
                print_result((enum op)k, o.sizes[i], o.samples, &r, false);
                print_result((enum op)k, o.sizes[i], o.samples, &r, true);
            }
    record_end_stopped(ticks_to_ns(counter_now() - start), stop_requested());
    return 0;
}
