/*
 * rtos: per-operation costs of RTOS-like primitives under a fixed-priority
 * policy (rtos.h; docs/probe/rtos.md).
 *
 * The tests run one after another in a control thread, each with threads of
 * its own pinned to the one measured CPU; each prints its `result` as soon as
 * it ends. The main thread only waits for SIGINT/SIGTERM, so a stop is seen
 * at once and ends the running test at its next iteration.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hist.h"
#include "opts.h"
#include "port.h"
#include "port_linux.h"
#include "port_records.h"
#include "port_tests.h"
#include "probe.h"
#include "rtos.h"
#include "rtsched.h"

#define SUB "rtos"
#define DEFAULT_PRIORITY 80
#define DEFAULT_COUNT 1000
#define MAX_COUNT 1000000
#define MAX_CPUS 1024
#define CONTROL_STACK (256 * 1024)
/* The control thread tells the main thread that the tests have ended by this
 * signal, so that the main thread sleeps for the whole run instead of waking
 * now and then, perhaps on the measured CPU. */
#define DONE_SIGNAL SIGUSR2

struct rtos_options {
    int policy, priority;
    uint64_t count;
    unsigned tests;            /* bit i: rtos_test_names[i], or port_test_names[i] with port */
    const char *tests_list;
    int port;                  /* the tests written against the porting layer */
    int cpus[1];
    int ncpus;
};

struct rtos_privileges {
    int rt_granted, mlockall;
    struct rtos_setup setup;   /* as the tests run */
};

static uint64_t t_start;

void rtos_fatal(const char *why)
{
    fprintf(stderr, "rtvb-probe %s: %s.\n", SUB, why);
    emit_end("error", mono_ns() - t_start, why);
    _exit(EXIT_ENV);
}

/* --tests names the port's tests with --port, else the subcommand's own. */
static int resolve_tests(struct rtos_options *o)
{
    const char *const *names = o->port ? port_test_names : rtos_test_names;
    int n = o->port ? PORT_NTESTS : RTOS_NTESTS;
    if (!o->tests_list || !strcmp(o->tests_list, "all")) {
        o->tests = (1u << n) - 1;
        return 0;
    }
    if (parse_names(o->tests_list, names, n, &o->tests) < 0)
        return usage_error(SUB, "--tests must be all or a comma-separated list of %s, got '%s'.",
                           o->port ? "task_activate, sem_wake, sem_pingpong, irq_task (with --port)"
                                   : "futex_wake, sem_wake, mutex, mutex_handover, sem, sem_pingpong, mq, signal, "
                                     "yield, timer",
                           o->tests_list);
    return 0;
}

/* The port's tasks take priorities base + 1 .. base + PORT_PRIO_MAX, its
 * timer thread base + PORT_PRIO_MAX + 1, with the activated task at P. */
static int check_port_priority(const struct rtos_options *o)
{
    int lo = PORT_PRIO_HIGH, hi = 99 - (PORT_PRIO_MAX + 1 - PORT_PRIO_HIGH);
    if (o->port && o->policy != SCHED_OTHER && (o->priority < lo || o->priority > hi))
        return usage_error(SUB, "--priority must be from %d to %d with --port: the port's tasks and timer thread "
                                "run from P - %d to P + %d.", lo, hi, PORT_PRIO_HIGH - 1, PORT_PRIO_MAX + 1 - PORT_PRIO_HIGH);
    return 0;
}

/* The CPU the tests run on when none is given: the last this process may use,
 * away from CPU 0, where most of a machine's housekeeping lands. */
static int default_cpu(void)
{
    static int cpus[MAX_CPUS];
    int n = allowed_cpus(cpus, MAX_CPUS);
    return n > 0 ? cpus[n - 1] : -1;
}

static int parse_options(int argc, char **argv, struct rtos_options *o)
{
    *o = (struct rtos_options){
        .policy = SCHED_FIFO, .priority = DEFAULT_PRIORITY, .count = DEFAULT_COUNT,
    };
    struct opt table[] = {
        {OPT_E("policy", &o->policy, sched_policy_names, sched_policy_values, SCHED_RT_OR_OTHER,
               "scheduling policy of the test threads (default fifo)")},
        {OPT_I("priority", &o->priority, 0, 99, "P",
               "priority of the activated thread, 2..99 (default " RTVB_STR(DEFAULT_PRIORITY) ");\n"
               "the activating thread runs at P - 1")},
        {OPT_I("count", &o->count, 1, MAX_COUNT, "N",
               "operations measured per test, each timed on its own (default " RTVB_STR(DEFAULT_COUNT) ")")},
        {OPT_S("tests", &o->tests_list, "LIST",
               "tests to run, comma separated, or all (default all):\n"
               "futex_wake sem_wake mutex mutex_handover sem sem_pingpong mq signal yield timer;\n"
               "with --port: task_activate sem_wake sem_pingpong irq_task")},
        {OPT_F("port", &o->port, 1,
               "run the tests written against the porting layer (docs/porting.md), as the bare-metal image\n"
               "runs them, instead of the subcommand's own")},
        {OPT_CPU_LIST("cpus", o->cpus, &o->ncpus,
                      "the one CPU every test thread is pinned to (default: the last allowed)"),
         .meta = "CPU", .expect = "one CPU number such as 1"},
        {OPT_TEXT("Both threads of a test share the CPU, so a wake-up of the higher-priority thread is a "
                  "preemption.\nSIGINT or SIGTERM ends the run after the current operation.")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (sched_check_priority(SUB, o->policy, &o->priority, opts_seen(table, "priority")))
        return EXIT_USAGE;
    if (resolve_tests(o) || check_port_priority(o))
        return EXIT_USAGE;
    if (o->policy != SCHED_OTHER && o->priority < 2)
        return usage_error(SUB, "--priority must be from 2 to 99 under --policy %s: the activating thread "
                                "runs one below it.", sched_policy_name(o->policy));
    if (o->ncpus == 0 && opts_mode == OPTS_RUN) {
        o->cpus[0] = default_cpu();
        o->ncpus = 1;
        if (o->cpus[0] < 0)
            return usage_error(SUB, "cannot read this process's CPU affinity.");
    }
    return 0;
}

static void acquire_privileges(const struct rtos_options *o, struct rtos_privileges *p)
{
    *p = (struct rtos_privileges){0};
    p->mlockall = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    p->rt_granted = o->policy != SCHED_OTHER && sched_acquire(o->policy, o->priority);
    struct rtos_setup *s = &p->setup;
    s->policy = p->rt_granted ? o->policy : SCHED_OTHER;
    s->prio_high = p->rt_granted ? o->priority : 0;
    s->prio_low = p->rt_granted ? o->priority - 1 : 0;
    s->cpu = o->cpus[0];
    s->count = o->count;
}

static void warn_privileges(const struct rtos_options *o, const struct rtos_privileges *p)
{
    if (o->policy != SCHED_OTHER && !p->rt_granted)
        jw_warning("no_rt_policy",
                   "SCHED_%s priority %d was not granted, so every test runs under SCHED_OTHER, where a woken "
                   "thread need not preempt the one that woke it; run as root or raise RLIMIT_RTPRIO (ulimit -r).",
                   sched_rt_label(o->policy), o->priority);
    if (!p->mlockall)
        jw_warning("no_mlockall", "mlockall was refused, so page faults can add to the measured operations; run "
                                  "as root or raise RLIMIT_MEMLOCK (ulimit -l).");
}

static void print_meta(int argc, char **argv, const struct rtos_options *o, const struct rtos_privileges *p)
{
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "policy", sched_policy_name(o->policy));
    jw_int(&w, "priority", o->priority);
    jw_uint(&w, "count", o->count);
    jw_bool(&w, "port", o->port);
    jw_arr(&w, "tests");
    for (int i = 0; i < (o->port ? PORT_NTESTS : RTOS_NTESTS); i++)
        if (o->tests & (1u << i))
            jw_str(&w, NULL, (o->port ? port_test_names : rtos_test_names)[i]);
    jw_end(&w);
    jw_arr(&w, "cpus");
    jw_int(&w, NULL, o->cpus[0]);
    jw_end(&w);
    jw_uint(&w, "warmup", RTOS_WARMUP);
    jw_uint(&w, "timer_period_ns", RTOS_TIMER_PERIOD_NS);
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_str(&w, "policy", sched_policy_name(p->setup.policy));
    jw_int(&w, "priority", p->setup.prio_high);
    jw_bool(&w, "rt_granted", p->rt_granted);
    jw_bool(&w, "mlockall", p->mlockall);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

/* The least time between two consecutive clock reads: every sample holds one
 * such read besides the operation (a single-thread sample brackets it with
 * two reads; the cost is that of the second). Reported, not subtracted. */
static uint64_t clock_read_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = mono_ns(), b = mono_ns();
        if (b - a < best)
            best = b - a;
    }
    return best;
}

static void print_result(enum rtos_test t, const struct rtos_options *o, const struct rtos_privileges *p,
                         const struct rtos_run *r, uint64_t clock_ns)
{
    const struct rtos_setup *s = &p->setup;
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "test", rtos_test_names[t]);
    jw_str(&w, "policy", sched_policy_name(o->policy));
    jw_str(&w, "policy_granted", sched_policy_name(s->policy));
    jw_int(&w, "priority", s->prio_high);
    jw_int(&w, "cpu", s->cpu);
    hist_write_stats(r->h, &w);
    jw_uint(&w, "missed", r->missed);
    jw_uint(&w, "attempted", r->h->count + r->missed);
    jw_uint(&w, "clock_read_ns", clock_ns);
    if (t == RTOS_SEM_PINGPONG) {
        port_write_pingpong(&w, r->h, r->fwd, r->back);
    }
    if (t == RTOS_TIMER) {
        /* The kernel lets an ordinary thread's timer fire up to its slack late, so that
         * wake-ups can be batched; a real-time thread's slack is 0 whatever prctl says. */
        int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        jw_int(&w, "timer_slack_ns", sched_is_rt(s->policy) ? 0 : slack);
    }
    if (r->why[0])
        jw_str(&w, "error", r->why);
    hist_write_json(r->h, &w, "histogram");
    jw_emit(&w);
    jw_free(&w);
}

struct control {
    pthread_t main_thread;
    const struct rtos_options *o;
    const struct rtos_privileges *p;
    struct rtos_run run;
    atomic_int done;
    int interrupted;
};

/* port_run's main task: the port's tests one after another, each result as
 * soon as it ends. */
static void port_main(void *arg)
{
    struct control *c = arg;
    static struct port_result r;
    r.h = c->run.h;
    r.fwd = c->run.fwd;
    r.back = c->run.back;
    for (int t = 0; t < PORT_NTESTS && !atomic_load(&rtos_stop); t++) {
        if (!(c->o->tests & (1u << t)))
            continue;
        const char *why = NULL;
        int rc = port_test_run((enum port_test)t, c->o->count, &r, &why);
        port_write_result((enum port_test)t, &r, rc ? why : NULL);
        if (rc)
            rtos_fatal(why);
    }
}

static void run_port_tests(struct control *c)
{
    const struct rtos_setup *s = &c->p->setup;
    port_linux_configure(c->o->policy, s->policy, s->prio_high - PORT_PRIO_HIGH, s->cpu);
    const char *why = NULL;
    if (port_run(PORT_PRIO_MAIN, port_main, c, &why))
        rtos_fatal(why);
}

static void *control_main(void *arg)
{
    struct control *c = arg;
    if (c->o->port) {
        run_port_tests(c);
        c->interrupted = atomic_load(&rtos_stop);
        atomic_store(&c->done, 1);
        pthread_kill(c->main_thread, DONE_SIGNAL);
        return NULL;
    }
    uint64_t clock_ns = clock_read_ns();
    for (int t = 0; t < RTOS_NTESTS && !atomic_load(&rtos_stop); t++) {
        if (!(c->o->tests & (1u << t)))
            continue;
        struct rtos_run *r = &c->run;
        hist_reset(r->h);
        hist_reset(r->fwd);
        hist_reset(r->back);
        r->missed = 0;
        r->skipped = 0;
        r->why[0] = '\0';
        r->interrupted = 0;
        rtos_measure((enum rtos_test)t, &c->p->setup, r);
        if (r->skipped) {
            jw_warning("test_skipped", "%s skipped: %s; its primitive is not available here.", rtos_test_names[t],
                       r->why);
            continue;
        }
        print_result((enum rtos_test)t, c->o, c->p, r, clock_ns);
        c->interrupted |= r->interrupted;
    }
    c->interrupted |= atomic_load(&rtos_stop);
    atomic_store(&c->done, 1);
    pthread_kill(c->main_thread, DONE_SIGNAL);
    return NULL;
}

/* Every thread inherits this mask: the stop signals and DONE_SIGNAL go to the
 * main thread alone, which waits for them in *waited; SIGUSR1 stays pending
 * for the signal test's sigwait. */
static void block_for_tests(sigset_t *waited)
{
    block_stop_signals(waited);
    sigaddset(waited, DONE_SIGNAL);
    sigset_t more;
    sigemptyset(&more);
    sigaddset(&more, SIGUSR1);
    sigaddset(&more, DONE_SIGNAL);
    pthread_sigmask(SIG_BLOCK, &more, NULL);
}

static int alloc_hists(struct rtos_run *r)
{
    r->h = malloc(sizeof *r->h);
    r->fwd = malloc(sizeof *r->fwd);
    r->back = malloc(sizeof *r->back);
    return r->h && r->fwd && r->back ? 0 : -1;
}

static void free_hists(struct rtos_run *r)
{
    free(r->h);
    free(r->fwd);
    free(r->back);
}

int cmd_rtos(int argc, char **argv)
{
    static struct rtos_options o;
    static struct rtos_privileges priv;
    static struct control c;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    sigset_t waited;
    block_for_tests(&waited);
    acquire_privileges(&o, &priv);
    t_start = mono_ns();
    print_meta(argc, argv, &o, &priv);
    warn_privileges(&o, &priv);

    c.main_thread = pthread_self();
    c.o = &o;
    c.p = &priv;
    if (alloc_hists(&c.run)) {
        fprintf(stderr, "rtvb-probe %s: out of memory.\n", SUB);
        emit_end("error", mono_ns() - t_start, "out of memory");
        return EXIT_ENV;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, CONTROL_STACK);
    pthread_t control;
    rc = pthread_create(&control, &attr, control_main, &c);
    pthread_attr_destroy(&attr);
    if (rc) {
        fprintf(stderr, "rtvb-probe %s: cannot start a thread: %s.\n", SUB, strerror(rc));
        emit_end("error", mono_ns() - t_start, "cannot start a thread");
        return EXIT_ENV;
    }
    while (!atomic_load(&c.done)) {
        int sig = sigwaitinfo(&waited, NULL);
        if (sig > 0 && sig != DONE_SIGNAL)
            atomic_store(&rtos_stop, 1);
    }
    pthread_join(control, NULL);
    emit_end(c.interrupted ? "interrupted" : "ok", mono_ns() - t_start, NULL);
    free_hists(&c.run);
    return EXIT_OK;
}
