/*
 * ipc: ping-pong round trips between two endpoints, by message size, over
 * pipe, unix, udp, tcp and vsock. The peer is a forked child (local mode)
 * or another probe started with --serve, possibly in another host, guest
 * or network namespace (--connect). This file holds the options, the
 * three modes and the records around the results; the protocol, the
 * integrity checks and the measurement are in ipc_session.c.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "probe.h"
#include "transport.h"

#define SUB "ipc"

static const char *const default_sizes = "16,64,256,1024,1280,4096,65536";

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

static void usage(void)
{
    printf(
        "usage: rtvb-probe ipc [options]\n"
        "  --transport LIST     pipe,unix,udp,tcp,vsock (default: all five locally, tcp for --serve\n"
        "                       and --connect; transports this system lacks are skipped with a warning)\n"
        "  --sizes LIST         message sizes, 16 to 16m (default %s)\n"
        "  --count N            measured round trips per size (default 10000)\n"
        "  --duration-s S       measure each size for S seconds instead of --count\n"
        "  --warmup N           unmeasured round trips before each size (default 100)\n"
        "  --serve              be the peer of one session of another probe's --connect\n"
        "  --port P             port of --serve (default %d, 0 = any: meta.params.port says which)\n"
        "  --bind ADDR          address --serve listens on (default all)\n"
        "  --connect ADDR       run against a --serve peer: IPv4[:PORT], [IPv6]:PORT, vsock:CID[:PORT]\n"
        "                       (numeric addresses; names are not resolved)\n"
        "  --timeout-s S        give up when the peer is silent this long (default 10)\n"
        "  --cpus A[,B]         pin this end to CPU A and the local peer to B (default: not pinned)\n"
        "Without --serve or --connect the peer is a child process of this one.\n",
        default_sizes, TP_DEFAULT_PORT);
}

static int parse_transports(const char *s, unsigned *mask)
{
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *mask = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        enum tp_kind k;
        if (tp_from_name(t, &k))
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
    enum { O_TRANSPORT = 1000, O_SIZES, O_COUNT, O_DURATION, O_WARMUP, O_SERVE, O_PORT, O_BIND, O_CONNECT,
           O_TIMEOUT, O_CPUS, O_CORRUPT_REPLY, O_CORRUPT_REQUEST, O_HELP };
    static const struct option longopts[] = {
        {"transport", required_argument, 0, O_TRANSPORT},
        {"sizes", required_argument, 0, O_SIZES},
        {"count", required_argument, 0, O_COUNT},
        {"duration-s", required_argument, 0, O_DURATION},
        {"warmup", required_argument, 0, O_WARMUP},
        {"serve", no_argument, 0, O_SERVE},
        {"port", required_argument, 0, O_PORT},
        {"bind", required_argument, 0, O_BIND},
        {"connect", required_argument, 0, O_CONNECT},
        {"timeout-s", required_argument, 0, O_TIMEOUT},
        {"cpus", required_argument, 0, O_CPUS},
        /* Test hooks (docs/probe/os-ipc.md): corrupt one message on purpose. */
        {"x-corrupt-reply", required_argument, 0, O_CORRUPT_REPLY},
        {"x-corrupt-request", required_argument, 0, O_CORRUPT_REQUEST},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    uint64_t u;
    double d;
    int transport_given = 0, count_given = 0, port_given = 0, vsock_address = 0;
    const char *connect = NULL;

    *o = (struct ipc_opts){.count = 10000, .warmup = 100, .timeout_ns = 10000000000ull, .port = TP_DEFAULT_PORT,
                           .corrupt_reply = -1, .corrupt_request = -1};
    o->nsizes = tp_parse_size_list(default_sizes, IPC_MIN_SIZE, IPC_MAX_SIZE, o->sizes, IPC_MAX_SIZES);
    opterr = 0;
    optind = 1;
    for (;;) {
        int c = getopt_long(argc, argv, "", longopts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case O_TRANSPORT:
            if (parse_transports(optarg, &o->transports))
                return usage_error(SUB, "--transport must be a list of pipe, unix, udp, tcp, vsock, got '%s'.",
                                   optarg);
            transport_given = 1;
            break;
        case O_SIZES:
            o->nsizes = tp_parse_size_list(optarg, IPC_MIN_SIZE, IPC_MAX_SIZE, o->sizes, IPC_MAX_SIZES);
            if (o->nsizes < 0)
                return usage_error(SUB, "--sizes must be a list of at most %d sizes from 16 to 16m, got '%s'.",
                                   IPC_MAX_SIZES, optarg);
            break;
        case O_COUNT:
            if (parse_u64(optarg, 1, 1000000000000ull, &u))
                return usage_error(SUB, "--count must be a positive integer, got '%s'.", optarg);
            o->count = u;
            count_given = 1;
            break;
        case O_DURATION:
            if (parse_double(optarg, 0.001, 1e6, &d))
                return usage_error(SUB, "--duration-s must be a number of seconds from 0.001 to 1e6, got '%s'.",
                                   optarg);
            o->duration_ns = (uint64_t)(d * 1e9);
            break;
        case O_WARMUP:
            if (parse_u64(optarg, 0, 1000000000, &u))
                return usage_error(SUB, "--warmup must be an integer from 0 to 1000000000, got '%s'.", optarg);
            o->warmup = u;
            break;
        case O_SERVE:
            o->mode = IPC_SERVE;
            break;
        case O_PORT:
            if (parse_u64(optarg, 0, 65535, &u))
                return usage_error(SUB, "--port must be an integer from 0 to 65535, got '%s'.", optarg);
            o->port = (unsigned)u;
            port_given = 1;
            break;
        case O_BIND:
            o->bind = optarg;
            break;
        case O_CONNECT:
            connect = optarg;
            break;
        case O_TIMEOUT:
            if (parse_double(optarg, 0.001, 1e6, &d))
                return usage_error(SUB, "--timeout-s must be a number of seconds from 0.001 to 1e6, got '%s'.",
                                   optarg);
            o->timeout_ns = (uint64_t)(d * 1e9);
            break;
        case O_CPUS:
            if (tp_parse_cpu_pair(optarg, o->cpus))
                return usage_error(SUB, "--cpus must be A or A,B with CPUs in this process's affinity mask, "
                                        "got '%s'.", optarg);
            o->pinned = 1;
            break;
        case O_CORRUPT_REPLY:
        case O_CORRUPT_REQUEST:
            if (parse_u64(optarg, 0, UINT32_MAX, &u))
                return usage_error(SUB, "%s must be a message number, got '%s'.", argv[optind - 1], optarg);
            *(c == O_CORRUPT_REPLY ? &o->corrupt_reply : &o->corrupt_request) = (int64_t)u;
            break;
        case O_HELP:
            usage();
            return -1;
        default:
            return unknown_option(SUB, argv[optind - 1]);
        }
    }
    if (optind < argc)
        return unexpected_argument(SUB, argv[optind]);
    if (o->duration_ns && count_given)
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
    if ((port_given || o->bind) && o->mode != IPC_SERVE)
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
    jw_obj(&w, "privileges");
    jw_int(&w, "euid", (int64_t)geteuid());
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

int cmd_ipc(int argc, char **argv)
{
    struct ipc_opts o;
    int rc = parse_options(argc, argv, &o);
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
