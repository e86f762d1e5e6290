/*
 * The porting layer on Linux (port.h): every task is a POSIX thread at a
 * fixed priority (SCHED_FIFO when granted, else SCHED_OTHER, where the
 * priorities mean nothing and the order checks may fail), all pinned to one
 * CPU, so the kernel's scheduler gives the uniprocessor, priority-ordered
 * behaviour the measurements assume. The timer interrupt is a thread above
 * every task that sleeps to the deadline with an absolute clock_nanosleep;
 * "interrupts masked" is a recursive mutex that thread holds while the
 * handler runs. The threads stay, blocked, until the probe exits.
 */
#include "port.h"
#include "port_linux.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "rtsched.h"

#define MAIN_TASK PORT_MAX_TASKS   /* port_run's main task has the slot past the numbered ones */
#define TASK_STACK (256 * 1024)

struct task {
    pthread_t thread;
    sem_t activation;
    port_entry entry;
    void *arg;
    atomic_int active;
    int started;
};

static struct task tasks[PORT_MAX_TASKS + 1];
static sem_t sems[PORT_MAX_SEMS];
static sem_t main_done, timer_armed;
static pthread_mutex_t irq_lock;
static pthread_t timer_thread;
static volatile uint64_t timer_deadline;
static port_isr volatile timer_isr;
static int policy_asked, policy_granted, prio_base, cpu;

void port_linux_configure(int asked, int granted, int priority_base, int on_cpu)
{
    policy_asked = asked;
    policy_granted = granted;
    prio_base = priority_base;
    cpu = on_cpu;
}

void port_describe(struct port_info *info)
{
    info->policy = sched_policy_name(policy_asked);
    info->policy_granted = sched_policy_name(policy_granted);
    info->priority_base = sched_is_rt(policy_granted) ? prio_base : 0;
    info->cpu = cpu;
}

uint64_t port_counter(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t port_counter_hz(void) { return 1000000000ull; }

unsigned long port_irq_save(void)
{
    pthread_mutex_lock(&irq_lock);
    return 0;
}

void port_irq_restore(unsigned long saved)
{
    (void)saved;
    pthread_mutex_unlock(&irq_lock);
}

void port_console_write(const char *s, size_t n)
{
    while (n) {
        ssize_t k = write(1, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

int port_console_getc(void)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    unsigned char c;
    return poll(&p, 1, 0) == 1 && read(0, &c, 1) == 1 ? c : -1;
}

/* The probe's shared memory with another process is ipc's (shm.c), mapped
 * by name there: a test run on Linux has no partition to share with. */
void *port_shared_region(size_t *bytes)
{
    *bytes = 0;
    return NULL;
}

/* A thread at port priority p, pinned to the CPU. */
static int start_thread(pthread_t *t, int priority, void *(*body)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, TASK_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, policy_granted);
    struct sched_param sp = {.sched_priority = sched_is_rt(policy_granted) ? prio_base + priority : 0};
    pthread_attr_setschedparam(&attr, &sp);
    int rc = pthread_create(t, &attr, body, arg);
    pthread_attr_destroy(&attr);
    return rc ? -1 : 0;
}

__attribute__((noreturn)) static void *task_body(void *arg)
{
    struct task *k = arg;
    for (;;) {
        while (sem_wait(&k->activation) && errno == EINTR)
            ;
        k->entry(k->arg);
        atomic_store(&k->active, 0);
        if (k == &tasks[MAIN_TASK])
            sem_post(&main_done);
    }
}

static int set_priority(struct task *k, int priority)
{
    if (!sched_is_rt(policy_granted))
        return 0;
    return pthread_setschedprio(k->thread, prio_base + priority) ? -1 : 0;
}

static int create(int slot, int priority, port_entry entry, void *arg)
{
    struct task *k = &tasks[slot];
    if (priority < 1 || priority > PORT_PRIO_MAX || atomic_load(&k->active))
        return -1;
    k->entry = entry;
    k->arg = arg;
    if (k->started)
        return set_priority(k, priority);
    if (sem_init(&k->activation, 0, 0) || start_thread(&k->thread, priority, task_body, k))
        return -1;
    k->started = 1;
    return 0;
}

int port_task_create(int task, int priority, port_entry entry, void *arg)
{
    return task < 0 || task >= PORT_MAX_TASKS ? -1 : create(task, priority, entry, arg);
}

int port_task_activate(int task)
{
    if (task < 0 || task >= PORT_MAX_TASKS || !tasks[task].started)
        return -1;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&tasks[task].active, &idle, 1))
        return -1;
    sem_post(&tasks[task].activation);
    return 0;
}

int port_sem_create(int sem, unsigned count)
{
    if (sem < 0 || sem >= PORT_MAX_SEMS)
        return -1;
    sem_destroy(&sems[sem]);
    return sem_init(&sems[sem], 0, count) ? -1 : 0;
}

void port_sem_give(int sem) { sem_post(&sems[sem]); }

void port_sem_take(int sem)
{
    while (sem_wait(&sems[sem]) && errno == EINTR)
        ;
}

unsigned port_sem_count(int sem)
{
    int v = 0;
    sem_getvalue(&sems[sem], &v);
    return v > 0 ? (unsigned)v : 0;
}

void port_timer_handler(port_isr isr) { timer_isr = isr; }

void port_timer_arm(uint64_t deadline)
{
    timer_deadline = deadline;
    sem_post(&timer_armed);
}

__attribute__((noreturn)) static void *timer_body(void *arg)
{
    (void)arg;
    for (;;) {
        while (sem_wait(&timer_armed) && errno == EINTR)
            ;
        struct timespec ts = {.tv_sec = (time_t)(timer_deadline / 1000000000ull),
                              .tv_nsec = (long)(timer_deadline % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        uint64_t now = port_counter();
        pthread_mutex_lock(&irq_lock);
        if (timer_isr)
            timer_isr(now);
        pthread_mutex_unlock(&irq_lock);
    }
}

static int init_once(const char **why)
{
    static int done;
    if (done)
        return 0;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    int rc = pthread_mutex_init(&irq_lock, &ma);
    pthread_mutexattr_destroy(&ma);
    for (int i = 0; i < PORT_MAX_SEMS; i++)
        sem_init(&sems[i], 0, 0);
    if (rc || sem_init(&main_done, 0, 0) || sem_init(&timer_armed, 0, 0) ||
        start_thread(&timer_thread, PORT_PRIO_MAX + 1, timer_body, NULL)) {
        *why = "cannot start the timer thread";
        return -1;
    }
    done = 1;
    return 0;
}

int port_run(int priority, port_entry main, void *arg, const char **why)
{
    if (init_once(why))
        return -1;
    if (create(MAIN_TASK, priority, main, arg)) {
        *why = "cannot start the main task's thread";
        return -1;
    }
    atomic_store(&tasks[MAIN_TASK].active, 1);
    sem_post(&tasks[MAIN_TASK].activation);
    while (sem_wait(&main_done) && errno == EINTR)
        ;
    return 0;
}
