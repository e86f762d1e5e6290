/*
 * load kind `sched`: scheduler and wake-up load, the messaging pattern of
 * hackbench-style runs, whose cost is in the kernel's wake-up and context
 * switch paths rather than in computation or memory traffic.
 *
 * Each worker is a pair of threads, `ping` and `pong`, joined by two pipes.
 * ping writes a message of --msg-size bytes into the first pipe and blocks
 * reading the answer from the second; pong reads the message and writes it
 * back. Every message wakes the other thread, so one round trip is two
 * wake-ups and, with the pair pinned to one CPU, two context switches.
 *
 * `ops` counts ping's completed round trips. pong counts the messages it
 * answered (`answered`): the round trips, or one more when the load stopped
 * with an answer on its way back, a check that nothing is lost or counted
 * twice. A message is at most PIPE_BUF bytes, so each write is atomic and
 * only one message is ever in a pipe: neither write can block.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

struct sched_state {
    int to_pong[LOAD_MAX_WORKERS][2];   /* [0] read end, [1] write end */
    int to_ping[LOAD_MAX_WORKERS][2];
    int n;
};

static struct sched_state sched;

static int sched_setup(struct load_ctx *c, char *err, size_t errlen)
{
    c->state = &sched;
    for (int i = 0; i < c->opt.workers; i++) {
        if (pipe2(sched.to_pong[i], O_CLOEXEC) != 0) {
            snprintf(err, errlen, "cannot create a pipe: %s.", strerror(errno));
            return -1;
        }
        if (pipe2(sched.to_ping[i], O_CLOEXEC) != 0) {
            snprintf(err, errlen, "cannot create a pipe: %s.", strerror(errno));
            close(sched.to_pong[i][0]);
            close(sched.to_pong[i][1]);
            return -1;
        }
        sched.n++;
    }
    return 0;
}

static int alloc_message(struct load_thread *t)
{
    size_t len = (size_t)t->ctx->opt.msg_bytes;
    char *p = malloc(len);
    if (!p) {
        load_fail(t, ENOMEM, "allocating the message buffer");
        return -1;
    }
    memset(p, 0x5a ^ t->worker, len);
    t->state = p;
    return 0;
}

/* Moves one whole message; 1 when done, 0 when the load is stopping, -1
 * after load_fail. A signal (the stop request) interrupts a blocked read. */
static int move_message(struct load_thread *t, int fd, int writing)
{
    const size_t len = (size_t)t->ctx->opt.msg_bytes;
    char *buf = t->state;
    size_t done = 0;
    while (done < len) {
        if (load_stopping())
            return 0;
        ssize_t n = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            load_fail(t, errno, writing ? "write to the pipe" : "read from the pipe");
            return -1;
        }
        if (n == 0) {
            load_fail(t, EPIPE, "read from the pipe (the other thread closed it)");
            return -1;
        }
        done += (size_t)n;
    }
    return 1;
}

static void sched_ping(struct load_thread *t)
{
    const int w = t->worker;
    while (move_message(t, sched.to_pong[w][1], 1) == 1 && move_message(t, sched.to_ping[w][0], 0) == 1)
        load_add(&t->ops, 1);
}

static void sched_pong(struct load_thread *t)
{
    const int w = t->worker;
    while (move_message(t, sched.to_pong[w][0], 0) == 1 && move_message(t, sched.to_ping[w][1], 1) == 1)
        load_add(&t->counter[0], 1);
}

static void sched_params(const struct load_ctx *c, struct jw *w)
{
    jw_uint(w, "msg_size_bytes", c->opt.msg_bytes);
    jw_str(w, "transport", "pipe");
}

static void sched_cleanup(struct load_ctx *c)
{
    for (int i = 0; i < sched.n; i++)
        for (int e = 0; e < 2; e++) {
            close(sched.to_pong[i][e]);
            close(sched.to_ping[i][e]);
        }
    sched.n = 0;
    load_free_thread_states(c);
}

const struct load_kind load_kind_sched = {
    .name = "sched",
    .roles = 2,
    .role_names = {"ping", "pong"},
    .has_ops = 1,
    .counters = {"answered", NULL},
    .setup = sched_setup,
    .params = sched_params,
    .prepare = alloc_message,
    .body = {sched_ping, sched_pong},
    .cleanup = sched_cleanup,
};
