/*
 * patricia: a PATRICIA trie (Morrison 1968; the one-node-per-key form with
 * upward links, as in Sedgewick's "Algorithms") of 32-bit IPv4-like keys:
 * insert N keys, then look up M addresses.
 *
 * Input: N keys; draw v: when v's top bit is set the key is v's low 32 bits
 * (anywhere), else 10.x.y.z = 0x0A000000 | (v & 0xffffff). A key's value is
 * the index of its first insertion (repeats keep the first). Then M = 2N
 * queries; draw v: v & 1 -> key[(v >> 1) % N] (present); else v & 2 ->
 * 0x0A000000 | ((v >> 8) & 0xffffff) (same network, mostly absent); else
 * v >> 32 (anywhere).
 * Check: every answer agrees with a binary search in a sorted copy of the
 * keys. Checksum: FNV of the number of distinct keys, then of each query's
 * value (0xffffffff when absent).
 */
#include "work.h"

#include <stdlib.h>

#define NONE 0xffffffffu

static const size_t sizes[WORK_NSIZES] = {2000, 250000};

struct pnode {
    uint32_t key, value;
    int32_t bit;               /* bit tested here, 31 (MSB) .. 0; head: 32 */
    uint32_t left, right;      /* node indexes; a link to a node with a
                                  higher-or-equal bit is an upward link */
};

struct pat_state {
    size_t n, m;
    uint32_t *keys, *queries, *answers;
    struct pnode *nodes;
    size_t used, distinct;
    uint64_t *sorted;          /* check: key << 32 | first index */
};

static inline unsigned bit_of(uint32_t x, int b)
{
    return b >= 32 ? 0 : (x >> b) & 1;
}

static uint32_t search(const struct pnode *nd, uint32_t x)
{
    uint32_t p = 0, t = nd[0].left;
    while (nd[p].bit > nd[t].bit) {
        p = t;
        t = bit_of(x, nd[t].bit) ? nd[t].right : nd[t].left;
    }
    return t;
}

static void insert(struct pat_state *s, uint32_t x, uint32_t value)
{
    struct pnode *nd = s->nodes;
    uint32_t t = search(nd, x);
    if (nd[t].key == x) {
        if (nd[t].value == NONE) {      /* key 0 lives in the head */
            nd[t].value = value;
            s->distinct++;
        }
        return;
    }
    int i = 31;
    while (bit_of(x, i) == bit_of(nd[t].key, i))
        i--;
    uint32_t p = 0;
    t = nd[0].left;
    while (nd[p].bit > nd[t].bit && nd[t].bit > i) {
        p = t;
        t = bit_of(x, nd[t].bit) ? nd[t].right : nd[t].left;
    }
    uint32_t n = (uint32_t)s->used++;
    nd[n].key = x;
    nd[n].value = value;
    nd[n].bit = i;
    nd[n].left = bit_of(x, i) ? t : n;
    nd[n].right = bit_of(x, i) ? n : t;
    if (bit_of(x, nd[p].bit))
        nd[p].right = n;
    else
        nd[p].left = n;
    s->distinct++;
}

static int pat_prepare(struct work_ctx *c)
{
    struct pat_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size], m = s->m = 2 * n;
    if (!(s->keys = work_alloc(c, n * sizeof *s->keys)) || !(s->queries = work_alloc(c, m * sizeof *s->queries)) ||
        !(s->answers = work_alloc(c, m * sizeof *s->answers)) ||
        !(s->nodes = work_alloc(c, (n + 1) * sizeof *s->nodes)) || !(s->sorted = work_alloc(c, n * sizeof *s->sorted)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = work_rng_next(&r);
        s->keys[i] = v >> 63 ? (uint32_t)v : 0x0A000000u | (uint32_t)(v & 0xffffff);
    }
    for (size_t i = 0; i < m; i++) {
        uint64_t v = work_rng_next(&r);
        if (v & 1)
            s->queries[i] = s->keys[(v >> 1) % n];
        else if (v & 2)
            s->queries[i] = 0x0A000000u | (uint32_t)((v >> 8) & 0xffffff);
        else
            s->queries[i] = (uint32_t)(v >> 32);
    }
    c->ops = n + m;
    work_input(c, "keys", n);
    work_input(c, "lookups", m);
    return 0;
}

static void pat_run(struct work_ctx *c)
{
    struct pat_state *s = c->state;
    struct pnode *nd = s->nodes;
    nd[0] = (struct pnode){.key = 0, .value = NONE, .bit = 32, .left = 0, .right = 0};
    s->used = 1;
    s->distinct = 0;
    for (size_t i = 0; i < s->n; i++)
        insert(s, s->keys[i], (uint32_t)i);
    for (size_t i = 0; i < s->m; i++) {
        uint32_t t = search(nd, s->queries[i]);
        s->answers[i] = nd[t].key == s->queries[i] ? nd[t].value : NONE;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int pat_check(struct work_ctx *c, uint64_t *checksum)
{
    struct pat_state *s = c->state;
    for (size_t i = 0; i < s->n; i++)
        s->sorted[i] = (uint64_t)s->keys[i] << 32 | i;
    qsort(s->sorted, s->n, sizeof *s->sorted, cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < s->n; i++)    /* keep the first index of each key */
        if (!distinct || s->sorted[distinct - 1] >> 32 != s->sorted[i] >> 32)
            s->sorted[distinct++] = s->sorted[i];
    if (distinct != s->distinct)
        return work_fail(c, "the trie holds %zu distinct keys, the input has %zu", s->distinct, distinct);
    uint64_t h = work_fnv_u64(WORK_FNV_INIT, distinct);
    size_t hits = 0;
    for (size_t i = 0; i < s->m; i++) {
        uint32_t q = s->queries[i], want = NONE;
        size_t lo = 0, hi = distinct;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->sorted[mid] >> 32 < q)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < distinct && s->sorted[lo] >> 32 == q)
            want = (uint32_t)s->sorted[lo];
        if (s->answers[i] != want)
            return work_fail(c, "lookup %zu of %u.%u.%u.%u gave %d, expected %d", i, q >> 24, (q >> 16) & 255,
                             (q >> 8) & 255, q & 255, (int)s->answers[i], (int)want);
        hits += want != NONE;
        h = work_fnv_u64(h, s->answers[i]);
    }
    work_detail(c, "distinct_keys", (double)distinct);
    work_detail(c, "hits", (double)hits);
    *checksum = h;
    return 0;
}

static void pat_release(struct work_ctx *c)
{
    struct pat_state *s = c->state;
    if (s) {
        free(s->keys);
        free(s->queries);
        free(s->answers);
        free(s->nodes);
        free(s->sorted);
    }
    free(s);
}

const struct work_kernel work_patricia = {
    .name = "patricia",
    .description = "PATRICIA trie: insert seeded IPv4-like keys, then look up hits and misses",
    .op = "insert-or-lookup",
    .expected = {0xd84ad57baec85fcfull, 0x44c18fa5ff8ae9fdull},
    .prepare = pat_prepare,
    .run = pat_run,
    .check = pat_check,
    .release = pat_release,
};
