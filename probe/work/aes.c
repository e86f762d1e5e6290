/*
 * aes128, aes256: AES (FIPS-197) with 128- and 256-bit keys, written from
 * the standard. The S-box is computed at first use from its definition
 * (multiplicative inverse in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1, then
 * the affine map), and so are the four 32-bit round tables that fold
 * SubBytes, ShiftRows and MixColumns into lookups (and their inverses, for
 * the "equivalent inverse cipher" of FIPS-197 section 5.3.5).
 *
 * Input: a 16- or 32-byte key, a 16-byte IV, then B bytes (work_rng_bytes,
 * in that order). A run expands the key, then R times CBC-encrypts the B
 * bytes (the chain continues from pass to pass: the message is the B bytes
 * repeated R times) and CBC-decrypts the ciphertext.
 * Self-tests: the FIPS-197 appendix B and C.1 / C.3 examples, both ways.
 * Checks: the last pass decrypts to the input.
 * Checksum: FNV of the last B bytes of ciphertext.
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

static const struct { size_t bytes, passes; } sizes[WORK_NSIZES] = {
    {4096, 2}, {256 << 10, 48},
};

static uint8_t sbox[256], inv_sbox[256];
static uint32_t te[4][256], td[4][256];
static int tables_ready;

static uint8_t xtime(uint8_t a)
{
    return (uint8_t)(a << 1 ^ (a & 0x80 ? 0x1b : 0));
}

static uint8_t gmul(uint8_t a, uint8_t b)
{
    uint8_t p = 0;
    for (; b; b >>= 1, a = xtime(a))
        if (b & 1)
            p ^= a;
    return p;
}

static inline uint32_t ror32(uint32_t x, int n)
{
    return x >> n | x << ((32 - n) & 31);
}

static void make_tables(void)
{
    for (int x = 0; x < 256; x++) {
        uint8_t inv = 0;   /* inverse of 0 is taken as 0 */
        for (int y = 1; y < 256 && x; y++)
            if (gmul((uint8_t)x, (uint8_t)y) == 1) {
                inv = (uint8_t)y;
                break;
            }
        uint8_t s = inv;
        for (int k = 1; k <= 4; k++)
            s ^= (uint8_t)(inv << k | inv >> (8 - k));
        s ^= 0x63;
        sbox[x] = s;
        inv_sbox[s] = (uint8_t)x;
    }
    for (int x = 0; x < 256; x++) {
        uint8_t s = sbox[x], i = inv_sbox[x];
        /* a column word holds rows 0..3 from the most significant byte */
        uint32_t e = (uint32_t)gmul(s, 2) << 24 | (uint32_t)s << 16 | (uint32_t)s << 8 | gmul(s, 3);
        uint32_t d = (uint32_t)gmul(i, 14) << 24 | (uint32_t)gmul(i, 9) << 16 | (uint32_t)gmul(i, 13) << 8 |
                     gmul(i, 11);
        for (int r = 0; r < 4; r++) {
            te[r][x] = ror32(e, 8 * r);
            td[r][x] = ror32(d, 8 * r);
        }
    }
    tables_ready = 1;
}

struct aes_key {
    int rounds;
    uint32_t ek[60], dk[60];
};

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

static uint32_t sub_word(uint32_t w)
{
    return (uint32_t)sbox[w >> 24] << 24 | (uint32_t)sbox[(w >> 16) & 255] << 16 |
           (uint32_t)sbox[(w >> 8) & 255] << 8 | sbox[w & 255];
}

static void expand_key(struct aes_key *k, const uint8_t *key, int nk)
{
    int nr = k->rounds = nk + 6, total = 4 * (nr + 1);
    uint8_t rcon = 1;
    for (int i = 0; i < nk; i++)
        k->ek[i] = be32(key + 4 * i);
    for (int i = nk; i < total; i++) {
        uint32_t t = k->ek[i - 1];
        if (i % nk == 0) {
            t = sub_word(t << 8 | t >> 24) ^ (uint32_t)rcon << 24;
            rcon = xtime(rcon);
        } else if (nk > 6 && i % nk == 4) {
            t = sub_word(t);
        }
        k->ek[i] = k->ek[i - nk] ^ t;
    }
    /* equivalent inverse cipher: round keys in reverse order, InvMixColumns
     * applied to all but the first and the last */
    for (int r = 0; r <= nr; r++)
        for (int j = 0; j < 4; j++) {
            uint32_t w = k->ek[4 * (nr - r) + j];
            if (r > 0 && r < nr)
                w = td[0][sbox[w >> 24]] ^ td[1][sbox[(w >> 16) & 255]] ^ td[2][sbox[(w >> 8) & 255]] ^
                    td[3][sbox[w & 255]];
            k->dk[4 * r + j] = w;
        }
}

static void encrypt_block(const struct aes_key *k, const uint8_t *in, uint8_t *out)
{
    const uint32_t *rk = k->ek;
    uint32_t s0 = be32(in) ^ rk[0], s1 = be32(in + 4) ^ rk[1], s2 = be32(in + 8) ^ rk[2], s3 = be32(in + 12) ^ rk[3];
    for (int r = 1; r < k->rounds; r++) {
        rk += 4;
        uint32_t t0 = te[0][s0 >> 24] ^ te[1][(s1 >> 16) & 255] ^ te[2][(s2 >> 8) & 255] ^ te[3][s3 & 255] ^ rk[0];
        uint32_t t1 = te[0][s1 >> 24] ^ te[1][(s2 >> 16) & 255] ^ te[2][(s3 >> 8) & 255] ^ te[3][s0 & 255] ^ rk[1];
        uint32_t t2 = te[0][s2 >> 24] ^ te[1][(s3 >> 16) & 255] ^ te[2][(s0 >> 8) & 255] ^ te[3][s1 & 255] ^ rk[2];
        uint32_t t3 = te[0][s3 >> 24] ^ te[1][(s0 >> 16) & 255] ^ te[2][(s1 >> 8) & 255] ^ te[3][s2 & 255] ^ rk[3];
        s0 = t0;
        s1 = t1;
        s2 = t2;
        s3 = t3;
    }
    rk += 4;
#define LAST(a, b, c, d) \
    ((uint32_t)sbox[(a) >> 24] << 24 | (uint32_t)sbox[((b) >> 16) & 255] << 16 | \
     (uint32_t)sbox[((c) >> 8) & 255] << 8 | sbox[(d) & 255])
    put_be32(out, LAST(s0, s1, s2, s3) ^ rk[0]);
    put_be32(out + 4, LAST(s1, s2, s3, s0) ^ rk[1]);
    put_be32(out + 8, LAST(s2, s3, s0, s1) ^ rk[2]);
    put_be32(out + 12, LAST(s3, s0, s1, s2) ^ rk[3]);
#undef LAST
}

static void decrypt_block(const struct aes_key *k, const uint8_t *in, uint8_t *out)
{
    const uint32_t *rk = k->dk;
    uint32_t s0 = be32(in) ^ rk[0], s1 = be32(in + 4) ^ rk[1], s2 = be32(in + 8) ^ rk[2], s3 = be32(in + 12) ^ rk[3];
    for (int r = 1; r < k->rounds; r++) {
        rk += 4;
        uint32_t t0 = td[0][s0 >> 24] ^ td[1][(s3 >> 16) & 255] ^ td[2][(s2 >> 8) & 255] ^ td[3][s1 & 255] ^ rk[0];
        uint32_t t1 = td[0][s1 >> 24] ^ td[1][(s0 >> 16) & 255] ^ td[2][(s3 >> 8) & 255] ^ td[3][s2 & 255] ^ rk[1];
        uint32_t t2 = td[0][s2 >> 24] ^ td[1][(s1 >> 16) & 255] ^ td[2][(s0 >> 8) & 255] ^ td[3][s3 & 255] ^ rk[2];
        uint32_t t3 = td[0][s3 >> 24] ^ td[1][(s2 >> 16) & 255] ^ td[2][(s1 >> 8) & 255] ^ td[3][s0 & 255] ^ rk[3];
        s0 = t0;
        s1 = t1;
        s2 = t2;
        s3 = t3;
    }
    rk += 4;
#define LAST(a, b, c, d) \
    ((uint32_t)inv_sbox[(a) >> 24] << 24 | (uint32_t)inv_sbox[((b) >> 16) & 255] << 16 | \
     (uint32_t)inv_sbox[((c) >> 8) & 255] << 8 | inv_sbox[(d) & 255])
    put_be32(out, LAST(s0, s3, s2, s1) ^ rk[0]);
    put_be32(out + 4, LAST(s1, s0, s3, s2) ^ rk[1]);
    put_be32(out + 8, LAST(s2, s1, s0, s3) ^ rk[2]);
    put_be32(out + 12, LAST(s3, s2, s1, s0) ^ rk[3]);
#undef LAST
}

static void unhex(const char *s, uint8_t *out)
{
    for (size_t i = 0; s[2 * i]; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = s[2 * i + k];
            v = v << 4 | (ch <= '9' ? ch - '0' : ch - 'a' + 10);
        }
        out[i] = (uint8_t)v;
    }
}

static int self_test(struct work_ctx *c)
{
    static const struct { const char *key, *pt, *ct; } v[] = {
        {"2b7e151628aed2a6abf7158809cf4f3c", "3243f6a8885a308d313198a2e0370734", "3925841d02dc09fbdc118597196a0b32"},
        {"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a"},
        {"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "00112233445566778899aabbccddeeff",
         "8ea2b7ca516745bfeafc49904b496089"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        uint8_t key[32], pt[16], ct[16], out[16], back[16];
        struct aes_key k;
        int nk = (int)strlen(v[i].key) / 8;
        unhex(v[i].key, key);
        unhex(v[i].pt, pt);
        unhex(v[i].ct, ct);
        expand_key(&k, key, nk);
        encrypt_block(&k, pt, out);
        decrypt_block(&k, ct, back);
        if (memcmp(out, ct, 16) || memcmp(back, pt, 16))
            return work_fail(c, "AES-%d self-test %zu (FIPS-197 appendix example) failed", 32 * nk, i + 1);
    }
    return 0;
}

struct aes_state {
    size_t bytes, passes;
    int key_bytes;
    uint8_t key[32], iv[16];
    uint8_t *buf, *ct, *pt;
    struct aes_key k;
};

static int aes_prepare(struct work_ctx *c, int key_bytes)
{
    if (!tables_ready)
        make_tables();
    if (self_test(c))
        return -1;
    struct aes_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->key_bytes = key_bytes;
    s->bytes = sizes[c->size].bytes;
    s->passes = sizes[c->size].passes;
    if (!(s->buf = work_alloc(c, s->bytes)) || !(s->ct = work_alloc(c, s->bytes)) ||
        !(s->pt = work_alloc(c, s->bytes)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    work_rng_bytes(&r, s->key, (size_t)key_bytes);
    work_rng_bytes(&r, s->iv, sizeof s->iv);
    work_rng_bytes(&r, s->buf, s->bytes);
    c->ops = 2 * s->bytes * s->passes;
    work_input(c, "bytes", s->bytes);
    work_input(c, "passes", s->passes);
    work_input(c, "key_bytes", (uint64_t)key_bytes);
    return 0;
}

static int aes128_prepare(struct work_ctx *c)
{
    return aes_prepare(c, 16);
}

static int aes256_prepare(struct work_ctx *c)
{
    return aes_prepare(c, 32);
}

static void aes_run(struct work_ctx *c)
{
    struct aes_state *s = c->state;
    uint8_t echain[16], dchain[16], blk[16];
    expand_key(&s->k, s->key, s->key_bytes / 4);
    memcpy(echain, s->iv, 16);
    memcpy(dchain, s->iv, 16);
    for (size_t p = 0; p < s->passes; p++) {
        for (size_t i = 0; i < s->bytes; i += 16) {
            for (int b = 0; b < 16; b++)
                blk[b] = s->buf[i + b] ^ echain[b];
            encrypt_block(&s->k, blk, echain);
            memcpy(s->ct + i, echain, 16);
        }
        for (size_t i = 0; i < s->bytes; i += 16) {
            decrypt_block(&s->k, s->ct + i, blk);
            for (int b = 0; b < 16; b++)
                s->pt[i + b] = blk[b] ^ dchain[b];
            memcpy(dchain, s->ct + i, 16);
        }
    }
}

static int aes_check(struct work_ctx *c, uint64_t *checksum)
{
    struct aes_state *s = c->state;
    if (memcmp(s->pt, s->buf, s->bytes))
        return work_fail(c, "CBC decryption does not give the plaintext back");
    *checksum = work_fnv_bytes(WORK_FNV_INIT, s->ct, s->bytes);
    return 0;
}

static void aes_release(struct work_ctx *c)
{
    struct aes_state *s = c->state;
    if (s) {
        free(s->buf);
        free(s->ct);
        free(s->pt);
    }
    free(s);
}

const struct work_kernel work_aes128 = {
    .name = "aes128",
    .description = "AES-128 (FIPS-197) key expansion, CBC encrypt and decrypt of a seeded buffer",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0x3569762a5d5acd48ull, 0x0faf668597705d30ull},
    .prepare = aes128_prepare,
    .run = aes_run,
    .check = aes_check,
    .release = aes_release,
};

const struct work_kernel work_aes256 = {
    .name = "aes256",
    .description = "AES-256 (FIPS-197) key expansion, CBC encrypt and decrypt of a seeded buffer",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0xec5b1e77df3d45fcull, 0x68ad6729fefc224cull},
    .prepare = aes256_prepare,
    .run = aes_run,
    .check = aes_check,
    .release = aes_release,
};
