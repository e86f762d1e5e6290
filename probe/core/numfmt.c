#include "numfmt.h"

#define SIG_DIGITS 10

size_t fmt_uint(char *buf, uint64_t v)
{
    char rev[NUMFMT_INT_MAX];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = rev[n - 1 - i];
    buf[n] = '\0';
    return n;
}

size_t fmt_int(char *buf, int64_t v)
{
    if (v >= 0)
        return fmt_uint(buf, (uint64_t)v);
    buf[0] = '-';
    /* Negated in unsigned arithmetic: -INT64_MIN does not fit an int64_t. */
    return 1 + fmt_uint(buf + 1, (uint64_t)0 - (uint64_t)v);
}

/*
 * The exact decimal expansion of a double, as a big number in base 10^9
 * (least significant limb first). A double is m * 2^e with m < 2^53; for
 * e < 0 it equals m * 5^-e / 10^-e, so its digits are those of the integer
 * m * 5^-e: at most 767 digits for the smallest subnormal.
 */
#define LIMB_BASE 1000000000u
#define MAX_LIMBS 128

struct big {
    uint32_t limb[MAX_LIMBS];
    unsigned n;
};

static void big_mul_small(struct big *b, uint32_t f)
{
    uint64_t carry = 0;
    for (unsigned i = 0; i < b->n; i++) {
        uint64_t x = (uint64_t)b->limb[i] * f + carry;
        b->limb[i] = (uint32_t)(x % LIMB_BASE);
        carry = x / LIMB_BASE;
    }
    while (carry) {
        b->limb[b->n++] = (uint32_t)(carry % LIMB_BASE);
        carry /= LIMB_BASE;
    }
}

/* Decimal digits of b, most significant first, trailing zeros dropped;
 * returns how many there are before dropping (the integer's length). */
static unsigned big_digits(const struct big *b, char *digits, unsigned *kept)
{
    unsigned len = 0;
    for (unsigned i = b->n; i-- > 0;) {
        uint32_t v = b->limb[i];
        char group[9];
        for (int k = 8; k >= 0; k--) {
            group[k] = (char)('0' + v % 10);
            v /= 10;
        }
        int k = 0;
        if (i == b->n - 1)
            while (k < 8 && group[k] == '0')
                k++;
        for (; k < 9; k++)
            digits[len++] = group[k];
    }
    unsigned n = len;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    *kept = n;
    return len;
}

/* Rounds digits[0..*n) to at most SIG_DIGITS, half to even on the exact
 * value; a carry out of the first digit raises the decimal exponent. */
static void round_digits(char *digits, unsigned *n, int *dexp)
{
    if (*n <= SIG_DIGITS)
        return;
    char next = digits[SIG_DIGITS];
    int up = next > '5' || (next == '5' && (*n > SIG_DIGITS + 1 || (digits[SIG_DIGITS - 1] - '0') % 2));
    *n = SIG_DIGITS;
    if (up) {
        int i = SIG_DIGITS - 1;
        while (i >= 0 && digits[i] == '9')
            digits[i--] = '0';
        if (i >= 0) {
            digits[i]++;
        } else {
            digits[0] = '1';
            (*dexp)++;
        }
    }
    while (*n > 1 && digits[*n - 1] == '0')
        (*n)--;
}

static size_t put_exponent(char *p, int x)
{
    size_t k = 0;
    p[k++] = 'e';
    p[k++] = x < 0 ? '-' : '+';
    unsigned ax = (unsigned)(x < 0 ? -x : x);
    if (ax < 10)
        p[k++] = '0';
    char tmp[NUMFMT_INT_MAX];
    size_t t = fmt_uint(tmp, ax);
    for (size_t i = 0; i < t; i++)
        p[k++] = tmp[i];
    return k;
}

size_t fmt_double(char *buf, double v)
{
    uint64_t bits;
    __builtin_memcpy(&bits, &v, sizeof bits);
    size_t k = 0;
    if (bits >> 63)
        buf[k++] = '-';
    unsigned bexp = (unsigned)(bits >> 52) & 0x7ff;
    uint64_t m = bits & ((1ull << 52) - 1);
    if (bexp == 0 && m == 0) {
        buf[k++] = '0';
        buf[k] = '\0';
        return k;
    }
    int e;
    if (bexp == 0) {
        e = -1074;
    } else {
        m |= 1ull << 52;
        e = (int)bexp - 1075;
    }

    struct big b = {.n = 0};
    while (m) {
        b.limb[b.n++] = (uint32_t)(m % LIMB_BASE);
        m /= LIMB_BASE;
    }
    /* Factors of at most 2^29 and 5^13 keep a limb times a factor within 64 bits. */
    for (int left = e; left > 0; left -= 29)
        big_mul_small(&b, 1u << (left < 29 ? left : 29));
    for (int left = -e; left > 0; left -= 13) {
        uint32_t f = 1;
        for (int i = 0; i < (left < 13 ? left : 13); i++)
            f *= 5;
        big_mul_small(&b, f);
    }
    char digits[MAX_LIMBS * 9];
    unsigned n;
    unsigned len = big_digits(&b, digits, &n);
    /* value = 0.d1d2... * 10^dexp */
    int dexp = (int)len + (e < 0 ? e : 0);
    round_digits(digits, &n, &dexp);

    int x = dexp - 1;   /* the exponent %e would print */
    if (x < -4 || x >= SIG_DIGITS) {
        buf[k++] = digits[0];
        if (n > 1) {
            buf[k++] = '.';
            for (unsigned i = 1; i < n; i++)
                buf[k++] = digits[i];
        }
        k += put_exponent(buf + k, x);
    } else if (x >= 0) {
        for (int i = 0; i <= x; i++)
            buf[k++] = (unsigned)i < n ? digits[i] : '0';
        if (n > (unsigned)x + 1) {
            buf[k++] = '.';
            for (unsigned i = (unsigned)x + 1; i < n; i++)
                buf[k++] = digits[i];
        }
    } else {
        buf[k++] = '0';
        buf[k++] = '.';
        for (int i = 0; i < -x - 1; i++)
            buf[k++] = '0';
        for (unsigned i = 0; i < n; i++)
            buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return k;
}
