/*
 * os tests of the system-call class: a null call, one-byte read and write
 * of devices, select and poll on N descriptors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"
#include "transport.h"
#include "probe.h"

/* A test with one figure and no parameter. */
static void simple(struct os_run *r, const char *test, timed_fn fn, struct op_base *arg)
{
    struct timing t;
    struct jw w;
    if (os_time(r, test, fn, arg, NULL, &t))
        return;
    os_result_begin(&w, test);
    os_result_end(&w, &t);
}

static void op_null(void *arg, uint64_t n)
{
    (void)arg;
    /* getppid through syscall(): libc cannot answer it from a cache. */
    for (uint64_t i = 0; i < n; i++)
        syscall(SYS_getppid);
}

void os_test_null(struct os_run *r)
{
    struct op_base b = {0};
    simple(r, "null", op_null, &b);
}

struct fd_arg {
    struct op_base b;
    int fd;
};

static void op_read(void *arg, uint64_t n)
{
    struct fd_arg *a = arg;
    char c;
    for (uint64_t i = 0; i < n; i++)
        if (read(a->fd, &c, 1) != 1) {
            op_fail(&a->b, "read of /dev/zero", errno);
            return;
        }
}

static void op_write(void *arg, uint64_t n)
{
    struct fd_arg *a = arg;
    char c = 0;
    for (uint64_t i = 0; i < n; i++)
        if (write(a->fd, &c, 1) != 1) {
            op_fail(&a->b, "write to /dev/null", errno);
            return;
        }
}

static void device_test(struct os_run *r, const char *test, const char *dev, int flags, timed_fn fn)
{
    struct fd_arg a = {.fd = open(dev, flags | O_CLOEXEC)};
    if (a.fd < 0) {
        os_skip(test, "%s cannot be opened (%s); a minimal system may lack devtmpfs.", dev, strerror(errno));
        return;
    }
    simple(r, test, fn, &a.b);
    close(a.fd);
}

void os_test_read(struct os_run *r)
{
    device_test(r, "read", "/dev/zero", O_RDONLY, op_read);
}

void os_test_write(struct os_run *r)
{
    device_test(r, "write", "/dev/null", O_WRONLY, op_write);
}

/* select and poll on N descriptors, timeout zero, of two kinds:
 *  - "idle pipe": dups of the read end of an empty pipe. Every descriptor's
 *    poll method runs and says "not ready"; the call returns 0.
 *  - "regular file": dups of a memfd. A regular file has no poll method;
 *    the kernel answers "ready" for it without calling anything, so this is
 *    the scan alone, and the call returns N. LMbench's select figure is of
 *    this kind (regular-file descriptors), which is why it is lower.
 *  - "tcp socket": dups of one end of an idle TCP connection on 127.0.0.1,
 *    LMbench's other select figure: TCP's poll method runs for each and
 *    finds nothing to read; the call returns 0.
 * The figure is the cost of one call over N descriptors. */
enum fd_kind { FD_PIPE, FD_FILE, FD_TCP, FD_KINDS };
static const char *const fd_kind_names[FD_KINDS] = {"idle pipe", "regular file", "tcp socket"};
struct multi_arg {
    struct op_base b;
    int n, maxfd;
    int ready;               /* what every call must return: 0 or n */
    fd_set set;
    struct pollfd *pfd;
};

static void op_select(void *arg, uint64_t n)
{
    struct multi_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        fd_set s = a->set;
        struct timeval tv = {0, 0};
        if (select(a->maxfd + 1, &s, NULL, NULL, &tv) != a->ready) {
            op_fail(&a->b, "select", errno);
            return;
        }
    }
}

static void op_poll(void *arg, uint64_t n)
{
    struct multi_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (poll(a->pfd, (nfds_t)a->n, 0) != a->ready) {
            op_fail(&a->b, "poll", errno);
            return;
        }
}

/* Room for n more descriptors, raising the soft limit when allowed. */
static int fd_room(uint64_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return 0;
    rlim_t want = (rlim_t)n + 64;
    if (rl.rlim_cur >= want)
        return 1;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        return 0;
    rl.rlim_cur = want;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

/* The descriptor every one of a variant's N is a dup of, -1 after a
 * skip or failure (reported). *spare: a second descriptor to close after. */
static int multi_source(struct os_run *r, const char *test, enum fd_kind kind, int *spare)
{
    int p[2];
    *spare = -1;
    if (kind == FD_TCP) {
        struct tp_conn c, peer;
        char err[160];
        int rc = tp_pair(TP_TCP, &c, &peer, err, sizeof err);
        if (rc == TP_ABSENT)
            os_skip(test, "no TCP connection on 127.0.0.1 (%s), so no tcp socket variant.", err);
        else if (rc)
            os_failed(r, test, "TCP connection on 127.0.0.1: %s", err);
        if (rc)
            return -1;
        *spare = peer.rfd;
        return c.rfd;
    }
    if (kind == FD_FILE) {
        int fd = memfd_create("rtvb-select", MFD_CLOEXEC);
        if (fd < 0)
            os_skip(test, "no memfd_create here (%s), so no regular-file variant.", strerror(errno));
        return fd;
    }
    if (pipe2(p, O_CLOEXEC)) {
        os_failed(r, test, "pipe: %s", strerror(errno));
        return -1;
    }
    *spare = p[1];
    return p[0];
}

static void multi_one(struct os_run *r, const char *test, int is_select, int n, enum fd_kind kind)
{
    int spare, src = multi_source(r, test, kind, &spare);
    if (src < 0)
        return;
    struct multi_arg a = {.n = n, .ready = kind == FD_FILE ? n : 0, .pfd = calloc((size_t)n, sizeof *a.pfd)};
    int ok = a.pfd != NULL, made = 0;
    FD_ZERO(&a.set);
    for (; ok && made < n; made++) {
        int fd = made == 0 ? src : fcntl(src, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || (is_select && fd >= FD_SETSIZE)) {
            if (fd >= 0)
                close(fd);
            ok = 0;
            break;
        }
        a.pfd[made] = (struct pollfd){.fd = fd, .events = POLLIN};
        FD_SET(fd, &a.set);
        if (fd > a.maxfd)
            a.maxfd = fd;
    }
    if (ok) {
        struct timing t;
        struct jw w;
        if (!os_time(r, test, is_select ? op_select : op_poll, &a.b, NULL, &t)) {
            os_result_begin(&w, test);
            jw_int(&w, "fds", n);
            jw_str(&w, "fd_kind", fd_kind_names[kind]);
            os_result_end(&w, &t);
        }
    } else if (is_select) {
        os_skip(test, "%d descriptors do not fit in select's FD_SETSIZE (%d).", n, FD_SETSIZE);
    } else {
        os_failed(r, test, "cannot open %d descriptors: %s", n, strerror(errno));
    }
    for (int i = 0; i < made; i++)
        close(a.pfd[i].fd);
    if (made == 0)
        close(src);
    if (spare >= 0)
        close(spare);
    free(a.pfd);
}

static void multi_test(struct os_run *r, const char *test, int is_select)
{
    const struct os_opts *o = r->o;
    for (int v = 0; v < o->nfds && !os_stop; v++) {
        if (!fd_room(o->fds[v])) {
            os_skip(test, "%d descriptors exceed RLIMIT_NOFILE; raise it with ulimit -n.", (int)o->fds[v]);
            continue;
        }
        for (enum fd_kind kind = FD_PIPE; kind < FD_KINDS && !os_stop; kind++)
            multi_one(r, test, is_select, (int)o->fds[v], kind);
    }
}

void os_test_select(struct os_run *r)
{
    multi_test(r, "select", 1);
}

void os_test_poll(struct os_run *r)
{
    multi_test(r, "poll", 0);
}
