/*
 * Unit tests of the probe's parsing helpers and JSON writer: malformed input
 * must be rejected, not half-accepted, and every string must come out as
 * valid JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jsonw_fd.h"
#include "probe.h"


static void test_cpu_list(void)
{
    int c[64];
    int n = parse_cpu_list("0-3,6,2", c, 64);
    CHECK(n == 5 && c[0] == 0 && c[3] == 3 && c[4] == 6, "0-3,6,2 -> %d cpus", n);
    CHECK(parse_cpu_list("", c, 64) == -1, "empty list accepted");
    CHECK(parse_cpu_list("3-1", c, 64) == -1, "reversed range accepted");
    CHECK(parse_cpu_list("1,x", c, 64) == -1, "garbage accepted");
    CHECK(parse_cpu_list("-1", c, 64) == -1, "negative accepted");
    CHECK(parse_cpu_list("0-100", c, 8) == -1, "overlong list accepted");
}

static void test_numbers(void)
{
    uint64_t u;
    double d;
    CHECK(parse_u64("42", 1, 100, &u) == 0 && u == 42, "42");
    CHECK(parse_u64("42x", 1, 100, &u) == -1, "trailing garbage accepted");
    CHECK(parse_u64("-1", 0, 100, &u) == -1, "negative accepted");
    CHECK(parse_u64("101", 1, 100, &u) == -1, "out of range accepted");
    CHECK(parse_double("0.5", 0.01, 1, &d) == 0 && d == 0.5, "0.5");
    CHECK(parse_double("nan", 0, 1, &d) == -1, "nan accepted");
    CHECK(parse_double("", 0, 1, &d) == -1, "empty accepted");
    CHECK(parse_u64(" 5", 0, 9, &u) == -1 && parse_u64("+5", 0, 9, &u) == -1, "sloppy integer accepted");
    CHECK(parse_double(" 1", 0, 9, &d) == -1 && parse_double("0x1p0", 0, 9, &d) == -1 &&
          parse_double("inf", 0, INFINITY, &d) == -1, "sloppy number accepted");
    CHECK(parse_size("1.5M", 0, 1ull << 30, &u) == 0 && u == 1572864, "1.5M");
    CHECK(parse_size("1.3K", 0, 1ull << 30, &u) == -1, "fractional bytes accepted");
}

/* parse_double against strtod: equal bits wherever the notes in util.c say
 * the result is correctly rounded (up to 15 digits, powers within 1e22), and
 * within a few units in the last place elsewhere. */
static void test_decimal_vs_strtod(void)
{
    static const char *const exact[] = {
        "0", "-0", "0.0", ".5", "5.", "1", "0.1", "0.2", "0.3", "1.1", "2.675", "123456789012345",
        "0.000001", "1e-3", "1E3", "1e+22", "99.9999999999999", "12.5e-10", "3.14159265358979",
        "1.50000000000000000000", "000000000000000000000123.25", "0.000000000000000000000000001e27",
        "9007199254740991", "1e-22", "1e30", "4e-30",
    };
    char buf[64];
    double d;
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        double want = strtod(exact[i], NULL);
        CHECK(parse_double(exact[i], -INFINITY, INFINITY, &d) == 0 && memcmp(&d, &want, sizeof d) == 0,
              "%s: %.17g, strtod %.17g", exact[i], d, want);
    }
    /* Random values of 1 to 15 significant digits with a point anywhere and
     * an exponent keeping the power within 1e22: bit for bit. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int nd = 1 + (int)(x % 15), point = (int)((x >> 8) % (unsigned)(nd + 1)), ex = (int)((x >> 16) % 15) - 7;
        uint64_t y = x >> 20;
        size_t n = 0;
        if (x >> 63)
            buf[n++] = '-';
        for (int k = 0; k < nd; k++) {
            if (k == point)
                buf[n++] = '.';
            buf[n++] = (char)('0' + y % 10);
            y /= 10;
        }
        if (point == nd)
            buf[n++] = '.';
        snprintf(buf + n, sizeof buf - n, "e%d", ex);
        double want = strtod(buf, NULL);
        if (parse_double(buf, -INFINITY, INFINITY, &d) || memcmp(&d, &want, sizeof d)) {
            if (bad++ < 5)
                CHECK(0, "%s: %.17g, strtod %.17g", buf, d, want);
        }
    }
    CHECK(bad == 0, "%d random decimals differ from strtod", bad);
    /* Long digit strings and far powers: within 4 ulps. */
    static const char *const near[] = {"0.12345678901234567890123", "1e300", "2.5e-300",
                                       "98765432109876543210987654321", "1.0000000000000002220446",
                                       "9.999999999999999", "4503599627370495.5", "1.7976931348623157e308",
                                       "0.30000000000000004", "2.2250738585072014e-308"};
    for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
        double want = strtod(near[i], NULL);
        CHECK(parse_double(near[i], -INFINITY, INFINITY, &d) == 0 && fabs(d - want) <= 4 * fabs(want) * 0x1p-52,
              "%s: %.17g, strtod %.17g", near[i], d, want);
    }
}

static void test_decimal_malformed(void)
{
    static const char *const bad[] = {
        "", "-", ".", "-.", "e5", "1e", "1e+", "1e-", "1.2.3", "1,5", "1 ", " 1", "+1", "--1", "0x10", "inf",
        "nan", "1e400", "-1e400", "1e-400", "1e99999999999999999999999", "1e-99999999999999999999999", "1f",
        "4.9e-324", "123456789e-320", "1.8e308",
    };
    double d = 7;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(parse_double(bad[i], -INFINITY, INFINITY, &d) == -1, "'%s' accepted as %g", bad[i], d);
    CHECK(parse_double("0e99999999999999999999", -1, 1, &d) == 0 && d == 0, "zero with a huge exponent");
    CHECK(parse_double("1.5", 0, 1, &d) == -1 && parse_double("-0.5", 0, 1, &d) == -1, "out of range accepted");
    uint64_t u;
    CHECK(parse_size("1.", 0, 9, &u) == 0 && u == 1, "1.");
    CHECK(parse_size("2.5k", 0, 1 << 20, &u) == 0 && u == 2560, "2.5k");
    CHECK(parse_size("0.5G", 0, 1ull << 40, &u) == 0 && u == 1ull << 29, "0.5G");
    CHECK(parse_size(".5K", 0, 9999, &u) == -1 && parse_size("1e3", 0, 9999, &u) == -1 &&
          parse_size("1E3", 0, 9999, &u) == -1 && parse_size("1KB", 0, 9999, &u) == -1 &&
          parse_size("-1", 0, 9999, &u) == -1 && parse_size("1 K", 0, 9999, &u) == -1 &&
          parse_size("0x10", 0, 9999, &u) == -1 && parse_size("1e", 0, 9999, &u) == -1 &&
          parse_size("1p", 0, 9999, &u) == -1 && parse_size("99999999999999999999999G", 0, ~0ull, &u) == -1,
          "malformed size accepted");
}

static void test_scan_fields(void)
{
    const char *p = "  12\t345 -6 ff-1A x";
    uint64_t u, h;
    int64_t i;
    CHECK(scan_u64(&p, &u) == 0 && u == 12 && scan_u64(&p, &u) == 0 && u == 345, "two decimals");
    CHECK(scan_u64(&p, &u) == -1 && scan_i64(&p, &i) == 0 && i == -6, "a signed decimal");
    CHECK(scan_x64(&p, &h) == 0 && h == 0xff && *p == '-', "hex stops at the dash");
    p++;
    CHECK(scan_x64(&p, &h) == 0 && h == 0x1a && scan_x64(&p, &h) == -1 && scan_u64(&p, &u) == -1 && *p == ' ',
          "no field leaves the position");
    p = "18446744073709551615 18446744073709551616";
    CHECK(scan_u64(&p, &u) == 0 && u == UINT64_MAX && scan_u64(&p, &u) == -1, "u64 overflow");
    p = "9223372036854775807 -9223372036854775808 9223372036854775808 -9223372036854775809 - 5";
    CHECK(scan_i64(&p, &i) == 0 && i == INT64_MAX && scan_i64(&p, &i) == 0 && i == INT64_MIN, "i64 limits");
    CHECK(scan_i64(&p, &i) == -1, "i64 overflow");
    p = " -9223372036854775809";
    CHECK(scan_i64(&p, &i) == -1, "i64 underflow");
    p = " - 5";
    CHECK(scan_i64(&p, &i) == -1, "a detached sign read");
    p = "ffffffffffffffff 10000000000000000";
    CHECK(scan_x64(&p, &h) == 0 && h == UINT64_MAX && scan_x64(&p, &h) == -1, "hex overflow");
    p = "";
    CHECK(scan_u64(&p, &u) == -1 && scan_x64(&p, &h) == -1 && scan_i64(&p, &i) == -1, "empty text");
    double d;
    p = " 99.87 1e3 x";
    CHECK(scan_double(&p, &d) == 0 && d == 99.87 && scan_double(&p, &d) == 0 && d == 1000 &&
          scan_double(&p, &d) == -1, "decimals");
    char w[4];
    p = "  abc abcd\nef";
    CHECK(scan_word(&p, w, sizeof w) == 0 && !strcmp(w, "abc"), "a word");
    CHECK(scan_word(&p, w, sizeof w) == -1 && scan_word(&p, NULL, 0) == 0 && scan_word(&p, w, sizeof w) == 0 &&
          !strcmp(w, "ef") && scan_word(&p, w, sizeof w) == -1 && scan_word(&p, NULL, 0) == -1,
          "an overlong word, a skipped one, the end");
}

/* utc_time against gmtime_r, from before 1900 to past 2400. */
static void test_utc_time(void)
{
    uint64_t x = 12345;
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t t = (int64_t)(x % 28000000000ull) - 4000000000ll;   /* 1843 to 2857 */
        if (i < 4)
            t = (int64_t[]){0, -1, 951782400, 4107542399}[i];    /* 1970, 1969, 2000-02-29, 2100-02-28 */
        struct tm a, b;
        time_t tt = (time_t)t;
        if (sizeof(time_t) < 8 && (t < INT32_MIN || t > INT32_MAX))
            continue;
        utc_time(t, &a);
        gmtime_r(&tt, &b);
        if (a.tm_year != b.tm_year || a.tm_mon != b.tm_mon || a.tm_mday != b.tm_mday || a.tm_hour != b.tm_hour ||
            a.tm_min != b.tm_min || a.tm_sec != b.tm_sec || a.tm_wday != b.tm_wday || a.tm_yday != b.tm_yday) {
            if (bad++ < 5)
                CHECK(0, "%lld: %d-%d-%d %d:%d:%d wday %d yday %d, gmtime_r %d-%d-%d %d:%d:%d wday %d yday %d",
                      (long long)t, a.tm_year, a.tm_mon, a.tm_mday, a.tm_hour, a.tm_min, a.tm_sec, a.tm_wday,
                      a.tm_yday, b.tm_year, b.tm_mon, b.tm_mday, b.tm_hour, b.tm_min, b.tm_sec, b.tm_wday, b.tm_yday);
        }
    }
    CHECK(bad == 0, "%d times differ from gmtime_r", bad);
}

static void test_lists(void)
{
    static const char *const names[] = {"a", "b", "c"};
    uint64_t v[3];
    unsigned mask;
    CHECK(parse_size_list("4k,1,2", 0, 8192, v, 3) == 3 && v[0] == 4096 && v[2] == 2, "4k,1,2");
    CHECK(parse_size_list("1,2,3,4", 0, 9, v, 3) == -1, "overlong list accepted");
    CHECK(parse_size_list("1,", 0, 9, v, 3) == -1 && parse_size_list("", 0, 9, v, 3) == -1, "empty item accepted");
    CHECK(parse_names("c,a", names, 3, &mask) == 0 && mask == 5, "c,a");
    CHECK(parse_names("a,d", names, 3, &mask) == -1 && parse_names("", names, 3, &mask) == -1, "bad names accepted");
}

static void test_json_writer(void)
{
    int fds[2];
    char buf[512] = "";
    if (pipe(fds) != 0)
        return;
    jw_set_output_fd(fds[1]);
    struct jw w = {0};
    jw_record(&w, "t");
    jw_str(&w, "s", "a\"b\\c\n\x01");
    jw_arr(&w, "a");
    jw_int(&w, NULL, -5);
    jw_double(&w, NULL, 0.0 / 0.0);
    jw_end(&w);
    jw_obj(&w, "o");
    jw_bool(&w, "t", 1);
    jw_emit(&w);   /* closes the open object itself */
    jw_free(&w);
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    jw_set_output_fd(1);
    const char *want = "{\"type\":\"t\",\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"a\":[-5,null],\"o\":{\"t\":true}}\n";
    CHECK(strcmp(buf, want) == 0, "json writer wrote %s", buf);
}

int main(void)
{
    test_cpu_list();
    test_numbers();
    test_decimal_vs_strtod();
    test_decimal_malformed();
    test_scan_fields();
    test_utc_time();
    test_lists();
    test_json_writer();
    return check_verdict("test_util");
}
