/*
 * The parts of the ipc subcommand's records that the Linux probe and the
 * bare-metal image write alike, so the host's decoder reads both: the
 * limits of meta's params, a client result's round-trip figures and the
 * corruption a result reports.
 */
#ifndef RTVB_IPCREC_H
#define RTVB_IPCREC_H

#include <stdint.h>

struct jw;
struct hist;

/* sizes_bytes, count (null with a duration), duration_ns and warmup; all
 * null for a server, which does what its client asks. */
void ipc_write_limits(struct jw *w, int serve, const uint64_t *sizes, int nsizes, uint64_t count,
                      uint64_t duration_ns, uint64_t warmup);
/* Opens a client's `result` record: which transport and peer, the size,
 * the round trips counted, the warmup, whether the phase ran to its end
 * and whether every message checked out (1, 0, or -1: null, cut short
 * before the peer's verdict with nothing wrong seen so far). */
void ipc_write_client_head(struct jw *w, const char *transport, const char *peer, uint64_t size, uint64_t count,
                           uint64_t warmup, int complete, int verified);
/* min_ns .. p9999_ns of the round trips (null when none), elapsed_ns,
 * round_trips_per_s and payload_bps (both directions' bytes). */
void ipc_write_round_trips(struct jw *w, const struct hist *h, uint64_t size, uint64_t elapsed_ns);
/* The `corruption` object: which direction, the first message affected,
 * the byte offset (-1: its bytes were right but their checksum was not),
 * the byte expected and got, and how many messages were affected. */
void ipc_write_corruption(struct jw *w, const char *direction, uint64_t seq, long offset, uint8_t expected,
                          uint8_t got, uint64_t count);

#endif
