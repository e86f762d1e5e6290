/*
 * dijkstra: single-source shortest paths on a seeded random directed graph
 * held in an adjacency matrix, by Dijkstra's algorithm in its O(V^2) array
 * form (the natural one for a matrix), from S sources.
 *
 * Input: for i in 0..V-1, j in 0..V-1, i != j: draw e = below(100); when
 * e < 10 there is an edge i->j of weight 1 + below(1000) (one more draw).
 * Sources: k * V / S for k in 0..S-1.
 * Check: the distances are certified optimal: d(src) = 0, no edge can
 * shorten any distance, and every reached vertex has a tight in-edge.
 * Checksum: FNV of the S x V distances (unreachable = 0xffffffff).
 */
#include "work.h"

#include <stdlib.h>

#define INF 0xffffffffu

static const struct { size_t v, sources; } sizes[WORK_NSIZES] = {
    {64, 4}, {1024, 48},
};

struct dj_state {
    size_t v, ns;
    uint32_t *adj;     /* v x v, INF = no edge */
    uint32_t *dist;    /* ns x v */
    uint8_t *done;
};

static size_t source_of(const struct dj_state *s, size_t k)
{
    return k * s->v / s->ns;
}

static int dj_prepare(struct work_ctx *c)
{
    struct dj_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t v = s->v = sizes[c->size].v;
    s->ns = sizes[c->size].sources;
    if (!(s->adj = work_alloc(c, v * v * sizeof *s->adj)) || !(s->dist = work_alloc(c, s->ns * v * sizeof *s->dist)) ||
        !(s->done = work_alloc(c, v)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    size_t edges = 0;
    for (size_t i = 0; i < v; i++)
        for (size_t j = 0; j < v; j++) {
            s->adj[i * v + j] = INF;
            if (i != j && work_rng_below(&r, 100) < 10) {
                s->adj[i * v + j] = 1 + (uint32_t)work_rng_below(&r, 1000);
                edges++;
            }
        }
    c->ops = s->ns * v * v;
    work_input(c, "vertices", v);
    work_input(c, "sources", s->ns);
    work_input(c, "edges", edges);
    return 0;
}

static void shortest(const uint32_t *adj, size_t v, size_t src, uint32_t *dist, uint8_t *done)
{
    for (size_t i = 0; i < v; i++) {
        dist[i] = INF;
        done[i] = 0;
    }
    dist[src] = 0;
    for (size_t round = 0; round < v; round++) {
        size_t u = v;
        uint32_t best = INF;
        for (size_t i = 0; i < v; i++)
            if (!done[i] && dist[i] < best) {
                best = dist[i];
                u = i;
            }
        if (u == v)
            break;      /* the rest is unreachable */
        done[u] = 1;
        const uint32_t *row = adj + u * v;
        for (size_t i = 0; i < v; i++)
            if (row[i] != INF && !done[i] && best + row[i] < dist[i])
                dist[i] = best + row[i];
    }
}

static void dj_run(struct work_ctx *c)
{
    struct dj_state *s = c->state;
    for (size_t k = 0; k < s->ns; k++)
        shortest(s->adj, s->v, source_of(s, k), s->dist + k * s->v, s->done);
}

static int dj_check(struct work_ctx *c, uint64_t *checksum)
{
    struct dj_state *s = c->state;
    size_t v = s->v, reached = 0;
    uint8_t *tight = s->done;
    uint64_t h = WORK_FNV_INIT;
    for (size_t k = 0; k < s->ns; k++) {
        const uint32_t *d = s->dist + k * v;
        size_t src = source_of(s, k);
        if (d[src] != 0)
            return work_fail(c, "source %zu has distance %u to itself", src, d[src]);
        for (size_t x = 0; x < v; x++)
            tight[x] = x == src;
        for (size_t u = 0; u < v; u++) {
            if (d[u] == INF)
                continue;
            const uint32_t *row = s->adj + u * v;
            for (size_t x = 0; x < v; x++) {
                if (row[x] == INF)
                    continue;
                uint64_t via = (uint64_t)d[u] + row[x];
                if (via < d[x])
                    return work_fail(c, "from source %zu, edge %zu->%zu shortens vertex %zu's distance %u to %llu",
                                     src, u, x, x, d[x], (unsigned long long)via);
                tight[x] |= via == d[x];
            }
        }
        for (size_t x = 0; x < v; x++) {
            if (d[x] != INF && !tight[x])
                return work_fail(c, "from source %zu, vertex %zu's distance %u is not reached by any edge", src, x,
                                 d[x]);
            reached += d[x] != INF;
            h = work_fnv_u64(h, d[x]);
        }
    }
    work_detail(c, "reached_pairs", (double)reached);
    *checksum = h;
    return 0;
}

static void dj_release(struct work_ctx *c)
{
    struct dj_state *s = c->state;
    if (s) {
        free(s->adj);
        free(s->dist);
        free(s->done);
    }
    free(s);
}

const struct work_kernel work_dijkstra = {
    .name = "dijkstra",
    .description = "Dijkstra shortest paths (O(V^2), adjacency matrix) on a seeded random graph from S sources",
    .op = "matrix-entry",
    .expected = {0x60e8d9efc4418c29ull, 0x27a4e0fa8014db0bull},
    .prepare = dj_prepare,
    .run = dj_run,
    .check = dj_check,
    .release = dj_release,
};
