/*
 * The measured operations of `rtos` (rtos.h). Every sample is one operation
 * timed on its own with CLOCK_MONOTONIC, never a loop's average, so that the
 * maximum and the percentiles are those of single operations.
 *
 * Activation tests (a higher-priority thread made ready runs) use a pair of
 * threads on the same CPU: the waiter, at the higher priority, blocks in the
 * primitive; the waker, one priority below, reads the clock (t0) and wakes
 * it; the waiter reads the clock as soon as its call returns (t1). Under
 * SCHED_FIFO on one CPU the wake is a preemption: t1 - t0 is the whole path
 * from the waking call to the first instruction of the woken thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"
#include "rtos.h"
#include "rtsched.h"

#define THREAD_STACK (64 * 1024)
#define STACK_PREFAULT (16 * 1024)
/* How long the waker waits for the waiter to block before the test is
 * declared broken: far beyond any scheduling delay, short of a hang. */
#define BLOCK_TIMEOUT_NS (2 * 1000000000ull)
#define MQ_MSG_BYTES 16

const char *const rtos_test_names[RTOS_NTESTS] = {
    "futex_wake", "sem_wake", "mutex", "mutex_handover", "sem", "sem_pingpong", "mq", "signal", "yield", "timer",
};

atomic_int rtos_stop;

static void record(struct rtos_run *r, uint64_t iteration, uint64_t ns)
{
    if (iteration >= RTOS_WARMUP)
        hist_record(r->h, ns);
}

static int stopping(void)
{
    return atomic_load_explicit(&rtos_stop, memory_order_relaxed);
}

static void fail(struct rtos_run *r, const char *what, int err)
{
    snprintf(r->why, sizeof r->why, "%s failed: %s", what, strerror(err));
}

static int start_thread(pthread_t *t, const struct rtos_setup *s, int prio, void *(*fn)(void *), void *arg)
{
    return sched_start_pinned(t, s->cpu, s->policy, prio, THREAD_STACK, fn, arg);
}

/* ---- activation through a primitive: waiter and waker ------------------ */

struct pair;

/* How one primitive blocks and wakes. before/after are optional hooks of the
 * waiter around its announced wait (untimed); arm runs in the waker before it
 * waits for the waiter to block (untimed). */
struct wake_ops {
    const char *name;
    int (*setup)(struct pair *p);               /* 0, or an errno value: the test cannot run */
    void (*teardown)(struct pair *p);
    void (*before)(struct pair *p);
    int (*wait)(struct pair *p);                /* 0, or an errno value */
    void (*after)(struct pair *p);
    void (*arm)(struct pair *p);
    int (*wake)(struct pair *p);                /* 0, or an errno value */
};

struct pair {
    const struct rtos_setup *s;
    struct rtos_run *r;
    const struct wake_ops *ops;
    pthread_t waiter;
    _Atomic pid_t waiter_tid;
    _Atomic uint64_t announced;                 /* iteration + 1 the waiter is about to block for */
    _Atomic uint64_t t0;
    atomic_int quit;
    atomic_int wait_error;
    atomic_uint word;                           /* futex */
    sem_t sem, gate;
    pthread_mutex_t mutex;
    mqd_t mq;
    sigset_t usr1;
};

static void *waiter_main(void *arg)
{
    struct pair *p = arg;
    atomic_store(&p->waiter_tid, (pid_t)syscall(SYS_gettid));
    sched_prefault_stack(STACK_PREFAULT);
    for (uint64_t i = 0;; i++) {
        if (p->ops->before)
            p->ops->before(p);
        atomic_store(&p->announced, i + 1);
        int err = p->ops->wait(p);
        uint64_t t1 = mono_ns();
        if (err && !atomic_load(&p->wait_error))
            atomic_store(&p->wait_error, err);
        if (atomic_load(&p->quit)) {
            if (p->ops->after)
                p->ops->after(p);
            return NULL;
        }
        record(p->r, i, t1 - atomic_load_explicit(&p->t0, memory_order_acquire));
        if (p->ops->after)
            p->ops->after(p);
    }
}

/* Whether the thread whose /proc/self/task/<tid>/stat is open at fd sleeps
 * (state S): blocked in its wait, or about to switch away in it. */
static int thread_sleeps(int fd)
{
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');   /* the command name may hold spaces and parentheses */
    return paren && paren[1] == ' ' && paren[2] == 'S';
}

/* Wait until the waiter has announced iteration i and sleeps. On one CPU under
 * SCHED_FIFO it always has by the time the lower-priority waker runs; under
 * SCHED_OTHER it may not have, and waking a thread that is not yet blocked
 * would time something else. 0, or -1 after BLOCK_TIMEOUT_NS. */
static int wait_blocked(struct pair *p, int stat_fd, uint64_t i)
{
    uint64_t start = mono_ns();
    while (atomic_load(&p->announced) != i + 1 || !thread_sleeps(stat_fd)) {
        if (mono_ns() - start > BLOCK_TIMEOUT_NS)
            return -1;
        sched_yield();   /* lets the waiter run when it shares the CPU at the same policy */
    }
    return 0;
}

static int open_task_stat(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* The waker's loop: RTOS_WARMUP + count timed wakes, then one more that tells
 * the waiter to quit. */
static void waker_loop(struct pair *p, int stat_fd)
{
    const uint64_t total = RTOS_WARMUP + p->s->count;
    for (uint64_t i = 0; i <= total; i++) {
        int last = i == total || stopping() || p->r->why[0] || atomic_load(&p->wait_error);
        if (p->ops->arm)
            p->ops->arm(p);
        if (wait_blocked(p, stat_fd, i) && !p->r->why[0])
            snprintf(p->r->why, sizeof p->r->why, "the %s waiter did not block within %llu s", p->ops->name,
                     BLOCK_TIMEOUT_NS / 1000000000ull);
        if (last)
            atomic_store(&p->quit, 1);
        atomic_store_explicit(&p->t0, mono_ns(), memory_order_release);
        int err = p->ops->wake(p);
        if (err) {
            /* The waiter stays blocked in a wait nothing else ends: the probe cannot go on. */
            fail(p->r, p->ops->name, err);
            rtos_fatal(p->r->why);
        }
        if (last) {
            p->r->interrupted = stopping();
            return;
        }
    }
}

static void *waker_main(void *arg)
{
    struct pair *p = arg;
    sched_prefault_stack(STACK_PREFAULT);
    int fd = open_task_stat(atomic_load(&p->waiter_tid));
    if (fd < 0) {
        /* Without it the waker cannot tell when the waiter blocks, and the waiter is never released. */
        fail(p->r, "opening the waiter's /proc/self/task/<tid>/stat", errno);
        rtos_fatal(p->r->why);
    }
    waker_loop(p, fd);
    close(fd);
    return NULL;
}

static int run_pair(const struct wake_ops *ops, const struct rtos_setup *s, struct rtos_run *r)
{
    static struct pair p;   /* large and shared by two threads: not on a stack */
    memset(&p, 0, sizeof p);
    p.s = s;
    p.r = r;
    p.ops = ops;
    int err = ops->setup ? ops->setup(&p) : 0;
    if (err) {
        r->skipped = 1;
        fail(r, ops->name, err);
        return -1;
    }
    pthread_t waker;
    err = start_thread(&p.waiter, s, s->prio_high, waiter_main, &p);
    while (!err && atomic_load(&p.waiter_tid) == 0)
        sched_yield();
    if (!err) {
        err = start_thread(&waker, s, s->prio_low, waker_main, &p);
        if (err) {
            /* The waiter is blocked for a waker that never comes. */
            fail(r, "starting the test's waker thread", err);
            rtos_fatal(r->why);
        }
        pthread_join(p.waiter, NULL);
        pthread_join(waker, NULL);
    } else {
        fail(r, "starting the test's waiter thread", err);
    }
    if (!r->why[0] && atomic_load(&p.wait_error))
        fail(r, ops->name, atomic_load(&p.wait_error));
    if (ops->teardown)
        ops->teardown(&p);
    return r->why[0] ? -1 : 0;
}

/* futex: the bare kernel wait queue every blocking primitive is built on. */
static void futex_reset(struct pair *p)
{
    atomic_store(&p->word, 0);
}

static int futex_wait(struct pair *p)
{
    while (atomic_load(&p->word) == 0)
        if (syscall(SYS_futex, &p->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) != 0 && errno != EAGAIN &&
            errno != EINTR)
            return errno;
    return 0;
}

static int futex_wake(struct pair *p)
{
    atomic_store(&p->word, 1);
    return syscall(SYS_futex, &p->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 0 ? errno : 0;
}

static const struct wake_ops futex_ops = {
    .name = "futex", .before = futex_reset, .wait = futex_wait, .wake = futex_wake,
};

/* POSIX semaphore. */
static int sem_setup(struct pair *p)
{
    return sem_init(&p->sem, 0, 0) ? errno : 0;
}

static void sem_teardown(struct pair *p)
{
    sem_destroy(&p->sem);
}

static int sem_take(sem_t *s)
{
    while (sem_wait(s) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

static int sem_wait_op(struct pair *p)
{
    return sem_take(&p->sem);
}

static int sem_post_op(struct pair *p)
{
    return sem_post(&p->sem) ? errno : 0;
}

static const struct wake_ops sem_ops = {
    .name = "sem_post", .setup = sem_setup, .teardown = sem_teardown, .wait = sem_wait_op, .wake = sem_post_op,
};

/* Mutex hand-over. Priority inheritance, as an RTOS mutex has: the waiter
 * blocks in the kernel and the unlock hands the mutex to it. The waker locks
 * the mutex and opens the gate (arm); the waiter passes the gate and blocks
 * in lock; the waker's unlock is the timed wake; the waiter unlocks again
 * (after) and waits at the gate (before), so every lock it times is
 * contended. */
static int pi_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    int err = pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    if (!err)
        err = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return err;
}

static int handover_setup(struct pair *p)
{
    int err = pi_mutex_init(&p->mutex);
    if (!err && sem_init(&p->gate, 0, 0))
        err = errno;
    return err;
}

static void handover_teardown(struct pair *p)
{
    pthread_mutex_destroy(&p->mutex);
    sem_destroy(&p->gate);
}

static void handover_gate(struct pair *p)
{
    sem_take(&p->gate);
}

static int handover_lock(struct pair *p)
{
    return pthread_mutex_lock(&p->mutex);
}

static void handover_release(struct pair *p)
{
    pthread_mutex_unlock(&p->mutex);
}

static void handover_arm(struct pair *p)
{
    pthread_mutex_lock(&p->mutex);
    sem_post(&p->gate);
}

static int handover_unlock(struct pair *p)
{
    return pthread_mutex_unlock(&p->mutex);
}

static const struct wake_ops handover_ops = {
    .name = "mutex hand-over", .setup = handover_setup, .teardown = handover_teardown,
    .before = handover_gate, .wait = handover_lock, .after = handover_release, .arm = handover_arm,
    .wake = handover_unlock,
};

/* POSIX message queue, a message of MQ_MSG_BYTES. Its name is removed at
 * once: the queue lives as long as the descriptor, and a killed probe leaves
 * nothing behind in /dev/mqueue. Any user may create any name there: the
 * clock in the name makes it hard to take first, and a taken one is passed
 * over for another (O_EXCL never opens a queue somebody else made). */
static int mq_setup(struct pair *p)
{
    char name[64];
    struct mq_attr attr = {.mq_maxmsg = 4, .mq_msgsize = MQ_MSG_BYTES};
    for (int tries = 0; tries < 8; tries++) {
        snprintf(name, sizeof name, "/rtvb-probe-%d-%llx", (int)getpid(), (unsigned long long)mono_ns());
        p->mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attr);
        if (p->mq != (mqd_t)-1 || errno != EEXIST)
            break;
    }
    if (p->mq == (mqd_t)-1)
        return errno;
    mq_unlink(name);
    return 0;
}

static void mq_teardown(struct pair *p)
{
    mq_close(p->mq);
}

static int mq_wait(struct pair *p)
{
    char msg[MQ_MSG_BYTES];
    while (mq_receive(p->mq, msg, sizeof msg, NULL) < 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

static int mq_wake(struct pair *p)
{
    static const char msg[MQ_MSG_BYTES] = "rtvb-probe rtos";
    return mq_send(p->mq, msg, sizeof msg, 0) ? errno : 0;
}

static const struct wake_ops mq_ops = {
    .name = "mq_send", .setup = mq_setup, .teardown = mq_teardown, .wait = mq_wait, .wake = mq_wake,
};

/* A signal to one thread, taken synchronously (SIGUSR1 is blocked in every
 * measuring thread: rtos.c blocks it before starting them). */
static int signal_setup(struct pair *p)
{
    sigemptyset(&p->usr1);
    sigaddset(&p->usr1, SIGUSR1);
    return 0;
}

static int signal_wait(struct pair *p)
{
    int sig;
    return sigwait(&p->usr1, &sig);
}

static int signal_wake(struct pair *p)
{
    return pthread_kill(p->waiter, SIGUSR1);
}

static const struct wake_ops signal_ops = {
    .name = "pthread_kill", .setup = signal_setup, .wait = signal_wait, .wake = signal_wake,
};

/* ---- one thread: uncontended operations and the timer ------------------- */

struct solo {
    const struct rtos_setup *s;
    struct rtos_run *r;
    int (*op)(struct solo *o, uint64_t *ns);    /* one timed operation; 0 or an errno value */
    const char *what;                           /* its calls, for an error message */
    pthread_mutex_t mutex;
    sem_t sem;
};

static int time_mutex(struct solo *o, uint64_t *ns)
{
    uint64_t t0 = mono_ns();
    int err = pthread_mutex_lock(&o->mutex);
    if (!err)
        err = pthread_mutex_unlock(&o->mutex);
    *ns = mono_ns() - t0;
    return err;
}

/* Give then take: the count goes 0 -> 1 -> 0 and the take never blocks. */
static int time_sem(struct solo *o, uint64_t *ns)
{
    uint64_t t0 = mono_ns();
    int err = sem_post(&o->sem) ? errno : sem_take(&o->sem);
    *ns = mono_ns() - t0;
    return err;
}

/* A deadline one period ahead, slept to with an absolute timer: the sample
 * is how late the thread runs after it (cyclictest's measure). */
static int time_timer(struct solo *o, uint64_t *ns)
{
    (void)o;
    uint64_t deadline = mono_ns() + RTOS_TIMER_PERIOD_NS;
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull), .tv_nsec = (long)(deadline % 1000000000ull)};
    int err;
    while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
        ;
    uint64_t now = mono_ns();
    *ns = now > deadline ? now - deadline : 0;
    return err;
}

static void *solo_main(void *arg)
{
    struct solo *o = arg;
    sched_prefault_stack(STACK_PREFAULT);
    const uint64_t total = RTOS_WARMUP + o->s->count;
    for (uint64_t i = 0; i < total && !stopping(); i++) {
        uint64_t ns;
        int err = o->op(o, &ns);
        if (err) {
            fail(o->r, o->what, err);
            return NULL;
        }
        record(o->r, i, ns);
    }
    o->r->interrupted = stopping();
    return NULL;
}

static int run_solo(enum rtos_test t, const struct rtos_setup *s, struct rtos_run *r)
{
    static struct solo o;
    memset(&o, 0, sizeof o);
    o.s = s;
    o.r = r;
    int err = 0;
    if (t == RTOS_MUTEX) {
        o.op = time_mutex;
        o.what = "pthread_mutex_lock/unlock";
        err = pi_mutex_init(&o.mutex);
    } else if (t == RTOS_SEM) {
        o.op = time_sem;
        o.what = "sem_post/sem_wait";
        err = sem_init(&o.sem, 0, 0) ? errno : 0;
    } else {
        o.op = time_timer;
        o.what = "clock_nanosleep";
    }
    if (err) {
        fail(r, t == RTOS_MUTEX ? "a priority-inheritance mutex" : "sem_init", err);
        r->skipped = 1;
        return -1;
    }
    pthread_t th;
    err = start_thread(&th, s, s->prio_high, solo_main, &o);
    if (err)
        fail(r, "starting the test's thread", err);
    else
        pthread_join(th, NULL);
    if (t == RTOS_MUTEX)
        pthread_mutex_destroy(&o.mutex);
    if (t == RTOS_SEM)
        sem_destroy(&o.sem);
    return r->why[0] ? -1 : 0;
}

/* ---- ping-pong: two threads of equal priority --------------------------- */

/* A posts s1 and waits on s2; B waits on s1, reads the clock, posts s2. With
 * equal priorities on one CPU neither post preempts: each half is a post, a
 * block and a switch, the same on both sides, so each step is half of the
 * round trip. A records the round trip t2 - t0 and both steps, t1 - t0 and
 * t2 - t1, from the same three clock reads. */
struct pingpong {
    const struct rtos_setup *s;
    struct rtos_run *r;
    sem_t s1, s2;
    _Atomic uint64_t t1;
    atomic_int quit;
};

static void *pong_main(void *arg)
{
    struct pingpong *pp = arg;
    sched_prefault_stack(STACK_PREFAULT);
    for (;;) {
        if (sem_take(&pp->s1))
            return NULL;
        uint64_t t1 = mono_ns();
        if (atomic_load(&pp->quit))
            return NULL;
        atomic_store_explicit(&pp->t1, t1, memory_order_release);
        sem_post(&pp->s2);
    }
}

static void *ping_main(void *arg)
{
    struct pingpong *pp = arg;
    sched_prefault_stack(STACK_PREFAULT);
    const uint64_t total = RTOS_WARMUP + pp->s->count;
    for (uint64_t i = 0; i < total && !stopping(); i++) {
        uint64_t t0 = mono_ns();
        sem_post(&pp->s1);
        int err = sem_take(&pp->s2);
        uint64_t t2 = mono_ns();
        if (err) {
            fail(pp->r, "sem_wait", err);
            break;
        }
        uint64_t t1 = atomic_load_explicit(&pp->t1, memory_order_acquire);
        if (i >= RTOS_WARMUP) {
            hist_record(pp->r->h, t2 - t0);
            hist_record(pp->r->fwd, t1 - t0);
            hist_record(pp->r->back, t2 - t1);
        }
    }
    pp->r->interrupted = stopping();
    atomic_store(&pp->quit, 1);
    sem_post(&pp->s1);
    return NULL;
}

static int run_pingpong(const struct rtos_setup *s, struct rtos_run *r)
{
    static struct pingpong pp;
    memset(&pp, 0, sizeof pp);
    pp.s = s;
    pp.r = r;
    sem_init(&pp.s1, 0, 0);
    sem_init(&pp.s2, 0, 0);
    pthread_t a, b;
    int err = start_thread(&b, s, s->prio_high, pong_main, &pp);
    if (!err) {
        err = start_thread(&a, s, s->prio_high, ping_main, &pp);
        if (err) {
            atomic_store(&pp.quit, 1);
            sem_post(&pp.s1);
        } else {
            pthread_join(a, NULL);
        }
        pthread_join(b, NULL);
    }
    if (err)
        fail(r, "starting the test's threads", err);
    sem_destroy(&pp.s1);
    sem_destroy(&pp.s2);
    return r->why[0] ? -1 : 0;
}

/* ---- sched_yield between two threads of equal priority ------------------ */

/* Each thread writes the time and its own number, then yields; the thread
 * that runs next reads the clock as its yield returns. If that is the other
 * thread, the sample is one switch; if the yield came back to the same thread
 * (nothing else runnable, or SCHED_OTHER chose it again), nothing was
 * measured and the attempt counts as missed. */
struct yield_pair {
    const struct rtos_setup *s;
    _Atomic uint64_t t;
    atomic_int who;
    _Atomic uint64_t done;        /* switches seen, warm-up included */
    uint64_t missed[2];
    struct hist *h[2];            /* one per thread: they never write the same one */
    pthread_barrier_t start;
};

struct yielder {
    struct yield_pair *y;
    int me;
};

static void *yield_main(void *arg)
{
    struct yielder *self = arg;
    struct yield_pair *y = self->y;
    const uint64_t total = RTOS_WARMUP + y->s->count;
    sched_prefault_stack(STACK_PREFAULT);
    atomic_store(&y->who, self->me);   /* before the barrier: the first yield has no sample */
    pthread_barrier_wait(&y->start);
    while (atomic_load(&y->done) < total && !stopping()) {
        atomic_store_explicit(&y->t, mono_ns(), memory_order_relaxed);
        atomic_store_explicit(&y->who, self->me, memory_order_release);
        sched_yield();
        uint64_t now = mono_ns();
        if (atomic_load_explicit(&y->who, memory_order_acquire) != self->me) {
            uint64_t n = atomic_fetch_add(&y->done, 1);
            if (n >= RTOS_WARMUP && n < total)
                hist_record(y->h[self->me], now - atomic_load_explicit(&y->t, memory_order_relaxed));
        } else if (atomic_load(&y->done) >= RTOS_WARMUP && atomic_load(&y->done) < total) {
            y->missed[self->me]++;
        }
    }
    return NULL;
}

static int run_yield(const struct rtos_setup *s, struct rtos_run *r)
{
    static struct yield_pair y;
    memset(&y, 0, sizeof y);
    y.s = s;
    y.h[0] = r->h;
    y.h[1] = r->fwd;   /* borrowed as the second thread's; merged below */
    pthread_barrier_init(&y.start, NULL, 2);
    struct yielder ya = {&y, 0}, yb = {&y, 1};
    pthread_t a, b;
    int err = start_thread(&a, s, s->prio_high, yield_main, &ya);
    if (!err) {
        err = start_thread(&b, s, s->prio_high, yield_main, &yb);
        if (err) {
            /* The first thread waits at the barrier for a partner that never comes. */
            fail(r, "starting the test's second thread", err);
            rtos_fatal(r->why);
        }
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    }
    pthread_barrier_destroy(&y.start);
    if (err) {
        fail(r, "starting the test's threads", err);
        return -1;
    }
    hist_merge(r->h, r->fwd);
    hist_reset(r->fwd);
    r->missed = y.missed[0] + y.missed[1];
    r->interrupted = stopping();
    return 0;
}

int rtos_measure(enum rtos_test t, const struct rtos_setup *s, struct rtos_run *r)
{
    switch (t) {
    case RTOS_FUTEX_WAKE:
        return run_pair(&futex_ops, s, r);
    case RTOS_SEM_WAKE:
        return run_pair(&sem_ops, s, r);
    case RTOS_MUTEX_HANDOVER:
        return run_pair(&handover_ops, s, r);
    case RTOS_MQ:
        return run_pair(&mq_ops, s, r);
    case RTOS_SIGNAL:
        return run_pair(&signal_ops, s, r);
    case RTOS_MUTEX:
    case RTOS_SEM:
    case RTOS_TIMER:
        return run_solo(t, s, r);
    case RTOS_SEM_PINGPONG:
        return run_pingpong(s, r);
    case RTOS_YIELD:
        return run_yield(s, r);
    default:
        return -1;
    }
}
