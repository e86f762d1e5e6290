/*
 * transport: byte transports between two processes, shared by `os` (the
 * *_lat and *_bw tests) and `ipc` (ping-pong by message size).
 *
 * A connection is a pair of file descriptors (equal for sockets, the two
 * ends of two pipes for TP_PIPE). It is made either
 *  - in one process with tp_pair(), which returns both ends: fork, and give
 *    one end to each side (local measurements), or
 *  - across environments with tp_listen()/tp_accept() and tp_connect()
 *    (tcp, udp, vsock), so the peer can run in another host, guest or
 *    network namespace.
 * tp_send_all()/tp_recv_all() move exactly `len` bytes. A UDP message is
 * one datagram up to TP_DGRAM_MAX bytes and several consecutive datagrams
 * above that, so every transport carries messages of any size.
 */
#ifndef RTVB_TRANSPORT_H
#define RTVB_TRANSPORT_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* TP_SHM is a shared memory region (shm.h): its connections are made by
 * shm_serve/shm_connect, not by tp_pair, tp_listen or tp_connect. */
enum tp_kind { TP_PIPE, TP_UNIX, TP_UDP, TP_TCP, TP_VSOCK, TP_SHM, TP_COUNT };

/* Largest datagram a UDP message is cut into. */
#define TP_DGRAM_MAX 32768
/* Default port of `ipc --serve` (tcp, udp and vsock). */
#define TP_DEFAULT_PORT 47817

struct tp_shm;

struct tp_conn {
    enum tp_kind kind;
    int rfd, wfd;        /* the same socket, or two pipe ends; -1 when closed */
    struct tp_shm *shm;  /* TP_SHM: this end's state (shm.c) */
};

/* Name used on the command line and in records: pipe, unix, udp, tcp, vsock, shm. */
const char *tp_name(enum tp_kind k);
int tp_from_name(const char *s, enum tp_kind *k);

/* Outcome of setting a transport up. TP_ABSENT: this kernel or environment
 * does not offer it (no AF_VSOCK loopback, loopback interface down ...); the
 * caller skips with a warning. TP_FAILED: anything else. The reason is
 * written into err as one sentence fragment. */
enum { TP_OK = 0, TP_FAILED = -1, TP_ABSENT = -2 };

/* Both ends of a fresh connection in this process. udp and tcp use
 * 127.0.0.1, vsock the local CID (VMADDR_CID_LOCAL). */
int tp_pair(enum tp_kind k, struct tp_conn *a, struct tp_conn *b, char *err, size_t errlen);

/* Server side. bind_addr NULL = every address (IPv6 and IPv4 when the
 * kernel has IPv6). port 0 = ephemeral; *bound_port gets the port in effect.
 * Returns the listening (tcp, vsock) or bound (udp) socket, or TP_FAILED /
 * TP_ABSENT. bind_addr is numeric, as host in tp_connect. */
int tp_listen(enum tp_kind k, const char *bind_addr, unsigned port, unsigned *bound_port,
              char *err, size_t errlen);
/* Wait for a client. udp: wait for the first datagram (left unread) and
 * connect the socket to its sender; the connection then owns lfd. A
 * signal interrupts the wait (errno EINTR). peer gets "addr:port". */
int tp_accept(enum tp_kind k, int lfd, struct tp_conn *c, char *peer, size_t peerlen,
              char *err, size_t errlen);
/* Client side. host: a numeric IPv4 or IPv6 address or "localhost" (tcp,
 * udp: names are not resolved, see transport.c), a CID (vsock). */
int tp_connect(enum tp_kind k, const char *host, unsigned port, struct tp_conn *c,
               char *err, size_t errlen);

/* Receive/send timeout of a socket connection (no effect on pipes, whose
 * peer is always a local child that closes its end when it dies). */
void tp_set_timeout(struct tp_conn *c, uint64_t timeout_ns);
void tp_close(struct tp_conn *c);

/* Move exactly len bytes. 0 on success; -1 with errno: EINTR (a signal
 * arrived; a partial message is lost), EAGAIN (timeout), ECONNRESET (the
 * peer closed the connection), EMSGSIZE (a datagram of an unexpected
 * size), or the error of the failing call. */
int tp_send_all(struct tp_conn *c, const void *buf, size_t len);
int tp_recv_all(struct tp_conn *c, void *buf, size_t len);

/* fork() for a peer process of a local measurement. The child dies with
 * its parent (PR_SET_PDEATHSIG), takes the default action on SIGINT and
 * SIGTERM and ignores SIGPIPE (a closed peer is seen as EPIPE). Returns
 * what fork() returns. */
pid_t tp_fork_peer(void);
/* Make sure a peer is gone: SIGKILL, then reap it. */
void tp_reap_peer(pid_t pid);
/* Run the calling process on one CPU only. 0, or -1 with errno. */
int tp_pin_cpu(int cpu);
/* The OPT_CUSTOM parser of "A" or "A,B": the CPUs of the two ends of a
 * local measurement (B = A when omitted) into the int[2] field, each checked
 * against the affinity mask. 0, or -1. */
struct opt;
int tp_parse_cpu_pair(const struct opt *t, const char *s);
/* The range of its table entry: two CPU numbers below CPU_SETSIZE. */
#define TP_CPU_PAIR_RANGE .min = 0, .max = CPU_SETSIZE - 1, .cap = 2

#endif
