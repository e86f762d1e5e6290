/*
 * The `result` record of a port test, in the shape of the Linux probe's
 * `rtos` results (docs/probe/rtos.md), so the host's `rtos` decoder reads
 * either; the ground truths the test checked go with it.
 */
#ifndef RTVB_PORT_RECORDS_H
#define RTVB_PORT_RECORDS_H

#include "port_tests.h"

struct jw;

/* A ping-pong's parts (also the Linux sem_pingpong's): `half_round_trip`,
 * the round trip's statistics halved (what one direction costs when both
 * are alike), and the two measured steps, `forward` and `back`. */
void port_write_pingpong(struct jw *w, const struct hist *round_trip, const struct hist *fwd,
                         const struct hist *back);

void port_write_result(enum port_test t, const struct port_result *r, const char *error);

#endif
