/*
 * Shared state of the `load` subcommand: options, the per-thread machinery
 * every load kind runs on (load.c), and the kinds themselves
 * (load_cpu.c: cpu, timer; load_mem.c: mem, cache, leak; load_sys.c: io,
 * fork, net; load_sched.c: sched).
 *
 * A kind describes itself with a `struct load_kind`: how many threads a
 * worker has and what each runs, which counters it keeps, and hooks to set
 * up and tear down what its threads share. load.c does the rest: options,
 * meta, starting pinned threads with the requested policy, measuring each
 * thread's CPU time from outside (pthread_getcpuclockid), windows, result,
 * stopping on SIGINT/SIGTERM/SIGHUP or at --duration-s, cleanup, end.
 */
#ifndef RTVB_LOAD_H
#define RTVB_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "jsonw_fd.h"

#define LOAD_MAX_WORKERS 256
#define LOAD_MAX_CPUS 1024
#define LOAD_MAX_COUNTERS 4    /* kind-specific counters per thread */
#define LOAD_MAX_ROLES 2       /* threads per worker */

enum load_kind_id { LK_CPU, LK_MEM, LK_CACHE, LK_IO, LK_FORK, LK_LEAK, LK_TIMER, LK_NET, LK_SCHED, LK_COUNT };
enum cpu_method { CM_INTEGER, CM_FLOAT, CM_MATRIX, CM_MIXED };
enum busy_clock { BC_THREAD, BC_WALL };
enum mem_op { MO_READ, MO_WRITE, MO_COPY };
enum buffer_source { BS_OPTION, BS_LLC, BS_DEFAULT };

struct load_options {
    enum load_kind_id kind;
    int workers;
    int cpus[LOAD_MAX_CPUS];
    int ncpus;                  /* 0 = threads not pinned */
    int policy;                 /* SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR */
    int priority;               /* 1..99 with fifo/rr, else 0 */
    int nice;                   /* other/batch only */
    uint64_t duration_ns;       /* 0 = until a signal */
    uint64_t window_ns;         /* 0 = no windows */
    /* cpu */
    double percent;
    uint64_t period_ns;
    enum cpu_method method;
    enum busy_clock busy_clock;
    /* mem, cache */
    uint64_t buffer_bytes;      /* cache: resolved from the LLC when auto */
    enum buffer_source buffer_source;
    int64_t llc_bytes;          /* -1 = unknown */
    int llc_level;              /* 0 = unknown */
    uint64_t line_bytes;
    enum mem_op mem_op;
    /* mem, cache, io, net */
    uint64_t limit_bps;         /* 0 = no limit; total over workers */
    /* io, net */
    uint64_t block_bytes;
    /* io */
    const char *parent_dir;
    uint64_t file_bytes;
    int fsync;
    int drop_cache;
    /* fork */
    double fork_rate;           /* forks/s over all workers, 0 = as fast as possible */
    /* leak */
    double leak_bps;            /* 0 = as fast as possible */
    uint64_t limit_bytes;
    /* timer */
    double rate_hz;             /* over all workers */
    /* sched */
    uint64_t msg_bytes;         /* one message, at most PIPE_BUF */
};

/* What was actually granted, reported in meta.privileges. */
struct load_privileges {
    int policy, priority;
    int rt_granted;             /* -1 = not asked */
    int nice;
    int nice_granted;           /* -1 = not asked */
};

struct load_ctx;

/* One thread of the load. Counters are written by the thread only and read
 * by the main thread at window boundaries (relaxed atomics: a window may
 * see a counter a few operations early or late, never torn). */
struct load_thread {
    struct load_ctx *ctx;
    int worker;                 /* worker number, from 0 */
    int role;                   /* index in the kind's roles */
    int cpu;                    /* pinned CPU, -1 = not pinned */
    pthread_t thread;
    int started;
    clockid_t clock;            /* this thread's CPU-time clock */
    int clock_ok;
    atomic_int tid;
    _Atomic uint64_t ops, bytes;
    _Atomic uint64_t counter[LOAD_MAX_COUNTERS];
    uint64_t base_cpu_ns;            /* CPU time spent before the start (prepare) */
    _Atomic uint64_t final_cpu_ns;   /* set when the body returns */
    _Atomic uint64_t exit_ns;        /* monotonic time the body returned */
    atomic_int done;
    atomic_int error;           /* errno of a failure, published after error_what */
    char error_what[96];        /* what failed, for end.error */
    void *state;                /* the kind's per-thread state */
    /* main thread only: values at the last window boundary */
    uint64_t prev_cpu, prev_ops, prev_bytes, prev_counter[LOAD_MAX_COUNTERS];
};

struct load_kind {
    const char *name;
    int roles;                              /* threads per worker */
    const char *role_names[LOAD_MAX_ROLES];
    int has_bytes, has_ops;                 /* achieved_bps / achieved_ops_per_s apply */
    /* Counters printed per thread and summed; a name starting with '_'
     * is kept for derived figures but not printed. NULL ends the list. */
    const char *counters[LOAD_MAX_COUNTERS + 1];
    /* Before meta, in the main thread: shared resources (directory, sockets,
     * reservation). Returns 0, or -1 with a sentence in err. */
    int (*setup)(struct load_ctx *c, char *err, size_t errlen);
    /* Kind parameters of meta.params. */
    void (*params)(const struct load_ctx *c, struct jw *w);
    /* Warnings about the setup, printed right after meta (optional). */
    void (*warn)(const struct load_ctx *c);
    /* In the thread, before the common start: allocate, prefault, calibrate.
     * Returns 0 or sets t->error / t->error_what and returns -1. */
    int (*prepare)(struct load_thread *t);
    /* The load itself, one per role; returns when load_stopping() or on an
     * error (t->error set). */
    void (*body[LOAD_MAX_ROLES])(struct load_thread *t);
    /* Extra members of window and result records (whole-load figures). The
     * counters are the sums over threads for the span covered. */
    void (*record_extra)(const struct load_ctx *c, struct jw *w, const uint64_t *counters,
                         uint64_t ops, int final);
    /* After every thread has been joined: free, unlink, close. */
    void (*cleanup)(struct load_ctx *c);
};

struct load_ctx {
    struct load_options opt;
    struct load_privileges priv;
    const struct load_kind *kind;
    struct load_thread *threads;
    int nthreads;
    uint64_t start_ns;          /* common origin, monotonic */
    void *state;                /* the kind's shared state */
};

extern const struct load_kind load_kind_cpu, load_kind_timer;
extern const struct load_kind load_kind_mem, load_kind_cache, load_kind_leak;
extern const struct load_kind load_kind_io, load_kind_fork, load_kind_net;
extern const struct load_kind load_kind_sched;

/* Set once the load must stop (signal, duration, error). Bodies poll it
 * between units of work; sleeping bodies are woken by a signal (EINTR). */
extern atomic_int load_stop;
static inline int load_stopping(void)
{
    return atomic_load_explicit(&load_stop, memory_order_relaxed);
}

/* Counter updates by the owning thread. */
static inline void load_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

uint64_t load_thread_cpu_ns(void);   /* CPU time of the calling thread */

/* Sleep until a CLOCK_MONOTONIC time; returns early (EINTR) when the load
 * is told to stop. */
void load_sleep_until(uint64_t abs_ns);

/* Rate limiting for byte-moving kinds: sleep until `done_bytes` is due at
 * the per-thread share of --bps-limit, counted from the common start. No-op
 * without a limit. */
void load_pace_bytes(struct load_thread *t, uint64_t done_bytes);

/* Record a failure of this thread; the main thread stops the load and ends
 * with status "error". */
void load_fail(struct load_thread *t, int err, const char *what);

/* free() every thread's `state`: the cleanup of kinds that need no other. */
void load_free_thread_states(struct load_ctx *c);

const char *load_method_name(enum cpu_method m);
const char *load_mem_op_name(enum mem_op m);

static inline struct timespec load_ts(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
}

#endif
