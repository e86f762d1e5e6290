/*
 * The shm transport of ipc on the bare-metal image: the Linux probe's
 * mailbox protocol (probe/shm.c, the layout in probe/core/shmlayout.h) in
 * BAR2 of QEMU's ivshmem-plain device, so the image can be the server or
 * the client of a Linux probe that maps the same region: a process on the
 * host mapping its file, or a guest mapping its own ivshmem device.
 */
#ifndef RTVB_BM_SHMLINK_H
#define RTVB_BM_SHMLINK_H

#include <stddef.h>
#include <stdint.h>

#include "pci.h"

/* What a transfer ended with. */
enum shm_status { SHM_OK, SHM_TIMEOUT, SHM_PEER_CLOSED, SHM_OUT_OF_STEP, SHM_BAD_LENGTH };

struct shm_end {
    uint8_t *base;
    size_t len, slot;
    struct pci_bar bar;
    int server;
    uint32_t session, sent, received;
    uint64_t timeout_ns;
    uint64_t corrupt_after;          /* test hook (--x-corrupt-after), 0 = off */
    int last_sum_bad;
    uint64_t next_tick;              /* waits keep the image's `tick` going */
};

/* BAR2 of the first ivshmem device (1af4:1110), assigned and mapped. 0, or
 * -1 with *why. */
int shm_find_region(struct shm_end *e, const char **why);
/* The server: lay the region out afresh and mark it ready. */
void shm_prepare(struct shm_end *e);
/* Server: wait for a client's session; client: wait for a ready server and
 * have it take a new session. SHM_OK or SHM_TIMEOUT after timeout_ns (0:
 * the server waits as long as it takes). *bad_version: the client found a
 * server of another protocol version. */
enum shm_status shm_serve(struct shm_end *e, uint64_t timeout_ns);
enum shm_status shm_connect(struct shm_end *e, uint64_t timeout_ns, uint32_t *bad_version);
enum shm_status shm_send(struct shm_end *e, const uint8_t *buf, size_t len);
enum shm_status shm_recv(struct shm_end *e, uint8_t *buf, size_t len);
void shm_close(struct shm_end *e);
const char *shm_status_text(enum shm_status s);

#endif
