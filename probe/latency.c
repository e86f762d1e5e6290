/*
 * latency: timer wake-up latency and jitter.
 *
 * One thread per selected CPU, pinned, at the requested real-time policy,
 * sleeps to a deadline and records how late it woke up. This is the method
 * of cyclictest, with three differences that matter for an evaluation:
 *  - periods missed by a long stall are counted, not silently skipped;
 *  - the histogram is log-linear over the whole 64-bit range, so no sample
 *    is lost to an overflow bucket and percentiles are within 1 %;
 *  - what was not granted (RT policy, mlockall) is reported, never assumed.
 */
#include "latency.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opts.h"
#include "probe.h"
#include "rtsched.h"

#define SUB "latency"
#define WORKER_STACK (256 * 1024)
#define STACK_PREFAULT (64 * 1024)

static atomic_int stop_requested;

/* A worker asleep until a deadline seconds away would notice a stop only at that
 * deadline, after the host has given up waiting and killed the probe with its
 * results. The main thread wakes each one with WAKE_SIGNAL instead: its handler does
 * nothing, but without SA_RESTART it ends clock_nanosleep with EINTR, and the loop
 * sees the stop. */
#define WAKE_SIGNAL SIGUSR1

static void on_wake(int sig)
{
    (void)sig;
}
static uint64_t start_ns;                  /* common origin of all workers */
static pthread_barrier_t ready, go;

static const char *const mode_names[] = {"abstime", "relative"};
static const char *const format_names[] = {"jsonl", "cyclictest", "cyclictest-json"};

/* Repeatable: each one adds a threshold. */
static int parse_threshold(const struct opt *t, const char *arg)
{
    struct lat_options *o = t->field;
    double d;
    if (o->nthresholds == t->cap)
        return usage_error(SUB, "at most %d --threshold-us options are supported.", t->cap);
    if (parse_double(arg, t->dmin, t->dmax, &d))
        return -1;
    o->thresholds_ns[o->nthresholds++] = (uint64_t)(d * 1000.0 + 0.5);
    return 0;
}

static int parse_options(int argc, char **argv, struct lat_options *o)
{
    *o = (struct lat_options){
        .interval_ns = 1000000, .priority = 80, .policy = SCHED_FIFO,
        .mode = MODE_ABSTIME, .format = FORMAT_JSONL, .dma_latency_us = 0,
        .trace = {.max_breaches = 10, .history_ns = 20000000},
    };
    struct opt table[] = {
        {OPT_I("interval-us", &o->interval_ns, 1, 3600000000ull, "N", "period of each thread (default 1000)"),
         .scale = 1000},
        {OPT_I("loops", &o->loops, 1, UINT64_MAX / 2, "N", "activations per thread (default: no limit)"),
         .expect = "a positive integer"},
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.001, 1e7, "seconds", "S",
                "stop after S seconds (default: no limit)")},
        {OPT_I("priority", &o->priority, 0, 99, "P", "real-time priority 1..99 (default 80)")},
        {OPT_E("policy", &o->policy, sched_policy_names, sched_policy_values, SCHED_RT_OR_OTHER,
               "scheduling policy (default fifo)")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus, "CPUs to measure, e.g. 0-3,6 (default: all allowed)")},
        {OPT_C("threshold-us", parse_threshold, o, "T", "a positive number of microseconds",
               "count samples above T us; repeatable"), .dmin = 0.001, .dmax = 3.6e9, .cap = LAT_MAX_THRESHOLDS},
        /* Below 10 ms the printing thread could not keep up on a slow board. */
        {OPT_NS("window-s", &o->window_ns, 1e9, 0.01, 1e6, "seconds", "W",
                "print a window record per CPU every W seconds")},
        {OPT_E("mode", &o->mode, mode_names, NULL, 2, "sleep to absolute deadlines, or an interval from now")},
        {OPT_E("format", &o->format, format_names, NULL, 3, "output format (default jsonl)")},
        {OPT_I("histogram-us", &o->histogram_us, 1, 1000000, "N", "cyclictest formats: histogram of N 1-us rows")},
        {OPT_I("cpu-dma-latency-us", &o->dma_latency_us, -1, 2000000000, "N",
               "value held in /dev/cpu_dma_latency during the run\n(default 0, as cyclictest; -1 leaves it alone)")},
        {OPT_NS("work-us", &o->work_ns, 1000, 0.001, 3.6e9, "microseconds", "W",
                "after each wake-up, run a fixed amount of work that takes\n"
                "W us undisturbed (a periodic task with a work budget):\n"
                "adds response times and deadline misses")},
        {OPT_NS("trace-threshold-us", &o->trace.threshold_ns, 1000, 0.001, 3.6e9, "microseconds", "T",
                "record kernel events (tracefs) and save the trace of the\n"
                "measured CPUs when a wake-up is later than T us")},
        {OPT_I("trace-breaches", &o->trace.max_breaches, 1, 1000, "K", "traces saved at most (default 10)")},
        {OPT_NS("trace-history-ms", &o->trace.history_ns, 1000000, 0.1, 10000, "milliseconds", "M",
                "trace kept before a breach's deadline (default 20)")},
        {OPT_TEXT("Without any limit it runs until SIGINT or SIGTERM.")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (sched_check_priority(SUB, o->policy, &o->priority, opts_seen(table, "priority")))
        return EXIT_USAGE;
    if (o->trace.threshold_ns && o->format != FORMAT_JSONL)
        return usage_error(SUB, "--trace-threshold-us saves traces as JSON Lines records; drop --format.");
    if (o->ncpus == 0) {
        o->ncpus = allowed_cpus(o->cpus, LAT_MAX_CPUS);
        if (o->ncpus <= 0)
            return usage_error(SUB, "cannot read this process's CPU affinity.");
    }
    return 0;
}

/* What the kernel will actually give us, found out before anything is
 * printed, so that meta states the truth. */
static void acquire_privileges(const struct lat_options *o, struct lat_privileges *p, int *dma_fd)
{
    *p = (struct lat_privileges){.policy = o->policy, .priority = o->priority, .dma_latency = -1};
    *dma_fd = -1;

    p->mlockall = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;

    p->rt_granted = o->policy != SCHED_OTHER && sched_acquire(o->policy, o->priority);
    if (!p->rt_granted) {
        p->policy = SCHED_OTHER;
        p->priority = 0;
    }

    if (o->dma_latency_us >= 0) {
        /* Held open for the whole run: deep idle states add exit latency
         * that has nothing to do with the scheduler, and cyclictest holds
         * it at 0 by default, so comparisons with it need the same. */
        int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            int32_t v = o->dma_latency_us;
            if (write(fd, &v, sizeof v) == (ssize_t)sizeof v) {
                p->dma_latency = 1;
                *dma_fd = fd;
            } else {
                p->dma_latency = 0;
                close(fd);
            }
        } else {
            p->dma_latency = errno == ENOENT ? -1 : 0;
        }
    }
}

/* A refused privilege is reported in the output format's own channel: a
 * warning record for JSON Lines, a comment on stderr for cyclictest formats. */
static void report_warning(const struct lat_options *o, const char *code, const char *text)
{
    if (o->format == FORMAT_JSONL)
        jw_warning(code, "%s", text);
    else
        fprintf(stderr, "# warning: %s\n", text);
}

static void warn_privileges(const struct lat_options *o, const struct lat_privileges *p)
{
    char text[512];

    if (o->policy != SCHED_OTHER && !p->rt_granted) {
        snprintf(text, sizeof text,
                 "SCHED_%s priority %d was not granted, so threads run as SCHED_OTHER and latencies include "
                 "ordinary scheduling delays; run as root or raise RLIMIT_RTPRIO (ulimit -r).",
                 sched_rt_label(o->policy), o->priority);
        report_warning(o, "no_rt_policy", text);
    }
    if (!p->mlockall)
        report_warning(o, "no_mlockall",
                       "mlockall was refused, so page faults can add to latencies; run as root or raise "
                       "RLIMIT_MEMLOCK (ulimit -l).");
    if (o->dma_latency_us >= 0 && p->dma_latency == 0)
        report_warning(o, "no_cpu_dma_latency",
                       "/dev/cpu_dma_latency could not be set, so CPU idle-state exit latency may add to "
                       "results; run as root or pass --cpu-dma-latency-us -1 to accept it.");
}

static void print_meta(int argc, char **argv, const struct lat_options *o, const struct lat_privileges *p)
{
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_uint(&w, "interval_ns", o->interval_ns);
    jw_uint(&w, "loops", o->loops);
    jw_uint(&w, "duration_ns", o->duration_ns);
    jw_int(&w, "priority", o->priority);
    jw_str(&w, "policy", sched_policy_name(o->policy));
    jw_arr(&w, "cpus");
    for (int i = 0; i < o->ncpus; i++)
        jw_int(&w, NULL, o->cpus[i]);
    jw_end(&w);
    jw_arr(&w, "thresholds_ns");
    for (int i = 0; i < o->nthresholds; i++)
        jw_uint(&w, NULL, o->thresholds_ns[i]);
    jw_end(&w);
    jw_uint(&w, "window_ns", o->window_ns);
    jw_str(&w, "mode", mode_names[o->mode]);
    jw_str(&w, "format", "jsonl");
    jw_uint(&w, "histogram_us", o->histogram_us);
    jw_int(&w, "cpu_dma_latency_us", o->dma_latency_us);
    jw_uint(&w, "work_ns", o->work_ns);
    jw_uint(&w, "trace_threshold_ns", o->trace.threshold_ns);
    jw_uint(&w, "trace_breaches", o->trace.max_breaches);
    jw_uint(&w, "trace_history_ns", o->trace.history_ns);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_str(&w, "policy", sched_policy_name(p->policy));
    jw_int(&w, "priority", p->priority);
    jw_bool(&w, "rt_granted", p->rt_granted);
    jw_bool(&w, "mlockall", p->mlockall);
    if (p->dma_latency < 0)
        jw_null(&w, "cpu_dma_latency");
    else
        jw_bool(&w, "cpu_dma_latency", p->dma_latency);
    if (p->trace < 0) {
        jw_null(&w, "trace");
    } else {
        jw_bool(&w, "trace", p->trace);
        trace_write_events(&w, "trace_events");
    }
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static void push_window(struct lat_worker *w, const struct window_summary *s)
{
    unsigned head = atomic_load_explicit(&w->ring_head, memory_order_relaxed);
    unsigned tail = atomic_load_explicit(&w->ring_tail, memory_order_acquire);
    if (head - tail >= LAT_WINDOW_RING) {
        /* The printer is stalled; count it rather than block a measuring thread. */
        atomic_fetch_add(&w->windows_dropped, 1);
        return;
    }
    w->ring[head % LAT_WINDOW_RING] = *s;
    atomic_store_explicit(&w->ring_head, head + 1, memory_order_release);
}

/* Close the current window: fold it into the run total, publish its summary.
 * Runs on the measuring thread between two activations; it touches only the
 * buckets the window used, so it costs microseconds, once per window. */
static void close_window(struct lat_worker *w, uint64_t index, uint64_t t_start, uint64_t t_end)
{
    struct hist *h = w->window;
    struct window_summary s = {
        .index = index, .t_start_ns = t_start, .t_end_ns = t_end,
        .count = h->count, .missed = w->window_missed,
        .min_ns = h->count ? h->min : 0, .max_ns = h->max,
        .p99_ns = hist_percentile(h, 99.0),
        .response_max_ns = w->window_response_max, .deadline_misses = w->window_deadline_misses,
    };
    if (w->opt->window_ns)
        push_window(w, &s);
    if (h->count) {
        unsigned lo = hist_index(h->min), hi = hist_index(h->max);
        hist_merge(w->total, h);
        memset(&h->buckets[lo], 0, (hi - lo + 1) * sizeof h->buckets[0]);
    }
    h->count = h->sum = h->max = 0;
    h->sumsq = 0;
    h->min = UINT64_MAX;
    w->window_missed = 0;
    w->window_response_max = 0;
    w->window_deadline_misses = 0;
}

/* The victim's work: a chain of dependent integer operations, the same
 * instructions every time, so interference (caches, memory bandwidth, CPU
 * time stolen) shows as a longer execution rather than as less work. A stop
 * request ends it between chunks (a few microseconds apart), so that a long
 * budget cannot outlast the host's stop grace; the check is part of what the
 * calibration times. Returns 0 when stopped before the end. */
static int run_work(uint64_t loops)
{
    const uint64_t chunk = 4096;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = 0; i < loops; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __asm__ volatile("" : "+r"(x));
        if (i % chunk == chunk - 1 && atomic_load_explicit(&stop_requested, memory_order_relaxed))
            return 0;
    }
    return 1;
}

/* Iterations that take work_ns on this CPU, undisturbed: the fastest of a
 * few timed runs (interference only ever slows a run down). */
static uint64_t calibrate_work(uint64_t work_ns)
{
    const uint64_t probe_loops = 100000;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 7; i++) {
        uint64_t t0 = mono_ns();
        run_work(probe_loops);
        uint64_t t = mono_ns() - t0;
        if (t < best)
            best = t;
    }
    if (best == 0)
        best = 1;
    uint64_t loops = (uint64_t)((double)work_ns * (double)probe_loops / (double)best + 0.5);
    return loops ? loops : 1;
}

static inline struct timespec to_ts(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
}

static void *worker_main(void *arg)
{
    struct lat_worker *w = arg;
    const struct lat_options *o = w->opt;
    const uint64_t interval = o->interval_ns;

    w->tid = (pid_t)syscall(SYS_gettid);
    sched_prefault_stack(STACK_PREFAULT);
    if (o->work_ns)
        w->work_loops = calibrate_work(o->work_ns);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);

    uint64_t origin = start_ns;
    uint64_t deadline = origin + interval;
    uint64_t end = o->duration_ns ? origin + o->duration_ns : UINT64_MAX;
    uint64_t window_len = o->window_ns ? o->window_ns : UINT64_MAX;
    uint64_t window_index = 0;
    uint64_t window_end = o->window_ns ? origin + window_len : UINT64_MAX;
    uint64_t cycle = 0;
    const int tracing = trace_active();

    while (!atomic_load_explicit(&stop_requested, memory_order_relaxed)) {
        uint64_t now;
        int rc;
        if (o->mode == MODE_ABSTIME) {
            struct timespec ts = to_ts(deadline);
            rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        } else {
            /* Periodic response-time method: the period restarts from "now", so
             * the work done between activations shifts every later deadline. */
            struct timespec ts = to_ts(interval);
            deadline = mono_ns() + interval;
            rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        }
        now = mono_ns();
        if (rc == EINTR)
            continue;
        if (rc != 0) {
            w->error = rc;
            break;
        }

        /* A sample belongs to the window in which it woke up; windows the
         * thread slept through entirely are published empty, so a stall is
         * visible in the time series rather than hidden by a gap. */
        while (now >= window_end) {
            close_window(w, window_index++, window_end - window_len - origin, window_end - origin);
            window_end += window_len;
        }

        uint64_t lat = now > deadline ? now - deadline : 0;
        if (tracing) {
            /* After the timestamp: the trace's cost lands in the CPU time
             * per wake-up, not in the latency just measured. */
            if (lat > o->trace.threshold_ns) {
                if (trace_breach(w->cpu, w->tid, cycle, deadline, now, origin))
                    w->traced++;
                else
                    w->untraced++;
            } else {
                trace_mark(cycle, lat, now);
            }
        }
        hist_record(w->window, lat);
        w->last_ns = lat;
        for (int i = 0; i < o->nthresholds; i++)
            w->over[i] += lat > o->thresholds_ns[i];
        if (w->us_buckets) {
            uint64_t us = lat / 1000;
            if (us < o->histogram_us) {
                w->us_buckets[us]++;
            } else {
                if (w->n_overflow_cycles < LAT_MAX_OVERFLOW_CYCLES)
                    w->overflow_cycles[w->n_overflow_cycles++] = cycle;
                w->us_overflows++;
            }
        }
        cycle++;

        /* The periodic task's own work, when it has a budget: its response
         * time is completion - deadline, a miss when it exceeds the period. */
        uint64_t done = now;
        if (o->work_ns) {
            if (!run_work(w->work_loops))
                break;                  /* stopped mid-work: no response time to record */
            done = mono_ns();
            uint64_t response = done > deadline ? done - deadline : 0;
            hist_record(w->response, response);
            if (response > w->window_response_max)
                w->window_response_max = response;
            if (response > interval) {
                w->deadline_misses++;
                w->window_deadline_misses++;
            }
        }

        /* Activations that could not happen because their deadline passed
         * before this one finished (a late wake-up or an overrunning work):
         * counted, and skipped so that the next sample is a true wake-up. */
        uint64_t skipped = (done > deadline ? done - deadline : 0) / interval;
        /* Deadlines after the end of the run were never part of it: a stall
         * across the end must not count activations the run did not have. */
        if (end != UINT64_MAX) {
            uint64_t in_run = deadline < end ? (end - deadline) / interval : 0;
            if (skipped > in_run)
                skipped = in_run;
        }
        w->missed += skipped;
        w->window_missed += skipped;
        deadline += (skipped + 1) * interval;

        if ((o->loops && cycle >= o->loops) || now >= end)
            break;
    }
    uint64_t t_end = mono_ns();
    if (w->window->count || w->window_missed) {
        uint64_t ws = window_end == UINT64_MAX ? 0 : window_end - window_len - origin;
        close_window(w, window_index, ws, t_end - origin);
    }
    atomic_store(&w->done, 1);
    return NULL;
}

static void drain_windows(struct lat_worker *ws, int n)
{
    for (int i = 0; i < n; i++) {
        struct lat_worker *w = &ws[i];
        unsigned tail = atomic_load_explicit(&w->ring_tail, memory_order_relaxed);
        unsigned head = atomic_load_explicit(&w->ring_head, memory_order_acquire);
        for (; tail != head; tail++)
            lat_print_window(&w->ring[tail % LAT_WINDOW_RING], w->cpu, w->opt->work_ns != 0);
        atomic_store_explicit(&w->ring_tail, tail, memory_order_release);
    }
}

static struct hist *new_hist(void)
{
    struct hist *h = malloc(sizeof *h);
    if (h)
        hist_reset(h);   /* writes every page: allocated and present before measuring */
    return h;
}

int cmd_latency(int argc, char **argv)
{
    struct lat_options o;
    struct lat_privileges priv;
    int dma_fd;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    /* Workers inherit this mask, so SIGINT/SIGTERM reach only the main
     * thread, which waits for them with sigtimedwait below. */
    sigset_t stopsigs;
    sigemptyset(&stopsigs);
    sigaddset(&stopsigs, SIGINT);
    sigaddset(&stopsigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopsigs, NULL);
    struct sigaction wake = {.sa_handler = on_wake};
    sigemptyset(&wake.sa_mask);
    sigaction(WAKE_SIGNAL, &wake, NULL);

    acquire_privileges(&o, &priv, &dma_fd);
    char trace_why[400] = "";
    priv.trace = -1;
    if (o.trace.threshold_ns)
        priv.trace = trace_setup(&o.trace, o.cpus, o.ncpus, trace_why, sizeof trace_why) == 0;
    uint64_t t0 = mono_ns();
    time_t wall_start = time(NULL);
    if (o.format == FORMAT_JSONL)
        print_meta(argc, argv, &o, &priv);
    warn_privileges(&o, &priv);
    if (priv.trace == 0)
        jw_warning("no_trace", "No kernel trace is captured on breaches: %s. The latency is measured "
                   "without it.", trace_why);

    struct lat_worker *workers = calloc((size_t)o.ncpus, sizeof *workers);
    if (!workers) {
        fprintf(stderr, "rtvb-probe latency: out of memory.\n");
        return EXIT_ENV;
    }
    for (int i = 0; i < o.ncpus; i++) {
        struct lat_worker *w = &workers[i];
        w->cpu = o.cpus[i];
        w->opt = &o;
        w->total = new_hist();
        w->window = new_hist();
        if (o.histogram_us)
            w->us_buckets = calloc(o.histogram_us, sizeof *w->us_buckets);
        if (o.work_ns)
            w->response = new_hist();
        if (!w->total || !w->window || (o.histogram_us && !w->us_buckets) || (o.work_ns && !w->response)) {
            fprintf(stderr, "rtvb-probe latency: out of memory for %d histograms.\n", o.ncpus);
            return EXIT_ENV;
        }
    }

    pthread_barrier_init(&ready, NULL, (unsigned)o.ncpus + 1);
    pthread_barrier_init(&go, NULL, (unsigned)o.ncpus + 1);
    for (int i = 0; i < o.ncpus; i++) {
        rc = sched_start_pinned(&workers[i].thread, workers[i].cpu, priv.policy, priv.priority, WORKER_STACK,
                                worker_main, &workers[i]);
        if (rc) {
            /* Cannot continue with fewer threads than asked: the result would
             * silently cover other CPUs than the user chose. */
            fprintf(stderr, "rtvb-probe latency: cannot start the thread for CPU %d: %s.\n",
                    workers[i].cpu, strerror(rc));
            _exit(EXIT_ENV);
        }
    }
    pthread_barrier_wait(&ready);
    start_ns = mono_ns();
    pthread_barrier_wait(&go);

    int interrupted = 0;
    const struct timespec poll = {.tv_sec = 0, .tv_nsec = 20 * 1000000};
    for (;;) {
        int sig = sigtimedwait(&stopsigs, NULL, &poll);
        if (sig == SIGINT || sig == SIGTERM) {
            interrupted = 1;
            atomic_store(&stop_requested, 1);
        }
        /* Again on every turn until all are done: a worker that read the flag just
         * before it was set and went to sleep after the signal would otherwise sleep
         * until its deadline, which may be seconds away. */
        if (atomic_load(&stop_requested))
            for (int i = 0; i < o.ncpus; i++)
                if (!atomic_load(&workers[i].done))
                    pthread_kill(workers[i].thread, WAKE_SIGNAL);
        if (o.format == FORMAT_JSONL)
            drain_windows(workers, o.ncpus);
        trace_poll();
        int done = 0;
        for (int i = 0; i < o.ncpus; i++)
            done += atomic_load(&workers[i].done);
        if (done == o.ncpus)
            break;
    }
    for (int i = 0; i < o.ncpus; i++)
        pthread_join(workers[i].thread, NULL);
    trace_finish();
    if (dma_fd >= 0)
        close(dma_fd);

    int error = 0;
    for (int i = 0; i < o.ncpus; i++) {
        unsigned dropped = atomic_load(&workers[i].windows_dropped);
        if (workers[i].error) {
            error = workers[i].error;
            fprintf(stderr, "rtvb-probe latency: clock_nanosleep failed on CPU %d: %s.\n",
                    workers[i].cpu, strerror(workers[i].error));
        }
        if (dropped && o.format == FORMAT_JSONL)
            jw_warning("windows_dropped", "%u window records of CPU %d were not printed because the output "
                       "could not keep up; use a longer --window-s.", dropped, workers[i].cpu);
    }

    switch (o.format) {
    case FORMAT_JSONL:
        drain_windows(workers, o.ncpus);
        lat_print_results(workers, o.ncpus, &o);
        emit_end(error ? "error" : interrupted ? "interrupted" : "ok", mono_ns() - t0,
                 error ? "clock_nanosleep failed" : NULL);
        break;
    case FORMAT_CYCLICTEST:
        lat_print_cyclictest(workers, o.ncpus, &o);
        break;
    case FORMAT_CYCLICTEST_JSON:
        lat_print_cyclictest_json(workers, o.ncpus, &o, argc, argv, wall_start, time(NULL), error ? 1 : 0);
        break;
    }
    return error ? EXIT_ENV : EXIT_OK;
}
