/*
 * os tests of a semaphore round trip between two processes and of setting
 * up and tearing down a TCP connection.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "os.h"
#include "probe.h"
#include "transport.h"

/* ------------------------------------------------------------- semaphore */

/* Two System V semaphores, both at 0, and a forked peer. A round trip:
 * this end raises semaphore 0 and waits on semaphore 1; the peer waits on
 * 0 and raises 1. Each end sleeps in the kernel until the other's semop
 * wakes it, so a round trip is four semop calls and two wake-ups, the
 * counterpart of pipe_lat with semaphores for pipes. */
struct sem_arg {
    struct op_base b;
    int id;
};

/* Bound on each wait of this end: a peer that died makes the test fail
 * instead of hanging it. */
static const struct timespec sem_timeout = {5, 0};

static void op_sem(void *arg, uint64_t n)
{
    struct sem_arg *a = arg;
    struct sembuf up = {0, 1, 0}, down = {1, -1, 0};
    for (uint64_t i = 0; i < n; i++) {
        if (semop(a->id, &up, 1)) {
            op_fail(&a->b, "semop up", errno);
            return;
        }
        if (semtimedop(a->id, &down, 1, &sem_timeout)) {
            op_fail(&a->b, "semop down", errno == EAGAIN ? ETIMEDOUT : errno);
            return;
        }
    }
}

static void sem_peer(int id)
{
    struct sembuf down = {0, -1, 0}, up = {1, 1, 0};
    /* Ends when the semaphores are removed (EIDRM) or the probe kills it. */
    while (!semop(id, &down, 1) && !semop(id, &up, 1))
        ;
    _exit(0);
}

void os_test_sem_lat(struct os_run *r)
{
    const struct os_opts *o = r->o;
    int id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
    if (id < 0) {
        /* Kernels built without SysV IPC, or a container that forbids it. */
        os_skip("sem_lat", "no System V semaphores here (semget: %s).", strerror(errno));
        return;
    }
    cpu_set_t saved;
    int restore = o->pair_pinned && sched_getaffinity(0, sizeof saved, &saved) == 0;
    pid_t pid = tp_fork_peer();
    if (pid == 0) {
        if (o->pair_pinned)
            tp_pin_cpu(o->pair_cpus[1]);
        sem_peer(id);
    }
    if (o->pair_pinned)
        tp_pin_cpu(o->pair_cpus[0]);
    if (pid < 0) {
        os_failed(r, "sem_lat", "fork failed: %s", strerror(errno));
    } else {
        struct sem_arg a = {.id = id};
        struct timing t;
        struct jw w;
        if (!os_time(r, "sem_lat", op_sem, &a.b, NULL, &t)) {
            os_result_begin(&w, "sem_lat");
            jw_str(&w, "semaphore", "System V");
            os_write_pair_cpus(&w, "cpus", o);
            os_result_end(&w, &t);
        }
    }
    semctl(id, 0, IPC_RMID);
    tp_reap_peer(pid);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
}

/* -------------------------------------------------------- TCP connection */

/* One operation: a new socket connects to a listener on 127.0.0.1, the
 * listener accepts it, the accepted end closes, then the connecting end.
 * Both ends are in this process: on loopback the kernel completes the
 * handshake while connect() runs (it sends the SYN, handles it and sends
 * the SYN-ACK, handles that) and the teardown while close() runs, so the
 * figure is the kernel's work for a connection, without a scheduler's
 * wake-up of a server process in it. The accepted end closes first, as a
 * server that answers and hangs up does: it keeps the TIME_WAIT entry
 * (keyed by the listener's port, which blocks nothing), and the connecting
 * end's ephemeral port is free again at once, so a long run cannot use up
 * the ports. */
struct conn_arg {
    struct op_base b;
    int listener;
    struct sockaddr_in addr;
};

static int one_connection(struct conn_arg *a)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return op_fail(&a->b, "socket", errno);
    if (connect(s, (const struct sockaddr *)&a->addr, sizeof a->addr)) {
        int e = errno;
        close(s);
        return op_fail(&a->b, "connect", e);
    }
    int c = accept4(a->listener, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
        int e = errno;
        close(s);
        return op_fail(&a->b, "accept", e);
    }
    close(c);
    close(s);
    return 0;
}

static void op_connect(void *arg, uint64_t n)
{
    struct conn_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (one_connection(a))
            return;
}

void os_test_tcp_connect(struct os_run *r)
{
    struct conn_arg a = {.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    socklen_t len = sizeof a.addr;
    a.addr.sin_family = AF_INET;
    a.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (a.listener < 0 || bind(a.listener, (struct sockaddr *)&a.addr, sizeof a.addr) ||
        listen(a.listener, 128) || getsockname(a.listener, (struct sockaddr *)&a.addr, &len)) {
        os_skip("tcp_connect", "no TCP listener on 127.0.0.1 (%s).", strerror(errno));
        if (a.listener >= 0)
            close(a.listener);
        return;
    }
    /* One connection first: a loopback interface that is down refuses it. */
    if (one_connection(&a)) {
        os_skip("tcp_connect", "no TCP connection to 127.0.0.1 (%s: %s).", a.b.what, strerror(a.b.err));
        close(a.listener);
        return;
    }
    struct timing t;
    struct jw w;
    if (!os_time(r, "tcp_connect", op_connect, &a.b, NULL, &t)) {
        os_result_begin(&w, "tcp_connect");
        jw_str(&w, "transport", "tcp");
        jw_str(&w, "closes_first", "accepted end");
        os_result_end(&w, &t);
    }
    close(a.listener);
}
