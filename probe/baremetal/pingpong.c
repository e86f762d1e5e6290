/*
 * `ipc` on the bare-metal image: ping-pong round trips by message size
 * with a Linux probe (`rtvb-probe ipc`) over the shm transport, in QEMU's
 * ivshmem-plain device (shmlink.c). The session is the Linux probe's
 * (probe/ipc_session.c), its messages built and checked by the same code
 * (probe/core/ipcmsg.c): the image is the client (--connect shm, a result
 * per size with the round-trip histogram) or the server (--serve, a result
 * per size saying what it found in the requests), and every message is
 * checked in full on arrival in both roles.
 *
 * The image has one process: no local mode, no other transport, no CPU
 * to pin. Its message buffers (the two directions' patterns, one to send,
 * one received) are in the memory area of mem-lat and mem-bw.
 */
#include "pingpong.h"

#include <stdbool.h>
#include <stddef.h>

#include "arch.h"
#include "clock.h"
#include "console.h"
#include "hist.h"
#include "ipcmsg.h"
#include "ipcrec.h"
#include "jsonw.h"
#include "memarea.h"
#include "numfmt.h"
#include "parse.h"
#include "records.h"
#include "shmlink.h"

#define SUB "ipc"
#define MAX_SIZES 32
#define DEFAULT_SIZES "16,64,256,1024,1280,4096,65536"
#define EXIT_ENV 3                   /* as the Linux probe: the environment refused something essential */

struct pp_opts {
    bool serve;
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    uint64_t count, duration_ns, warmup, timeout_ns, corrupt_after;
};

/* One phase's buffers, in the memory area. */
struct bufs {
    uint8_t *req, *rep, *tx, *rx;
    size_t size;
};

struct verdict {
    uint64_t bad, first_seq;
    uint32_t offset;
    uint8_t expected, got;
};

static struct hist round_trips;
static char failure[200];

static int usage(const char *what, const char *arg, const char *fix) { return record_usage(SUB, what, arg, fix); }

static int parse_options(int argc, char **argv, struct pp_opts *o)
{
    *o = (struct pp_opts){.count = 10000, .warmup = 100, .timeout_ns = 10000000000ull};
    const char *sizes = DEFAULT_SIZES;
    bool connect = false, count_given = false;
    for (int i = 1; i < argc; i++) {
        const char *name, *arg;
        if (!__builtin_strcmp(argv[i], "--serve")) {
            o->serve = true;
            continue;
        }
        if (record_option(SUB, argc, argv, &i, &name, &arg))
            return 2;
        int bad = 0;
        if (!__builtin_strcmp(name, "--transport"))
            bad = __builtin_strcmp(arg, "shm") != 0;
        else if (!__builtin_strcmp(name, "--connect"))
            bad = __builtin_strcmp(arg, "shm") != 0, connect = true;
        else if (!__builtin_strcmp(name, "--shm-pci"))
            bad = __builtin_strcmp(arg, "auto") != 0;
        else if (!__builtin_strcmp(name, "--sizes"))
            sizes = arg;
        else if (!__builtin_strcmp(name, "--count"))
            bad = parse_u64(arg, 1000000000000ull, &o->count) || !o->count, count_given = true;
        else if (!__builtin_strcmp(name, "--duration-s"))
            bad = parse_scaled(arg, 1000000000, 1000000, 1000000000000000ull, &o->duration_ns);
        else if (!__builtin_strcmp(name, "--warmup"))
            bad = parse_u64(arg, 1000000000, &o->warmup);
        else if (!__builtin_strcmp(name, "--timeout-s"))
            bad = parse_scaled(arg, 1000000000, 1000000, 1000000000000000ull, &o->timeout_ns);
        else if (!__builtin_strcmp(name, "--x-corrupt-after"))
            bad = parse_u64(arg, UINT32_MAX, &o->corrupt_after) || !o->corrupt_after;
        else
            return usage("unknown option", name, "the image's ipc takes --serve or --connect shm, --transport shm, "
                         "--shm-pci auto, --sizes, --count, --duration-s, --warmup and --timeout-s.");
        if (bad)
            return usage("bad value", arg, "--transport and --connect: shm (the image's only transport); "
                         "--shm-pci: auto (its ivshmem device); --count: 1 to 1e12; --warmup: 0 to 1e9; "
                         "--duration-s and --timeout-s: 0.001 to 1e6 seconds.");
    }
    if (o->serve == connect)
        return usage("no role given", NULL, "give --serve or --connect shm: the image has no local mode, "
                     "its peer is a probe in another domain.");
    if (count_given && o->duration_ns)
        return usage("--count and --duration-s exclude each other", NULL, "give one.");
    if (o->duration_ns)
        o->count = 0;
    o->nsizes = parse_size_list(sizes, IPC_MAX_SIZE, o->sizes, MAX_SIZES);
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] < IPC_MIN_SIZE)
            o->nsizes = -1;
    if (o->nsizes < 0)
        return usage("bad --sizes", sizes, "give up to 32 message sizes from 16 to 16M, such as 16,4K,64K.");
    return 0;
}

/* "0000:BB:DD.F", the device's address as Linux names it. */
static void pci_name(const struct pci_bar *b, char out[13])
{
    static const char hex[] = "0123456789abcdef";
    const char t[] = {'0', '0', '0', '0', ':', hex[b->bus >> 4 & 15], hex[b->bus & 15], ':',
                      hex[b->dev >> 4 & 1], hex[b->dev & 15], '.', hex[b->fn & 7], '\0'};
    for (size_t i = 0; i < sizeof t; i++)
        out[i] = t[i];
}

static void print_meta(int argc, char **argv, const struct pp_opts *o, const char *where, uint64_t bytes)
{
    struct jw w = {0};
    record_meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "mode", o->serve ? "serve" : "connect");
    jw_arr(&w, "transports");
    jw_str(&w, NULL, "shm");
    jw_end(&w);
    ipc_write_limits(&w, o->serve, o->sizes, o->nsizes, o->count, o->duration_ns, o->warmup);
    jw_uint(&w, "timeout_ns", o->timeout_ns);
    jw_null(&w, "port");
    jw_str(&w, "bind", NULL);
    jw_str(&w, "connect", o->serve ? NULL : "shm");
    jw_null(&w, "cpus");
    jw_str(&w, "shm", where);
    if (bytes)
        jw_uint(&w, "shm_bytes", bytes);
    else
        jw_null(&w, "shm_bytes");
    if (o->corrupt_after)
        jw_uint(&w, "x_corrupt_after", o->corrupt_after);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

static void print_end(uint64_t elapsed_ns, const char *error)
{
    struct jw w = {0};
    jw_record(&w, "end");
    jw_str(&w, "status", error ? "error" : "ok");
    jw_uint(&w, "elapsed_ns", elapsed_ns);
    if (error)
        jw_str(&w, "error", error);
    jw_emit(&w);
    jw_free(&w);
}

static void bufs_init(struct bufs *b, size_t size, bool client)
{
    b->size = size;
    b->req = (uint8_t *)mem_area;
    b->rep = b->req + size;
    b->tx = b->rep + size;
    b->rx = b->tx + size;
    ipc_fill_pattern(b->req, size, IPC_SEED_REQUEST);
    ipc_fill_pattern(b->rep, size, IPC_SEED_REPLY);
    const uint8_t *mine = client ? b->req : b->rep;
    for (size_t i = 0; i < size; i++)
        b->tx[i] = i >= 8 && i < IPC_HDR ? 0 : mine[i];
}

/* Where a message differs from what was due, -1 when it is exactly right,
 * -2 when its bytes are right but the transport's checksum of them was not
 * (the region's control words were altered). */
static long check(const struct shm_end *e, const uint8_t *msg, const uint8_t *pattern, size_t size, uint32_t seq,
                  uint32_t kind, uint8_t *expected)
{
    long off = ipc_first_diff(msg, pattern, size, seq, kind, expected);
    if (off < 0 && e->last_sum_bad) {
        *expected = 0;
        return -2;
    }
    return off;
}

/* The sentence of a failed session: the parts, then the phase's size. */
static void fail(const char *what, uint64_t size, const char *why)
{
    size_t n = 0;
    char num[24];
    num[fmt_uint(num, size)] = '\0';
    const char *parts[] = {what, size ? " the " : "", size ? num : "", size ? "-byte phase" : "", ": ", why};
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        for (const char *p = parts[k]; *p && n + 1 < sizeof failure; p++)
            failure[n++] = *p;
    failure[n] = '\0';
}

static enum shm_status send_ctrl(struct shm_end *e, const struct ipc_ctrl *m)
{
    uint8_t buf[IPC_CTRL];
    ipc_ctrl_encode(m, buf);
    return shm_send(e, buf, sizeof buf);
}

/* NULL, or why no control message of ours arrived. */
static const char *recv_ctrl(struct shm_end *e, struct ipc_ctrl *m)
{
    uint8_t buf[IPC_CTRL];
    enum shm_status st = shm_recv(e, buf, sizeof buf);
    if (st)
        return shm_status_text(st);
    /* Only the transport's checksum guards its padding and a flipped field. */
    if (e->last_sum_bad)
        return "a control message whose checksum does not match its bytes arrived (the shm region was altered)";
    return ipc_ctrl_decode(buf, m) ? "a message that is not rtvb-probe ipc" : NULL;
}

/* ------------------------------------------------------------------ server */

static void server_result(const char *where, uint32_t size, uint64_t served, bool complete, const struct verdict *v)
{
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "role", "server");
    jw_str(&w, "transport", "shm");
    jw_str(&w, "peer", where);
    jw_uint(&w, "size_bytes", size);
    jw_uint(&w, "messages", served);
    jw_bool(&w, "complete", complete);
    jw_uint(&w, "bad_requests", v->bad);
    if (v->bad || complete)
        jw_bool(&w, "verified", v->bad == 0);
    else
        jw_null(&w, "verified");
    jw_emit(&w);
    jw_free(&w);
}

/* One session until the client's BYE: 0, or -1 with `failure`. The reply
 * goes out before the request is checked, as on Linux, so the check does
 * not lengthen the round trip. */
static int serve_session(struct shm_end *e, const char *where)
{
    for (;;) {
        struct ipc_ctrl m;
        const char *why = recv_ctrl(e, &m);
        if (why) {
            fail("waiting for the client's next phase", 0, why);
            return -1;
        }
        if (m.op == IPC_OP_BYE) {
            struct ipc_ctrl ack = {.op = IPC_OP_BYE | IPC_OP_ACK};
            send_ctrl(e, &ack);
            return 0;
        }
        if (m.op != IPC_OP_PHASE || m.size < IPC_MIN_SIZE || m.size > e->slot || 4ull * m.size > BOARD_MEM_AREA_BYTES) {
            fail("the client asked for", m.size, "an invalid phase (another op, or a size beyond the region or "
                 "the image's memory area)");
            return -1;
        }
        struct bufs b;
        bufs_init(&b, m.size, false);
        struct ipc_ctrl ack = {.op = IPC_OP_PHASE | IPC_OP_ACK, .size = m.size};
        struct verdict v = {0};
        uint64_t served = 0;
        enum shm_status st = send_ctrl(e, &ack);
        for (uint32_t seq = 0; st == SHM_OK; seq++) {
            st = shm_recv(e, b.rx, b.size);
            if (st || ipc_get32(b.rx + 4) == IPC_KIND_END)
                break;
            ipc_set_header(b.tx, seq, IPC_KIND_PONG);
            st = shm_send(e, b.tx, b.size);
            if (st)
                break;
            uint8_t expected = 0;
            long off = check(e, b.rx, b.req, b.size, seq, IPC_KIND_DATA, &expected);
            if (off != -1 && v.bad++ == 0)
                v = (struct verdict){.bad = 1, .first_seq = seq, .offset = off >= 0 ? (uint32_t)off : UINT32_MAX,
                                     .expected = expected, .got = off >= 0 ? b.rx[off] : 0};
            served++;
        }
        if (st == SHM_OK) {
            struct ipc_ctrl verdict = {.op = IPC_OP_VERDICT, .size = m.size, .a = v.bad, .b = v.first_seq,
                                       .c = v.offset, .expected = v.expected, .got = v.got};
            st = send_ctrl(e, &verdict);
        }
        server_result(where, m.size, served, st == SHM_OK, &v);
        if (st) {
            fail("during", m.size, shm_status_text(st));
            return -1;
        }
    }
}

/* ------------------------------------------------------------------ client */

struct phase {
    size_t size;
    uint64_t measured, elapsed_ns;
    bool complete, peer_checked, reply_bad;
    struct verdict peer;             /* what the server found in our requests */
    struct verdict reply;            /* the first wrong reply (bad = 1) */
};

/* Warmup, then measured round trips until the count or the duration. 0
 * when the phase ran to its end (a corrupted reply included: that is a
 * finding the result reports), -1 with `failure` otherwise. */
static int run_phase(struct shm_end *e, const struct pp_opts *o, struct phase *p)
{
    struct bufs b;
    bufs_init(&b, p->size, true);
    struct ipc_ctrl m = {.op = IPC_OP_PHASE, .size = (uint32_t)p->size, .a = o->warmup};
    enum shm_status st = send_ctrl(e, &m);
    const char *why = st ? shm_status_text(st) : recv_ctrl(e, &m);
    if (!why && (m.op != (IPC_OP_PHASE | IPC_OP_ACK) || m.size != p->size))
        why = "the peer did not accept it (is it rtvb-probe ipc --serve of the same version?)";
    if (why) {
        fail("starting", p->size, why);
        return -1;
    }
    uint64_t hz_end = UINT64_MAX, t_first = 0, t_last = 0;
    uint32_t seq = 0;
    for (;; seq++) {
        bool measuring = seq >= o->warmup;
        if (measuring && p->measured == 0) {
            t_first = counter_now();
            hz_end = o->duration_ns ? t_first + ns_to_ticks(o->duration_ns) : UINT64_MAX;
        }
        if (measuring && ((o->count && p->measured >= o->count) || t_last >= hz_end))
            break;
        ipc_set_header(b.tx, seq, IPC_KIND_DATA);
        uint64_t t0 = counter_now();
        st = shm_send(e, b.tx, b.size);
        if (!st)
            st = shm_recv(e, b.rx, b.size);
        if (st)
            break;
        t_last = counter_now();
        /* Checked before it counts: a wrong reply is not a round trip. */
        uint8_t expected = 0;
        long off = check(e, b.rx, b.rep, b.size, seq, IPC_KIND_PONG, &expected);
        if (off != -1) {
            p->reply_bad = true;
            p->reply = (struct verdict){.bad = 1, .first_seq = seq, .offset = off >= 0 ? (uint32_t)off : UINT32_MAX,
                                        .expected = expected, .got = off >= 0 ? b.rx[off] : 0};
            break;
        }
        if (measuring) {
            hist_record(&round_trips, ticks_to_ns(t_last - t0));
            p->measured++;
        }
        record_tick_due(&e->next_tick);
    }
    p->elapsed_ns = p->measured ? ticks_to_ns(t_last - t_first) : 0;
    if (st) {
        fail("during", p->size, shm_status_text(st));
        return -1;
    }
    /* A corrupted reply ends the session: the stream may be out of step. */
    if (p->reply_bad)
        return 0;
    ipc_set_header(b.tx, seq, IPC_KIND_END);
    st = shm_send(e, b.tx, b.size);
    why = st ? shm_status_text(st) : recv_ctrl(e, &m);
    if (!why && m.op != IPC_OP_VERDICT)
        why = "unexpected answer from the peer";
    if (why) {
        fail("ending", p->size, why);
        return -1;
    }
    p->peer_checked = p->complete = true;
    p->peer = (struct verdict){.bad = m.a, .first_seq = m.b, .offset = m.c, .expected = m.expected, .got = m.got};
    return 0;
}

static void write_corruption(struct jw *w, const char *direction, const struct verdict *v)
{
    ipc_write_corruption(w, direction, v->first_seq, v->offset == UINT32_MAX ? -1 : (long)v->offset, v->expected,
                         v->got, v->bad);
}

static void client_result(const struct phase *p, const char *where, const struct pp_opts *o)
{
    const struct hist *h = &round_trips;
    struct jw w = {0};
    int bad = p->reply_bad || (p->peer_checked && p->peer.bad);
    ipc_write_client_head(&w, "shm", where, p->size, p->measured, o->warmup, p->complete,
                          bad ? 0 : p->complete ? 1 : -1);
    ipc_write_round_trips(&w, h, p->size, p->elapsed_ns);
    if (p->reply_bad)
        write_corruption(&w, "reply", &p->reply);
    else if (p->peer_checked && p->peer.bad)
        write_corruption(&w, "request", &p->peer);
    hist_write_json(h, &w, "histogram");
    jw_emit(&w);
    jw_free(&w);
}

static int run_client(struct shm_end *e, const struct pp_opts *o, const char *where)
{
    for (int i = 0; i < o->nsizes; i++) {
        struct phase p = {.size = (size_t)o->sizes[i]};
        hist_reset(&round_trips);
        int rc = run_phase(e, o, &p);
        if (p.measured || rc == 0)
            client_result(&p, where, o);
        if (rc)
            return -1;
        if (p.reply_bad || p.peer.bad) {
            fail(p.reply_bad ? "a reply of" : "the peer received corrupted requests in", p.size,
                 "its bytes differ from what was sent (the result's corruption says where)");
            return -1;
        }
    }
    struct ipc_ctrl bye = {.op = IPC_OP_BYE}, ack;
    if (send_ctrl(e, &bye) || recv_ctrl(e, &ack) || ack.op != (IPC_OP_BYE | IPC_OP_ACK))
        console_log("the peer did not acknowledge the end of the session; its own output may say why.", NULL);
    return 0;
}

int ipc_command(int argc, char **argv)
{
    struct pp_opts o;
    uint64_t t0 = clock_ns();
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    struct shm_end e;
    const char *why;
    if (shm_find_region(&e, &why)) {
        print_meta(argc, argv, &o, "ivshmem", 0);
        fail("cannot map the shm region", 0, why);
        print_end(clock_ns() - t0, failure);
        return EXIT_ENV;
    }
    char where[40] = "ivshmem ";
    pci_name(&e.bar, where + 8);
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > e.slot || 4 * o.sizes[i] > BOARD_MEM_AREA_BYTES)
            return usage("a size does not fit", NULL, "each size must fit the ivshmem region's slot (half the "
                         "region past its 512-byte header) and four times the image's memory area; give smaller "
                         "--sizes or a larger region.");
    e.corrupt_after = o.corrupt_after;
    enum shm_status st;
    if (o.serve) {
        shm_prepare(&e);             /* before meta: a client started once meta is out finds it ready */
        print_meta(argc, argv, &o, where, e.len);
        st = shm_serve(&e, o.timeout_ns);
        if (st)
            fail("waiting for a client in the ivshmem region", 0, "no rtvb-probe ipc --connect shm came within the "
                 "timeout (--timeout-s)");
    } else {
        print_meta(argc, argv, &o, where, e.len);
        uint32_t version;
        st = shm_connect(&e, o.timeout_ns, &version);
        if (st)
            fail("connecting in the ivshmem region", 0, version ? "the server speaks another shm protocol version"
                 : "no rtvb-probe ipc --serve took the session within the timeout (--timeout-s)");
    }
    if (st == SHM_OK) {
        rc = o.serve ? serve_session(&e, where) : run_client(&e, &o, where);
        shm_close(&e);
    }
    print_end(clock_ns() - t0, st || rc ? failure : NULL);
    return st || rc ? EXIT_ENV : 0;
}
