/*
 * qsort: quicksort of strings (our own: median-of-three pivot, Hoare
 * partition, insertion sort for 16 elements or fewer, recursion on the smaller
 * side only) with our own byte-wise comparison (as strcmp: unsigned bytes).
 *
 * Input: N strings; for each, a length 4 + below(13), then that many
 * letters 'a' + below(26). A run sorts a fresh copy of the pointer array.
 * Checks: the result is in order and a permutation of the input.
 * Checksum: FNV over the sorted strings' bytes, each with its NUL.
 */
#include "work.h"

#include <stdlib.h>
#include <string.h>

#define STRIDE 17           /* up to 16 letters and the NUL */

static const size_t sizes[WORK_NSIZES] = {2000, 800000};

struct qs_state {
    size_t n;
    char *pool;
    const char **orig, **work;
    uint8_t *seen;
};

static inline int cmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    return (int)*x - (int)*y;
}

static void insertion(const char **a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const char *v = a[i];
        size_t j = i;
        for (; j > 0 && cmp(a[j - 1], v) > 0; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

#define SWAP(x, y) do { const char *t_ = (x); (x) = (y); (y) = t_; } while (0)

static void quicksort(const char **a, size_t n)
{
    while (n > 16) {
        size_t m = n / 2;
        if (cmp(a[m], a[0]) < 0)
            SWAP(a[m], a[0]);
        if (cmp(a[n - 1], a[0]) < 0)
            SWAP(a[n - 1], a[0]);
        if (cmp(a[n - 1], a[m]) < 0)
            SWAP(a[n - 1], a[m]);
        /* a[0] <= pivot <= a[n-1]: both ends stop the scans below */
        const char *p = a[m];
        size_t i = 0, j = n - 1;
        for (;;) {
            do
                i++;
            while (cmp(a[i], p) < 0);
            do
                j--;
            while (cmp(a[j], p) > 0);
            if (i >= j)
                break;
            SWAP(a[i], a[j]);
        }
        /* a[0..j] <= pivot <= a[j+1..n-1] */
        size_t left = j + 1, right = n - left;
        if (left < right) {
            quicksort(a, left);
            a += left;
            n = right;
        } else {
            quicksort(a + left, right);
            n = left;
        }
    }
    insertion(a, n);
}

static int qs_prepare(struct work_ctx *c)
{
    struct qs_state *s = work_alloc(c, sizeof *s);
    if (!s)
        return -1;
    c->state = s;
    size_t n = s->n = sizes[c->size];
    if (!(s->pool = work_alloc(c, n * STRIDE)) || !(s->orig = work_alloc(c, n * sizeof *s->orig)) ||
        !(s->work = work_alloc(c, n * sizeof *s->work)) || !(s->seen = work_alloc(c, n)))
        return -1;
    struct work_rng r;
    work_rng_init(&r, c->seed);
    for (size_t i = 0; i < n; i++) {
        char *p = s->pool + i * STRIDE;
        size_t len = 4 + (size_t)work_rng_below(&r, 13);
        for (size_t k = 0; k < len; k++)
            p[k] = (char)('a' + work_rng_below(&r, 26));
        p[len] = 0;
        s->orig[i] = p;
    }
    c->ops = n;
    work_input(c, "strings", n);
    return 0;
}

static void qs_run(struct work_ctx *c)
{
    struct qs_state *s = c->state;
    memcpy(s->work, s->orig, s->n * sizeof *s->work);
    quicksort(s->work, s->n);
}

static int qs_check(struct work_ctx *c, uint64_t *checksum)
{
    struct qs_state *s = c->state;
    memset(s->seen, 0, s->n);
    uint64_t h = WORK_FNV_INIT;
    for (size_t i = 0; i < s->n; i++) {
        size_t idx = (size_t)(s->work[i] - s->pool) / STRIDE;
        if (s->work[i] < s->pool || idx >= s->n || s->pool + idx * STRIDE != s->work[i] || s->seen[idx]++)
            return work_fail(c, "the sorted array is not a permutation of the input (position %zu)", i);
        if (i && cmp(s->work[i - 1], s->work[i]) > 0)
            return work_fail(c, "strings %zu and %zu are out of order: '%s' > '%s'", i - 1, i, s->work[i - 1],
                             s->work[i]);
        h = work_fnv_bytes(h, s->work[i], strlen(s->work[i]) + 1);
    }
    *checksum = h;
    return 0;
}

static void qs_release(struct work_ctx *c)
{
    struct qs_state *s = c->state;
    if (s) {
        free(s->pool);
        free(s->orig);
        free(s->work);
        free(s->seen);
    }
    free(s);
}

const struct work_kernel work_qsort = {
    .name = "qsort",
    .description = "quicksort of seeded strings (own quicksort and comparison)",
    .op = "string",
    .expected = {0x5211b9c383868ba5ull, 0xba1c89cf5d688e1aull},
    .prepare = qs_prepare,
    .run = qs_run,
    .check = qs_check,
    .release = qs_release,
};
