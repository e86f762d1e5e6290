/*
 * Shared declarations of the `ipc` subcommand: ipc.c (options, modes,
 * output of meta and end) and ipc_session.c (the session protocol, the
 * peer and the client). The protocol is described in ipc_session.c.
 */
#ifndef RTVB_IPC_H
#define RTVB_IPC_H

#include <signal.h>
#include <stdint.h>

#include "ipcmsg.h"
#include "transport.h"

#define IPC_MAX_SIZES 32

enum ipc_mode { IPC_LOCAL, IPC_SERVE, IPC_CONNECT };

struct ipc_opts {
    enum ipc_mode mode;
    unsigned transports;             /* bit per enum tp_kind */
    uint64_t sizes[IPC_MAX_SIZES];
    int nsizes;
    uint64_t count;                  /* measured round trips per size; 0 with duration */
    uint64_t duration_ns;
    uint64_t warmup;
    uint64_t timeout_ns;
    const char *connect;             /* --connect as given */
    char host[256];                  /* its address part */
    unsigned port;
    const char *bind;
    int cpus[2], pinned;
    int64_t corrupt_reply, corrupt_request;   /* hidden test hooks, -1 = off */
    const char *shm_path, *shm_pci;  /* the shm region: a file, or an ivshmem device */
    uint64_t shm_size;               /* size of a region file the probe creates; 0 = as needed */
    uint64_t corrupt_after;          /* hidden test hook of shm, 0 = off */
};

/* Why a phase did not end well; "" when it did. */
struct ipc_failure {
    char text[1024];
    int interrupted;
};

/* Set by SIGINT/SIGTERM; blocking calls return EINTR (no SA_RESTART). */
extern volatile sig_atomic_t ipc_stop;

/* Serve one session on c until the client's BYE. report: print a
 * server-side result per phase (--serve; a local child prints nothing, as
 * it shares stdout). Returns 0 at BYE, -1 on error with why. */
int ipc_serve_session(struct tp_conn *c, const struct ipc_opts *o, int report, const char *peer,
                      struct ipc_failure *why);
/* Every size of o over c, a result per size. Returns 0, or -1 with why
 * (a transport failure, corruption, or a stop). */
int ipc_run_client(struct tp_conn *c, const struct ipc_opts *o, const char *peer, struct ipc_failure *why);

#endif
