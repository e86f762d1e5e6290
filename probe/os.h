/*
 * Shared state of the `os` subcommand, split over os.c (options, driver,
 * shared helpers), os_sys.c (system-call class), os_proc.c (signals,
 * processes, context switch, transports), os_conn.c (semaphore round
 * trip, TCP connection), os_file.c (files, page faults, mappings) and
 * os_cpu.c (arithmetic latency, procedure call).
 *
 * Every test times its operation with the shared harness (timing.h) and
 * prints one result per variant as soon as it is known.
 */
#ifndef RTVB_OS_H
#define RTVB_OS_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonw_fd.h"
#include "timing.h"

#define OS_MAX_LIST 16       /* entries of --fds, --mmap-sizes, --file-sizes, --ctx */
#define OS_MAX_PROCS 64      /* processes in a context-switch ring */

struct os_ctx_size {
    int procs;
    uint64_t ws_bytes;       /* working set each process reads per hop */
};

struct os_opts {
    uint32_t tests;          /* bit i: os_tests[i] selected */
    int quick;
    const char *dir;         /* parent of the scratch directory */
    uint64_t fds[OS_MAX_LIST];
    int nfds;
    struct os_ctx_size ctx[OS_MAX_LIST];
    int nctx;
    uint64_t mmap_sizes[OS_MAX_LIST];
    int nmmap;
    uint64_t file_sizes[OS_MAX_LIST];
    int nfile;
    uint64_t pagefault_bytes;
    uint64_t reread_bytes;
    uint64_t bw_chunk;
    int ctx_cpu;             /* CPU the ring is pinned to, -1 = not pinned */
    int pair_cpus[2];        /* *_lat, *_bw: CPUs of this end and the peer */
    int pair_pinned;
    struct timing_opts timing;
};

/* What the tests share at run time. */
struct os_run {
    const struct os_opts *o;
    char workdir[PATH_MAX];  /* scratch directory, "" when it could not be made */
    char exe[PATH_MAX];      /* file fork_exec runs */
    char exe_file[PATH_MAX]; /* the probe's own file by name, "" if unknown (fork_sh) */
    const char *sh;          /* /bin/sh, NULL when absent */
    int failed;              /* a test failed unexpectedly */
    char first_error[512];
};

/* Set by SIGINT/SIGTERM; blocking calls of the tests return EINTR. */
extern volatile sig_atomic_t os_stop;

/* Every timed operation's argument starts with this: a failing operation
 * records errno and what failed, and returns early. */
struct op_base {
    int err;
    const char *what;
};

static inline int op_fail(struct op_base *b, const char *what, int err)
{
    if (!b->err) {
        b->err = err ? err : -1;
        b->what = what;
    }
    return -1;
}

/* Time fn with the run's options (or `opts` when not NULL). Returns 0, or
 * -1 after printing a warning when the operation failed. */
int os_time(struct os_run *r, const char *test, timed_fn fn, struct op_base *arg,
            const struct timing_opts *opts, struct timing *t);
/* A figure that is a * scale - b, timed by time_op_diff with the same guards
 * as os_time. Returns 0, or -1 after a warning. */
int os_time_diff(struct os_run *r, const char *test, timed_fn fa, struct op_base *a, timed_fn fb,
                 struct op_base *b, double scale, struct timing *ta, struct timing *tb, struct timing *d);
/* Turn each per-sample value v into v * scale - sub (sub_per_sample[i]
 * when not NULL) and recompute mean, median, extremes, spread and error;
 * `converged` stays true only if the derived figure's error is below
 * target too (subtracting shrinks the mean, so the relative error grows). */
void os_timing_derive(struct timing *t, double scale, double sub, const double *sub_per_sample, double target);

/* A "result" record: begin (type, test), add fields, then end with the
 * timing fields (NULL: none) and print it. */
void os_result_begin(struct jw *w, const char *test);
void os_result_end(struct jw *w, const struct timing *t);

/* --pair-cpus as [A, B], or null when not pinned. */
void os_write_pair_cpus(struct jw *w, const char *key, const struct os_opts *o);
/* A test that cannot run here: warning "test_skipped", no result. */
void os_skip(const char *test, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A test that failed: warning "test_failed", end status error. */
void os_failed(struct os_run *r, const char *test, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Read every 64-bit word of buf (kept from being optimised away). */
uint64_t os_sum(const void *buf, size_t len);

/* The tests, in os_sys.c, os_proc.c and os_file.c. */
void os_test_null(struct os_run *r);
void os_test_read(struct os_run *r);
void os_test_write(struct os_run *r);
void os_test_stat(struct os_run *r);
void os_test_fstat(struct os_run *r);
void os_test_open_close(struct os_run *r);
void os_test_select(struct os_run *r);
void os_test_poll(struct os_run *r);
void os_test_sig_install(struct os_run *r);
void os_test_sig_catch(struct os_run *r);
void os_test_prot_fault(struct os_run *r);
void os_test_fork(struct os_run *r);
void os_test_fork_exec(struct os_run *r);
void os_test_fork_sh(struct os_run *r);
void os_test_pagefault(struct os_run *r);
void os_test_mmap(struct os_run *r);
void os_test_file_create_delete(struct os_run *r);
void os_test_ctx(struct os_run *r);
void os_test_pipe_lat(struct os_run *r);
void os_test_unix_lat(struct os_run *r);
void os_test_udp_lat(struct os_run *r);
void os_test_tcp_lat(struct os_run *r);
void os_test_tcp_connect(struct os_run *r);
void os_test_sem_lat(struct os_run *r);
void os_test_pipe_bw(struct os_run *r);
void os_test_unix_bw(struct os_run *r);
void os_test_tcp_bw(struct os_run *r);
void os_test_file_reread(struct os_run *r);
void os_test_mmap_reread(struct os_run *r);
void os_test_proc_call(struct os_run *r);
void os_test_arith(struct os_run *r);

#endif
