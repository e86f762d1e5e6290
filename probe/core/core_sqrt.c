#include "core_sqrt.h"

#include <stdint.h>

/* floor(sqrt(m * 2^64)) by the digit-by-digit method, two bits of the
 * radicand at a time, in 64-bit arithmetic (32-bit targets have no 128-bit
 * integers): the root has 59 bits and the partial remainder never more than
 * 62. *inexact says whether the root's square falls short of the radicand. */
static uint64_t isqrt_shifted(uint64_t m, int *inexact)
{
    uint64_t root = 0, rem = 0;
    for (int pair = 58; pair >= 0; pair--) {
        unsigned pos = 2u * (unsigned)pair;
        uint64_t two = pos >= 64 ? (m >> (pos - 64)) & 3 : 0;
        rem = (rem << 2) | two;
        uint64_t trial = (root << 2) | 1;
        root <<= 1;
        if (rem >= trial) {
            rem -= trial;
            root |= 1;
        }
    }
    *inexact = rem != 0;
    return root;
}

double core_sqrt(double x)
{
    if (x != x || x == 0 || x == __builtin_inf())
        return x;   /* NaN, +-0 and +inf are their own roots */
    if (x < 0)
        return __builtin_nan("");
    uint64_t bits;
    __builtin_memcpy(&bits, &x, sizeof bits);
    unsigned bexp = (unsigned)(bits >> 52) & 0x7ff;
    uint64_t m = bits & ((1ull << 52) - 1);
    int e;
    if (bexp == 0) {
        e = -1074;
        while (!(m >> 52)) {   /* subnormal: normalise */
            m <<= 1;
            e--;
        }
    } else {
        m |= 1ull << 52;
        e = (int)bexp - 1075;
    }
    if (e & 1) {   /* an even exponent halves exactly */
        m <<= 1;
        e--;
    }
    /* x = m * 2^e with m in [2^52, 2^54): the root of m * 2^64 has 59 bits,
     * six below the 53 kept to round by, and the remainder says if any
     * bit beyond them is set. */
    int inexact;
    uint64_t r = isqrt_shifted(m, &inexact);
    int rexp = (e - 64) / 2 + 6;
    uint64_t low = r & 63;
    r >>= 6;
    int sticky = inexact || (low & 31) != 0;
    if ((low >> 5) && (sticky || (r & 1)))
        r++;
    if (r >> 53) {
        r >>= 1;
        rexp++;
    }
    uint64_t out = ((uint64_t)(rexp + 1075) << 52) | (r & ((1ull << 52) - 1));
    double y;
    __builtin_memcpy(&y, &out, sizeof y);
    return y;
}
