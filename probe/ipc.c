/*
 * ipc: ping-pong round trips between two endpoints, by message size, over
 * pipe, unix, udp, tcp, vsock and shm (a shared memory region, shm.c). The peer is a forked child (local mode)
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
#include "ipcrec.h"
#include "opts.h"
#include "probe.h"
#include "shm.h"
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

static uint64_t largest_size(const struct ipc_opts *o)
{
    uint64_t max = 0;
    for (int i = 0; i < o->nsizes; i++)
        max = o->sizes[i] > max ? o->sizes[i] : max;
    return max;
}

/* Map the region the options name: --shm-pci, --shm-path (created when
 * absent: --shm-size, else as large as the largest size needs), or, with
 * neither (local mode only), an anonymous shared mapping. */
static int shm_map_region(const struct ipc_opts *o, struct shm_map *m, struct ipc_failure *why)
{
    char err[700];
    uint64_t need = (2 * largest_size(o) + 8 * 64 + 4095) / 4096 * 4096;
    if (need < SHM_MIN_SIZE)
        need = SHM_MIN_SIZE;
    int rc;
    if (o->shm_pci)
        rc = shm_map_pci(o->shm_pci, m, err, sizeof err);
    else if (o->shm_path)
        rc = shm_map_file(o->shm_path, o->mode == IPC_CONNECT ? 0 : o->shm_size ? o->shm_size
                                        : o->mode == IPC_SERVE ? SHM_DEFAULT_SIZE : need, m, err, sizeof err);
    else
        rc = shm_map_anon(need, m, err, sizeof err);
    if (rc)
        snprintf(why->text, sizeof why->text, "cannot map the shm region: %s", err);
    return rc;
}

/* The client's region, mapped; a size that does not fit it is refused
 * before any round trip. */
static int shm_client_region(const struct ipc_opts *o, struct shm_map *m, struct ipc_failure *why)
{
    if (shm_map_region(o, m, why))
        return -1;
    size_t cap = shm_capacity(m);
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > cap) {
            snprintf(why->text, sizeof why->text, "%llu-byte messages do not fit the shm region %s of %zu bytes "
                     "(at most %zu bytes each way); give smaller --sizes or a larger region",
                     (unsigned long long)o->sizes[i], m->where, m->len, cap);
            shm_unmap(m);
            return -1;
        }
    return 0;
}

static int run_local_shm(const struct ipc_opts *o, struct ipc_failure *why)
{
    struct shm_map m;
    struct tp_conn mine;
    char err[700];
    if (shm_client_region(o, &m, why))
        return -1;
    shm_prepare(&m);   /* before the fork: the client never sees an earlier run's state */
    pid_t pid = tp_fork_peer();
    if (pid == 0) {
        struct ipc_failure peer_why = {0};
        struct tp_conn theirs;
        if (o->pinned)
            tp_pin_cpu(o->cpus[1]);
        if (shm_serve(&m, o->timeout_ns, &ipc_stop, &theirs, err, sizeof err))
            _exit(1);
        shm_corrupt_after(&theirs, o->corrupt_after);
        _exit(ipc_serve_session(&theirs, o, 0, "local", &peer_why) ? 1 : 0);
    }
    int rc = -1;
    if (pid < 0)
        snprintf(why->text, sizeof why->text, "fork: %s", strerror(errno));
    else if (shm_connect(&m, o->timeout_ns, &ipc_stop, &mine, err, sizeof err))
        snprintf(why->text, sizeof why->text, "%s", err);
    else {
        rc = ipc_run_client(&mine, o, "local", why);
        tp_close(&mine);
    }
    tp_reap_peer(pid);
    shm_unmap(&m);
    return rc;
}

static int run_local(const struct ipc_opts *o, struct ipc_failure *why)
{
    for (int k = 0; k < TP_COUNT && !ipc_stop; k++) {
        if (!(o->transports & (1u << k)))
            continue;
        if (k == TP_SHM) {
            if (run_local_shm(o, why))
                return -1;
            continue;
        }
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

static int run_connect_shm(const struct ipc_opts *o, struct ipc_failure *why)
{
    struct shm_map m;
    struct tp_conn c;
    char err[700];
    if (shm_client_region(o, &m, why))
        return -1;
    int rc = 0;
    if (shm_connect(&m, o->timeout_ns, &ipc_stop, &c, err, sizeof err)) {
        snprintf(why->text, sizeof why->text, "%s", err);
        why->interrupted = ipc_stop;
        rc = -1;
    }
    if (rc == 0) {
        shm_corrupt_after(&c, o->corrupt_after);
        rc = ipc_run_client(&c, o, m.where, why);
        tp_close(&c);
    }
    shm_unmap(&m);
    return rc;
}

/* The region of --serve is mapped and laid out before meta (cmd_ipc). */
static int run_serve_shm(const struct ipc_opts *o, struct shm_map *m, struct ipc_failure *why)
{
    struct tp_conn c;
    char err[700];
    int rc = -1;
    if (shm_serve(m, o->timeout_ns, &ipc_stop, &c, err, sizeof err)) {
        snprintf(why->text, sizeof why->text, "%s", err);
        why->interrupted = ipc_stop;
    } else {
        shm_corrupt_after(&c, o->corrupt_after);
        rc = ipc_serve_session(&c, o, 1, m->where, why);
        tp_close(&c);
    }
    shm_unmap(m);
    return rc;
}

static int run_connect(const struct ipc_opts *o, enum tp_kind k, struct ipc_failure *why)
{
    struct tp_conn c;
    char err[256], peer[300];
    if (k == TP_SHM)
        return run_connect_shm(o, why);
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
    if (!strcmp(s, "shm"))
        return 0;          /* the region is named by --shm-path or --shm-pci */
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
        {OPT_C("transport", parse_transports, &o->transports, "LIST", "a list of pipe, unix, udp, tcp, vsock, shm",
               "pipe,unix,udp,tcp,vsock,shm (default: the first five locally, tcp for\n"
               "--serve and --connect; transports this system lacks are skipped with a\n"
               "warning)")},
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
                                            "(numeric addresses; names are not resolved), or shm (the\n"
                                            "server of the region of --shm-path or --shm-pci)")},
        {OPT_NS("timeout-s", &o->timeout_ns, 1e9, 0.001, 1e6, "seconds", "S",
                "give up when the peer is silent this long (default 10)")},
        {OPT_C("cpus", tp_parse_cpu_pair, o->cpus, "A[,B]", "A or A,B with CPUs in this process's affinity mask",
               "pin this end to CPU A and the local peer to B (default: not pinned)"), TP_CPU_PAIR_RANGE},
        /* Test hooks (docs/probe/os-ipc.md): corrupt one message on purpose. */
        {OPT_I("x-corrupt-reply", &o->corrupt_reply, 0, UINT32_MAX, "N", NULL), .expect = "a message number"},
        {OPT_I("x-corrupt-request", &o->corrupt_request, 0, UINT32_MAX, "N", NULL), .expect = "a message number"},
        {OPT_I("x-corrupt-after", &o->corrupt_after, 1, UINT32_MAX, "N", NULL), .expect = "a message number"},
        {OPT_S("shm-path", &o->shm_path, "PATH", "shm: the region is this file (--serve and local mode create\n"
                                                  "it when absent, and remove what they created)")},
        {OPT_S("shm-pci", &o->shm_pci, "DEV", "shm: the region is BAR2 of an ivshmem PCI device: auto (the first)\n"
                                               "or its address, e.g. 0000:00:03.0 (in a guest)")},
        {OPT_SZ("shm-size", &o->shm_size, SHM_MIN_SIZE, 1ull << 40,
                "size of a --shm-path file the probe creates (default: 4m for --serve,\n"
                "what the largest size needs otherwise)")},
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
        if (!strcmp(connect, "shm")) {
            if (transport_given && o->transports != 1u << TP_SHM)
                return usage_error(SUB, "--connect shm needs --transport shm (or none).");
            o->transports = 1u << TP_SHM;
        } else if (parse_address(connect, o, &vsock_address))
            return usage_error(SUB, "--connect must be IPv4[:PORT], [IPv6]:PORT or vsock:CID[:PORT], got '%s'.",
                               connect);
        if (vsock_address && transport_given && o->transports != 1u << TP_VSOCK)
            return usage_error(SUB, "--connect vsock:... needs --transport vsock (or none).");
        if (vsock_address)
            o->transports = 1u << TP_VSOCK;
    }
    if ((o->shm_path || o->shm_pci || o->shm_size || o->corrupt_after) && !(o->transports & (1u << TP_SHM)))
        return usage_error(SUB, "--shm-path, --shm-pci, --shm-size and --x-corrupt-after belong to --transport shm.");
    if (o->shm_path && o->shm_pci)
        return usage_error(SUB, "--shm-path and --shm-pci exclude each other; name one region.");
    if (o->shm_size && !o->shm_path)
        return usage_error(SUB, "--shm-size sizes a file the probe creates: it goes with --shm-path.");
    if ((opts_seen(table, "port") || o->bind) && o->mode != IPC_SERVE)
        return usage_error(SUB, "--port and --bind belong to --serve (--connect takes ADDR:PORT).");
    int shm = (o->transports & (1u << TP_SHM)) != 0;
    if (o->mode == IPC_LOCAL) {
        if (!transport_given)   /* shm only when asked for: it spins both ends */
            o->transports = ((1u << TP_COUNT) - 1) & ~(1u << TP_SHM);
        shm = (o->transports & (1u << TP_SHM)) != 0;
    } else {
        if (!transport_given && !vsock_address && !(connect && !strcmp(connect, "shm")))
            o->transports = 1u << TP_TCP;
        unsigned t = o->transports;
        if (t & (t - 1))
            return usage_error(SUB, "--serve and --connect take one transport at a time.");
        if (t & ((1u << TP_PIPE) | (1u << TP_UNIX)))
            return usage_error(SUB, "pipe and unix connect processes of one system; --serve and --connect "
                                    "take tcp, udp, vsock or shm.");
        if (shm && !o->shm_path && !o->shm_pci)
            return usage_error(SUB, "--transport shm with --serve or --connect needs the region: --shm-path "
                                    "PATH or --shm-pci auto.");
        if (shm && (opts_seen(table, "port") || o->bind))
            return usage_error(SUB, "shm has no port or address: the region is named by --shm-path or --shm-pci.");
        if (o->pinned && o->cpus[1] != o->cpus[0])
            return usage_error(SUB, "with --serve or --connect --cpus pins only this end: give one CPU.");
    }
    return 0;
}

static void print_meta(int argc, char **argv, const struct ipc_opts *o, const struct shm_map *shm)
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
    ipc_write_limits(&w, o->mode == IPC_SERVE, o->sizes, o->nsizes, o->count, o->duration_ns, o->warmup);
    jw_uint(&w, "timeout_ns", o->timeout_ns);
    if (o->mode == IPC_LOCAL || o->transports == 1u << TP_SHM)
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
    /* The region of shm: what it is, and (--serve, which maps it before
     * meta) its size. */
    jw_str(&w, "shm", o->shm_pci ? (shm && shm->base ? shm->where : o->shm_pci) : o->shm_path);
    if (shm && shm->base)
        jw_uint(&w, "shm_bytes", shm->len);
    else
        jw_null(&w, "shm_bytes");
    if (o->corrupt_after)
        jw_uint(&w, "x_corrupt_after", o->corrupt_after);
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
    struct shm_map region = {0};
    if (o.mode == IPC_SERVE && k == TP_SHM) {
        /* Lay the region out before meta: a client started once meta is
         * out finds a ready server. */
        if (shm_map_region(&o, &region, &why)) {
            print_meta(argc, argv, &o, NULL);
            emit_end("error", mono_ns() - t0, why.text);
            return EXIT_ENV;
        }
        shm_prepare(&region);
    } else if (o.mode == IPC_SERVE) {
        /* Listen before meta, so meta can name the port in effect. */
        char err[256];
        unsigned bound;
        lfd = tp_listen(k, o.bind, o.port, &bound, err, sizeof err);
        if (lfd < 0) {
            print_meta(argc, argv, &o, NULL);
            snprintf(why.text, sizeof why.text, "cannot serve %s on port %u: %s", tp_name(k), o.port, err);
            emit_end("error", mono_ns() - t0, why.text);
            return EXIT_ENV;
        }
        o.port = bound;
    }
    if (o.pinned)
        tp_pin_cpu(o.cpus[0]);
    print_meta(argc, argv, &o, &region);

    switch (o.mode) {
    case IPC_LOCAL: rc = run_local(&o, &why); break;
    case IPC_SERVE: rc = k == TP_SHM ? run_serve_shm(&o, &region, &why) : run_serve(&o, k, lfd, &why); break;
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
