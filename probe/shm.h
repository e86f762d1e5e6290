/*
 * shm: the `shm` transport of ipc, a channel between two endpoints that
 * share a memory region and poll it: two processes mapping one file (or an
 * anonymous shared mapping in local mode), a host process and a guest, or
 * two guests whose QEMU maps the same file as an ivshmem device (BAR2).
 * The layout and the protocol are described in shm.c and in
 * docs/probe/os-ipc.md.
 */
#ifndef RTVB_SHM_H
#define RTVB_SHM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlayout.h"
#include "transport.h"

/* Size of a region the probe creates when --shm-size is not given. */
#define SHM_DEFAULT_SIZE (4u << 20)

/* A mapped region. `created`: this process made the file and removes it
 * in shm_unmap (the other end of a local measurement, a forked child,
 * never does). */
struct shm_map {
    void *base;
    size_t len;
    char path[512];                  /* "" for an anonymous mapping */
    char where[600];                 /* what it is, for meta and messages */
    int created;
};

/* Map the file at path read-write and shared. When it does not exist, or
 * is empty, it is created with create_size bytes (exclusively, mode 0600)
 * and removed again by shm_unmap; create_size 0: it must exist (a client
 * does not create the server's region). A symlink, a file that is not
 * regular or another user's file is refused. TP_OK or TP_FAILED with err. */
int shm_map_file(const char *path, uint64_t create_size, struct shm_map *m, char *err, size_t errlen);
/* An anonymous shared mapping of len bytes, inherited by fork(). */
int shm_map_anon(uint64_t len, struct shm_map *m, char *err, size_t errlen);
/* BAR2 of an ivshmem PCI device (vendor 0x1af4, device 0x1110) through
 * sysfs: spec "auto" (the first one) or a device address such as
 * 0000:00:03.0. TP_ABSENT when there is none. */
int shm_map_pci(const char *spec, struct shm_map *m, char *err, size_t errlen);
void shm_unmap(struct shm_map *m);

/* The largest message the region carries each way. */
size_t shm_capacity(const struct shm_map *m);

/* Server side (after shm_prepare): wait for a client's session. Client side: wait for a ready server, announce a new
 * session and wait until the server takes it. Both give a connection for
 * tp_send_all/tp_recv_all/tp_close. The wait ends after timeout_ns, or
 * with EINTR when *stop becomes set. TP_OK, TP_FAILED with err. */
int shm_serve(struct shm_map *m, uint64_t timeout_ns, volatile sig_atomic_t *stop, struct tp_conn *c, char *err,
              size_t errlen);
int shm_connect(struct shm_map *m, uint64_t timeout_ns, volatile sig_atomic_t *stop, struct tp_conn *c, char *err,
                size_t errlen);
/* Lay the region out afresh and mark it ready (the server does this before
 * it prints meta, so a client started once meta is out finds it ready; a
 * local measurement before it forks). */
void shm_prepare(struct shm_map *m);

/* Test hook (--x-corrupt-after N): after computing the checksum of the
 * Nth message this end sends, flip a payload byte in the region before
 * publishing it, as a third party writing the region would. 0 = off. */
void shm_corrupt_after(struct tp_conn *c, uint64_t n);

/* Used by transport.c for TP_SHM connections. */
int shm_send(struct tp_conn *c, const void *buf, size_t len);
int shm_recv(struct tp_conn *c, void *buf, size_t len);
void shm_close(struct tp_conn *c);
void shm_set_timeout(struct tp_conn *c, uint64_t timeout_ns);
/* Whether the last message received failed its checksum although it was
 * delivered (the caller compares the bytes and reports where they differ). */
int shm_last_checksum_bad(const struct tp_conn *c);

#endif
