/*
 * lu: solve A x = b for a dense n x n double matrix by LU factorisation with
 * partial pivoting (Gaussian elimination, right-looking, row-major, rows
 * swapped physically), then forward and back substitution: the method of
 * the Linpack benchmark, written for rtvbench. Its rate is the Linpack
 * convention, 2/3 n^3 + 2 n^2 floating-point operations per solve.
 *
 * Input: A row-major, each entry 2 u - 1 (u a unit draw; exact); the true
 * solution x_i = 1 + (i % 5); b = A x computed row by row in index order.
 * Pivot: the first row with the largest |a_ik| at or below the diagonal.
 * Checks: the normalised residual ||A x - b||_inf / (||A||_inf ||x||_inf n
 * eps) below 100 (Linpack prints this figure; a correct solve gives ~1-10),
 * and |x_i - true x_i| < 1e-6.
 * Checksum: FNV of the pivot row chosen at each step, then of round(x_i).
 * The pivot sequence is what LAPACK's dgetrf (scipy.linalg.lu_factor)
 * chooses too, barring a near-tie within rounding, which random entries
 * make improbable.
 */
#include "work.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[WORK_NSIZES] = {64, 1000};

struct lu_state {
    size_t n;
    double *a, *b;     /* the system */
    double *lu, *x;    /* factors, solution */
    size_t *piv;
};

static int lu_prepare(struct work_ctx *c)
{
    struct lu_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->a = work_alloc(c, n * n * sizeof(double))) || !(s->b = work_alloc(c, n * sizeof(double))) ||
        !(s->lu = work_alloc(c, n * n * sizeof(double))) || !(s->x = work_alloc(c, n * sizeof(double))) ||
        !(s->piv = work_alloc(c, n * sizeof *s->piv)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n * n; i++)
        s->a[i] = 2.0 * work_rng_unit(&r) - 1.0;
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        for (size_t j = 0; j < n; j++)
            v += s->a[i * n + j] * (double)(1 + j % 5);
        s->b[i] = v;
    }
    double nd = (double)n;
    c->ops = (uint64_t)(2.0 / 3.0 * nd * nd * nd + 2.0 * nd * nd);
    work_input(c, "n", n);
    return 0;
}

static void lu_run(struct work_ctx *c)
{
    struct lu_state *s = c->state;
    size_t n = s->n;
    double *a = s->lu, *x = s->x;
    memcpy(a, s->a, n * n * sizeof *a);
    memcpy(x, s->b, n * sizeof *x);
    for (size_t k = 0; k < n; k++) {
        size_t p = k;
        double best = fabs(a[k * n + k]);
        for (size_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > best) {
                best = fabs(a[i * n + k]);
                p = i;
            }
        s->piv[k] = p;
        if (p != k) {
            double *rk = a + k * n, *rp = a + p * n;
            for (size_t j = 0; j < n; j++) {
                double t = rk[j];
                rk[j] = rp[j];
                rp[j] = t;
            }
            double t = x[k];
            x[k] = x[p];
            x[p] = t;
        }
        double pivot = a[k * n + k];
        if (pivot == 0.0)
            continue;   /* singular: the residual check reports it */
        const double *rk = a + k * n;
        for (size_t i = k + 1; i < n; i++) {
            double *ri = a + i * n;
            double l = ri[k] / pivot;
            ri[k] = l;
            for (size_t j = k + 1; j < n; j++)
                ri[j] -= l * rk[j];
            x[i] -= l * x[k];       /* forward substitution, as we go */
        }
    }
    for (size_t k = n; k-- > 0;) {
        double v = x[k];
        for (size_t j = k + 1; j < n; j++)
            v -= a[k * n + j] * x[j];
        x[k] = v / a[k * n + k];
    }
}

static int lu_check(struct work_ctx *c, uint64_t *checksum)
{
    struct lu_state *s = c->state;
    size_t n = s->n;
    double rmax = 0, anorm = 0, xnorm = 0, xerr = 0;
    for (size_t i = 0; i < n; i++) {
        double r = -s->b[i], rowsum = 0;
        for (size_t j = 0; j < n; j++) {
            r += s->a[i * n + j] * s->x[j];
            rowsum += fabs(s->a[i * n + j]);
        }
        rmax = fmax(rmax, fabs(r));
        anorm = fmax(anorm, rowsum);
        xnorm = fmax(xnorm, fabs(s->x[i]));
        xerr = fmax(xerr, fabs(s->x[i] - (double)(1 + i % 5)));
    }
    double resid = rmax / (anorm * xnorm * (double)n * DBL_EPSILON);
    work_detail(c, "normalized_residual", resid);
    work_detail(c, "max_solution_error", xerr);
    if (!(resid < 100))
        return work_fail(c, "the normalised residual is %.3g (limit 100)", resid);
    if (!(xerr < 1e-6))
        return work_fail(c, "the solution is off by %.3g (limit 1e-6)", xerr);
    uint64_t h = WORK_FNV_INIT;
    for (size_t k = 0; k < n; k++)
        h = work_fnv_u64(h, s->piv[k]);
    for (size_t i = 0; i < n; i++)
        h = work_fnv_u64(h, (uint64_t)llround(s->x[i]));
    *checksum = h;
    return 0;
}

static void lu_release(struct work_ctx *c)
{
    struct lu_state *s = c->state;
    if (s) {
        free(s->a);
        free(s->b);
        free(s->lu);
        free(s->x);
        free(s->piv);
    }
    free(s);
}

const struct work_kernel work_lu = {
    .name = "lu",
    .description = "dense LU solve with partial pivoting (Linpack-class), flop/s by 2/3 n^3 + 2 n^2",
    .op = "flop",
    .rate_key = "flops",
    .rate_scale = 1.0,
    .expected = {0xe5c43067f43702aaull, 0x99370f745105f8e5ull},
    .prepare = lu_prepare,
    .run = lu_run,
    .check = lu_check,
    .release = lu_release,
};
