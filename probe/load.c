/*
 * load: load generators (cpu, mem, cache, io, fork, leak, timer, net, sched).
 *
 * One kind per invocation; the host combines loads by starting several
 * probes. Every kind runs as N workers (threads, pinned round-robin to
 * --cpus, at the requested policy) and reports what it actually achieved:
 * each thread's CPU time is read from outside through its CPU-time clock,
 * so the duty cycle a window reports is the kernel's account, not the
 * generator's intention. docs/probe/load.md describes options and records.
 *
 * The main thread owns signals (SIGINT, SIGTERM, SIGHUP are blocked
 * everywhere and taken with sigtimedwait), prints windows, and stops the
 * workers: it sets load_stop and sends each of them SIGUSR1 (an empty
 * handler without SA_RESTART) until they have returned, so a worker asleep
 * in clock_nanosleep, recv or waitpid wakes at once.
 */
#include "load.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memutil.h"
#include "opts.h"
#include "probe.h"
#include "rtsched.h"

#define SUB "load"
#define WORKER_STACK (256 * 1024)
#define WAKE_SIGNAL SIGUSR1
#define STOP_POLL_NS (20 * 1000000ull)
#define MAX_WAIT_NS (250 * 1000000ull)

atomic_int load_stop;

static const struct load_kind *const kinds[LK_COUNT] = {
    [LK_CPU] = &load_kind_cpu, [LK_MEM] = &load_kind_mem, [LK_CACHE] = &load_kind_cache,
    [LK_IO] = &load_kind_io, [LK_FORK] = &load_kind_fork, [LK_LEAK] = &load_kind_leak,
    [LK_TIMER] = &load_kind_timer, [LK_NET] = &load_kind_net, [LK_SCHED] = &load_kind_sched,
};

/* ---- helpers for the kinds ------------------------------------------------------------------ */

uint64_t load_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return ts_ns(&t);
}

void load_sleep_until(uint64_t abs_ns)
{
    struct timespec ts = load_ts(abs_ns);
    while (!load_stopping() && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void load_pace_bytes(struct load_thread *t, uint64_t done_bytes)
{
    const struct load_ctx *c = t->ctx;
    if (!c->opt.limit_bps)
        return;
    double per_thread = (double)c->opt.limit_bps / c->opt.workers;
    uint64_t due = c->start_ns + (uint64_t)((double)done_bytes / per_thread * 1e9);
    if (due > mono_ns())
        load_sleep_until(due);
}

void load_fail(struct load_thread *t, int err, const char *what)
{
    snprintf(t->error_what, sizeof t->error_what, "%s", what);
    atomic_store(&t->error, err ? err : EIO);
}

void load_free_thread_states(struct load_ctx *c)
{
    for (int i = 0; c->threads && i < c->nthreads; i++) {
        free(c->threads[i].state);
        c->threads[i].state = NULL;
    }
}

/* ---- options -------------------------------------------------------------------------------- */

#define K(x) (1u << (x))

static const char *const kind_names[LK_COUNT] = {"cpu", "mem", "cache", "io", "fork", "leak", "timer", "net", "sched"};
static const char *const method_names[] = {"integer", "float", "matrix", "mixed"};
static const char *const busy_clock_names[] = {"thread", "wall"};
static const char *const mem_op_names[] = {"read", "write", "copy"};

/* A size, or "auto" (cache: from the LLC), which is marked as BS_LLC. */
static int parse_buffer(const struct opt *t, const char *arg)
{
    struct load_options *o = t->field;
    if (!strcmp(arg, "auto")) {
        o->buffer_source = BS_LLC;
        return 0;
    }
    if (parse_size(arg, (uint64_t)t->min, t->max, &o->buffer_bytes))
        return usage_error(SUB, "--buffer-size must be a size from %lluK to %lluM such as 64M (cache also takes auto), "
                           "got '%s'.", (unsigned long long)(t->min >> 10), (unsigned long long)(t->max >> 20), arg);
    o->buffer_source = BS_OPTION;
    return 0;
}

static int parse_dir(const struct opt *t, const char *arg)
{
    struct stat st;
    if (opts_mode == OPTS_RUN && (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)))
        return usage_error(SUB, "--dir '%s' is not an existing directory; create it or pick another.", arg);
    *(const char **)t->field = arg;
    return 0;
}

/* Returns 0, EXIT_USAGE after printing the sentence, or -1 after --help. */
static int parse_options(int argc, char **argv, struct load_options *o)
{
    int kind = -1;
    *o = (struct load_options){
        .workers = 1, .policy = SCHED_OTHER, .window_ns = 1000000000ull,
        .percent = 100, .period_ns = 100000000ull, .method = CM_MIXED, .busy_clock = BC_THREAD,
        .mem_op = MO_COPY, .llc_bytes = -1, .line_bytes = 64, .block_bytes = 64 << 10,
        .file_bytes = 4 << 20, .fsync = 1, .leak_bps = 16.0 * 1048576, .limit_bytes = 256ull << 20,
        .rate_hz = 1000, .msg_bytes = 100,
    };
    /* .tag: the kinds an option applies to (none: every kind). */
    struct opt table[] = {
        {OPT_E("kind", &kind, kind_names, NULL, LK_COUNT, "the load, one per invocation (required)")},
        {OPT_TEXT("Common:")},
        {OPT_I("workers", &o->workers, 1, LOAD_MAX_WORKERS, "N", "worker threads (default 1; leak: 1)")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus,
                      "pin worker i to the i-th CPU of LIST, round-robin (default: not pinned)")},
        {OPT_E("policy", &o->policy, sched_policy_names, sched_policy_values, SCHED_ANY_POLICY,
               "scheduling policy (default other)")},
        {OPT_I("priority", &o->priority, 1, 99, "P", "1..99 with fifo/rr")},
        {OPT_I("nice", &o->nice, -20, 19, "N", "-20..19 with other/batch (default 0)")},
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.001, 1e7, "seconds", "S",
                "stop after S seconds (default: at SIGINT/SIGTERM/SIGHUP)")},
        {OPT_NS("window-s", &o->window_ns, 1e9, 0.01, 1e6, "seconds", "W",
                "a window record every W seconds, 0 = none (default 1)"), .zero_ok = 1},
        {OPT_TEXT("cpu:")},
        {OPT_D("percent", &o->percent, 0, 100, NULL, "P", "duty cycle (default 100)"), .tag = K(LK_CPU)},
        {OPT_NS("period-ms", &o->period_ns, 1e6, 0.1, 60000, "milliseconds", "T", "duty-cycle period (default 100)"),
         .tag = K(LK_CPU)},
        {OPT_E("method", &o->method, method_names, NULL, 4, "what the busy part computes (default mixed)"),
         .tag = K(LK_CPU)},
        {OPT_E("busy-clock", &o->busy_clock, busy_clock_names, NULL, 2,
               "clock the busy part is measured on (default thread)"), .tag = K(LK_CPU)},
        {OPT_TEXT("mem, cache:")},
        {OPT_C("buffer-size", parse_buffer, o, "SIZE|auto", NULL,
               "per worker (mem: default 64M; cache: default auto = 2 x LLC, 32M if unknown)"),
         .tag = K(LK_MEM) | K(LK_CACHE), .min = 8192, .max = MEM_MAX_BYTES},
        {OPT_E("op", &o->mem_op, mem_op_names, NULL, 3, "mem: what each pass does (default copy)"), .tag = K(LK_MEM)},
        {OPT_SZ("bps-limit", &o->limit_bps, 0, 1ull << 40, "mem, cache, io, net: bytes/s over all workers\n(default 0 = no limit)"),
         .expect = "bytes per second such as 100M (0 = no limit)", .meta = "B",
         .tag = K(LK_MEM) | K(LK_CACHE) | K(LK_IO) | K(LK_NET)},
        {OPT_TEXT("io:")},
        {OPT_C("dir", parse_dir, &o->parent_dir, "D", NULL,
               "default $TMPDIR or /tmp; a fresh directory is made inside and removed"), .tag = K(LK_IO)},
        {OPT_SZ("file-size", &o->file_bytes, 4096, 1ull << 30, "default 4M"), .tag = K(LK_IO)},
        {OPT_SZ("block-size", &o->block_bytes, 512, 64ull << 20, "io, net: default 64K"), .tag = K(LK_IO) | K(LK_NET)},
        {OPT_F("fsync", &o->fsync, 1, "fsync every file (the default)"), .tag = K(LK_IO)},
        {OPT_F("no-fsync", &o->fsync, 0, "do not fsync"), .tag = K(LK_IO)},
        {OPT_F("drop-cache", &o->drop_cache, 1, "read back from the device, not the page cache"), .tag = K(LK_IO)},
        {OPT_TEXT("fork, leak, timer:")},
        {OPT_D("rate", &o->fork_rate, 0, 1e6, "forks per second", "N",
               "fork: forks/s over all workers (default 0 = as fast as possible)"), .tag = K(LK_FORK)},
        {OPT_D("rate-mbps", &o->leak_bps, 0, 1e6, "MiB per second", "R", "leak: growth in MiB/s (default 16, 0 = at once)"),
         .scale = 1048576, .tag = K(LK_LEAK)},
        {OPT_SZ("limit", &o->limit_bytes, 1 << 20, MEM_MAX_BYTES, "leak: default 256M"), .tag = K(LK_LEAK)},
        {OPT_D("rate-hz", &o->rate_hz, 1, 1e6, "wake-ups per second", "F",
               "timer: wake-ups/s over all workers (default 1000)"), .tag = K(LK_TIMER)},
        {OPT_TEXT("sched:")},
        {OPT_SZ("msg-size", &o->msg_bytes, 1, 4096, "bytes per message, at most PIPE_BUF (default 100)"),
         .tag = K(LK_SCHED)},
        {OPT_TEXT("Sizes take K, M, G (binary).")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (kind < 0)
        return usage_error(SUB, "--kind is required: one of cpu, mem, cache, io, fork, leak, timer, net, sched.");
    o->kind = (enum load_kind_id)kind;

    for (const struct opt *t = table; t->kind != OPT_END; t++)
        if (t->seen && t->tag && !(t->tag & K(kind)))
            return usage_error(SUB, "--%s does not apply to --kind %s; run 'rtvb-probe load --help'.", t->name,
                               kind_names[kind]);

    const char *policy = sched_policy_name(o->policy);
    int nice_set = opts_seen(table, "nice"), buffer_set = opts_seen(table, "buffer-size");
    if (sched_is_rt(o->policy)) {
        if (!opts_seen(table, "priority"))
            return usage_error(SUB, "--policy %s needs --priority from 1 to 99.", policy);
        if (nice_set && o->nice != 0)
            return usage_error(SUB, "--nice applies to --policy other or batch, not %s.", policy);
    } else {
        if (opts_seen(table, "priority"))
            return usage_error(SUB, "--priority applies to --policy fifo or rr; use --nice with --policy %s.", policy);
        if (nice_set && o->nice != 0 && o->policy == SCHED_IDLE)
            return usage_error(SUB, "--nice applies to --policy other or batch, not idle.");
    }
    if (kind == LK_LEAK && o->workers != 1)
        return usage_error(SUB, "--kind leak runs one worker; drop --workers or use 1.");
    if (kind == LK_TIMER && o->rate_hz / o->workers > 1e6)
        return usage_error(SUB, "--rate-hz over --workers must not exceed 1e6 wake-ups per second per worker.");
    if (kind == LK_CACHE && !buffer_set)
        o->buffer_source = BS_LLC;   /* resolved in the kind's setup */
    else if (kind == LK_MEM && !buffer_set)
        o->buffer_bytes = 64ull << 20;
    else if (kind == LK_MEM && o->buffer_source == BS_LLC)
        return usage_error(SUB, "--buffer-size auto applies to --kind cache; give mem a size such as 64M.");
    if (kind == LK_MEM && o->mem_op == MO_COPY && o->buffer_bytes < 16384)
        return usage_error(SUB, "--op copy needs --buffer-size of at least 16K (it copies one half onto the other).");
    if (kind == LK_IO && o->block_bytes > o->file_bytes) {
        if (opts_seen(table, "block-size"))
            return usage_error(SUB, "--block-size must not exceed --file-size.");
        o->block_bytes = o->file_bytes;
    }
    return 0;
}

/* ---- privileges ----------------------------------------------------------------------------- */

/* Find out, on the main thread, what the workers will be granted, then put
 * the main thread back: meta states the truth before any worker starts. */
static void acquire_privileges(const struct load_options *o, struct load_privileges *p)
{
    *p = (struct load_privileges){.policy = o->policy, .priority = o->priority, .rt_granted = -1,
                                  .nice = o->nice, .nice_granted = -1};
    if (o->policy != SCHED_OTHER) {
        int ok = sched_acquire(o->policy, o->priority);
        if (sched_is_rt(o->policy))
            p->rt_granted = ok;
        if (!ok) {
            p->policy = SCHED_OTHER;
            p->priority = 0;
        }
    }
    if (o->nice != 0) {
        /* Linux: PRIO_PROCESS with who = 0 is the calling thread. */
        errno = 0;
        int was = getpriority(PRIO_PROCESS, 0);
        int ok = setpriority(PRIO_PROCESS, 0, o->nice) == 0;
        if (ok && !errno)
            setpriority(PRIO_PROCESS, 0, was);
        p->nice_granted = ok;
        if (!ok)
            p->nice = 0;
    }
}

static void warn_privileges(const struct load_options *o, const struct load_privileges *p)
{
    if (p->rt_granted == 0)
        jw_warning("no_rt_policy", "SCHED_%s priority %d was not granted, so the load runs as SCHED_OTHER and "
                   "yields to ordinary tasks; run as root or raise RLIMIT_RTPRIO (ulimit -r).",
                   sched_rt_label(o->policy), o->priority);
    else if (p->policy != o->policy)
        jw_warning("no_policy", "policy %s was not granted, so the load runs as SCHED_OTHER.",
                   sched_policy_name(o->policy));
    if (p->nice_granted == 0)
        jw_warning("no_nice", "nice %d was not granted, so the load runs at nice 0; run as root or raise "
                   "RLIMIT_NICE (ulimit -e).", o->nice);
}

/* ---- meta ----------------------------------------------------------------------------------- */

static void print_meta(const struct load_ctx *c, int argc, char **argv)
{
    const struct load_options *o = &c->opt;
    const struct load_privileges *p = &c->priv;
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "kind", c->kind->name);
    jw_int(&w, "workers", o->workers);
    jw_arr(&w, "cpus");
    for (int i = 0; i < o->ncpus; i++)
        jw_int(&w, NULL, o->cpus[i]);
    jw_end(&w);
    jw_str(&w, "policy", sched_policy_name(o->policy));
    jw_int(&w, "priority", o->priority);
    jw_int(&w, "nice", o->nice);
    jw_uint(&w, "duration_ns", o->duration_ns);
    jw_uint(&w, "window_ns", o->window_ns);
    c->kind->params(c, &w);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_str(&w, "policy", sched_policy_name(p->policy));
    jw_int(&w, "priority", p->priority);
    if (p->rt_granted < 0)
        jw_null(&w, "rt_granted");
    else
        jw_bool(&w, "rt_granted", p->rt_granted);
    jw_int(&w, "nice", p->nice);
    if (p->nice_granted < 0)
        jw_null(&w, "nice_granted");
    else
        jw_bool(&w, "nice_granted", p->nice_granted);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

const char *load_method_name(enum cpu_method m) { return method_names[m]; }
const char *load_mem_op_name(enum mem_op m) { return mem_op_names[m]; }

/* The host measures beside the load once it has this record, rather than
 * after a guessed time: every worker has prepared (allocated, prefaulted,
 * calibrated) and runs from here, however long preparing took. */
static void emit_started(uint64_t prepare_ns)
{
    struct jw w = {0};
    jw_record(&w, "started");
    jw_uint(&w, "prepare_ns", prepare_ns);
    jw_emit(&w);
    jw_free(&w);
}

/* ---- threads -------------------------------------------------------------------------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_ready, gate_open;

static void on_wake(int sig)
{
    (void)sig;
}

static void *thread_main(void *arg)
{
    struct load_thread *t = arg;
    const struct load_ctx *c = t->ctx;

    atomic_store(&t->tid, (int)syscall(SYS_gettid));
    if (c->priv.nice_granted == 1)
        setpriority(PRIO_PROCESS, 0, c->priv.nice);
    int ok = c->kind->prepare ? c->kind->prepare(t) == 0 : 1;
    /* What preparing cost is not load: figures count from here. Written
     * before gate_ready, so the main thread sees it under gate_lock. */
    t->base_cpu_ns = load_thread_cpu_ns();

    pthread_mutex_lock(&gate_lock);
    gate_ready++;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);

    if (ok && !load_stopping())
        c->kind->body[t->role](t);
    atomic_store(&t->final_cpu_ns, load_thread_cpu_ns());
    atomic_store(&t->exit_ns, mono_ns());
    atomic_store(&t->done, 1);
    return NULL;
}

static int start_thread(struct load_thread *t)
{
    const struct load_ctx *c = t->ctx;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK);
    if (t->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t->cpu, &set);
        pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, c->priv.policy);
    struct sched_param sp = {.sched_priority = c->priv.priority};
    pthread_attr_setschedparam(&attr, &sp);
    int rc = pthread_create(&t->thread, &attr, thread_main, t);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        t->started = 1;
        t->clock_ok = pthread_getcpuclockid(t->thread, &t->clock) == 0;
    }
    return rc;
}

/* CPU time of a thread, read from the main thread. */
static uint64_t thread_cpu(struct load_thread *t)
{
    struct timespec ts;
    if (atomic_load(&t->done))
        return atomic_load(&t->final_cpu_ns);
    if (t->clock_ok && clock_gettime(t->clock, &ts) == 0)
        return ts_ns(&ts);
    return atomic_load(&t->done) ? atomic_load(&t->final_cpu_ns) : t->base_cpu_ns + t->prev_cpu;
}

/* ---- windows and result --------------------------------------------------------------------- */

struct span {
    uint64_t cpu, ops, bytes, counter[LOAD_MAX_COUNTERS];
    uint64_t wall;
};

static double rate(uint64_t n, uint64_t ns)
{
    return ns ? (double)n * 1e9 / (double)ns : 0.0;
}

/* cpu_wall: the wall time the CPU time is a share of (for a whole load,
 * the sum over its threads); rate_wall: the time rates are over. */
static void write_figures(struct jw *w, const struct load_kind *k, const struct span *s, uint64_t cpu_wall,
                          uint64_t rate_wall)
{
    jw_double(w, "achieved_percent", cpu_wall ? 100.0 * (double)s->cpu / (double)cpu_wall : 0.0);
    jw_uint(w, "cpu_time_ns", s->cpu);
    if (k->has_ops) {
        jw_uint(w, "ops", s->ops);
        jw_double(w, "achieved_ops_per_s", rate(s->ops, rate_wall));
    }
    if (k->has_bytes) {
        jw_uint(w, "bytes", s->bytes);
        jw_double(w, "achieved_bps", rate(s->bytes, rate_wall));
    }
    for (int i = 0; i < LOAD_MAX_COUNTERS && k->counters[i]; i++)
        if (k->counters[i][0] != '_')
            jw_uint(w, k->counters[i], s->counter[i]);
}


/* Figures of every thread over [from, to] into spans[], advancing the
 * threads' prev_* when `delta` (windows). `final`: the threads have
 * returned, each one's span ends when it did. */
static void measure(struct load_ctx *c, struct span *spans, uint64_t from, uint64_t to, int final, int delta)
{
    for (int i = 0; i < c->nthreads; i++) {
        struct load_thread *t = &c->threads[i];
        struct span *s = &spans[i];
        uint64_t end = to;
        if (final) {
            uint64_t e = atomic_load(&t->exit_ns);
            end = e > from ? e : from;
        }
        s->wall = end - from;
        s->cpu = thread_cpu(t);
        s->cpu = s->cpu > t->base_cpu_ns ? s->cpu - t->base_cpu_ns : 0;
        s->ops = atomic_load_explicit(&t->ops, memory_order_relaxed);
        s->bytes = atomic_load_explicit(&t->bytes, memory_order_relaxed);
        for (int j = 0; j < LOAD_MAX_COUNTERS; j++)
            s->counter[j] = atomic_load_explicit(&t->counter[j], memory_order_relaxed);
        if (!delta)
            continue;
        uint64_t cur_cpu = s->cpu;
        s->cpu = cur_cpu >= t->prev_cpu ? cur_cpu - t->prev_cpu : 0;
        t->prev_cpu = cur_cpu;
        s->ops -= t->prev_ops;
        t->prev_ops += s->ops;
        s->bytes -= t->prev_bytes;
        t->prev_bytes += s->bytes;
        for (int j = 0; j < LOAD_MAX_COUNTERS; j++) {
            s->counter[j] -= t->prev_counter[j];
            t->prev_counter[j] += s->counter[j];
        }
    }
}

/* A window (is_window) or the result, from the spans of every thread. */
static int emit_record(struct load_ctx *c, const struct span *spans, int is_window, uint64_t index, uint64_t from,
                       uint64_t to)
{
    const struct load_kind *k = c->kind;
    struct span total = {0};
    uint64_t wall_sum = 0;
    struct jw w = {0};

    for (int i = 0; i < c->nthreads; i++) {
        total.cpu += spans[i].cpu;
        total.ops += spans[i].ops;
        total.bytes += spans[i].bytes;
        for (int j = 0; j < LOAD_MAX_COUNTERS; j++)
            total.counter[j] += spans[i].counter[j];
        wall_sum += spans[i].wall;
    }
    jw_record(&w, is_window ? "window" : "result");
    jw_str(&w, "kind", k->name);
    if (is_window) {
        jw_uint(&w, "index", index);
        jw_uint(&w, "t_start_ns", from - c->start_ns);
        jw_uint(&w, "t_end_ns", to - c->start_ns);
    } else {
        jw_uint(&w, "elapsed_ns", to - from);
        jw_int(&w, "worker_count", c->opt.workers);
        jw_arr(&w, "cpus");
        for (int i = 0; i < c->opt.ncpus && i < c->opt.workers; i++)
            jw_int(&w, NULL, c->opt.cpus[i]);
        jw_end(&w);
    }
    /* The load's achieved_percent is the mean over its threads of each
     * one's share of a CPU (CPU time over the thread's wall time); rates
     * are over the wall time of the span. */
    write_figures(&w, k, &total, wall_sum, to - from);
    if (k->record_extra)
        k->record_extra(c, &w, total.counter, total.ops, !is_window);
    jw_arr(&w, "workers");
    for (int i = 0; i < c->nthreads; i++) {
        const struct load_thread *t = &c->threads[i];
        jw_obj(&w, NULL);
        jw_int(&w, "worker", t->worker);
        jw_str(&w, "role", k->role_names[t->role]);
        if (t->cpu >= 0)
            jw_int(&w, "cpu", t->cpu);
        else
            jw_null(&w, "cpu");
        jw_int(&w, "tid", atomic_load(&t->tid));
        write_figures(&w, k, &spans[i], spans[i].wall, spans[i].wall);
        jw_end(&w);
    }
    jw_end(&w);
    int rc = jw_emit(&w);
    jw_free(&w);
    return rc;
}

/* ---- run ------------------------------------------------------------------------------------ */

static void request_stop(struct load_ctx *c)
{
    atomic_store(&load_stop, 1);
    for (int i = 0; i < c->nthreads; i++)
        if (c->threads[i].started && !atomic_load(&c->threads[i].done))
            pthread_kill(c->threads[i].thread, WAKE_SIGNAL);
}

static int all_done(const struct load_ctx *c)
{
    for (int i = 0; i < c->nthreads; i++)
        if (c->threads[i].started && !atomic_load(&c->threads[i].done))
            return 0;
    return 1;
}

/* The first failed thread, NULL if none. */
static struct load_thread *failed_thread(struct load_ctx *c)
{
    for (int i = 0; i < c->nthreads; i++)
        if (atomic_load(&c->threads[i].error))
            return &c->threads[i];
    return NULL;
}

int cmd_load(int argc, char **argv)
{
    static struct load_ctx ctx;   /* large (the CPU list); not on the stack */
    struct load_ctx *c = &ctx;
    int rc = opts_done(parse_options(argc, argv, &c->opt));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    c->kind = kinds[c->opt.kind];

    sigset_t stopsigs;
    block_stop_signals(&stopsigs);
    signal(SIGPIPE, SIG_IGN);   /* a closed stdout or socket is an error code, not death */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_wake;    /* no SA_RESTART: interrupts sleeps and blocking calls */
    sigemptyset(&sa.sa_mask);
    sigaction(WAKE_SIGNAL, &sa, NULL);

    acquire_privileges(&c->opt, &c->priv);
    uint64_t t0 = mono_ns();
    char err[320] = "";
    int setup_ok = c->kind->setup ? c->kind->setup(c, err, sizeof err) == 0 : 1;
    print_meta(c, argc, argv);
    warn_privileges(&c->opt, &c->priv);
    if (setup_ok && c->kind->warn)
        c->kind->warn(c);
    if (!setup_ok) {
        fprintf(stderr, "rtvb-probe load: %s\n", err);
        if (c->kind->cleanup)
            c->kind->cleanup(c);
        emit_end("error", mono_ns() - t0, err);
        return EXIT_ENV;
    }

    int roles = c->kind->roles;
    c->nthreads = c->opt.workers * roles;
    c->threads = calloc((size_t)c->nthreads, sizeof *c->threads);
    if (!c->threads) {
        snprintf(err, sizeof err, "out of memory for %d threads.", c->nthreads);
        fprintf(stderr, "rtvb-probe load: %s\n", err);
        if (c->kind->cleanup)
            c->kind->cleanup(c);
        emit_end("error", mono_ns() - t0, err);
        return EXIT_ENV;
    }
    int created = 0, create_err = 0;
    for (int i = 0; i < c->nthreads; i++) {
        struct load_thread *t = &c->threads[i];
        t->ctx = c;
        t->worker = i / roles;
        t->role = i % roles;
        t->cpu = c->opt.ncpus ? c->opt.cpus[t->worker % c->opt.ncpus] : -1;
    }
    for (int i = 0; i < c->nthreads && !create_err; i++) {
        create_err = start_thread(&c->threads[i]);
        created += !create_err;
    }
    if (create_err)
        atomic_store(&load_stop, 1);

    /* Every thread has prepared (allocated, prefaulted, calibrated): start
     * them together, from one origin. */
    pthread_mutex_lock(&gate_lock);
    while (gate_ready < created)
        pthread_cond_wait(&gate_cond, &gate_lock);
    if (failed_thread(c))
        atomic_store(&load_stop, 1);
    int started = !load_stopping();
    c->start_ns = mono_ns();
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    if (started)
        emit_started(c->start_ns - t0);

    struct span *spans = calloc((size_t)c->nthreads, sizeof *spans);
    int interrupted = 0, out_failed = 0, stopping = load_stopping();
    uint64_t W = c->opt.window_ns;
    uint64_t win_from = c->start_ns, win_index = 0;
    uint64_t next_win = W ? c->start_ns + W : UINT64_MAX;
    uint64_t end_at = c->opt.duration_ns ? c->start_ns + c->opt.duration_ns : UINT64_MAX;
    if (!spans) {
        out_failed = 1;
        request_stop(c);
        stopping = 1;
    }
    for (;;) {
        uint64_t now = mono_ns();
        uint64_t wake = next_win < end_at ? next_win : end_at;
        if (stopping && wake > now + STOP_POLL_NS)
            wake = now + STOP_POLL_NS;
        if (wake > now + MAX_WAIT_NS)   /* also notices a failed worker within this */
            wake = now + MAX_WAIT_NS;
        if (wake > now) {
            struct timespec to = load_ts(wake - now);
            int sig = sigtimedwait(&stopsigs, NULL, &to);
            if (sig > 0 && !stopping) {
                interrupted = 1;
                stopping = 1;
                request_stop(c);
            }
            now = mono_ns();
        }
        if (!stopping) {
            for (int i = 0; i < c->nthreads; i++)
                if (atomic_load(&c->threads[i].done) && !atomic_load(&c->threads[i].error))
                    load_fail(&c->threads[i], EIO, "a worker stopped by itself");
            if (failed_thread(c)) {
                stopping = 1;
                request_stop(c);
            }
        }
        if (!stopping && now >= next_win) {
            measure(c, spans, win_from, now, 0, 1);
            if (emit_record(c, spans, 1, win_index++, win_from, now) != 0)
                out_failed = 1;
            win_from = now;
            while (next_win <= now)
                next_win += W;
        }
        if (!stopping && (now >= end_at || out_failed)) {
            stopping = 1;
            request_stop(c);
        }
        if (stopping) {
            if (all_done(c))
                break;
            request_stop(c);   /* again: a thread may have gone to sleep just after the flag */
        }
    }
    for (int i = 0; i < c->nthreads; i++)
        if (c->threads[i].started)
            pthread_join(c->threads[i].thread, NULL);

    if (started && spans && !out_failed) {
        uint64_t last = c->start_ns;
        for (int i = 0; i < c->nthreads; i++) {
            uint64_t e = atomic_load(&c->threads[i].exit_ns);
            last = e > last ? e : last;
        }
        /* The last, partial window, however short, so that the windows
         * tile the run and add up to the result. */
        if (W && last > win_from) {
            measure(c, spans, win_from, last, 1, 1);
            out_failed |= emit_record(c, spans, 1, win_index, win_from, last) != 0;
        }
        for (int i = 0; i < c->nthreads; i++) {
            struct load_thread *t = &c->threads[i];
            t->prev_cpu = t->prev_ops = t->prev_bytes = 0;
            memset(t->prev_counter, 0, sizeof t->prev_counter);
        }
        measure(c, spans, c->start_ns, last, 1, 0);
        out_failed |= emit_record(c, spans, 0, 0, c->start_ns, last) != 0;
    }
    if (c->kind->cleanup)
        c->kind->cleanup(c);

    struct load_thread *bad = failed_thread(c);
    if (create_err)
        snprintf(err, sizeof err, "cannot start a worker thread: %s.", strerror(create_err));
    else if (bad)
        snprintf(err, sizeof err, "worker %d (%s): %s: %s.", bad->worker, c->kind->role_names[bad->role],
                 bad->error_what, strerror(atomic_load(&bad->error)));
    else if (out_failed)
        snprintf(err, sizeof err, "%s", spans ? "standard output was closed, so the load stopped."
                                              : "out of memory for the window figures.");
    int error = create_err || bad || out_failed;
    if (error)
        fprintf(stderr, "rtvb-probe load: %s\n", err);
    emit_end(error ? "error" : interrupted ? "interrupted" : "ok", mono_ns() - t0, error ? err : NULL);
    free(spans);
    free(c->threads);
    return error ? EXIT_ENV : EXIT_OK;
}
