/*
 * The payload of `network` (docs/probe/network.md, "Payload check").
 *
 * Message seq holds seq in its first 8 bytes, then the 8-byte words
 * w[i] = key(seq) + i * STRIDE (mod 2^64), i counted in words from the
 * message's start, stored little-endian (a last word cut short keeps its
 * low bytes), so that ends of either byte order build the same bytes. The
 * key changes every bit between neighbouring numbers, so a message
 * misplaced, repeated or from another stream differs in nearly every word;
 * STRIDE is odd, so the words of one message all differ and a word moved
 * within it is seen.
 *
 * The check is the receiver's only work per byte besides the kernel's copy
 * into its buffer, which it reads while that is still in the cache: an
 * exact message costs a load, an XOR, an OR and an add per word, in
 * vectors where the machine has them, and no table or second buffer to
 * compare against (rebuilding the message and comparing it with memcmp
 * cost a quarter of a loopback receiver's CPU time). Only a faulty message
 * is walked again, byte by byte, to say where it broke.
 */
#include "netpayload.h"

#include <endian.h>
#include <string.h>

#define STRIDE 0x9e3779b97f4a7c15ull

/* Every bit depends on seq (splitmix64's finaliser). */
static uint64_t payload_key(uint64_t seq)
{
    uint64_t z = seq + STRIDE;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Eight words at a time in four 16-byte vectors, the width of SSE2 and NEON
 * registers (a wider vector type is split and spilled to the stack on
 * them), each with a register of its own: -O2 neither unrolls a loop over
 * an array of vectors nor keeps the array in registers. */
typedef uint64_t words2 __attribute__((vector_size(16)));

#define BLOCK 8
#define LANES(w, k) {(w) + 2 * (k) * STRIDE, (w) + (2 * (k) + 1) * STRIDE}

/* The words of a message from *word on, over `words` words; *word moves on
 * past them. */
static void body_fill(uint8_t *p, size_t words, uint64_t *word)
{
    uint64_t w = *word;
    words2 e0 = LANES(w, 0), e1 = LANES(w, 1), e2 = LANES(w, 2), e3 = LANES(w, 3);
    words2 inc = {BLOCK * STRIDE, BLOCK * STRIDE};
    size_t i = 0;
    for (; i + BLOCK <= words; i += BLOCK) {
        uint8_t *at = p + 8 * i;
        memcpy(at, &e0, 16);
        memcpy(at + 16, &e1, 16);
        memcpy(at + 32, &e2, 16);
        memcpy(at + 48, &e3, 16);
        e0 += inc;
        e1 += inc;
        e2 += inc;
        e3 += inc;
    }
    for (w += i * STRIDE; i < words; i++, w += STRIDE)
        memcpy(p + 8 * i, &w, 8);
    *word = w;
}

/* Non-zero when a word of p differs from what body_fill would have written:
 * one function per vector type (vec), four vectors per block, each with a
 * register of its own. */
#define DEFINE_BODY_FAULTS(name, vec)                                                  \
    static uint64_t name(const uint8_t *p, size_t words, uint64_t *word)               \
    {                                                                                  \
        enum { LANES = sizeof(vec) / 8, STEP = 4 * LANES };                            \
        uint64_t w = *word;                                                            \
        vec e0, e1, e2, e3, inc, bad0, bad1, got0, got1, got2, got3;                   \
        for (int l = 0; l < LANES; l++) {                                              \
            e0[l] = w + (uint64_t)l * STRIDE;                                          \
            e1[l] = e0[l] + LANES * STRIDE;                                            \
            e2[l] = e0[l] + 2 * LANES * STRIDE;                                        \
            e3[l] = e0[l] + 3 * LANES * STRIDE;                                        \
            inc[l] = STEP * STRIDE;                                                    \
            bad0[l] = bad1[l] = 0;                                                     \
        }                                                                              \
        size_t i = 0;                                                                  \
        for (; i + STEP <= words; i += STEP) {                                         \
            const uint8_t *at = p + 8 * i;                                             \
            memcpy(&got0, at, sizeof(vec));                                            \
            memcpy(&got1, at + sizeof(vec), sizeof(vec));                              \
            memcpy(&got2, at + 2 * sizeof(vec), sizeof(vec));                          \
            memcpy(&got3, at + 3 * sizeof(vec), sizeof(vec));                          \
            bad0 |= (got0 ^ e0) | (got1 ^ e1);                                         \
            bad1 |= (got2 ^ e2) | (got3 ^ e3);                                         \
            e0 += inc;                                                                 \
            e1 += inc;                                                                 \
            e2 += inc;                                                                 \
            e3 += inc;                                                                 \
        }                                                                              \
        uint64_t bad = 0;                                                              \
        for (int l = 0; l < LANES; l++)                                                \
            bad |= bad0[l] | bad1[l];                                                  \
        for (w += i * STRIDE; i < words; i++, w += STRIDE) {                           \
            uint64_t one;                                                              \
            memcpy(&one, p + 8 * i, 8);                                                \
            bad |= one ^ w;                                                            \
        }                                                                              \
        *word = w;                                                                     \
        return bad;                                                                    \
    }

DEFINE_BODY_FAULTS(body_faults_16, words2)

#ifdef __x86_64__
/* AVX2 doubles the words per instruction, and the check runs at twice the
 * rate where the CPU has it (x86_64's baseline is SSE2). */
typedef uint64_t words4 __attribute__((vector_size(32)));
__attribute__((target("avx2"))) DEFINE_BODY_FAULTS(body_faults_avx2, words4)
#endif

static uint64_t body_faults(const uint8_t *p, size_t words, uint64_t *word)
{
#ifdef __x86_64__
    if (__builtin_cpu_supports("avx2"))
        return body_faults_avx2(p, words, word);
#endif
    return body_faults_16(p, words, word);
}
#else
static void body_fill(uint8_t *p, size_t words, uint64_t *word)
{
    for (size_t i = 0; i < words; i++, *word += STRIDE) {
        uint64_t v = htole64(*word);
        memcpy(p + 8 * i, &v, 8);
    }
}

static uint64_t body_faults(const uint8_t *p, size_t words, uint64_t *word)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < words; i++, *word += STRIDE) {
        uint64_t got;
        memcpy(&got, p + 8 * i, 8);
        bad |= le64toh(got) ^ *word;
    }
    return bad;
}
#endif

void netpayload_fill(uint8_t *out, size_t size, uint64_t seq)
{
    uint64_t word = payload_key(seq) + STRIDE, v = htole64(seq);
    memcpy(out, &v, NETPAYLOAD_HDR);
    size_t words = (size - NETPAYLOAD_HDR) / 8, tail = NETPAYLOAD_HDR + 8 * words;
    body_fill(out + NETPAYLOAD_HDR, words, &word);
    if (tail < size) {
        v = htole64(word);
        memcpy(out + tail, &v, size - tail);
    }
}

int netpayload_exact(const uint8_t *got, size_t size, uint64_t seq)
{
    uint64_t word = payload_key(seq) + STRIDE, head = htole64(seq);
    if (memcmp(got, &head, NETPAYLOAD_HDR))
        return 0;
    size_t words = (size - NETPAYLOAD_HDR) / 8, tail = NETPAYLOAD_HDR + 8 * words;
    if (body_faults(got + NETPAYLOAD_HDR, words, &word))
        return 0;
    if (tail < size) {
        uint64_t v = htole64(word);
        return memcmp(got + tail, &v, size - tail) == 0;
    }
    return 1;
}

size_t netpayload_first_fault(const uint8_t *got, size_t size, uint64_t seq, unsigned *expected)
{
    uint64_t word = payload_key(seq) + STRIDE;
    uint8_t want[8];
    for (size_t at = 0; at < size; at += 8) {
        uint64_t v = htole64(at ? word : seq);
        if (at)
            word += STRIDE;
        memcpy(want, &v, 8);
        for (size_t b = 0; b < 8 && at + b < size; b++)
            if (got[at + b] != want[b]) {
                *expected = want[b];
                return at + b;
            }
    }
    return size;
}
