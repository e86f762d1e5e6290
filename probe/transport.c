#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
/* After <sys/socket.h>: the UAPI header needs sa_family_t. */
#include <linux/vm_sockets.h>

#include "opts.h"
#include "probe.h"
#include "shm.h"

#ifndef VMADDR_CID_LOCAL
#define VMADDR_CID_LOCAL 1   /* headers older than Linux 5.6 */
#endif

/* How long tp_pair waits for a local vsock or udp handshake before deciding
 * the transport is absent (a guest's vsock without vsock_loopback times out
 * instead of refusing). */
#define PAIR_PROBE_MS 1000
/* Socket buffers asked for udp, so a 64 KiB message in flight is never
 * dropped for want of room (the kernel caps it at net.core.rmem_max). */
#define UDP_BUFFER (1 << 20)

static const char *const names[TP_COUNT] = {"pipe", "unix", "udp", "tcp", "vsock", "shm"};

const char *tp_name(enum tp_kind k)
{
    return (unsigned)k < TP_COUNT ? names[k] : "?";
}

int tp_from_name(const char *s, enum tp_kind *k)
{
    for (int i = 0; i < TP_COUNT; i++)
        if (!strcmp(s, names[i])) {
            *k = (enum tp_kind)i;
            return 0;
        }
    return -1;
}

static int fail(char *err, size_t errlen, int rc, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, strerror(errno));
    return rc;
}

/* Errors that mean "this environment has no such transport", as opposed to
 * a failure worth reporting as an error. */
static int absent_errno(int e)
{
    return e == EAFNOSUPPORT || e == EPROTONOSUPPORT || e == EADDRNOTAVAIL || e == ENETUNREACH ||
           e == EHOSTUNREACH || e == ENODEV || e == ETIMEDOUT || e == ECONNRESET || e == ECONNREFUSED ||
           e == ESOCKTNOSUPPORT;
}

static int setup_fail(char *err, size_t errlen, const char *what)
{
    return fail(err, errlen, absent_errno(errno) ? TP_ABSENT : TP_FAILED, what);
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void set_udp_buffers(int fd)
{
    int size = UDP_BUFFER;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

static void socket_conn(struct tp_conn *c, enum tp_kind k, int fd)
{
    *c = (struct tp_conn){.kind = k, .rfd = fd, .wfd = fd};
    if (k == TP_TCP)
        set_nodelay(fd);
    if (k == TP_UDP)
        set_udp_buffers(fd);
}

void tp_close(struct tp_conn *c)
{
    shm_close(c);
    if (c->rfd >= 0)
        close(c->rfd);
    if (c->wfd >= 0 && c->wfd != c->rfd)
        close(c->wfd);
    c->rfd = c->wfd = -1;
}

/* connect() that gives up after ms: a vsock connect to a CID nobody serves
 * can hang for seconds before failing. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, int ms)
{
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n = poll(&p, 1, ms);
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (n == 0) {
            errno = ETIMEDOUT;
        } else if (n > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0) {
            rc = soerr ? -1 : 0;
            errno = soerr;
        }
    }
    int saved = errno;
    fcntl(fd, F_SETFL, flags);
    errno = saved;
    return rc;
}

/* A listening socket on a local address, a client connected to it, and
 * the accepted end: tcp on 127.0.0.1, vsock on the local CID. `where`
 * names the place in error messages. */
static int local_stream_pair(enum tp_kind k, struct sockaddr_storage *sa, socklen_t len, const char *where,
                             struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen)
{
    char what[160];
    int l = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(what, sizeof what, "listen on %s", where);
    if (l < 0 || bind(l, (struct sockaddr *)sa, len) || listen(l, 1) || getsockname(l, (struct sockaddr *)sa, &len)) {
        int rc = setup_fail(err, errlen, what);
        if (l >= 0)
            close(l);
        return rc;
    }
    if (k == TP_VSOCK)   /* bound to any CID, reached through the local one */
        ((struct sockaddr_vm *)sa)->svm_cid = VMADDR_CID_LOCAL;
    int c = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(what, sizeof what, "connect to %s", where);
    if (c < 0 || connect_within(c, (struct sockaddr *)sa, len, PAIR_PROBE_MS)) {
        int rc = setup_fail(err, errlen, what);
        if (c >= 0)
            close(c);
        close(l);
        return rc;
    }
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    snprintf(what, sizeof what, "accept on %s", where);
    int rc = s < 0 ? fail(err, errlen, TP_FAILED, what) : TP_OK;
    close(l);
    if (rc) {
        close(c);
        return rc;
    }
    socket_conn(a, k, c);
    socket_conn(b, k, s);
    return TP_OK;
}

static int local_tcp_pair(struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return local_stream_pair(TP_TCP, &ss, sizeof *sa, "127.0.0.1", a, b, err, errlen);
}

static int local_udp_pair(struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen)
{
    struct sockaddr_in sa[2];
    int fd[2] = {-1, -1};
    int rc = TP_OK;
    for (int i = 0; i < 2 && rc == TP_OK; i++) {
        socklen_t len = sizeof sa[i];
        sa[i] = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd[i] < 0 || bind(fd[i], (struct sockaddr *)&sa[i], sizeof sa[i]) ||
            getsockname(fd[i], (struct sockaddr *)&sa[i], &len))
            rc = setup_fail(err, errlen, "bind a udp socket to 127.0.0.1");
    }
    for (int i = 0; i < 2 && rc == TP_OK; i++)
        if (connect(fd[i], (struct sockaddr *)&sa[1 - i], sizeof sa[i]))
            rc = setup_fail(err, errlen, "connect a udp socket to 127.0.0.1");
    /* One datagram each way proves the path exists (an interface can have
     * the address and still drop everything). */
    for (int i = 0; i < 2 && rc == TP_OK; i++) {
        char byte = 'p';
        struct pollfd p = {.fd = fd[1 - i], .events = POLLIN};
        if (send(fd[i], &byte, 1, 0) != 1 || poll(&p, 1, PAIR_PROBE_MS) != 1 || recv(fd[1 - i], &byte, 1, 0) != 1) {
            if (errno == 0 || errno == EINPROGRESS)
                errno = ETIMEDOUT;
            rc = setup_fail(err, errlen, "udp datagram over 127.0.0.1");
        }
    }
    if (rc) {
        for (int i = 0; i < 2; i++)
            if (fd[i] >= 0)
                close(fd[i]);
        return rc;
    }
    socket_conn(a, TP_UDP, fd[0]);
    socket_conn(b, TP_UDP, fd[1]);
    return TP_OK;
}

static int local_vsock_pair(struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_vm *sa = (struct sockaddr_vm *)&ss;
    sa->svm_family = AF_VSOCK;
    sa->svm_cid = VMADDR_CID_ANY;
    sa->svm_port = VMADDR_PORT_ANY;
    return local_stream_pair(TP_VSOCK, &ss, sizeof *sa, "the local vsock CID (is vsock_loopback loaded?)", a, b,
                             err, errlen);
}

int tp_pair(enum tp_kind k, struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen)
{
    int fd[2], fd2[2];
    errno = 0;
    switch (k) {
    case TP_PIPE:
        if (pipe2(fd, O_CLOEXEC))
            return fail(err, errlen, TP_FAILED, "pipe");
        if (pipe2(fd2, O_CLOEXEC)) {
            close(fd[0]);
            close(fd[1]);
            return fail(err, errlen, TP_FAILED, "pipe");
        }
        *a = (struct tp_conn){.kind = k, .rfd = fd[0], .wfd = fd2[1]};
        *b = (struct tp_conn){.kind = k, .rfd = fd2[0], .wfd = fd[1]};
        return TP_OK;
    case TP_UNIX:
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd))
            return setup_fail(err, errlen, "socketpair(AF_UNIX)");
        socket_conn(a, k, fd[0]);
        socket_conn(b, k, fd[1]);
        return TP_OK;
    case TP_TCP:
        return local_tcp_pair(a, b, err, errlen);
    case TP_UDP:
        return local_udp_pair(a, b, err, errlen);
    case TP_VSOCK:
        return local_vsock_pair(a, b, err, errlen);
    default:
        snprintf(err, errlen, "unknown transport");
        return TP_FAILED;
    }
}

static int sock_type(enum tp_kind k)
{
    return k == TP_UDP ? SOCK_DGRAM : SOCK_STREAM;
}

/* A numeric IPv4 or IPv6 address, or "localhost". Names are not resolved:
 * in a static binary that would need glibc's NSS libraries at run time,
 * which a minimal guest does not have. */
static int inet_sockaddr(const char *host, unsigned port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (!strcmp(host, "localhost"))
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return 0;
    }
    return -1;
}

static int bind_one(enum tp_kind k, const struct sockaddr_storage *ss, socklen_t len)
{
    int one = 1, zero = 0;
    int fd = socket(ss->ss_family, sock_type(k) | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (const struct sockaddr *)ss, len) || (k != TP_UDP && listen(fd, 4))) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static int listen_inet(enum tp_kind k, const char *bind_addr, unsigned port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd;
    if (bind_addr) {
        if (inet_sockaddr(bind_addr, port, &ss, &len)) {
            snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", bind_addr);
            return TP_FAILED;
        }
        fd = bind_one(k, &ss, len);
    } else {
        /* The IPv6 wildcard also takes IPv4 (V6ONLY off); a kernel without
         * IPv6 gets the IPv4 wildcard. */
        inet_sockaddr("::", port, &ss, &len);
        fd = bind_one(k, &ss, len);
        if (fd < 0) {
            inet_sockaddr("0.0.0.0", port, &ss, &len);
            fd = bind_one(k, &ss, len);
        }
    }
    return fd >= 0 ? fd : fail(err, errlen, TP_FAILED, "bind");
}

static int listen_vsock(unsigned port, char *err, size_t errlen)
{
    struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
                             .svm_port = port ? port : VMADDR_PORT_ANY};
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return setup_fail(err, errlen, "socket(AF_VSOCK)");
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 4)) {
        int rc = fail(err, errlen, TP_FAILED, "vsock bind");
        close(fd);
        return rc;
    }
    return fd;
}

int tp_listen(enum tp_kind k, const char *bind_addr, unsigned port, unsigned *bound_port, char *err, size_t errlen)
{
    int fd;
    if (k == TP_TCP || k == TP_UDP)
        fd = listen_inet(k, bind_addr, port, err, errlen);
    else if (k == TP_VSOCK)
        fd = listen_vsock(port, err, errlen);
    else {
        snprintf(err, errlen, "%s cannot be served across environments", tp_name(k));
        return TP_FAILED;
    }
    if (fd < 0)
        return fd;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *bound_port = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET)
            *bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            *bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        else if (ss.ss_family == AF_VSOCK)
            *bound_port = ((struct sockaddr_vm *)&ss)->svm_port;
    }
    return fd;
}

static void describe_peer(const struct sockaddr_storage *ss, char *peer, size_t peerlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (!peer || !peerlen)
        return;
    if (ss->ss_family == AF_VSOCK) {
        const struct sockaddr_vm *vm = (const struct sockaddr_vm *)ss;
        snprintf(peer, peerlen, "vsock:%u:%u", vm->svm_cid, vm->svm_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {   /* an IPv4 client of the dual-stack wildcard */
            inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], host, sizeof host);
            snprintf(peer, peerlen, "%s:%u", host, ntohs(v6->sin6_port));
        } else {
            inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
            snprintf(peer, peerlen, "[%s]:%u", host, ntohs(v6->sin6_port));
        }
    } else {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
        snprintf(peer, peerlen, "%s:%u", host, ntohs(v4->sin_port));
    }
}

int tp_accept(enum tp_kind k, int lfd, struct tp_conn *c, char *peer, size_t peerlen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (k == TP_UDP) {
        char byte;
        if (recvfrom(lfd, &byte, 1, MSG_PEEK, (struct sockaddr *)&ss, &len) < 0)
            return fail(err, errlen, TP_FAILED, "waiting for a udp client");
        if (connect(lfd, (struct sockaddr *)&ss, len))
            return fail(err, errlen, TP_FAILED, "udp connect to the client");
        socket_conn(c, k, lfd);
    } else {
        int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (fd < 0)
            return fail(err, errlen, TP_FAILED, "accept");
        socket_conn(c, k, fd);
    }
    describe_peer(&ss, peer, peerlen);
    return TP_OK;
}

static int connect_vsock(const char *host, unsigned port, struct tp_conn *c, char *err, size_t errlen)
{
    uint64_t cid;
    if (parse_u64(host, 0, UINT32_MAX, &cid)) {
        snprintf(err, errlen, "'%s' is not a vsock CID", host);
        return TP_FAILED;
    }
    struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = (unsigned)cid, .svm_port = port};
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return setup_fail(err, errlen, "socket(AF_VSOCK)");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        int rc = fail(err, errlen, TP_FAILED, "vsock connect");
        close(fd);
        return rc;
    }
    socket_conn(c, TP_VSOCK, fd);
    return TP_OK;
}

int tp_connect(enum tp_kind k, const char *host, unsigned port, struct tp_conn *c, char *err, size_t errlen)
{
    if (k == TP_VSOCK)
        return connect_vsock(host, port, c, err, errlen);
    if (k != TP_TCP && k != TP_UDP) {
        snprintf(err, errlen, "%s cannot connect across environments", tp_name(k));
        return TP_FAILED;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    if (inet_sockaddr(host, port, &ss, &len)) {
        snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", host);
        return TP_FAILED;
    }
    int fd = socket(ss.ss_family, sock_type(k) | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
        snprintf(err, errlen, "cannot connect to %s port %u: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return TP_FAILED;
    }
    socket_conn(c, k, fd);
    return TP_OK;
}

void tp_set_timeout(struct tp_conn *c, uint64_t timeout_ns)
{
    if (c->kind == TP_SHM)
        shm_set_timeout(c, timeout_ns);
    if (c->kind == TP_PIPE || c->kind == TP_SHM)
        return;
    struct timeval tv = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
                         .tv_usec = (suseconds_t)(timeout_ns % 1000000000ull / 1000)};
    setsockopt(c->rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int tp_send_all(struct tp_conn *c, const void *buf, size_t len)
{
    if (c->kind == TP_SHM)
        return shm_send(c, buf, len);   /* one message in the mailbox, whole */
    const char *p = buf;
    while (len) {
        ssize_t n;
        if (c->kind == TP_PIPE) {
            n = write(c->wfd, p, len);
        } else if (c->kind == TP_UDP) {
            size_t chunk = len < TP_DGRAM_MAX ? len : TP_DGRAM_MAX;
            n = send(c->wfd, p, chunk, MSG_NOSIGNAL);
            if (n >= 0 && (size_t)n != chunk) {
                errno = EMSGSIZE;
                return -1;
            }
        } else {
            n = send(c->wfd, p, len, MSG_NOSIGNAL);
        }
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tp_recv_all(struct tp_conn *c, void *buf, size_t len)
{
    if (c->kind == TP_SHM)
        return shm_recv(c, buf, len);
    char *p = buf;
    while (len) {
        ssize_t n;
        if (c->kind == TP_PIPE) {
            n = read(c->rfd, p, len);
        } else if (c->kind == TP_UDP) {
            /* MSG_TRUNC: the real length, so a datagram of another size is
             * caught instead of silently cut. */
            size_t chunk = len < TP_DGRAM_MAX ? len : TP_DGRAM_MAX;
            n = recv(c->rfd, p, chunk, MSG_TRUNC);
            if (n >= 0 && (size_t)n != chunk) {
                errno = EMSGSIZE;
                return -1;
            }
        } else {
            n = recv(c->rfd, p, len, 0);
        }
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = ECONNRESET;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

pid_t tp_fork_peer(void)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)   /* the parent died before prctl */
            _exit(0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_IGN);
    }
    return pid;
}

void tp_reap_peer(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int tp_pin_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

int tp_parse_cpu_pair(const struct opt *t, const char *s)
{
    int *cpus = t->field;
    const char *comma = strchr(s, ',');
    char first[32];
    uint64_t a, b;
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len == 0 || len >= sizeof first)
        return -1;
    memcpy(first, s, len);
    first[len] = '\0';
    if (parse_u64(first, (uint64_t)t->min, t->max, &a) || (comma && parse_u64(comma + 1, (uint64_t)t->min, t->max, &b)))
        return -1;
    if (!comma)
        b = a;
    if (!cpu_allowed((int)a) || !cpu_allowed((int)b))
        return -1;
    cpus[0] = (int)a;
    cpus[1] = (int)b;
    return 0;
}
