/*
 * shm transport: two mailboxes in a shared memory region, polled.
 *
 * The region may be mapped by two processes of one system, by a host
 * process and a guest (the file behind QEMU's ivshmem device), or by two
 * guests. Nothing but plain memory is shared: no futex, no semaphore, no
 * interrupt (a futex does not cross a VM boundary). Synchronisation is by
 * 32-bit C11 atomics with acquire/release ordering only (loads and stores,
 * no read-modify-write): they are lock-free on every architecture the probe
 * is built for, need no libatomic on 32-bit arm, and remain valid on the
 * uncached mapping a guest gets of a PCI BAR (read-modify-write atomics may
 * not be, e.g. exclusives on arm device memory).
 *
 * Layout (probe/core/shmlayout.h, shared with the bare-metal image; LINE =
 * 64-byte lines, so that words written by different sides never share a
 * cache line):
 *   line 0  header, written by the server before it says ready: magic,
 *           version, line size, region bytes, slot bytes (the largest
 *           message each way)
 *   line 1  ready: the server's epoch (0 while it lays the region out),
 *           server_closed
 *   line 2  session: written by the client, client_closed
 *   line 3  accepted: the session the server took
 *   line 4/5  mailbox 0 (client -> server): seq, len, sum, session | ack
 *   line 6/7  mailbox 1 (server -> client)
 *   line 8..  slot 0, then slot 1, each `slot bytes` (a multiple of LINE)
 *
 * Handshake. The server zeroes the region's words with ready = 0, writes
 * the header and stores a fresh random epoch in ready (release). The
 * client waits for a ready region with the right magic, stores a fresh
 * random session id (release) and waits until accepted holds it; it
 * writes it again whenever the epoch changes (a server that started after
 * the client read a stale epoch has wiped it). So a client never takes an
 * answer meant for an earlier run: every mailbox word was reset before the
 * server accepted its session, and every message carries the session id.
 *
 * A message. The sender waits until the reader has acknowledged its
 * previous message (ack == sent, acquire), copies the payload into its
 * slot, writes len, a checksum of the payload and the session id, and
 * publishes it by storing seq = sent + 1 (release). The reader waits for
 * seq to change (acquire), checks it is the next one and of this session,
 * copies the payload out, checks the checksum over its copy and stores
 * ack = seq (release): the sender may then overwrite the slot. The release
 * store of seq orders the payload before it; the acquire load orders the
 * reader's copy after it; the ack orders the reader's copy before the
 * sender's next write.
 *
 * Waiting is polling: a short spin, then sched_yield() between checks, so
 * that two ends sharing one CPU (a one-vCPU guest) hand it over at once
 * instead of spinning out a time slice each.
 */
#include "shm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

/* Spins before each check yields the CPU, some 20 us natively; none when
 * this end may run on one CPU only (a one-vCPU guest, both ends pinned to
 * one CPU): there the peer cannot move while we spin. */
#define SPIN 1000
#define PCI_DEVICES "/sys/bus/pci/devices"
#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_DEVICE 0x1110

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free to be shared across processes");

struct mailbox {
    _Atomic uint32_t *seq, *ack;
    uint32_t *len, *sum, *session;
    uint8_t *data;
};

struct tp_shm {
    struct mailbox out, in;
    _Atomic uint32_t *peer_closed, *my_closed;
    size_t slot;
    uint32_t session, sent, received;
    uint64_t timeout_ns;
    volatile sig_atomic_t *stop;
    uint64_t corrupt_after;
    int last_sum_bad;
    unsigned spin;
};

static _Atomic uint32_t *word(void *base, size_t off)
{
    return (_Atomic uint32_t *)((uint8_t *)base + off);
}

static uint32_t *plain(void *base, size_t off)
{
    return (uint32_t *)((uint8_t *)base + off);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ volatile("yield");
#endif
}

/* A random-enough nonzero 32-bit value: two ends started in the same
 * nanosecond in the same pid are the only collision, and those are one run. */
static uint32_t fresh_id(uint32_t salt)
{
    return shm_mix_id(mono_ns() ^ ((uint64_t)getpid() << 32) ^ salt);
}

/* ------------------------------------------------------------- mapping */

static int map_fd(int fd, size_t len, struct shm_map *m, char *err, size_t errlen)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", m->where, strerror(errno));
        return TP_FAILED;
    }
    m->base = p;
    m->len = len;
    return TP_OK;
}

/* The region file lives in a directory every user may write to
 * (/dev/shm), and the probe often runs as root: a name somebody planted
 * there must not redirect its writes. So an existing file is opened
 * without following a symlink (O_NOFOLLOW), without blocking on a FIFO
 * (O_NONBLOCK), and used only if it is a regular file of this user; a
 * new one is created exclusively (O_EXCL: a symlink or file planted at
 * the name after we looked is refused, never written through). */
static int open_region_file(const char *path, uint64_t create_size, int *created, struct stat *st, char *err,
                            size_t errlen)
{
    *created = 0;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create_size) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        *created = fd >= 0;
    }
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(err, errlen, "refusing %s: it is a symbolic link; name a regular file of this user", path);
        else if (errno == EEXIST)
            snprintf(err, errlen, "refusing %s: something else created that name while the probe was creating "
                     "it; name a file nobody else can create", path);
        else
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    const char *wrong = NULL;
    if (fstat(fd, st))
        wrong = strerror(errno);
    else if (!S_ISREG(st->st_mode))
        wrong = "it is not a regular file";
    else if (st->st_uid != geteuid())
        wrong = "it belongs to another user";
    if (wrong) {
        snprintf(err, errlen, "refusing %s: %s; name a regular file of this user (uid %u)", path, wrong,
                 (unsigned)geteuid());
        close(fd);
        if (*created)
            unlink(path);
        return -1;
    }
    return fd;
}

int shm_map_file(const char *path, uint64_t create_size, struct shm_map *m, char *err, size_t errlen)
{
    *m = (struct shm_map){0};
    snprintf(m->path, sizeof m->path, "%s", path);
    snprintf(m->where, sizeof m->where, "%s", path);
    int created;
    struct stat st;
    int fd = open_region_file(path, create_size, &created, &st, err, errlen);
    if (fd < 0)
        return TP_FAILED;
    if (st.st_size == 0 && create_size) {
        if (ftruncate(fd, (off_t)create_size)) {
            snprintf(err, errlen, "cannot size %s to %llu bytes: %s", path, (unsigned long long)create_size,
                     strerror(errno));
            close(fd);
            unlink(path);
            return TP_FAILED;
        }
        st.st_size = (off_t)create_size;
        m->created = 1;
    }
    if ((uint64_t)st.st_size < SHM_MIN_SIZE) {
        snprintf(err, errlen, "%s holds %lld bytes, fewer than a shm region needs (%u)", path,
                 (long long)st.st_size, SHM_MIN_SIZE);
        close(fd);
        return TP_FAILED;
    }
    int rc = map_fd(fd, (size_t)st.st_size, m, err, errlen);
    close(fd);
    if (rc && m->created)
        unlink(path);
    return rc;
}

int shm_map_anon(uint64_t len, struct shm_map *m, char *err, size_t errlen)
{
    *m = (struct shm_map){0};
    snprintf(m->where, sizeof m->where, "an anonymous shared mapping");
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %llu shared bytes: %s", (unsigned long long)len, strerror(errno));
        return TP_FAILED;
    }
    m->base = p;
    m->len = (size_t)len;
    return TP_OK;
}

static unsigned read_hex_file(const char *dir, const char *name)
{
    char path[512], buf[32] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    return (unsigned)strtoul(buf, NULL, 16);
}

/* The PCI core leaves a device without a driver with its memory decoding
 * off; writing 1 to `enable` turns it on (pci_enable_device), as a driver
 * would. Reading BAR2 through a disabled device gives all ones. */
static void enable_device(const char *dir)
{
    char path[512], c = '1';
    snprintf(path, sizeof path, "%s/enable", dir);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    if (read(fd, &c, 1) == 1 && c == '0' && pwrite(fd, "1", 1, 0) != 1)
        c = '0';
    close(fd);
}

int shm_map_pci(const char *spec, struct shm_map *m, char *err, size_t errlen)
{
    *m = (struct shm_map){0};
    DIR *d = opendir(PCI_DEVICES);
    if (!d) {
        snprintf(err, errlen, "cannot list %s: %s", PCI_DEVICES, strerror(errno));
        return errno == ENOENT ? TP_ABSENT : TP_FAILED;
    }
    char dir[512] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        char cand[512];
        if (e->d_name[0] == '.' || (strcmp(spec, "auto") && strcmp(spec, e->d_name)))
            continue;
        snprintf(cand, sizeof cand, "%s/%s", PCI_DEVICES, e->d_name);
        if (read_hex_file(cand, "vendor") == IVSHMEM_VENDOR && read_hex_file(cand, "device") == IVSHMEM_DEVICE) {
            snprintf(dir, sizeof dir, "%s", cand);
            break;
        }
    }
    closedir(d);
    if (!dir[0]) {
        if (strcmp(spec, "auto"))
            snprintf(err, errlen, "PCI device %s is not an ivshmem device (1af4:1110)", spec);
        else
            snprintf(err, errlen, "no ivshmem PCI device (1af4:1110) in %s", PCI_DEVICES);
        return TP_ABSENT;
    }
    enable_device(dir);
    snprintf(m->where, sizeof m->where, "%s/resource2", dir);
    /* O_SYNC: the kernel maps the BAR uncached, the same as a driver's
     * ioremap; under KVM that is slower than the RAM behind it. */
    int fd = open(m->where, O_RDWR | O_SYNC | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(err, errlen, "cannot open %s: %s", m->where, strerror(errno));
        if (fd >= 0)
            close(fd);
        return TP_FAILED;
    }
    if ((uint64_t)st.st_size < SHM_MIN_SIZE) {
        snprintf(err, errlen, "%s is %lld bytes, fewer than a shm region needs (%u)", m->where,
                 (long long)st.st_size, SHM_MIN_SIZE);
        close(fd);
        return TP_FAILED;
    }
    int rc = map_fd(fd, (size_t)st.st_size, m, err, errlen);
    close(fd);
    return rc;
}

void shm_unmap(struct shm_map *m)
{
    if (m->base)
        munmap(m->base, m->len);
    if (m->created && m->path[0])
        unlink(m->path);
    m->base = NULL;
    m->created = 0;
}

size_t shm_capacity(const struct shm_map *m)
{
    return shm_slot_bytes(m->len);
}

/* ------------------------------------------------------------ handshake */

static struct mailbox mailbox(const struct shm_map *m, int i)
{
    size_t w = shm_mailbox_off(i);
    return (struct mailbox){.seq = word(m->base, w + SHM_MB_SEQ), .len = plain(m->base, w + SHM_MB_LEN),
                            .sum = plain(m->base, w + SHM_MB_SUM), .session = plain(m->base, w + SHM_MB_SESSION),
                            .ack = word(m->base, w + SHM_MB_ACK), .data = (uint8_t *)m->base + shm_slot_off(m->len, i)};
}

void shm_prepare(struct shm_map *m)
{
    void *b = m->base;
    atomic_store_explicit(word(b, SHM_W_READY), 0, memory_order_release);
    atomic_store_explicit(word(b, SHM_W_SERVER_CLOSED), 0, memory_order_relaxed);
    atomic_store_explicit(word(b, SHM_W_SESSION), 0, memory_order_relaxed);
    atomic_store_explicit(word(b, SHM_W_ACCEPTED), 0, memory_order_relaxed);
    for (int i = 0; i < 2; i++) {
        struct mailbox x = mailbox(m, i);
        atomic_store_explicit(x.seq, 0, memory_order_relaxed);
        atomic_store_explicit(x.ack, 0, memory_order_relaxed);
        *x.session = 0;
    }
    *plain(b, SHM_W_MAGIC) = SHM_MAGIC;
    *plain(b, SHM_W_VERSION) = SHM_VERSION;
    *plain(b, SHM_W_LINE) = SHM_LINE;
    uint64_t region = m->len, slot = shm_capacity(m);
    memcpy((uint8_t *)b + SHM_W_REGION, &region, 8);
    memcpy((uint8_t *)b + SHM_W_SLOT, &slot, 8);
    /* Everything above happens before a client that sees the epoch. */
    atomic_store_explicit(word(b, SHM_W_READY), fresh_id(0x5e5e), memory_order_release);
}

/* This end's connection once the session is agreed. */
static int attach(struct shm_map *m, int server, uint32_t session, uint64_t timeout_ns, volatile sig_atomic_t *stop,
                  struct tp_conn *c, char *err, size_t errlen)
{
    struct tp_shm *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return TP_FAILED;
    }
    s->out = mailbox(m, server);
    s->in = mailbox(m, !server);
    s->my_closed = word(m->base, server ? SHM_W_SERVER_CLOSED : SHM_W_CLIENT_CLOSED);
    s->peer_closed = word(m->base, server ? SHM_W_CLIENT_CLOSED : SHM_W_SERVER_CLOSED);
    s->slot = shm_capacity(m);
    s->session = session;
    s->timeout_ns = timeout_ns;
    s->stop = stop;
    cpu_set_t set;
    s->spin = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2 ? 0 : SPIN;
    *c = (struct tp_conn){.kind = TP_SHM, .rfd = -1, .wfd = -1, .shm = s};
    return TP_OK;
}

static void nap(void)
{
    struct timespec ts = {0, 100000};   /* the handshake is not timed: 0.1 ms between looks */
    nanosleep(&ts, NULL);
}

int shm_serve(struct shm_map *m, uint64_t timeout_ns, volatile sig_atomic_t *stop, struct tp_conn *c, char *err,
              size_t errlen)
{
    uint32_t session;
    while ((session = atomic_load_explicit(word(m->base, SHM_W_SESSION), memory_order_acquire)) == 0) {
        if (*stop) {
            errno = EINTR;
            snprintf(err, errlen, "waiting for a client in %s: interrupted", m->where);
            return TP_FAILED;
        }
        nap();
    }
    if (attach(m, 1, session, timeout_ns, stop, c, err, errlen))
        return TP_FAILED;
    atomic_store_explicit(word(m->base, SHM_W_CLIENT_CLOSED), 0, memory_order_relaxed);
    /* The mailboxes are as shm_prepare left them: nobody sends before this. */
    atomic_store_explicit(word(m->base, SHM_W_ACCEPTED), session, memory_order_release);
    return TP_OK;
}

int shm_connect(struct shm_map *m, uint64_t timeout_ns, volatile sig_atomic_t *stop, struct tp_conn *c, char *err,
                size_t errlen)
{
    uint32_t session = fresh_id(0xc11e), epoch = 0;
    uint64_t deadline = mono_ns() + timeout_ns;
    int header_seen = 0;
    for (;;) {
        uint32_t e = atomic_load_explicit(word(m->base, SHM_W_READY), memory_order_acquire);
        int ours = e && *plain(m->base, SHM_W_MAGIC) == SHM_MAGIC;
        if (ours && *plain(m->base, SHM_W_VERSION) != SHM_VERSION) {
            snprintf(err, errlen, "the server in %s speaks shm protocol version %u, this probe %u", m->where,
                     *plain(m->base, SHM_W_VERSION), SHM_VERSION);
            return TP_FAILED;
        }
        header_seen |= ours;
        if (ours && e != epoch) {
            epoch = e;
            atomic_store_explicit(word(m->base, SHM_W_SESSION), session, memory_order_release);
        }
        if (ours && atomic_load_explicit(word(m->base, SHM_W_ACCEPTED), memory_order_acquire) == session)
            break;
        if (*stop || mono_ns() > deadline) {
            errno = *stop ? EINTR : ETIMEDOUT;
            snprintf(err, errlen, "no rtvb-probe ipc --serve took the session in %s within the timeout (%s)",
                     m->where, header_seen ? "a server laid the region out but did not answer"
                                           : "the region holds no ready server");
            return TP_FAILED;
        }
        nap();
    }
    return attach(m, 0, session, timeout_ns, stop, c, err, errlen);
}

/* ------------------------------------------------------------- messages */

/* Poll until *w == want (equal) or != want; 0, or -1 with errno EINTR (a
 * stop), ECONNRESET (the peer closed its end), EAGAIN (the timeout). */
static int wait_word(struct tp_shm *s, _Atomic uint32_t *w, uint32_t want, int equal, uint32_t *got)
{
    uint64_t deadline = 0;
    for (unsigned long n = 0;; n++) {
        uint32_t v = atomic_load_explicit(w, memory_order_acquire);
        if ((v == want) == equal) {
            *got = v;
            return 0;
        }
        if (n < s->spin) {
            cpu_relax();
            continue;
        }
        sched_yield();
        if (n % 64)
            continue;
        if (*s->stop) {
            errno = EINTR;
            return -1;
        }
        if (atomic_load_explicit(s->peer_closed, memory_order_acquire)) {
            errno = ECONNRESET;
            return -1;
        }
        uint64_t now = mono_ns();
        if (!deadline)
            deadline = now + s->timeout_ns;
        else if (now > deadline) {
            errno = EAGAIN;
            return -1;
        }
    }
}

int shm_send(struct tp_conn *c, const void *buf, size_t len)
{
    struct tp_shm *s = c->shm;
    uint32_t v;
    if (len > s->slot) {
        errno = EMSGSIZE;
        return -1;
    }
    if (wait_word(s, s->out.ack, s->sent, 1, &v))
        return -1;
    memcpy(s->out.data, buf, len);
    *s->out.len = (uint32_t)len;
    *s->out.sum = shm_checksum(buf, len);
    *s->out.session = s->session;
    s->sent++;
    if (s->corrupt_after && s->sent == s->corrupt_after)
        s->out.data[len - 1] ^= 0x01;
    atomic_store_explicit(s->out.seq, s->sent, memory_order_release);
    return 0;
}

int shm_recv(struct tp_conn *c, void *buf, size_t len)
{
    struct tp_shm *s = c->shm;
    uint32_t seq;
    if (wait_word(s, s->in.seq, s->received, 0, &seq))
        return -1;
    if (seq != s->received + 1 || *s->in.session != s->session) {
        errno = EPROTO;
        return -1;
    }
    if (*s->in.len != len) {
        errno = EMSGSIZE;
        return -1;
    }
    memcpy(buf, s->in.data, len);
    uint32_t sum = *s->in.sum;
    s->received = seq;
    atomic_store_explicit(s->in.ack, seq, memory_order_release);
    s->last_sum_bad = shm_checksum(buf, len) != sum;
    return 0;
}

void shm_close(struct tp_conn *c)
{
    if (!c->shm)
        return;
    atomic_store_explicit(c->shm->my_closed, 1, memory_order_release);
    free(c->shm);
    c->shm = NULL;
}

void shm_set_timeout(struct tp_conn *c, uint64_t timeout_ns)
{
    c->shm->timeout_ns = timeout_ns;
}

void shm_corrupt_after(struct tp_conn *c, uint64_t n)
{
    c->shm->corrupt_after = n;
}

int shm_last_checksum_bad(const struct tp_conn *c)
{
    return c->kind == TP_SHM && c->shm && c->shm->last_sum_bad;
}
