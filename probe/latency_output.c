/*
 * Output of the `latency` subcommand: rtvbench's JSON Lines records, and
 * cyclictest's text and --json layouts so that existing parsers and plot
 * scripts (OSADL latency plots, rteval) read rtvb-probe's results unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "latency.h"
#include "probe.h"

void lat_print_window(const struct window_summary *s, int cpu, int with_work)
{
    struct jw w = {0};
    jw_record(&w, "window");
    jw_int(&w, "cpu", cpu);
    jw_uint(&w, "index", s->index);
    jw_uint(&w, "t_start_ns", s->t_start_ns);
    jw_uint(&w, "t_end_ns", s->t_end_ns);
    jw_uint(&w, "count", s->count);
    jw_uint(&w, "missed", s->missed);
    if (s->count) {
        jw_uint(&w, "min_ns", s->min_ns);
        jw_uint(&w, "max_ns", s->max_ns);
        jw_uint(&w, "p99_ns", s->p99_ns);
    } else {
        jw_null(&w, "min_ns");
        jw_null(&w, "max_ns");
        jw_null(&w, "p99_ns");
    }
    if (with_work) {
        if (s->count)
            jw_uint(&w, "response_max_ns", s->response_max_ns);
        else
            jw_null(&w, "response_max_ns");
        jw_uint(&w, "deadline_misses", s->deadline_misses);
    }
    jw_emit(&w);
    jw_free(&w);
}

/* What one result record reports: one CPU's figures, or all CPUs merged. */
struct result_figures {
    int cpu;                   /* -1: all CPUs */
    pid_t tid;
    const struct hist *latency, *response;   /* response: NULL without --work-us */
    uint64_t missed, deadline_misses, work_loops;
    uint64_t traced, untraced;
    const uint64_t *over;
};

static void print_result(const struct result_figures *f, const struct lat_options *o)
{
    struct jw w = {0};
    jw_record(&w, "result");
    if (f->cpu >= 0) {
        jw_int(&w, "cpu", f->cpu);
        jw_int(&w, "tid", f->tid);
    } else {
        jw_str(&w, "cpu", "all");
    }
    jw_uint(&w, "missed", f->missed);
    hist_write_stats(f->latency, &w);
    jw_obj(&w, "over");
    for (int i = 0; i < o->nthresholds; i++) {
        char key[32];
        snprintf(key, sizeof key, "%llu", (unsigned long long)o->thresholds_ns[i]);
        jw_uint(&w, key, f->over[i]);
    }
    jw_end(&w);
    hist_write_json(f->latency, &w, "histogram");
    if (o->trace.threshold_ns) {
        jw_uint(&w, "breaches_traced", f->traced);
        jw_uint(&w, "breaches_untraced", f->untraced);
    }
    if (f->response) {
        jw_uint(&w, "work_ns", o->work_ns);
        if (f->cpu >= 0)
            jw_uint(&w, "work_loops", f->work_loops);
        jw_uint(&w, "deadline_misses", f->deadline_misses);
        jw_obj(&w, "response");
        hist_write_stats(f->response, &w);
        hist_write_json(f->response, &w, "histogram");
        jw_end(&w);
    }
    jw_emit(&w);
    jw_free(&w);
}

void lat_print_results(struct lat_worker *ws, int n, const struct lat_options *o)
{
    struct hist *all = malloc(sizeof *all), *all_response = malloc(sizeof *all_response);
    struct result_figures merged = {.cpu = -1, .latency = all, .response = o->work_ns ? all_response : NULL};
    uint64_t over[LAT_MAX_THRESHOLDS] = {0};
    if (!all || !all_response)
        return;
    hist_reset(all);
    hist_reset(all_response);
    merged.over = over;
    for (int i = 0; i < n; i++) {
        struct result_figures f = {
            .cpu = ws[i].cpu, .tid = ws[i].tid, .latency = ws[i].total, .response = ws[i].response,
            .missed = ws[i].missed, .deadline_misses = ws[i].deadline_misses,
            .work_loops = ws[i].work_loops, .over = ws[i].over,
            .traced = ws[i].traced, .untraced = ws[i].untraced,
        };
        print_result(&f, o);
        hist_merge(all, ws[i].total);
        if (ws[i].response)
            hist_merge(all_response, ws[i].response);
        merged.missed += ws[i].missed;
        merged.deadline_misses += ws[i].deadline_misses;
        merged.traced += ws[i].traced;
        merged.untraced += ws[i].untraced;
        for (int t = 0; t < o->nthresholds; t++)
            over[t] += ws[i].over[t];
    }
    print_result(&merged, o);
    free(all);
    free(all_response);
}

/* cyclictest reports whole microseconds, truncated. */
static unsigned long long us(uint64_t ns) { return (unsigned long long)(ns / 1000); }

static void print_cyclictest_histogram(struct lat_worker *ws, int n, const struct lat_options *o)
{
    printf("# Histogram\n");
    for (unsigned row = 0; row < o->histogram_us; row++) {
        printf("%06u ", row);
        for (int i = 0; i < n; i++)
            printf("%06llu%s", (unsigned long long)ws[i].us_buckets[row], i + 1 < n ? "\t" : "");
        printf("\n");
    }
    /* As in cyclictest, the total counts only samples inside the histogram. */
    printf("# Total:");
    for (int i = 0; i < n; i++)
        printf(" %09llu", (unsigned long long)(ws[i].total->count - ws[i].us_overflows));
    printf("\n# Min Latencies:");
    for (int i = 0; i < n; i++)
        printf(" %05llu", ws[i].total->count ? us(ws[i].total->min) : 0);
    printf("\n# Avg Latencies:");
    for (int i = 0; i < n; i++)
        printf(" %05llu", us((uint64_t)hist_mean(ws[i].total)));
    printf("\n# Max Latencies:");
    for (int i = 0; i < n; i++)
        printf(" %05llu", us(ws[i].total->max));
    printf("\n# Histogram Overflows:");
    for (int i = 0; i < n; i++)
        printf(" %05llu", (unsigned long long)ws[i].us_overflows);
    printf("\n# Histogram Overflow at cycle number:\n");
    for (int i = 0; i < n; i++) {
        printf("# Thread %d:", i);
        for (unsigned k = 0; k < ws[i].n_overflow_cycles; k++)
            printf(" %05llu", (unsigned long long)ws[i].overflow_cycles[k]);
        if (ws[i].us_overflows > ws[i].n_overflow_cycles)
            printf(" # %05llu others", (unsigned long long)(ws[i].us_overflows - ws[i].n_overflow_cycles));
        printf("\n");
    }
}

void lat_print_cyclictest(struct lat_worker *ws, int n, const struct lat_options *o)
{
    if (o->histogram_us) {
        /* cyclictest -q -h prints only the histogram block. */
        print_cyclictest_histogram(ws, n, o);
    } else {
        for (int i = 0; i < n; i++) {
            const struct hist *h = ws[i].total;
            printf("T:%2d (%5d) P:%2d I:%llu C:%7llu Min:%7llu Act:%5llu Avg:%5llu Max:%8llu\n", i,
                   (int)ws[i].tid, o->priority, us(o->interval_ns), (unsigned long long)h->count,
                   h->count ? us(h->min) : 0, us(ws[i].last_ns), us((uint64_t)hist_mean(h)), us(h->max));
        }
    }
    fflush(stdout);
}

static void json_escape_print(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* The date as cyclictest writes it, "%a, %d %b %Y %H:%M:%S %z", in UTC
 * ("+0000"): the same instant as a local time would name, without glibc's
 * time-zone and strftime code (some 30 KB of the static probe). */
static void rfc2822(time_t t, char *buf, size_t len)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    utc_time(t, &tm);
    snprintf(buf, len, "%s, %02d %s %d %02d:%02d:%02d +0000", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void lat_print_cyclictest_json(struct lat_worker *ws, int n, const struct lat_options *o, int argc, char **argv,
                               time_t start, time_t end, int rc)
{
    struct utsname u;
    char cmdline[4096] = "", when[64];
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof cmdline; i++)
        used += (size_t)snprintf(cmdline + used, sizeof cmdline - used, "%s%s", i ? " " : "rtvb-probe ", argv[i]);
    uname(&u);

    /* Key names, including the stray colons, are cyclictest's: parsers match them. */
    printf("{\n  \"file_version\": 1,\n  \"cmdline:\": ");
    json_escape_print(cmdline);
    printf(",\n  \"rt_test_version:\": \"rtvb-probe %s\",\n", RTVB_PROBE_VERSION);
    rfc2822(start, when, sizeof when);
    printf("  \"start_time\": \"%s\",\n", when);
    rfc2822(end, when, sizeof when);
    printf("  \"end_time\": \"%s\",\n  \"return_code\": %d,\n", when, rc);
    printf("  \"sysinfo\": {\n    \"sysname\": ");
    json_escape_print(u.sysname);
    printf(",\n    \"nodename\": ");
    json_escape_print(u.nodename);
    printf(",\n    \"release\": ");
    json_escape_print(u.release);
    printf(",\n    \"version\": ");
    json_escape_print(u.version);
    printf(",\n    \"machine\": ");
    json_escape_print(u.machine);
    printf(",\n    \"realtime\": %d\n  },\n", access("/sys/kernel/realtime", F_OK) == 0);
    printf("  \"num_threads\": %d,\n  \"resolution_in_ns\": 0,\n  \"thread\": {\n", n);
    for (int i = 0; i < n; i++) {
        const struct hist *h = ws[i].total;
        printf("    \"%d\": {\n      \"histogram\": {", i);
        int first = 1;
        for (unsigned row = 0; ws[i].us_buckets && row < o->histogram_us; row++) {
            if (!ws[i].us_buckets[row])
                continue;
            printf("%s\n        \"%u\": %llu", first ? "" : ",", row, (unsigned long long)ws[i].us_buckets[row]);
            first = 0;
        }
        printf("%s},\n", first ? "      " : "\n      ");
        printf("      \"cycles\": %llu,\n      \"min\": %llu,\n      \"max\": %llu,\n      \"avg\": %.2f,\n",
               (unsigned long long)h->count, h->count ? us(h->min) : 0, us(h->max), hist_mean(h) / 1000.0);
        printf("      \"cpu\": %d,\n      \"node\": 0\n    }%s\n", ws[i].cpu, i + 1 < n ? "," : "");
    }
    printf("  }\n}\n");
    fflush(stdout);
}
