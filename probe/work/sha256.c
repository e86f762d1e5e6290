/*
 * sha256: SHA-256 as specified in FIPS 180-4, written from the standard.
 * The round constants and the initial hash value are computed at start-up
 * from their definition (the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes, and of the square roots of the first
 * 8 primes); the known-answer tests below would catch any wrong bit.
 *
 * Input: B bytes from the generator; the message is those B bytes repeated
 * R times. Checksum: the first 8 bytes of the digest, big-endian; the whole
 * digest is reported as "output".
 * Self-tests: the FIPS 180-2 / NIST example messages.
 */
#include "work.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { size_t bytes, passes; } sizes[WORK_NSIZES] = {
    {4096, 4}, {1 << 20, 32},
};

static uint32_t K[64], H0[8];

struct sha {
    uint32_t h[8];
    uint8_t block[64];
    size_t fill;
    uint64_t total;
};

static int is_prime(unsigned n)
{
    for (unsigned d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return n >= 2;
}

static uint32_t frac32(double x)
{
    return (uint32_t)((x - floor(x)) * 4294967296.0);
}

static void make_constants(void)
{
    unsigned p = 2;
    for (int i = 0; i < 64; i++, p++) {
        while (!is_prime(p))
            p++;
        if (i < 8)
            H0[i] = frac32(sqrt((double)p));
        K[i] = frac32(cbrt((double)p));
    }
}

static inline uint32_t ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t *h, const uint8_t *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void sha_init(struct sha *s)
{
    memcpy(s->h, H0, sizeof s->h);
    s->fill = 0;
    s->total = 0;
}

static void sha_update(struct sha *s, const uint8_t *p, size_t n)
{
    s->total += n;
    if (s->fill) {
        size_t k = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, k);
        s->fill += k;
        p += k;
        n -= k;
        if (s->fill < 64)
            return;
        compress(s->h, s->block);
        s->fill = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        compress(s->h, p);
    memcpy(s->block, p, n);
    s->fill = n;
}

static void sha_final(struct sha *s, uint8_t *digest)
{
    uint64_t bits = s->total * 8;
    s->block[s->fill++] = 0x80;
    if (s->fill > 56) {
        memset(s->block + s->fill, 0, 64 - s->fill);
        compress(s->h, s->block);
        s->fill = 0;
    }
    memset(s->block + s->fill, 0, 56 - s->fill);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress(s->h, s->block);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++)
            digest[4 * i + k] = (uint8_t)(s->h[i] >> (24 - 8 * k));
}

static void hex(const uint8_t *d, int n, char *out)
{
    for (int i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static int self_test(struct work_ctx *c)
{
    static const struct { const char *msg; size_t repeat; const char *digest; } v[] = {
        {"abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", 1,
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
        {"a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        struct sha s;
        uint8_t d[32];
        char got[65];
        sha_init(&s);
        for (size_t k = 0; k < v[i].repeat; k++)
            sha_update(&s, (const uint8_t *)v[i].msg, strlen(v[i].msg));
        sha_final(&s, d);
        hex(d, 32, got);
        if (strcmp(got, v[i].digest))
            return work_fail(c, "SHA-256 self-test %zu (FIPS 180 example): digest %s, expected %s", i + 1, got,
                             v[i].digest);
    }
    return 0;
}

struct sha_state {
    uint8_t *buf;
    size_t bytes, passes;
    uint8_t digest[32];
};

static int sha_prepare(struct work_ctx *c)
{
    make_constants();
    if (self_test(c))
        return -1;
    struct sha_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->bytes = sizes[c->size].bytes;
    s->passes = sizes[c->size].passes;
    if (!(s->buf = work_alloc(c, s->bytes)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    work_rng_bytes(&r, s->buf, s->bytes);
    c->ops = s->bytes * s->passes;
    work_input(c, "bytes", s->bytes);
    work_input(c, "passes", s->passes);
    return 0;
}

static void sha_run(struct work_ctx *c)
{
    struct sha_state *s = c->state;
    struct sha h;
    sha_init(&h);
    for (size_t p = 0; p < s->passes; p++)
        sha_update(&h, s->buf, s->bytes);
    sha_final(&h, s->digest);
}

static int sha_check(struct work_ctx *c, uint64_t *checksum)
{
    struct sha_state *s = c->state;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | s->digest[i];
    *checksum = v;
    hex(s->digest, 32, c->output);
    return 0;
}

static void sha_release(struct work_ctx *c)
{
    struct sha_state *s = c->state;
    if (s)
        free(s->buf);
    free(s);
}

const struct work_kernel work_sha256 = {
    .name = "sha256",
    .description = "SHA-256 (FIPS 180-4) of a seeded buffer repeated R times",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0x4c6e33a687470c08ull, 0x48c2381ad381be29ull},
    .prepare = sha_prepare,
    .run = sha_run,
    .check = sha_check,
    .release = sha_release,
};
