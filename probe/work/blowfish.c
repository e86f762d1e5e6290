/*
 * blowfish: Schneier's Blowfish block cipher (1993), written from its
 * description: 16 Feistel rounds, F(x) = ((S0[a] + S1[b]) ^ S2[c]) + S3[d],
 * the P-array and S-boxes initialised with the fractional hexadecimal digits
 * of pi, then keyed by XOR and 521 encryptions.
 *
 * The 1042 words of pi are in pi_words.h (computed for rtvbench, see
 * there); the self-test checks the table's FNV hash and well-known words
 * (P1, P2, P18, S1[0], S4[255]), then the cipher against published vectors.
 *
 * Input: a 16-byte key, an 8-byte IV, then B bytes (work_rng_bytes, in that
 * order). A run sets up the key, then R times CBC-encrypts the B bytes
 * (the chain continues from pass to pass: the message is the B bytes
 * repeated R times) and CBC-decrypts the ciphertext.
 * Checks: the last pass decrypts to the input.
 * Checksum: FNV of the last B bytes of ciphertext (they depend on the whole
 * message through the chaining).
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

#include "pi_words.h"

/* FNV-1a 64 of the table's words, 4 bytes each, little-endian. */
#define PI_WORDS_FNV 0x991fc3bebb47f8a2ull

static const struct { size_t bytes, passes; } sizes[WORK_NSIZES] = {
    {4096, 2}, {256 << 10, 48},
};

/* ---- the cipher ---- */

struct bf_key {
    uint32_t p[18];
    uint32_t s[4][256];
};

static inline uint32_t f(const struct bf_key *k, uint32_t x)
{
    return ((k->s[0][x >> 24] + k->s[1][(x >> 16) & 255]) ^ k->s[2][(x >> 8) & 255]) + k->s[3][x & 255];
}

static inline void bf_encrypt(const struct bf_key *k, uint32_t *l, uint32_t *r)
{
    uint32_t L = *l, R = *r;
    for (int i = 0; i < 16; i += 2) {
        L ^= k->p[i];
        R ^= f(k, L);
        R ^= k->p[i + 1];
        L ^= f(k, R);
    }
    *l = R ^ k->p[17];
    *r = L ^ k->p[16];
}

static inline void bf_decrypt(const struct bf_key *k, uint32_t *l, uint32_t *r)
{
    uint32_t L = *l, R = *r;
    for (int i = 17; i > 1; i -= 2) {
        L ^= k->p[i];
        R ^= f(k, L);
        R ^= k->p[i - 1];
        L ^= f(k, R);
    }
    *l = R ^ k->p[0];
    *r = L ^ k->p[1];
}

static void bf_setkey(struct bf_key *k, const uint8_t *key, size_t len)
{
    memcpy(k->p, pi_words, sizeof k->p);
    memcpy(k->s, pi_words + 18, sizeof k->s);
    size_t j = 0;
    for (int i = 0; i < 18; i++) {
        uint32_t w = 0;
        for (int b = 0; b < 4; b++, j = (j + 1) % len)
            w = w << 8 | key[j];
        k->p[i] ^= w;
    }
    uint32_t l = 0, r = 0;
    for (int i = 0; i < 18; i += 2) {
        bf_encrypt(k, &l, &r);
        k->p[i] = l;
        k->p[i + 1] = r;
    }
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < 256; i += 2) {
            bf_encrypt(k, &l, &r);
            k->s[b][i] = l;
            k->s[b][i + 1] = r;
        }
}

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint64_t hex64(const char *s)
{
    uint64_t v = 0;
    for (; *s; s++)
        v = v << 4 | (uint64_t)(*s <= '9' ? *s - '0' : *s - 'A' + 10);
    return v;
}

static int self_test(struct work_ctx *c)
{
    static const struct { uint32_t index, word; } known[] = {
        {0, 0x243F6A88}, {1, 0x85A308D3}, {17, 0x8979FB1B}, {18, 0xD1310BA6}, {PI_WORDS - 1, 0x3AC372E6},
    };
    uint64_t h = WORK_FNV_INIT;
    for (int i = 0; i < PI_WORDS; i++)
        for (int b = 0; b < 4; b++)
            h = (h ^ ((pi_words[i] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    if (h != PI_WORDS_FNV)
        return work_fail(c, "Blowfish self-test: the pi table's hash is %016llx, expected %016llx",
                         (unsigned long long)h, PI_WORDS_FNV);
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (pi_words[known[i].index] != known[i].word)
            return work_fail(c, "Blowfish self-test: pi word %u is %08X, expected %08X", (unsigned)known[i].index,
                             (unsigned)pi_words[known[i].index], (unsigned)known[i].word);
    /* key, plaintext, ciphertext (Schneier's published ECB vectors) */
    static const char *const v[][3] = {
        {"0000000000000000", "0000000000000000", "4EF997456198DD78"},
        {"FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", "51866FD5B85ECB8A"},
        {"3000000000000000", "1000000000000001", "7D856F9A613063F2"},
        {"1111111111111111", "1111111111111111", "2466DD878B963C9D"},
        {"0123456789ABCDEF", "1111111111111111", "61F9C3802281B096"},
        {"FEDCBA9876543210", "0123456789ABCDEF", "0ACEAB0FC6A0A28D"},
    };
    static struct bf_key k;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        uint64_t key = hex64(v[i][0]), pt = hex64(v[i][1]), ct = hex64(v[i][2]);
        uint8_t kb[8];
        for (int b = 0; b < 8; b++)
            kb[b] = (uint8_t)(key >> (56 - 8 * b));
        bf_setkey(&k, kb, 8);
        uint32_t l = (uint32_t)(pt >> 32), r = (uint32_t)pt;
        bf_encrypt(&k, &l, &r);
        uint64_t got = (uint64_t)l << 32 | r;
        bf_decrypt(&k, &l, &r);
        if (got != ct || ((uint64_t)l << 32 | r) != pt)
            return work_fail(c, "Blowfish self-test %zu: key %s encrypts %s to %016llX, expected %s", i + 1, v[i][0],
                             v[i][1], (unsigned long long)got, v[i][2]);
    }
    return 0;
}

struct bf_state {
    size_t bytes, passes;
    uint8_t key[16], iv[8];
    uint8_t *buf, *ct, *pt;
    struct bf_key k;
};

static int bf_prepare(struct work_ctx *c)
{
    if (self_test(c))
        return -1;
    struct bf_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->bytes = sizes[c->size].bytes;
    s->passes = sizes[c->size].passes;
    if (!(s->buf = work_alloc(c, s->bytes)) || !(s->ct = work_alloc(c, s->bytes)) ||
        !(s->pt = work_alloc(c, s->bytes)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    work_rng_bytes(&r, s->key, sizeof s->key);
    work_rng_bytes(&r, s->iv, sizeof s->iv);
    work_rng_bytes(&r, s->buf, s->bytes);
    c->ops = 2 * s->bytes * s->passes;
    work_input(c, "bytes", s->bytes);
    work_input(c, "passes", s->passes);
    work_input(c, "key_bytes", sizeof s->key);
    return 0;
}

static void bf_run(struct work_ctx *c)
{
    struct bf_state *s = c->state;
    bf_setkey(&s->k, s->key, sizeof s->key);
    uint32_t el = be32(s->iv), er = be32(s->iv + 4), dl = el, dr = er;
    for (size_t p = 0; p < s->passes; p++) {
        for (size_t i = 0; i < s->bytes; i += 8) {
            el ^= be32(s->buf + i);
            er ^= be32(s->buf + i + 4);
            bf_encrypt(&s->k, &el, &er);
            put_be32(s->ct + i, el);
            put_be32(s->ct + i + 4, er);
        }
        for (size_t i = 0; i < s->bytes; i += 8) {
            uint32_t cl = be32(s->ct + i), cr = be32(s->ct + i + 4), l = cl, r = cr;
            bf_decrypt(&s->k, &l, &r);
            put_be32(s->pt + i, l ^ dl);
            put_be32(s->pt + i + 4, r ^ dr);
            dl = cl;
            dr = cr;
        }
    }
}

static int bf_check(struct work_ctx *c, uint64_t *checksum)
{
    struct bf_state *s = c->state;
    if (memcmp(s->pt, s->buf, s->bytes))
        return work_fail(c, "CBC decryption does not give the plaintext back");
    *checksum = work_fnv_bytes(WORK_FNV_INIT, s->ct, s->bytes);
    return 0;
}

static void bf_release(struct work_ctx *c)
{
    struct bf_state *s = c->state;
    if (s) {
        free(s->buf);
        free(s->ct);
        free(s->pt);
    }
    free(s);
}

const struct work_kernel work_blowfish = {
    .name = "blowfish",
    .description = "Blowfish (pi digits computed at start) key setup, CBC encrypt and decrypt of a seeded buffer",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0x3aec9d639a261b83ull, 0x56640a2e98692dfbull},
    .prepare = bf_prepare,
    .run = bf_run,
    .check = bf_check,
    .release = bf_release,
};
