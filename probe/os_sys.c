/*
 * os tests of the system-call class: a null call, one-byte read and write
 * of devices, select and poll on N descriptors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"
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

/* select and poll on N descriptors that are never ready: dups of the read
 * end of an empty pipe, timeout zero. The call inspects every descriptor
 * and returns 0, so the figure is the cost of one scan of N. */
struct multi_arg {
    struct op_base b;
    int n, maxfd;
    fd_set set;
    struct pollfd *pfd;
};

static void op_select(void *arg, uint64_t n)
{
    struct multi_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        fd_set s = a->set;
        struct timeval tv = {0, 0};
        if (select(a->maxfd + 1, &s, NULL, NULL, &tv) != 0) {
            op_fail(&a->b, "select", errno);
            return;
        }
    }
}

static void op_poll(void *arg, uint64_t n)
{
    struct multi_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        if (poll(a->pfd, (nfds_t)a->n, 0) != 0) {
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

static void multi_test(struct os_run *r, const char *test, int is_select)
{
    const struct os_opts *o = r->o;
    for (int v = 0; v < o->nfds && !os_stop; v++) {
        int n = (int)o->fds[v], p[2];
        if (!fd_room(o->fds[v])) {
            os_skip(test, "%d descriptors exceed RLIMIT_NOFILE; raise it with ulimit -n.", n);
            continue;
        }
        if (pipe2(p, O_CLOEXEC)) {
            os_failed(r, test, "pipe: %s", strerror(errno));
            return;
        }
        struct multi_arg a = {.n = n, .pfd = calloc((size_t)n, sizeof *a.pfd)};
        int ok = a.pfd != NULL;
        FD_ZERO(&a.set);
        int made = 0;
        for (; ok && made < n; made++) {
            int fd = made == 0 ? p[0] : fcntl(p[0], F_DUPFD_CLOEXEC, 0);
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
                jw_str(&w, "fd_kind", "idle pipe");
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
            close(p[0]);
        close(p[1]);
        free(a.pfd);
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
