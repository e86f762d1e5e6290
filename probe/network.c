/*
 * network: streaming throughput from one probe to another over tcp or udp, and
 * what it costs the two ends in CPU time (docs/probe/network.md).
 *
 * `network --serve` is the receiver, `network --connect ADDR:PORT` the sender. One
 * TCP connection joins them for the whole session (the control channel):
 *
 *   sender -> receiver   HELLO(transport, size, duration, rate)
 *   receiver -> sender   READY(udp port, 0 for tcp)
 *   tcp: the data follows on the control connection itself, then the
 *        sender shuts its writing side down (EOF marks the end);
 *   udp: datagrams go to the udp port READY named, then the sender says
 *        END(datagrams sent, bytes sent) on the control connection;
 *   receiver -> sender   REPORT(what arrived, over which span, at what CPU cost)
 *
 * The receiver's figures are the result: only it knows what arrived and
 * when, so the rate is the bytes it received over its own span, and the
 * udp loss is what the sender says it sent minus what arrived. The sender
 * prints one result with both sides' figures (the receiver's from REPORT);
 * the receiver prints its own as well.
 *
 * Every chunk (tcp) and datagram (udp) is a message of netpayload.c: its
 * sequence number, then words derived from it, which the receiver checks in
 * one pass over its buffer, so that a chunk that is altered, misplaced or
 * from another session fails the check without the check becoming the
 * bottleneck of a fast link.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netpayload.h"
#include "opts.h"
#include "probe.h"
#include "transport.h"

#define SUB "network"

/* The version of the protocol and payload: an end of another version
 * is told so instead of seeing every chunk as corrupted. */
#define NET_MAGIC "RTVBNET2"
#define NET_FIELDS 16
#define NET_CTRL (8 + 8 * NET_FIELDS)
#define NET_MIN_SIZE 16
#define NET_MAX_TCP (16u << 20)
/* The largest UDP payload over IPv4 (65535 - 20 - 8): a bigger datagram
 * cannot be sent in one piece, and datagrams are never split here. */
#define NET_MAX_UDP 65507
#define DEFAULT_TCP_SIZE 131072
/* Fits one Ethernet frame with IPv6 and UDP headers (1500 - 48): no IP
 * fragments, which would make one lost fragment lose the whole datagram. */
#define DEFAULT_UDP_SIZE 1400
/* After the sender's END, how long the receiver waits for stragglers once
 * nothing arrives: datagrams still in flight (a slow TCG guest) land well
 * within it; a datagram later than that is counted as lost. */
#define NET_QUIET_NS 500000000ull
/* Most sequence numbers the receiver tracks for duplicates (32 MiB of
 * bitmap): 10 Gbit/s of 1400-byte datagrams for five minutes. */
#define NET_MAX_TRACKED (1ull << 28)
/* Most trials of a zero-loss search: 30 halvings narrow a terabit ceiling
 * to a kilobit. */
#define NET_MAX_STEPS 30
#define NET_MIN_RATE 1000

enum { OP_HELLO = 1, OP_READY = 2, OP_END = 3, OP_REPORT = 4 };
/* HELLO's flags: a tcp session in both directions at once; a trial of a
 * search, after which another HELLO may follow on the same connection. */
enum { F_BIDIR = 1, F_SEARCH = 2 };
enum net_mode { NET_SERVE, NET_CONNECT };

/* The REPORT's fields after the op. */
enum {
    R_BYTES = 1, R_UNITS, R_DUPLICATES, R_OUT_OF_ORDER, R_SPAN_NS, R_CPU_NS, R_CORRUPT,
    R_BAD_SEQ, R_BAD_OFFSET, R_BAD_BYTES, R_PARTIAL, R_LOOP_NS, R_REV_BYTES, R_REV_UNITS
};

struct net_opts {
    enum net_mode mode;
    int transport;                   /* TP_TCP or TP_UDP */
    uint64_t size, duration_ns, rate_bps, timeout_ns;
    const char *connect, *bind;
    char host[64];
    unsigned port;
    int bidir;                       /* tcp: the receiver streams back at the same time */
    uint64_t search_steps;           /* udp: trials of the zero-loss search, 0 = one paced stream */
    int64_t corrupt;                 /* hidden test hook: chunk to alter, -1 = off, */
    int64_t corrupt_offset;          /* and its byte to flip, -1 = the middle one */
    uint64_t capacity_bps;           /* hidden test hook: the receiver keeps this rate at most, 0 = off */
    atomic_int *halt;                /* a tcp sender stops when it is set (NULL: its duration only) */
};

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

/* ------------------------------------------------------- control messages */

static int send_ctrl(struct tp_conn *c, const uint64_t f[NET_FIELDS])
{
    uint8_t buf[NET_CTRL];
    memcpy(buf, NET_MAGIC, 8);
    for (int i = 0; i < NET_FIELDS; i++) {
        uint64_t le = htole64(f[i]);
        memcpy(buf + 8 + 8 * i, &le, 8);
    }
    return tp_send_all(c, buf, sizeof buf);
}

/* 0; -1 with errno from the transport; -2 for a message that is not ours
 * or not the op expected. */
static int recv_ctrl(struct tp_conn *c, uint64_t op, uint64_t f[NET_FIELDS])
{
    uint8_t buf[NET_CTRL];
    if (tp_recv_all(c, buf, sizeof buf))
        return -1;
    if (memcmp(buf, NET_MAGIC, 8))
        return -2;
    for (int i = 0; i < NET_FIELDS; i++) {
        uint64_t le;
        memcpy(&le, buf + 8 + 8 * i, 8);
        f[i] = le64toh(le);
    }
    return f[0] == op ? 0 : -2;
}

static const char *io_text(int err)
{
    switch (err) {
    case EAGAIN: return "the other end was silent longer than --timeout-s";
    case ECONNRESET:
    case EPIPE: return "the other end closed the connection";
    default: return strerror(err);
    }
}

/* ------------------------------------------------------------ the payload */

struct check {
    uint64_t corrupt;                /* chunks or datagrams with a wrong byte */
    uint64_t seq;                    /* the first of them, */
    uint64_t offset;                 /* its first wrong byte, */
    unsigned expected, got;          /* what it should have been and was */
};

/* Whether chunk `seq` in `got` is exact; the first fault goes into ck. */
static int check_chunk(const uint8_t *got, size_t size, uint64_t seq, struct check *ck)
{
    if (netpayload_exact(got, size, seq))
        return 1;
    if (ck->corrupt++ == 0) {
        unsigned expected = 0;
        size_t at = netpayload_first_fault(got, size, seq, &expected);
        ck->seq = seq;
        ck->offset = at;
        ck->expected = expected;
        ck->got = got[at];
    }
    return 0;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

/* ---------------------------------------------------------------- receiver */

struct received {
    uint64_t bytes, units, duplicates, out_of_order, partial;
    uint64_t span_ns, cpu_ns;        /* from READY to the last arrival; CPU over the receive loop */
    struct check ck;
};

/* tcp: chunks on connection c until the sender's EOF; a receiver that
 * drains goes on to the EOF after a stop too, so that its sender, which is
 * told to end, is never left blocked on a full socket. */
static int receive_tcp(struct tp_conn *c, size_t size, uint64_t t_ready, int drain, struct received *r,
                       const char **why)
{
    uint8_t *buf = malloc(size);
    uint64_t t_last = t_ready;
    size_t have = 0;
    int rc = 0;
    if (!buf) {
        *why = "out of memory for the chunks";
        rc = -1;
    }
    while (rc == 0 && (drain || !stop)) {
        /* MSG_WAITALL: one call per chunk whatever the segments were. */
        ssize_t n = recv(c->rfd, buf + have, size - have, MSG_WAITALL);
        if (n == 0)
            break;                   /* the sender's EOF: the stream is over */
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *why = io_text(errno);
            rc = -1;
            break;
        }
        t_last = mono_ns();
        r->bytes += (uint64_t)n;
        have += (size_t)n;
        if (have == size) {
            check_chunk(buf, size, r->units++, &r->ck);
            have = 0;
        }
    }
    r->partial = have;               /* a chunk cut short by an interrupted sender: counted, not checked */
    r->span_ns = t_last - t_ready;
    free(buf);
    return rc;
}

/* A growing bitmap of the sequence numbers seen, for duplicates. */
struct seen {
    uint64_t *bits;
    uint64_t cap;                    /* in numbers */
};

/* 1 if seq was seen before, 0 if not (now it is), -1 beyond what is tracked. */
static int seen_mark(struct seen *s, uint64_t seq)
{
    if (seq >= NET_MAX_TRACKED)
        return -1;
    if (seq >= s->cap) {
        uint64_t cap = s->cap ? s->cap : 1 << 16;
        while (cap <= seq)
            cap *= 2;
        uint64_t *bits = realloc(s->bits, cap / 8);
        if (!bits)
            return -1;
        memset((uint8_t *)bits + s->cap / 8, 0, (cap - s->cap) / 8);
        s->bits = bits;
        s->cap = cap;
    }
    uint64_t m = 1ull << (seq % 64);
    int was = (s->bits[seq / 64] & m) != 0;
    s->bits[seq / 64] |= m;
    return was;
}

/* Test hook: whether a receiver that models a link of capacity_bps keeps
 * datagram seq of a stream paced at rate_bps. Above the capacity it keeps
 * capacity/rate of them, spread evenly over the numbers (a drop decided by
 * the number, not the clock), so the loss it causes is known exactly. */
static int capacity_keeps(uint64_t seq, uint64_t capacity_bps, uint64_t rate_bps)
{
    if (!capacity_bps || rate_bps <= capacity_bps)
        return 1;
    double share = (double)capacity_bps / (double)rate_bps;
    return floor((double)(seq + 1) * share) > floor((double)seq * share);
}

/* udp: datagrams on ufd, until every datagram END announced has come or
 * nothing has come for NET_QUIET_NS after END. */
static int receive_udp(struct tp_conn *c, int ufd, size_t size, uint64_t timeout_ns, uint64_t t_ready,
                       uint64_t capacity_bps, uint64_t rate_bps, struct received *r, uint64_t *sent,
                       const char **why)
{
    uint8_t *buf = malloc(size + 1);
    uint64_t t_last = t_ready, t_heard = t_ready, highest = 0;
    struct seen seen = {0};
    int rc = 0, ended = 0, any = 0;
    *sent = 0;
    if (!buf) {
        *why = "out of memory for the datagrams";
        rc = -1;
    }
    while (rc == 0 && !stop) {
        uint64_t now = mono_ns();
        if (ended && (r->units >= *sent || now - t_heard >= NET_QUIET_NS))
            break;
        if (!ended && now - t_heard >= timeout_ns) {
            *why = "the sender was silent longer than --timeout-s";
            rc = -1;
            break;
        }
        struct pollfd p[2] = {{.fd = ufd, .events = POLLIN}, {.fd = c->rfd, .events = POLLIN}};
        if (poll(p, ended ? 1 : 2, 50) < 0) {
            if (errno != EINTR) {
                *why = strerror(errno);
                rc = -1;
            }
            continue;
        }
        /* Every datagram queued, then the control channel: END is sent
         * after the last datagram, so most have arrived when it is read. */
        for (;;) {
            ssize_t n = recv(ufd, buf, size + 1, MSG_DONTWAIT | MSG_TRUNC);
            if (n < 0)
                break;
            t_last = t_heard = mono_ns();
            uint64_t seq;
            memcpy(&seq, buf, NETPAYLOAD_HDR);
            seq = le64toh(seq);
            if ((size_t)n == size && !capacity_keeps(seq, capacity_bps, rate_bps))
                continue;
            int was = (size_t)n == size ? seen_mark(&seen, seq) : -1;
            if (was == 1) {
                r->duplicates++;
                continue;
            }
            r->units++;
            r->bytes += (uint64_t)n;
            if (was < 0) {           /* a datagram of another size or an impossible number */
                if (r->ck.corrupt++ == 0)
                    r->ck = (struct check){.corrupt = 1, .seq = seq, .offset = (size_t)n == size ? 0 : (uint64_t)n};
                continue;
            }
            if (any && seq < highest)
                r->out_of_order++;
            if (!any || seq > highest)
                highest = seq;
            any = 1;
            check_chunk(buf, size, seq, &r->ck);
        }
        if (!ended && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            uint64_t f[NET_FIELDS];
            int got = recv_ctrl(c, OP_END, f);
            if (got) {
                *why = got == -2 ? "the sender sent something else than END" : io_text(errno);
                rc = -1;
                break;
            }
            ended = 1;
            *sent = f[1];
            t_heard = mono_ns();
        }
    }
    r->span_ns = t_last - t_ready;
    free(seen.bits);
    free(buf);
    return rc;
}

static void print_check(struct jw *w, const struct check *ck, int complete)
{
    if (ck->corrupt || complete)
        jw_bool(w, "verified", ck->corrupt == 0);
    else
        jw_null(w, "verified");      /* cut short, nothing wrong so far */
    jw_uint(w, "corrupt_messages", ck->corrupt);
    if (ck->corrupt) {
        jw_obj(w, "corruption");
        jw_uint(w, "message", ck->seq);
        jw_uint(w, "offset", ck->offset);
        jw_int(w, "expected", ck->expected);
        jw_int(w, "got", ck->got);
        jw_end(w);
    }
}

static double per_s(uint64_t amount, uint64_t ns)
{
    return ns ? (double)amount * 1e9 / (double)ns : NAN;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : NAN;
}

/* ------------------------------------------------------------------ sender */

struct sent {
    uint64_t bytes, units, span_ns, cpu_ns;
};

/* The test hook: the low bit of one byte of message `corrupt` flipped. */
static void corrupt_hook(const struct net_opts *o, uint8_t *msg, uint64_t seq)
{
    if (o->corrupt >= 0 && seq == (uint64_t)o->corrupt)
        msg[o->corrupt_offset >= 0 ? (size_t)o->corrupt_offset : o->size / 2] ^= 0x01;
}

static int send_tcp(struct tp_conn *c, const struct net_opts *o, struct sent *s, const char **why)
{
    uint8_t *chunk = malloc(o->size);
    if (!chunk) {
        *why = "out of memory for the chunks";
        return -1;
    }
    /* A bulk stream: let the kernel fill its segments (the control
     * connection was made with TCP_NODELAY for round trips). */
    int zero = 0, rc = 0;
    setsockopt(c->wfd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
    uint64_t t0 = mono_ns(), cpu0 = cpu_ns(), end = t0 + o->duration_ns, now = t0;
    /* A chunk the test hook is to alter is sent even after the duration,
     * so that a test knows it went whatever the scheduler did. */
    while (!stop && !(o->halt && atomic_load(o->halt))
           && (now < end || (o->corrupt >= 0 && s->units <= (uint64_t)o->corrupt))) {
        netpayload_fill(chunk, o->size, s->units);
        corrupt_hook(o, chunk, s->units);
        if (tp_send_all(c, chunk, o->size)) {
            if (errno != EINTR)
                *why = io_text(errno), rc = -1;
            break;                   /* an interrupted chunk is cut short: the receiver counts its bytes */
        }
        s->units++;
        s->bytes += o->size;
        now = mono_ns();
    }
    s->span_ns = mono_ns() - t0;
    s->cpu_ns = cpu_ns() - cpu0;
    free(chunk);
    if (rc == 0 && shutdown(c->wfd, SHUT_WR)) {
        *why = io_text(errno);
        rc = -1;
    }
    return rc;
}

static int send_udp(struct tp_conn *ctrl, const struct net_opts *o, unsigned uport, struct sent *s,
                    const char **why)
{
    static char err[256];
    struct tp_conn d;
    if (tp_connect(TP_UDP, o->host, uport, &d, err, sizeof err)) {
        *why = err;
        return -1;
    }
    uint8_t *dgram = malloc(o->size);
    int rc = 0;
    if (!dgram) {
        *why = "out of memory for the datagrams";
        rc = -1;
    }
    /* Datagram i leaves at t0 + i * gap: a schedule, not a sleep between
     * sends, so a late wake-up is caught up and the average rate is exact.
     * The timer slack of 1 ns makes the wake-ups as punctual as the
     * scheduler allows (the default slack is 50 us, longer than the gap at
     * a gigabit). */
    prctl(PR_SET_TIMERSLACK, 1UL);
    double gap = (double)o->size * 8.0 * 1e9 / (double)o->rate_bps;
    uint64_t t0 = mono_ns(), cpu0 = cpu_ns(), end = t0 + o->duration_ns;
    while (rc == 0 && !stop) {
        uint64_t due = t0 + (uint64_t)((double)s->units * gap);
        if (due >= end)
            break;
        if (due > mono_ns()) {
            struct timespec ts = {.tv_sec = (time_t)(due / 1000000000ull), .tv_nsec = (long)(due % 1000000000ull)};
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
                continue;            /* a signal: look at stop again */
        }
        netpayload_fill(dgram, o->size, s->units);
        corrupt_hook(o, dgram, s->units);
        ssize_t n = send(d.wfd, dgram, o->size, 0);
        if (n < 0 && (errno == ENOBUFS || errno == EINTR || errno == EAGAIN))
            continue;                /* the same datagram again: nothing was sent */
        if (n != (ssize_t)o->size) {
            *why = n < 0 && errno == ECONNREFUSED ? "the receiver's udp port refused the datagrams"
                                                  : n < 0 ? io_text(errno) : "a datagram was cut short";
            rc = -1;
            break;
        }
        s->units++;
        s->bytes += o->size;
    }
    s->span_ns = mono_ns() - t0;
    s->cpu_ns = cpu_ns() - cpu0;
    tp_close(&d);
    free(dgram);
    uint64_t f[NET_FIELDS] = {OP_END, s->units, s->bytes};
    if (rc == 0 && send_ctrl(ctrl, f)) {
        *why = io_text(errno);
        rc = -1;
    }
    return rc;
}

/* ------------------------------------------------- both directions at once */

/* The other direction of a --bidir session: one end streams on its own
 * thread while its main thread does the first direction, so that both
 * directions run at the same time on the two connections. */
struct reverse {
    pthread_t thread;
    struct tp_conn conn;
    struct net_opts opts;            /* the sending end's: size, duration, no corruption */
    struct sent sent;                /* the sending end's figures */
    struct received got;             /* the receiving end's */
    uint64_t t_ready;
    const char *fault;
    atomic_int halt;                 /* set when the first direction is over: the sending thread ends too */
    int rc, started;
};

static void *reverse_send_main(void *arg)
{
    struct reverse *rv = arg;
    rv->rc = send_tcp(&rv->conn, &rv->opts, &rv->sent, &rv->fault);
    return NULL;
}

static void *reverse_receive_main(void *arg)
{
    struct reverse *rv = arg;
    rv->rc = receive_tcp(&rv->conn, rv->opts.size, rv->t_ready, 1, &rv->got, &rv->fault);
    return NULL;
}

/* The thread starts with SIGINT and SIGTERM blocked, so that a stop
 * always interrupts the main thread, which ends the first direction; the
 * end of that ends the second (halt, EOF). */
static int reverse_start(struct reverse *rv, void *(*body)(void *))
{
    sigset_t stops, before;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    atomic_init(&rv->halt, 0);
    rv->opts.halt = &rv->halt;
    pthread_sigmask(SIG_BLOCK, &stops, &before);
    rv->started = pthread_create(&rv->thread, NULL, body, rv) == 0;
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (!rv->started)
        rv->fault = "cannot start the thread of the reverse direction";
    return rv->started ? 0 : -1;
}

/* Joins the thread, closes the connection; the thread's verdict. */
static int reverse_finish(struct reverse *rv)
{
    if (rv->started)
        pthread_join(rv->thread, NULL);
    rv->started = 0;
    tp_close(&rv->conn);
    return rv->rc;
}

/* The receiver's end of the reverse connection: a listener on a port of
 * its own, named in READY, accepted within --timeout-s. */
static int reverse_accept(int lfd, uint64_t timeout_ns, struct tp_conn *c, const char **why)
{
    static char err[256];
    char peer[128];
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int n = poll(&p, 1, (int)(timeout_ns / 1000000ull > INT32_MAX ? INT32_MAX : timeout_ns / 1000000ull));
    if (n <= 0) {
        *why = n == 0 ? "the sender did not open the reverse connection within --timeout-s" : strerror(errno);
        return -1;
    }
    if (tp_accept(TP_TCP, lfd, c, peer, sizeof peer, err, sizeof err)) {
        *why = err;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ serving */

/* One session of HELLO ... REPORT. */
static int serve_session(const struct net_opts *o, struct tp_conn *c, const uint64_t hello[NET_FIELDS],
                         unsigned trial, const char *peer, char *why, size_t whylen)
{
    char err[256];
    const char *fault = NULL;
    int kind = (int)hello[1], ufd = -1, rfd = -1, rc = 0;
    uint64_t size = hello[2], flags = hello[5];
    unsigned uport = 0;
    if (kind == TP_UDP) {
        ufd = tp_listen(TP_UDP, o->bind, 0, &uport, err, sizeof err);
        if (ufd < 0) {
            snprintf(why, whylen, "cannot open the udp port: %s", err);
            return -1;
        }
        /* Room for a burst of a paced sender that was descheduled (the
         * kernel caps it at net.core.rmem_max). */
        int room = 4 << 20;
        setsockopt(ufd, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
    } else if (flags & F_BIDIR) {
        rfd = tp_listen(TP_TCP, o->bind, 0, &uport, err, sizeof err);
        if (rfd < 0) {
            snprintf(why, whylen, "cannot listen for the reverse connection: %s", err);
            return -1;
        }
    }
    struct received r = {0};
    struct reverse rv = {.conn = {.rfd = -1, .wfd = -1},
                         .opts = {.size = size, .duration_ns = hello[3], .corrupt = -1}};
    uint64_t sent = 0, reply[NET_FIELDS] = {OP_READY, uport};
    uint64_t cpu0 = cpu_ns(), t_ready = mono_ns();
    rc = send_ctrl(c, reply);
    if (rc)
        fault = io_text(errno);
    else if (rfd >= 0) {
        rc = reverse_accept(rfd, o->timeout_ns, &rv.conn, &fault);
        if (rc == 0) {
            tp_set_timeout(&rv.conn, o->timeout_ns);
            if ((rc = reverse_start(&rv, reverse_send_main)))
                fault = rv.fault;
        }
    }
    if (rc == 0 && kind == TP_TCP)
        rc = receive_tcp(c, size, t_ready, 0, &r, &fault);
    else if (rc == 0)
        rc = receive_udp(c, ufd, size, o->timeout_ns, t_ready, o->capacity_bps, hello[4], &r, &sent, &fault);
    if (rfd >= 0) {
        atomic_store(&rv.halt, 1);
        if (reverse_finish(&rv) && rc == 0) {
            fault = rv.fault;
            rc = -1;
        }
        close(rfd);
    }
    r.cpu_ns = cpu_ns() - cpu0;
    uint64_t loop_ns = mono_ns() - t_ready;
    if (ufd >= 0)
        close(ufd);
    int complete = rc == 0 && !stop;
    if (complete) {
        uint64_t rep[NET_FIELDS] = {OP_REPORT, r.bytes, r.units, r.duplicates, r.out_of_order, r.span_ns,
                                    r.cpu_ns, r.ck.corrupt, r.ck.seq, r.ck.offset,
                                    (uint64_t)r.ck.expected << 8 | r.ck.got, r.partial, loop_ns,
                                    rv.sent.bytes, rv.sent.units};
        if (send_ctrl(c, rep)) {
            complete = 0;
            fault = io_text(errno);
        }
    }

    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "role", "receiver");
    jw_str(&w, "transport", tp_name((enum tp_kind)kind));
    jw_str(&w, "peer", peer);
    if (flags & F_SEARCH)
        jw_uint(&w, "trial", trial);
    jw_uint(&w, "size_bytes", size);
    jw_bool(&w, "complete", complete);
    jw_uint(&w, "received_bytes", r.bytes);
    jw_uint(&w, "received_messages", r.units);
    if (kind == TP_UDP) {
        jw_uint(&w, "duplicates", r.duplicates);
        jw_uint(&w, "out_of_order", r.out_of_order);
        if (complete)                /* END said how many were sent */
            jw_double(&w, "loss_percent", percent(sent > r.units ? sent - r.units : 0, sent));
        else
            jw_null(&w, "loss_percent");
    }
    jw_uint(&w, "span_ns", r.span_ns);
    jw_double(&w, "rate_bytes_per_s", per_s(r.bytes, r.span_ns));
    jw_double(&w, "rate_bits_per_s", per_s(8 * r.bytes, r.span_ns));
    if (flags & F_BIDIR) {
        jw_uint(&w, "reverse_sent_bytes", rv.sent.bytes);
        jw_uint(&w, "reverse_sent_messages", rv.sent.units);
    }
    jw_double(&w, "cpu_percent", percent(r.cpu_ns, loop_ns));
    print_check(&w, &r.ck, complete);
    jw_emit(&w);
    jw_free(&w);
    if (fault)
        snprintf(why, whylen, "receiving from %s: %s", peer, fault);
    return complete ? 0 : -1;
}

/* One session, or the trials of a search on one control connection: each
 * trial's HELLO says it is one, and the sender closes the connection after
 * the last trial's REPORT. */
static int serve(const struct net_opts *o, int lfd, char *why, size_t whylen)
{
    struct tp_conn c;
    char err[256], peer[128] = "?";
    uint64_t f[NET_FIELDS] = {0};
    int rc = tp_accept(TP_TCP, lfd, &c, peer, sizeof peer, err, sizeof err);
    close(lfd);                      /* one sender per run */
    if (rc) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    tp_set_timeout(&c, o->timeout_ns);
    for (unsigned trial = 0;; trial++) {
        rc = recv_ctrl(&c, OP_HELLO, f);
        if (rc == -1 && trial > 0 && errno == ECONNRESET) {
            rc = 0;                  /* the search is over */
            break;
        }
        uint64_t size = f[2], max = f[1] == TP_UDP ? NET_MAX_UDP : NET_MAX_TCP;
        if (rc || (f[1] != TP_TCP && f[1] != TP_UDP) || size < NET_MIN_SIZE || size > max
            || (f[5] & ~(uint64_t)(F_BIDIR | F_SEARCH))) {
            snprintf(why, whylen, "%s", rc == -1 ? io_text(errno) : "the client is not rtvb-probe network --connect "
                                                                    "of this version");
            rc = -1;
            break;
        }
        rc = serve_session(o, &c, f, trial, peer, why, whylen);
        if (rc || !(f[5] & F_SEARCH))
            break;
    }
    tp_close(&c);
    return rc;
}

/* What one session brought back to the sender. */
struct outcome {
    struct sent s;
    uint64_t f[NET_FIELDS];          /* the REPORT */
    struct check ck;                 /* what the receiver found in the first direction */
    struct reverse rv;               /* --bidir: the other direction, received here */
    int started, reported, interrupted;
    const char *fault;
};

/* HELLO ... REPORT at `rate`; 0 when the receiver's report came. */
static int session(struct tp_conn *c, const struct net_opts *o, uint64_t rate, uint64_t flags, struct outcome *out)
{
    static char err[256];
    uint64_t f[NET_FIELDS] = {OP_HELLO, (uint64_t)o->transport, o->size, o->duration_ns, rate, flags};
    int rc = send_ctrl(c, f);
    if (rc == 0)
        rc = recv_ctrl(c, OP_READY, f);
    if (rc) {
        out->fault = rc == -2 ? "the answer is not from rtvb-probe network --serve of this version" : io_text(errno);
        return -1;
    }
    out->started = 1;
    struct reverse *rv = &out->rv;
    if (flags & F_BIDIR) {
        rv->opts.size = o->size;
        if (tp_connect(TP_TCP, o->host, (unsigned)f[1], &rv->conn, err, sizeof err)) {
            out->fault = err;
            return -1;
        }
        tp_set_timeout(&rv->conn, o->timeout_ns);
        rv->t_ready = mono_ns();
        if (reverse_start(rv, reverse_receive_main)) {
            out->fault = rv->fault;
            tp_close(&rv->conn);
            return -1;
        }
    }
    struct net_opts paced = *o;
    paced.rate_bps = rate;
    rc = o->transport == TP_TCP ? send_tcp(c, o, &out->s, &out->fault)
                                : send_udp(c, &paced, (unsigned)f[1], &out->s, &out->fault);
    out->interrupted = stop;
    /* An interrupted sender still asks for the report: the result then
     * covers what was sent so far (a second signal cuts the wait short). */
    if (rc == 0) {
        int got = recv_ctrl(c, OP_REPORT, out->f);
        out->reported = got == 0;
        if (got)
            out->fault = got == -2 ? "the receiver's report is garbled" : io_text(errno);
    }
    if ((flags & F_BIDIR) && reverse_finish(rv) && !out->fault)
        out->fault = rv->fault;
    if (out->reported) {
        uint64_t *r = out->f;
        out->ck = (struct check){.corrupt = r[R_CORRUPT], .seq = r[R_BAD_SEQ], .offset = r[R_BAD_OFFSET],
                                 .expected = (unsigned)(r[R_BAD_BYTES] >> 8 & 0xff),
                                 .got = (unsigned)(r[R_BAD_BYTES] & 0xff)};
    }
    return out->reported ? 0 : -1;
}

static void corruption_text(char *why, size_t whylen, const char *where, const struct check *ck, const char *units)
{
    snprintf(why, whylen, "%s found %llu corrupted %s, the first (number %llu) at byte %llu "
             "(expected 0x%02x, got 0x%02x)", where, (unsigned long long)ck->corrupt, units,
             (unsigned long long)ck->seq, (unsigned long long)ck->offset, ck->expected, ck->got);
}

/* The sender's result of one session, with the receiver's figures and, for
 * --bidir, those of the direction received here. */
static int report_session(const struct net_opts *o, const char *peer, struct outcome *out, char *why, size_t whylen)
{
    const uint64_t *f = out->f;
    int reported = out->reported, complete = reported && !out->interrupted, bidir = o->bidir;
    uint64_t received = reported ? f[R_BYTES] : 0, units = reported ? f[R_UNITS] : 0;
    uint64_t span = reported ? f[R_SPAN_NS] : 0, loop_ns = reported ? f[R_LOOP_NS] : 0;
    const struct sent *s = &out->s;
    const struct received *back = &out->rv.got;
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "role", "sender");
    jw_str(&w, "transport", tp_name((enum tp_kind)o->transport));
    jw_str(&w, "peer", peer);
    jw_uint(&w, "size_bytes", o->size);
    jw_bool(&w, "complete", complete);
    jw_uint(&w, "sent_bytes", s->bytes);
    jw_uint(&w, "sent_messages", s->units);
    jw_uint(&w, "sender_span_ns", s->span_ns);
    jw_double(&w, "sender_rate_bits_per_s", per_s(8 * s->bytes, s->span_ns));
    if (o->transport == TP_UDP)
        jw_uint(&w, "target_rate_bits_per_s", o->rate_bps);
    if (reported) {
        jw_uint(&w, "received_bytes", received);
        jw_uint(&w, "received_messages", units);
        jw_uint(&w, "receiver_span_ns", span);
        jw_double(&w, "rate_bytes_per_s", per_s(received, span));
        jw_double(&w, "rate_bits_per_s", per_s(8 * received, span));
        if (o->transport == TP_UDP) {
            jw_uint(&w, "duplicates", f[R_DUPLICATES]);
            jw_uint(&w, "out_of_order", f[R_OUT_OF_ORDER]);
            jw_uint(&w, "lost_messages", s->units > units ? s->units - units : 0);
            jw_double(&w, "loss_percent", percent(s->units > units ? s->units - units : 0, s->units));
        } else {
            jw_uint(&w, "partial_bytes", f[R_PARTIAL]);
        }
        jw_double(&w, "receiver_cpu_percent", percent(f[R_CPU_NS], loop_ns));
    } else {
        jw_null(&w, "rate_bits_per_s");
        jw_null(&w, "receiver_cpu_percent");
    }
    if (bidir) {
        /* The other direction, measured here as its receiver. */
        double back_bps = per_s(8 * back->bytes, back->span_ns);
        jw_bool(&w, "bidir", 1);
        jw_uint(&w, "reverse_sent_bytes", reported ? f[R_REV_BYTES] : 0);
        jw_uint(&w, "reverse_received_bytes", back->bytes);
        jw_uint(&w, "reverse_received_messages", back->units);
        jw_uint(&w, "reverse_span_ns", back->span_ns);
        jw_double(&w, "reverse_rate_bits_per_s", reported ? back_bps : NAN);
        jw_double(&w, "sum_rate_bits_per_s", reported ? per_s(8 * received, span) + back_bps : NAN);
        jw_uint(&w, "reverse_corrupt_messages", back->ck.corrupt);
    }
    jw_double(&w, "sender_cpu_percent", percent(s->cpu_ns, s->span_ns));
    struct check ck = out->ck;
    if (bidir && back->ck.corrupt && !ck.corrupt)
        ck = back->ck;               /* verified covers both directions */
    else if (bidir)
        ck.corrupt += back->ck.corrupt;
    print_check(&w, &ck, reported);   /* the receiver checked all that arrived */
    jw_emit(&w);
    jw_free(&w);
    const char *units_word = o->transport == TP_UDP ? "datagrams" : "chunks";
    if (out->fault) {
        snprintf(why, whylen, "%s %s: %s", out->started ? "streaming to" : "starting the session with", peer,
                 out->fault);
        return -1;
    }
    if (out->ck.corrupt) {
        corruption_text(why, whylen, "the receiver", &out->ck, units_word);
        return -1;
    }
    if (bidir && back->ck.corrupt) {
        corruption_text(why, whylen, "the reverse direction's receiver (the sender)", &back->ck, units_word);
        return -1;
    }
    /* tcp delivers every byte or fails: a difference here is a fault of
     * this program or of the path, never a figure. */
    if (complete && o->transport == TP_TCP && received != s->bytes) {
        snprintf(why, whylen, "the receiver got %llu bytes of the %llu sent over tcp",
                 (unsigned long long)received, (unsigned long long)s->bytes);
        return -1;
    }
    if (complete && bidir && back->bytes != f[R_REV_BYTES]) {
        snprintf(why, whylen, "the sender got %llu bytes of the %llu the receiver sent back over tcp",
                 (unsigned long long)back->bytes, (unsigned long long)f[R_REV_BYTES]);
        return -1;
    }
    return out->interrupted || !reported ? -1 : 0;
}

/* A trial of the zero-loss search. */
struct step {
    uint64_t rate, sent, received, duplicates, span_ns, received_bytes;
};

/* The highest paced rate without loss, by bisection between 0 and
 * --rate-bps: the ceiling first (free of loss: the search ends there),
 * then the middle of the interval left, which a trial without loss raises
 * and a trial with loss lowers. */
static int search_zero_loss(struct tp_conn *c, const struct net_opts *o, const char *peer, char *why, size_t whylen)
{
    struct step steps[NET_MAX_STEPS];
    struct outcome out = {0};
    uint64_t lo = 0, hi = o->rate_bps, rate = hi;
    int n = 0, failed = 0;
    while (n < (int)o->search_steps) {
        out = (struct outcome){0};
        if (session(c, o, rate, F_SEARCH, &out) || out.interrupted || out.fault || out.ck.corrupt) {
            failed = 1;
            break;
        }
        uint64_t got = out.f[R_UNITS];
        steps[n++] = (struct step){rate, out.s.units, got, out.f[R_DUPLICATES], out.f[R_SPAN_NS], out.f[R_BYTES]};
        if (got >= out.s.units) {
            lo = rate;
            if (rate == o->rate_bps)
                break;               /* nothing above the ceiling is tried */
        } else {
            hi = rate;
        }
        rate = lo + (hi - lo) / 2;
        if (rate < NET_MIN_RATE || rate == lo)
            break;
    }
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "role", "sender");
    jw_str(&w, "transport", "udp");
    jw_str(&w, "peer", peer);
    jw_uint(&w, "size_bytes", o->size);
    jw_bool(&w, "complete", !failed);
    jw_uint(&w, "search_ceiling_bits_per_s", o->rate_bps);
    jw_uint(&w, "search_steps", o->search_steps);
    jw_uint(&w, "trial_duration_ns", o->duration_ns);
    jw_arr(&w, "steps");
    for (int i = 0; i < n; i++) {
        const struct step *t = &steps[i];
        uint64_t lost = t->sent > t->received ? t->sent - t->received : 0;
        jw_obj(&w, NULL);
        jw_uint(&w, "target_rate_bits_per_s", t->rate);
        jw_uint(&w, "sent_messages", t->sent);
        jw_uint(&w, "received_messages", t->received);
        jw_uint(&w, "lost_messages", lost);
        jw_double(&w, "loss_percent", percent(lost, t->sent));
        jw_uint(&w, "duplicates", t->duplicates);
        jw_double(&w, "rate_bits_per_s", per_s(8 * t->received_bytes, t->span_ns));
        jw_end(&w);
    }
    jw_end(&w);
    /* lo is a rate a trial ran without loss, and hi - lo how far above it
     * the limit may lie (0 when the ceiling itself lost nothing). */
    if (!failed && lo) {
        jw_uint(&w, "zero_loss_rate_bits_per_s", lo);
        jw_double(&w, "zero_loss_packets_per_s", (double)lo / (8.0 * (double)o->size));
        jw_uint(&w, "search_resolution_bits_per_s", hi - lo);
    } else {
        jw_null(&w, "zero_loss_rate_bits_per_s");
        jw_null(&w, "zero_loss_packets_per_s");
        jw_null(&w, "search_resolution_bits_per_s");
    }
    print_check(&w, &out.ck, out.reported);
    jw_emit(&w);
    jw_free(&w);
    if (!failed)
        return 0;
    if (out.fault)
        snprintf(why, whylen, "%s %s: %s", out.started ? "streaming to" : "starting the session with", peer,
                 out.fault);
    else if (out.ck.corrupt)
        corruption_text(why, whylen, "the receiver", &out.ck, "datagrams");
    else
        snprintf(why, whylen, "the search was interrupted after %d trials", n);
    return -1;
}

static int run_connect(const struct net_opts *o, char *why, size_t whylen)
{
    struct tp_conn c;
    char err[256], peer[100];
    snprintf(peer, sizeof peer, strchr(o->host, ':') ? "[%s]:%u" : "%s:%u", o->host, o->port);
    if (tp_connect(TP_TCP, o->host, o->port, &c, err, sizeof err)) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    tp_set_timeout(&c, o->timeout_ns);
    int rc;
    if (o->search_steps) {
        rc = search_zero_loss(&c, o, peer, why, whylen);
    } else {
        struct outcome out = {0};
        session(&c, o, o->rate_bps, o->bidir ? F_BIDIR : 0, &out);
        if (!out.started) {
            tp_close(&c);
            snprintf(why, whylen, "starting the session with %s: %s", peer, out.fault);
            return -1;
        }
        rc = report_session(o, peer, &out, why, whylen);
    }
    tp_close(&c);
    return rc;
}

/* ---------------------------------------------------------------- options */

/* IPv4:PORT or [IPv6]:PORT, numeric. */
static int split_address(const char *s, struct net_opts *o)
{
    const char *colon = strrchr(s, ':'), *host = s;
    size_t len = colon ? (size_t)(colon - s) : 0;
    if (s[0] == '[') {
        if (len < 3 || s[len - 1] != ']')
            return -1;
        host = s + 1;
        len -= 2;
    } else if (memchr(s, ':', len)) {
        return -1;                   /* an IPv6 address needs brackets before :PORT */
    }
    uint64_t port;
    if (!colon || len == 0 || len >= sizeof o->host || parse_u64(colon + 1, 1, 65535, &port))
        return -1;
    memcpy(o->host, host, len);
    o->host[len] = '\0';
    o->port = (unsigned)port;
    return 0;
}

static int parse_options(int argc, char **argv, struct net_opts *o)
{
    static const char *const transports[] = {"tcp", "udp"};
    static const int kinds[] = {TP_TCP, TP_UDP};
    *o = (struct net_opts){.mode = NET_CONNECT, .transport = TP_TCP, .duration_ns = 10000000000ull,
                           .timeout_ns = 10000000000ull, .port = TP_DEFAULT_PORT, .corrupt = -1,
                           .corrupt_offset = -1};
    int serve = 0;
    struct opt table[] = {
        {OPT_F("serve", &serve, 1, "be the receiver of one session of another probe's --connect")},
        {OPT_S("connect", &o->connect, "ADDR:PORT", "be the sender, to a --serve receiver: IPv4:PORT or [IPv6]:PORT\n"
                                                    "(numeric addresses; names are not resolved)")},
        {OPT_E("transport", &o->transport, transports, kinds, 2, "tcp (default) or udp")},
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.01, 1e6, "seconds", "S",
                "how long the sender streams (default 10)")},
        {OPT_SZ("size", &o->size, NET_MIN_SIZE, NET_MAX_TCP,
                "bytes per send: tcp chunk (default 128K, up to 16M), udp datagram\n"
                "(default " RTVB_STR(DEFAULT_UDP_SIZE) ", up to " RTVB_STR(NET_MAX_UDP) "); 16 at least")},
        {OPT_I("rate-bps", &o->rate_bps, 1000, 1000000000000ull, "R",
               "udp: the sender's pace in bits per second of payload (required)")},
        {OPT_F("bidir", &o->bidir, 1, "tcp: the receiver streams back to the sender at the same time, on a\n"
                                        "second connection (both directions' rates and their sum)")},
        {OPT_I("search-steps", &o->search_steps, 1, NET_MAX_STEPS, "N",
               "udp: find the highest rate without loss, halving the interval between 0\n"
               "and --rate-bps in at most N trials of --duration-s each")},
        {OPT_I("port", &o->port, 0, 65535, "P",
               "port of --serve (default " RTVB_STR(TP_DEFAULT_PORT) ", 0 = any: meta.params.port says which)")},
        {OPT_S("bind", &o->bind, "ADDR", "address --serve listens on (default all)")},
        {OPT_NS("timeout-s", &o->timeout_ns, 1e9, 0.001, 1e6, "seconds", "S",
                "give up when the other end is silent this long (default 10)")},
        /* Test hook (docs/probe/network.md): the sender alters one byte of chunk N. */
        {OPT_I("x-corrupt", &o->corrupt, 0, UINT32_MAX, "N", NULL), .expect = "a chunk number"},
        /* Test hook: which byte of that chunk (default its middle one). */
        {OPT_I("x-corrupt-offset", &o->corrupt_offset, 0, NET_MAX_TCP - 1, "B", NULL), .expect = "a byte offset"},
        /* Test hook: the receiver keeps at most this rate of a paced udp stream. */
        {OPT_I("x-capacity-bps", &o->capacity_bps, 1000, 1000000000000ull, "R", NULL), .expect = "bits per second"},
        {OPT_TEXT("The sender prints the result, with the receiver's figures; the receiver prints its own.")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    if (serve == !!o->connect)
        return usage_error(SUB, "give --serve (the receiver) or --connect ADDR:PORT (the sender), one of them.");
    if (serve) {
        o->mode = NET_SERVE;
        static const char *const client_only[] = {"duration-s", "size", "rate-bps", "x-corrupt",
                                                  "x-corrupt-offset", "bidir",
                                                  "search-steps"};
        for (size_t i = 0; i < sizeof client_only / sizeof *client_only; i++)
            if (opts_seen(table, client_only[i]))
                return usage_error(SUB, "--%s belongs to the sender (--connect): the receiver takes what it is "
                                        "sent.", client_only[i]);
        return 0;
    }
    if (split_address(o->connect, o))
        return usage_error(SUB, "--connect must be IPv4:PORT or [IPv6]:PORT, got '%s'.", o->connect);
    if (opts_seen(table, "port") || o->bind)
        return usage_error(SUB, "--port and --bind belong to --serve (--connect takes ADDR:PORT).");
    if (o->capacity_bps)
        return usage_error(SUB, "--x-capacity-bps belongs to --serve.");
    if (o->bidir && o->transport != TP_TCP)
        return usage_error(SUB, "--bidir is a tcp session; udp streams one way (drop --bidir or use tcp).");
    if (o->search_steps && o->transport != TP_UDP)
        return usage_error(SUB, "--search-steps searches a udp pace; tcp has no loss to search (use --transport udp).");
    if (!opts_seen(table, "size"))
        o->size = o->transport == TP_UDP ? DEFAULT_UDP_SIZE : DEFAULT_TCP_SIZE;
    if (o->corrupt_offset >= 0 && (o->corrupt < 0 || (uint64_t)o->corrupt_offset >= o->size))
        return usage_error(SUB, "--x-corrupt-offset needs --x-corrupt and must be below --size.");
    if (o->transport == TP_UDP) {
        if (!o->rate_bps)
            return usage_error(SUB, "udp needs --rate-bps: an unpaced udp sender measures only what is dropped.");
        if (o->size > NET_MAX_UDP)
            return usage_error(SUB, "--size of a udp datagram must be 16 to " RTVB_STR(NET_MAX_UDP) ", got %llu.",
                               (unsigned long long)o->size);
    } else if (o->rate_bps) {
        return usage_error(SUB, "--rate-bps paces udp only; tcp streams as fast as it can.");
    }
    return 0;
}

static void print_meta(int argc, char **argv, const struct net_opts *o)
{
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "mode", o->mode == NET_SERVE ? "serve" : "connect");
    /* A receiver takes the transport, size and duration its sender asks for. */
    if (o->mode == NET_SERVE) {
        jw_null(&w, "transport");
        jw_null(&w, "size_bytes");
        jw_null(&w, "duration_ns");
        jw_null(&w, "rate_bits_per_s");
    } else {
        jw_str(&w, "transport", tp_name((enum tp_kind)o->transport));
        jw_uint(&w, "size_bytes", o->size);
        jw_uint(&w, "duration_ns", o->duration_ns);
        if (o->transport == TP_UDP)
            jw_uint(&w, "rate_bits_per_s", o->rate_bps);
        else
            jw_null(&w, "rate_bits_per_s");
        jw_bool(&w, "bidir", o->bidir);
        jw_uint(&w, "search_steps", o->search_steps);
    }
    jw_uint(&w, "timeout_ns", o->timeout_ns);
    jw_uint(&w, "port", o->port);
    jw_str(&w, "bind", o->mode == NET_SERVE ? (o->bind ? o->bind : "*") : NULL);
    jw_str(&w, "connect", o->connect);
    if (o->corrupt >= 0)
        jw_int(&w, "x_corrupt", o->corrupt);
    if (o->corrupt_offset >= 0)
        jw_int(&w, "x_corrupt_offset", o->corrupt_offset);
    if (o->capacity_bps)
        jw_uint(&w, "x_capacity_bps", o->capacity_bps);
    jw_end(&w);
    meta_finish_euid(&w);
}

/* SIGINT and SIGTERM end the stream early, without SA_RESTART, so that a
 * blocking send or receive returns EINTR; a closed peer is EPIPE, not a
 * signal. */
static void catch_stops(void)
{
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++)
        sigaction(i ? SIGTERM : SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The receiver listens before meta is printed, so that meta names the port
 * in effect (the host reads it there, as for ipc --serve). */
static int open_listener(struct net_opts *o, char *why, size_t whylen)
{
    char err[256];
    unsigned bound;
    int lfd = tp_listen(TP_TCP, o->bind, o->port, &bound, err, sizeof err);
    if (lfd < 0)
        snprintf(why, whylen, "cannot listen on port %u: %s", o->port, err);
    else
        o->port = bound;
    return lfd;
}

int cmd_network(int argc, char **argv)
{
    struct net_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    catch_stops();
    uint64_t t0 = mono_ns();
    char why[400] = "";
    int lfd = o.mode == NET_SERVE ? open_listener(&o, why, sizeof why) : -1;
    print_meta(argc, argv, &o);
    if (o.mode == NET_SERVE)
        rc = lfd < 0 ? -1 : serve(&o, lfd, why, sizeof why);
    else
        rc = run_connect(&o, why, sizeof why);
    if (stop) {
        emit_end("interrupted", mono_ns() - t0, NULL);
        return EXIT_OK;
    }
    emit_end(rc ? "error" : "ok", mono_ns() - t0, rc ? why : NULL);
    return rc ? EXIT_ENV : EXIT_OK;
}
