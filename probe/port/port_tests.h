/*
 * The RTOS-primitive measurements written once against the porting layer
 * (port.h), compiled into the Linux probe and the bare-metal image alike.
 * Each runs inside port_run's main task, times every operation on its own
 * with port_counter and checks, as it goes, what must hold whatever the
 * timing: which task ran, how often, and in what order.
 */
#ifndef RTVB_PORT_TESTS_H
#define RTVB_PORT_TESTS_H

#include <stdint.h>

#include "hist.h"

enum port_test {
    PORT_TASK_ACTIVATE,   /* activate a higher-priority task -> its first instruction */
    PORT_SEM_WAKE,        /* give -> the higher-priority taker's take returns */
    PORT_SEM_PINGPONG,    /* give, take between two tasks of equal priority: the round trip */
    PORT_IRQ_TASK,        /* timer deadline -> the task the handler activated runs */
    PORT_NTESTS
};

extern const char *const port_test_names[PORT_NTESTS];

/* Operations run before the measured ones, not recorded (first use of the
 * tasks' stacks, caches). */
#define PORT_WARMUP 10
/* How far ahead irq_task arms each deadline. */
#define PORT_TIMER_AHEAD_NS 250000ull

/* The priorities the tests give their tasks (port.h's scale). */
#define PORT_PRIO_MAIN 2      /* the task that runs the tests and activates */
#define PORT_PRIO_EQUAL 3     /* both tasks of the ping-pong */
#define PORT_PRIO_HIGH 4      /* the task that is activated or woken */

/* What one test measured, and the ground truths it checked. */
struct port_result {
    struct hist *h, *fwd, *back;   /* the operation; sem_pingpong's two steps */
    uint64_t runs;         /* times the measured task ran its step (warm-up included) */
    uint64_t in_order;     /* operations whose tasks ran in the order the priorities demand */
    uint64_t sem_left;     /* the semaphores' counts added up once the test ended: 0 when they balance */
    uint64_t clock_read_ns;
};

/* Runs test t for count operations (plus the warm-up) and fills r, whose
 * histograms the caller provides (reset here). Call from port_run's main
 * task, which must run at PORT_PRIO_MAIN. 0, or -1 when the port refused a
 * task or semaphore (why says which). */
int port_test_run(enum port_test t, uint64_t count, struct port_result *r, const char **why);

/* Counter ticks as ns. */
uint64_t port_ticks_to_ns(uint64_t ticks);

#endif
