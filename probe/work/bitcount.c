/*
 * bitcount: population count of 32-bit words by four methods, which must
 * agree: a naive loop over the bits, Kernighan's (x &= x - 1 clears the
 * lowest set bit), an 8-bit lookup table, and SWAR (sums of bit fields in
 * parallel inside the word). An empty asm in the loops keeps the compiler
 * from recognising the idiom and replacing the loop by a popcount.
 *
 * Input: N words; draw v, w = low 32 bits of v, then by v's top two bits:
 * 0 -> w & (v >> 32) (sparse), 1 -> w | (v >> 32) (dense), else w.
 * Checksum: FNV of the total count and of sum(i * popcount(w_i)) mod 2^64.
 */
#include "work.h"

#include <stdlib.h>

static const size_t sizes[WORK_NSIZES] = {4096, 4 << 20};

struct bc_state {
    size_t n;
    uint32_t *w;
    uint8_t table[256];
    uint64_t total[4];
};

static uint64_t count_naive(const uint32_t *w, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t x = w[i]; x; x >>= 1) {
            __asm__("" : "+r"(x));
            t += x & 1;
        }
    return t;
}

static uint64_t count_kernighan(const uint32_t *w, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t x = w[i]; x; x &= x - 1) {
            __asm__("" : "+r"(x));
            t++;
        }
    return t;
}

static uint64_t count_table(const uint8_t *table, const uint32_t *w, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = w[i];
        t += table[x & 0xff] + table[(x >> 8) & 0xff] + table[(x >> 16) & 0xff] + table[x >> 24];
    }
    return t;
}

static inline uint32_t swar(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);                  /* 2-bit sums */
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);  /* 4-bit sums */
    x = (x + (x >> 4)) & 0x0f0f0f0fu;                  /* 8-bit sums */
    return (x * 0x01010101u) >> 24;                    /* sum of the bytes */
}

static uint64_t count_swar(const uint32_t *w, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += swar(w[i]);
    return t;
}

static int bc_prepare(struct work_ctx *c)
{
    struct bc_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->n = sizes[c->size];
    if (!(s->w = work_alloc(c, s->n * sizeof *s->w)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v = work_rng_next(&r);
        uint32_t w = (uint32_t)v, hi = (uint32_t)(v >> 32);
        switch (v >> 62) {
        case 0: w &= hi; break;
        case 1: w |= hi; break;
        default: break;
        }
        s->w[i] = w;
    }
    for (int i = 0; i < 256; i++) {
        int k = 0;
        for (int x = i; x; x >>= 1)
            k += x & 1;
        s->table[i] = (uint8_t)k;
    }
    c->ops = 4 * s->n;
    work_input(c, "words", s->n);
    return 0;
}

static void bc_run(struct work_ctx *c)
{
    struct bc_state *s = c->state;
    s->total[0] = count_naive(s->w, s->n);
    s->total[1] = count_kernighan(s->w, s->n);
    s->total[2] = count_table(s->table, s->w, s->n);
    s->total[3] = count_swar(s->w, s->n);
}

static int bc_check(struct work_ctx *c, uint64_t *checksum)
{
    struct bc_state *s = c->state;
    static const char *names[4] = {"naive", "Kernighan", "table", "SWAR"};
    for (int m = 1; m < 4; m++)
        if (s->total[m] != s->total[0])
            return work_fail(c, "the %s method counted %llu bits, the naive loop %llu", names[m],
                             (unsigned long long)s->total[m], (unsigned long long)s->total[0]);
    uint64_t weighted = 0;
    for (size_t i = 0; i < s->n; i++)
        weighted += (uint64_t)i * swar(s->w[i]);
    work_detail(c, "bits_set", (double)s->total[0]);
    *checksum = work_fnv_u64(work_fnv_u64(WORK_FNV_INIT, s->total[0]), weighted);
    return 0;
}

static void bc_release(struct work_ctx *c)
{
    struct bc_state *s = c->state;
    if (s)
        free(s->w);
    free(s);
}

const struct work_kernel work_bitcount = {
    .name = "bitcount",
    .description = "population count of seeded words by 4 methods (naive, Kernighan, table, SWAR) that must agree",
    .op = "word-count",
    .expected = {0xdf156d4d2face281ull, 0x64b92ecbf4cc4b6eull},
    .prepare = bc_prepare,
    .run = bc_run,
    .check = bc_check,
    .release = bc_release,
};
