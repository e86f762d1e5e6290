#include "port_tests.h"

#include <stdbool.h>

#include "port.h"

const char *const port_test_names[PORT_NTESTS] = {"task_activate", "sem_wake", "sem_pingpong", "irq_task"};

enum { TASK_HIGH, TASK_PING, TASK_PONG };
enum { SEM_WAKE, SEM_PING, SEM_PONG, SEM_DONE };

/* Shared by the tasks and the timer handler of the running test. seq
 * numbers every step any of them takes, so each can tell who ran between
 * two of its own steps. */
static volatile struct {
    uint64_t seq;
    uint64_t t0, t1;         /* the operation's start, and the measured side's first read */
    uint64_t step_seq;       /* seq at the measured side's step */
    uint64_t isr_seq;        /* seq at the timer handler's step */
    uint64_t runs;
    bool stop;
} s;

uint64_t port_ticks_to_ns(uint64_t ticks)
{
    uint64_t hz = port_counter_hz();
    return ticks / hz * 1000000000ull + ticks % hz * 1000000000ull / hz;
}

static uint64_t least_clock_read_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = port_counter(), b = port_counter();
        if (b - a < best)
            best = b - a;
    }
    return port_ticks_to_ns(best);
}

static void record(struct port_result *r, uint64_t i, uint64_t ticks)
{
    if (i >= PORT_WARMUP)
        hist_record(r->h, port_ticks_to_ns(ticks));
}

/* The activated task: its first instruction reads the counter. */
static void activated_entry(void *arg)
{
    (void)arg;
    s.t1 = port_counter();
    s.step_seq = ++s.seq;
    s.runs++;
}

/* A higher-priority task activated from the main task runs, once, before
 * port_task_activate returns. */
static int task_activate(uint64_t n, struct port_result *r, const char **why)
{
    if (port_task_create(TASK_HIGH, PORT_PRIO_HIGH, activated_entry, NULL)) {
        *why = "the port refused the activated task";
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = s.seq, runs = s.runs;
        s.t0 = port_counter();
        if (port_task_activate(TASK_HIGH)) {
            *why = "the activated task was still active when activated again";
            return -1;
        }
        uint64_t after = ++s.seq;
        r->in_order += s.step_seq == before + 1 && after == before + 2 && s.runs == runs + 1;
        record(r, i, s.t1 - s.t0);
    }
    return 0;
}

/* The taker: blocked in take until the main task gives, then reads the
 * counter first. */
static void taker_entry(void *arg)
{
    (void)arg;
    for (;;) {
        port_sem_take(SEM_WAKE);
        s.t1 = port_counter();
        if (s.stop)
            return;
        s.step_seq = ++s.seq;
        s.runs++;
    }
}

static int sem_wake(uint64_t n, struct port_result *r, const char **why)
{
    if (port_sem_create(SEM_WAKE, 0) || port_task_create(TASK_HIGH, PORT_PRIO_HIGH, taker_entry, NULL)) {
        *why = "the port refused the semaphore or the taker";
        return -1;
    }
    port_task_activate(TASK_HIGH);   /* it runs at once and blocks in take */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = s.seq, runs = s.runs;
        s.t0 = port_counter();
        port_sem_give(SEM_WAKE);
        uint64_t after = ++s.seq;
        r->in_order += s.step_seq == before + 1 && after == before + 2 && s.runs == runs + 1;
        record(r, i, s.t1 - s.t0);
    }
    s.stop = true;
    port_sem_give(SEM_WAKE);   /* the taker returns: terminated */
    r->sem_left = port_sem_count(SEM_WAKE);
    return 0;
}

/* The ping-pong's second task: answers every give on PING with one on PONG. */
static void pong_entry(void *arg)
{
    (void)arg;
    for (;;) {
        port_sem_take(SEM_PING);
        if (s.stop)
            return;
        s.t1 = port_counter();
        s.step_seq = ++s.seq;
        s.runs++;
        port_sem_give(SEM_PONG);
    }
}

struct pingpong {
    uint64_t n;
    struct port_result *r;
};

/* The first: at equal priority neither give preempts, so each direction is
 * a give, the giver blocking in its take, a switch and the take returning. */
static void ping_entry(void *arg)
{
    struct pingpong *p = arg;
    for (uint64_t i = 0; i < p->n; i++) {
        uint64_t before = s.seq, runs = s.runs;
        uint64_t t0 = port_counter();
        port_sem_give(SEM_PING);
        port_sem_take(SEM_PONG);
        uint64_t t2 = port_counter();
        p->r->in_order += s.step_seq == before + 1 && s.seq == before + 1 && s.runs == runs + 1;
        record(p->r, i, t2 - t0);
        if (i >= PORT_WARMUP) {
            hist_record(p->r->fwd, port_ticks_to_ns(s.t1 - t0));
            hist_record(p->r->back, port_ticks_to_ns(t2 - s.t1));
        }
    }
    s.stop = true;
    port_sem_give(SEM_PING);   /* the second returns once this one has */
}

static int sem_pingpong(uint64_t n, struct port_result *r, const char **why)
{
    static struct pingpong p;
    p = (struct pingpong){n, r};
    if (port_sem_create(SEM_PING, 0) || port_sem_create(SEM_PONG, 0) ||
        port_task_create(TASK_PONG, PORT_PRIO_EQUAL, pong_entry, NULL) ||
        port_task_create(TASK_PING, PORT_PRIO_EQUAL, ping_entry, &p)) {
        *why = "the port refused a semaphore or a ping-pong task";
        return -1;
    }
    port_task_activate(TASK_PONG);   /* blocks in its take at once */
    port_task_activate(TASK_PING);   /* runs every round trip before this returns */
    /* Both outrank this task: it runs again only once both have returned. */
    r->sem_left = port_sem_count(SEM_PING) + port_sem_count(SEM_PONG);
    return 0;
}

/* The handler the timer calls: it only makes the task ready, so the task
 * runs as the interrupt returns. */
PORT_ISR_CODE static void timer_isr(uint64_t now)
{
    (void)now;
    s.isr_seq = ++s.seq;
    port_task_activate(TASK_HIGH);
}

static void interrupted_entry(void *arg)
{
    (void)arg;
    s.t1 = port_counter();
    s.step_seq = ++s.seq;
    s.runs++;
    port_sem_give(SEM_DONE);
}

static int irq_task(uint64_t n, struct port_result *r, const char **why)
{
    if (port_sem_create(SEM_DONE, 0) || port_task_create(TASK_HIGH, PORT_PRIO_HIGH, interrupted_entry, NULL)) {
        *why = "the port refused the semaphore or the task";
        return -1;
    }
    uint64_t ahead = PORT_TIMER_AHEAD_NS * port_counter_hz() / 1000000000ull;
    port_timer_handler(timer_isr);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = s.seq, runs = s.runs;
        uint64_t deadline = port_counter() + ahead;
        port_timer_arm(deadline);
        port_sem_take(SEM_DONE);
        r->in_order += s.isr_seq == before + 1 && s.step_seq == before + 2 && s.runs == runs + 1;
        record(r, i, s.t1 > deadline ? s.t1 - deadline : 0);
    }
    port_timer_handler(NULL);
    r->sem_left = port_sem_count(SEM_DONE);
    return 0;
}

int port_test_run(enum port_test t, uint64_t count, struct port_result *r, const char **why)
{
    static int (*const run[PORT_NTESTS])(uint64_t, struct port_result *, const char **) = {
        task_activate, sem_wake, sem_pingpong, irq_task};
    hist_reset(r->h);
    hist_reset(r->fwd);
    hist_reset(r->back);
    r->runs = r->in_order = r->sem_left = 0;
    r->clock_read_ns = least_clock_read_ns();
    s.seq = s.t0 = s.t1 = s.step_seq = s.isr_seq = s.runs = 0;
    s.stop = false;
    int rc = run[t](count + PORT_WARMUP, r, why);
    r->runs = s.runs;
    return rc;
}
