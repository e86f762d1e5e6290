/*
 * The measuring loops of the memory subcommands, shared by the Linux probe
 * (mem-lat, mem-bw, mem-alloc) and the bare-metal image: the seeded
 * generator that shuffles their orders, pointer-chase chains and the chase,
 * and the bandwidth kernels. No allocation: the callers own every buffer.
 */
#ifndef RTVB_MEMLOOPS_H
#define RTVB_MEMLOOPS_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: small, fast, good enough to shuffle a chain; seeded so a run
 * is reproducible. */
struct mem_rng { uint64_t s; };
static inline uint64_t mem_rng_next(struct mem_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* In [0, bound), bound > 0, by multiply-shift of 32 random bits: a bias of
 * at most bound / 2^32 between values, immaterial for shuffling a chain. */
static inline uint32_t mem_rng_below(struct mem_rng *r, uint32_t bound)
{
    return (uint32_t)(((mem_rng_next(r) >> 32) * (uint64_t)bound) >> 32);
}

/* Pointer-chase chains. Slot i of a chain lives at
 *     base + i * step + (i % wrap) * skew
 * and holds the address of the next slot. Sequential chains go
 * 0 -> 1 -> ... -> n-1 -> 0; random ones follow a random cyclic permutation
 * (Sattolo's algorithm), so they visit every slot once per lap and the
 * order defeats stride prefetchers. */
struct mem_chain_layout {
    size_t step;
    size_t skew;
    uint32_t wrap;      /* >= 1 */
};
/* Builds the chain and returns its first slot; a random chain of n slots
 * needs n words of `scratch` (unused for a sequential one). */
void *mem_chain_link(char *base, uint32_t n, const struct mem_chain_layout *l, int random, uint64_t seed,
                     uint32_t *scratch);

/* One timed operation of a chase is CHASE_UNROLL dependent loads. */
#define CHASE_UNROLL 32
/* Follow the chain for blocks * CHASE_UNROLL loads; returns where it ended,
 * so the next call continues (and the loads cannot be optimised away). */
void *mem_chase(void *p, uint64_t blocks);

/* The bandwidth kernels. Each is one pass over `words` 64-bit words (a
 * multiple of 8: whole 64-byte lines), eight per iteration; the compiler
 * may vectorise them, which is what plain C code gets on the target. */
#define MEM_LINE_WORDS 8   /* 64-bit words per 64-byte line, the unit of the random order */
uint64_t mem_k_read(const uint64_t *p, size_t words);
void mem_k_write(uint64_t *p, size_t words, uint64_t v);
void mem_k_rmw(uint64_t *p, size_t words, uint64_t v);
void mem_k_copyloop(uint64_t *restrict d, const uint64_t *restrict s, size_t words);
/* The random-order kernels: the lines in the order of `order`, each line
 * whole. rand_read sums as mem_k_read does, word j of a line into the same
 * sum as mem_k_read's word j, so a pass that visits every line once gives
 * mem_k_read's result exactly. */
uint64_t mem_k_rand_read(const uint64_t *p, const uint32_t *order, size_t lines);
void mem_k_rand_write(uint64_t *p, const uint32_t *order, size_t lines, uint64_t v);
/* The random visiting order of a buffer of `lines` lines: the indices
 * shuffled (Fisher-Yates) by a generator seeded with `seed`. */
void mem_line_order(uint32_t *order, size_t lines, uint64_t seed);

#endif
