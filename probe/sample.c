/*
 * sample: thermal, frequency and throttling state, sampled beside a
 * measurement (`rtvb-probe sample`, docs/probe-output.md, "sample").
 *
 * The host starts it like a load, in the measured environment, right before
 * the measurement and stops it (SIGTERM) right after: one sample at start,
 * one every --interval-ms, one at the signal. It reads what the kernel
 * exposes, where it exists:
 *   /sys/class/thermal/thermal_zone<N>/temp (and type, trip points)
 *   /sys/class/thermal/cooling_device<N>/cur_state (and type, max_state)
 *   /sys/devices/system/cpu/cpu<N>/cpufreq/scaling_cur_freq (cpuinfo_cur_freq)
 *   /sys/devices/system/cpu/cpu<N>/thermal_throttle/<what>_throttle_count (x86)
 * A file that is missing is left out, not an error: many VMs and boards
 * have no thermal zones or no cpufreq, and then the samples are empty.
 *
 * Why a probe subcommand rather than the host reading the files through the
 * target: on an ssh board or a guest every read would be a command started
 * there (sshd, a shell, cat), each sample dozens of them, while this is one
 * process that wakes twice a second and reads a few small files.
 *
 * The files are found once at start; --root (hidden, for tests) prefixes
 * every path, so a test can rewrite a fake tree while this samples it.
 *
 * --requests: one sampler for a whole run rather than a process per
 * measurement. It samples only when a line on stdin asks ("begin": a
 * measurement starts; seq, t_ns and the pace of --interval-ms start again
 * from this sample, which carries the sources as a first sample does;
 * "end": it ended, no more samples until the next "begin") and ends at the
 * end of stdin (SIGTERM or SIGINT end it too, without a last sample), so
 * each measurement's samples read as a sampler's of its own. Starting a
 * process is a handful of scheduler hand-offs, each several milliseconds on
 * a busy machine, before every measurement; a line on a pipe is one.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opts.h"
#include "probe.h"

#define SUB "sample"
#define MAX_ZONES 64
#define MAX_COOLING 64
#define MAX_CPUS 256
#define MAX_THROTTLE 512
#define MAX_TRIPS 8
#define PATH_CAP 640          /* a source's path: dir (< 320) + '/' + a file name (< 256) */
#define ROOT_CAP 200

struct source {
    char name[48];              /* key in the sample: "thermal_zone0", "cpu3", "cpu3.core_throttle_count" */
    char path[PATH_CAP];
};

struct sources {
    struct source zone[MAX_ZONES], cooling[MAX_COOLING], freq[MAX_CPUS], throttle[MAX_THROTTLE];
    int nzone, ncooling, nfreq, nthrottle;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* The number after `prefix` in a directory entry's name, or -1. */
static int numbered(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) || !name[n])
        return -1;
    int v = 0;
    for (const char *p = name + n; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int exists(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    fclose(f);
    return 1;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* The numbers of the entries `prefix<N>` of dir, sorted (so that the keys come in order). */
static int list_numbered(const char *dir, const char *prefix, int *out, int cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) && n < cap;) {
        int v = numbered(e->d_name, prefix);
        if (v >= 0)
            out[n++] = v;
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    return n;
}

/* dir/<prefix><N>/<file> for every N where that file exists, named "<prefix><N>". */
static int find_numbered(const char *dir, const char *prefix, const char *file, struct source *out, int cap)
{
    char path[384];
    int num[MAX_ZONES], found = 0;
    int n = list_numbered(dir, prefix, num, cap < MAX_ZONES ? cap : MAX_ZONES);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%.255s/%s%d/%s", dir, prefix, num[i], file);
        if (exists(path)) {
            snprintf(out[found].name, sizeof out[found].name, "%s%d", prefix, num[i]);
            snprintf(out[found].path, sizeof out[found].path, "%s", path);
            found++;
        }
    }
    return found;
}

static void find_sources(const char *root, struct sources *s)
{
    char dir[256], path[384];
    int num[MAX_CPUS];

    memset(s, 0, sizeof *s);
    snprintf(dir, sizeof dir, "%s/sys/class/thermal", root);
    s->nzone = find_numbered(dir, "thermal_zone", "temp", s->zone, MAX_ZONES);
    s->ncooling = find_numbered(dir, "cooling_device", "cur_state", s->cooling, MAX_COOLING);
    snprintf(dir, sizeof dir, "%s/sys/devices/system/cpu", root);
    int n = list_numbered(dir, "cpu", num, MAX_CPUS);
    for (int i = 0; i < n; i++) {
        /* scaling_cur_freq is readable by anyone; cpuinfo_cur_freq (the hardware's) often by root only. */
        static const char *const freq_files[] = {"scaling_cur_freq", "cpuinfo_cur_freq"};
        for (int f = 0; f < 2; f++) {
            snprintf(path, sizeof path, "%s/cpu%d/cpufreq/%s", dir, num[i], freq_files[f]);
            char line[64];
            if (read_line(path, line, sizeof line) == 0 && s->nfreq < MAX_CPUS) {
                struct source *q = &s->freq[s->nfreq++];
                snprintf(q->name, sizeof q->name, "cpu%d", num[i]);
                snprintf(q->path, sizeof q->path, "%s", path);
                break;
            }
        }
        char tdir[320];
        snprintf(tdir, sizeof tdir, "%s/cpu%d/thermal_throttle", dir, num[i]);
        DIR *d = opendir(tdir);
        if (!d)
            continue;
        for (struct dirent *e; (e = readdir(d)) && s->nthrottle < MAX_THROTTLE;) {
            size_t len = strlen(e->d_name), tail = strlen("_throttle_count");
            if (len <= tail || strcmp(e->d_name + len - tail, "_throttle_count") || len > 30)
                continue;
            struct source *t = &s->throttle[s->nthrottle++];
            snprintf(t->name, sizeof t->name, "cpu%d.%s", num[i], e->d_name);
            snprintf(t->path, sizeof t->path, "%s/%s", tdir, e->d_name);
        }
        closedir(d);
    }
}

/* A file holding one integer; 0, or -1 when it cannot be read now. */
static int read_int(const char *path, int64_t *v)
{
    char line[64];
    const char *p = line;
    return read_line(path, line, sizeof line) == 0 && scan_i64(&p, v) == 0 ? 0 : -1;
}

static void write_values(struct jw *w, const char *key, const struct source *src, int n)
{
    int64_t v;
    jw_obj(w, key);
    for (int i = 0; i < n; i++)
        if (read_int(src[i].path, &v) == 0)
            jw_int(w, src[i].name, v);
    jw_end(w);
}

/* What does not change: zone types and trip points, cooling device types, the files found. */
static void write_sources(struct jw *w, const struct sources *s)
{
    char path[PATH_CAP + 64], line[128];   /* a source's directory and a file name */
    jw_obj(w, "zones");
    for (int i = 0; i < s->nzone; i++) {
        const char *dir = s->zone[i].path;
        size_t dlen = strlen(dir) - strlen("/temp");
        jw_obj(w, s->zone[i].name);
        snprintf(path, sizeof path, "%.*s/type", (int)dlen, dir);
        jw_str(w, "type", read_line(path, line, sizeof line) == 0 ? line : NULL);
        jw_arr(w, "trips");
        for (int t = 0; t < MAX_TRIPS; t++) {
            int64_t temp;
            snprintf(path, sizeof path, "%.*s/trip_point_%d_temp", (int)dlen, dir, t);
            if (read_int(path, &temp))
                break;
            snprintf(path, sizeof path, "%.*s/trip_point_%d_type", (int)dlen, dir, t);
            jw_obj(w, NULL);
            jw_str(w, "type", read_line(path, line, sizeof line) == 0 ? line : NULL);
            jw_int(w, "temp_mC", temp);
            jw_end(w);
        }
        jw_end(w);
        jw_end(w);
    }
    jw_end(w);
    jw_obj(w, "cooling_devices");
    for (int i = 0; i < s->ncooling; i++) {
        const char *dir = s->cooling[i].path;
        size_t dlen = strlen(dir) - strlen("/cur_state");
        int64_t max;
        jw_obj(w, s->cooling[i].name);
        snprintf(path, sizeof path, "%.*s/type", (int)dlen, dir);
        jw_str(w, "type", read_line(path, line, sizeof line) == 0 ? line : NULL);
        snprintf(path, sizeof path, "%.*s/max_state", (int)dlen, dir);
        if (read_int(path, &max) == 0)
            jw_int(w, "max_state", max);
        else
            jw_null(w, "max_state");
        jw_end(w);
    }
    jw_end(w);
}

/* request: the stdin line it answers ("begin", "end"), NULL for one of the pace's. */
static void emit_sample(const struct sources *s, uint64_t seq, uint64_t t0, const char *request)
{
    struct jw w = {0};
    jw_record(&w, "sample");
    jw_uint(&w, "seq", seq);
    jw_uint(&w, "t_ns", mono_ns() - t0);
    if (request)
        jw_str(&w, "request", request);
    if (seq == 0)
        write_sources(&w, s);
    write_values(&w, "temp_mC", s->zone, s->nzone);
    write_values(&w, "freq_khz", s->freq, s->nfreq);
    write_values(&w, "throttle", s->throttle, s->nthrottle);
    write_values(&w, "cooling", s->cooling, s->ncooling);
    jw_emit(&w);
    jw_free(&w);
}

/* A line of stdin into buf (without its newline, cut at cap - 1); 0 at its end or on an error. */
static int read_request(char *buf, size_t cap)
{
    size_t n = 0;
    char c;
    for (;;) {
        ssize_t r = read(STDIN_FILENO, &c, 1);
        if (r < 0 && errno == EINTR && !stop_requested)
            continue;
        if (r <= 0)
            return 0;
        if (c == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = c;
    }
    buf[n] = 0;
    return 1;
}

/* --requests: samples when asked, and every interval_ms between a "begin" and its "end". */
static int on_requests(const struct sources *s, uint64_t interval_ms, uint64_t started)
{
    uint64_t seq = 0, next_ns = 0, t0 = started;
    int open = 0;
    char line[32];
    while (!stop_requested) {
        int timeout = -1;
        if (open) {
            uint64_t now = mono_ns();
            if (now >= next_ns) {
                emit_sample(s, seq++, t0, NULL);
                next_ns += interval_ms * 1000000ull;
                continue;
            }
            timeout = (int)((next_ns - now + 999999) / 1000000);
        }
        struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
        int ready = poll(&in, 1, timeout);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;           /* the pace's next sample is due */
        if (!read_request(line, sizeof line))
            break;
        if (!strcmp(line, "begin")) {
            open = 1;
            seq = 0;
            t0 = mono_ns();
            next_ns = t0 + interval_ms * 1000000ull;
        } else if (!strcmp(line, "end")) {
            open = 0;
        } else {
            continue;           /* not a request: nothing to answer */
        }
        emit_sample(s, seq++, t0, line);
    }
    emit_end("ok", mono_ns() - started, NULL);
    return EXIT_OK;
}

int cmd_sample(int argc, char **argv)
{
    uint64_t interval_ms = 500, count = 0;
    int requests = 0;
    const char *root = "";
    struct opt table[] = {
        {OPT_I("interval-ms", &interval_ms, 10, 3600000, "MS", "time between samples (default 500)")},
        {OPT_I("count", &count, 0, UINT64_MAX, "N", "stop after N samples (default 0: at SIGTERM or SIGINT,\n"
                                                    "after a last sample)")},
        {OPT_F("requests", &requests, 1, "sample when a line on stdin asks: \"begin\" (then every\n"
                                         "--interval-ms) or \"end\" (then none); stop at its end")},
        /* Hidden (no help): the tests' fake sysfs tree, prefixed to every path. */
        {OPT_S("root", &root, "DIR", NULL)},
        {OPT_TEXT("Samples thermal zones, CPU frequencies, throttle counters and cooling devices\n"
                  "where /sys has them; what is missing is left out.")},
        {OPTS_END},
    };
    int rc = opts_done(opts_parse(SUB, table, argc, argv));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    if (strlen(root) > ROOT_CAP)
        return usage_error(SUB, "--root must be at most %d characters.", ROOT_CAP);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;   /* no SA_RESTART: the signal ends the sleep */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    static struct sources s;
    uint64_t t0 = mono_ns();
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_uint(&w, "interval_ms", interval_ms);
    jw_uint(&w, "count", count);
    jw_bool(&w, "requests", requests);
    jw_str(&w, "root", root[0] ? root : NULL);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);

    find_sources(root, &s);
    if (requests)
        return on_requests(&s, interval_ms, t0);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    uint64_t seq = 0;
    for (;;) {
        emit_sample(&s, seq++, t0, NULL);
        if ((count && seq >= count) || stop_requested)
            break;
        /* Absolute deadlines: the samples keep their pace however long a read takes. */
        uint64_t ns = (uint64_t)next.tv_nsec + interval_ms * 1000000ull;
        next.tv_sec += (time_t)(ns / 1000000000ull);
        next.tv_nsec = (long)(ns % 1000000000ull);
        while (!stop_requested && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
    }
    emit_end("ok", mono_ns() - t0, NULL);
    return EXIT_OK;
}
