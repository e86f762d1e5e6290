/*
 * ipc session protocol, peer and client: ping-pong round trips between two
 * endpoints, by message size.
 *
 * The client sends a message of `size` bytes, the peer answers with a
 * message of the same size, and the client records the time from before
 * the send to after the whole answer has arrived, into a log-linear
 * histogram (hist.h). The peer is a forked child (local mode) or another
 * probe started with --serve, possibly in another host, guest or network
 * namespace (--connect).
 *
 * Every message is checked in full on arrival, in both directions: its
 * header (sequence number, kind) and a pseudo-random payload that differs
 * per direction, so a lost, repeated, reordered, truncated or altered
 * message is an error, never a round trip counted as good. The peer sends
 * its answer before checking the request, so the check of a request does
 * not lengthen the round trip; the peer reports what it found when the
 * phase ends.
 *
 * Session protocol (all integers little-endian):
 *   client -> peer  CTRL PHASE(size, warmup)     peer -> client  CTRL PHASE_ACK
 *   client -> peer  DATA(seq) ...                peer -> client  PONG(seq) ...
 *   client -> peer  END(seq)                     peer -> client  CTRL VERDICT
 *   ... next size ...
 *   client -> peer  CTRL BYE                     peer -> client  CTRL BYE_ACK
 * CTRL is IPC_CTRL bytes; DATA, PONG and END are `size` bytes (>= 16):
 * seq (u32), kind (u32), 8 zero bytes, then the direction's pattern.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "ipc.h"
#include "ipcmsg.h"
#include "ipcrec.h"
#include "probe.h"
#include "shm.h"

/* What a peer found in the requests of one phase. */
struct verdict {
    uint64_t bad;                    /* corrupted requests */
    uint64_t first_seq;
    uint32_t offset;
    uint8_t expected, got;
};

static int send_ctrl(struct tp_conn *c, const struct ipc_ctrl *m)
{
    uint8_t buf[IPC_CTRL];
    ipc_ctrl_encode(m, buf);
    return tp_send_all(c, buf, sizeof buf);
}

/* 0; -1 with errno from the transport; -2 for a message that is not ours. */
static int recv_ctrl(struct tp_conn *c, struct ipc_ctrl *m)
{
    uint8_t buf[IPC_CTRL];
    if (tp_recv_all(c, buf, sizeof buf))
        return -1;
    /* Only shm's checksum guards the bytes of a control message beyond its
     * magic and fields (its padding, a flipped bit in a field). */
    if (shm_last_checksum_bad(c)) {
        errno = EBADMSG;
        return -1;
    }
    return ipc_ctrl_decode(buf, m) ? -2 : 0;
}

struct msgbufs {
    size_t size;
    uint8_t *req, *rep;              /* expected requests and replies (pattern) */
    uint8_t *tx, *rx;
};

static int msgbufs_init(struct msgbufs *m, size_t size, int client)
{
    m->size = size;
    m->req = malloc(size);
    m->rep = malloc(size);
    m->tx = malloc(size);
    m->rx = malloc(size);
    if (!m->req || !m->rep || !m->tx || !m->rx)
        return -1;
    ipc_fill_pattern(m->req, size, IPC_SEED_REQUEST);
    ipc_fill_pattern(m->rep, size, IPC_SEED_REPLY);
    memcpy(m->tx, client ? m->req : m->rep, size);
    memset(m->tx + 8, 0, IPC_HDR - 8);
    return 0;
}

static void msgbufs_free(struct msgbufs *m)
{
    free(m->req);
    free(m->rep);
    free(m->tx);
    free(m->rx);
}

/* Offset of the first byte of msg that differs from the expected message,
 * -1 when it is exactly right, CHECKSUM_ONLY when its bytes are right but
 * the shm transport's checksum beside them was not (the region's control
 * words were altered). */
#define CHECKSUM_ONLY (-2L)
static long first_byte_diff(const uint8_t *msg, const uint8_t *pattern, size_t size, uint32_t seq, uint32_t kind,
                            uint8_t *expected);
static long first_diff(const struct tp_conn *c, const uint8_t *msg, const uint8_t *pattern, size_t size,
                       uint32_t seq, uint32_t kind, uint8_t *expected)
{
    long off = first_byte_diff(msg, pattern, size, seq, kind, expected);
    if (off < 0 && shm_last_checksum_bad(c)) {
        *expected = 0;
        return CHECKSUM_ONLY;
    }
    return off;
}

static long first_byte_diff(const uint8_t *msg, const uint8_t *pattern, size_t size, uint32_t seq, uint32_t kind,
                            uint8_t *expected)
{
    /* libc's memcmp first: on a match it is many times faster than the
     * core's byte loop, which finds where a message differs. */
    uint8_t hdr[IPC_HDR] = {0};
    ipc_set_header(hdr, seq, kind);
    if (!memcmp(msg, hdr, IPC_HDR) && !memcmp(msg + IPC_HDR, pattern + IPC_HDR, size - IPC_HDR))
        return -1;
    return ipc_first_diff(msg, pattern, size, seq, kind, expected);
}

/* Send msg; when `corrupt` flip its last byte for this one send (test hook). */
static int send_msg(struct tp_conn *c, uint8_t *msg, size_t size, int corrupt)
{
    if (corrupt)
        msg[size - 1] ^= 0x01;
    int rc = tp_send_all(c, msg, size);
    if (corrupt)
        msg[size - 1] ^= 0x01;
    return rc;
}

static const char *io_error(int err)
{
    switch (err) {
    case EAGAIN: return "no answer from the peer within the timeout (--timeout-s)";
    case ECONNRESET: return "the peer closed the connection";
    case EPIPE: return "the peer closed the connection";
    case EMSGSIZE: return "a message of an unexpected size arrived";
    case EPROTO: return "a message out of sequence or of another session arrived in the shm region";
    case EBADMSG: return "a control message whose checksum does not match its bytes arrived (the shm region "
                         "was altered)";
    default: return strerror(err);
    }
}

/* ------------------------------------------------------------------ peer */

int ipc_serve_session(struct tp_conn *c, const struct ipc_opts *o, int report, const char *peer,
                      struct ipc_failure *why)
{
    for (;;) {
        struct ipc_ctrl m;
        int rc = recv_ctrl(c, &m);
        if (rc) {
            snprintf(why->text, sizeof why->text, "waiting for the client's next phase: %s",
                     rc == -2 ? "a message that is not rtvb-probe ipc" : io_error(errno));
            why->interrupted = ipc_stop;
            return -1;
        }
        if (m.op == IPC_OP_BYE) {
            struct ipc_ctrl ack = {.op = IPC_OP_BYE | IPC_OP_ACK};
            send_ctrl(c, &ack);
            return 0;
        }
        if (m.op != IPC_OP_PHASE || m.size < IPC_MIN_SIZE || m.size > IPC_MAX_SIZE) {
            snprintf(why->text, sizeof why->text, "the client sent an invalid phase (op %u, size %u)", m.op, m.size);
            return -1;
        }
        struct msgbufs b;
        if (msgbufs_init(&b, m.size, 0)) {
            msgbufs_free(&b);
            snprintf(why->text, sizeof why->text, "out of memory for %u-byte messages", m.size);
            return -1;
        }
        struct ipc_ctrl ack = {.op = IPC_OP_PHASE | IPC_OP_ACK, .size = m.size};
        struct verdict v = {0};
        uint32_t seq = 0;
        uint64_t served = 0;
        rc = send_ctrl(c, &ack);
        while (rc == 0) {
            if (tp_recv_all(c, b.rx, b.size)) {
                rc = -1;
                break;
            }
            if (ipc_get32(b.rx + 4) == IPC_KIND_END)
                break;
            ipc_set_header(b.tx, seq, IPC_KIND_PONG);
            if (send_msg(c, b.tx, b.size, o->corrupt_reply >= 0 && seq == (uint64_t)o->corrupt_reply)) {
                rc = -1;
                break;
            }
            uint8_t expected = 0;
            long off = first_diff(c, b.rx, b.req, b.size, seq, IPC_KIND_DATA, &expected);
            if (off != -1 && v.bad++ == 0)
                v = (struct verdict){.bad = 1, .first_seq = seq, .offset = off >= 0 ? (uint32_t)off : UINT32_MAX,
                                     .expected = expected, .got = off >= 0 ? b.rx[off] : 0};
            seq++;
            served++;
        }
        if (rc == 0) {
            struct ipc_ctrl verdict = {.op = IPC_OP_VERDICT, .size = m.size, .a = v.bad, .b = v.first_seq,
                                       .c = v.offset, .expected = v.expected, .got = v.got};
            rc = send_ctrl(c, &verdict);
        }
        if (rc)
            snprintf(why->text, sizeof why->text, "during the %u-byte phase: %s", m.size, io_error(errno));
        if (report) {
            struct jw w = {0};
            jw_record(&w, "result");
            jw_str(&w, "role", "server");
            jw_str(&w, "transport", tp_name(c->kind));
            jw_str(&w, "peer", peer);
            jw_uint(&w, "size_bytes", m.size);
            jw_uint(&w, "messages", served);
            jw_bool(&w, "complete", rc == 0);
            jw_uint(&w, "bad_requests", v.bad);
            if (v.bad || rc == 0)
                jw_bool(&w, "verified", v.bad == 0);
            else
                jw_null(&w, "verified");   /* cut short, nothing wrong so far */
            jw_emit(&w);
            jw_free(&w);
        }
        msgbufs_free(&b);
        if (rc) {
            why->interrupted = ipc_stop;
            return -1;
        }
    }
}

/* ---------------------------------------------------------------- client */

struct phase {
    size_t size;
    struct hist *h;
    uint64_t measured, elapsed_ns;
    int complete;
    int peer_checked;                /* the peer's verdict arrived */
    struct verdict peer;             /* what the peer found in our requests */
    int reply_bad;                   /* a reply differed: */
    uint64_t reply_seq;
    long reply_offset;
    uint8_t reply_expected, reply_got;
};

/* One phase: warmup, then measured round trips until count or duration.
 * Returns 0 when the phase ran to its end (corruption included: that is a
 * finding, reported by the caller), -1 on a transport error or a stop. */
static int run_phase(struct tp_conn *c, const struct ipc_opts *o, struct phase *p, struct ipc_failure *why)
{
    struct msgbufs b;
    struct ipc_ctrl m = {.op = IPC_OP_PHASE, .size = (uint32_t)p->size, .a = o->warmup};
    int rc = -1;
    if (msgbufs_init(&b, p->size, 1)) {
        snprintf(why->text, sizeof why->text, "out of memory for %zu-byte messages", p->size);
        goto out;
    }
    if (send_ctrl(c, &m) || (rc = recv_ctrl(c, &m)) == -1) {
        snprintf(why->text, sizeof why->text, "starting the %zu-byte phase: %s", p->size, io_error(errno));
        rc = -1;
        goto out;
    }
    if (rc == -2 || m.op != (IPC_OP_PHASE | IPC_OP_ACK) || m.size != p->size) {
        snprintf(why->text, sizeof why->text, "the peer did not accept the %zu-byte phase (is it rtvb-probe "
                 "ipc --serve of the same version?)", p->size);
        rc = -1;
        goto out;
    }
    rc = 0;
    uint32_t seq = 0;
    uint64_t t_first = 0, t_end = 0, t_last = 0;
    for (;;) {
        int measuring = seq >= o->warmup;
        if (measuring && p->measured == 0) {
            t_first = mono_ns();
            t_end = o->duration_ns ? t_first + o->duration_ns : UINT64_MAX;
        }
        if (ipc_stop || (measuring && ((o->count && p->measured >= o->count) || t_last >= t_end)))
            break;
        ipc_set_header(b.tx, seq, IPC_KIND_DATA);
        int corrupt = o->corrupt_request >= 0 && seq == (uint64_t)o->corrupt_request;
        uint64_t t0 = mono_ns();
        if (send_msg(c, b.tx, b.size, corrupt) || tp_recv_all(c, b.rx, b.size)) {
            rc = -1;
            break;
        }
        t_last = mono_ns();
        /* Checked before it counts: a wrong reply is not a round trip. */
        uint8_t expected = 0;
        long off = first_diff(c, b.rx, b.rep, b.size, seq, IPC_KIND_PONG, &expected);
        if (off != -1) {
            p->reply_bad = 1;
            p->reply_seq = seq;
            p->reply_offset = off >= 0 ? off : -1;
            p->reply_expected = expected;
            p->reply_got = off >= 0 ? b.rx[off] : 0;
            break;
        }
        if (measuring) {
            hist_record(p->h, t_last - t0);
            p->measured++;
        }
        seq++;
    }
    p->elapsed_ns = p->measured ? t_last - t_first : 0;
    if (rc) {
        snprintf(why->text, sizeof why->text, "during the %zu-byte phase: %s", p->size, io_error(errno));
        goto out;
    }
    if (ipc_stop) {
        rc = -1;
        goto out;
    }
    /* A corrupted reply ends the phase and the session: the stream may be
     * out of step, so no END is sent. */
    if (p->reply_bad)
        goto out;
    ipc_set_header(b.tx, seq, IPC_KIND_END);
    if (tp_send_all(c, b.tx, b.size) || (rc = recv_ctrl(c, &m)) != 0 || m.op != IPC_OP_VERDICT) {
        snprintf(why->text, sizeof why->text, "ending the %zu-byte phase: %s", p->size,
                 rc == -2 || (rc == 0 && m.op != IPC_OP_VERDICT) ? "unexpected answer from the peer" : io_error(errno));
        rc = -1;
        goto out;
    }
    p->peer_checked = 1;
    p->peer = (struct verdict){.bad = m.a, .first_seq = m.b, .offset = m.c, .expected = m.expected, .got = m.got};
    p->complete = 1;
out:
    if (rc && ipc_stop)
        why->interrupted = 1;
    msgbufs_free(&b);
    return rc;
}

static void print_phase(const struct phase *p, enum tp_kind k, const char *peer, const struct ipc_opts *o)
{
    const struct hist *h = p->h;
    struct jw w = {0};
    int bad = p->reply_bad || (p->peer_checked && p->peer.bad);
    ipc_write_client_head(&w, tp_name(k), peer, p->size, p->measured, o->warmup, p->complete,
                          bad ? 0 : p->complete ? 1 : -1);
    ipc_write_round_trips(&w, h, p->size, p->elapsed_ns);
    if (p->reply_bad)
        ipc_write_corruption(&w, "reply", p->reply_seq, p->reply_offset, p->reply_expected, p->reply_got, 1);
    else if (p->peer_checked && p->peer.bad)
        ipc_write_corruption(&w, "request", p->peer.first_seq,
                             p->peer.offset == UINT32_MAX ? -1 : (long)p->peer.offset, p->peer.expected, p->peer.got,
                             p->peer.bad);
    hist_write_json(h, &w, "histogram");
    jw_emit(&w);
    jw_free(&w);
}

int ipc_run_client(struct tp_conn *c, const struct ipc_opts *o, const char *peer, struct ipc_failure *why)
{
    struct hist *h = malloc(sizeof *h);
    if (!h) {
        snprintf(why->text, sizeof why->text, "out of memory for a histogram");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < o->nsizes && rc == 0; i++) {
        struct phase p = {.size = (size_t)o->sizes[i], .h = h};
        hist_reset(h);
        rc = run_phase(c, o, &p, why);
        if (p.measured || rc == 0)
            print_phase(&p, c->kind, peer, o);
        if (rc == 0 && p.reply_bad) {
            snprintf(why->text, sizeof why->text,
                     "reply %llu of the %zu-byte phase over %s differs from what the peer sent at byte %ld "
                     "(expected 0x%02x, got 0x%02x)", (unsigned long long)p.reply_seq, p.size, tp_name(c->kind),
                     p.reply_offset, p.reply_expected, p.reply_got);
            rc = -1;
        } else if (rc == 0 && p.peer.bad) {
            snprintf(why->text, sizeof why->text,
                     "the peer received %llu corrupted requests in the %zu-byte phase over %s, the first "
                     "(message %llu) at byte %u (expected 0x%02x, got 0x%02x)", (unsigned long long)p.peer.bad,
                     p.size, tp_name(c->kind), (unsigned long long)p.peer.first_seq, p.peer.offset,
                     p.peer.expected, p.peer.got);
            rc = -1;
        }
    }
    free(h);
    if (rc == 0) {
        struct ipc_ctrl bye = {.op = IPC_OP_BYE}, ack;
        if (send_ctrl(c, &bye) || recv_ctrl(c, &ack) || ack.op != (IPC_OP_BYE | IPC_OP_ACK))
            jw_warning("no_bye", "the %s peer did not acknowledge the end of the session; its own output may "
                       "say why.", tp_name(c->kind));
    }
    return rc;
}
