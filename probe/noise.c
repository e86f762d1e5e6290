/*
 * noise: OS noise, the time a running CPU loses to everything else.
 *
 * One thread per selected CPU, pinned, at the requested policy, spins on
 * CLOCK_MONOTONIC and records every gap between two consecutive reads. The
 * smallest gap is what one turn of the loop costs when nothing intervenes;
 * a gap above the threshold is an interruption (an interrupt, a softirq, a
 * kernel thread, another task, the hypervisor taking the CPU), and what it
 * lasted beyond the smallest gap is time stolen from the task.
 *
 * Unlike a wake-up latency test, which looks at the CPU only when a timer
 * fires, this sees every interruption of a CPU that is running, whenever it
 * happens. docs/probe/noise.md describes the records.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hist.h"
#include "opts.h"
#include "probe.h"
#include "rtsched.h"

#define SUB "noise"
#define NOISE_MAX_CPUS 1024
#define WORKER_STACK (128 * 1024)
#define STACK_PREFAULT (32 * 1024)
/* After the end of the run the workers stop by themselves; the main thread
 * looks again this often until they have. */
#define JOIN_POLL_NS (10 * 1000000ull)

struct noise_options {
    uint64_t duration_ns;
    uint64_t threshold_ns;
    int priority;
    int policy;
    int cpus[NOISE_MAX_CPUS];
    int ncpus;
};

struct noise_privileges {
    int policy, priority, rt_granted, mlockall;
    int main_raised;           /* the main thread waits above the workers' priority */
};

struct noise_worker {
    int cpu;
    pid_t tid;
    pthread_t thread;
    const struct noise_options *opt;
    struct hist *gaps;
    uint64_t events;           /* gaps above the threshold */
    uint64_t above_sum_ns;     /* their total length */
    uint64_t max_offset_ns;    /* start of the largest gap, since the common origin */
    uint64_t span_ns;          /* time the loop covered, first read to last */
    atomic_int done;
};

static atomic_int stop_requested;
static uint64_t start_ns;
static pthread_barrier_t ready, go;

static int parse_options(int argc, char **argv, struct noise_options *o)
{
    *o = (struct noise_options){
        .duration_ns = 10 * 1000000000ull, .threshold_ns = 1000, .priority = 80, .policy = SCHED_FIFO,
    };
    struct opt table[] = {
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.001, 1e7, "seconds", "S",
                "measure for S seconds (default 10)")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus, "CPUs to measure, e.g. 0-3,6 (default: all allowed)")},
        {OPT_I("priority", &o->priority, 0, 99, "P", "real-time priority 1..99 (default 80)")},
        {OPT_E("policy", &o->policy, sched_policy_names, sched_policy_values, SCHED_RT_OR_OTHER,
               "scheduling policy (default fifo)")},
        {OPT_NS("threshold-us", &o->threshold_ns, 1000, 0.001, 3.6e9, "microseconds", "T",
                "a gap longer than T us is an interruption (default 1)")},
        {OPT_TEXT("Every selected CPU is kept busy for the whole run; SIGINT or SIGTERM ends it early.")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (sched_check_priority(SUB, o->policy, &o->priority, opts_seen(table, "priority")))
        return EXIT_USAGE;
    if (o->ncpus == 0 && opts_mode == OPTS_RUN) {
        o->ncpus = allowed_cpus(o->cpus, NOISE_MAX_CPUS);
        if (o->ncpus <= 0)
            return usage_error(SUB, "cannot read this process's CPU affinity.");
    }
    return 0;
}

static void acquire_privileges(const struct noise_options *o, struct noise_privileges *p)
{
    *p = (struct noise_privileges){.policy = o->policy, .priority = o->priority};
    p->mlockall = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    p->rt_granted = o->policy != SCHED_OTHER && sched_acquire(o->policy, o->priority);
    if (!p->rt_granted) {
        p->policy = SCHED_OTHER;
        p->priority = 0;
    }
}

static void warn_privileges(const struct noise_options *o, const struct noise_privileges *p)
{
    if (o->policy != SCHED_OTHER && !p->rt_granted)
        jw_warning("no_rt_policy",
                   "SCHED_%s priority %d was not granted, so the threads run as SCHED_OTHER and every other "
                   "task's share of their CPUs counts as noise; run as root or raise RLIMIT_RTPRIO (ulimit -r).",
                   sched_rt_label(o->policy), o->priority);
    if (!p->mlockall)
        jw_warning("no_mlockall", "mlockall was refused, so page faults can add to the noise; run as root or "
                                  "raise RLIMIT_MEMLOCK (ulimit -l).");
}

static int read_sysctl(const char *path, long long *v)
{
    char line[32];
    const char *p = line;
    int64_t x;
    if (read_line(path, line, sizeof line) || scan_i64(&p, &x))
        return -1;
    *v = x;
    return 0;
}

/* A CPU kept busy at a real-time policy is lent to waiting ordinary tasks
 * for what the throttling leaves them of each period: that gap is real, and
 * is counted, but a reader should know where the largest one may come from. */
static void warn_throttling(const struct noise_options *o, const struct noise_privileges *p)
{
    long long runtime, period;
    if (!p->rt_granted || read_sysctl("/proc/sys/kernel/sched_rt_runtime_us", &runtime) ||
        read_sysctl("/proc/sys/kernel/sched_rt_period_us", &period))
        return;
    if (runtime < 0 || runtime >= period || o->duration_ns <= (uint64_t)runtime * 1000ull)
        return;
    jw_warning("rt_throttling",
               "real-time throttling gives waiting ordinary tasks %lld ms of every %lld ms on a CPU kept busy "
               "longer than %lld ms, so gaps that long count as noise wherever such a task waits; runs shorter "
               "than that, isolated CPUs or kernel.sched_rt_runtime_us = -1 avoid them.",
               (period - runtime) / 1000, period / 1000, runtime / 1000);
}

static void print_meta(int argc, char **argv, const struct noise_options *o, const struct noise_privileges *p)
{
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_uint(&w, "duration_ns", o->duration_ns);
    jw_uint(&w, "threshold_ns", o->threshold_ns);
    jw_int(&w, "priority", o->priority);
    jw_str(&w, "policy", sched_policy_name(o->policy));
    jw_arr(&w, "cpus");
    for (int i = 0; i < o->ncpus; i++)
        jw_int(&w, NULL, o->cpus[i]);
    jw_end(&w);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_str(&w, "policy", sched_policy_name(p->policy));
    jw_int(&w, "priority", p->priority);
    jw_bool(&w, "rt_granted", p->rt_granted);
    jw_bool(&w, "mlockall", p->mlockall);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static void *worker_main(void *arg)
{
    struct noise_worker *w = arg;
    const uint64_t threshold = w->opt->threshold_ns;
    struct hist *h = w->gaps;

    w->tid = (pid_t)syscall(SYS_gettid);
    sched_prefault_stack(STACK_PREFAULT);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);

    const uint64_t origin = start_ns, end = origin + w->opt->duration_ns;
    uint64_t events = 0, above = 0, max_offset = 0;
    const uint64_t first = mono_ns();
    uint64_t prev = first;
    for (;;) {
        uint64_t now = mono_ns();
        /* Checked before the gap is recorded: the gap in which a stop was
         * requested may hold the main thread's own handling of the signal,
         * and the one across the end belongs to the time after the run. */
        if (now >= end || atomic_load_explicit(&stop_requested, memory_order_relaxed))
            break;
        uint64_t gap = now - prev;
        if (gap > h->max)
            max_offset = prev - origin;
        hist_record(h, gap);
        if (gap > threshold) {
            events++;
            above += gap;
        }
        prev = now;
    }
    w->events = events;
    w->above_sum_ns = above;
    w->max_offset_ns = max_offset;
    w->span_ns = prev - first;
    atomic_store(&w->done, 1);
    return NULL;
}

/* The workers never sleep, so on a machine whose every CPU is measured a
 * main thread of ordinary priority would run only when RT throttling lets
 * it, seconds late for a stop signal, or never with throttling off. It waits
 * above the workers instead: it sleeps in sigtimedwait for the whole run, so
 * it takes nothing from them until it is needed. */
static int raise_main_thread(const struct noise_privileges *p)
{
    if (!p->rt_granted)
        return 0;
    int prio = p->priority < 99 ? p->priority + 1 : 99;
    struct sched_param sp = {.sched_priority = prio};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
        return 1;
    sp.sched_priority = p->priority;
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

struct noise_figures {
    int cpu;                   /* -1: all CPUs */
    pid_t tid;
    const struct hist *gaps;
    uint64_t events, noise_ns, max_offset_ns, span_ns;
    int max_cpu;               /* merged: the CPU of the largest gap */
};

static void print_result(const struct noise_figures *f, uint64_t threshold_ns)
{
    const struct hist *h = f->gaps;
    struct jw w = {0};
    jw_record(&w, "result");
    if (f->cpu >= 0) {
        jw_int(&w, "cpu", f->cpu);
        jw_int(&w, "tid", f->tid);
    } else {
        jw_str(&w, "cpu", "all");
    }
    hist_write_stats(h, &w);
    jw_uint(&w, "span_ns", f->span_ns);
    jw_uint(&w, "threshold_ns", threshold_ns);
    jw_uint(&w, "events", f->events);
    if (h->count) {
        uint64_t noise = f->noise_ns;
        double span = f->span_ns ? (double)f->span_ns : 1.0;
        jw_uint(&w, "noise_ns", noise);
        jw_double(&w, "noise_per_s_ns", (double)noise * 1e9 / span);
        jw_double(&w, "noise_percent", (double)noise * 100.0 / span);
        jw_uint(&w, "max_offset_ns", f->max_offset_ns);
    } else {
        static const char *const empty[] = {"noise_ns", "noise_per_s_ns", "noise_percent", "max_offset_ns"};
        for (size_t i = 0; i < sizeof empty / sizeof *empty; i++)
            jw_null(&w, empty[i]);
    }
    if (f->cpu < 0) {
        if (h->count)
            jw_int(&w, "max_cpu", f->max_cpu);
        else
            jw_null(&w, "max_cpu");
    }
    hist_write_json(h, &w, "histogram");
    jw_emit(&w);
    jw_free(&w);
}

/* Each interruption costs its gap minus the loop's own undisturbed turn,
 * which the smallest gap of the CPU's run is. */
static uint64_t worker_noise(const struct noise_worker *w)
{
    return w->gaps->count ? w->above_sum_ns - w->events * w->gaps->min : 0;
}

static void print_results(struct noise_worker *ws, int n, const struct noise_options *o, struct hist *all)
{
    struct noise_figures merged = {.cpu = -1, .gaps = all, .max_cpu = -1};
    hist_reset(all);
    for (int i = 0; i < n; i++) {
        struct noise_worker *w = &ws[i];
        struct noise_figures f = {
            .cpu = w->cpu, .tid = w->tid, .gaps = w->gaps, .events = w->events,
            .noise_ns = worker_noise(w), .max_offset_ns = w->max_offset_ns, .span_ns = w->span_ns,
        };
        print_result(&f, o->threshold_ns);
        if (w->gaps->count && (merged.max_cpu < 0 || w->gaps->max > all->max)) {
            merged.max_cpu = w->cpu;
            merged.max_offset_ns = w->max_offset_ns;
        }
        hist_merge(all, w->gaps);
        /* Summed over CPUs, noise and span make noise_per_s and
         * noise_percent the mean over the CPUs. */
        merged.events += w->events;
        merged.noise_ns += f.noise_ns;
        merged.span_ns += w->span_ns;
    }
    print_result(&merged, o->threshold_ns);
}

int cmd_noise(int argc, char **argv)
{
    static struct noise_options o;   /* the CPU list is large; not on the stack */
    struct noise_privileges priv;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    sigset_t stopsigs;
    block_stop_signals(&stopsigs);

    acquire_privileges(&o, &priv);
    uint64_t t0 = mono_ns();
    print_meta(argc, argv, &o, &priv);
    warn_privileges(&o, &priv);
    warn_throttling(&o, &priv);

    struct noise_worker *workers = calloc((size_t)o.ncpus, sizeof *workers);
    struct hist *all = malloc(sizeof *all);
    if (!workers || !all) {
        fprintf(stderr, "rtvb-probe noise: out of memory.\n");
        emit_end("error", mono_ns() - t0, "out of memory");
        return EXIT_ENV;
    }
    for (int i = 0; i < o.ncpus; i++) {
        workers[i].cpu = o.cpus[i];
        workers[i].opt = &o;
        workers[i].gaps = malloc(sizeof *workers[i].gaps);
        if (!workers[i].gaps) {
            fprintf(stderr, "rtvb-probe noise: out of memory for %d histograms.\n", o.ncpus);
            emit_end("error", mono_ns() - t0, "out of memory");
            return EXIT_ENV;
        }
        hist_reset(workers[i].gaps);   /* every page written now, not during the run */
    }

    pthread_barrier_init(&ready, NULL, (unsigned)o.ncpus + 1);
    pthread_barrier_init(&go, NULL, (unsigned)o.ncpus + 1);
    for (int i = 0; i < o.ncpus; i++) {
        rc = sched_start_pinned(&workers[i].thread, workers[i].cpu, priv.policy, priv.priority, WORKER_STACK,
                                worker_main, &workers[i]);
        if (rc) {
            /* Fewer threads than asked would measure other CPUs than chosen. */
            fprintf(stderr, "rtvb-probe noise: cannot start the thread for CPU %d: %s.\n", workers[i].cpu,
                    strerror(rc));
            _exit(EXIT_ENV);
        }
    }
    pthread_barrier_wait(&ready);
    priv.main_raised = raise_main_thread(&priv);
    start_ns = mono_ns();
    pthread_barrier_wait(&go);

    int interrupted = 0;
    const uint64_t end = start_ns + o.duration_ns;
    for (;;) {
        int done = 0;
        for (int i = 0; i < o.ncpus; i++)
            done += atomic_load(&workers[i].done);
        if (done == o.ncpus)
            break;
        uint64_t now = mono_ns();
        /* Asleep until just after the end: waking earlier would interrupt a
         * worker, which is exactly what is being measured. */
        uint64_t wait = now < end ? end - now + JOIN_POLL_NS : JOIN_POLL_NS;
        if (interrupted)
            wait = JOIN_POLL_NS;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull)};
        int sig = sigtimedwait(&stopsigs, NULL, &ts);
        if (sig > 0 && !interrupted) {
            interrupted = 1;
            atomic_store(&stop_requested, 1);
        }
    }
    for (int i = 0; i < o.ncpus; i++)
        pthread_join(workers[i].thread, NULL);
    if (priv.main_raised) {
        struct sched_param sp = {.sched_priority = 0};
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    }

    print_results(workers, o.ncpus, &o, all);
    emit_end(interrupted ? "interrupted" : "ok", mono_ns() - t0, NULL);
    for (int i = 0; i < o.ncpus; i++)
        free(workers[i].gaps);
    free(workers);
    free(all);
    return EXIT_OK;
}
