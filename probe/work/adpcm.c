/*
 * adpcm: IMA ADPCM (the IMA "Recommended Practices for Enhancing Digital
 * Audio Compatibility" / Intel DVI 4-bit algorithm) encoder and decoder,
 * 16-bit samples -> 4-bit codes, two codes per byte, the first sample in the
 * high nibble, predictor and step index starting at 0. The step-size and
 * index-adjust tables are the normative ones of that standard.
 *
 * Input: N samples, in blocks of 4096; at each block start draw
 * half = 10 + below(100) (half-period of a triangle wave) and
 * amp = below(12000); each sample is tri(n) + below(1001) - 500, clamped to
 * 16 bits, where with t = n % (2 half): tri = -amp + 2 amp t / half for
 * t < half, else amp - 2 amp (t - half) / half (integer division).
 * Checks: the decoder reproduces the encoder's predictor exactly (the
 * property IMA ADPCM is built on) and the signal-to-noise ratio is > 15 dB.
 * Checksum: FNV of the code bytes, then of the decoded samples (2 bytes
 * each, little-endian).
 */
#include "work.h"

#include <math.h>
#include <stdlib.h>

static const size_t sizes[WORK_NSIZES] = {8192, 4 << 20};

static const int8_t index_adjust[16] = {-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8};
static const int16_t step_size[89] = {
    7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45,
    50, 55, 60, 66, 73, 80, 88, 97, 107, 118, 130, 143, 157, 173, 190, 209, 230, 253, 279, 307,
    337, 371, 408, 449, 494, 544, 598, 658, 724, 796, 876, 963, 1060, 1166, 1282, 1411, 1552, 1707, 1878, 2066,
    2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871, 5358, 5894, 6484, 7132, 7845, 8630, 9493, 10442, 11487,
    12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794, 32767,
};

struct adpcm_state {
    size_t n;
    int16_t *pcm, *predicted, *decoded;
    uint8_t *codes;
};

static inline int clamp16(int v)
{
    return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

static void encode(const int16_t *in, size_t n, uint8_t *out, int16_t *predicted)
{
    int pred = 0, index = 0;
    for (size_t i = 0; i < n; i++) {
        int step = step_size[index];
        int diff = in[i] - pred;
        int code = 0;
        if (diff < 0) {
            code = 8;
            diff = -diff;
        }
        int vpdiff = step >> 3;
        if (diff >= step) {
            code |= 4;
            diff -= step;
            vpdiff += step;
        }
        step >>= 1;
        if (diff >= step) {
            code |= 2;
            diff -= step;
            vpdiff += step;
        }
        step >>= 1;
        if (diff >= step) {
            code |= 1;
            vpdiff += step;
        }
        pred = clamp16(code & 8 ? pred - vpdiff : pred + vpdiff);
        predicted[i] = (int16_t)pred;
        index += index_adjust[code];
        index = index < 0 ? 0 : index > 88 ? 88 : index;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(code << 4);
        else
            out[i / 2] |= (uint8_t)code;
    }
}

static void decode(const uint8_t *in, size_t n, int16_t *out)
{
    int pred = 0, index = 0;
    for (size_t i = 0; i < n; i++) {
        int code = i % 2 == 0 ? in[i / 2] >> 4 : in[i / 2] & 15;
        int step = step_size[index];
        int vpdiff = step >> 3;
        if (code & 4)
            vpdiff += step;
        if (code & 2)
            vpdiff += step >> 1;
        if (code & 1)
            vpdiff += step >> 2;
        pred = clamp16(code & 8 ? pred - vpdiff : pred + vpdiff);
        out[i] = (int16_t)pred;
        index += index_adjust[code];
        index = index < 0 ? 0 : index > 88 ? 88 : index;
    }
}

static int adpcm_prepare(struct work_ctx *c)
{
    struct adpcm_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->pcm = work_alloc(c, n * 2)) || !(s->predicted = work_alloc(c, n * 2)) ||
        !(s->decoded = work_alloc(c, n * 2)) || !(s->codes = work_alloc(c, n / 2)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    int64_t half = 1, amp = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 4096 == 0) {
            half = 10 + (int64_t)work_rng_below(&r, 100);
            amp = (int64_t)work_rng_below(&r, 12000);
        }
        int64_t t = (int64_t)(i % (size_t)(2 * half));
        int64_t tri = t < half ? -amp + 2 * amp * t / half : amp - 2 * amp * (t - half) / half;
        int64_t v = tri + (int64_t)work_rng_below(&r, 1001) - 500;
        s->pcm[i] = (int16_t)clamp16((int)v);
    }
    c->ops = n;
    work_input(c, "samples", n);
    return 0;
}

static void adpcm_run(struct work_ctx *c)
{
    struct adpcm_state *s = c->state;
    encode(s->pcm, s->n, s->codes, s->predicted);
    decode(s->codes, s->n, s->decoded);
}

static int adpcm_check(struct work_ctx *c, uint64_t *checksum)
{
    struct adpcm_state *s = c->state;
    double sig = 0, noise = 0;
    uint64_t h = work_fnv_bytes(WORK_FNV_INIT, s->codes, s->n / 2);
    for (size_t i = 0; i < s->n; i++) {
        if (s->decoded[i] != s->predicted[i])
            return work_fail(c, "sample %zu: the decoder gives %d, the encoder predicted %d", i, s->decoded[i],
                             s->predicted[i]);
        double d = (double)s->pcm[i] - (double)s->decoded[i];
        sig += (double)s->pcm[i] * (double)s->pcm[i];
        noise += d * d;
        uint16_t u = (uint16_t)s->decoded[i];
        uint8_t b[2] = {(uint8_t)(u & 0xff), (uint8_t)(u >> 8)};
        h = work_fnv_bytes(h, b, 2);
    }
    double snr = noise > 0 ? 10 * log10(sig / noise) : INFINITY;
    work_detail(c, "snr_db", snr);
    if (!(snr > 15))
        return work_fail(c, "the decoded signal's SNR is %.1f dB (limit 15 dB)", snr);
    *checksum = h;
    return 0;
}

static void adpcm_release(struct work_ctx *c)
{
    struct adpcm_state *s = c->state;
    if (s) {
        free(s->pcm);
        free(s->predicted);
        free(s->decoded);
        free(s->codes);
    }
    free(s);
}

const struct work_kernel work_adpcm = {
    .name = "adpcm",
    .description = "IMA ADPCM encode and decode of a seeded 16-bit signal",
    .op = "sample",
    .expected = {0x3e0eb5c36fecadf6ull, 0x03d07e7376999ad0ull},
    .prepare = adpcm_prepare,
    .run = adpcm_run,
    .check = adpcm_check,
    .release = adpcm_release,
};
