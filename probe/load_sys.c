/*
 * load kinds `io` (file write + fsync + read), `fork` (process churn) and
 * `net` (loopback TCP traffic).
 *
 * io: a fresh directory is made with mkdtemp inside --dir ($TMPDIR or /tmp
 * by default), one file per worker in it. A cycle writes the whole file in
 * blocks, fsyncs it, optionally drops its clean pages from the page cache
 * (--drop-cache, so the read goes to the device) and reads it back. The
 * files and the directory are removed when the load ends, by a duration,
 * a signal or an error; only SIGKILL can leave them behind (the directory
 * name is in meta.params.dir).
 *
 * fork: each worker forks a child that exits at once and reaps it, paced
 * to the requested rate. A child asks for SIGKILL when its parent thread
 * dies (PR_SET_PDEATHSIG) and exits if the parent is already gone, so no
 * child outlives the probe, even a SIGKILLed one. Children are always
 * reaped before a worker returns.
 *
 * net: a listening socket on 127.0.0.1, port chosen by the kernel, one
 * connection per worker; a sender thread writes blocks into it, a receiver
 * thread reads them (two threads per worker, on the same CPU when pinned).
 * `bytes` counts bytes delivered to the receivers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "load.h"
#include "probe.h"

/* A block buffer of the thread's own, filled with a pattern. */
static int alloc_block(struct load_thread *t)
{
    size_t len = (size_t)t->ctx->opt.block_bytes;
    void *p = NULL;
    if (posix_memalign(&p, 4096, len) != 0) {
        load_fail(t, ENOMEM, "allocating the block buffer");
        return -1;
    }
    memset(p, 0xa5 ^ t->worker, len);
    t->state = p;
    return 0;
}

/* ---- io ------------------------------------------------------------------------------------- */

struct io_state {
    char dir[PATH_MAX];
    char parent[PATH_MAX];
    int made_dir;
    int nfiles;
    int fds[LOAD_MAX_WORKERS];
};

static struct io_state io;

static void io_file_name(char *buf, size_t len, int i)
{
    snprintf(buf, len, "%s/worker-%d.dat", io.dir, i);
}

static int io_setup(struct load_ctx *c, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    const char *parent = c->opt.parent_dir ? c->opt.parent_dir : (tmp && *tmp) ? tmp : "/tmp";
    /* Absolute, so that meta names what to remove after a SIGKILL wherever the host runs. */
    if (!realpath(parent, io.parent))
        snprintf(io.parent, sizeof io.parent, "%s", parent);
    if (snprintf(io.dir, sizeof io.dir, "%s/rtvb-load-XXXXXX", io.parent) >= (int)sizeof io.dir - 32) {
        snprintf(err, errlen, "the directory name '%s' is too long; pass a shorter --dir.", io.parent);
        io.dir[0] = '\0';
        return -1;
    }
    if (!mkdtemp(io.dir)) {
        snprintf(err, errlen, "cannot create a directory in '%s': %s; pass --dir with a writable directory.",
                 io.parent, strerror(errno));
        io.dir[0] = '\0';
        return -1;
    }
    io.made_dir = 1;
    for (int i = 0; i < c->opt.workers; i++) {
        char name[PATH_MAX + 32];
        io_file_name(name, sizeof name, i);
        int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            snprintf(err, errlen, "cannot create a file in '%s': %s.", io.dir, strerror(errno));
            return -1;
        }
        io.fds[io.nfiles++] = fd;
    }
    c->state = &io;
    return 0;
}

static void io_cleanup(struct load_ctx *c)
{
    for (int i = 0; i < io.nfiles; i++) {
        char name[PATH_MAX + 32];
        close(io.fds[i]);
        io_file_name(name, sizeof name, i);
        unlink(name);
    }
    io.nfiles = 0;
    if (io.made_dir && rmdir(io.dir) != 0)
        jw_warning("dir_not_removed", "the load's directory '%s' could not be removed (%s); remove it by hand.",
                   io.dir, strerror(errno));
    io.made_dir = 0;
    load_free_thread_states(c);
}

/* pwrite/pread the whole range, in blocks; 0, or -1 with t failed. */
static int io_pass(struct load_thread *t, int fd, int writing, uint64_t *done)
{
    const struct load_options *o = &t->ctx->opt;
    char *buf = t->state;
    for (uint64_t off = 0; off < o->file_bytes && !load_stopping();) {
        size_t len = (size_t)(o->file_bytes - off < o->block_bytes ? o->file_bytes - off : o->block_bytes);
        ssize_t n = writing ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n == 0 && !writing)) {
            load_fail(t, n < 0 ? errno : EIO, writing ? "writing the file" : "reading the file back");
            return -1;
        }
        off += (uint64_t)n;
        *done += (uint64_t)n;
        load_add(&t->bytes, (uint64_t)n);
        load_add(&t->counter[writing ? 0 : 1], (uint64_t)n);
        load_pace_bytes(t, *done);
    }
    return 0;
}

static void io_body(struct load_thread *t)
{
    const struct load_options *o = &t->ctx->opt;
    int fd = io.fds[t->worker];
    uint64_t done = 0;

    while (!load_stopping()) {
        if (io_pass(t, fd, 1, &done) != 0 || load_stopping())
            return;
        if (o->fsync) {
            if (fsync(fd) != 0 && errno != EINTR) {
                load_fail(t, errno, "fsync");
                return;
            }
            load_add(&t->counter[2], 1);
        }
        if (o->drop_cache)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (io_pass(t, fd, 0, &done) != 0 || load_stopping())
            return;
        load_add(&t->ops, 1);
    }
}

static void io_params(const struct load_ctx *c, struct jw *w)
{
    const struct load_options *o = &c->opt;
    jw_str(w, "dir", io.dir[0] ? io.dir : NULL);
    jw_str(w, "parent_dir", io.parent);
    jw_uint(w, "file_size_bytes", o->file_bytes);
    jw_uint(w, "block_size_bytes", o->block_bytes);
    jw_bool(w, "fsync", o->fsync);
    jw_bool(w, "drop_cache", o->drop_cache);
    jw_uint(w, "limit_bps", o->limit_bps);
}

const struct load_kind load_kind_io = {
    .name = "io",
    .roles = 1,
    .role_names = {"worker"},
    .has_bytes = 1,
    .has_ops = 1,
    .counters = {"bytes_written", "bytes_read", "fsyncs", NULL},
    .setup = io_setup,
    .params = io_params,
    .prepare = alloc_block,
    .body = {io_body},
    .cleanup = io_cleanup,
};

/* ---- fork ----------------------------------------------------------------------------------- */

static void fork_body(struct load_thread *t)
{
    const struct load_options *o = &t->ctx->opt;
    const pid_t parent = getpid();
    const double per_worker = o->fork_rate / o->workers;
    const uint64_t interval = per_worker > 0 ? (uint64_t)(1e9 / per_worker + 0.5) : 0;
    uint64_t next = t->ctx->start_ns + interval * (uint64_t)t->worker / (uint64_t)o->workers;

    while (!load_stopping()) {
        if (interval) {
            uint64_t now = mono_ns();
            if (now > next + 1000000000ull)
                next = now;   /* more than a second behind: do not burst to catch up */
            if (next > now)
                load_sleep_until(next);
            if (load_stopping())
                return;
            next += interval;
        }
        pid_t pid = fork();
        if (pid == 0) {
            /* Async-signal-safe calls only: this is a copy of a threaded process. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            _exit(0);
        }
        if (pid < 0) {
            if (errno != EAGAIN && errno != ENOMEM) {
                load_fail(t, errno, "fork");
                return;
            }
            load_add(&t->counter[0], 1);   /* out of processes or memory: count, back off, go on */
            load_sleep_until(mono_ns() + 1000000);
            continue;
        }
        /* Always reap, also when told to stop: no child is left behind. */
        for (;;) {
            int st;
            pid_t r = waitpid(pid, &st, 0);
            if (r == pid)
                break;
            if (r < 0 && errno != EINTR) {
                load_fail(t, errno, "waitpid");
                return;
            }
        }
        load_add(&t->ops, 1);
    }
}

static void fork_params(const struct load_ctx *c, struct jw *w)
{
    jw_double(w, "rate_per_s", c->opt.fork_rate);
}

const struct load_kind load_kind_fork = {
    .name = "fork",
    .roles = 1,
    .role_names = {"worker"},
    .has_ops = 1,
    .counters = {"fork_failures", NULL},
    .params = fork_params,
    .body = {fork_body},
};

/* ---- net ------------------------------------------------------------------------------------ */

struct net_state {
    int port;
    int client[LOAD_MAX_WORKERS];   /* sender ends */
    int server[LOAD_MAX_WORKERS];   /* receiver ends */
    int n;
};

static struct net_state net;

static int net_setup(struct load_ctx *c, char *err, size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t alen = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, c->opt.workers) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0) {
        snprintf(err, errlen, "cannot listen on 127.0.0.1: %s.", strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    net.port = ntohs(a.sin_port);
    c->state = &net;
    for (int i = 0; i < c->opt.workers; i++) {
        int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof a) != 0) {
            snprintf(err, errlen, "cannot connect to 127.0.0.1:%d: %s.", net.port, strerror(errno));
            if (cfd >= 0)
                close(cfd);
            close(lfd);
            return -1;
        }
        int sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (sfd < 0) {
            snprintf(err, errlen, "cannot accept on 127.0.0.1:%d: %s.", net.port, strerror(errno));
            close(cfd);
            close(lfd);
            return -1;
        }
        net.client[net.n] = cfd;
        net.server[net.n++] = sfd;
    }
    close(lfd);
    return 0;
}

static void net_sender(struct load_thread *t)
{
    const size_t block = (size_t)t->ctx->opt.block_bytes;
    const char *buf = t->state;
    int fd = net.client[t->worker];
    uint64_t done = 0;
    while (!load_stopping()) {
        ssize_t n = send(fd, buf, block, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            load_fail(t, errno, "send");
            return;
        }
        done += (uint64_t)n;
        load_add(&t->counter[0], (uint64_t)n);
        load_pace_bytes(t, done);
    }
}

static void net_receiver(struct load_thread *t)
{
    const size_t block = (size_t)t->ctx->opt.block_bytes;
    char *buf = t->state;
    int fd = net.server[t->worker];
    while (!load_stopping()) {
        ssize_t n = recv(fd, buf, block, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            load_fail(t, errno, "recv");
            return;
        }
        if (n == 0) {
            load_fail(t, EPIPE, "recv (the sender closed the connection)");
            return;
        }
        load_add(&t->bytes, (uint64_t)n);
    }
}

static void net_params(const struct load_ctx *c, struct jw *w)
{
    jw_uint(w, "limit_bps", c->opt.limit_bps);
    jw_uint(w, "block_size_bytes", c->opt.block_bytes);
    jw_str(w, "address", "127.0.0.1");
    jw_int(w, "port", net.port);
}

static void net_cleanup(struct load_ctx *c)
{
    for (int i = 0; i < net.n; i++) {
        close(net.client[i]);
        close(net.server[i]);
    }
    net.n = 0;
    load_free_thread_states(c);
}

const struct load_kind load_kind_net = {
    .name = "net",
    .roles = 2,
    .role_names = {"sender", "receiver"},
    .has_bytes = 1,
    .counters = {"bytes_sent", NULL},
    .setup = net_setup,
    .params = net_params,
    .prepare = alloc_block,
    .body = {net_sender, net_receiver},
    .cleanup = net_cleanup,
};
