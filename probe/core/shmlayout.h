/*
 * The shm transport's region, as both ends see it: where each word lies,
 * how large a message slot is, and the checksum a message carries. The
 * Linux probe (probe/shm.c) and the bare-metal image (probe/baremetal/
 * ipc_shm.c) both lay the region out and read it by these, so either can
 * be the server of the other. How the words are waited on and published
 * (the atomics, the barriers) is each side's own; the protocol is
 * described in probe/shm.c.
 */
#ifndef RTVB_SHMLAYOUT_H
#define RTVB_SHMLAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Words written by different ends never share a line of this size. */
#define SHM_LINE 64u
#define SHM_MAGIC 0x4d534252u        /* "RBSM" in memory order on little-endian */
#define SHM_VERSION 1u
/* Where the two message slots start: eight header lines before them. */
#define SHM_DATA_OFF (8u * SHM_LINE)
/* The smallest region: header lines, two mailboxes and room for a control
 * message each way. */
#define SHM_MIN_SIZE 4096u

/* Byte offsets of the region's words (32-bit unless said). */
enum {
    SHM_W_MAGIC = 0, SHM_W_VERSION = 4, SHM_W_LINE = 8,
    SHM_W_REGION = 16, SHM_W_SLOT = 24,               /* 64-bit each */
    SHM_W_READY = 1 * SHM_LINE, SHM_W_SERVER_CLOSED = 1 * SHM_LINE + 4,
    SHM_W_SESSION = 2 * SHM_LINE, SHM_W_CLIENT_CLOSED = 2 * SHM_LINE + 4,
    SHM_W_ACCEPTED = 3 * SHM_LINE,
    SHM_W_MAILBOX = 4 * SHM_LINE,
};

/* Within a mailbox (mailbox i starts at SHM_W_MAILBOX + i * 2 lines;
 * 0 carries client -> server, 1 server -> client): the writer's line
 * (seq, len, sum, session) and the reader's (ack). */
enum { SHM_MB_SEQ = 0, SHM_MB_LEN = 4, SHM_MB_SUM = 8, SHM_MB_SESSION = 12, SHM_MB_ACK = SHM_LINE };

static inline size_t shm_mailbox_off(int i) { return SHM_W_MAILBOX + (size_t)i * 2 * SHM_LINE; }

/* The largest message a region of `len` bytes carries each way: half of
 * what follows the header, in whole lines. */
static inline size_t shm_slot_bytes(size_t len)
{
    return len < SHM_DATA_OFF + 2 * SHM_LINE ? 0 : (len - SHM_DATA_OFF) / 2 / SHM_LINE * SHM_LINE;
}

static inline size_t shm_slot_off(size_t len, int i) { return SHM_DATA_OFF + (size_t)i * shm_slot_bytes(len); }

/* Fletcher-style over 32-bit words: every byte and its position count, so a
 * changed, swapped or missing byte changes it. Not a cryptographic hash:
 * it guards against accidents (a torn copy, a stray write). */
uint32_t shm_checksum(const uint8_t *p, size_t n);

/* A random-enough nonzero 32-bit value from a seed (the time, a pid): the
 * server's epoch and the client's session id. */
uint32_t shm_mix_id(uint64_t seed);

#endif
