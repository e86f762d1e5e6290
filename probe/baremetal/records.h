/*
 * What every command's records of the image share: the `meta` record's
 * opening keys (as the Linux probe's, with the platform, board, counter and
 * how the image was entered), the `end` record, a wrong option's `err` line
 * (exit 2), and the `tick` a long command owes the host once a second.
 */
#ifndef RTVB_BM_RECORDS_H
#define RTVB_BM_RECORDS_H

#include <stdint.h>

struct jw;

/* Opens the meta record; the caller adds its `params` and emits it. */
void record_meta_begin(struct jw *w, const char *sub, int argc, char **argv);
void record_end(uint64_t elapsed_ns);
/* The `end` record of a run stopped early (stop.h): status "interrupted",
 * as the Linux probe's run ended by SIGINT or SIGTERM. */
void record_end_stopped(uint64_t elapsed_ns, int stopped);
/* "rtvb-probe <sub>: <what> '<arg>'; <fix>" as an err line; returns 2. */
int record_usage(const char *sub, const char *what, const char *arg, const char *fix);
/* The option at argv[*i] and its value, *i moved past both: 0, or 2 after
 * the err line when the last name has no value. */
int record_option(const char *sub, int argc, char **argv, int *i, const char **name, const char **value);
/* A tick line when *next_ns has passed, and the next one a second on. */
void record_tick_due(uint64_t *next_ns);

#endif
