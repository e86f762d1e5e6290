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
void trace_mark(uint64_t cycle, uint64_t latency_ns);
int trace_breach(int cpu, pid_t tid, uint64_t cycle, uint64_t deadline_ns, uint64_t wake_ns, uint64_t origin_ns);

/* Main thread, every few milliseconds: saves a stopped buffer as `trace`
 * records and re-arms it. */
void trace_poll(void);
/* After the measuring threads ended: saves what is pending and removes the
 * instance. */
void trace_finish(void);
/* Traces saved so far. */
unsigned trace_saved(void);

#endif
