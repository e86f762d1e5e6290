/*
 * Unit tests of the option tables (opts.c): every kind stores what it
 * should, refuses what it should with one sentence naming the option and
 * what it accepts, and --help shows every option of the table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opts.h"
#include "probe.h"

static char out[16384];   /* stdout and stderr of the last parse */

/* opts_parse on the NULL-terminated arguments, its output captured in out[]. */
static int parse(struct opt *t, ...)
{
    char *argv[32] = {"test"};
    int argc = 1;
    va_list ap;
    va_start(ap, t);
    for (char *a; argc < 31 && (a = va_arg(ap, char *)); )
        argv[argc++] = a;
    va_end(ap);

    fflush(stdout);
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(tmp), 1);
    dup2(fileno(tmp), 2);
    int rc = opts_parse("test", t, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    rewind(tmp);
    size_t n = fread(out, 1, sizeof out - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return rc;
}

/* A usage error: exit code 2 and exactly one line on stderr holding `text`. */
static int usage_with(int rc, const char *text)
{
    return rc == EXIT_USAGE && strstr(out, text) && strchr(out, '\n') == out + strlen(out) - 1;
}

static const char *const colours[] = {"red", "green", "blue"};
static const int colour_values[] = {10, 20, 30};

struct fields {
    int flag, small, colour, nice, ncpus, nsizes;
    unsigned mask;
    uint64_t big, ns, size, seed;
    double ratio;
    const char *name;
    int cpus[8];
    uint64_t sizes[4];
    int odd;
};

static int parse_odd(const struct opt *o, const char *arg)
{
    uint64_t u;
    if (!strcmp(arg, "loud"))
        return usage_error("test", "--odd will not take 'loud'.");
    if (parse_u64(arg, 0, 99, &u) || u % 2 == 0)
        return -1;
    *(int *)o->field = (int)u;
    return 0;
}

#define TABLE(f)                                                                                        \
    struct opt t[] = {                                                                                  \
        {OPT_F("flag", &(f).flag, 7, "a flag")},                                                        \
        {OPT_I("small", &(f).small, 1, 100, "N", "an int")},                                            \
        {OPT_I("nice", &(f).nice, -20, 19, "N", "a signed int")},                                       \
        {OPT_I("big", &(f).big, 0, UINT64_MAX, "N", "a 64-bit int")},                                   \
        {OPT_I("interval-us", &(f).seed, 1, 1000, "N", "scaled int"), .scale = 1000},                   \
        {OPT_D("ratio", &(f).ratio, 0.5, 2, NULL, "X", "a double")},                                    \
        {OPT_NS("duration-s", &(f).ns, 1e9, 0.01, 1e7, "seconds", "S", "scaled\nsecond line"),          \
         .zero_ok = 1},                                                                                 \
        {OPT_SZ("buffer", &(f).size, 4096, 1ull << 30, "a size")},                                      \
        {OPT_SZ_LIST("sizes", (f).sizes, &(f).nsizes, 16, 1 << 20, "sizes")},                           \
        {OPT_S("name", &(f).name, "S", "a string")},                                                    \
        {OPT_E("colour", &(f).colour, colours, colour_values, 3, "an enum")},                           \
        {OPT_L("colours", &(f).mask, colours, 3, "a list")},                                            \
        {OPT_CPU_LIST("cpus", (f).cpus, &(f).ncpus, "CPUs")},                                           \
        {OPT_C("odd", parse_odd, &(f).odd, "N", "an odd number below 100", "custom")},                  \
        {OPT_I("hidden", &(f).small, 1, 2, "N", NULL)},                                                 \
        {OPT_TEXT("A closing note.")},                                                                  \
        {OPTS_END},                                                                                     \
    }

static void test_kinds_store(void)
{
    struct fields f = {0};
    int cpu;
    char cpuarg[16];
    if (allowed_cpus(&cpu, 1) != 1)
        cpu = 0;
    snprintf(cpuarg, sizeof cpuarg, "%d", cpu);
    TABLE(f);
    int rc = parse(t, "--flag", "--small", "42", "--nice=-20", "--big", "18446744073709551615", "--interval-us",
                   "250", "--ratio", "1.5", "--duration-s", "0.25", "--buffer", "1.5M", "--sizes", "64k,16,1K",
                   "--name", "-x", "--colour", "blue", "--colours", "blue,red", "--cpus", cpuarg, "--odd", "7", NULL);
    CHECK(rc == 0, "valid options refused: %s", out);
    CHECK(f.flag == 7 && f.small == 42 && f.nice == -20 && f.big == UINT64_MAX, "flag/int/negative/u64");
    CHECK(f.seed == 250000, "scaled int: %llu", (unsigned long long)f.seed);
    CHECK(f.ratio == 1.5 && f.ns == 250000000ull, "double %g, scaled %llu", f.ratio, (unsigned long long)f.ns);
    CHECK(f.size == 1572864, "size %llu", (unsigned long long)f.size);
    CHECK(f.nsizes == 3 && f.sizes[0] == 65536 && f.sizes[1] == 16 && f.sizes[2] == 1024, "size list in order");
    CHECK(f.name && !strcmp(f.name, "-x"), "a string argument may start with '-'");
    CHECK(f.colour == 30 && f.mask == 5, "enum %d, list mask %u", f.colour, f.mask);
    CHECK(f.ncpus == 1 && f.cpus[0] == cpu, "cpu list");
    CHECK(f.odd == 7, "custom");
    CHECK(opts_seen(t, "small") == 1 && opts_seen(t, "ratio") == 1 && opts_seen(t, "hidden") == 0, "seen");

    rc = parse(t, "--duration-s", "0", "--inter", "3", "--small", "1", "--small", "100", NULL);
    CHECK(rc == 0 && f.ns == 0 && f.seed == 3000 && f.small == 100, "zero_ok, unique prefix, last one wins: %s", out);
    CHECK(opts_seen(t, "small") == 2 && opts_seen(t, "flag") == 0, "seen counts restart with each parse");
    CHECK(parse(t, "--", NULL) == 0, "'--' alone");
}

static void test_ranges(void)
{
    struct fields f = {0};
    TABLE(f);
    CHECK(usage_with(parse(t, "--small", "0", NULL), "rtvb-probe test: --small must be an integer from 1 to 100, "
                     "got '0'."), "below range: %s", out);
    CHECK(usage_with(parse(t, "--small", "101", NULL), "--small must be an integer from 1 to 100"), "above: %s", out);
    CHECK(usage_with(parse(t, "--nice", "-21", NULL), "--nice must be an integer from -20 to 19, got '-21'."),
          "negative range: %s", out);
    CHECK(usage_with(parse(t, "--nice", "20", NULL), "--nice must be"), "signed above: %s", out);
    CHECK(usage_with(parse(t, "--interval-us", "1001", NULL), "from 1 to 1000"), "scaled int range: %s", out);
    CHECK(usage_with(parse(t, "--ratio", "2.01", NULL), "--ratio must be a number from 0.5 to 2, got '2.01'."),
          "double range: %s", out);
    CHECK(usage_with(parse(t, "--duration-s", "0.001", NULL),
                     "--duration-s must be 0 or a number of seconds from 0.01 to 1e7, got '0.001'."),
          "zero_ok gap: %s", out);
    CHECK(usage_with(parse(t, "--duration-s", "2e7", NULL), "1e7"), "double above: %s", out);
    CHECK(usage_with(parse(t, "--buffer", "2K", NULL), "--buffer must be a size from 4K to 1G, got '2K'."),
          "size range: %s", out);
    CHECK(usage_with(parse(t, "--buffer", "4097.5", NULL), "--buffer must be"), "fractional bytes: %s", out);
    CHECK(usage_with(parse(t, "--sizes", "16,8", NULL), "--sizes must be a list of at most 4 sizes from 16 to 1M"),
          "size list range: %s", out);
    CHECK(usage_with(parse(t, "--sizes", "16,16,16,16,16", NULL), "--sizes must be"), "size list too long: %s",
          out);
    CHECK(usage_with(parse(t, "--cpus", "5000", NULL), "--cpus must be a CPU list such as 0-3,6"), "cpus: %s", out);
    CHECK(usage_with(parse(t, "--cpus", "1023", NULL), "CPU 1023 is offline or not in this process's affinity mask"),
          "cpu outside the mask: %s", out);
    CHECK(usage_with(parse(t, "--odd", "4", NULL), "--odd must be an odd number below 100, got '4'."),
          "custom generic: %s", out);
    CHECK(usage_with(parse(t, "--odd", "loud", NULL), "--odd will not take 'loud'."), "custom own: %s", out);
}

static void test_strict_numbers(void)
{
    static const char *const bad_ints[] = {" 5", "5 ", "+5", "0x10", "5x", "", "-0x1", "1e3", "5.0",
                                           "18446744073709551616", "99999999999999999999999"};
    static const char *const bad_doubles[] = {" 1", "+1", "0x1p0", "1,5", "1.5x", "inf", "nan", "-", ".", "e5",
                                              "1e", "1e400", ""};
    struct fields f = {0};
    TABLE(f);
    for (size_t i = 0; i < sizeof bad_ints / sizeof *bad_ints; i++) {
        CHECK(usage_with(parse(t, "--big", bad_ints[i], NULL), "--big must be an integer"), "int '%s': %s",
              bad_ints[i], out);
        CHECK(parse(t, "--nice", bad_ints[i], NULL) == EXIT_USAGE, "signed int '%s' accepted", bad_ints[i]);
    }
    CHECK(parse(t, "--nice", "--5", NULL) == EXIT_USAGE && parse(t, "--nice", "-+5", NULL) == EXIT_USAGE,
          "double sign accepted");
    for (size_t i = 0; i < sizeof bad_doubles / sizeof *bad_doubles; i++)
        CHECK(usage_with(parse(t, "--ratio", bad_doubles[i], NULL), "--ratio must be a number"), "double '%s': %s",
              bad_doubles[i], out);
    CHECK(parse(t, "--ratio", ".75", NULL) == 0 && f.ratio == 0.75, ".75");
    CHECK(parse(t, "--ratio", "15e-1", NULL) == 0 && f.ratio == 1.5, "15e-1");
    CHECK(parse(t, "--buffer", " 8K", NULL) == EXIT_USAGE && parse(t, "--buffer", "8KB", NULL) == EXIT_USAGE &&
          parse(t, "--buffer", "0x2000", NULL) == EXIT_USAGE && parse(t, "--buffer", "8e3", NULL) == EXIT_USAGE,
          "sloppy size accepted");
}

static void test_syntax_errors(void)
{
    struct fields f = {0};
    TABLE(f);
    CHECK(usage_with(parse(t, "--bogus", NULL), "unknown or incomplete option '--bogus'; run 'rtvb-probe test --help'."),
          "unknown: %s", out);
    CHECK(usage_with(parse(t, "-x", NULL), "unknown or incomplete option '-x'"), "short option: %s", out);
    CHECK(usage_with(parse(t, "--colo", "red", NULL), "unknown or incomplete option '--colo'"),
          "ambiguous prefix (colour, colours): %s", out);
    CHECK(usage_with(parse(t, "--small", NULL), "--small needs a value; run 'rtvb-probe test --help'."),
          "missing argument: %s", out);
    CHECK(usage_with(parse(t, "--flag=1", NULL), "--flag takes no value"), "value on a flag: %s", out);
    CHECK(usage_with(parse(t, "extra", "--small", "5", NULL), "unexpected argument 'extra'"), "stray: %s", out);
    CHECK(f.small == 5, "options after a stray argument are still read, as getopt_long did");
    CHECK(usage_with(parse(t, "--", "--small", NULL), "unexpected argument '--small'"), "after --: %s", out);
    CHECK(usage_with(parse(t, "--small", "0", "--bogus", NULL), "--small must be"), "first error wins: %s", out);
    CHECK(usage_with(parse(t, "--colour", "purple", NULL), "--colour must be red, green or blue, got 'purple'."),
          "enum names: %s", out);
    CHECK(usage_with(parse(t, "--colours", "red,,blue", NULL), "--colours must be a list of red, green, blue"),
          "name list: %s", out);
    CHECK(usage_with(parse(t, "--help-me", NULL), "unknown or incomplete option '--help-me'"), "--help-me: %s", out);
}

static void test_help(void)
{
    struct fields f = {0};
    char want[64];
    TABLE(f);
    CHECK(parse(t, "--small", "5", "--help", "--bogus", NULL) == -1, "--help returns -1");
    CHECK(!strncmp(out, "usage: rtvb-probe test [options]\n", 33), "usage line: %.60s", out);
    for (const struct opt *o = t; o->kind != OPT_END; o++) {
        if (o->kind == OPT_NOTE || !o->help)
            continue;
        snprintf(want, sizeof want, "\n  --%s", o->name);
        CHECK(strstr(out, want) != NULL, "--%s missing from --help", o->name);
    }
    CHECK(!strstr(out, "--hidden"), "an option without help is not shown");
    CHECK(strstr(out, "--colour red|green|blue") && strstr(out, "\n                         second line\n") &&
          strstr(out, "\nA closing note.\n"), "enum choices, continuation line, note:\n%s", out);
    CHECK(parse(t, "-h", NULL) == -1 && parse(t, "--he", NULL) == -1, "-h and a prefix of --help");
}

int main(void)
{
    test_kinds_store();
    test_ranges();
    test_strict_numbers();
    test_syntax_errors();
    test_help();
    return check_verdict("test_opts");
}
