/*
 * fpmix: a floating-point mix in the spirit of (but NOT) Whetstone,
 * designed for rtvbench. Each iteration takes the next input pair (x, y) and
 *  1. calls libm: s = sin x, c = cos x, atan2(s, c), exp(log y), sqrt y;
 *  2. takes conditional branches on those values (counted);
 *  3. updates a 4-element array by a fixed contracting linear map fed with
 *     s and c (array arithmetic);
 *  4. calls a small non-inlined procedure on the array.
 * Its figure is "flop-ish" per second: each iteration counts as
 * FLOPISH_PER_ITER operations, where an add, multiply or divide counts 1 and
 * so does each libm call, whatever it costs. It is a rate of this mix only,
 * not comparable to Whetstone MWIPS/KWIPS or to FLOP/s of other programs.
 *
 * Input: for each iteration x = -3 + 6 u, then y = 0.1 + 9.9 u (u: unit draws).
 * libm may differ in the last bit between architectures, so libm results
 * enter the checksum only through branch counts (a flip needs a value
 * within ~1e-16 of a threshold) and sums rounded to 1e-3 (their error is
 * ~1e-10); the array is rounded to 2^-30.
 * Checks: sin^2 + cos^2 = 1, atan2(sin x, cos x) = x, exp(log y) = y,
 * sqrt(y)^2 = y within a few ulps; the array stays bounded.
 * Checksum: FNV of the 4 branch counts, round(1000 sum sin x),
 * round(1000 sum of the branch-dependent accumulator), round(2^30 e[k]).
 */
#include "work.h"

#include <math.h>
#include <stdlib.h>

/* Counted from the loop below: 6 libm calls (sin, cos, atan2, exp, log,
 * sqrt) + sin^2 + cos^2 (3) + sum of sin (1) + branch accumulator (2) +
 * branch conditions (2) + array map (16) + array feed and halving (6) +
 * procedure (8) + identity errors (7). */
#define FLOPISH_PER_ITER 51

static const size_t sizes[WORK_NSIZES] = {2000, 2000000};

struct fp_state {
    size_t n;
    double *x, *y;
    double e[4];
    uint64_t count[4];
    double sum_sin, acc;
    double err_pyth, err_atan, err_explog, err_sqrt;
};

__attribute__((noinline)) static void proc(double *e, double t)
{
    double a = e[0] * t, b = e[1] * t;
    e[2] = (e[2] + a - b) * 0.5;
    e[3] = (e[3] - a + b) * 0.5;
}

static int fp_prepare(struct work_ctx *c)
{
    struct fp_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->x = work_alloc(c, n * sizeof *s->x)) || !(s->y = work_alloc(c, n * sizeof *s->y)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n; i++) {
        s->x[i] = -3.0 + 6.0 * work_rng_unit(&r);
        s->y[i] = 0.1 + 9.9 * work_rng_unit(&r);
    }
    c->ops = n * FLOPISH_PER_ITER;
    work_input(c, "iterations", n);
    work_input(c, "flopish_per_iteration", FLOPISH_PER_ITER);
    return 0;
}

static void fp_run(struct work_ctx *c)
{
    struct fp_state *s = c->state;
    const double t = 0.499975;
    double e0 = 1.0, e1 = -1.0, e2 = -1.0, e3 = -1.0;
    double sum_sin = 0, acc = 0, ep = 0, ea = 0, ee = 0, eq = 0;
    uint64_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    double arr[4];
    for (size_t i = 0; i < s->n; i++) {
        double x = s->x[i], y = s->y[i];
        double sn = sin(x), cs = cos(x);
        double a = atan2(sn, cs), ex = exp(log(y)), q = sqrt(y);
        double pyth = sn * sn + cs * cs;
        sum_sin += sn;
        if (sn > 0.5) {
            n0++;
            acc += sn - cs;
        } else if (cs < -0.25) {
            n1++;
            acc -= cs * 0.5;
        }
        if (ex > 2.0)
            n2++;
        if (q * 3.0 < x + 3.0)
            n3++;
        /* array map: (e0 + e1 + e2 - e3) t ... contracts by |4 t| < 2, halved */
        double f0 = (e0 + e1 + e2 - e3) * t;
        double f1 = (e0 + e1 - e2 + e3) * t;
        double f2 = (e0 - e1 + e2 + e3) * t;
        double f3 = (-e0 + e1 + e2 + e3) * t;
        e0 = f0 * 0.5 + sn;
        e1 = f1 * 0.5 + cs;
        e2 = f2 * 0.5;
        e3 = f3 * 0.5;
        arr[0] = e0;
        arr[1] = e1;
        arr[2] = e2;
        arr[3] = e3;
        proc(arr, t);
        e2 = arr[2];
        e3 = arr[3];
        /* self-check figures (kept in the loop: they are part of the mix) */
        double d = fabs(pyth - 1.0);
        ep = d > ep ? d : ep;
        d = fabs(a - x);
        ea = d > ea ? d : ea;
        d = fabs(ex - y) / y;
        ee = d > ee ? d : ee;
        d = fabs(q * q - y) / y;
        eq = d > eq ? d : eq;
    }
    s->e[0] = e0;
    s->e[1] = e1;
    s->e[2] = e2;
    s->e[3] = e3;
    s->count[0] = n0;
    s->count[1] = n1;
    s->count[2] = n2;
    s->count[3] = n3;
    s->sum_sin = sum_sin;
    s->acc = acc;
    s->err_pyth = ep;
    s->err_atan = ea;
    s->err_explog = ee;
    s->err_sqrt = eq;
}

static int fp_check(struct work_ctx *c, uint64_t *checksum)
{
    struct fp_state *s = c->state;
    work_detail(c, "max_pythagoras_error", s->err_pyth);
    work_detail(c, "max_atan2_error", s->err_atan);
    work_detail(c, "max_exp_log_rel_error", s->err_explog);
    work_detail(c, "max_sqrt_rel_error", s->err_sqrt);
    if (s->err_pyth > 1e-14 || s->err_atan > 1e-14 || s->err_explog > 1e-14 || s->err_sqrt > 1e-15)
        return work_fail(c, "a libm identity is off: sin^2+cos^2 by %.3g, atan2 by %.3g, exp(log) by %.3g, sqrt by "
                            "%.3g (limits 1e-14, 1e-14, 1e-14, 1e-15)",
                         s->err_pyth, s->err_atan, s->err_explog, s->err_sqrt);
    for (int k = 0; k < 4; k++)
        if (!(fabs(s->e[k]) < 10))
            return work_fail(c, "the array diverged: e[%d] = %g", k, s->e[k]);
    uint64_t h = WORK_FNV_INIT;
    for (int k = 0; k < 4; k++)
        h = work_fnv_u64(h, s->count[k]);
    h = work_fnv_u64(h, (uint64_t)llround(s->sum_sin * 1000.0));
    h = work_fnv_u64(h, (uint64_t)llround(s->acc * 1000.0));
    for (int k = 0; k < 4; k++)
        h = work_fnv_u64(h, (uint64_t)llround(s->e[k] * 1073741824.0));
    *checksum = h;
    return 0;
}

static void fp_release(struct work_ctx *c)
{
    struct fp_state *s = c->state;
    if (s) {
        free(s->x);
        free(s->y);
    }
    free(s);
}

const struct work_kernel work_fpmix = {
    .name = "fpmix",
    .description = "floating-point mix (libm calls, branches, array arithmetic, calls); NOT Whetstone",
    .op = "flop-ish",
    .rate_key = "kflopish_per_s",
    .rate_scale = 1e-3,
    .expected = {0x3f07bd2f2b00b801ull, 0xd2beeb34105a6a11ull},
    .prepare = fp_prepare,
    .run = fp_run,
    .check = fp_check,
    .release = fp_release,
};
