#include "parse.h"

int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int parse_scaled(const char *s, uint64_t scale, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t whole = 0, frac = 0, den = 1;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        s++;
        for (; *s >= '0' && *s <= '9'; s++, digits++)
            if (den < 1000000000u) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                den *= 10;
            }
    }
    if (*s || !digits || (scale && whole > UINT64_MAX / scale))
        return -1;
    /* frac < 10^9 and scale <= 10^9 for every option: no overflow. */
    uint64_t v = whole * scale + (frac * scale + den / 2) / den;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_size(const char *s, uint64_t max, uint64_t *out)
{
    char digits[24];
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9' && n + 1 < sizeof digits) {
        digits[n] = s[n];
        n++;
    }
    digits[n] = '\0';
    unsigned shift = 0;
    if (s[n] == 'K' || s[n] == 'M' || s[n] == 'G')
        shift = s[n] == 'K' ? 10 : s[n] == 'M' ? 20 : 30;
    if (s[n + (shift != 0)] != '\0')
        return -1;
    uint64_t v;
    if (parse_u64(digits, max >> shift, &v) || !v)
        return -1;
    *out = v << shift;
    return 0;
}

int parse_size_list(const char *s, uint64_t max, uint64_t *out, int max_n)
{
    char item[24];
    int count = 0;
    for (;;) {
        size_t n = 0;
        while (*s && *s != ',') {
            if (n + 1 >= sizeof item)
                return -1;
            item[n++] = *s++;
        }
        item[n] = '\0';
        if (count == max_n || parse_size(item, max, &out[count]))
            return -1;
        count++;
        if (!*s++)
            return count;
    }
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hex_decode(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    if (s[0] == '-' && !s[1]) {
        out[0] = '\0';
        return 0;
    }
    if (!*s)
        return -1;
    for (; *s; s += 2) {
        int hi = hex_digit(s[0]), lo = hi < 0 || !s[1] ? -1 : hex_digit(s[1]);
        if (lo < 0 || n + 1 >= cap || (hi == 0 && lo == 0))
            return -1;
        out[n++] = (char)(hi * 16 + lo);
    }
    out[n] = '\0';
    return 0;
}
