/*
 * agent: the command server behind `rtvb-probe agent` and `rtvb-probe init`.
 *
 * The host drives a guest that has no shell through one bidirectional byte
 * stream (a virtio-serial port in a guest, any socket or tty elsewhere):
 * it asks for commands to be run, signalled, files to be read and the
 * machine to be powered off; the agent streams back each command's
 * stdout/stderr lines, its exit status and a heartbeat. The protocol is
 * described in docs/probe/init.md.
 */
#ifndef RTVB_AGENT_H
#define RTVB_AGENT_H

#include <stdint.h>

struct agent_config {
    int fd;                /* the channel, read and written */
    int pid1;              /* running as the guest's init: EOF on the channel
                            * means "host not connected", not "the end" */
    const char *who;       /* prefix of console diagnostics, e.g. "rtvb-probe init" */
    const char *early_log; /* '\n'-separated diagnostics from before the channel
                            * existed, sent as `log` lines right after `ready` */
    uint64_t init_ns;      /* CLOCK_BOOTTIME when /init started (0: not init), sent
                            * with `ready` so the host can split kernel from init */
};

/*
 * Serve the protocol on cfg->fd until `poweroff` (or, outside PID 1, until the
 * host closes the channel or the agent gets SIGINT/SIGTERM/SIGHUP). Every
 * running command's process group is SIGKILLed and reaped before it returns.
 * Returns 0 on an orderly end, -1 after a fatal error it has already printed
 * on stderr.
 */
int agent_serve(const struct agent_config *cfg);

/* Print "<who>: <message>" on stderr (the console, under init) as one write. */
void agent_console(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
