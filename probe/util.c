#include "opts.h"
#include "probe.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
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

/* Decimal numbers are read here rather than by strtod or the scanf family:
 * either brings glibc's general conversions (hex floats, locales, long
 * double and _Float128, wide characters) into the static probe, some 100 KB,
 * for numbers a person types on a command line or the kernel writes in /proc.
 *
 * The notation is plain decimal, [-]digits[.digits][e[+-]digits] with digits
 * on at least one side of the point: no leading space, hex, "inf" or "nan",
 * none of which is a number a user means. The value is the digits as an
 * integer m times 10^e. While m < 2^53 and |e| <= 22, both m and 10^e are
 * exact doubles and the one multiplication or division rounds once, so the
 * result is the correctly rounded double, the same as strtod's: that covers
 * every value of up to 15 significant digits within 1e-22..1e37. Longer
 * digit strings keep their first 19 digits, and larger powers are applied in
 * steps of 1e22, each step rounding once (a few units in the last place at
 * most). A result that overflows, or that underflows below the normal range
 * from nonzero digits, is refused, as strtod's ERANGE was. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int decimal_prefix(const char *s, const char **end, double *out)
{
    uint64_t m = 0;
    int64_t e = 0;   /* the power of ten that m is to be multiplied by */
    int digits = 0, kept = 0, neg = *s == '-';
    s += neg;
    for (int frac = 0;; s++) {
        if (*s == '.' && !frac) {
            frac = 1;
            continue;
        }
        if (!isdigit((unsigned char)*s))
            break;
        digits++;
        if (kept < 19 && (m || *s != '0')) {
            m = m * 10 + (uint64_t)(*s - '0');
            kept++;
            e -= frac;
        } else if (!frac && m) {
            e++;   /* a digit before the point past the 19 kept: one more power of ten */
        } else if (frac && !m) {
            e--;   /* a leading zero after the point */
        }
    }
    if (!digits)
        return -1;
    while (m && m % 10 == 0) {   /* "1.50000" is 15e-1: the smaller m is exact more often */
        m /= 10;
        e++;
    }
    if (*s == 'e' || *s == 'E') {
        const char *x = s + 1;
        int eneg = *x == '-';
        x += *x == '+' || *x == '-';
        if (!isdigit((unsigned char)*x))
            return -1;
        int64_t n = 0;
        for (; isdigit((unsigned char)*x); x++)
            if (n < 100000)   /* far past any double; saturate rather than overflow */
                n = n * 10 + (*x - '0');
        e += eneg ? -n : n;
        s = x;
    }
    double v = (double)m;
    if (m) {
        for (; e > 22 && v <= DBL_MAX; e -= 22)
            v *= 1e22;
        for (; e < -22 && v >= DBL_MIN; e += 22)
            v /= 1e22;
        if (e >= 0 && e <= 22)
            v *= pow10_exact[e];
        else if (e < 0 && e >= -22)
            v /= pow10_exact[-e];
        if (!(v <= DBL_MAX) || v < DBL_MIN || e > 22 || e < -22)
            return -1;
    }
    *out = neg ? -v : v;
    *end = s;
    return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
    const char *end;
    double v;
    if (!s || decimal_prefix(s, &end, &v) || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *end;
    double v;
    if (!s || !isdigit((unsigned char)*s) || decimal_prefix(s, &end, &v))
        return -1;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end || strpbrk(s, "eE"))
        return -1;
    v *= mult;
    /* Whole bytes only; doubles are exact far beyond the sizes accepted. */
    if (v != floor(v) || v < (double)min || v > (double)max)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Where the next field of text the kernel writes starts, for the scan_*
 * functions: past any white space, as scanf's conversions skip it. */
static const char *field_start(const char **p)
{
    const char *s = *p;
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

int scan_u64(const char **p, uint64_t *out)
{
    const char *s = field_start(p);
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    *p = s;
    return 0;
}

int scan_i64(const char **p, int64_t *out)
{
    const char *s = field_start(p);
    int neg = *s == '-';
    uint64_t mag;
    s += neg;
    if (!isdigit((unsigned char)*s) || scan_u64(&s, &mag) || mag > (uint64_t)INT64_MAX + neg)
        return -1;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    *p = s;
    return 0;
}

int scan_x64(const char **p, uint64_t *out)
{
    const char *s = field_start(p);
    uint64_t v = 0;
    int n = 0;
    for (;; s++, n++) {
        unsigned d;
        if (isdigit((unsigned char)*s))
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (*s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            break;
        if (v >> 60)
            return -1;
        v = v << 4 | d;
    }
    if (!n)
        return -1;
    *out = v;
    *p = s;
    return 0;
}

int scan_double(const char **p, double *out)
{
    const char *s = field_start(p), *end;
    if (decimal_prefix(s, &end, out))
        return -1;
    *p = end;
    return 0;
}

int scan_word(const char **p, char *buf, size_t cap)
{
    const char *s = field_start(p);
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
        n++;
    if (!n || (buf && n >= cap))
        return -1;
    if (buf) {
        memcpy(buf, s, n);
        buf[n] = '\0';
    }
    *p = s + n;
    return 0;
}

int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *r = fgets(buf, (int)len, f);
    fclose(f);
    if (!r)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
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

/* Counted here rather than by gmtime_r, which brings glibc's time-zone code
 * (tzset, tzfile: reading /etc/localtime) into the static probe, some 20 KB
 * for a time that is UTC. The day count is walked year by year and month by
 * month from 1970: a few dozen steps for any time a clock reads. */
static int year_days(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) ? 366 : 365;
}

void utc_time(int64_t t, struct tm *tm)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    memset(tm, 0, sizeof *tm);
    tm->tm_hour = (int)(secs / 3600);
    tm->tm_min = (int)(secs / 60 % 60);
    tm->tm_sec = (int)(secs % 60);
    tm->tm_wday = (int)(((days + 4) % 7 + 7) % 7);   /* 1970-01-01 was a Thursday */
    int64_t year = 1970;
    while (days < 0) {
        year--;
        days += year_days(year);
    }
    while (days >= year_days(year)) {
        days -= year_days(year);
        year++;
    }
    tm->tm_yday = (int)days;
    int mon = 0, leap = year_days(year) == 366;
    while (days >= mdays[mon] + (mon == 1 && leap)) {
        days -= mdays[mon] + (mon == 1 && leap);
        mon++;
    }
    tm->tm_year = (int)(year - 1900);
    tm->tm_mon = mon;
    tm->tm_mday = (int)days + 1;
}

void meta_begin(struct jw *w, const char *subcommand, int argc, char **argv)
{
    struct utsname u;
    struct timespec rt;
    struct tm tm;
    char when[64];

    clock_gettime(CLOCK_REALTIME, &rt);
    utc_time(rt.tv_sec, &tm);
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec);

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
