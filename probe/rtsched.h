/*
 * rtsched: scheduling policies by name, and finding out whether threads
 * may run at a real-time policy, the checks of --policy / --priority and
 * the start of pinned measuring threads, shared by latency, noise and load.
 *
 * (Not "sched.h": the C unit tests compile with -Iprobe, where a header of
 * that name would stand in for the system's <sched.h>.)
 */
#ifndef RTVB_RTSCHED_H
#define RTVB_RTSCHED_H

#include <pthread.h>
#include <stddef.h>

/* The policies as options name them, in this order: fifo, rr, other, batch,
 * idle. A subcommand accepts the first SCHED_RT_OR_OTHER (latency) or all
 * SCHED_ANY_POLICY (load). */
#define SCHED_RT_OR_OTHER 3
#define SCHED_ANY_POLICY 5
extern const char *const sched_policy_names[SCHED_ANY_POLICY];
extern const int sched_policy_values[SCHED_ANY_POLICY];

/* "fifo", "rr", "other", "batch", "idle" ("other" for an unknown one). */
const char *sched_policy_name(int policy);
/* "FIFO" or "RR", as in SCHED_FIFO, for messages. */
const char *sched_rt_label(int policy);
int sched_is_rt(int policy);

/* Whether threads of this process may be started at policy / priority.
 * Finds out by starting one such thread, so the caller's own policy is
 * never changed. A real-time request the soft RLIMIT_RTPRIO is too low for
 * raises that limit to the priority when the hard limit allows (as
 * cyclictest does) and tries again; the raised limit is kept only when it
 * made the difference, since the caller's threads need it. Returns 1 when
 * granted, else 0. */
int sched_acquire(int policy, int priority);

/* The --policy / --priority pair of a measuring subcommand: "other" takes no
 * priority (a given non-zero one is an error; *priority becomes 0), fifo and
 * rr need 1..99. 0, or the usage error printed for `sub` and -1. */
int sched_check_priority(const char *sub, int policy, int *priority, int priority_given);

/* Start fn(arg) in a thread pinned to `cpu` at policy / priority (not
 * inherited from the caller), with a stack of stack_bytes; pthread_create's
 * result. The measuring threads of latency and noise start this way. */
int sched_start_pinned(pthread_t *thread, int cpu, int policy, int priority, size_t stack_bytes,
                       void *(*fn)(void *), void *arg);

/* Touch `bytes` of the calling thread's stack now, so that its pages are
 * present (and locked, with mlockall) before the first measurement rather
 * than faulted in during one. A measuring thread calls it first. */
void sched_prefault_stack(size_t bytes);

#endif
