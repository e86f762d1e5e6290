/*
 * shmlink.h. The words are 32-bit and aligned; the ends order the payload
 * around them with acquire loads and release stores only, as probe/shm.c
 * does with C11 atomics (aarch64: ldar/stlr; riscv64: fences around plain
 * loads and stores), never a read-modify-write, which the Linux side's
 * uncached map of the BAR may not support.
 */
#include "shmlink.h"

#include "arch.h"
#include "clock.h"
#include "records.h"
#include "shmlayout.h"

#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_DEVICE 0x1110
#define IVSHMEM_SHARED_BAR 2
/* Polls between looks at the clock (the timeout, the tick). */
#define POLLS_PER_CHECK 64u

static uint32_t load_acquire(const struct shm_end *e, size_t off)
{
    return __atomic_load_n((uint32_t *)(void *)(e->base + off), __ATOMIC_ACQUIRE);
}

static void store_release(const struct shm_end *e, size_t off, uint32_t v)
{
    __atomic_store_n((uint32_t *)(void *)(e->base + off), v, __ATOMIC_RELEASE);
}

static uint32_t *plain(const struct shm_end *e, size_t off) { return (uint32_t *)(void *)(e->base + off); }

int shm_find_region(struct shm_end *e, const char **why)
{
    *e = (struct shm_end){0};
    if (pci_enable_bar(IVSHMEM_VENDOR, IVSHMEM_DEVICE, IVSHMEM_SHARED_BAR, &e->bar, why))
        return -1;
    if (e->bar.size < SHM_MIN_SIZE) {
        *why = "the ivshmem device's shared memory is smaller than a shm region (4 KiB)";
        return -1;
    }
    e->base = (uint8_t *)e->bar.base;
    e->len = (size_t)e->bar.size;
    e->slot = shm_slot_bytes(e->len);
    e->next_tick = clock_ns();
    return 0;
}

static uint32_t fresh_id(uint32_t salt) { return shm_mix_id(counter_now() ^ (uint64_t)salt << 32); }

void shm_prepare(struct shm_end *e)
{
    store_release(e, SHM_W_READY, 0);
    for (size_t off = SHM_W_SERVER_CLOSED; off < SHM_DATA_OFF; off += 4)
        if (off != SHM_W_READY)
            *plain(e, off) = 0;
    *plain(e, SHM_W_MAGIC) = SHM_MAGIC;
    *plain(e, SHM_W_VERSION) = SHM_VERSION;
    *plain(e, SHM_W_LINE) = SHM_LINE;
    *plain(e, SHM_W_REGION) = (uint32_t)e->len;
    *plain(e, SHM_W_REGION + 4) = (uint32_t)((uint64_t)e->len >> 32);
    *plain(e, SHM_W_SLOT) = (uint32_t)e->slot;
    *plain(e, SHM_W_SLOT + 4) = (uint32_t)((uint64_t)e->slot >> 32);
    /* Everything above happens before a client that sees the epoch. */
    store_release(e, SHM_W_READY, fresh_id(0x5e5e));
}

static void attach(struct shm_end *e, int server, uint32_t session, uint64_t timeout_ns)
{
    e->server = server;
    e->session = session;
    e->sent = e->received = 0;
    e->timeout_ns = timeout_ns;
}

/* Between looks while the session is agreed (not timed): the tick goes on. */
static int waited_out(struct shm_end *e, uint64_t deadline)
{
    record_tick_due(&e->next_tick);
    return deadline && clock_ns() > deadline;
}

enum shm_status shm_serve(struct shm_end *e, uint64_t timeout_ns)
{
    uint64_t deadline = timeout_ns ? clock_ns() + timeout_ns : 0;
    uint32_t session;
    while ((session = load_acquire(e, SHM_W_SESSION)) == 0)
        if (waited_out(e, deadline))
            return SHM_TIMEOUT;
    attach(e, 1, session, timeout_ns);
    store_release(e, SHM_W_CLIENT_CLOSED, 0);
    /* The mailboxes are as shm_prepare left them: nobody sends before this. */
    store_release(e, SHM_W_ACCEPTED, session);
    return SHM_OK;
}

enum shm_status shm_connect(struct shm_end *e, uint64_t timeout_ns, uint32_t *bad_version)
{
    uint32_t session = fresh_id(0xc11e), epoch = 0;
    uint64_t deadline = clock_ns() + timeout_ns;
    *bad_version = 0;
    for (;;) {
        uint32_t ready = load_acquire(e, SHM_W_READY);
        int ours = ready && *plain(e, SHM_W_MAGIC) == SHM_MAGIC;
        if (ours && *plain(e, SHM_W_VERSION) != SHM_VERSION) {
            *bad_version = *plain(e, SHM_W_VERSION);
            return SHM_OUT_OF_STEP;
        }
        /* A server that started after we wrote the session wiped it. */
        if (ours && ready != epoch) {
            epoch = ready;
            store_release(e, SHM_W_SESSION, session);
        }
        if (ours && load_acquire(e, SHM_W_ACCEPTED) == session)
            break;
        if (waited_out(e, deadline))
            return SHM_TIMEOUT;
    }
    attach(e, 0, session, timeout_ns);
    return SHM_OK;
}

/* Poll until the word is (equal) or is no longer (!equal) `want`. */
static enum shm_status wait_word(struct shm_end *e, size_t off, uint32_t want, int equal, uint32_t *got)
{
    uint64_t deadline = 0;
    size_t peer_closed = e->server ? SHM_W_CLIENT_CLOSED : SHM_W_SERVER_CLOSED;
    for (uint32_t n = 1;; n++) {
        uint32_t v = load_acquire(e, off);
        if ((v == want) == equal) {
            *got = v;
            return SHM_OK;
        }
        if (n % POLLS_PER_CHECK)
            continue;
        if (load_acquire(e, peer_closed))
            return SHM_PEER_CLOSED;
        uint64_t now = clock_ns();
        if (!deadline)
            deadline = now + e->timeout_ns;
        else if (now > deadline)
            return SHM_TIMEOUT;
        record_tick_due(&e->next_tick);
    }
}

enum shm_status shm_send(struct shm_end *e, const uint8_t *buf, size_t len)
{
    size_t mb = shm_mailbox_off(e->server);
    uint8_t *slot = e->base + shm_slot_off(e->len, e->server);
    uint32_t v;
    if (len > e->slot)
        return SHM_BAD_LENGTH;
    enum shm_status st = wait_word(e, mb + SHM_MB_ACK, e->sent, 1, &v);
    if (st)
        return st;
    for (size_t i = 0; i < len; i++)
        slot[i] = buf[i];
    *plain(e, mb + SHM_MB_LEN) = (uint32_t)len;
    *plain(e, mb + SHM_MB_SUM) = shm_checksum(buf, len);
    *plain(e, mb + SHM_MB_SESSION) = e->session;
    e->sent++;
    if (e->corrupt_after && e->sent == e->corrupt_after)
        slot[len - 1] ^= 0x01;
    store_release(e, mb + SHM_MB_SEQ, e->sent);
    return SHM_OK;
}

enum shm_status shm_recv(struct shm_end *e, uint8_t *buf, size_t len)
{
    size_t mb = shm_mailbox_off(!e->server);
    const uint8_t *slot = e->base + shm_slot_off(e->len, !e->server);
    uint32_t seq;
    enum shm_status st = wait_word(e, mb + SHM_MB_SEQ, e->received, 0, &seq);
    if (st)
        return st;
    if (seq != e->received + 1 || *plain(e, mb + SHM_MB_SESSION) != e->session)
        return SHM_OUT_OF_STEP;
    if (*plain(e, mb + SHM_MB_LEN) != len)
        return SHM_BAD_LENGTH;
    for (size_t i = 0; i < len; i++)
        buf[i] = slot[i];
    uint32_t sum = *plain(e, mb + SHM_MB_SUM);
    e->received = seq;
    store_release(e, mb + SHM_MB_ACK, seq);
    e->last_sum_bad = shm_checksum(buf, len) != sum;
    return SHM_OK;
}

void shm_close(struct shm_end *e)
{
    store_release(e, e->server ? SHM_W_SERVER_CLOSED : SHM_W_CLIENT_CLOSED, 1);
}

const char *shm_status_text(enum shm_status s)
{
    switch (s) {
    case SHM_OK: return "ok";
    case SHM_TIMEOUT: return "no answer from the peer within the timeout (--timeout-s)";
    case SHM_PEER_CLOSED: return "the peer closed the connection";
    case SHM_OUT_OF_STEP: return "a message out of sequence or of another session arrived in the shm region";
    case SHM_BAD_LENGTH: return "a message of an unexpected size arrived";
    }
    return "?";
}
