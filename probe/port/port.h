/*
 * The porting layer: everything the RTOS-primitive measurements
 * (port_tests.c) ask of the system under them. Porting them to an RTOS
 * means writing one C file that implements these hooks with the RTOS's own
 * calls; docs/porting.md says how, step by step.
 *
 * Two implementations come with the probe: port_linux.c (POSIX threads at
 * SCHED_FIFO priorities on one CPU) and baremetal/port_baremetal.c (a tiny
 * fixed-priority preemptive scheduler of the bare-metal image).
 *
 * Contexts a hook may be called from:
 *   task   a task created by port_task_create, or the task port_run starts
 *   isr    the timer handler given to port_timer_handler, while it runs
 * Nothing here is called before port_run or after it returns, except
 * port_counter, port_counter_hz, port_console_* and port_shared_region.
 *
 * The measurements assume a uniprocessor: every task and the timer handler
 * run on one CPU, and of the ready tasks the one of the highest priority
 * runs. A task made ready by a task of lower priority runs before that
 * task's call returns; one made ready by the timer handler runs as the
 * interrupt returns. Tasks of equal priority do not preempt each other:
 * the one that became ready first runs first.
 */
#ifndef RTVB_PORT_H
#define RTVB_PORT_H

#include <stddef.h>
#include <stdint.h>

/* Tasks and semaphores are named by small numbers, as Thread-Metric's
 * porting layer names them: no handle types to port. */
#define PORT_MAX_TASKS 6
#define PORT_MAX_SEMS 6
/* Priorities 1 (least urgent) .. PORT_PRIO_MAX (most); the timer handler
 * is above them all. */
#define PORT_PRIO_MAX 8

/* The free-running counter every sample is read from, and its frequency.
 * Any context; never blocks. Two reads in one task never go backwards. */
uint64_t port_counter(void);
uint64_t port_counter_hz(void);

/* The one-shot timer standing for an interrupt source. The handler runs in
 * isr context once the counter has reached the armed deadline, with the
 * counter read as the first thing the interrupt path does (now); it may
 * call port_task_activate and port_sem_give, never a blocking hook. The
 * interrupt is acknowledged by the port before the handler runs, and the
 * timer is then off until armed again. port_timer_arm: task context, never
 * blocks; arm again only once the handler has run. */
typedef void (*port_isr)(uint64_t now);
/* Marks a timer handler and what only it calls: where the interrupt entry
 * saves no FP/SIMD register (the aarch64 image), that code must not use
 * one. */
#if defined(__aarch64__) && !__STDC_HOSTED__
#define PORT_ISR_CODE __attribute__((target("general-regs-only")))
#else
#define PORT_ISR_CODE
#endif
void port_timer_handler(port_isr isr);
void port_timer_arm(uint64_t deadline);

/* A critical section against the timer handler (interrupts masked): task
 * or isr context, never blocks, nests (restore the value save returned).
 * Keep it short: a deadline that passes inside it is served late. */
unsigned long port_irq_save(void);
void port_irq_restore(unsigned long saved);

/* The console the records go out on (the platform's JSON Lines writer is
 * built on it). Task context. write blocks until the bytes are taken;
 * getc returns the next byte or -1 at once when none is waiting. */
void port_console_write(const char *s, size_t n);
int port_console_getc(void);

/* The memory region shared with the other side of a partitioned system
 * (Linux beside the partition): its address and size, or NULL and 0 when
 * the platform has none. Any context; the mapping lasts the program. */
void *port_shared_region(size_t *bytes);

/* A task runs entry(arg) from its first instruction each time it is
 * activated; returning from entry terminates it (OSEK's TerminateTask: the
 * task is suspended until activated again, and its stack is free). Create
 * in task context, before the task is first activated; 0, or -1 when the
 * number or priority is out of range or the system refuses. */
typedef void (*port_entry)(void *arg);
int port_task_create(int task, int priority, port_entry entry, void *arg);

/* Makes a suspended task ready. Task or isr context; never blocks, but
 * from a task of lower priority the activated task runs before it returns.
 * -1 when the task is not suspended (an activation is not queued). */
int port_task_activate(int task);

/* Counting semaphores, created with a count in task context before use.
 * give: task or isr context, never blocks; wakes the highest-priority
 * taker (the longest waiting among equals), which runs before give returns
 * when it outranks the caller. take: task context; blocks until the count
 * is above 0, then decrements it. */
int port_sem_create(int sem, unsigned count);
void port_sem_give(int sem);
void port_sem_take(int sem);
/* The count now (a test's balance check). Any context. */
unsigned port_sem_count(int sem);

/* Starts the system: main(arg) runs as a task at `priority`; returns once
 * main has returned and every task it activated has terminated or waits
 * on a semaphore (those are discarded). 0, or -1 when the system could not
 * start (the reason in why, a sentence). */
int port_run(int priority, port_entry main, void *arg, const char **why);

/* What the records say of how the tasks ran: the policy asked for and
 * granted ("fifo" on the image), and the base added to every priority. */
struct port_info {
    const char *policy, *policy_granted;
    int priority_base, cpu;
};
void port_describe(struct port_info *info);

#endif
