/*
 * ipc: ping-pong round trips between two endpoints, by message size, over
 * pipe, unix, udp, tcp and vsock. The peer is a forked child (local mode)
 * or another probe started with --serve, possibly in another host, guest
 * or network namespace (--connect). This file holds the options, the
 * three modes and the records around the results; the protocol, the
 * integrity checks and the measurement are in ipc_session.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "opts.h"
#include "probe.h"
#include "transport.h"

#define SUB "ipc"

#define DEFAULT_SIZES "16,64,256,1024,1280,4096,65536"

volatile sig_atomic_t ipc_stop;

static void on_stop(int sig)
{
    (void)sig;
    ipc_stop = 1;
}

/* ------------------------------------------------------------------ modes */

static int run_local(const struct ipc_opts *o, struct ipc_failure *why)
{
    for (int k = 0; k < TP_COUNT && !ipc_stop; k++) {
        if (!(o->transports & (1u << k)))
            continue;
        struct tp_conn mine, theirs;
        char err[256];
        int rc = tp_pair((enum tp_kind)k, &mine, &theirs, err, sizeof err);
        if (rc == TP_ABSENT) {
            jw_warning("transport_unavailable", "%s is skipped: this system does not offer it (%s).",
                       tp_name((enum tp_kind)k), err);
            continue;
        }
        if (rc) {
            snprintf(why->text, sizeof why->text, "cannot set up %s: %s", tp_name((enum tp_kind)k), err);
            return -1;
        }
        pid_t pid = tp_fork_peer();
        if (pid == 0) {
            struct ipc_failure peer_why = {0};
            tp_close(&mine);
            if (o->pinned)
                tp_pin_cpu(o->cpus[1]);
            tp_set_timeout(&theirs, o->timeout_ns);
            _exit(ipc_serve_session(&theirs, o, 0, "local", &peer_why) ? 1 : 0);
        }
        tp_close(&theirs);
        if (pid < 0) {
            tp_close(&mine);
            snprintf(why->text, sizeof why->text, "fork: %s", strerror(errno));
            return -1;
        }
        tp_set_timeout(&mine, o->timeout_ns);
        rc = ipc_run_client(&mine, o, "local", why);
        tp_close(&mine);
        tp_reap_peer(pid);   /* never leave the peer behind, whatever happened */
        if (rc)
            return -1;
    }
    return 0;
}

static int run_connect(const struct ipc_opts *o, enum tp_kind k, struct ipc_failure *why)
{
    struct tp_conn c;
    char err[256], peer[300];
    if (tp_connect(k, o->host, o->port, &c, err, sizeof err)) {
        snprintf(why->text, sizeof why->text, "%s", err);
        why->interrupted = ipc_stop;
        return -1;
    }
    snprintf(peer, sizeof peer, k == TP_VSOCK ? "vsock:%s:%u" : strchr(o->host, ':') ? "[%s]:%u" : "%s:%u",
             o->host, o->port);
    tp_set_timeout(&c, o->timeout_ns);
    int rc = ipc_run_client(&c, o, peer, why);
    tp_close(&c);
    return rc;
}

static int run_serve(const struct ipc_opts *o, enum tp_kind k, int lfd, struct ipc_failure *why)
{
    struct tp_conn c;
    char err[256], peer[128] = "?";
    if (tp_accept(k, lfd, &c, peer, sizeof peer, err, sizeof err)) {
        snprintf(why->text, sizeof why->text, "%s", err);
        why->interrupted = ipc_stop;
        if (k != TP_UDP)
            close(lfd);
        return -1;
    }
    if (k != TP_UDP)
        close(lfd);   /* one session per run */
    tp_set_timeout(&c, o->timeout_ns);
    int rc = ipc_serve_session(&c, o, 1, peer, why);
    tp_close(&c);
    return rc;
}

/* ---------------------------------------------------------------- options */

static int parse_transports(const struct opt *t, const char *s)
{
    unsigned *mask = t->field;
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *mask = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        enum tp_kind k;
        if (tp_from_name(tok, &k))
            return -1;
        *mask |= 1u << k;
    }
    return *mask ? 0 : -1;
}

/* IPv4[:PORT], [IPv6][:PORT], bare IPv6, vsock:CID[:PORT]. */
static int parse_address(const char *s, struct ipc_opts *o, int *is_vsock)
{
    const char *host = s, *port = NULL;
    size_t hostlen;
    *is_vsock = !strncmp(s, "vsock:", 6);
    if (*is_vsock) {
        host = s + 6;
        port = strchr(host, ':');
        hostlen = port ? (size_t)(port - host) : strlen(host);
    } else if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || (close[1] && close[1] != ':'))
            return -1;
        host = s + 1;
        hostlen = (size_t)(close - host);
        port = close[1] ? close + 1 : NULL;
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            colon = NULL;          /* a bare IPv6 address */
        port = colon;
        hostlen = colon ? (size_t)(colon - s) : strlen(s);
    }
    if (hostlen == 0 || hostlen >= sizeof o->host)
        return -1;
    memcpy(o->host, host, hostlen);
    o->host[hostlen] = '\0';
    if (port) {
        uint64_t p;
        if (parse_u64(port + 1, 1, *is_vsock ? UINT32_MAX - 1 : 65535, &p))
            return -1;
        o->port = (unsigned)p;
    }
    return 0;
}

static int parse_options(int argc, char **argv, struct ipc_opts *o)
{
    int vsock_address = 0;
    const char *connect = NULL;

    *o = (struct ipc_opts){.count = 10000, .warmup = 100, .timeout_ns = 10000000000ull, .port = TP_DEFAULT_PORT,
                           .corrupt_reply = -1, .corrupt_request = -1};
    o->nsizes = parse_size_list(DEFAULT_SIZES, IPC_MIN_SIZE, IPC_MAX_SIZE, o->sizes, IPC_MAX_SIZES);
    struct opt table[] = {
        {OPT_C("transport", parse_transports, &o->transports, "LIST", "a list of pipe, unix, udp, tcp, vsock",
               "pipe,unix,udp,tcp,vsock (default: all five locally, tcp for --serve\n"
               "and --connect; transports this system lacks are skipped with a warning)")},
        {OPT_SZ_LIST("sizes", o->sizes, &o->nsizes, IPC_MIN_SIZE, IPC_MAX_SIZE,
                     "message sizes, 16 to 16m (default " DEFAULT_SIZES ")")},
        {OPT_I("count", &o->count, 1, 1000000000000ull, "N", "measured round trips per size (default 10000)"),
         .expect = "a positive integer"},
        {OPT_NS("duration-s", &o->duration_ns, 1e9, 0.001, 1e6, "seconds", "S",
                "measure each size for S seconds instead of --count")},
        {OPT_I("warmup", &o->warmup, 0, 1000000000, "N", "unmeasured round trips before each size (default 100)")},
        {OPT_F("serve", &o->mode, IPC_SERVE, "be the peer of one session of another probe's --connect")},
        {OPT_I("port", &o->port, 0, 65535, "P",
               "port of --serve (default " RTVB_STR(TP_DEFAULT_PORT) ", 0 = any: meta.params.port says which)")},
        {OPT_S("bind", &o->bind, "ADDR", "address --serve listens on (default all)")},
        {OPT_S("connect", &connect, "ADDR", "run against a --serve peer: IPv4[:PORT], [IPv6]:PORT, vsock:CID[:PORT]\n"
                                            "(numeric addresses; names are not resolved)")},
        {OPT_NS("timeout-s", &o->timeout_ns, 1e9, 0.001, 1e6, "seconds", "S",
                "give up when the peer is silent this long (default 10)")},
        {OPT_C("cpus", tp_parse_cpu_pair, o->cpus, "A[,B]", "A or A,B with CPUs in this process's affinity mask",
               "pin this end to CPU A and the local peer to B (default: not pinned)"), TP_CPU_PAIR_RANGE},
        /* Test hooks (docs/probe/os-ipc.md): corrupt one message on purpose. */
        {OPT_I("x-corrupt-reply", &o->corrupt_reply, 0, UINT32_MAX, "N", NULL), .expect = "a message number"},
        {OPT_I("x-corrupt-request", &o->corrupt_request, 0, UINT32_MAX, "N", NULL), .expect = "a message number"},
        {OPT_TEXT("Without --serve or --connect the peer is a child process of this one.")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc;
    int transport_given = opts_seen(table, "transport");
    o->pinned = opts_seen(table, "cpus") > 0;
    if (o->duration_ns && opts_seen(table, "count"))
        return usage_error(SUB, "--count and --duration-s exclude each other; give one.");
    if (o->duration_ns)
        o->count = 0;
    if (connect && o->mode == IPC_SERVE)
        return usage_error(SUB, "--serve and --connect exclude each other; the two ends are two probes.");
    if (connect) {
        o->mode = IPC_CONNECT;
        o->connect = connect;
        if (parse_address(connect, o, &vsock_address))
            return usage_error(SUB, "--connect must be IPv4[:PORT], [IPv6]:PORT or vsock:CID[:PORT], got '%s'.",
                               connect);
        if (vsock_address && transport_given && o->transports != 1u << TP_VSOCK)
            return usage_error(SUB, "--connect vsock:... needs --transport vsock (or none).");
        if (vsock_address)
            o->transports = 1u << TP_VSOCK;
    }
    if ((opts_seen(table, "port") || o->bind) && o->mode != IPC_SERVE)
        return usage_error(SUB, "--port and --bind belong to --serve (--connect takes ADDR:PORT).");
    if (o->mode == IPC_LOCAL) {
        if (!transport_given)
            o->transports = (1u << TP_COUNT) - 1;
    } else {
        if (!transport_given && !vsock_address)
            o->transports = 1u << TP_TCP;
        unsigned t = o->transports;
        if (t & (t - 1))
            return usage_error(SUB, "--serve and --connect take one transport at a time.");
        if (t & ((1u << TP_PIPE) | (1u << TP_UNIX)))
            return usage_error(SUB, "pipe and unix connect processes of one system; --serve and --connect "
                                    "take tcp, udp or vsock.");
        if (o->pinned && o->cpus[1] != o->cpus[0])
            return usage_error(SUB, "with --serve or --connect --cpus pins only this end: give one CPU.");
    }
    return 0;
}

static void print_meta(int argc, char **argv, const struct ipc_opts *o)
{
    static const char *const modes[] = {"local", "serve", "connect"};
    struct jw w = {0};
    meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "mode", modes[o->mode]);
    jw_arr(&w, "transports");
    for (int k = 0; k < TP_COUNT; k++)
        if (o->transports & (1u << k))
            jw_str(&w, NULL, tp_name((enum tp_kind)k));
    jw_end(&w);
    /* A server does what its client asks: sizes, count and warmup are the
     * client's, so they are null here. */
    if (o->mode == IPC_SERVE) {
        jw_null(&w, "sizes_bytes");
        jw_null(&w, "count");
        jw_null(&w, "duration_ns");
        jw_null(&w, "warmup");
    } else {
        jw_arr(&w, "sizes_bytes");
        for (int i = 0; i < o->nsizes; i++)
            jw_uint(&w, NULL, o->sizes[i]);
        jw_end(&w);
        if (o->count)
            jw_uint(&w, "count", o->count);
        else
            jw_null(&w, "count");
        jw_uint(&w, "duration_ns", o->duration_ns);
        jw_uint(&w, "warmup", o->warmup);
    }
    jw_uint(&w, "timeout_ns", o->timeout_ns);
    if (o->mode == IPC_LOCAL)
        jw_null(&w, "port");
    else
        jw_uint(&w, "port", o->port);
    jw_str(&w, "bind", o->mode == IPC_SERVE ? (o->bind ? o->bind : "*") : NULL);
    jw_str(&w, "connect", o->connect);
    if (o->pinned) {
        jw_arr(&w, "cpus");
        jw_int(&w, NULL, o->cpus[0]);
        if (o->mode == IPC_LOCAL)
            jw_int(&w, NULL, o->cpus[1]);
        jw_end(&w);
    } else {
        jw_null(&w, "cpus");
    }
    jw_int(&w, "udp_datagram_max_bytes", TP_DGRAM_MAX);
    if (o->corrupt_reply >= 0)
        jw_int(&w, "x_corrupt_reply", o->corrupt_reply);
    if (o->corrupt_request >= 0)
        jw_int(&w, "x_corrupt_request", o->corrupt_request);
    jw_end(&w);
    meta_finish_euid(&w);
}

int cmd_ipc(int argc, char **argv)
{
    struct ipc_opts o;
    int rc = opts_done(parse_options(argc, argv, &o));
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    struct sigaction sa = {.sa_handler = on_stop};   /* no SA_RESTART: blocking calls return EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    uint64_t t0 = mono_ns();
    struct ipc_failure why = {0};
    int lfd = -1;
    enum tp_kind k = TP_TCP;
    for (int i = 0; i < TP_COUNT; i++)
        if (o.transports & (1u << i))
            k = (enum tp_kind)i;
    if (o.mode == IPC_SERVE) {
        /* Listen before meta, so meta can name the port in effect. */
        char err[256];
        unsigned bound;
        lfd = tp_listen(k, o.bind, o.port, &bound, err, sizeof err);
        if (lfd < 0) {
            print_meta(argc, argv, &o);
            snprintf(why.text, sizeof why.text, "cannot serve %s on port %u: %s", tp_name(k), o.port, err);
            emit_end("error", mono_ns() - t0, why.text);
            return EXIT_ENV;
        }
        o.port = bound;
    }
    if (o.pinned)
        tp_pin_cpu(o.cpus[0]);
    print_meta(argc, argv, &o);

    switch (o.mode) {
    case IPC_LOCAL: rc = run_local(&o, &why); break;
    case IPC_SERVE: rc = run_serve(&o, k, lfd, &why); break;
    case IPC_CONNECT: rc = run_connect(&o, k, &why); break;
    }
    if (rc == 0 && ipc_stop)
        why.interrupted = 1, rc = -1;
    if (rc && (why.interrupted || ipc_stop)) {
        emit_end("interrupted", mono_ns() - t0, NULL);
        return EXIT_OK;
    }
    emit_end(rc ? "error" : "ok", mono_ns() - t0, rc ? why.text : NULL);
    return rc ? EXIT_ENV : EXIT_OK;
}
