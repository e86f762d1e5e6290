/*
 * basicmath: the small numerical chores of control code.
 *  - cubic equations a x^3 + b x^2 + c x + d = 0 solved in closed form
 *    (trigonometric method for three real roots, Cardano's formula for one);
 *  - integer square roots of 64-bit values, digit by digit in base 4;
 *  - degree -> radian -> degree conversions.
 *
 * The cubics are built from integer roots, so the solver's answer is known:
 * every root must lie within 1e-6 of the integer it was built from, and
 * the checksum uses the rounded roots (robust to libm's last-bit
 * differences between architectures). Square roots are checked with
 * r^2 <= v < (r+1)^2. Conversions use only * and /, so their bits are the
 * same on every IEEE-754 machine and enter the checksum as they are.
 */
#include "work.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[WORK_NSIZES] = {1000, 1000000};   /* problems of each of the three kinds */

struct bm_state {
    size_t n;
    double *coef;          /* 4 per cubic: a, b, c, d */
    int8_t *want_n;        /* real roots by construction: 1 or 3 */
    int64_t *want_roots;   /* 3 per cubic, ascending (1 used when want_n = 1) */
    double *roots;         /* 3 per cubic, as solved */
    int *nroots;
    uint64_t *sq_in, *sq_out;
    double *deg, *rad, *back;
};

static void sort3(int64_t *r)
{
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (r[j] > r[j + 1]) {
                int64_t t = r[j];
                r[j] = r[j + 1];
                r[j + 1] = t;
            }
}

static int bm_prepare(struct work_ctx *c)
{
    struct bm_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->coef = work_alloc(c, 4 * n * sizeof *s->coef)) || !(s->want_n = work_alloc(c, n)) ||
        !(s->want_roots = work_alloc(c, 3 * n * sizeof *s->want_roots)) ||
        !(s->roots = work_alloc(c, 3 * n * sizeof *s->roots)) || !(s->nroots = work_alloc(c, n * sizeof *s->nroots)) ||
        !(s->sq_in = work_alloc(c, n * sizeof *s->sq_in)) || !(s->sq_out = work_alloc(c, n * sizeof *s->sq_out)) ||
        !(s->deg = work_alloc(c, n * sizeof *s->deg)) || !(s->rad = work_alloc(c, n * sizeof *s->rad)) ||
        !(s->back = work_alloc(c, n * sizeof *s->back)))
        return -1;

    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n; i++) {
        int one = work_rng_below(&r, 4) == 0;
        int64_t a = (int64_t)work_rng_below(&r, 8) + 1, b, cc, d;
        int64_t *w = s->want_roots + 3 * i;
        if (one) {
            /* (x - r1)(x^2 + p x + q), q > p^2/4: a complex pair */
            int64_t r1 = (int64_t)work_rng_below(&r, 101) - 50;
            int64_t p = (int64_t)work_rng_below(&r, 41) - 20;
            int64_t q = p * p / 4 + 1 + (int64_t)work_rng_below(&r, 50);
            b = a * (p - r1);
            cc = a * (q - r1 * p);
            d = -a * r1 * q;
            w[0] = w[1] = w[2] = r1;
            s->want_n[i] = 1;
        } else {
            int64_t r1 = (int64_t)work_rng_below(&r, 101) - 50, r2, r3;
            do
                r2 = (int64_t)work_rng_below(&r, 101) - 50;
            while (r2 == r1);
            do
                r3 = (int64_t)work_rng_below(&r, 101) - 50;
            while (r3 == r1 || r3 == r2);
            b = -a * (r1 + r2 + r3);
            cc = a * (r1 * r2 + r1 * r3 + r2 * r3);
            d = -a * r1 * r2 * r3;
            w[0] = r1;
            w[1] = r2;
            w[2] = r3;
            sort3(w);
            s->want_n[i] = 3;
        }
        s->coef[4 * i] = (double)a;
        s->coef[4 * i + 1] = (double)b;
        s->coef[4 * i + 2] = (double)cc;
        s->coef[4 * i + 3] = (double)d;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned shift = (unsigned)work_rng_below(&r, 64);
        s->sq_in[i] = work_rng_next(&r) >> shift;
    }
    for (size_t i = 0; i < n; i++)
        s->deg[i] = (double)((int64_t)work_rng_below(&r, 720001) - 360000) / 1000.0;

    c->ops = 3 * n;
    work_input(c, "cubics", n);
    work_input(c, "square_roots", n);
    work_input(c, "conversions", n);
    return 0;
}

/* Roots of a x^3 + b x^2 + c x + d (a != 0); returns how many are real. */
static int solve_cubic(double a, double b, double c, double d, double *x)
{
    const double pi = 3.14159265358979323846;
    double a1 = b / a, a2 = c / a, a3 = d / a;
    double q = (a1 * a1 - 3.0 * a2) / 9.0;
    double r = (2.0 * a1 * a1 * a1 - 9.0 * a1 * a2 + 27.0 * a3) / 54.0;
    double q3 = q * q * q;
    if (r * r < q3) {
        double theta = acos(r / sqrt(q3));
        double m = -2.0 * sqrt(q);
        x[0] = m * cos(theta / 3.0) - a1 / 3.0;
        x[1] = m * cos((theta + 2.0 * pi) / 3.0) - a1 / 3.0;
        x[2] = m * cos((theta - 2.0 * pi) / 3.0) - a1 / 3.0;
        return 3;
    }
    double e = cbrt(fabs(r) + sqrt(r * r - q3));
    if (r > 0)
        e = -e;
    double f = e != 0.0 ? q / e : 0.0;
    x[0] = e + f - a1 / 3.0;
    return 1;
}

/* floor(sqrt(v)), one base-4 digit per step. */
static uint64_t isqrt64(uint64_t v)
{
    uint64_t root = 0, bit = 1ull << 62;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= root + bit) {
            v -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return root;
}

static void bm_run(struct work_ctx *c)
{
    struct bm_state *s = c->state;
    const double pi = 3.14159265358979323846;
    for (size_t i = 0; i < s->n; i++) {
        const double *k = s->coef + 4 * i;
        s->nroots[i] = solve_cubic(k[0], k[1], k[2], k[3], s->roots + 3 * i);
    }
    for (size_t i = 0; i < s->n; i++)
        s->sq_out[i] = isqrt64(s->sq_in[i]);
    for (size_t i = 0; i < s->n; i++) {
        s->rad[i] = s->deg[i] * (pi / 180.0);
        s->back[i] = s->rad[i] * (180.0 / pi);
    }
}

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static int bm_check(struct work_ctx *c, uint64_t *checksum)
{
    struct bm_state *s = c->state;
    uint64_t h = WORK_FNV_INIT;
    double worst = 0;
    for (size_t i = 0; i < s->n; i++) {
        int n = s->nroots[i];
        if (n != s->want_n[i])
            return work_fail(c, "cubic %zu: %d real roots found, %d expected", i, n, s->want_n[i]);
        int64_t got[3];
        for (int k = 0; k < 3; k++) {
            double x = s->roots[3 * i + (k < n ? k : 0)];
            got[k] = (int64_t)llround(x);
            double err = fabs(x - (double)got[k]);
            if (err > worst)
                worst = err;
        }
        sort3(got);
        for (int k = 0; k < 3; k++)
            if (got[k] != s->want_roots[3 * i + k])
                return work_fail(c, "cubic %zu: roots %lld %lld %lld, expected %lld %lld %lld", i, (long long)got[0],
                                 (long long)got[1], (long long)got[2], (long long)s->want_roots[3 * i],
                                 (long long)s->want_roots[3 * i + 1], (long long)s->want_roots[3 * i + 2]);
        h = work_fnv_u64(h, (uint64_t)n);
        for (int k = 0; k < n; k++)
            h = work_fnv_u64(h, (uint64_t)got[k]);
    }
    work_detail(c, "max_root_error", worst);
    if (worst > 1e-6)
        return work_fail(c, "a cubic root is %.3g away from the integer root it was built from (limit 1e-6)", worst);
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v = s->sq_in[i], q = s->sq_out[i];
        if (q > 0xffffffffu || q * q > v || v - q * q > 2 * q)
            return work_fail(c, "isqrt(%llu) = %llu is wrong", (unsigned long long)v, (unsigned long long)q);
        h = work_fnv_u64(h, q);
    }
    double worst_angle = 0;
    for (size_t i = 0; i < s->n; i++) {
        double err = fabs(s->back[i] - s->deg[i]);
        if (err > worst_angle)
            worst_angle = err;
        h = work_fnv_u64(h, dbits(s->rad[i]));
        h = work_fnv_u64(h, dbits(s->back[i]));
    }
    work_detail(c, "max_angle_roundtrip_error_deg", worst_angle);
    if (worst_angle > 1e-9)
        return work_fail(c, "degree -> radian -> degree is off by %.3g degrees (limit 1e-9)", worst_angle);
    *checksum = h;
    return 0;
}

static void bm_release(struct work_ctx *c)
{
    struct bm_state *s = c->state;
    if (s) {
        free(s->coef); free(s->want_n); free(s->want_roots); free(s->roots); free(s->nroots);
        free(s->sq_in); free(s->sq_out); free(s->deg); free(s->rad); free(s->back);
    }
    free(s);
}

const struct work_kernel work_basicmath = {
    .name = "basicmath",
    .description = "cubic equations, 64-bit integer square roots, degree/radian conversions",
    .op = "problem",
    .expected = {0xe04b4a64345d7c71ull, 0xf8a8415f9af33b74ull},
    .prepare = bm_prepare,
    .run = bm_run,
    .check = bm_check,
    .release = bm_release,
};
