/*
 * work: self-verifying CPU workload kernels.
 *
 * Each selected kernel runs at each selected size: its input is generated
 * from the seed (untimed), then it runs --repetitions times, each run timed
 * on CLOCK_MONOTONIC and followed by the kernel's self-checks and checksum
 * (untimed). A result is verified when the self-checks pass, every
 * repetition gives the same checksum and that checksum equals the expected
 * one (built in for the default seed, or given with --expect). Any failure
 * is printed as a warning and in the result, and the probe exits with 3.
 * Kernels and their verification: docs/probe/work.md.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opts.h"
#include "probe.h"
#include "work/copies.h"
#include "work/work.h"

#define SUB "work"
#define MAX_REPETITIONS 100000
#define MAX_EXPECT 64

static const struct work_kernel *const kernels[] = {
    &work_basicmath, &work_bitcount, &work_qsort, &work_dijkstra, &work_patricia,
    &work_strsearch, &work_sha256, &work_crc32, &work_fft, &work_adpcm,
    &work_blowfish, &work_aes128, &work_aes256, &work_smooth, &work_edges,
    &work_matmul_naive, &work_matmul_blocked, &work_intmix, &work_fpmix, &work_lu,
};
#define NKERNELS ((int)(sizeof kernels / sizeof *kernels))

static const char *const size_names[WORK_NSIZES] = {"small", "large"};

struct expect {
    int kernel, size;
    uint64_t value;
};

struct work_options {
    int selected[NKERNELS];     /* kernel indexes, in run order */
    int nselected;
    int sizes[WORK_NSIZES];
    int nsizes;
    uint64_t repetitions;
    uint64_t seed;
    struct expect expect[MAX_EXPECT];
    int nexpect;
    int copies;                 /* 1: the kernel runs in this process; N >= 2: copies mode */
    int rounds;                 /* copies mode: pairs of 1-copy and N-copy rounds */
    int cpus[WORK_MAX_COPIES];  /* --cpus; the copies go round it */
    int ncpus;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void print_kernels(void)
{
    for (int i = 0; i < NKERNELS; i++)
        printf("  %-15s %s\n", kernels[i]->name, kernels[i]->description);
}

static int find_kernel(const char *name, size_t len)
{
    for (int i = 0; i < NKERNELS; i++)
        if (strlen(kernels[i]->name) == len && !strncmp(kernels[i]->name, name, len))
            return i;
    return -1;
}

static int find_size(const char *name)
{
    for (int i = 0; i < WORK_NSIZES; i++)
        if (!strcmp(size_names[i], name))
            return i;
    return -1;
}

static void kernel_names(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < NKERNELS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", kernels[i]->name);
}

static int parse_kernels(const struct opt *t, const char *list)
{
    struct work_options *o = t->field;
    char names[512];
    o->nselected = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; i < NKERNELS; i++)
            o->selected[o->nselected++] = i;
        return 0;
    }
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int k = find_kernel(p, len);
        if (k < 0) {
            kernel_names(names, sizeof names);
            return usage_error(SUB, "unknown kernel '%.*s' in --kernels; known kernels: %s (or all).", (int)len, p,
                               names);
        }
        int dup = 0;
        for (int i = 0; i < o->nselected; i++)
            dup |= o->selected[i] == k;
        if (!dup)
            o->selected[o->nselected++] = k;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

static int parse_hex(const char *s, uint64_t *out)
{
    if (!strncasecmp(s, "0x", 2))
        s += 2;
    size_t n = strlen(s);
    if (n == 0 || n > 16)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* Repeatable: each one sets the checksum of one kernel at one size. */
static int parse_expect(const struct opt *t, const char *arg)
{
    struct work_options *o = t->field;
    const char *eq = strchr(arg, '=');
    const char *dot = eq ? memchr(arg, '.', (size_t)(eq - arg)) : NULL;
    if (!eq || !dot)
        return usage_error(SUB, "--expect must look like NAME.SIZE=HEX (e.g. crc32.small=cbf43926), got '%s'.", arg);
    int k = find_kernel(arg, (size_t)(dot - arg));
    if (k < 0)
        return usage_error(SUB, "--expect '%s' names an unknown kernel; run 'rtvb-probe work --help' for the list.",
                           arg);
    char size[16];
    size_t slen = (size_t)(eq - dot - 1);
    if (slen >= sizeof size)
        slen = sizeof size - 1;
    memcpy(size, dot + 1, slen);
    size[slen] = 0;
    int s = find_size(size);
    if (s < 0)
        return usage_error(SUB, "--expect '%s': the size must be small or large.", arg);
    uint64_t v;
    if (parse_hex(eq + 1, &v))
        return usage_error(SUB, "--expect '%s': the checksum must be 1 to 16 hexadecimal digits.", arg);
    for (int i = 0; i < o->nexpect; i++)
        if (o->expect[i].kernel == k && o->expect[i].size == s) {
            o->expect[i].value = v;
            return 0;
        }
    if (o->nexpect == MAX_EXPECT)
        return usage_error(SUB, "at most %d --expect options are supported.", MAX_EXPECT);
    o->expect[o->nexpect++] = (struct expect){k, s, v};
    return 0;
}

static int parse_options(int argc, char **argv, struct work_options *o)
{
    static const char *const size_choices[] = {"small", "large", "both"};
    int size = WORK_NSIZES;   /* "both" */

    memset(o, 0, sizeof *o);
    o->repetitions = 3;
    o->seed = WORK_DEFAULT_SEED;
    o->copies = 1;
    o->rounds = 3;
    struct opt table[] = {
        {OPT_C("kernels", parse_kernels, o, "LIST|all", NULL, "comma-separated kernels to run (default all)")},
        {OPT_E("size", &size, size_choices, NULL, 3, "input sizes (default both)")},
        {OPT_I("repetitions", &o->repetitions, 1, MAX_REPETITIONS, "N", "timed runs per kernel and size (default 3)")},
        {OPT_I("seed", &o->seed, 0, UINT64_MAX, "S",
               "seed of the input generator (default " RTVB_STR(WORK_DEFAULT_SEED) "; the built-in\n"
               "checksums hold for this seed only)")},
        {OPT_C("expect", parse_expect, o, "NAME.SIZE=HEX", NULL,
               "expected checksum of a kernel at a size, overriding the\nbuilt-in one; repeatable")},
        {OPT_I("copies", &o->copies, 1, WORK_MAX_COPIES, "N",
               "run N independent copies of each kernel at once (processes,\n"
               "one per CPU) alternated with single-copy rounds, and report\n"
               "the scaling efficiency (default 1: no copies)")},
        {OPT_I("rounds", &o->rounds, 1, WORK_MAX_ROUNDS, "R",
               "with --copies: pairs of 1-copy and N-copy rounds (default 3)")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus,
                      "with --copies: CPUs of the copies, copy i on the i-th (round\n"
                      "robin; default the allowed CPUs)")},
        {OPT_TEXT("Exit status 3 when any kernel fails its verification.\n\nKernels:"), .note = print_kernels},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (!opts_seen(table, "kernels"))
        parse_kernels(opts_find(table, "kernels"), "all");
    if ((opts_seen(table, "rounds") || opts_seen(table, "cpus")) && o->copies < 2)
        return usage_error(SUB, "--rounds and --cpus apply to copies: give --copies N with N >= 2.");
    if (size == WORK_NSIZES) {
        o->sizes[0] = WORK_SMALL;
        o->sizes[1] = WORK_LARGE;
        o->nsizes = 2;
    } else {
        o->sizes[0] = size;
        o->nsizes = 1;
    }
    return 0;
}

static void hex64(uint64_t v, char *out)
{
    snprintf(out, 17, "%016llx", (unsigned long long)v);
}

static void print_meta(int argc, char **argv, const struct work_options *o)
{
    struct jw w = {0};
    char hex[17], key[64];
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_arr(&w, "kernels");
    for (int i = 0; i < o->nselected; i++)
        jw_str(&w, NULL, kernels[o->selected[i]]->name);
    jw_end(&w);
    jw_arr(&w, "sizes");
    for (int i = 0; i < o->nsizes; i++)
        jw_str(&w, NULL, size_names[o->sizes[i]]);
    jw_end(&w);
    jw_uint(&w, "repetitions", o->repetitions);
    jw_uint(&w, "seed", o->seed);
    if (o->copies > 1) {
        jw_int(&w, "copies", o->copies);
        jw_int(&w, "rounds", o->rounds);
        jw_arr(&w, "cpus");
        for (int i = 0; i < o->ncpus; i++)
            jw_int(&w, NULL, o->cpus[i]);
        jw_end(&w);
    }
    jw_obj(&w, "expect");
    for (int i = 0; i < o->nexpect; i++) {
        snprintf(key, sizeof key, "%s.%s", kernels[o->expect[i].kernel]->name, size_names[o->expect[i].size]);
        hex64(o->expect[i].value, hex);
        jw_str(&w, key, hex);
    }
    jw_end(&w);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The expected checksum of kernel k at size s: --expect, else built in for
 * the default seed, else none (returns 0). */
static int expected_for(const struct work_options *o, int k, int s, uint64_t *out)
{
    for (int i = 0; i < o->nexpect; i++)
        if (o->expect[i].kernel == k && o->expect[i].size == s) {
            *out = o->expect[i].value;
            return 1;
        }
    if (o->seed == WORK_DEFAULT_SEED) {
        *out = kernels[k]->expected[s];
        return 1;
    }
    return 0;
}

/* The copies' CPUs: --cpus, else the allowed ones, round robin. */
static void copies_plan(const struct work_options *o, int k, int s, struct copies_plan *p)
{
    int allowed[WORK_MAX_COPIES];
    const int *list = o->cpus;
    int n = o->ncpus;
    memset(p, 0, sizeof *p);
    if (n == 0) {
        n = allowed_cpus(allowed, WORK_MAX_COPIES);
        list = allowed;
    }
    for (int i = 0; i < o->copies; i++)
        p->cpus[i] = n > 0 ? list[i % n] : 0;
    p->copies = o->copies;
    p->rounds = o->rounds;
    p->repetitions = o->repetitions;
    p->seed = o->seed;
    p->has_expected = expected_for(o, k, s, &p->expected);
}

/* Run one kernel at one size and print its result. Returns 1 if verified.
 * Copies mode: the result's times are the 1-copy rounds' runs, and the
 * copies' fields follow (work/copies.h). */
static int run_one(const struct work_options *o, int k, int s, uint64_t *times)
{
    const struct work_kernel *K = kernels[k];
    struct work_ctx c;
    struct copies_plan plan;
    struct copies_outcome co;
    uint64_t checksum = 0, sum = 0, expected = 0;
    int have_checksum = 0, ok, done = 0;

    memset(&c, 0, sizeof c);
    memset(&co, 0, sizeof co);
    c.size = s;
    c.seed = o->seed;
    if (o->copies > 1) {
        copies_plan(o, k, s, &plan);
        int started = work_copies_run(K, s, &plan, &stop_requested, &co) == 0;
        c = co.c;
        c.size = s;
        c.seed = o->seed;
        ok = started && co.ok;
        if (!started && !c.error[0])
            snprintf(c.error, sizeof c.error, "%s", co.error);
        checksum = co.checksum;
        have_checksum = co.have_checksum;
        times = co.times;
        done = co.ntimes;
    } else {
        ok = K->prepare(&c) == 0;
        for (uint64_t r = 0; ok && r < o->repetitions && !stop_requested; r++) {
            uint64_t t0 = mono_ns();
            K->run(&c);
            times[done++] = mono_ns() - t0;
            uint64_t v = 0;
            if (K->check(&c, &v)) {
                ok = 0;
            } else if (have_checksum && v != checksum) {
                ok = 0;
                work_fail(&c, "repetition %llu gave checksum %016llx, the first gave %016llx: the kernel is not "
                              "deterministic on this machine",
                          (unsigned long long)r + 1, (unsigned long long)v, (unsigned long long)checksum);
            }
            checksum = v;
            have_checksum = 1;
        }
        if (K->release)
            K->release(&c);
    }
    if (stop_requested && done == 0) {
        work_copies_free(&co);
        return 1;   /* interrupted before the first run: nothing to report */
    }

    int has_expected = expected_for(o, k, s, &expected);
    int match = !has_expected || (have_checksum && checksum == expected);
    int verified = ok && have_checksum && match;
    char hex[17], ehex[17];

    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "kernel", K->name);
    jw_str(&w, "size", size_names[s]);
    jw_uint(&w, "seed", o->seed);
    jw_int(&w, "repetitions", done);
    jw_obj(&w, "input");
    for (int i = 0; i < c.ninput; i++)
        jw_uint(&w, c.input[i].key, c.input[i].value);
    jw_end(&w);
    jw_str(&w, "op", K->op);
    jw_uint(&w, "ops", c.ops);
    jw_arr(&w, "times_ns");
    for (int i = 0; i < done; i++)
        jw_uint(&w, NULL, times[i]);
    jw_end(&w);
    uint64_t *sorted = done ? malloc((size_t)done * sizeof *sorted) : NULL;
    if (sorted) {
        memcpy(sorted, times, (size_t)done * sizeof *times);
        qsort(sorted, (size_t)done, sizeof *sorted, cmp_u64);
        for (int i = 0; i < done; i++)
            sum += times[i];
        uint64_t median = done % 2 ? sorted[done / 2] : (sorted[done / 2 - 1] + sorted[done / 2]) / 2;
        jw_uint(&w, "min_ns", sorted[0]);
        jw_uint(&w, "median_ns", median);
        jw_uint(&w, "mean_ns", (sum + (uint64_t)done / 2) / (uint64_t)done);
        jw_uint(&w, "max_ns", sorted[done - 1]);
        double rate = median ? (double)c.ops * 1e9 / (double)median : 0;
        jw_double(&w, "ops_per_s", median ? rate : (double)NAN);
        if (K->rate_key)
            jw_double(&w, K->rate_key, median ? rate * K->rate_scale : (double)NAN);
        free(sorted);
    } else {
        jw_null(&w, "min_ns");
        jw_null(&w, "median_ns");
        jw_null(&w, "mean_ns");
        jw_null(&w, "max_ns");
        jw_null(&w, "ops_per_s");
        if (K->rate_key)
            jw_null(&w, K->rate_key);
    }
    hex64(checksum, hex);
    hex64(expected, ehex);
    jw_str(&w, "checksum", have_checksum ? hex : NULL);
    jw_str(&w, "expected", has_expected ? ehex : NULL);
    jw_bool(&w, "verified", verified);
    if (c.output[0])
        jw_str(&w, "output", c.output);
    jw_obj(&w, "detail");
    for (int i = 0; i < c.ndetail; i++)
        jw_double(&w, c.detail[i].key, c.detail[i].value);
    jw_end(&w);
    if (!ok)
        jw_str(&w, "error", c.error[0] ? c.error : "self-check failed");
    else if (!match) {
        char msg[96];
        snprintf(msg, sizeof msg, "checksum %s differs from the expected %s", hex, ehex);
        jw_str(&w, "error", msg);
    }
    if (o->copies > 1)
        work_copies_json(&w, &plan, &co);
    jw_emit(&w);
    work_copies_free(&co);
    jw_free(&w);

    if (!ok)
        jw_warning("self_check_failed", "work %s.%s failed its self-check: %s.", K->name, size_names[s],
                   c.error[0] ? c.error : "no detail");
    if (ok && have_checksum && !match)
        jw_warning("checksum_mismatch",
                   "work %s.%s computed checksum %s but %s was expected: the kernel gave a wrong result on this "
                   "machine (or the expected value is wrong).",
                   K->name, size_names[s], hex, ehex);
    return verified;
}

int cmd_work(int argc, char **argv)
{
    struct work_options o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    uint64_t *times = malloc(o.repetitions * sizeof *times);
    if (!times) {
        fprintf(stderr, "rtvb-probe work: out of memory for %llu repetitions.\n", (unsigned long long)o.repetitions);
        return EXIT_ENV;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint64_t t0 = mono_ns();
    print_meta(argc, argv, &o);
    if (o.seed != WORK_DEFAULT_SEED) {
        int unexpected = 0;
        for (int i = 0; i < o.nselected; i++)
            for (int j = 0; j < o.nsizes; j++) {
                uint64_t v;
                unexpected += !expected_for(&o, o.selected[i], o.sizes[j], &v);
            }
        if (unexpected)
            jw_warning("no_expected_checksum",
                       "seed %llu has no built-in checksums: %d kernel run(s) are verified by their self-checks "
                       "only; use the default seed %d or --expect for a checksum comparison.",
                       (unsigned long long)o.seed, unexpected, WORK_DEFAULT_SEED);
    }

    char failed[1024] = "";
    size_t flen = 0;
    int nfailed = 0;
    for (int i = 0; i < o.nselected && !stop_requested; i++)
        for (int j = 0; j < o.nsizes && !stop_requested; j++) {
            int k = o.selected[i], s = o.sizes[j];
            if (!run_one(&o, k, s, times)) {
                nfailed++;
                if (flen < sizeof failed)
                    flen += (size_t)snprintf(failed + flen, sizeof failed - flen, "%s%s.%s", nfailed > 1 ? ", " : "",
                                             kernels[k]->name, size_names[s]);
            }
        }
    free(times);

    uint64_t elapsed = mono_ns() - t0;
    if (nfailed) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%d kernel run(s) failed verification: %s", nfailed, failed);
        emit_end("error", elapsed, msg);
        return EXIT_ENV;
    }
    emit_end(stop_requested ? "interrupted" : "ok", elapsed, NULL);
    return EXIT_OK;
}
