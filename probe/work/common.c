/* Helpers shared by the work kernels (see work.h). */
#include "work.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void work_rng_bytes(struct work_rng *r, uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint64_t v = work_rng_next(r);
        for (int k = 0; k < 8 && i < n; k++, v >>= 8)
            p[i++] = (uint8_t)v;
    }
}

void work_input(struct work_ctx *c, const char *key, uint64_t value)
{
    if (c->ninput < WORK_MAX_INPUT) {
        c->input[c->ninput].key = key;
        c->input[c->ninput].value = value;
        c->ninput++;
    }
}

void work_detail(struct work_ctx *c, const char *key, double value)
{
    for (int i = 0; i < c->ndetail; i++)
        if (!strcmp(c->detail[i].key, key)) {
            c->detail[i].value = value;
            return;
        }
    if (c->ndetail < WORK_MAX_DETAIL) {
        c->detail[c->ndetail].key = key;
        c->detail[c->ndetail].value = value;
        c->ndetail++;
    }
}

int work_fail(struct work_ctx *c, const char *fmt, ...)
{
    if (!c->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->error, sizeof c->error, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void *work_alloc(struct work_ctx *c, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        work_fail(c, "out of memory allocating %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

/* Taylor series on [0, pi/4], nested Horner form, a fixed number of terms
 * (the 25th-order term is below 1e-27 there). */
static void sincos_octant(double phi, double *s, double *c)
{
    double x2 = phi * phi;
    double sv = 1.0, cv = 1.0;
    for (int i = 12; i >= 1; i--) {
        sv = 1.0 - x2 / (double)((2 * i) * (2 * i + 1)) * sv;
        cv = 1.0 - x2 / (double)((2 * i - 1) * (2 * i)) * cv;
    }
    *s = phi * sv;
    *c = cv;
}

void work_sincos_turn(uint64_t k, uint64_t n, double *s, double *c)
{
    const double two_pi = 6.283185307179586476925286766559;
    uint64_t quarter = n / 4, eighth = n / 8;
    uint64_t q = (k / quarter) % 4, j = k % quarter;
    double s0, c0;
    if (j <= eighth) {
        sincos_octant(two_pi * (double)j / (double)n, &s0, &c0);
    } else {
        /* sin(pi/2 - a) = cos(a) */
        sincos_octant(two_pi * (double)(quarter - j) / (double)n, &c0, &s0);
    }
    switch (q) {            /* add q quarter turns */
    case 0: *s = s0; *c = c0; break;
    case 1: *s = c0; *c = -s0; break;
    case 2: *s = -s0; *c = -c0; break;
    default: *s = -c0; *c = s0; break;
    }
}
