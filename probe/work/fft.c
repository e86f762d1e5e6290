/*
 * fft: radix-2 decimation-in-time complex FFT (iterative, bit-reversal
 * permutation first) and its inverse, X_k = sum_n x_n exp(-2 pi i k n / N),
 * inverse scaled by 1/N.
 *
 * Input: N complex points; for each, re = below(2048) - 1024 then
 * im = below(2048) - 1024 (integers, exact in double).
 * Twiddle factors come from work_sincos_turn (+, -, *, / only), so the whole
 * transform uses IEEE-754 basic operations and gives the same bits on every
 * architecture. The checksum rounds every spectrum value to the nearest
 * integer: a spectrum value is ~1e5 and computed within ~1e-9, so a value
 * would need to fall within 1e-9 of a half-integer for two correct FFTs
 * (e.g. numpy's) to disagree.
 * Checks: inverse(FFT(x)) = x within 1e-9; Parseval; X_0 = sum x exactly;
 * on the small size every X_k against a direct O(N^2) DFT.
 * Checksum: FNV of round(Re X_k), round(Im X_k), k = 0..N-1.
 */
#include "work.h"

#include <math.h>
#include <stdlib.h>

static const size_t sizes[WORK_NSIZES] = {1024, 1 << 20};

struct fft_state {
    size_t n;
    int log2n;
    double *x;         /* input, interleaved re, im */
    double *y, *z;     /* spectrum, round trip */
    double *w;         /* twiddles: cos, -sin of 2 pi k / n, k < n/2 */
    uint32_t *rev;     /* bit-reversed index */
};

static void transform(const struct fft_state *s, const double *in, double *out, int inverse)
{
    size_t n = s->n;
    for (size_t i = 0; i < n; i++) {
        size_t r = s->rev[i];
        out[2 * r] = in[2 * i];
        out[2 * r + 1] = in[2 * i + 1];
    }
    double sign = inverse ? -1.0 : 1.0;
    for (size_t len = 2; len <= n; len *= 2) {
        size_t half = len / 2, stride = n / len;
        for (size_t start = 0; start < n; start += len) {
            for (size_t k = 0; k < half; k++) {
                double wr = s->w[2 * k * stride], wi = sign * s->w[2 * k * stride + 1];
                double *a = out + 2 * (start + k), *b = out + 2 * (start + k + half);
                double tr = b[0] * wr - b[1] * wi;
                double ti = b[0] * wi + b[1] * wr;
                b[0] = a[0] - tr;
                b[1] = a[1] - ti;
                a[0] += tr;
                a[1] += ti;
            }
        }
    }
    if (inverse) {
        double inv = 1.0 / (double)n;
        for (size_t i = 0; i < 2 * n; i++)
            out[i] *= inv;
    }
}

static int fft_prepare(struct work_ctx *c)
{
    struct fft_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    while ((size_t)1 << s->log2n < n)
        s->log2n++;
    if (!(s->x = work_alloc(c, 2 * n * sizeof(double))) || !(s->y = work_alloc(c, 2 * n * sizeof(double))) ||
        !(s->z = work_alloc(c, 2 * n * sizeof(double))) || !(s->w = work_alloc(c, n * sizeof(double))) ||
        !(s->rev = work_alloc(c, n * sizeof *s->rev)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t r = 0;
        for (int b = 0; b < s->log2n; b++)
            r |= ((i >> b) & 1) << (s->log2n - 1 - b);
        s->rev[i] = (uint32_t)r;
    }
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < 2 * n; i++)
        s->x[i] = (double)((int64_t)work_rng_below(&r, 2048) - 1024);
    for (size_t k = 0; k < n / 2; k++) {
        double sn, cs;
        work_sincos_turn(k, n, &sn, &cs);
        s->w[2 * k] = cs;
        s->w[2 * k + 1] = -sn;
    }
    c->ops = 2 * 5 * n * (size_t)s->log2n;
    work_input(c, "points", n);
    return 0;
}

static void fft_run(struct work_ctx *c)
{
    struct fft_state *s = c->state;
    transform(s, s->x, s->y, 0);
    transform(s, s->y, s->z, 1);
}

static int fft_check(struct work_ctx *c, uint64_t *checksum)
{
    struct fft_state *s = c->state;
    size_t n = s->n;
    double rt = 0, ex = 0, ey = 0, sr = 0, si = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        double d = fabs(s->z[i] - s->x[i]);
        rt = d > rt ? d : rt;
        ex += s->x[i] * s->x[i];
        ey += s->y[i] * s->y[i];
    }
    for (size_t i = 0; i < n; i++) {
        sr += s->x[2 * i];
        si += s->x[2 * i + 1];
    }
    double parseval = fabs(ey - (double)n * ex) / ((double)n * ex);
    work_detail(c, "max_roundtrip_error", rt);
    work_detail(c, "parseval_rel_error", parseval);
    if (rt > 1e-9)
        return work_fail(c, "inverse FFT(FFT(x)) differs from x by %.3g (limit 1e-9)", rt);
    if (parseval > 1e-12)
        return work_fail(c, "Parseval's sum differs by %.3g relative (limit 1e-12)", parseval);
    if (fabs(s->y[0] - sr) > 1e-6 || fabs(s->y[1] - si) > 1e-6)
        return work_fail(c, "X_0 = %.17g%+.17gi, the sum of the input is %.17g%+.17gi", s->y[0], s->y[1], sr, si);
    if (c->size == WORK_SMALL) {
        double worst = 0;
        for (size_t k = 0; k < n; k++) {
            double re = 0, im = 0;
            for (size_t j = 0; j < n; j++) {
                size_t e = (j * k) % n;
                double wr = e < n / 2 ? s->w[2 * e] : -s->w[2 * (e - n / 2)];
                double wi = e < n / 2 ? s->w[2 * e + 1] : -s->w[2 * (e - n / 2) + 1];
                re += s->x[2 * j] * wr - s->x[2 * j + 1] * wi;
                im += s->x[2 * j] * wi + s->x[2 * j + 1] * wr;
            }
            double d = fmax(fabs(re - s->y[2 * k]), fabs(im - s->y[2 * k + 1]));
            worst = d > worst ? d : worst;
        }
        work_detail(c, "max_dft_difference", worst);
        if (worst > 1e-6)
            return work_fail(c, "the FFT differs from a direct DFT by %.3g (limit 1e-6)", worst);
    }
    uint64_t h = WORK_FNV_INIT;
    for (size_t i = 0; i < 2 * n; i++)
        h = work_fnv_u64(h, (uint64_t)llround(s->y[i]));
    *checksum = h;
    return 0;
}

static void fft_release(struct work_ctx *c)
{
    struct fft_state *s = c->state;
    if (s) {
        free(s->x);
        free(s->y);
        free(s->z);
        free(s->w);
        free(s->rev);
    }
    free(s);
}

const struct work_kernel work_fft = {
    .name = "fft",
    .description = "radix-2 complex FFT and inverse FFT of seeded integer samples",
    .op = "flop",
    .rate_key = "flops",
    .rate_scale = 1.0,
    .expected = {0xfd47de7443a9199bull, 0x6a7425c8457ef597ull},
    .prepare = fft_prepare,
    .run = fft_run,
    .check = fft_check,
    .release = fft_release,
};
