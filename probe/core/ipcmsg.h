/*
 * The messages of the ipc session protocol (described in
 * probe/ipc_session.c), as bytes: control messages, the header of a data
 * message and the pseudo-random payload of each direction, and the check
 * of a message that arrived. The Linux probe and the bare-metal image both
 * build and check their messages with these, so either end of a session
 * may be either program.
 */
#ifndef RTVB_IPCMSG_H
#define RTVB_IPCMSG_H

#include <stddef.h>
#include <stdint.h>

#define IPC_HDR 16                   /* seq (u32), kind (u32), 8 zero bytes */
#define IPC_MIN_SIZE IPC_HDR
#define IPC_MAX_SIZE (16u << 20)
#define IPC_CTRL 48                  /* bytes of a control message */

enum { IPC_OP_PHASE = 1, IPC_OP_BYE = 2, IPC_OP_VERDICT = 3, IPC_OP_ACK = 0x80 };
/* "DATA" "PONG" "END!" */
enum { IPC_KIND_DATA = 0x41544144, IPC_KIND_PONG = 0x474e4f50, IPC_KIND_END = 0x21444e45 };
/* The seeds of the two directions' payloads. */
#define IPC_SEED_REQUEST 0x9e3779b9u
#define IPC_SEED_REPLY 0x7f4a7c15u

struct ipc_ctrl {
    uint32_t op, size;
    uint64_t a, b;                   /* PHASE: warmup; VERDICT: bad, first_seq */
    uint32_t c;                      /* VERDICT: offset */
    uint8_t expected, got;
};

void ipc_put32(uint8_t *p, uint32_t v);
uint32_t ipc_get32(const uint8_t *p);

void ipc_ctrl_encode(const struct ipc_ctrl *m, uint8_t buf[IPC_CTRL]);
/* 0, or -1 for bytes that are not an rtvb-probe ipc control message. */
int ipc_ctrl_decode(const uint8_t buf[IPC_CTRL], struct ipc_ctrl *m);

/* The payload of a direction: xorshift bytes from its seed, so a byte from
 * the wrong place or the wrong direction does not match. */
void ipc_fill_pattern(uint8_t *p, size_t n, uint32_t seed);
void ipc_set_header(uint8_t *msg, uint32_t seq, uint32_t kind);

/* Offset of the first byte of msg that differs from message `seq` of
 * `kind` with the payload `pattern` (whose first IPC_HDR bytes are not
 * read), -1 when it is exactly right; *expected is the byte it should be. */
long ipc_first_diff(const uint8_t *msg, const uint8_t *pattern, size_t size, uint32_t seq, uint32_t kind,
                    uint8_t *expected);

#endif
