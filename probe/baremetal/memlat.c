/*
 * `mem-lat` on the bare-metal image: the Linux probe's pointer chase
 * (probe/core/memloops.c) over a list of working-set sizes in the static
 * memory area, with its chains (seq: slot i to slot i+1; random: one
 * Sattolo cycle) and its records. What the Linux probe's timing harness
 * does (calibration, loop overhead, convergence) is not here: each sample
 * times one chase of max(slots, 4096) loads on the counter, and the figure
 * is the median of --samples.
 *
 * Before timing, one lap is walked and counted: a chain of n slots is a
 * single cycle exactly when the walk first returns to its start after n
 * loads, so `lap_slots` = `slots` proves every slot is visited once a lap.
 */
#include "memlat.h"

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

#define SUB "mem-lat"
#define MAX_SIZES 32
#define MIN_LOADS 4096u
#define MODE_SEQ 1u
#define MODE_RANDOM 2u

struct lat_opts {
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    uint64_t stride, seed, samples;
    unsigned modes;
};

static int usage(const char *what, const char *arg, const char *fix) { return record_usage(SUB, what, arg, fix); }

/* The chain's slots and, for a random one, Sattolo's scratch (4 bytes a slot). */
static uint64_t footprint(uint64_t size, uint64_t stride) { return size + size / stride * 4; }

static int parse_options(int argc, char **argv, struct lat_opts *o)
{
    *o = (struct lat_opts){.stride = 64, .seed = 1, .samples = 5, .modes = MODE_SEQ | MODE_RANDOM};
    const char *sizes = "4K,16K,64K,256K,1M,4M,16M,64M";
    for (int i = 1; i < argc; i++) {
        const char *name, *arg;
        if (record_option(SUB, argc, argv, &i, &name, &arg))
            return 2;
        int bad = 0;
        if (!__builtin_strcmp(name, "--sizes"))
            sizes = arg;
        else if (!__builtin_strcmp(name, "--stride"))
            bad = parse_size(arg, 1u << 20, &o->stride) || o->stride % 8;
        else if (!__builtin_strcmp(name, "--seed"))
            bad = parse_u64(arg, UINT64_MAX, &o->seed);
        else if (!__builtin_strcmp(name, "--samples"))
            bad = parse_u64(arg, MEM_SAMPLES_MAX, &o->samples) || !o->samples;
        else if (!__builtin_strcmp(name, "--mode")) {
            o->modes = !__builtin_strcmp(arg, "seq") ? MODE_SEQ : !__builtin_strcmp(arg, "random") ? MODE_RANDOM
                     : !__builtin_strcmp(arg, "both") ? MODE_SEQ | MODE_RANDOM : 0;
            bad = !o->modes;
        } else
            return usage("unknown option", name,
                         "the image's mem-lat takes --sizes, --stride, --mode, --seed and --samples.");
        if (bad)
            return usage("bad value", arg, "--stride: a multiple of 8 up to 1M; --mode: seq, random or both; "
                         "--samples: 1 to 100; --seed: a non-negative integer.");
    }
    o->nsizes = mem_sizes(SUB, sizes, "give up to 32 sizes such as 16K,64M (suffixes K, M, G).",
                          o->sizes, MAX_SIZES);
    if (o->nsizes < 0)
        return 2;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] < 2 * o->stride || footprint(o->sizes[i], o->stride) > BOARD_MEM_AREA_BYTES ||
            o->sizes[i] / o->stride > UINT32_MAX)
            return usage("a size does not fit", NULL, "each size must hold two --stride slots, and it and "
                         "4 bytes a slot the image's memory area (BOARD_MEM_AREA_BYTES).");
    return 0;
}

static void print_meta(int argc, char **argv, const struct lat_opts *o)
{
    struct jw w = {0};
    record_meta_begin(&w, SUB, argc, argv);
    mem_params_begin(&w, o->sizes, o->nsizes);
    jw_uint(&w, "stride_bytes", o->stride);
    jw_str(&w, "mode", o->modes == MODE_SEQ ? "seq" : o->modes == MODE_RANDOM ? "random" : "both");
    jw_uint(&w, "seed", o->seed);
    jw_uint(&w, "samples", o->samples);
    jw_int(&w, "loads_per_op", CHASE_UNROLL);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

/* Loads until the walk is back at its first slot (at most n + 1). */
static uint64_t lap_length(void *first, uint64_t n)
{
    void **q = first;
    uint64_t loads = 0;
    do {
        q = (void **)*q;
        loads++;
    } while ((void *)q != first && loads <= n);
    return loads;
}

static void measure(const struct lat_opts *o, bool random, uint64_t size, uint64_t *next_tick)
{
    uint32_t n = (uint32_t)(size / o->stride);
    struct mem_chain_layout l = {.step = (size_t)o->stride, .skew = 0, .wrap = 1};
    uint64_t seed = o->seed ^ (size * 0x9e3779b97f4a7c15ull);   /* each size its own permutation */
    void *first = mem_chain_link(mem_area, n, &l, random, seed, (uint32_t *)(void *)(mem_area + size));
    uint64_t lap = lap_length(first, n);
    uint64_t blocks = ((n > MIN_LOADS ? n : MIN_LOADS) + CHASE_UNROLL - 1) / CHASE_UNROLL;
    uint64_t loads = blocks * CHASE_UNROLL;
    void *cursor = mem_chase(first, blocks);   /* warm: as much as one sample */
    uint64_t ticks[MEM_SAMPLES_MAX], sum = 0, lo = UINT64_MAX, hi = 0;
    for (uint64_t s = 0; s < o->samples; s++) {
        uint64_t t0 = counter_now();
        cursor = mem_chase(cursor, blocks);
        ticks[s] = counter_now() - t0;
        sum += ticks[s];
        lo = ticks[s] < lo ? ticks[s] : lo;
        hi = ticks[s] > hi ? ticks[s] : hi;
        record_tick_due(next_tick);
    }
    uint64_t median = median_u64(ticks, (int)o->samples);
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "mode", random ? "random" : "seq");
    jw_uint(&w, "size_bytes", size);
    jw_uint(&w, "stride_bytes", o->stride);
    jw_uint(&w, "slots", n);
    jw_uint(&w, "lap_slots", lap);
    jw_uint(&w, "loads_per_sample", loads);
    jw_double(&w, "ns_per_access", (double)ticks_to_ns(median) / (double)loads);
    jw_double(&w, "mean_ns", (double)ticks_to_ns(sum / o->samples) / (double)loads);
    jw_double(&w, "min_ns", (double)ticks_to_ns(lo) / (double)loads);
    jw_double(&w, "max_ns", (double)ticks_to_ns(hi) / (double)loads);
    jw_uint(&w, "samples", o->samples);
    /* Where the chase ended: it depends on every load, so none can be skipped. */
    jw_uint(&w, "end_slot", (uint64_t)((char *)cursor - mem_area) / o->stride);
    jw_emit(&w);
    jw_free(&w);
}

int memlat_command(int argc, char **argv)
{
    struct lat_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    print_meta(argc, argv, &o);
    uint64_t start = counter_now(), next_tick = clock_ns() + 1000000000ull;
    for (unsigned m = MODE_SEQ; m <= MODE_RANDOM; m <<= 1)
        if (o.modes & m)
            for (int i = 0; i < o.nsizes && !stop_requested(); i++)
                measure(&o, m == MODE_RANDOM, o.sizes[i], &next_tick);
    record_end_stopped(ticks_to_ns(counter_now() - start), stop_requested());
    return 0;
}
