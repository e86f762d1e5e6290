/*
 * matmul_naive, matmul_blocked: C = A B of dense n x n double matrices,
 * by the textbook i-j-k triple loop (a dot product per element, B walked
 * by columns) and by a cache-blocked loop (T x T tiles, i-k-j order inside
 * a tile, B walked by rows).
 *
 * Input: A then B, row-major, each entry (below(2001) - 1000) / 1024.
 * Such entries are multiples of 2^-10 below 1 in magnitude, so every
 * product is a multiple of 2^-20 and every partial sum is exact in double
 * (n <= 8000): any summation order -- either loop here, or numpy with BLAS
 * and FMA -- gives the same bits. The timing is that of ordinary doubles.
 * Check (Freivalds): A (B r) = C r exactly for r_j = (j % 7) - 3.
 * Checksum: FNV of C[i][j] * 2^20 as 64-bit integers, row-major.
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

#define TILE 40

static const size_t sizes[WORK_NSIZES] = {48, 600};

struct mm_state {
    size_t n;
    double *a, *b, *c;
    double *t1, *t2;   /* check vectors */
};

static int mm_prepare(struct work_ctx *c)
{
    struct mm_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->a = work_alloc(c, n * n * sizeof(double))) || !(s->b = work_alloc(c, n * n * sizeof(double))) ||
        !(s->c = work_alloc(c, n * n * sizeof(double))) || !(s->t1 = work_alloc(c, n * sizeof(double))) ||
        !(s->t2 = work_alloc(c, n * sizeof(double))))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n * n; i++)
        s->a[i] = (double)((int64_t)work_rng_below(&r, 2001) - 1000) / 1024.0;
    for (size_t i = 0; i < n * n; i++)
        s->b[i] = (double)((int64_t)work_rng_below(&r, 2001) - 1000) / 1024.0;
    c->ops = 2 * n * n * n;
    work_input(c, "n", n);
    return 0;
}

static void naive_run(struct work_ctx *c)
{
    struct mm_state *s = c->state;
    size_t n = s->n;
    const double *a = s->a, *b = s->b;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0;
            for (size_t k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            s->c[i * n + j] = sum;
        }
}

static void blocked_run(struct work_ctx *c)
{
    struct mm_state *s = c->state;
    size_t n = s->n;
    const double *a = s->a, *b = s->b;
    double *cm = s->c;
    memset(cm, 0, n * n * sizeof *cm);
    for (size_t ii = 0; ii < n; ii += TILE)
        for (size_t kk = 0; kk < n; kk += TILE)
            for (size_t jj = 0; jj < n; jj += TILE) {
                size_t ie = ii + TILE < n ? ii + TILE : n, ke = kk + TILE < n ? kk + TILE : n,
                       je = jj + TILE < n ? jj + TILE : n;
                for (size_t i = ii; i < ie; i++)
                    for (size_t k = kk; k < ke; k++) {
                        double aik = a[i * n + k];
                        const double *brow = b + k * n;
                        double *crow = cm + i * n;
                        for (size_t j = jj; j < je; j++)
                            crow[j] += aik * brow[j];
                    }
            }
}

static int mm_check(struct work_ctx *c, uint64_t *checksum)
{
    struct mm_state *s = c->state;
    size_t n = s->n;
    /* t1 = B r, t2 = A t1, compared with C r */
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        for (size_t j = 0; j < n; j++)
            v += s->b[i * n + j] * (double)((int)(j % 7) - 3);
        s->t1[i] = v;
    }
    for (size_t i = 0; i < n; i++) {
        double v = 0, w = 0;
        for (size_t j = 0; j < n; j++) {
            v += s->a[i * n + j] * s->t1[j];
            w += s->c[i * n + j] * (double)((int)(j % 7) - 3);
        }
        if (v != w)
            return work_fail(c, "Freivalds check: row %zu of A(Br) is %.17g, of Cr %.17g", i, v, w);
    }
    uint64_t h = WORK_FNV_INIT;
    for (size_t i = 0; i < n * n; i++)
        h = work_fnv_u64(h, (uint64_t)(int64_t)(s->c[i] * 1048576.0));
    *checksum = h;
    return 0;
}

static void mm_release(struct work_ctx *c)
{
    struct mm_state *s = c->state;
    if (s) {
        free(s->a);
        free(s->b);
        free(s->c);
        free(s->t1);
        free(s->t2);
    }
    free(s);
}

const struct work_kernel work_matmul_naive = {
    .name = "matmul_naive",
    .description = "double matrix multiply, textbook i-j-k loop",
    .op = "flop",
    .rate_key = "flops",
    .rate_scale = 1.0,
    .expected = {0x0a50ae87f66c76ebull, 0xfda4778b991043b5ull},
    .prepare = mm_prepare,
    .run = naive_run,
    .check = mm_check,
    .release = mm_release,
};

const struct work_kernel work_matmul_blocked = {
    .name = "matmul_blocked",
    .description = "double matrix multiply, cache-blocked (40 x 40 tiles)",
    .op = "flop",
    .rate_key = "flops",
    .rate_scale = 1.0,
    .expected = {0x0a50ae87f66c76ebull, 0xfda4778b991043b5ull},
    .prepare = mm_prepare,
    .run = blocked_run,
    .check = mm_check,
    .release = mm_release,
};
