/*
 * intmix: an integer and control-flow mix in the spirit of (but NOT)
 * Dhrystone, designed for rtvbench: each iteration advances a 32-bit LCG
 * (x = 1103515245 x + 12345), takes the next record of a ring of 8, moves it
 * through a small state machine (switch), and by its state copies a string
 * into it, does signed division / remainder / multiplication on its value,
 * compares its name with its neighbour's and swaps them, or updates a 16 x 16
 * grid; small functions are called through non-inlined calls. String copy and
 * compare are our own byte loops, not libc's.
 *
 * Its figure is iterations per second. It is not comparable to Dhrystone
 * results or DMIPS: the operation mix, the strings and the compiler's
 * freedom are all different.
 *
 * Input: x0 = low 32 bits of one draw; then per record kind = below(5),
 * value = below(2001) - 1000, name = table[below(8)].
 * Check: the state stays within its invariants (kinds valid, values
 * bounded, names from the table). Checksum: FNV of the final records
 * (id, kind, value, name bytes), grid and counters.
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

#define NREC 8
#define NAMELEN 40

static const size_t sizes[WORK_NSIZES] = {20000, 6000000};

static const char *const names[8] = {
    "RTVBENCH INTEGER MIX, RECORD ONE",
    "rtvbench integer mix, record two",
    "A THIRD STRING OF THE MIX",
    "fourth string: compared and copied",
    "FIFTH - THE LONGEST STRING OF ALL EIGHT",
    "sixth",
    "SEVENTH STRING, MIDDLE LENGTH",
    "eighth string of the integer mix",
};

enum kind { K_IDLE, K_READY, K_RUN, K_WAIT, K_DONE, K_KINDS };

struct rec {
    struct rec *next;
    uint32_t id;
    enum kind kind;
    int32_t value;
    char name[NAMELEN];
};

struct im_state {
    size_t iters;
    uint32_t x0;
    struct rec init[NREC], rec[NREC];
    uint32_t grid[16][16];
    uint32_t x;
    uint64_t copied, swaps, idle;
};

__attribute__((noinline)) static size_t copy_str(char *dst, const char *src)
{
    size_t n = 0;
    while ((dst[n] = src[n]) != 0)
        n++;
    return n;
}

__attribute__((noinline)) static int cmp_str(const char *a, const char *b)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    while (*p && *p == *q) {
        p++;
        q++;
    }
    return (int)*p - (int)*q;
}

__attribute__((noinline)) static enum kind next_kind(enum kind k, uint32_t x)
{
    switch (k) {
    case K_IDLE: return x & 1 ? K_READY : K_IDLE;
    case K_READY: return x & 2 ? K_RUN : K_WAIT;
    case K_RUN: return x % 3 == 0 ? K_WAIT : K_DONE;
    case K_WAIT: return x & 4 ? K_READY : K_DONE;
    default: return K_IDLE;
    }
}

/* |a| <= 1000, |b| <= 512: every intermediate fits easily in 32 bits. */
__attribute__((noinline)) static int32_t arith(int32_t a, int32_t b, uint32_t x)
{
    int32_t d = b == 0 ? 7 : b;
    int32_t q = a / d, r = a % d;
    int32_t v = (q * 37 + r * 5 - (int32_t)(x & 0xff)) % 2001;
    if (v > 1000)
        v -= 2001;
    else if (v < -1000)
        v += 2001;
    return v;
}

static int im_prepare(struct work_ctx *c)
{
    struct im_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->iters = sizes[c->size];
    struct work_rng r;
    work_rng_init(&r, c->seed);
    s->x0 = (uint32_t)work_rng_next(&r);
    for (int i = 0; i < NREC; i++) {
        struct rec *p = &s->init[i];
        p->id = (uint32_t)i;
        p->kind = (enum kind)work_rng_below(&r, 5);
        p->value = (int32_t)work_rng_below(&r, 2001) - 1000;
        copy_str(p->name, names[work_rng_below(&r, 8)]);
    }
    c->ops = s->iters;
    work_input(c, "iterations", s->iters);
    return 0;
}

static void im_run(struct work_ctx *c)
{
    struct im_state *s = c->state;
    memcpy(s->rec, s->init, sizeof s->rec);
    for (int i = 0; i < NREC; i++)
        s->rec[i].next = &s->rec[(i + 1) % NREC];
    memset(s->grid, 0, sizeof s->grid);
    s->copied = s->swaps = s->idle = 0;
    uint32_t x = s->x0;
    struct rec *cur = &s->rec[0];
    char tmp[NAMELEN];
    for (size_t it = 0; it < s->iters; it++) {
        x = x * 1103515245u + 12345u;
        struct rec *p = cur;
        cur = cur->next;
        p->kind = next_kind(p->kind, x >> 16);
        switch (p->kind) {
        case K_READY:
            s->copied += copy_str(p->name, names[(x >> 8) & 7]);
            break;
        case K_RUN:
            p->value = arith(p->value, (int32_t)((x >> 4) & 1023) - 512, x);
            break;
        case K_WAIT:
            if (cmp_str(p->name, p->next->name) > 0) {
                copy_str(tmp, p->name);
                copy_str(p->name, p->next->name);
                copy_str(p->next->name, tmp);
                s->swaps++;
            }
            break;
        case K_DONE:
            s->grid[p->id][(x >> 12) & 15] += (uint32_t)p->value;
            break;
        default:
            s->idle++;
            break;
        }
        uint32_t i = (x >> 20) & 15, j = (x >> 24) & 15;
        if (i == j)
            s->grid[i][j] ^= x;
        else if (i < j)
            s->grid[i][j] = s->grid[j][i] + i * j;
        else
            s->grid[i][j] -= s->grid[i][i] >> 1;
    }
    s->x = x;
}

static int im_check(struct work_ctx *c, uint64_t *checksum)
{
    struct im_state *s = c->state;
    uint64_t h = WORK_FNV_INIT;
    for (int i = 0; i < NREC; i++) {
        const struct rec *p = &s->rec[i];
        int known = 0;
        for (int k = 0; k < 8; k++)
            known |= !cmp_str(p->name, names[k]);
        if ((unsigned)p->kind >= K_KINDS || p->value < -1000 || p->value > 1000 || !known)
            return work_fail(c, "record %d left its invariants (kind %d, value %d)", i, (int)p->kind, (int)p->value);
        h = work_fnv_u64(h, p->id);
        h = work_fnv_u64(h, (uint64_t)p->kind);
        h = work_fnv_u64(h, (uint64_t)(int64_t)p->value);
        h = work_fnv_bytes(h, p->name, strlen(p->name));
    }
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            h = work_fnv_u64(h, s->grid[i][j]);
    h = work_fnv_u64(h, s->copied);
    h = work_fnv_u64(h, s->swaps);
    h = work_fnv_u64(h, s->idle);
    h = work_fnv_u64(h, s->x);
    *checksum = h;
    return 0;
}

static void im_release(struct work_ctx *c)
{
    free(c->state);
}

const struct work_kernel work_intmix = {
    .name = "intmix",
    .description = "integer/control mix (records, string copy/compare, division, switch); NOT Dhrystone",
    .op = "iteration",
    .rate_key = "iterations_per_s",
    .rate_scale = 1.0,
    .expected = {0xd782f0ce42c3efd4ull, 0x571d78e88f8f0f87ull},
    .prepare = im_prepare,
    .run = im_run,
    .check = im_check,
    .release = im_release,
};
