/*
 * os: per-operation costs of the operating system's primitives (the
 * families of LMbench's tables, measured with methods written here from
 * their descriptions): system calls, select/poll, signals, process
 * creation, page faults, mappings, files, context switches, and the latency
 * and bandwidth of pipes and sockets.
 *
 * Every figure comes from the shared timing harness (timing.h): samples
 * long enough for the clock, the bare loop's cost subtracted, repeated until
 * the standard error is below 1 % (or the time limit says it was not).
 * The method of each test is in docs/probe/os-ipc.md.
 */
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "opts.h"
#include "probe.h"
#include "transport.h"

#define SUB "os"
/* Bound on n per sample: an operation that fails returns at once, and
 * calibration must not double n without end (the harness then times an
 * empty loop of that n). 2^24 is far above any real operation's need. */
#define OS_MAX_N (1ull << 24)

volatile sig_atomic_t os_stop;

struct os_test {
    const char *name;
    void (*run)(struct os_run *r);
    int needs_dir;           /* works in the scratch directory */
};

/* Order of the run; names are stable (campaign files and metrics use them). */
static const struct os_test os_tests[] = {
    {"null", os_test_null, 0},
    {"read", os_test_read, 0},
    {"write", os_test_write, 0},
    {"stat", os_test_stat, 1},
    {"fstat", os_test_fstat, 1},
    {"open_close", os_test_open_close, 1},
    {"select", os_test_select, 0},
    {"poll", os_test_poll, 0},
    {"sig_install", os_test_sig_install, 0},
    {"sig_catch", os_test_sig_catch, 0},
    {"prot_fault", os_test_prot_fault, 0},
    {"fork", os_test_fork, 0},
    {"fork_exec", os_test_fork_exec, 0},
    {"fork_sh", os_test_fork_sh, 0},
    {"pagefault", os_test_pagefault, 1},
    {"mmap", os_test_mmap, 1},
    {"file_create_delete", os_test_file_create_delete, 1},
    {"ctx", os_test_ctx, 0},
    {"pipe_lat", os_test_pipe_lat, 0},
    {"unix_lat", os_test_unix_lat, 0},
    {"udp_lat", os_test_udp_lat, 0},
    {"tcp_lat", os_test_tcp_lat, 0},
    {"tcp_connect", os_test_tcp_connect, 0},
    {"sem_lat", os_test_sem_lat, 0},
    {"pipe_bw", os_test_pipe_bw, 0},
    {"unix_bw", os_test_unix_bw, 0},
    {"tcp_bw", os_test_tcp_bw, 0},
    {"file_reread", os_test_file_reread, 1},
    {"mmap_reread", os_test_mmap_reread, 1},
    {"proc_call", os_test_proc_call, 0},
    {"arith", os_test_arith, 0},
};
#define OS_NTESTS ((int)(sizeof os_tests / sizeof *os_tests))
/* The selection is a bit mask of 32 bits, `all` (1u << N) - 1. */
_Static_assert(sizeof os_tests / sizeof *os_tests < 32, "more os tests than bits in os_opts.tests");

#define DEFAULT_CTX "2p/0k,2p/16k,2p/64k,8p/16k,8p/64k,16p/16k,16p/64k"
#define QUICK_CTX "2p/0k,2p/16k,8p/16k"

/* ---------------------------------------------------------------- helpers */

/* Four running sums, so the adds do not wait on one another: a read pass
 * is then limited by memory, not by one chain of dependent additions (one
 * sum read a cached file 10 % slower than a program summing as LMbench
 * does). */
uint64_t os_sum(const void *buf, size_t len)
{
    typedef uint64_t __attribute__((may_alias)) word;
    const word *p = buf;
    size_t words = len / sizeof *p, i = 0;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; i + 4 <= words; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    for (; i < words; i++)
        s0 += p[i];
    return s0 + s1 + s2 + s3;
}

void os_result_begin(struct jw *w, const char *test)
{
    *w = (struct jw){0};
    jw_record(w, "result");
    jw_str(w, "test", test);
}

void os_result_end(struct jw *w, const struct timing *t)
{
    if (t)
        timing_write_json(t, w);
    jw_emit(w);
    jw_free(w);
}

void os_write_pair_cpus(struct jw *w, const char *key, const struct os_opts *o)
{
    if (!o->pair_pinned) {
        jw_null(w, key);
        return;
    }
    jw_arr(w, key);
    jw_int(w, NULL, o->pair_cpus[0]);
    jw_int(w, NULL, o->pair_cpus[1]);
    jw_end(w);
}

void os_skip(const char *test, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jw_warning("test_skipped", "%s skipped: %s", test, msg);
}

void os_failed(struct os_run *r, const char *test, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jw_warning("test_failed", "%s failed, so it has no result: %s.", test, msg);
    if (!r->failed)
        (void)!snprintf(r->first_error, sizeof r->first_error, "%s: %s", test, msg);
    r->failed = 1;
}

/* The harness calls the operation once per sample; between samples, a
 * signal or an earlier failure turns the remaining calls into no-ops, so an
 * interrupted or failed measurement ends within one sample. */
struct guarded {
    timed_fn fn;
    struct op_base *arg;
    aside_fn aside;
};

static double guarded_aside(void *p)
{
    struct guarded *g = p;
    return g->arg->err ? 0.0 : g->aside(g->arg);
}

static void guarded_op(void *p, uint64_t n)
{
    struct guarded *g = p;
    if (os_stop && !g->arg->err)
        op_fail(g->arg, "interrupted", EINTR);
    if (!g->arg->err)
        g->fn(g->arg, n);
}

int os_time(struct os_run *r, const char *test, timed_fn fn, struct op_base *arg,
            const struct timing_opts *opts, struct timing *t)
{
    struct timing_opts o = opts ? *opts : r->o->timing;
    struct guarded g = {fn, arg, o.aside};
    if (!o.max_n || o.max_n > OS_MAX_N)
        o.max_n = OS_MAX_N;
    if (o.aside)
        o.aside = guarded_aside;
    arg->err = 0;
    time_op(guarded_op, &g, &o, t);
    if (!arg->err)
        return 0;
    /* Interrupted: the run stops; the cut measurement is not a failure. */
    if (!os_stop)
        os_failed(r, test, "%s: %s", arg->what,
                  arg->err > 0 ? strerror(arg->err) : "unexpected result");
    return -1;
}

int os_time_diff(struct os_run *r, const char *test, timed_fn fa, struct op_base *a, timed_fn fb,
                 struct op_base *b, double scale, struct timing *ta, struct timing *tb, struct timing *d)
{
    struct timing_opts o = r->o->timing;
    struct guarded ga = {fa, a, NULL}, gb = {fb, b, NULL};
    const struct timed_op opa = {guarded_op, &ga, NULL}, opb = {guarded_op, &gb, NULL};
    if (!o.max_n || o.max_n > OS_MAX_N)
        o.max_n = OS_MAX_N;
    a->err = b->err = 0;
    time_op_diff(&opa, &opb, scale, &o, ta, tb, d);
    struct op_base *failed = a->err ? a : b->err ? b : NULL;
    if (!failed)
        return 0;
    if (!os_stop)
        os_failed(r, test, "%s: %s", failed->what,
                  failed->err > 0 ? strerror(failed->err) : "unexpected result");
    return -1;
}

void os_timing_derive(struct timing *t, double scale, double sub, const double *sub_per_sample, double target)
{
    int k = t->samples;
    if (k <= 0)
        return;
    for (int i = 0; i < k; i++) {
        double v = t->values[i] * scale - (sub_per_sample ? sub_per_sample[i] : sub);
        /* No operation costs less than nothing: a sample the correction takes
         * below zero says the difference is lost in the noise. */
        if (v < 0) {
            v = 0;
            t->clamped++;
        }
        t->values[i] = v;
    }
    timing_summarize(t);
    if (t->ns_per_op <= 0)
        t->rel_error = INFINITY;
    t->converged = t->converged && t->rel_error < target && !t->clamped;
    t->loop_overhead_ns *= scale;
}

/* ---------------------------------------------------------------- options */

static void print_test_names(void)
{
    int col = 0;
    for (int i = 0; i < OS_NTESTS; i++) {
        const char *name = os_tests[i].name;
        if (col && col + 1 + (int)strlen(name) > 100) {
            putchar('\n');
            col = 0;
        }
        col += col ? printf(" %s", name) : printf("%25s%s", "", name);
    }
    putchar('\n');
}

static int parse_tests(const struct opt *t, const char *s)
{
    char buf[1024];
    uint32_t *mask = t->field;
    if (!strcmp(s, "all")) {
        *mask = (1u << OS_NTESTS) - 1;
        return 0;
    }
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *mask = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < OS_NTESTS && strcmp(os_tests[i].name, tok))
            i++;
        if (i == OS_NTESTS)
            return -1;
        *mask |= 1u << i;
    }
    return *mask ? 0 : -1;
}

/* "2p/16k,8p/64k": processes, then the working set of each. */
#define CTX_MAX_WS (64ull << 20)   /* working set of a ring process */

static int parse_ctx(const char *s, struct os_ctx_size *out)
{
    char buf[512];
    int n = 0;
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *slash = strstr(t, "p/");
        uint64_t procs, ws;
        if (!slash || n == OS_MAX_LIST)
            return -1;
        *slash = '\0';
        if (parse_u64(t, 2, OS_MAX_PROCS, &procs) || parse_size(slash + 2, 0, CTX_MAX_WS, &ws))
            return -1;
        out[n++] = (struct os_ctx_size){.procs = (int)procs, .ws_bytes = ws};
    }
    return n ? n : -1;
}

static int parse_ctx_opt(const struct opt *t, const char *arg)
{
    struct os_opts *o = t->field;
    o->nctx = parse_ctx(arg, o->ctx);
    return o->nctx < 0 ? -1 : 0;
}

static int parse_dir(const struct opt *t, const char *arg)
{
    if (opts_mode == OPTS_RUN && access(arg, W_OK | X_OK))
        return usage_error(SUB, "--dir '%s' is not a writable directory.", arg);
    *(const char **)t->field = arg;
    return 0;
}

static int parse_ctx_cpu(const struct opt *t, const char *arg)
{
    uint64_t u;
    int *cpu = t->field;
    if (!strcmp(arg, "none")) {
        *cpu = -1;
        return 0;
    }
    if (parse_u64(arg, (uint64_t)t->min, t->max, &u))
        return -1;
    if (!cpu_allowed((int)u))
        return usage_error(SUB, "--ctx-cpu %d is offline or not in this process's affinity mask.", (int)u);
    *cpu = (int)u;
    return 0;
}

static int parse_options(int argc, char **argv, struct os_opts *o)
{
    double min_sample_ms = -1, max_time_s = -1;

    *o = (struct os_opts){.tests = (1u << OS_NTESTS) - 1, .ctx_cpu = -1, .bw_chunk = 64 << 10};
    timing_defaults(&o->timing);
    o->nfds = parse_size_list("10,100", 1, 1000, o->fds, OS_MAX_LIST);
    o->nfile = parse_size_list("0,1k,4k,10k", 0, 1 << 30, o->file_sizes, OS_MAX_LIST);
    struct opt table[] = {
        {OPT_C("tests", parse_tests, &o->tests, "LIST",
               "'all' or a comma-separated list of test names (see --help)",
               "tests to run, comma separated, or all (default all):")},
        {OPT_TEXT(NULL), .note = print_test_names},
        {OPT_F("quick", &o->quick, 1, "shorter samples, smaller sizes, fewer rings (a few seconds)")},
        {OPT_C("dir", parse_dir, &o->dir, "PATH", NULL,
               "where file tests make their scratch directory\n(default $TMPDIR or /tmp; removed afterwards)")},
        {OPT_SZ_LIST("fds", o->fds, &o->nfds, 1, 1000, "descriptor counts for select and poll (default 10,100)"),
         .expect = "a list of descriptor counts from 1 to 1000"},
        {OPT_C("ctx", parse_ctx_opt, o, "LIST", "a list like 2p/0k,8p/16k (2 to 64 processes, working set up to 64m)",
               "context-switch rings, processes p / working set each\n(default " DEFAULT_CTX ")"),
         .min = 2, .max = OS_MAX_PROCS, .cap = OS_MAX_LIST},
        {OPT_C("ctx-cpu", parse_ctx_cpu, &o->ctx_cpu, "N|none", "a CPU number or 'none'",
               "CPU every ring process runs on (default: first allowed CPU)"), .min = 0, .max = CPU_SETSIZE - 1},
        {OPT_C("pair-cpus", tp_parse_cpu_pair, o->pair_cpus, "A[,B]", "A or A,B with CPUs in this process's affinity mask",
               "*_lat and *_bw: run this end on CPU A, the peer on B\n(B = A when omitted; default: not pinned)"),
         TP_CPU_PAIR_RANGE},
        {OPT_SZ_LIST("mmap-sizes", o->mmap_sizes, &o->nmmap, 1, 1ull << 30,
                     "file sizes mapped by mmap (default 64k,1m,16m)")},
        {OPT_SZ_LIST("file-sizes", o->file_sizes, &o->nfile, 0, 1 << 30,
                     "sizes of file_create_delete (default 0,1k,4k,10k)")},
        {OPT_SZ("pagefault-size", &o->pagefault_bytes, 64 << 10, 1ull << 30, "region of the pagefault test (default 16m)")},
        {OPT_SZ("reread-size", &o->reread_bytes, 4096, 1ull << 30, "file of file_reread and mmap_reread (default 8m)")},
        {OPT_SZ("bw-chunk", &o->bw_chunk, 1, 64 << 20, "transfer unit of pipe_bw, unix_bw, tcp_bw (default 64k)")},
        {OPT_D("min-sample-ms", &min_sample_ms, 0.01, 10000, NULL, "MS", "harness: shortest sample (default 10, --quick 2)")},
        {OPT_D("max-time-s", &max_time_s, 0.001, 3600, NULL, "S", "harness: time limit per figure (default 2, --quick 0.3)")},
        {OPT_D("target-error", &o->timing.target_rel_error, 1e-6, 1, NULL, "F",
               "harness: relative standard error to reach (default 0.01)")},
        {OPT_TEXT("SIZE: bytes with an optional k, m or g suffix (KiB, MiB, GiB).")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;

    o->pair_pinned = opts_seen(table, "pair-cpus") > 0;
    /* --quick: shorter samples and smaller sets, every test still runs. */
    if (!opts_seen(table, "ctx"))
        o->nctx = parse_ctx(o->quick ? QUICK_CTX : DEFAULT_CTX, o->ctx);
    if (!opts_seen(table, "mmap-sizes"))
        o->nmmap = parse_size_list(o->quick ? "1m" : "64k,1m,16m", 1, 1ull << 30, o->mmap_sizes, OS_MAX_LIST);
    if (!opts_seen(table, "pagefault-size"))
        o->pagefault_bytes = o->quick ? 4 << 20 : 16 << 20;
    if (!opts_seen(table, "reread-size"))
        o->reread_bytes = o->quick ? 2 << 20 : 8 << 20;
    if (o->quick) {
        o->timing.min_sample_ns = 2 * 1000000ull;
        o->timing.max_time_ns = 300 * 1000000ull;
    } else {
        o->timing.max_time_ns = 2 * 1000000000ull;
    }
    if (min_sample_ms > 0)
        o->timing.min_sample_ns = (uint64_t)(min_sample_ms * 1e6);
    if (max_time_s > 0)
        o->timing.max_time_ns = (uint64_t)(max_time_s * 1e9);
    if (!opts_seen(table, "ctx-cpu") && allowed_cpus(&o->ctx_cpu, 1) != 1)
        o->ctx_cpu = -1;
    if (!o->dir) {
        const char *tmp = getenv("TMPDIR");
        o->dir = tmp && *tmp && access(tmp, W_OK | X_OK) == 0 ? tmp : "/tmp";
    }
    return 0;
}

/* ------------------------------------------------------------------ run */

static void on_stop(int sig)
{
    (void)sig;
    os_stop = 1;
}

/* The probe's own file, by its real path: what fork_exec runs and what
 * fork_sh names on its shell command line. Without a usable path (no /proc
 * and no AT_EXECFN, or the file was deleted since) fork_exec runs
 * /proc/self/exe, and fork_sh, which needs a name, is skipped. */
static void find_self(struct os_run *r)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    r->exe_file[0] = '\0';
    if (n > 0) {
        buf[n] = '\0';
        if (!strstr(buf, " (deleted)") && !strchr(buf, '\''))
            snprintf(r->exe_file, sizeof r->exe_file, "%s", buf);
    } else {
        /* No /proc: the name this process was started with. */
        const char *execfn = (const char *)getauxval(AT_EXECFN);
        if (execfn && realpath(execfn, buf) && !strchr(buf, '\''))
            snprintf(r->exe_file, sizeof r->exe_file, "%s", buf);
    }
    if (r->exe_file[0])
        snprintf(r->exe, sizeof r->exe, "%s", r->exe_file);
    else if (access("/proc/self/exe", X_OK) == 0)
        snprintf(r->exe, sizeof r->exe, "/proc/self/exe");
    else
        r->exe[0] = '\0';
    r->sh = access("/bin/sh", X_OK) == 0 ? "/bin/sh" : NULL;
}

static void print_meta(int argc, char **argv, const struct os_opts *o, const struct os_run *r)
{
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_arr(&w, "tests");
    for (int i = 0; i < OS_NTESTS; i++)
        if (o->tests & (1u << i))
            jw_str(&w, NULL, os_tests[i].name);
    jw_end(&w);
    jw_bool(&w, "quick", o->quick);
    jw_str(&w, "dir", o->dir);
    jw_str(&w, "workdir", r->workdir[0] ? r->workdir : NULL);
    jw_arr(&w, "fds");
    for (int i = 0; i < o->nfds; i++)
        jw_uint(&w, NULL, o->fds[i]);
    jw_end(&w);
    jw_arr(&w, "ctx");
    for (int i = 0; i < o->nctx; i++) {
        jw_obj(&w, NULL);
        jw_int(&w, "procs", o->ctx[i].procs);
        jw_uint(&w, "ws_bytes", o->ctx[i].ws_bytes);
        jw_end(&w);
    }
    jw_end(&w);
    if (o->ctx_cpu >= 0)
        jw_int(&w, "ctx_cpu", o->ctx_cpu);
    else
        jw_null(&w, "ctx_cpu");
    jw_arr(&w, "mmap_sizes_bytes");
    for (int i = 0; i < o->nmmap; i++)
        jw_uint(&w, NULL, o->mmap_sizes[i]);
    jw_end(&w);
    jw_arr(&w, "file_sizes_bytes");
    for (int i = 0; i < o->nfile; i++)
        jw_uint(&w, NULL, o->file_sizes[i]);
    jw_end(&w);
    jw_uint(&w, "pagefault_bytes", o->pagefault_bytes);
    jw_uint(&w, "reread_bytes", o->reread_bytes);
    jw_uint(&w, "bw_chunk_bytes", o->bw_chunk);
    os_write_pair_cpus(&w, "pair_cpus", o);
    jw_str(&w, "exec_path", r->exe[0] ? r->exe : NULL);
    jw_str(&w, "sh_path", r->sh);
    jw_obj(&w, "timing");
    jw_uint(&w, "min_sample_ns", o->timing.min_sample_ns);
    jw_uint(&w, "max_time_ns", o->timing.max_time_ns);
    jw_int(&w, "min_samples", o->timing.min_samples);
    jw_double(&w, "target_rel_error", o->timing.target_rel_error);
    jw_end(&w);
    jw_end(&w);
    meta_finish_euid(&w);
}

/* The tests remove what they make; this also removes what an interrupted
 * test left behind. The directory is ours (mkdtemp) and flat. */
static void remove_workdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

int cmd_os(int argc, char **argv)
{
    /* The target of fork_exec: start, parse nothing, exit. */
    if (argc == 2 && !strcmp(argv[1], "--x-noop"))
        return EXIT_OK;

    struct os_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    struct os_run r = {.o = &o};
    struct sigaction sa = {.sa_handler = on_stop};   /* no SA_RESTART: blocking calls return */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    find_self(&r);

    uint64_t t0 = mono_ns();
    int need_dir = 0;
    for (int i = 0; i < OS_NTESTS; i++)
        need_dir |= (o.tests & (1u << i)) && os_tests[i].needs_dir;
    char dir_error[256] = "";
    if (need_dir) {
        snprintf(r.workdir, sizeof r.workdir, "%s/rtvb-os-XXXXXX", o.dir);
        if (!mkdtemp(r.workdir)) {
            snprintf(dir_error, sizeof dir_error, "cannot create a scratch directory in %s (%s)", o.dir,
                     strerror(errno));
            r.workdir[0] = '\0';
        }
    }
    print_meta(argc, argv, &o, &r);

    for (int i = 0; i < OS_NTESTS && !os_stop; i++) {
        if (!(o.tests & (1u << i)))
            continue;
        if (os_tests[i].needs_dir && !r.workdir[0]) {
            os_skip(os_tests[i].name, "%s; pick a writable place with --dir.", dir_error);
            continue;
        }
        os_tests[i].run(&r);
    }
    if (r.workdir[0])
        remove_workdir(r.workdir);
    const char *status = os_stop ? "interrupted" : r.failed ? "error" : "ok";
    emit_end(status, mono_ns() - t0, r.failed && !os_stop ? r.first_error : NULL);
    return r.failed && !os_stop ? EXIT_ENV : EXIT_OK;
}
