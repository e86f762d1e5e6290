/*
 * rtos: the costs of the primitives a real-time OS offers (task activation,
 * semaphores, mutexes, message queues, signals, yield, timers), measured on
 * Linux with POSIX threads at a fixed priority, one operation at a time.
 *
 * rtos.c reads the options, prints the records and runs the tests one after
 * another; rtos_ops.c measures them. docs/probe/rtos.md says what each test
 * times, from which instant to which.
 */
#ifndef RTVB_RTOS_H
#define RTVB_RTOS_H

#include <stdatomic.h>
#include <stdint.h>

#include "hist.h"

enum rtos_test {
    RTOS_FUTEX_WAKE,      /* FUTEX_WAKE -> the woken higher-priority thread runs */
    RTOS_SEM_WAKE,        /* sem_post -> sem_wait returns in the higher-priority thread */
    RTOS_MUTEX,           /* lock + unlock, uncontended */
    RTOS_MUTEX_HANDOVER,  /* unlock by the lower-priority holder -> lock returns in the waiter */
    RTOS_SEM,             /* sem_post + sem_wait in one thread, no switch */
    RTOS_SEM_PINGPONG,    /* post -> wait -> post -> wait between two equal threads */
    RTOS_MQ,              /* mq_send -> mq_receive returns in the higher-priority thread */
    RTOS_SIGNAL,          /* pthread_kill -> sigwait returns in the higher-priority thread */
    RTOS_YIELD,           /* sched_yield -> the other thread of equal priority runs */
    RTOS_TIMER,           /* absolute clock_nanosleep deadline -> the thread runs */
    RTOS_NTESTS
};

extern const char *const rtos_test_names[RTOS_NTESTS];

/* The sleep of each activation of the timer test (fixed: what it measures is
 * the lateness of the wake-up, not the period). */
#define RTOS_TIMER_PERIOD_NS 250000ull
/* Iterations run before the measured ones of every test, not recorded: the
 * first wake-ups of new threads fault in pages and warm caches. */
#define RTOS_WARMUP 10

/* How every test runs, as granted: both threads on one CPU; the thread that
 * is activated at prio_high, the one that activates it at prio_low (below
 * it under fifo/rr; both 0 under other). */
struct rtos_setup {
    int policy;
    int prio_high, prio_low;
    int cpu;
    uint64_t count;
};

/* What one test measured. */
struct rtos_run {
    struct hist *h;             /* the operation, one sample per measured iteration */
    struct hist *fwd, *back;    /* sem_pingpong: its two one-way steps */
    uint64_t missed;            /* attempts that measured nothing (a yield that did not switch) */
    int skipped;                /* the test cannot run here: why says why (a warning, no result) */
    char why[200];              /* skipped, or the error that ended the test early */
    int interrupted;            /* SIGINT/SIGTERM came during the test */
};

/* Set by the main thread on SIGINT/SIGTERM; every test stops at its next
 * iteration. */
extern atomic_int rtos_stop;

/* End the probe after a failure that leaves a measuring thread blocked for
 * good: an `error` end record naming why, exit status EXIT_ENV. */
void rtos_fatal(const char *why) __attribute__((noreturn));

/* Run one test; fills *r (its histograms reset by the caller). 0, or -1 when
 * it failed or was skipped (r->why). */
int rtos_measure(enum rtos_test t, const struct rtos_setup *s, struct rtos_run *r);

#endif
