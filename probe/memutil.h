/*
 * memutil: helpers shared by the memory subcommands (mem-lat, mem-bw,
 * mem-alloc): size lists, a seeded PRNG, buffers with a chosen page kind,
 * pointer-chase chains, CPU pinning, fault counting and a stop flag.
 *
 * Sizes are uint64_t everywhere outside the buffers themselves, so that a
 * 32-bit target (armhf: 32-bit size_t) can state and count 256 MiB buffers
 * and multi-GiB byte totals without overflow.
 */
#ifndef RTVB_MEMUTIL_H
#define RTVB_MEMUTIL_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "memloops.h"

#define MEM_MAX_SIZES 128
#define MEM_MAX_REPS 1000

/* Largest buffer a memory subcommand accepts: 16 GiB on 64-bit targets,
 * 1 GiB on 32-bit ones (a quarter of the address space). */
#define MEM_MAX_BYTES (sizeof(size_t) >= 8 ? (16ull << 30) : (1ull << 30))

/* The options the memory subcommands share, each defined once: entries of
 * their opts.h tables ({MEM_OPT_SEED(&o->seed)}). */
/* The range and count of --sizes are in the entry (min, max, cap), for --describe-options and for
 * mem_parse_size_list() after opts_parse(). */
#define MEM_OPT_SIZES(f, lo, h) OPT_S("sizes", f, "LIST", h), .min = (lo), .max = MEM_MAX_BYTES, .cap = MEM_MAX_SIZES
#define MEM_OPT_HUGEPAGES(f) \
    OPT_E("hugepages", f, mem_hugepage_names, NULL, 3, "page kind of the buffers (default off: base pages)")
#define MEM_OPT_REPETITIONS(f, h) OPT_I("repetitions", f, 1, MEM_MAX_REPS, "N", h)
#define MEM_OPT_SEED(f) \
    OPT_I("seed", f, 0, UINT64_MAX, "N", "seed of the random chain order (default 1)"), \
    .expect = "a non-negative integer"
#define MEM_OPT_CPU(f) \
    OPT_I("cpu", f, 0, CPU_SETSIZE - 1, "N", "CPU to pin to (default: the one the probe starts on)"), \
    .expect = "a CPU number"
#define MEM_OPT_QUICK(f, h) OPT_F("quick", f, 1, h)

struct timing_opts;

/* After the options: --cpu, or the CPU the probe runs on when it is -1,
 * checked against the affinity mask. 0 or EXIT_USAGE after the sentence. */
int mem_resolve_cpu(const char *sub, int *cpu);
/* The harness's settings for a memory figure: 0.5 s per measurement at
 * most (0.2 s with --quick), so a default sweep stays short on a busy
 * machine; the figure is the median sample, which does not need the mean
 * to converge. */
void mem_timing(struct timing_opts *t, int quick);

/* Comma-separated sizes and ranges: "16K,64M" or "512-256M". A range A-B
 * expands to the sweep points (powers of two and 1.5 x powers of two) from
 * A to B, plus A and B themselves. The result is sorted and without
 * duplicates. Returns the count, or -1 on a malformed list or one longer
 * than max_n. */
int mem_parse_size_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int max_n);

/* Page kind of a buffer. */
enum hugepages { HP_OFF, HP_THP, HP_HUGETLB };
extern const char *const mem_hugepage_names[];   /* "off", "thp", "hugetlb" */

struct mem_buf {
    char *p;            /* usable, page-aligned (2 MiB-aligned with HP_THP) */
    size_t len;
    void *map;          /* what to munmap */
    size_t map_len;
    enum hugepages kind;  /* what was actually used (HP_HUGETLB may fall back) */
};

/* Map an anonymous private buffer of `len` bytes:
 *  HP_OFF     base pages only (MADV_NOHUGEPAGE, so results do not depend on
 *             the system's THP setting);
 *  HP_THP     2 MiB aligned and MADV_HUGEPAGE: huge pages if the kernel has them;
 *  HP_HUGETLB MAP_HUGETLB from the reserved pool; when the pool refuses,
 *             returns -2 and the caller decides (warn, fall back to HP_THP).
 * Pages are not touched. Returns 0, -1 (out of memory) or -2 (see above). */
int mem_buf_map(struct mem_buf *b, uint64_t len, enum hugepages want);
void mem_buf_unmap(struct mem_buf *b);
/* Bytes of the buffer backed by huge pages (hugetlb: all of it; THP: from
 * /proc/self/smaps AnonHugePages), -1 when the kernel does not tell. */
int64_t mem_buf_huge_bytes(const struct mem_buf *b);
/* What the kernel offers: THP mode from sysfs ("always", "madvise",
 * "never", NULL if unknown), and the free hugetlb pool in pages. */
const char *mem_thp_mode(char *buf, size_t len);
long mem_hugetlb_free_pages(void);

/* mem_chain_link with a scratch array of its own; NULL if that could not
 * be allocated. */
void *mem_chain_build(char *base, uint32_t n, const struct mem_chain_layout *l, int random, uint64_t seed);

/* timed_fn for the harness; arg is a `void *` holding the current slot. */
void mem_chase_op(void *arg, uint64_t n);

struct timing;

/* time_op() of the shared harness, plus the share of the wall time the
 * thread was actually on a CPU (its CPU time / wall time), returned. A run
 * starved by other tasks (share < MEM_MIN_CPU_SHARE, or fewer samples than
 * min_samples because the time limit ran out) is run once more and the
 * better-fed attempt kept: the harness times with the wall clock, so time
 * other tasks spent on this CPU would otherwise count as memory time. */
#define MEM_MIN_CPU_SHARE 0.3
double mem_time_op(void (*fn)(void *, uint64_t), void *arg, const struct timing_opts *o, struct timing *t);

/* Below this CPU share a result is flagged with a `cpu_contention` warning
 * (once per run: *warned is the flag). */
#define MEM_WARN_CPU_SHARE 0.9
void mem_warn_contention(double share, int *warned);

/* Time the chase from *cursor with mem_time_op() and return ns per load
 * (the median sample); *t receives the harness figures, which are per
 * CHASE_UNROLL-load block, and *share the CPU share. */
double mem_chase_time(void **cursor, const struct timing_opts *o, struct timing *t, double *share);

/* Pin the calling thread to one CPU; 0 or an errno value. */
int mem_pin_self(int cpu);
/* Minor page faults of the calling thread so far. */
uint64_t mem_thread_minflt(void);

/* SIGINT / SIGTERM set mem_stop; long sweeps check it between measurements
 * and end with status "interrupted", keeping the results printed so far. */
extern volatile sig_atomic_t mem_stop;
void mem_catch_stop(void);

/* Median of n doubles (sorts a copy; NaN when n is 0). */
double mem_median(const double *v, int n);

#endif
