/*
 * The image's side of the agent protocol (docs/probe/init.md, the subset
 * docs/baremetal.md lists) on the UART: `ready`, `tick`, `log`, and a
 * command's `<id> out`, `<id> err` and `<id> exit` lines. The JSON Lines
 * writer's platform hooks live here too: a record is built in a small
 * static buffer and goes out as `<id> out <record>`, in pieces when it is
 * longer than the buffer (one core, one writer: nothing can interleave).
 */
#ifndef RTVB_BM_CONSOLE_H
#define RTVB_BM_CONSOLE_H

#include <stdint.h>

void console_ready(uint64_t boot_ns);
void console_tick(uint64_t now_ns);
/* A line of the concatenated strings, up to a NULL. */
void console_log(const char *part, ...);
/* The command whose lines follow: its id as the host sent it. */
void console_command(const char *id);
void console_err(const char *part, ...);
void console_exit(int status);
/* A bug of the image: `log fatal exception: <name> <hex value>...` for the
 * three registers an architecture names, before it stops. */
void console_fatal(const char *n1, uint64_t v1, const char *n2, uint64_t v2, const char *n3, uint64_t v3);

#endif
