/*
 * work: self-verifying CPU workload kernels (`rtvb-probe work`).
 *
 * Every kernel is written for rtvbench from the textbook description of its
 * algorithm; none is copied from MiBench, Dhrystone, Whetstone, Linpack or
 * any other project. docs/probe/work.md documents each kernel's input, what
 * one "op" is and how its output is verified.
 *
 * A kernel runs at two sizes. Its input is generated from a seed by the
 * splitmix64 generator below, so the host tests can regenerate it in Python.
 * Its output is reduced to a 64-bit checksum that must equal the built-in
 * value for the default seed on every architecture: kernels compute with
 * integers, or with floating-point values that only reach the checksum
 * through rounding or comparisons far from their decision boundaries (see
 * docs/probe/work.md, "Floating point across architectures").
 *
 * Life of one (kernel, size):
 *   prepare  untimed: build the input, run known-answer self-tests
 *   run      timed, --repetitions times: one full execution on the input
 *   check    untimed, after every run: self-checks and the checksum
 *   release  free everything
 */
#ifndef RTVB_WORK_H
#define RTVB_WORK_H

#include <stddef.h>
#include <stdint.h>

enum { WORK_SMALL = 0, WORK_LARGE = 1, WORK_NSIZES = 2 };

/* The built-in checksums hold for this seed. */
#define WORK_DEFAULT_SEED 1

/* ---- splitmix64 (Steele, Lea, Flood 2014) ----
 * state += 0x9e3779b97f4a7c15; z = state;
 * z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
 * z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
 * return z ^ (z >> 31);            all modulo 2^64
 * Every kernel starts its own generator with state = seed. */
struct work_rng {
    uint64_t s;
};

static inline void work_rng_init(struct work_rng *r, uint64_t seed)
{
    r->s = seed;
}

static inline uint64_t work_rng_next(struct work_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* next() % n: one draw, with a bias below n / 2^64 (irrelevant here). */
static inline uint64_t work_rng_below(struct work_rng *r, uint64_t n)
{
    return work_rng_next(r) % n;
}

/* Uniform in [0, 1): the top 53 bits of one draw, times 2^-53 (exact). */
static inline double work_rng_unit(struct work_rng *r)
{
    return (double)(work_rng_next(r) >> 11) * 0x1p-53;
}

/* Fill n bytes: each draw gives 8 bytes, least significant first; the
 * last draw's unused high bytes are discarded. */
void work_rng_bytes(struct work_rng *r, uint8_t *p, size_t n);

/* ---- FNV-1a 64 (Fowler, Noll, Vo): the checksum of every kernel ----
 * h = 0xcbf29ce484222325; for each byte b: h = (h ^ b) * 0x100000001b3.
 * Integers are fed as 8 bytes, little-endian, two's complement. */
#define WORK_FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t work_fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static inline uint64_t work_fnv_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    return h;
}

/* ---- One kernel at one size ---- */
#define WORK_MAX_INPUT 6
#define WORK_MAX_DETAIL 6

struct work_ctx {
    int size;                  /* WORK_SMALL or WORK_LARGE */
    uint64_t seed;
    void *state;               /* the kernel's own */
    uint64_t ops;              /* ops per run, set by prepare */
    /* Parameters that, with the seed, define the input (result "input"). */
    struct { const char *key; uint64_t value; } input[WORK_MAX_INPUT];
    int ninput;
    /* Figures of the self-checks, from the last check (result "detail"). */
    struct { const char *key; double value; } detail[WORK_MAX_DETAIL];
    int ndetail;
    char output[160];          /* optional full output, e.g. a digest in hex */
    char error[256];           /* why a self-check failed */
};

void work_input(struct work_ctx *c, const char *key, uint64_t value);
/* Set (or overwrite) a detail figure. */
void work_detail(struct work_ctx *c, const char *key, double value);
/* Record a self-check failure (first one wins); returns -1. */
int work_fail(struct work_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* malloc + memset 0 (so the pages are touched before timing); on failure
 * records "out of memory" in c and returns NULL. */
void *work_alloc(struct work_ctx *c, size_t bytes);

/* sin and cos of 2*pi*k/n for 0 <= k < n, n a multiple of 8, with only
 * +, -, *, / (no libm): the results are bit-identical on every IEEE-754
 * architecture, unlike libm's, which may differ in the last bit. */
void work_sincos_turn(uint64_t k, uint64_t n, double *s, double *c);

struct work_kernel {
    const char *name;
    const char *description;
    const char *op;            /* what one op is: "byte", "flop", ... */
    const char *rate_key;      /* extra rate field (e.g. "bps"), or NULL */
    double rate_scale;         /* rate_key = ops_per_s * rate_scale */
    uint64_t expected[WORK_NSIZES];   /* checksums for WORK_DEFAULT_SEED */
    int (*prepare)(struct work_ctx *c);
    void (*run)(struct work_ctx *c);
    int (*check)(struct work_ctx *c, uint64_t *checksum);
    void (*release)(struct work_ctx *c);
};

extern const struct work_kernel work_basicmath, work_bitcount, work_qsort, work_dijkstra,
    work_patricia, work_strsearch, work_sha256, work_crc32, work_fft, work_adpcm,
    work_blowfish, work_aes128, work_aes256, work_smooth, work_edges, work_matmul_naive,
    work_matmul_blocked, work_intmix, work_fpmix, work_lu;

#endif
