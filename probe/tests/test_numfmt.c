/*
 * Unit tests of the core's own number formatting and square root against
 * libc's: fmt_double must print what printf's "%.10g" prints and core_sqrt
 * return what libm's sqrt returns, bit for bit, for the values records hold
 * (latencies, means, rates), for exact ties at the tenth digit, for the
 * extremes of the double range and for random bit patterns.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core_sqrt.h"
#include "numfmt.h"
#include "xorshift.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) { return xorshift64s(&rng_state); }

static double from_bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static void check_double(double v)
{
    char want[64], got[NUMFMT_DOUBLE_MAX];
    snprintf(want, sizeof want, "%.10g", v);
    size_t n = fmt_double(got, v);
    CHECK(strcmp(want, got) == 0 && n == strlen(want), "%a: printf %s, fmt_double %s", v, want, got);
}

static void check_sqrt(double v)
{
    double want = sqrt(v), got = core_sqrt(v);
    CHECK(memcmp(&want, &got, sizeof want) == 0 || (isnan(want) && isnan(got)), "sqrt(%a): libm %a, core_sqrt %a", v,
          want, got);
}

int main(void)
{
    static const double fixed[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.0001, 0.00001, 0.000123456789012, 1e-5, 9.9999999995e-5,
        123456.5, 1234567890.5, 9999999999.5, 99999999995.0, 12345678905.0, 12345678915.0, 1e10, 1e9,
        9999999999.0, 1e15, 1e21, 1e22, 1e100, 1e300, 1e-300, 5e-324, 2.2250738585072014e-308,
        DBL_MAX, DBL_MIN, DBL_EPSILON, 1.0 / 3.0, 2.0 / 3.0, 15234.56, 1e6 / 7.0, 3.14159265358979,
        0.30000000000000004, 1000.0000000005, 1000.0000000015, 18446744073709551616.0,
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        check_double(fixed[i]);
        check_double(-fixed[i]);
        check_sqrt(fixed[i]);
    }
    check_sqrt(-1.0);
    check_sqrt(INFINITY);
    check_sqrt(NAN);
    /* Every power of ten and of two the type holds, and their neighbours. */
    for (int e = -323; e <= 308; e++) {
        char lit[16];
        snprintf(lit, sizeof lit, "1e%d", e);
        double p = strtod(lit, NULL);
        check_double(p);
        check_double(nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
    }
    for (int e = -1074; e <= 1023; e++) {
        check_double(ldexp(1.0, e));
        check_sqrt(ldexp(1.0, e));
        check_sqrt(nextafter(ldexp(1.0, e), INFINITY));
    }
    /* Figures of the kind records hold: ns latencies, their means and
     * standard deviations, and ratios. */
    for (int i = 0; i < 200000; i++) {
        uint64_t r = rnd();
        double mean = (double)(r % 100000000) / (double)(1 + (r >> 40) % 100000);
        check_double(mean);
        check_sqrt(mean);
        check_sqrt(mean * mean + (double)(r & 1023));
    }
    /* Any finite bit pattern. */
    for (int i = 0; i < 200000; i++) {
        double v = from_bits(rnd());
        if (!isfinite(v))
            continue;
        check_double(v);
        check_sqrt(fabs(v));
    }

    char b[NUMFMT_INT_MAX], want[32];
    static const int64_t ints[] = {0, 1, -1, 9, 10, -10, 1234567890123, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        fmt_int(b, ints[i]);
        snprintf(want, sizeof want, "%" PRId64, ints[i]);
        CHECK(strcmp(b, want) == 0, "fmt_int: %s, want %s", b, want);
    }
    for (int i = 0; i < 10000; i++) {
        uint64_t v = rnd() >> (rnd() % 64);
        fmt_uint(b, v);
        snprintf(want, sizeof want, "%" PRIu64, v);
        CHECK(strcmp(b, want) == 0, "fmt_uint: %s, want %s", b, want);
    }
    fmt_uint(b, UINT64_MAX);
    CHECK(strcmp(b, "18446744073709551615") == 0, "fmt_uint(UINT64_MAX): %s", b);
    return check_verdict("test_numfmt");
}
