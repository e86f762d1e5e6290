#include "probe.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

int usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rtvb-probe %s: ", sub);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

int unknown_option(const char *sub, const char *arg)
{
    return usage_error(sub, "unknown or incomplete option '%s'; run 'rtvb-probe %s --help'.", arg, sub);
}

int unexpected_argument(const char *sub, const char *arg)
{
    return usage_error(sub, "unexpected argument '%s'; run 'rtvb-probe %s --help'.", arg, sub);
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || isnan(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static int sort_unique(int *cpus, int n)
{
    qsort(cpus, (size_t)n, sizeof *cpus, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || cpus[k - 1] != cpus[i])
            cpus[k++] = cpus[i];
    return k;
}

int parse_cpu_list(const char *s, int *cpus, int max_cpus)
{
    int n = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10);
        if (end == p || errno || a < 0 || a >= CPU_SETSIZE)
            return -1;
        long b = a;
        p = end;
        if (*p == '-') {
            p++;
            b = strtol(p, &end, 10);
            if (end == p || errno || b < a || b >= CPU_SETSIZE)
                return -1;
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (n >= max_cpus)
                return -1;
            cpus[n++] = (int)c;
        }
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return sort_unique(cpus, n);
}

int allowed_cpus(int *cpus, int max_cpus)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE && n < max_cpus; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

void meta_begin(struct jw *w, const char *subcommand, int argc, char **argv)
{
    struct utsname u;
    struct timespec rt;
    char when[64] = "";

    clock_gettime(CLOCK_REALTIME, &rt);
    struct tm tm;
    if (gmtime_r(&rt.tv_sec, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);

    jw_record(w, "meta");
    jw_int(w, "schema", RTVB_SCHEMA_VERSION);
    jw_str(w, "probe_version", RTVB_PROBE_VERSION);
    jw_str(w, "subcommand", subcommand);
    jw_str(w, "arch", uname(&u) == 0 ? u.machine : NULL);
    jw_int(w, "pid", getpid());
    jw_str(w, "start_time", when);
    jw_uint(w, "start_realtime_ns", ts_ns(&rt));
    jw_arr(w, "argv");
    for (int i = 0; i < argc; i++)
        jw_str(w, NULL, argv[i]);
    jw_end(w);
}

void emit_end(const char *status, uint64_t elapsed_ns, const char *error)
{
    struct jw w = {0};
    jw_record(&w, "end");
    jw_str(&w, "status", status);
    jw_uint(&w, "elapsed_ns", elapsed_ns);
    if (error)
        jw_str(&w, "error", error);
    jw_emit(&w);
    jw_free(&w);
}
