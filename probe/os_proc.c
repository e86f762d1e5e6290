/*
 * os tests of signals, processes, context switches and transports.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os.h"
#include "probe.h"
#include "transport.h"

/* Receive timeout of socket tests: a lost udp datagram fails the test
 * instead of hanging it. */
#define LAT_TIMEOUT_NS (5 * 1000000000ull)

static volatile uint64_t sink;   /* results of reads that must not be optimised away */

/* --------------------------------------------------------------- signals */

static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
    (void)sig;
    caught++;
}

struct sig_arg {
    struct op_base b;
    struct sigaction sa;
    pid_t self;
};

static void op_sig_install(void *arg, uint64_t n)
{
    struct sig_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (sigaction(SIGUSR1, &a->sa, NULL)) {
            op_fail(&a->b, "sigaction", errno);
            return;
        }
}

/* kill() to ourselves: the signal is delivered before kill returns, so one
 * operation is the system call, the kernel building the handler's frame,
 * the handler, and sigreturn. */
static void op_sig_catch(void *arg, uint64_t n)
{
    struct sig_arg *a = arg;
    sig_atomic_t before = caught;
    for (uint64_t i = 0; i < n; i++)
        if (kill(a->self, SIGUSR1)) {
            op_fail(&a->b, "kill", errno);
            return;
        }
    if ((uint64_t)(sig_atomic_t)(caught - before) != (uint64_t)(sig_atomic_t)n)
        op_fail(&a->b, "signal delivery (the handler ran a different number of times)", 0);
}

static void sig_test(struct os_run *r, const char *test, timed_fn fn)
{
    struct sig_arg a = {.self = getpid()};
    struct sigaction old;
    a.sa.sa_handler = on_usr1;
    sigemptyset(&a.sa.sa_mask);
    sigaction(SIGUSR1, &a.sa, &old);
    struct timing t;
    struct jw w;
    if (!os_time(r, test, fn, &a.b, NULL, &t)) {
        os_result_begin(&w, test);
        jw_str(&w, "signal", "SIGUSR1");
        os_result_end(&w, &t);
    }
    sigaction(SIGUSR1, &old, NULL);
}

void os_test_sig_install(struct os_run *r)
{
    sig_test(r, "sig_install", op_sig_install);
}

void os_test_sig_catch(struct os_run *r)
{
    sig_test(r, "sig_catch", op_sig_catch);
}

/* Protection fault, two results.
 *
 * "siglongjmp" (the figure `prot_fault`): a read of a PROT_NONE page raises
 * SIGSEGV; the handler jumps back with siglongjmp. The handler is installed
 * with SA_NODEFER and the jump buffer does not save the signal mask, so
 * SIGSEGV is never blocked and no sigprocmask call is made: one operation
 * is the hardware fault, the kernel's signal delivery and the jump, without
 * sigreturn. It is what a program that recovers from a fault pays.
 *
 * "return" (the figure `prot_fault.fault_only`, LMbench's definition): the
 * handler returns, so the read faults again at once; each operation is a
 * fault, a delivery and a sigreturn. The cost of catching a signal (kill to
 * ourselves with a handler, minus kill with signal 0, which delivers
 * nothing) is subtracted, leaving the fault itself: the trap and the
 * kernel's decision to signal.
 *
 * A fault anywhere else is a real crash: the handler restores the default
 * action and returns, so the faulting access kills the probe as it would
 * have without the test. */
static sigjmp_buf fault_env;
static char *volatile fault_page;
static size_t fault_page_size;
static volatile uint64_t refaults, refault_target;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    char *addr = si->si_addr;
    if (fault_page && addr >= fault_page && addr < fault_page + fault_page_size)
        siglongjmp(fault_env, 1);
    signal(SIGSEGV, SIG_DFL);
}

/* LMbench's handler: a plain one (no siginfo to build), that returns, so
 * the read executes again. The last fault of a call unprotects the page and
 * lets the read through; a fault after that is not ours, and crashes. */
static void on_segv_return(int sig)
{
    (void)sig;
    if (refaults >= refault_target) {
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    if (++refaults >= refault_target)
        mprotect(fault_page, fault_page_size, PROT_READ);
}

static void op_prot_fault(void *arg, uint64_t n)
{
    struct op_base *b = arg;
    for (volatile uint64_t i = 0; i < n; i++) {
        if (sigsetjmp(fault_env, 0) == 0) {
            sink += *(volatile char *)fault_page;
            op_fail(b, "read of a PROT_NONE page (it did not fault)", 0);
            return;
        }
    }
}

static void op_prot_refault(void *arg, uint64_t n)
{
    struct op_base *b = arg;
    if (mprotect(fault_page, fault_page_size, PROT_NONE)) {
        op_fail(b, "mprotect", errno);
        return;
    }
    refaults = 0;
    refault_target = n;
    sink += *(volatile char *)fault_page;
    if (refaults != n)
        op_fail(b, "read of a PROT_NONE page (it faulted a different number of times)", 0);
}

/* kill(self, 0): the system call and its permission check, no delivery. */
static void op_kill0(void *arg, uint64_t n)
{
    struct sig_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (kill(a->self, 0)) {
            op_fail(&a->b, "kill", errno);
            return;
        }
}

/* The cost of catching SIGUSR1, kill's own cost removed, from the medians
 * (as LMbench takes them). Negative when lost in the noise. */
static int signal_cost(struct os_run *r, double *ns)
{
    struct sig_arg a = {.self = getpid()};
    struct sigaction old;
    struct timing caught_t, sent_t;
    a.sa.sa_handler = on_usr1;
    sigemptyset(&a.sa.sa_mask);
    sigaction(SIGUSR1, &a.sa, &old);
    int rc = os_time(r, "prot_fault", op_sig_catch, &a.b, NULL, &caught_t);
    if (!rc) {
        a.b = (struct op_base){0};
        rc = os_time(r, "prot_fault", op_kill0, &a.b, NULL, &sent_t);
    }
    sigaction(SIGUSR1, &old, NULL);
    if (!rc)
        *ns = caught_t.median_ns - sent_t.median_ns;
    return rc;
}

static void prot_fault_only(struct os_run *r)
{
    struct op_base b = {0};
    struct timing with_signal, t;
    double signal_ns;
    int rc = os_time(r, "prot_fault", op_prot_refault, &b, NULL, &with_signal);
    if (rc || os_stop || signal_cost(r, &signal_ns))
        return;
    t = with_signal;
    os_timing_derive(&t, 1.0, signal_ns > 0 ? signal_ns : 0, NULL, r->o->timing.target_rel_error);
    struct jw w;
    os_result_begin(&w, "prot_fault");
    jw_str(&w, "handler", "return");
    jw_double(&w, "signal_subtracted_ns", signal_ns > 0 ? signal_ns : 0);
    jw_obj(&w, "with_signal");
    timing_write_json(&with_signal, &w);
    jw_end(&w);
    os_result_end(&w, &t);
}

void os_test_prot_fault(struct os_run *r)
{
    fault_page_size = (size_t)sysconf(_SC_PAGESIZE);
    char *page = mmap(NULL, fault_page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        os_failed(r, "prot_fault", "mmap: %s", strerror(errno));
        return;
    }
    struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER}, old;
    sigemptyset(&sa.sa_mask);
    fault_page = page;
    sigaction(SIGSEGV, &sa, &old);
    struct op_base b = {0};
    struct timing t;
    struct jw w;
    if (!os_time(r, "prot_fault", op_prot_fault, &b, NULL, &t)) {
        os_result_begin(&w, "prot_fault");
        jw_str(&w, "handler", "siglongjmp");
        os_result_end(&w, &t);
    }
    /* LMbench's handler returns, with SIGSEGV blocked while it runs. */
    struct sigaction ret = {.sa_handler = on_segv_return};
    sigemptyset(&ret.sa_mask);
    sigaction(SIGSEGV, &ret, NULL);
    if (!os_stop)
        prot_fault_only(r);
    sigaction(SIGSEGV, &old, NULL);
    fault_page = NULL;
    munmap(page, fault_page_size);
}

/* ------------------------------------------------------------- processes */

struct fork_arg {
    struct op_base b;
    const char *path;        /* NULL: the child exits at once */
    char *const *argv;
};

static void op_fork(void *arg, uint64_t n)
{
    static char *const empty_env[] = {NULL};
    struct fork_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        int status;
        pid_t pid = fork();
        if (pid == 0) {
            if (a->path)
                execve(a->path, a->argv, empty_env);
            _exit(a->path ? 127 : 0);
        }
        if (pid < 0) {
            op_fail(&a->b, "fork", errno);
            return;
        }
        if (waitpid(pid, &status, 0) != pid) {
            op_fail(&a->b, "waitpid", errno);
            return;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            op_fail(&a->b, a->path ? "the executed program (it did not exit with status 0)" : "child exit", 0);
            return;
        }
    }
}

/* Run the program once before timing it. An execve this system refuses
 * (no such file, wrong architecture under an emulator, noexec mount), or a
 * program that fails (a shell that cannot start the probe) means the test
 * cannot run here: skipped, with the reason. The child reports
 * execve's errno through a close-on-exec pipe, which a successful exec
 * closes empty. */
static int exec_works(const char *test, const char *path, char *const *argv)
{
    static char *const empty_env[] = {NULL};
    int p[2], err = 0, status = 0;
    if (pipe2(p, O_CLOEXEC))
        return 1;   /* let the timed run report it */
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        execve(path, argv, empty_env);
        err = errno;
        (void)!write(p[1], &err, sizeof err);
        _exit(127);
    }
    close(p[1]);
    ssize_t got = pid > 0 ? read(p[0], &err, sizeof err) : 0;
    close(p[0]);
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (got == (ssize_t)sizeof err) {
        os_skip(test, "this system cannot execute %s (%s).", path, strerror(err));
        return 0;
    }
    if (pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        os_skip(test, "%s %s did not exit with status 0 here (status 0x%x).", path, argv[1] ? argv[1] : "",
                status);
        return 0;
    }
    return 1;
}

static void fork_test(struct os_run *r, const char *test, const char *path, char *const *argv,
                      const char *command)
{
    struct fork_arg a = {.path = path, .argv = argv};
    struct timing t;
    struct jw w;
    if (path && !exec_works(test, path, argv))
        return;
    if (os_time(r, test, op_fork, &a.b, NULL, &t))
        return;
    os_result_begin(&w, test);
    if (path)
        jw_str(&w, "exec_path", path);
    if (command)
        jw_str(&w, "command", command);
    os_result_end(&w, &t);
}

void os_test_fork(struct os_run *r)
{
    fork_test(r, "fork", NULL, NULL, NULL);
}

/* The probe runs itself with `os --x-noop`: a static binary that exits
 * from main at once, present wherever the probe is (no /bin needed), the
 * same program in every environment compared. */
void os_test_fork_exec(struct os_run *r)
{
    char *argv[] = {"rtvb-probe", "os", "--x-noop", NULL};
    if (!r->exe[0]) {
        os_skip("fork_exec", "the probe cannot find its own executable (no /proc and no usable AT_EXECFN).");
        return;
    }
    fork_test(r, "fork_exec", r->exe, argv, NULL);
}

/* /bin/sh -c '<probe> os --x-noop': the same program as fork_exec, started
 * through a shell, so fork_sh - fork_exec is the shell's own cost. */
void os_test_fork_sh(struct os_run *r)
{
    char command[PATH_MAX + 32];
    if (!r->sh) {
        os_skip("fork_sh", "/bin/sh does not exist here.");
        return;
    }
    if (!r->exe_file[0]) {
        os_skip("fork_sh", "the probe cannot name its own executable file for the shell.");
        return;
    }
    snprintf(command, sizeof command, "'%s' os --x-noop", r->exe_file);
    char *argv[] = {"sh", "-c", command, NULL};
    fork_test(r, "fork_sh", r->sh, argv, command);
}

/* -------------------------------------------------------- context switch */

/* One hop of the token: read the working set, pass the token on, wait for
 * it to come back. In the ring the wait blocks until every other process
 * has done its hop; in the one-process ring `in` is the read end of the
 * pipe `out` writes to, so the same work happens without a switch. */
struct ring_arg {
    struct op_base b;
    int in, out;
    const char *ws;
    size_t ws_bytes;
};

static void op_ring(void *arg, uint64_t n)
{
    struct ring_arg *a = arg;
    uint32_t token = 0;
    for (uint64_t i = 0; i < n; i++) {
        sink += os_sum(a->ws, a->ws_bytes);
        if (write(a->out, &token, sizeof token) != (ssize_t)sizeof token) {
            op_fail(&a->b, "write to the ring", errno);
            return;
        }
        ssize_t got = read(a->in, &token, sizeof token);
        if (got != (ssize_t)sizeof token) {
            op_fail(&a->b, "read from the ring", got < 0 ? errno : ECONNRESET);
            return;
        }
    }
}

/* A ring member: its own working set (allocated and written after fork, so
 * it is private memory), then pass the token until the ring closes. */
static void ring_member(int in, int out, size_t ws_bytes)
{
    char *ws = ws_bytes ? malloc(ws_bytes) : NULL;
    uint32_t token;
    if (ws)
        memset(ws, 1, ws_bytes);
    for (;;) {
        if (read(in, &token, sizeof token) != (ssize_t)sizeof token)
            _exit(0);
        sink += os_sum(ws, ws ? ws_bytes : 0);
        if (write(out, &token, sizeof token) != (ssize_t)sizeof token)
            _exit(0);
    }
}

static void close_pipes(int (*p)[2], int n, int keep_r, int keep_w)
{
    for (int i = 0; i < n; i++) {
        if (i != keep_r && p[i][0] >= 0)
            close(p[i][0]);
        if (i != keep_w && p[i][1] >= 0)
            close(p[i][1]);
    }
}

/* A ring of `procs` processes, pipe i leading into member i; member 0 is
 * this process, which keeps the read end of pipe 0 and the write end of
 * pipe 1. The other members block on their pipe until the token comes. */
struct ring {
    int n, forked;
    int p[OS_MAX_PROCS][2];
    pid_t pids[OS_MAX_PROCS];
};

static int ring_open(struct os_run *r, const struct os_ctx_size *cs, struct ring *g)
{
    int made = 0;
    *g = (struct ring){.n = cs->procs, .forked = 1};
    for (; made < g->n; made++)
        if (pipe(g->p[made]))
            break;
    if (made < g->n) {
        os_failed(r, "ctx", "pipe: %s", strerror(errno));
        close_pipes(g->p, made, -1, -1);
        return -1;
    }
    for (; g->forked < g->n; g->forked++) {
        int i = g->forked, next = (i + 1) % g->n;
        g->pids[i] = tp_fork_peer();
        if (g->pids[i] == 0) {
            close_pipes(g->p, g->n, i, next);
            ring_member(g->p[i][0], g->p[next][1], (size_t)cs->ws_bytes);
        }
        if (g->pids[i] < 0)
            break;
    }
    close_pipes(g->p, g->n, 0, 1 % g->n);
    return 0;
}

/* Closing our ends ends the ring: each member sees end-of-file. */
static void ring_close(struct ring *g)
{
    close(g->p[0][0]);
    close(g->p[1 % g->n][1]);
    for (int i = 1; i < g->forked; i++)
        tp_reap_peer(g->pids[i]);
}

/* The ring's circuit (`ring`, per circuit) and the same hop done by this
 * process alone on a pipe of its own (`overhead`, per hop); `t` is
 * circuit / procs - mean hop (time_op_diff: the hop before and after the
 * ring, the ring's samples back to back). The ring's samples are not
 * interleaved with the hop's: while this process runs alone the members
 * sleep, and the scheduler's state the ring settles into (how often a woken
 * member preempts the one that woke it) takes tens of milliseconds to come
 * back: interleaved sample by sample, 8p/64k came out 6 % and 16p/64k 9 %
 * cheaper. The
 * ring is open during the hop's samples too; its sleeping members take no
 * CPU. */
static int time_ctx(struct os_run *r, const struct os_ctx_size *cs, const char *ws, struct timing *ring,
                    struct timing *overhead, struct timing *t)
{
    struct ring g;
    int self[2], rc = -1;
    if (ring_open(r, cs, &g))
        return -1;
    if (g.forked < g.n) {
        os_failed(r, "ctx", "fork: %s", strerror(errno));
    } else if (pipe(self)) {
        os_failed(r, "ctx", "pipe: %s", strerror(errno));
    } else {
        struct ring_arg ra = {.in = g.p[0][0], .out = g.p[1 % g.n][1], .ws = ws, .ws_bytes = (size_t)cs->ws_bytes};
        struct ring_arg oa = {.in = self[0], .out = self[1], .ws = ws, .ws_bytes = (size_t)cs->ws_bytes};
        rc = os_time_diff(r, "ctx", op_ring, &ra.b, op_ring, &oa.b, 1.0 / g.n, ring, overhead, t);
        close(self[0]);
        close(self[1]);
    }
    ring_close(&g);
    return rc;
}

static void ctx_label(const struct os_ctx_size *cs, char *buf, size_t len)
{
    if (cs->ws_bytes % 1024 == 0)
        snprintf(buf, len, "%dp/%lluk", cs->procs, (unsigned long long)(cs->ws_bytes / 1024));
    else
        snprintf(buf, len, "%dp/%llub", cs->procs, (unsigned long long)cs->ws_bytes);
}

/* Why a figure did not converge, in the measurement's own numbers. The hop
 * without a switch (the pipe and the working-set read) is subtracted from
 * the ring's hop; when it is several times the switch, the noise of both
 * weighs that many times more relative to the switch than to either hop.
 * So: some ring samples were no dearer than that hop (the switch is lost in
 * its noise), or the two sides' spreads left too large an error within the
 * time limit. `t`'s spread is the ring's, per hop. */
static void ctx_not_converged(const struct timing *overhead, const struct timing *t, const struct os_ctx_size *cs,
                              const struct timing_opts *o, char *buf, size_t len)
{
    double hop = overhead->ns_per_op, sw = t->ns_per_op;
    int n = snprintf(buf, len, "the hop without a switch (the pipe and a %llu-byte working-set read) costs %.0f ns",
                     (unsigned long long)cs->ws_bytes, hop);
    if (n < 0 || (size_t)n >= len)
        return;
    buf += n;
    len -= (size_t)n;
    if (t->clamped || sw <= 0) {
        snprintf(buf, len, ", and %d of %d ring samples cost no more per hop: the switch (%.0f ns) is lost in the "
                 "noise of that work", t->clamped, t->samples, sw);
        return;
    }
    char limit[64];
    if (t->samples == TIMING_MAX_SAMPLES || overhead->samples == TIMING_MAX_SAMPLES)
        snprintf(limit, sizeof limit, "at the cap of %d samples", TIMING_MAX_SAMPLES);
    else
        snprintf(limit, sizeof limit, "in the %g s limit", (double)o->max_time_ns / 1e9);
    snprintf(buf, len, ", %.1f times the switch (%.0f ns); %s, %d ring samples spread by %.0f ns per hop "
             "(standard deviation, %.1f %% of the switch) and %d samples of the hop alone by %.0f ns (%.1f %%), "
             "which leaves the switch a %.2f %% standard error, above the %g %% target",
             hop / sw, sw, limit, t->samples, t->stddev_ns, t->stddev_ns / sw * 100,
             overhead->samples, overhead->stddev_ns, overhead->stddev_ns / sw * 100, t->rel_error * 100,
             o->target_rel_error * 100);
}

static void ctx_result(struct os_run *r, const struct os_ctx_size *cs, const struct timing *ring,
                       const struct timing *overhead, const struct timing *t, int pinned)
{
    char label[64], why[512];
    struct jw w;
    ctx_label(cs, label, sizeof label);
    os_result_begin(&w, "ctx");
    jw_str(&w, "label", label);
    jw_int(&w, "procs", cs->procs);
    jw_uint(&w, "ws_bytes", cs->ws_bytes);
    if (pinned)
        jw_int(&w, "cpu", r->o->ctx_cpu);
    else
        jw_null(&w, "cpu");
    /* The hop's mean, what each ring sample has subtracted: ns_per_op =
     * ring / procs - this, up to clamped samples. */
    jw_double(&w, "overhead_subtracted_ns", overhead->ns_per_op);
    if (t->converged) {
        jw_null(&w, "not_converged_reason");
    } else {
        ctx_not_converged(overhead, t, cs, &r->o->timing, why, sizeof why);
        jw_str(&w, "not_converged_reason", why);
    }
    jw_obj(&w, "ring");
    timing_write_json(ring, &w);
    jw_end(&w);
    jw_obj(&w, "overhead");
    timing_write_json(overhead, &w);
    jw_end(&w);
    os_result_end(&w, t);
}

/* Context switch: a token goes round a ring of N processes through pipes,
 * each reading its working set before passing it on. One circuit costs N
 * hops; a hop is a switch plus the pipe write, the pipe read and the
 * working-set read. The same hop without a switch (this process writing to
 * and reading from its own pipe, reading the same buffer it reads in the
 * ring) is timed before and after the ring and its mean subtracted, so the
 * figure is the switch itself, including the cache refills the other
 * processes' working sets cause. The error target applies to that
 * difference: at 64 KiB the hop without a switch is 1.2 to 3.5 times the
 * switch, so the ring alone at 1 % left the switch at 2.2 to 4.5 %. */
void os_test_ctx(struct os_run *r)
{
    const struct os_opts *o = r->o;
    cpu_set_t saved, one;
    int pinned = 0;
    if (o->ctx_cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0) {
        CPU_ZERO(&one);
        CPU_SET(o->ctx_cpu, &one);
        pinned = sched_setaffinity(0, sizeof one, &one) == 0;
        if (!pinned)
            jw_warning("ctx_not_pinned", "ctx could not pin its ring to CPU %d (%s), so processes may switch "
                       "across CPUs; pass --ctx-cpu none to accept it.", o->ctx_cpu, strerror(errno));
    }
    for (int v = 0; v < o->nctx && !os_stop; v++) {
        const struct os_ctx_size *cs = &o->ctx[v];
        /* Member 0's working set, also the one the hop without a switch
         * reads: written before the ring forks. The members inherit a copy
         * they never touch; each reads its own. */
        char *ws = cs->ws_bytes ? malloc((size_t)cs->ws_bytes) : NULL;
        if (cs->ws_bytes && !ws) {
            os_failed(r, "ctx", "out of memory for a %llu-byte working set", (unsigned long long)cs->ws_bytes);
            continue;
        }
        if (ws)
            memset(ws, 1, (size_t)cs->ws_bytes);
        struct timing ring, overhead, t;
        if (time_ctx(r, cs, ws, &ring, &overhead, &t) == 0)
            ctx_result(r, cs, &ring, &overhead, &t, pinned);
        free(ws);
    }
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
}

/* ------------------------------------------------------------ transports */

struct xfer_arg {
    struct op_base b;
    struct tp_conn *c;
    char *buf;
    size_t len;
};

static void op_round_trip(void *arg, uint64_t n)
{
    struct xfer_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        if (tp_send_all(a->c, a->buf, a->len)) {
            op_fail(&a->b, "send", errno);
            return;
        }
        if (tp_recv_all(a->c, a->buf, a->len)) {
            op_fail(&a->b, "receive", errno);
            return;
        }
    }
}

static void op_receive(void *arg, uint64_t n)
{
    struct xfer_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (tp_recv_all(a->c, a->buf, a->len)) {
            op_fail(&a->b, "receive", errno);
            return;
        }
}

/* The peer: echo each message back (latency), or send chunks for as long
 * as the other end reads (bandwidth). Ends when the connection does. */
static void peer_main(struct tp_conn *c, size_t len, int echo)
{
    char *buf = malloc(len);
    if (!buf)
        _exit(1);
    memset(buf, 'x', len);
    for (;;) {
        if (echo && tp_recv_all(c, buf, len))
            break;
        if (tp_send_all(c, buf, len))
            break;
    }
    _exit(0);
}

static void xfer_test(struct os_run *r, const char *test, enum tp_kind k, size_t len, int echo)
{
    struct tp_conn a, b;
    char err[256];
    int rc = tp_pair(k, &a, &b, err, sizeof err);
    if (rc == TP_ABSENT) {
        os_skip(test, "no %s transport here (%s).", tp_name(k), err);
        return;
    }
    if (rc) {
        os_failed(r, test, "%s", err);
        return;
    }
    const struct os_opts *o = r->o;
    cpu_set_t saved;
    int restore = o->pair_pinned && sched_getaffinity(0, sizeof saved, &saved) == 0;
    pid_t pid = tp_fork_peer();
    if (pid == 0) {
        tp_close(&a);
        if (o->pair_pinned)
            tp_pin_cpu(o->pair_cpus[1]);
        peer_main(&b, len, echo);
    }
    tp_close(&b);
    if (o->pair_pinned)
        tp_pin_cpu(o->pair_cpus[0]);
    struct xfer_arg x = {.c = &a, .buf = malloc(len), .len = len};
    if (pid < 0 || !x.buf) {
        os_failed(r, test, "%s", pid < 0 ? "fork failed" : "out of memory");
    } else {
        struct timing t;
        struct jw w;
        memset(x.buf, 'y', len);
        tp_set_timeout(&a, LAT_TIMEOUT_NS);
        if (!os_time(r, test, echo ? op_round_trip : op_receive, &x.b, NULL, &t)) {
            os_result_begin(&w, test);
            jw_str(&w, "transport", tp_name(k));
            os_write_pair_cpus(&w, "cpus", o);
            if (echo) {
                jw_uint(&w, "msg_bytes", len);
            } else {
                jw_uint(&w, "chunk_bytes", len);
                jw_double(&w, "bandwidth_bps", t.ns_per_op > 0 ? (double)len * 1e9 / t.ns_per_op : NAN);
            }
            os_result_end(&w, &t);
        }
    }
    free(x.buf);
    tp_close(&a);
    tp_reap_peer(pid);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
}

void os_test_pipe_lat(struct os_run *r) { xfer_test(r, "pipe_lat", TP_PIPE, 1, 1); }
void os_test_unix_lat(struct os_run *r) { xfer_test(r, "unix_lat", TP_UNIX, 1, 1); }
void os_test_udp_lat(struct os_run *r) { xfer_test(r, "udp_lat", TP_UDP, 1, 1); }
void os_test_tcp_lat(struct os_run *r) { xfer_test(r, "tcp_lat", TP_TCP, 1, 1); }
void os_test_pipe_bw(struct os_run *r) { xfer_test(r, "pipe_bw", TP_PIPE, (size_t)r->o->bw_chunk, 0); }
void os_test_unix_bw(struct os_run *r) { xfer_test(r, "unix_bw", TP_UNIX, (size_t)r->o->bw_chunk, 0); }
void os_test_tcp_bw(struct os_run *r) { xfer_test(r, "tcp_bw", TP_TCP, (size_t)r->o->bw_chunk, 0); }
