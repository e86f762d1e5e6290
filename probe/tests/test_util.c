/*
 * Unit tests of the probe's parsing helpers and JSON writer: malformed input
 * must be rejected, not half-accepted, and every string must come out as
 * valid JSON.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jsonw.h"
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
    test_lists();
    test_json_writer();
    return check_verdict("test_util");
}
