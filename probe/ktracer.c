/*
 * kernel-tracer: the kernel's own noise and latency tracers, summarised.
 *
 * Kernels built with them (PREEMPT_RT kernels usually are) have two tracers
 * that measure from inside the kernel what `noise` and `latency` measure from
 * user space: `timerlat` wakes a kernel thread per CPU from a timer and
 * records how late the timer interrupt ran (IRQ latency) and how late the
 * thread ran (thread latency); `osnoise` runs a kernel thread per CPU that
 * counts the time it lost to hardware, NMIs, interrupts, softirqs and other
 * threads; `hwlat` spins with interrupts off for `width` of every `window`,
 * one CPU at a time, and records each gap between two reads of the clock
 * longer than the threshold: time taken from the whole machine by firmware
 * (SMIs) or a hypervisor, with nothing in the kernel to show for it. This
 * subcommand runs one of them in a tracefs instance of the probe's own for a
 * given time, reads its samples as they come (trace_pipe, so the buffer never
 * overflows) and prints per-CPU summaries: histograms of IRQ and thread
 * latency, total and largest noise with the interference counts, or the
 * histogram of hardware gaps.
 *
 * The tracers' settings (osnoise/cpus, osnoise/timerlat_period_us,
 * hwlat_detector/window and width, tracing_thresh) are global: they are set
 * for the run and put back as they were. Most kernels run hwlat only in the
 * top-level instance, which is the user's tracing session: the probe takes it
 * over only when told it owns the kernel (--top-level, which rtvbench passes
 * in a guest it booted for itself), and puts back its tracer, CPU mask and
 * switch afterwards; its buffer's old content is lost.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hist.h"
#include "opts.h"
#include "probe.h"
#include "trace.h"

#define SUB "kernel-tracer"
#define MAX_CPUS 1024

enum { TIMERLAT, OSNOISE, HWLAT };
static const char *const tracer_names[] = {"timerlat", "osnoise", "hwlat"};
/* The kernel threads each tracer starts ("timerlat/3", "osnoise/0", "hwlatd"). */
static const char *const thread_names[] = {"timerlat", "osnoise", "hwlatd"};

struct kt_options {
    int tracer;
    uint64_t duration_ns;
    uint64_t period_us;
    uint64_t window_us, width_us, threshold_us;     /* hwlat */
    int top_level;
    int cpus[MAX_CPUS];
    int ncpus;
};

/* One CPU's summary. */
struct kt_cpu {
    int cpu;
    struct hist *irq, *thread;        /* timerlat */
    struct hist *gap;                  /* hwlat: the longest gap of each detection */
    uint64_t samples;                  /* osnoise: one per period */
    uint64_t runtime_ns, noise_ns, max_single_ns;
    uint64_t hw, nmi, irqs, softirqs, threads;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

static int parse_options(int argc, char **argv, struct kt_options *o)
{
    *o = (struct kt_options){.tracer = TIMERLAT, .period_us = 1000, .window_us = 1000000, .width_us = 500000,
                             .threshold_us = 10};
    struct opt table[] = {
        {OPT_E("tracer", &o->tracer, tracer_names, NULL, 3,
               "timerlat (IRQ and thread latency), osnoise or hwlat (hardware and firmware latency)")},
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.1, 1e6, "seconds", "S", "how long the tracer runs (required)")},
        {OPT_I("period-us", &o->period_us, 100, 1000000, "P", "timerlat: period of its timer (default 1000)")},
        {OPT_I("window-us", &o->window_us, 1000, 100000000, "W", "hwlat: period of each sample (default 1000000)")},
        {OPT_I("width-us", &o->width_us, 100, 99999999, "W",
               "hwlat: how long of each window it spins with interrupts off (default 500000)")},
        {OPT_I("threshold-us", &o->threshold_us, 1, 1000000, "T",
               "hwlat: a gap at least this long is a detection (default 10)")},
        {OPT_F("top-level", &o->top_level, 1,
               "hwlat: take over the top-level tracing instance where the kernel runs hwlat nowhere else "
               "(only in a machine whose tracing is the probe's alone, such as a guest of its own)")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus, "CPUs the tracer runs on (default: all allowed)")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (!opts_seen(table, "duration-s"))
        return usage_error(SUB, "needs --duration-s: the tracer runs its threads on every CPU it is given.");
    if (o->width_us >= o->window_us)
        return usage_error(SUB, "--width-us must be below --window-us: hwlat sleeps for the rest of each window.");
    if (o->ncpus == 0) {
        o->ncpus = allowed_cpus(o->cpus, MAX_CPUS);
        if (o->ncpus <= 0)
            return usage_error(SUB, "cannot read this process's CPU affinity.");
    }
    return 0;
}

static int read_small(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return 0;
}

/* The CPU column of a trace line ("[003]"), -1 when there is none. */
static int line_cpu(const char *line, const char **after)
{
    for (const char *p = strchr(line, '['); p; p = strchr(p + 1, '[')) {
        char *end;
        long cpu = strtol(p + 1, &end, 10);
        if (end > p + 1 && *end == ']' && end[1] == ' ') {
            *after = end + 2;
            return (int)cpu;
        }
    }
    return -1;
}

/* The text after "TIMESTAMP:" of a sample line. */
static const char *after_timestamp(const char *p)
{
    const char *colon = strstr(p, ": ");
    return colon ? colon + 2 : NULL;
}

static struct kt_cpu *find_cpu(struct kt_cpu *cs, int n, int cpu)
{
    for (int i = 0; i < n; i++)
        if (cs[i].cpu == cpu)
            return &cs[i];
    return NULL;
}

/* "#17 context irq timer_latency 95090 ns" (or "us" on kernels that print microseconds). */
static void timerlat_line(struct kt_cpu *c, const char *text)
{
    const char *ctx = strstr(text, "context");
    if (!ctx)
        return;
    ctx += 7;
    while (*ctx == ' ')
        ctx++;
    int is_irq = !strncmp(ctx, "irq", 3);
    if (!is_irq && strncmp(ctx, "thread", 6))
        return;
    const char *lat = strstr(ctx, "timer_latency");
    if (!lat)
        return;
    char *end;
    unsigned long long v = strtoull(lat + 13, &end, 10);
    while (*end == ' ')
        end++;
    if (!strncmp(end, "us", 2))
        v *= 1000;
    hist_record(is_irq ? c->irq : c->thread, v);
}

/* "RUNTIME NOISE %AVAIL MAX-SINGLE HW NMI IRQ SIRQ THREAD", times in us. */
static void osnoise_line(struct kt_cpu *c, const char *text)
{
    uint64_t runtime, noise, max_single, hw, nmi, irq, sirq, thread;
    double avail;
    const char *p = text;
    if (scan_u64(&p, &runtime) || scan_u64(&p, &noise) || scan_double(&p, &avail) || scan_u64(&p, &max_single) ||
        scan_u64(&p, &hw) || scan_u64(&p, &nmi) || scan_u64(&p, &irq) || scan_u64(&p, &sirq) ||
        scan_u64(&p, &thread))
        return;
    c->samples++;
    c->runtime_ns += runtime * 1000;
    c->noise_ns += noise * 1000;
    if (max_single * 1000 > c->max_single_ns)
        c->max_single_ns = max_single * 1000;
    c->hw += hw;
    c->nmi += nmi;
    c->irqs += irq;
    c->softirqs += sirq;
    c->threads += thread;
}

/* "#1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6": the longest gap of one
 * sample, inside a pair of clock reads (inner) or between two pairs (outer). */
static void hwlat_line(struct kt_cpu *c, const char *text)
{
    const char *p = strstr(text, "inner/outer(us):");
    if (!p)
        return;
    p += 16;
    char *end;
    unsigned long long inner = strtoull(p, &end, 10);
    if (end == p || *end != '/')
        return;
    p = end + 1;
    unsigned long long outer = strtoull(p, &end, 10);
    if (end == p)
        return;
    hist_record(c->gap, (inner > outer ? inner : outer) * 1000);
}

static void feed_line(const struct kt_options *o, struct kt_cpu *cs, const char *line)
{
    if (line[0] == '#')
        return;
    const char *rest;
    int cpu = line_cpu(line, &rest);
    struct kt_cpu *c = cpu >= 0 ? find_cpu(cs, o->ncpus, cpu) : NULL;
    const char *text = c ? after_timestamp(rest) : NULL;
    if (!text)
        return;
    if (o->tracer == TIMERLAT)
        timerlat_line(c, text);
    else if (o->tracer == HWLAT)
        hwlat_line(c, text);
    else
        osnoise_line(c, text);
}

static void write_latency(struct jw *w, const char *key, const struct hist *h)
{
    jw_obj(w, key);
    hist_write_stats(h, w);
    hist_write_json(h, w, "histogram");
    jw_end(w);
}

/* What the kernel ran hwlat with (it may round what was asked), and where. */
struct hwlat_settings {
    uint64_t window_us, width_us, threshold_us;
    const char *instance;               /* "own" or "top-level" */
};

static void print_result(const struct kt_options *o, const struct hwlat_settings *hs, const struct kt_cpu *c,
                         int merged)
{
    struct jw w = {0};
    jw_record(&w, "result");
    if (merged)
        jw_str(&w, "cpu", "all");
    else
        jw_int(&w, "cpu", c->cpu);
    if (o->tracer == TIMERLAT) {
        jw_uint(&w, "count", c->irq->count);
        write_latency(&w, "irq", c->irq);
        write_latency(&w, "thread", c->thread);
    } else if (o->tracer == HWLAT) {
        jw_uint(&w, "count", c->gap->count);
        write_latency(&w, "gap", c->gap);
        if (merged) {
            jw_uint(&w, "window_us", hs->window_us);
            jw_uint(&w, "width_us", hs->width_us);
            jw_uint(&w, "threshold_us", hs->threshold_us);
            jw_str(&w, "instance", hs->instance);
        }
    } else {
        jw_uint(&w, "count", c->samples);
        jw_uint(&w, "runtime_ns", c->runtime_ns);
        jw_uint(&w, "noise_ns", c->noise_ns);
        jw_uint(&w, "max_single_noise_ns", c->max_single_ns);
        if (c->runtime_ns)
            jw_double(&w, "available_percent", 100.0 * (1.0 - (double)c->noise_ns / (double)c->runtime_ns));
        else
            jw_null(&w, "available_percent");
        jw_uint(&w, "hw_events", c->hw);
        jw_uint(&w, "nmi_events", c->nmi);
        jw_uint(&w, "irq_events", c->irqs);
        jw_uint(&w, "softirq_events", c->softirqs);
        jw_uint(&w, "thread_events", c->threads);
    }
    jw_emit(&w);
    jw_free(&w);
}

static void print_results(const struct kt_options *o, const struct hwlat_settings *hs, struct kt_cpu *cs)
{
    struct kt_cpu all = {.cpu = -1, .irq = malloc(sizeof(struct hist)), .thread = malloc(sizeof(struct hist)),
                         .gap = malloc(sizeof(struct hist))};
    if (!all.irq || !all.thread || !all.gap)
        return;
    hist_reset(all.irq);
    hist_reset(all.thread);
    hist_reset(all.gap);
    for (int i = 0; i < o->ncpus; i++) {
        struct kt_cpu *c = &cs[i];
        print_result(o, hs, c, 0);
        hist_merge(all.irq, c->irq);
        hist_merge(all.thread, c->thread);
        hist_merge(all.gap, c->gap);
        all.samples += c->samples;
        all.runtime_ns += c->runtime_ns;
        all.noise_ns += c->noise_ns;
        if (c->max_single_ns > all.max_single_ns)
            all.max_single_ns = c->max_single_ns;
        all.hw += c->hw;
        all.nmi += c->nmi;
        all.irqs += c->irqs;
        all.softirqs += c->softirqs;
        all.threads += c->threads;
    }
    print_result(o, hs, &all, 1);
    free(all.irq);
    free(all.thread);
    free(all.gap);
}

/* The kernel's CPU list syntax for osnoise/cpus. */
static void cpu_list_text(const int *cpus, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len + 8 < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, i ? ",%d" : "%d", cpus[i]);
}

/* The kernel's CPU mask syntax for tracing_cpumask: 32-bit hex words, the highest first. */
static void cpu_mask_text(const int *cpus, int n, char *out, size_t cap)
{
    uint32_t words[MAX_CPUS / 32] = {0};
    int top = 0;
    for (int i = 0; i < n; i++) {
        words[cpus[i] / 32] |= 1u << (cpus[i] % 32);
        if (cpus[i] / 32 > top)
            top = cpus[i] / 32;
    }
    size_t len = 0;
    out[0] = 0;
    for (int i = top; i >= 0 && len + 10 < cap; i--)
        len += (size_t)snprintf(out + len, cap - len, i == top ? "%x" : ",%08x", words[i]);
}

/* CPU time of the tracer's kernel threads ("timerlat/3", "osnoise/0", "hwlatd"):
 * they start with the tracer and end with it, so all of it is this run's. */
static uint64_t tracer_threads_cpu_ns(const char *tracer)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ticks = 0;
    size_t len = strlen(tracer);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char comm[64];
        long long f[PROC_STAT_FIELDS];
        if (proc_stat(atoi(e->d_name), comm, sizeof comm, f) == 0 && !strncmp(comm, tracer, len) &&
            (comm[len] == '/' || comm[len] == 0))
            ticks += (uint64_t)(f[14] + f[15]);
    }
    closedir(d);
    return ticks * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

/* Reads trace_pipe until the end of the run or a stop signal; 1 if stopped by a signal. */
static int collect(const struct kt_options *o, const char *dir, struct kt_cpu *cs)
{
    char path[640], buf[65536], line[1024];
    size_t used = 0;
    snprintf(path, sizeof path, "%s/trace_pipe", dir);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t end = mono_ns() + o->duration_ns;
    for (;;) {
        uint64_t now = mono_ns();
        int last = now >= end || stop_signal;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (!last)
            poll(&p, 1, (int)((end - now) / 1000000 < 100 ? (end - now) / 1000000 + 1 : 100));
        for (;;) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0)
                break;
            for (ssize_t i = 0; i < n; i++) {
                if (buf[i] == '\n' || used == sizeof line - 1) {
                    line[used] = 0;
                    feed_line(o, cs, line);
                    used = 0;
                } else {
                    line[used++] = buf[i];
                }
            }
        }
        if (last)
            break;
    }
    close(fd);
    return stop_signal != 0;
}

/* hwlat_detector's window and width, in the order the kernel accepts: the width stays below the window. */
static int set_window_width(const char *hw, const char *window, const char *width)
{
    if (tracefs_write(hw, "window", window, O_TRUNC) == 0)
        return tracefs_write(hw, "width", width, O_TRUNC);
    int err = tracefs_write(hw, "width", width, O_TRUNC);
    return err ? err : tracefs_write(hw, "window", window, O_TRUNC);
}

/* What the top-level instance had before the probe took it over. */
struct top_level {
    int taken;
    char tracer[64], on[8], mask[1100];
};

/* Starts hwlat: in the probe's instance where the kernel allows it, else in the top-level one when
 * allowed; the directory it runs in, or NULL with the reason in error. */
static const char *hwlat_start(const struct kt_options *o, const char *root, const char *dir, struct top_level *top,
                               struct hwlat_settings *hs, char *error, size_t cap)
{
    char hw[512], window[32], width[32], thresh[32], mask[1100];
    snprintf(hw, sizeof hw, "%s/hwlat_detector", root);
    snprintf(window, sizeof window, "%llu", (unsigned long long)o->window_us);
    snprintf(width, sizeof width, "%llu", (unsigned long long)o->width_us);
    snprintf(thresh, sizeof thresh, "%llu", (unsigned long long)o->threshold_us);
    cpu_mask_text(o->cpus, o->ncpus, mask, sizeof mask);
    int err;
    const char *step = NULL;
    if ((err = set_window_width(hw, window, width)))
        step = "setting hwlat_detector/window and width";
    else if ((err = tracefs_write(root, "tracing_thresh", thresh, O_TRUNC)))
        step = "setting tracing_thresh";
    /* One CPU at a time, as the report says (kernels before 5.14 have no other mode, nor this file). */
    else if ((err = tracefs_write(hw, "mode", "round-robin", O_TRUNC)) && err != ENOENT)
        step = "setting hwlat_detector/mode";
    if (step) {
        snprintf(error, cap, "%s failed (%s)", step, strerror(err));
        return NULL;
    }
    const char *run_dir = dir;
    hs->instance = "own";
    if ((err = tracefs_write(dir, "tracing_cpumask", mask, O_TRUNC)) == 0)
        err = tracefs_write(dir, "current_tracer", "hwlat", O_TRUNC);
    /* EINVAL: a tracer this kernel keeps out of instances; EBUSY: hwlat runs already, here or there. */
    if (err && err != EINVAL) {
        snprintf(error, cap, "starting hwlat failed (%s)%s", strerror(err),
                 err == EBUSY ? ": another program runs it already, and the kernel runs one at a time" : "");
        return NULL;
    }
    if (err) {
        if (!o->top_level) {
            snprintf(error, cap, "this kernel runs the hwlat tracer only in the top-level tracing instance, which is "
                     "the machine's own tracing session: the probe takes it over only with --top-level, in a machine "
                     "whose tracing is its alone (rtvbench does so in a qemu guest it booted)");
            return NULL;
        }
        read_small(root, "current_tracer", top->tracer, sizeof top->tracer);
        read_small(root, "tracing_on", top->on, sizeof top->on);
        read_small(root, "tracing_cpumask", top->mask, sizeof top->mask);
        top->taken = 1;
        tracefs_write(root, "current_tracer", "nop", O_TRUNC);
        tracefs_write(root, "trace", "", O_TRUNC);          /* what the buffer held is not this run's */
        if ((err = tracefs_write(root, "tracing_cpumask", mask, O_TRUNC)))
            step = "setting tracing_cpumask";
        else if ((err = tracefs_write(root, "current_tracer", "hwlat", O_TRUNC)))
            step = "starting hwlat in the top-level tracing instance (another program may run it already)";
        else if ((err = tracefs_write(root, "tracing_on", "1", O_TRUNC)))
            step = "switching the top-level tracing on";
        if (step) {
            snprintf(error, cap, "%s failed (%s)", step, strerror(err));
            return NULL;
        }
        run_dir = root;
        hs->instance = "top-level";
    }
    char text[32];
    if (read_small(hw, "window", text, sizeof text) == 0)
        hs->window_us = strtoull(text, NULL, 10);
    if (read_small(hw, "width", text, sizeof text) == 0)
        hs->width_us = strtoull(text, NULL, 10);
    if (read_small(root, "tracing_thresh", text, sizeof text) == 0)
        hs->threshold_us = strtoull(text, NULL, 10);
    return run_dir;
}

static void top_level_restore(const char *root, const struct top_level *top)
{
    if (!top->taken)
        return;
    tracefs_write(root, "current_tracer", "nop", O_TRUNC);
    if (top->mask[0])
        tracefs_write(root, "tracing_cpumask", top->mask, O_TRUNC);
    if (top->tracer[0] && strcmp(top->tracer, "nop"))
        tracefs_write(root, "current_tracer", top->tracer, O_TRUNC);
    if (top->on[0])
        tracefs_write(root, "tracing_on", top->on, O_TRUNC);
}

int cmd_kernel_tracer(int argc, char **argv)
{
    struct kt_options o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    uint64_t t0 = mono_ns();

    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "tracer", tracer_names[o.tracer]);
    jw_uint(&w, "duration_ns", o.duration_ns);
    jw_uint(&w, "period_us", o.period_us);
    if (o.tracer == HWLAT) {
        jw_uint(&w, "window_us", o.window_us);
        jw_uint(&w, "width_us", o.width_us);
        jw_uint(&w, "threshold_us", o.threshold_us);
    }
    jw_arr(&w, "cpus");
    for (int i = 0; i < o.ncpus; i++)
        jw_int(&w, NULL, o.cpus[i]);
    jw_end(&w);
    jw_end(&w);
    meta_finish_euid(&w);

    char why[400] = "", avail[1024] = "", error[600] = "";
    const char *root = tracefs_root(why, sizeof why);
    if (root && read_small(root, "available_tracers", avail, sizeof avail) == 0) {
        /* Whole words only: "osnoise" must not match inside another tracer's name. */
        char padded[1100];
        snprintf(padded, sizeof padded, " %s ", avail);
        char word[32];
        snprintf(word, sizeof word, " %s ", tracer_names[o.tracer]);
        if (!strstr(padded, word))
            snprintf(error, sizeof error, "this kernel has no %s tracer (available: %s); it needs "
                     "CONFIG_%s_TRACER, which PREEMPT_RT kernels usually have", tracer_names[o.tracer], avail,
                     o.tracer == TIMERLAT ? "TIMERLAT" : o.tracer == HWLAT ? "HWLAT" : "OSNOISE");
    } else if (!root) {
        snprintf(error, sizeof error, "%s", why);
    } else {
        snprintf(error, sizeof error, "%s/available_tracers cannot be read (%s): run as root", root, strerror(errno));
    }
    if (error[0]) {
        fprintf(stderr, "rtvb-probe %s: %s.\n", SUB, error);
        emit_end("error", mono_ns() - t0, error);
        return EXIT_ENV;
    }

    tracefs_remove_stale(root);
    char dir[512], osnoise[512], old_cpus[4096] = "", old_period[64] = "", cpus[4096];
    char hw[512], old_window[32] = "", old_width[32] = "", old_thresh[32] = "", old_mode[64] = "";
    snprintf(dir, sizeof dir, "%s/instances/%s%d", root, TRACEFS_INSTANCE_PREFIX, (int)getpid());
    snprintf(osnoise, sizeof osnoise, "%s/osnoise", root);
    snprintf(hw, sizeof hw, "%s/hwlat_detector", root);
    if (o.tracer == HWLAT) {
        read_small(hw, "window", old_window, sizeof old_window);
        read_small(hw, "width", old_width, sizeof old_width);
        read_small(root, "tracing_thresh", old_thresh, sizeof old_thresh);
        read_small(hw, "mode", old_mode, sizeof old_mode);
    } else {
        read_small(osnoise, "cpus", old_cpus, sizeof old_cpus);
        read_small(osnoise, "timerlat_period_us", old_period, sizeof old_period);
    }
    cpu_list_text(o.cpus, o.ncpus, cpus, sizeof cpus);
    char period[32];
    snprintf(period, sizeof period, "%llu", (unsigned long long)o.period_us);

    struct kt_cpu *cs = calloc((size_t)o.ncpus, sizeof *cs);
    for (int i = 0; cs && i < o.ncpus; i++) {
        cs[i].cpu = o.cpus[i];
        cs[i].irq = malloc(sizeof(struct hist));
        cs[i].thread = malloc(sizeof(struct hist));
        cs[i].gap = malloc(sizeof(struct hist));
        if (!cs[i].irq || !cs[i].thread || !cs[i].gap) {
            fprintf(stderr, "rtvb-probe %s: out of memory.\n", SUB);
            return EXIT_ENV;
        }
        hist_reset(cs[i].irq);
        hist_reset(cs[i].thread);
        hist_reset(cs[i].gap);
    }
    int err = 0;
    if (!cs)
        err = ENOMEM;
    else if (mkdir(dir, 0700) != 0)
        err = errno;
    if (err) {
        snprintf(error, sizeof error, "creating a tracefs instance in %s/instances failed (%s)", root, strerror(err));
        fprintf(stderr, "rtvb-probe %s: %s.\n", SUB, error);
        emit_end("error", mono_ns() - t0, error);
        return EXIT_ENV;
    }
    const char *step = NULL, *run_dir = dir;
    struct top_level top = {0};
    struct hwlat_settings hs = {0};
    if (o.tracer == HWLAT)
        run_dir = hwlat_start(&o, root, dir, &top, &hs, error, sizeof error);
    else if ((err = tracefs_write(osnoise, "cpus", cpus, O_TRUNC)))
        step = "setting osnoise/cpus";
    else if (o.tracer == TIMERLAT && (err = tracefs_write(osnoise, "timerlat_period_us", period, O_TRUNC)))
        step = "setting osnoise/timerlat_period_us";
    else if ((err = tracefs_write(dir, "current_tracer", tracer_names[o.tracer], O_TRUNC)))
        step = "starting the tracer (another instance may run it already)";
    if (step)
        snprintf(error, sizeof error, "%s failed (%s)", step, strerror(err));
    int interrupted = 0;
    if (!error[0]) {
        interrupted = collect(&o, run_dir, cs);
        end_extra_cpu_ns = tracer_threads_cpu_ns(thread_names[o.tracer]);
    }
    tracefs_write(dir, "tracing_on", "0", O_TRUNC);
    tracefs_write(dir, "current_tracer", "nop", O_TRUNC);
    rmdir(dir);
    top_level_restore(root, &top);
    if (old_cpus[0])
        tracefs_write(osnoise, "cpus", old_cpus, O_TRUNC);
    if (old_period[0])
        tracefs_write(osnoise, "timerlat_period_us", old_period, O_TRUNC);
    if (old_window[0] && old_width[0])
        set_window_width(hw, old_window, old_width);
    if (old_thresh[0])
        tracefs_write(root, "tracing_thresh", old_thresh, O_TRUNC);
    /* The file lists every mode with the current one in brackets: "none [round-robin] per-cpu". */
    char *open_bracket = strchr(old_mode, '['), *close_bracket = open_bracket ? strchr(open_bracket, ']') : NULL;
    if (close_bracket) {
        *close_bracket = 0;
        tracefs_write(hw, "mode", open_bracket + 1, O_TRUNC);
    }
    if (error[0]) {
        fprintf(stderr, "rtvb-probe %s: %s.\n", SUB, error);
        emit_end("error", mono_ns() - t0, error);
        return EXIT_ENV;
    }
    print_results(&o, &hs, cs);
    emit_end(interrupted ? "interrupted" : "ok", mono_ns() - t0, NULL);
    return EXIT_OK;
}
