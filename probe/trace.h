/*
 * trace: kernel trace capture around latency breaches (the `latency`
 * subcommand's --trace-threshold-us).
 *
 * The probe records scheduler, interrupt and timer events in a tracefs
 * instance of its own, marks every cycle in it, and when a wake-up is later
 * than the threshold stops the buffer and prints the last milliseconds of
 * every measured CPU as a `trace` record, so that the host can say what held
 * the CPU. One capture per process: the functions below use file-level state.
 *
 * Threads: trace_setup/trace_poll/trace_finish run on the main thread;
 * trace_mark and trace_breach on the measuring threads, lock-free.
 */
#ifndef RTVB_TRACE_H
#define RTVB_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct trace_options {
    uint64_t threshold_ns;     /* 0 = no trace capture */
    unsigned max_breaches;     /* traces saved at most */
    uint64_t history_ns;       /* how much of the buffer before the deadline is kept */
};

struct jw;

/* Create the instance and enable the events on `cpus`. 0 when capturing;
 * otherwise -1 with one sentence in `why` saying what was missing (the
 * caller prints it as a warning and measures without tracing). */
int trace_setup(const struct trace_options *o, const int *cpus, int ncpus, char *why, size_t why_len);
/* Whether trace_setup succeeded (for meta.privileges). */
int trace_active(void);
/* Events actually enabled, for meta: written as a JSON array under `key`. */
void trace_write_events(struct jw *w, const char *key);

/* A measuring thread's wake-up: a marker per cycle while the buffer records,
 * and on a wake-up above the threshold, the stop of the buffer. Returns 1 if
 * this breach will be saved, 0 if it was not (a save in progress, or the
 * limit of saved traces reached): the caller counts those. `origin_ns` is the
 * run's start, so that the record says when in the run the breach was. */
void trace_mark(uint64_t cycle, uint64_t latency_ns, uint64_t wake_ns);
int trace_breach(int cpu, pid_t tid, uint64_t cycle, uint64_t deadline_ns, uint64_t wake_ns, uint64_t origin_ns);

/* trace clock - CLOCK_MONOTONIC from the markers in one CPU's trace text
 * (each carries the wake_ns its thread read just before writing it): the
 * smallest difference. *found = 0 when the text has no marker. */
int64_t trace_clock_offset(const char *text, size_t len, int *found);

/* Main thread, every few milliseconds: saves a stopped buffer as `trace`
 * records and re-arms it. */
void trace_poll(void);
/* After the measuring threads ended: saves what is pending and removes the
 * instance. */
void trace_finish(void);
/* Traces saved so far. */
unsigned trace_saved(void);

/* tracefs helpers, shared with the kernel-tracer subcommand. */
#define TRACEFS_INSTANCE_PREFIX "rtvb-probe-"
/* The tracefs mount with instances (mounted at /sys/kernel/tracing when it is
 * not); NULL with one sentence in `why`. */
const char *tracefs_root(char *why, size_t why_len);
/* Remove the instances of rtvb-probe processes that no longer run. */
void tracefs_remove_stale(const char *root);
/* /proc/PID/stat: comm, and the numeric fields at their 1-based numbers of
 * proc(5) in f[0..PROC_STAT_FIELDS) (f[14] utime, f[15] stime, f[19] nice,
 * f[40] rt_priority, f[41] policy). 0, or -1 when it cannot be read. */
#define PROC_STAT_FIELDS 64
int proc_stat(int pid, char *comm, size_t comm_len, long long *f);
/* Write `text` to dir/name (open flags added: O_APPEND, O_TRUNC); 0 or errno. */
int tracefs_write(const char *dir, const char *name, const char *text, int flags);

#endif
