#include "opts.h"
#include "probe.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
    /* strtoull alone would take " 5", "+5" and "-1" (as a huge number). */
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Plain decimal notation: [-]digits[.digits][e[+-]digits], with digits on
 * at least one side of the point. strtod also reads hex, "inf", "nan" and
 * leading spaces, none of which is a number a user means on a command line. */
static int is_decimal(const char *s)
{
    int digits = 0;
    if (*s == '-')
        s++;
    for (; isdigit((unsigned char)*s); s++)
        digits++;
    if (*s == '.')
        for (s++; isdigit((unsigned char)*s); s++)
            digits++;
    if (!digits)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

int parse_double(const char *s, double min, double max, double *out)
{
    if (!s || !is_decimal(s))
        return -1;
    errno = 0;
    double v = strtod(s, NULL);
    if (errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s)
        return -1;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end || strpbrk(s, "eExXpP"))
        return -1;
    v *= mult;
    /* Whole bytes only; doubles are exact far beyond the sizes accepted. */
    if (v != floor(v) || v < (double)min || v > (double)max)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int list_item(const char **p, char *item, size_t cap)
{
    if (!*p)
        return 0;
    size_t len = strcspn(*p, ",");
    if (len == 0 || len >= cap)
        return -1;
    memcpy(item, *p, len);
    item[len] = '\0';
    *p = (*p)[len] ? *p + len + 1 : NULL;
    return 1;
}

int parse_size_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int max_n)
{
    char item[32];
    int n = 0, rc;
    while ((rc = list_item(&s, item, sizeof item)) > 0)
        if (n == max_n || parse_size(item, min, max, &out[n++]))
            return -1;
    return rc < 0 ? -1 : n;
}

int parse_names(const char *s, const char *const *names, int n, unsigned *mask)
{
    char item[64];
    int rc;
    *mask = 0;
    while ((rc = list_item(&s, item, sizeof item)) > 0) {
        int found = -1;
        for (int i = 0; i < n && found < 0; i++)
            if (!strcmp(item, names[i]))
                found = i;
        if (found < 0)
            return -1;
        *mask |= 1u << found;
    }
    return rc < 0 || !*mask ? -1 : 0;
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

int cpu_allowed(int cpu)
{
    cpu_set_t set;
    /* Checking a campaign's arguments: the machine that will run them is not this one. */
    if (opts_mode == OPTS_CHECK)
        return cpu >= 0 && cpu < CPU_SETSIZE;
    return cpu >= 0 && cpu < CPU_SETSIZE && sched_getaffinity(0, sizeof set, &set) == 0 && CPU_ISSET(cpu, &set);
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

void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
}

/* CPU time (user + system) of this process's threads and of its children that
 * have been waited for: what the host subtracts from the measured CPUs' busy
 * time to find the time other processes took during the measurement. */
static uint64_t own_cpu_ns(void)
{
    uint64_t total = 0;
    struct rusage ru;
    int who[] = {RUSAGE_SELF, RUSAGE_CHILDREN};
    for (int i = 0; i < 2; i++)
        if (getrusage(who[i], &ru) == 0)
            total += (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
                     (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
    return total;
}

void meta_finish_euid(struct jw *w)
{
    jw_obj(w, "privileges");
    jw_int(w, "euid", (int64_t)geteuid());
    jw_end(w);
    jw_emit(w);
    jw_free(w);
}

uint64_t end_extra_cpu_ns;

void emit_end(const char *status, uint64_t elapsed_ns, const char *error)
{
    struct jw w = {0};
    jw_record(&w, "end");
    jw_str(&w, "status", status);
    jw_uint(&w, "elapsed_ns", elapsed_ns);
    jw_uint(&w, "cpu_time_ns", own_cpu_ns() + end_extra_cpu_ns);
    if (error)
        jw_str(&w, "error", error);
    jw_emit(&w);
    jw_free(&w);
}
