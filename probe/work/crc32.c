/*
 * crc32: CRC-32 (IEEE 802.3, the zlib/PNG/Ethernet CRC): reflected
 * polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF, one
 * table lookup per byte (the table is computed from the polynomial).
 *
 * Input: B bytes from the generator; the message is those B bytes repeated
 * R times (so a large message needs little memory). Checksum: the CRC.
 * Self-test: CRC("123456789") = 0xCBF43926, the catalogued check value.
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

static const struct { size_t bytes, passes; } sizes[WORK_NSIZES] = {
    {4096, 4}, {1 << 20, 64},
};

struct crc_state {
    uint32_t table[256];
    uint8_t *buf;
    size_t bytes, passes;
    uint32_t crc;
};

static void make_table(uint32_t *t)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        t[i] = c;
    }
}

/* Running CRC without the final XOR: start at 0xFFFFFFFF. */
static uint32_t crc_update(const uint32_t *t, uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static int crc_prepare(struct work_ctx *c)
{
    struct crc_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    make_table(s->table);
    const char *check = "123456789";
    uint32_t v = crc_update(s->table, 0xFFFFFFFFu, (const uint8_t *)check, strlen(check)) ^ 0xFFFFFFFFu;
    if (v != 0xCBF43926u)
        return work_fail(c, "CRC-32 self-test: CRC(\"123456789\") = 0x%08X, not 0xCBF43926", (unsigned)v);
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

static void crc_run(struct work_ctx *c)
{
    struct crc_state *s = c->state;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t p = 0; p < s->passes; p++)
        crc = crc_update(s->table, crc, s->buf, s->bytes);
    s->crc = crc ^ 0xFFFFFFFFu;
}

static int crc_check(struct work_ctx *c, uint64_t *checksum)
{
    struct crc_state *s = c->state;
    *checksum = s->crc;
    return 0;
}

static void crc_release(struct work_ctx *c)
{
    struct crc_state *s = c->state;
    if (s)
        free(s->buf);
    free(s);
}

const struct work_kernel work_crc32 = {
    .name = "crc32",
    .description = "CRC-32 (IEEE, table-driven) of a seeded buffer repeated R times",
    .op = "byte",
    .rate_key = "bps",
    .rate_scale = 1.0,
    .expected = {0x000000007420b47bull, 0x00000000b9f311e2ull},
    .prepare = crc_prepare,
    .run = crc_run,
    .check = crc_check,
    .release = crc_release,
};
