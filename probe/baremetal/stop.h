/*
 * Stopping a running command early, as SIGINT or SIGTERM stops the Linux
 * probe's run: the host sends `signal <id> 2` (or 15) while it runs.
 */
#ifndef RTVB_BM_STOP_H
#define RTVB_BM_STOP_H

/* The command `id` starts, and nothing has asked it to stop yet. */
void stop_watch(const char *id);
/* The signal that asked the running command to stop (2 or 15), or 0. A
 * command calls it between activations or measured points: it reads what
 * waits on the UART's receive side, one register read when nothing does. */
int stop_requested(void);
/* The command has ended; a request line it left half read is read to its
 * end and dropped (it can only be a signal to the command just ended). */
void stop_unwatch(void);

#endif
