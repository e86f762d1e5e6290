/*
 * smooth, edges: 2-D image filters on a seeded synthetic 8-bit image.
 *  smooth: Gaussian smoothing by the 3x3 binomial kernel [1 2 1]^T [1 2 1] / 16
 *          and the 5x5 one [1 4 6 4 1]^T [1 4 6 4 1] / 256, direct 2-D
 *          convolution, integer arithmetic, rounded to nearest (+8 >> 4,
 *          +128 >> 8);
 *  edges:  Sobel gradients gx, gy, magnitude floor(sqrt(gx^2 + gy^2))
 *          clamped to 255, and the count of edge pixels (magnitude > 128).
 * Pixels outside the image repeat the nearest border pixel.
 *
 * Input (W x W pixels): a background p(x, y) = (255 x / W + 255 y / W) / 2
 * (integer division); then W / 8 rectangles, each drawn as x0 = below(W),
 * y0 = below(W), w = 1 + below(W / 4), h = 1 + below(W / 4),
 * level = below(256), filled with level (clipped to the image); then for each
 * pixel in row-major order noise below(33) - 16 is added, clamped to 0..255.
 * Everything is integer, so any correct implementation (the tests use numpy)
 * gives the same bytes; floor(sqrt()) of an integer below 2^52 is exact.
 * Checksums: smooth: FNV of the 3x3 output bytes then the 5x5 output bytes;
 * edges: FNV of the magnitude bytes, then of the edge count.
 */
#include "work.h"

#include <math.h>
#include <stdlib.h>

struct img_state {
    size_t w;
    uint8_t *in, *out3, *out5;
    uint64_t edges;
};

static void synth(struct work_rng *r, uint8_t *p, size_t w)
{
    for (size_t y = 0; y < w; y++)
        for (size_t x = 0; x < w; x++)
            p[y * w + x] = (uint8_t)((255 * x / w + 255 * y / w) / 2);
    for (size_t k = 0; k < w / 8; k++) {
        size_t x0 = (size_t)work_rng_below(r, w), y0 = (size_t)work_rng_below(r, w);
        size_t rw = 1 + (size_t)work_rng_below(r, w / 4), rh = 1 + (size_t)work_rng_below(r, w / 4);
        uint8_t level = (uint8_t)work_rng_below(r, 256);
        for (size_t y = y0; y < y0 + rh && y < w; y++)
            for (size_t x = x0; x < x0 + rw && x < w; x++)
                p[y * w + x] = level;
    }
    for (size_t i = 0; i < w * w; i++) {
        int v = p[i] + (int)work_rng_below(r, 33) - 16;
        p[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

static int img_prepare(struct work_ctx *c, size_t w, int outputs)
{
    struct img_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    s->w = w;
    if (!(s->in = work_alloc(c, w * w)) || !(s->out3 = work_alloc(c, w * w)) ||
        (outputs > 1 && !(s->out5 = work_alloc(c, w * w))))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    synth(&r, s->in, w);
    c->ops = w * w;
    work_input(c, "width", w);
    work_input(c, "height", w);
    return 0;
}

static inline size_t clampi(long v, size_t w)
{
    return v < 0 ? 0 : (size_t)v >= w ? w - 1 : (size_t)v;
}

/* Reference for the self-checks: a plain clamped convolution at (x, y)
 * with a k x k kernel (k odd), row-major weights. */
static int conv_at(const uint8_t *in, size_t w, size_t x, size_t y, const int *kern, int k)
{
    int sum = 0, h = k / 2;
    for (int dy = -h; dy <= h; dy++)
        for (int dx = -h; dx <= h; dx++)
            sum += kern[(dy + h) * k + dx + h] * in[clampi((long)y + dy, w) * w + clampi((long)x + dx, w)];
    return sum;
}

/* ---- smooth ---- */

static const size_t smooth_sizes[WORK_NSIZES] = {64, 2048};

static int smooth_prepare(struct work_ctx *c)
{
    return img_prepare(c, smooth_sizes[c->size], 2);
}

static void smooth_run(struct work_ctx *c)
{
    struct img_state *s = c->state;
    static const int k3[3] = {1, 2, 1}, k5[5] = {1, 4, 6, 4, 1};
    size_t w = s->w;
    const uint8_t *in = s->in;
    for (size_t y = 0; y < w; y++) {
        int border = y < 2 || y + 2 >= w;
        for (size_t x = 0; x < w; x++) {
            unsigned a3 = 0, a5 = 0;
            if (border || x < 2 || x + 2 >= w) {
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++)
                        a3 += (unsigned)(k3[dy + 1] * k3[dx + 1]) *
                              in[clampi((long)y + dy, w) * w + clampi((long)x + dx, w)];
                for (int dy = -2; dy <= 2; dy++)
                    for (int dx = -2; dx <= 2; dx++)
                        a5 += (unsigned)(k5[dy + 2] * k5[dx + 2]) *
                              in[clampi((long)y + dy, w) * w + clampi((long)x + dx, w)];
            } else {
                const uint8_t *p = in + y * w + x;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++)
                        a3 += (unsigned)(k3[dy + 1] * k3[dx + 1]) * p[dy * (long)w + dx];
                for (int dy = -2; dy <= 2; dy++)
                    for (int dx = -2; dx <= 2; dx++)
                        a5 += (unsigned)(k5[dy + 2] * k5[dx + 2]) * p[dy * (long)w + dx];
            }
            s->out3[y * w + x] = (uint8_t)((a3 + 8) >> 4);
            s->out5[y * w + x] = (uint8_t)((a5 + 128) >> 8);
        }
    }
}

static int smooth_check(struct work_ctx *c, uint64_t *checksum)
{
    struct img_state *s = c->state;
    size_t n = s->w * s->w;
    /* smoothing cannot leave the input's range */
    uint8_t lo = 255, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = s->in[i] < lo ? s->in[i] : lo;
        hi = s->in[i] > hi ? s->in[i] : hi;
    }
    for (size_t i = 0; i < n; i++)
        if (s->out3[i] < lo || s->out3[i] > hi || s->out5[i] < lo || s->out5[i] > hi)
            return work_fail(c, "smoothed pixel %zu is outside the input's range %u..%u", i, lo, hi);
    if (c->size == WORK_SMALL) {
        static const int g3[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
        static const int b[5] = {1, 4, 6, 4, 1};
        int g5[25];
        for (int i = 0; i < 25; i++)
            g5[i] = b[i / 5] * b[i % 5];
        for (size_t y = 0; y < s->w; y++)
            for (size_t x = 0; x < s->w; x++) {
                int v3 = (conv_at(s->in, s->w, x, y, g3, 3) + 8) >> 4;
                int v5 = (conv_at(s->in, s->w, x, y, g5, 5) + 128) >> 8;
                if (v3 != s->out3[y * s->w + x] || v5 != s->out5[y * s->w + x])
                    return work_fail(c, "pixel (%zu, %zu) is %u / %u, the reference convolution gives %d / %d", x, y,
                                     s->out3[y * s->w + x], s->out5[y * s->w + x], v3, v5);
            }
    }
    uint64_t h = work_fnv_bytes(WORK_FNV_INIT, s->out3, n);
    *checksum = work_fnv_bytes(h, s->out5, n);
    return 0;
}

static void img_release(struct work_ctx *c)
{
    struct img_state *s = c->state;
    if (s) {
        free(s->in);
        free(s->out3);
        free(s->out5);
    }
    free(s);
}

const struct work_kernel work_smooth = {
    .name = "smooth",
    .description = "Gaussian smoothing (3x3 and 5x5 binomial kernels) of a seeded synthetic image",
    .op = "pixel",
    .expected = {0x0dd44188888039fdull, 0x04387cbeab3339e9ull},
    .prepare = smooth_prepare,
    .run = smooth_run,
    .check = smooth_check,
    .release = img_release,
};

/* ---- edges ---- */

static const size_t edge_sizes[WORK_NSIZES] = {64, 4096};

static int edges_prepare(struct work_ctx *c)
{
    return img_prepare(c, edge_sizes[c->size], 1);
}

static void edges_run(struct work_ctx *c)
{
    struct img_state *s = c->state;
    size_t w = s->w;
    const uint8_t *in = s->in;
    uint64_t edges = 0;
    for (size_t y = 0; y < w; y++) {
        const uint8_t *up = in + clampi((long)y - 1, w) * w, *mid = in + y * w, *dn = in + clampi((long)y + 1, w) * w;
        for (size_t x = 0; x < w; x++) {
            size_t l = x ? x - 1 : 0, r = x + 1 < w ? x + 1 : w - 1;
            int gx = (up[r] + 2 * mid[r] + dn[r]) - (up[l] + 2 * mid[l] + dn[l]);
            int gy = (dn[l] + 2 * dn[x] + dn[r]) - (up[l] + 2 * up[x] + up[r]);
            unsigned m = (unsigned)sqrt((double)(gx * gx + gy * gy));
            if (m > 255)
                m = 255;
            s->out3[y * w + x] = (uint8_t)m;
            edges += m > 128;
        }
    }
    s->edges = edges;
}

static int edges_check(struct work_ctx *c, uint64_t *checksum)
{
    struct img_state *s = c->state;
    size_t n = s->w * s->w;
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += s->out3[i] > 128;
    if (count != s->edges)
        return work_fail(c, "the edge count %llu does not match the magnitude image (%llu)",
                         (unsigned long long)s->edges, (unsigned long long)count);
    if (c->size == WORK_SMALL) {
        static const int sx[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1}, sy[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
        for (size_t y = 0; y < s->w; y++)
            for (size_t x = 0; x < s->w; x++) {
                int gx = conv_at(s->in, s->w, x, y, sx, 3), gy = conv_at(s->in, s->w, x, y, sy, 3);
                int m = 0;
                while ((m + 1) * (m + 1) <= gx * gx + gy * gy)
                    m++;
                if ((m > 255 ? 255 : m) != s->out3[y * s->w + x])
                    return work_fail(c, "pixel (%zu, %zu) has magnitude %u, the reference gives %d", x, y,
                                     s->out3[y * s->w + x], m > 255 ? 255 : m);
            }
    }
    work_detail(c, "edge_pixels", (double)count);
    *checksum = work_fnv_u64(work_fnv_bytes(WORK_FNV_INIT, s->out3, n), count);
    return 0;
}

const struct work_kernel work_edges = {
    .name = "edges",
    .description = "Sobel edge detection (gradient magnitude, threshold) of a seeded synthetic image",
    .op = "pixel",
    .expected = {0x17d783652dc0fb7cull, 0x371f22e195845185ull},
    .prepare = edges_prepare,
    .run = edges_run,
    .check = edges_check,
    .release = img_release,
};
