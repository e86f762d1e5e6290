/*
 * strsearch: Boyer-Moore-Horspool search of P patterns in a seeded text,
 * counting every occurrence (overlapping ones too) and the first one.
 *
 * Input: a text of T letters from a 16-letter alphabet: letter i is
 * 'a' + nibble (i % 16) of draw (i / 16), least significant nibble first.
 * Then P patterns: length 3 + below(8); below(2) == 0 -> a copy of the text
 * at position below(T - len + 1), else len letters 'a' + below(16).
 * Check: a naive search gives the same counts (every pattern on the small
 * size, the first four on the large one).
 * Checksum: FNV of each pattern's count and first position (2^64 - 1 if none).
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

#define MAXPAT 16

static const struct { size_t text, patterns; } sizes[WORK_NSIZES] = {
    {16384, 16}, {4 << 20, 32},
};

struct ss_state {
    size_t t, np;
    uint8_t *text;
    uint8_t pat[64][MAXPAT];
    size_t len[64];
    uint64_t count[64], first[64];
};

static void bmh(const uint8_t *text, size_t t, const uint8_t *p, size_t m, uint64_t *count, uint64_t *first)
{
    size_t skip[256];
    for (int c = 0; c < 256; c++)
        skip[c] = m;
    for (size_t k = 0; k + 1 < m; k++)
        skip[p[k]] = m - 1 - k;
    uint64_t n = 0, f = UINT64_MAX;
    uint8_t last = p[m - 1];
    for (size_t i = 0; i + m <= t; i += skip[text[i + m - 1]]) {
        if (text[i + m - 1] == last && !memcmp(text + i, p, m - 1)) {
            if (!n)
                f = i;
            n++;
        }
    }
    *count = n;
    *first = f;
}

static void naive(const uint8_t *text, size_t t, const uint8_t *p, size_t m, uint64_t *count, uint64_t *first)
{
    uint64_t n = 0, f = UINT64_MAX;
    for (size_t i = 0; i + m <= t; i++) {
        size_t k = 0;
        while (k < m && text[i + k] == p[k])
            k++;
        if (k == m) {
            if (!n)
                f = i;
            n++;
        }
    }
    *count = n;
    *first = f;
}

static int ss_prepare(struct work_ctx *c)
{
    struct ss_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->t = sizes[c->size].text;
    s->np = sizes[c->size].patterns;
    if (!(s->text = work_alloc(c, s->t)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    uint64_t v = 0;
    for (size_t i = 0; i < s->t; i++) {
        if (i % 16 == 0)
            v = work_rng_next(&r);
        s->text[i] = (uint8_t)('a' + ((v >> (4 * (i % 16))) & 15));
    }
    for (size_t k = 0; k < s->np; k++) {
        size_t m = s->len[k] = 3 + (size_t)work_rng_below(&r, 8);
        if (work_rng_below(&r, 2) == 0) {
            size_t pos = (size_t)work_rng_below(&r, s->t - m + 1);
            memcpy(s->pat[k], s->text + pos, m);
        } else {
            for (size_t i = 0; i < m; i++)
                s->pat[k][i] = (uint8_t)('a' + work_rng_below(&r, 16));
        }
    }
    c->ops = s->t * s->np;
    work_input(c, "text_bytes", s->t);
    work_input(c, "patterns", s->np);
    return 0;
}

static void ss_run(struct work_ctx *c)
{
    struct ss_state *s = c->state;
    for (size_t k = 0; k < s->np; k++)
        bmh(s->text, s->t, s->pat[k], s->len[k], &s->count[k], &s->first[k]);
}

static int ss_check(struct work_ctx *c, uint64_t *checksum)
{
    struct ss_state *s = c->state;
    size_t crosschecked = c->size == WORK_SMALL ? s->np : 4;
    uint64_t h = WORK_FNV_INIT, total = 0;
    for (size_t k = 0; k < s->np; k++) {
        if (k < crosschecked) {
            uint64_t n, f;
            naive(s->text, s->t, s->pat[k], s->len[k], &n, &f);
            if (n != s->count[k] || f != s->first[k])
                return work_fail(c, "pattern %zu '%.*s': Boyer-Moore-Horspool found %llu (first at %lld), the naive "
                                    "search %llu (first at %lld)",
                                 k, (int)s->len[k], (const char *)s->pat[k], (unsigned long long)s->count[k],
                                 (long long)s->first[k], (unsigned long long)n, (long long)f);
        }
        total += s->count[k];
        h = work_fnv_u64(work_fnv_u64(h, s->count[k]), s->first[k]);
    }
    work_detail(c, "matches", (double)total);
    work_detail(c, "patterns_crosschecked", (double)crosschecked);
    *checksum = h;
    return 0;
}

static void ss_release(struct work_ctx *c)
{
    struct ss_state *s = c->state;
    if (s)
        free(s->text);
    free(s);
}

const struct work_kernel work_strsearch = {
    .name = "strsearch",
    .description = "Boyer-Moore-Horspool search of seeded patterns in a seeded text, counting all matches",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0x4927dd6aa9f671e3ull, 0x063d99b0a0a5ab6bull},
    .prepare = ss_prepare,
    .run = ss_run,
    .check = ss_check,
    .release = ss_release,
};
