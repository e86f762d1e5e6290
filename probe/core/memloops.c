#include "memloops.h"

static inline char *slot_addr(char *base, const struct mem_chain_layout *l, uint32_t i)
{
    return base + (size_t)i * l->step + (size_t)(i % l->wrap) * l->skew;
}

void *mem_chain_link(char *base, uint32_t n, const struct mem_chain_layout *l, int random, uint64_t seed,
                     uint32_t *next)
{
    if (!random || n < 2) {
        for (uint32_t i = 0; i < n; i++)
            *(void **)slot_addr(base, l, i) = slot_addr(base, l, i + 1 < n ? i + 1 : 0);
        return base;
    }
    /* Sattolo's shuffle of the identity gives a permutation made of a single
     * cycle: next[i] is the slot visited after slot i. Linking in slot order
     * then writes the buffer sequentially, which is fast even for 256 MiB. */
    struct mem_rng r = {seed};
    for (uint32_t i = 0; i < n; i++)
        next[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = mem_rng_below(&r, i);   /* j < i: never a fixed point */
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    for (uint32_t i = 0; i < n; i++)
        *(void **)slot_addr(base, l, i) = slot_addr(base, l, next[i]);
    return base;
}

#define LOAD1 q = (void **)*q;
#define LOAD4 LOAD1 LOAD1 LOAD1 LOAD1
#define LOAD16 LOAD4 LOAD4 LOAD4 LOAD4

void *mem_chase(void *p, uint64_t blocks)
{
    void **q = p;
    /* CHASE_UNROLL dependent loads per iteration: the counter and branch
     * run in the shadow of the loads and are in any case 1/32 of the work
     * (and subtracted by the harness). */
    while (blocks--) {
        LOAD16 LOAD16
    }
    return q;
}

uint64_t mem_k_read(const uint64_t *p, size_t words)
{
    /* Four independent sums, so the adds are not the bottleneck. */
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < words; i += 8) {
        a += p[i] ^ p[i + 4];
        b += p[i + 1] ^ p[i + 5];
        c += p[i + 2] ^ p[i + 6];
        d += p[i + 3] ^ p[i + 7];
    }
    return a + b + c + d;
}

void mem_k_write(uint64_t *p, size_t words, uint64_t v)
{
    /* v changes every pass, so the loop cannot become a memset. */
    for (size_t i = 0; i < words; i += 8) {
        p[i] = v; p[i + 1] = v; p[i + 2] = v; p[i + 3] = v;
        p[i + 4] = v; p[i + 5] = v; p[i + 6] = v; p[i + 7] = v;
    }
}

void mem_k_rmw(uint64_t *p, size_t words, uint64_t v)
{
    for (size_t i = 0; i < words; i += 8) {
        p[i] += v; p[i + 1] += v; p[i + 2] += v; p[i + 3] += v;
        p[i + 4] += v; p[i + 5] += v; p[i + 6] += v; p[i + 7] += v;
    }
}

void mem_k_copyloop(uint64_t *restrict d, const uint64_t *restrict s, size_t words)
{
    for (size_t i = 0; i < words; i += 8) {
        uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];
        uint64_t f = s[i + 4], g = s[i + 5], h = s[i + 6], k = s[i + 7];
        d[i] = a; d[i + 1] = b; d[i + 2] = c; d[i + 3] = e;
        d[i + 4] = f; d[i + 5] = g; d[i + 6] = h; d[i + 7] = k;
        /* Without this the compiler recognises the loop and calls memcpy. */
        __asm__ volatile("" ::: "memory");
    }
}

/* The line indices are read sequentially (4 bytes per 64-byte line,
 * prefetched, not counted); the lines' loads do not depend on one another,
 * so the processor overlaps as many misses as it can, which is what a
 * random-access bandwidth is. */
uint64_t mem_k_rand_read(const uint64_t *p, const uint32_t *order, size_t lines)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < lines; i++) {
        const uint64_t *q = p + (size_t)order[i] * MEM_LINE_WORDS;
        a += q[0] ^ q[4];
        b += q[1] ^ q[5];
        c += q[2] ^ q[6];
        d += q[3] ^ q[7];
    }
    return a + b + c + d;
}

void mem_k_rand_write(uint64_t *p, const uint32_t *order, size_t lines, uint64_t v)
{
    for (size_t i = 0; i < lines; i++) {
        uint64_t *q = p + (size_t)order[i] * MEM_LINE_WORDS;
        q[0] = v; q[1] = v; q[2] = v; q[3] = v;
        q[4] = v; q[5] = v; q[6] = v; q[7] = v;
    }
}

void mem_line_order(uint32_t *order, size_t lines, uint64_t seed)
{
    for (size_t i = 0; i < lines; i++)
        order[i] = (uint32_t)i;
    struct mem_rng rng = {seed};
    for (size_t i = lines; i > 1; i--) {
        size_t j = mem_rng_below(&rng, (uint32_t)i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}
