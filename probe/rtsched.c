#include "rtsched.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "probe.h"

const char *const sched_policy_names[SCHED_ANY_POLICY] = {"fifo", "rr", "other", "batch", "idle"};
const int sched_policy_values[SCHED_ANY_POLICY] = {SCHED_FIFO, SCHED_RR, SCHED_OTHER, SCHED_BATCH, SCHED_IDLE};

const char *sched_policy_name(int policy)
{
    for (int i = 0; i < SCHED_ANY_POLICY; i++)
        if (sched_policy_values[i] == policy)
            return sched_policy_names[i];
    return "other";
}

const char *sched_rt_label(int policy)
{
    return policy == SCHED_RR ? "RR" : "FIFO";
}

int sched_is_rt(int policy)
{
    return policy == SCHED_FIFO || policy == SCHED_RR;
}

static void *nothing(void *arg)
{
    return arg;
}

/* pthread_create with an explicit policy is refused (EPERM) exactly when
 * the workers' would be: the same call, not an imitation of it. */
static int try_thread(int policy, int priority)
{
    pthread_attr_t attr;
    pthread_t t;
    struct sched_param sp = {.sched_priority = priority};
    pthread_attr_init(&attr);
    /* Small: with mlockall(MCL_FUTURE) in force, a default 8 MiB stack
     * would be locked in memory just to be thrown away. */
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, policy);
    pthread_attr_setschedparam(&attr, &sp);
    int rc = pthread_create(&t, &attr, nothing, NULL);
    pthread_attr_destroy(&attr);
    if (rc == 0)
        pthread_join(t, NULL);
    return rc;
}

/* Raise the soft RLIMIT_RTPRIO to `priority` if it is below and the hard
 * limit allows; *old receives the limits before. 1 if raised. */
static int raise_rtprio(int priority, struct rlimit *old)
{
    if (getrlimit(RLIMIT_RTPRIO, old) != 0)
        return 0;
    rlim_t want = (rlim_t)priority;
    if (old->rlim_cur == RLIM_INFINITY || old->rlim_cur >= want)
        return 0;
    if (old->rlim_max != RLIM_INFINITY && old->rlim_max < want)
        return 0;
    struct rlimit raised = {.rlim_cur = want, .rlim_max = old->rlim_max};
    return setrlimit(RLIMIT_RTPRIO, &raised) == 0;
}

int sched_acquire(int policy, int priority)
{
    int rc = try_thread(policy, priority);
    struct rlimit old;
    if (rc == EPERM && sched_is_rt(policy) && raise_rtprio(priority, &old)) {
        rc = try_thread(policy, priority);
        if (rc != 0)
            setrlimit(RLIMIT_RTPRIO, &old);
    }
    return rc == 0;
}

int sched_start_pinned(pthread_t *thread, int cpu, int policy, int priority, size_t stack_bytes,
                       void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    cpu_set_t set;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack_bytes);
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, policy);
    struct sched_param sp = {.sched_priority = priority};
    pthread_attr_setschedparam(&attr, &sp);
    int rc = pthread_create(thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

__attribute__((noinline)) void sched_prefault_stack(size_t bytes)
{
    char area[bytes];
    volatile char *touch = area;   /* the writes must happen although nothing reads them */
    for (size_t i = 0; i < bytes; i += 256)
        touch[i] = 0;
}

int sched_check_priority(const char *sub, int policy, int *priority, int priority_given)
{
    if (policy == SCHED_OTHER) {
        if (priority_given && *priority != 0) {
            usage_error(sub, "--policy other takes no real-time priority; drop --priority or use 0.");
            return -1;
        }
        *priority = 0;
    } else if (*priority == 0) {
        usage_error(sub, "--policy fifo and rr need --priority from 1 to 99.");
        return -1;
    }
    return 0;
}
