/*
 * os tests of files, page faults and mappings. They work in the run's
 * scratch directory (--dir), on files written and synced beforehand so the
 * figures are those of the page cache, not of the storage device.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "os.h"
#include "probe.h"

#define REREAD_CALL (64 << 10)   /* bytes per read() of file_reread */

static volatile uint64_t sink;

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* Name of the file system the scratch directory is on: creating a file on
 * tmpfs and on ext4 are different operations, and a guest often has the
 * one where the host has the other. */
static const char *fs_type(const char *dir)
{
    static char hex[24];
    struct statfs s;
    if (statfs(dir, &s))
        return NULL;
    switch ((unsigned long)s.f_type) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs";
    case 0x858458F6: return "ramfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0xF2F52010: return "f2fs";
    case 0x794C7630: return "overlayfs";
    case 0x6969: return "nfs";
    case 0x01021997: return "9p";
    case 0x65735546: return "fuse";
    case 0x4D44: return "vfat";
    case 0x73717368: return "squashfs";
    default:
        snprintf(hex, sizeof hex, "0x%lx", (unsigned long)s.f_type);
        return hex;
    }
}

/* A file of `bytes` bytes in the scratch directory, written and synced.
 * Returns an O_RDWR descriptor, or -1 after reporting the failure. */
static int make_file(struct os_run *r, const char *test, const char *name, uint64_t bytes, char *path, size_t len)
{
    static char block[64 << 10];
    int fd = -1;
    errno = ENAMETOOLONG;
    if (snprintf(path, len, "%s/%s", r->workdir, name) < (int)len)
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        os_failed(r, test, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    memset(block, 0x5a, sizeof block);
    for (uint64_t off = 0; off < bytes;) {
        size_t n = bytes - off < sizeof block ? (size_t)(bytes - off) : sizeof block;
        ssize_t w = write(fd, block, n);
        if (w <= 0) {
            os_failed(r, test, "cannot write %s: %s", path, w < 0 ? strerror(errno) : "no space");
            close(fd);
            unlink(path);
            return -1;
        }
        off += (uint64_t)w;
    }
    /* Written back now, not during a later measurement. */
    fsync(fd);
    return fd;
}

/* --------------------------------------------------- stat, fstat, open */

struct path_arg {
    struct op_base b;
    const char *path;
    int fd;
};

static void op_stat(void *arg, uint64_t n)
{
    struct path_arg *a = arg;
    struct stat st;
    for (uint64_t i = 0; i < n; i++)
        if (stat(a->path, &st)) {
            op_fail(&a->b, "stat", errno);
            return;
        }
}

static void op_fstat(void *arg, uint64_t n)
{
    struct path_arg *a = arg;
    struct stat st;
    for (uint64_t i = 0; i < n; i++)
        if (fstat(a->fd, &st)) {
            op_fail(&a->b, "fstat", errno);
            return;
        }
}

static void op_open_close(void *arg, uint64_t n)
{
    struct path_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        int fd = open(a->path, O_RDONLY);
        if (fd < 0) {
            op_fail(&a->b, "open", errno);
            return;
        }
        close(fd);
    }
}

static void path_test(struct os_run *r, const char *test, timed_fn fn)
{
    char path[PATH_MAX];
    struct path_arg a = {.path = path, .fd = make_file(r, test, "stat-target", 1, path, sizeof path)};
    struct timing t;
    struct jw w;
    if (a.fd < 0)
        return;
    if (!os_time(r, test, fn, &a.b, NULL, &t)) {
        os_result_begin(&w, test);
        jw_str(&w, "fs_type", fs_type(r->workdir));
        os_result_end(&w, &t);
    }
    close(a.fd);
    unlink(path);
}

void os_test_stat(struct os_run *r) { path_test(r, "stat", op_stat); }
void os_test_fstat(struct os_run *r) { path_test(r, "fstat", op_fstat); }
void os_test_open_close(struct os_run *r) { path_test(r, "open_close", op_open_close); }

/* ------------------------------------------------------------ page fault */

/* Each operation writes one byte of a page of a fresh private mapping: one
 * minor fault that gives the page a frame (zero-filled for anonymous
 * memory, a copy of the cached page for a file). Writes, not reads: a read
 * fault on a file maps up to 16 cached neighbours at once (fault-around,
 * which madvise cannot turn off) and a read fault on anonymous memory maps
 * the shared zero page, so neither would fault exactly the pages touched.
 * Transparent huge pages are turned off on the region for the same reason.
 *
 * A third result is LMbench's definition, "file" with access "read": one
 * byte read per page of a shared read-only mapping of the cached file, the
 * pages in a random order. Fault-around then maps a block of neighbours per
 * fault, so the figure per page is that of a fraction of a fault
 * (faults_per_page says which fraction): what reading a mapped file costs
 * per page, not what one fault costs.
 *
 * A sample touches the pages of the region once; the region must then be
 * replaced (munmap + mmap) before the next sample can fault again. That
 * replacement happens inside the timed call, so it is timed separately
 * there and subtracted from each sample. ru_minflt before and after the
 * touching gives the faults per page actually taken. */
struct pf_arg {
    struct op_base b;
    int fd;                  /* -1: anonymous */
    int read;                /* read access through a shared mapping, in `order` */
    size_t *order;           /* read: page offsets, a random permutation */
    size_t bytes, page;
    char *map;
    long minflt_before;
    uint64_t faults, pages;
    double release;          /* the last call's replacement, ns per page */
    double release_sum;      /* over the samples taken */
    int release_n;
};

static double pf_aside(void *arg)
{
    struct pf_arg *a = arg;
    a->release_sum += a->release;
    a->release_n++;
    return a->release;
}

static char *pf_map(struct pf_arg *a)
{
    char *p = a->fd < 0 ? mmap(NULL, a->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
              : a->read ? mmap(NULL, a->bytes, PROT_READ, MAP_SHARED, a->fd, 0)
                        : mmap(NULL, a->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, a->fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, a->bytes, MADV_NOHUGEPAGE);
    return p;
}

static void op_pagefault(void *arg, uint64_t n)
{
    struct pf_arg *a = arg;
    if (!a->map || n > a->bytes / a->page) {
        op_fail(&a->b, "mmap of the region", a->map ? EINVAL : ENOMEM);
        return;
    }
    if (a->read) {
        char sum = 0;
        for (uint64_t i = 0; i < n; i++)
            sum += ((volatile char *)a->map)[a->order[i]];
        sink += (uint64_t)sum;
    } else {
        for (uint64_t i = 0; i < n; i++)
            ((volatile char *)a->map)[i * a->page] = 1;
    }

    uint64_t t0 = mono_ns();
    a->faults += (uint64_t)(minor_faults() - a->minflt_before);
    a->pages += n;
    munmap(a->map, a->bytes);
    a->map = pf_map(a);
    a->minflt_before = minor_faults();
    a->release = (double)(mono_ns() - t0) / (double)n;
}

/* Page offsets of the region in a random order (Fisher-Yates, xorshift:
 * the same order every run). */
static size_t *random_pages(size_t pages, size_t page)
{
    size_t *o = malloc(pages * sizeof *o);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    if (!o)
        return NULL;
    for (size_t i = 0; i < pages; i++)
        o[i] = i * page;
    for (size_t i = pages - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % (i + 1)), t = o[i];
        o[i] = o[j], o[j] = t;
    }
    return o;
}

static void pagefault_one(struct os_run *r, int fd, const char *backing, int read)
{
    struct pf_arg *a = calloc(1, sizeof *a);
    if (!a) {
        os_failed(r, "pagefault", "out of memory");
        return;
    }
    *a = (struct pf_arg){.fd = fd, .read = read, .bytes = (size_t)r->o->pagefault_bytes,
                         .page = (size_t)sysconf(_SC_PAGESIZE)};
    if (read && !(a->order = random_pages(a->bytes / a->page, a->page))) {
        os_failed(r, "pagefault", "out of memory");
        free(a);
        return;
    }
    a->map = pf_map(a);
    a->minflt_before = minor_faults();
    struct timing_opts opts = r->o->timing;
    opts.max_n = a->bytes / a->page;   /* one call faults each page of the region at most once */
    opts.aside = pf_aside;
    struct timing t;
    if (!os_time(r, "pagefault", op_pagefault, &a->b, &opts, &t)) {
        double release = a->release_n ? a->release_sum / a->release_n : 0.0;
        struct jw w;
        os_result_begin(&w, "pagefault");
        jw_str(&w, "backing", backing);
        jw_str(&w, "access", read ? "read" : "write");
        jw_str(&w, "order", read ? "random" : "sequential");
        jw_uint(&w, "region_bytes", a->bytes);
        jw_uint(&w, "page_bytes", a->page);
        jw_uint(&w, "pages_touched", a->pages);
        jw_uint(&w, "faults", a->faults);
        jw_double(&w, "faults_per_page", a->pages ? (double)a->faults / (double)a->pages : NAN);
        jw_double(&w, "release_ns_per_page", release);
        os_result_end(&w, &t);
    }
    if (a->map)
        munmap(a->map, a->bytes);
    free(a->order);
    free(a);
}

void os_test_pagefault(struct os_run *r)
{
    char path[PATH_MAX];
    pagefault_one(r, -1, "anon", 0);
    if (os_stop)
        return;
    int fd = make_file(r, "pagefault", "pagefault", r->o->pagefault_bytes, path, sizeof path);
    if (fd < 0)
        return;
    pagefault_one(r, fd, "file", 0);
    if (!os_stop)
        pagefault_one(r, fd, "file", 1);
    close(fd);
    unlink(path);
}

/* ------------------------------------------------------------------ mmap */

/* mmap of a cached file, a read of one byte per page, munmap: the cost of
 * making a file's pages visible, fault-around included (faults_per_map
 * says how many faults that took).
 *
 * The "sparse" result is LMbench's definition: a shared writable mapping,
 * one byte written every 16 KiB over the first tenth of it, munmap. It
 * touches a fortieth of the pages, so it is mostly the cost of the mapping
 * itself, and it grows with the size far more slowly than ours. */
#define MMAP_SPARSE_STRIDE (16u << 10)

struct mmap_arg {
    struct op_base b;
    int fd;
    int sparse;
    size_t bytes, page;
    uint64_t ops;
};

static void op_mmap_sparse(void *arg, uint64_t n)
{
    struct mmap_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        volatile char *p = mmap(NULL, a->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
        if (p == MAP_FAILED) {
            op_fail(&a->b, "mmap", errno);
            return;
        }
        for (size_t off = 0; off < a->bytes / 10; off += MMAP_SPARSE_STRIDE)
            p[off] = 0x5a;   /* the byte the file holds: the data never changes */
        munmap((void *)p, a->bytes);
        a->ops++;
    }
}

static void op_mmap(void *arg, uint64_t n)
{
    struct mmap_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        const volatile char *p = mmap(NULL, a->bytes, PROT_READ, MAP_SHARED, a->fd, 0);
        if (p == MAP_FAILED) {
            op_fail(&a->b, "mmap", errno);
            return;
        }
        char s = 0;
        for (size_t off = 0; off < a->bytes; off += a->page)
            s += p[off];
        sink += (uint64_t)s;
        munmap((void *)p, a->bytes);
        a->ops++;
    }
}

void os_test_mmap(struct os_run *r)
{
    const struct os_opts *o = r->o;
    char path[PATH_MAX];
    uint64_t largest = 0;
    for (int i = 0; i < o->nmmap; i++)
        if (o->mmap_sizes[i] > largest)
            largest = o->mmap_sizes[i];
    int fd = make_file(r, "mmap", "mmap", largest, path, sizeof path);
    if (fd < 0)
        return;
    for (int v = 0; v < 2 * o->nmmap && !os_stop; v++) {
        struct mmap_arg a = {.fd = fd, .sparse = v % 2, .bytes = (size_t)o->mmap_sizes[v / 2],
                             .page = (size_t)sysconf(_SC_PAGESIZE)};
        struct timing t;
        long f0 = minor_faults();
        if (os_time(r, "mmap", a.sparse ? op_mmap_sparse : op_mmap, &a.b, NULL, &t))
            continue;
        long faults = minor_faults() - f0;
        struct jw w;
        os_result_begin(&w, "mmap");
        jw_uint(&w, "size_bytes", a.bytes);
        jw_str(&w, "touch", a.sparse ? "sparse" : "every page");
        jw_uint(&w, "pages", (a.bytes + a.page - 1) / a.page);
        jw_double(&w, "faults_per_map", a.ops ? (double)faults / (double)a.ops : NAN);
        jw_str(&w, "fs_type", fs_type(r->workdir));
        os_result_end(&w, &t);
    }
    close(fd);
    unlink(path);
}

/* -------------------------------------------------- file create / delete */

/* One operation: create a new file, write its size, close it, unlink it.
 * Names never repeat within a run, so no operation finds the dentry of a
 * previous one. */
struct fcd_arg {
    struct op_base b;
    const char *dir;
    const char *data;
    size_t bytes;
    uint64_t next;
};

static void op_file_create_delete(void *arg, uint64_t n)
{
    struct fcd_arg *a = arg;
    char path[PATH_MAX];
    for (uint64_t i = 0; i < n; i++) {
        int fd = -1;
        errno = ENAMETOOLONG;
        if (snprintf(path, sizeof path, "%s/f%llx", a->dir, (unsigned long long)a->next++) < (int)sizeof path)
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            op_fail(&a->b, "create", errno);
            return;
        }
        if (a->bytes && write(fd, a->data, a->bytes) != (ssize_t)a->bytes) {
            op_fail(&a->b, "write", errno ? errno : ENOSPC);
            close(fd);
            unlink(path);
            return;
        }
        close(fd);
        if (unlink(path)) {
            op_fail(&a->b, "unlink", errno);
            return;
        }
    }
}

/* LMbench's definition: creation and deletion as separate rates, each
 * measured over a batch. A call creates n files (create, write, close) in
 * fresh directories of at most 100 files each, then deletes them all. The
 * harness times the whole call; its parts are timed inside it, and all but
 * the subject (the creations, or in a second measurement the deletions) is
 * subtracted sample by sample, so each figure has its own convergence.
 * Unlike one file at a time, a batch finds a directory holding up to 100
 * other names and cannot reuse the inode and the directory entry just
 * freed. */
#define FILES_PER_DIR 100

struct fbatch_arg {
    struct op_base b;
    const char *dir;
    const char *data;
    size_t bytes;
    int subject_delete;      /* the figure is the deletions, not the creations */
    uint64_t batch;
    double other;            /* the last call: ns per file of all but the subject */
};

static double fbatch_aside(void *arg)
{
    return ((struct fbatch_arg *)arg)->other;
}

static int batch_path(char *path, size_t len, const struct fbatch_arg *a, uint64_t file, int level)
{
    int w = level == 0 ? snprintf(path, len, "%s/b%llx", a->dir, (unsigned long long)a->batch)
          : level == 1 ? snprintf(path, len, "%s/b%llx/%llx", a->dir, (unsigned long long)a->batch,
                                  (unsigned long long)(file / FILES_PER_DIR))
                       : snprintf(path, len, "%s/b%llx/%llx/%llu", a->dir, (unsigned long long)a->batch,
                                  (unsigned long long)(file / FILES_PER_DIR),
                                  (unsigned long long)(file % FILES_PER_DIR));
    return w > 0 && w < (int)len ? 0 : -1;
}

/* mkdir (make) or rmdir the batch's directories. */
static int batch_dirs(struct fbatch_arg *a, uint64_t n, int make)
{
    char path[PATH_MAX];
    uint64_t dirs = (n + FILES_PER_DIR - 1) / FILES_PER_DIR;
    if (make && (batch_path(path, sizeof path, a, 0, 0) || mkdir(path, 0700)))
        return -1;
    for (uint64_t d = 0; d < dirs; d++) {
        if (batch_path(path, sizeof path, a, d * FILES_PER_DIR, 1))
            return -1;
        if (make ? mkdir(path, 0700) : rmdir(path))
            return -1;
    }
    return make ? 0 : (batch_path(path, sizeof path, a, 0, 0) ? -1 : rmdir(path));
}

static void op_file_batch(void *arg, uint64_t n)
{
    struct fbatch_arg *a = arg;
    char path[PATH_MAX];
    uint64_t t0 = mono_ns();
    a->batch++;
    if (batch_dirs(a, n, 1)) {
        op_fail(&a->b, "mkdir", errno);
        return;
    }
    uint64_t t1 = mono_ns();
    for (uint64_t i = 0; i < n; i++) {
        int fd = batch_path(path, sizeof path, a, i, 2) ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || (a->bytes && write(fd, a->data, a->bytes) != (ssize_t)a->bytes)) {
            op_fail(&a->b, fd < 0 ? "create" : "write", errno ? errno : ENOSPC);
            if (fd >= 0)
                close(fd);
            return;
        }
        close(fd);
    }
    uint64_t t2 = mono_ns();
    for (uint64_t i = 0; i < n; i++)
        if (batch_path(path, sizeof path, a, i, 2) || unlink(path)) {
            op_fail(&a->b, "unlink", errno);
            return;
        }
    uint64_t t3 = mono_ns();
    if (batch_dirs(a, n, 0)) {
        op_fail(&a->b, "rmdir", errno);
        return;
    }
    uint64_t t4 = mono_ns();
    uint64_t subject = a->subject_delete ? t3 - t2 : t2 - t1;
    a->other = (double)(t4 - t0 - subject) / (double)n;
}

static void batch_result(struct os_run *r, struct timing *t, const char *op, size_t bytes)
{
    struct jw w;
    os_result_begin(&w, "file_create_delete");
    jw_uint(&w, "size_bytes", bytes);
    jw_str(&w, "op", op);
    jw_int(&w, "files_per_dir", FILES_PER_DIR);
    jw_uint(&w, "files_per_batch", t->n_per_sample);
    jw_str(&w, "fs_type", fs_type(r->workdir));
    jw_double(&w, "files_per_s", t->ns_per_op > 0 ? 1e9 / t->ns_per_op : NAN);
    os_result_end(&w, t);
}

static void file_batch(struct os_run *r, const char *data, size_t bytes)
{
    struct fbatch_arg a = {.dir = r->workdir, .data = data, .bytes = bytes};
    struct timing_opts opts = r->o->timing;
    opts.aside = fbatch_aside;
    for (int del = 0; del < 2 && !os_stop; del++) {
        struct timing t;
        a.subject_delete = del;
        if (os_time(r, "file_create_delete", op_file_batch, &a.b, &opts, &t))
            break;
        batch_result(r, &t, del ? "delete" : "create", bytes);
    }
}

void os_test_file_create_delete(struct os_run *r)
{
    const struct os_opts *o = r->o;
    uint64_t largest = 0, next = 0;
    for (int i = 0; i < o->nfile; i++)
        if (o->file_sizes[i] > largest)
            largest = o->file_sizes[i];
    char *data = malloc(largest ? (size_t)largest : 1);
    if (!data) {
        os_failed(r, "file_create_delete", "out of memory");
        return;
    }
    memset(data, 0x5a, largest ? (size_t)largest : 1);
    for (int v = 0; v < o->nfile && !os_stop; v++) {
        struct fcd_arg a = {.dir = r->workdir, .data = data, .bytes = (size_t)o->file_sizes[v], .next = next};
        struct timing t;
        struct jw w;
        int rc = os_time(r, "file_create_delete", op_file_create_delete, &a.b, NULL, &t);
        next = a.next;
        if (rc)
            continue;
        os_result_begin(&w, "file_create_delete");
        jw_uint(&w, "size_bytes", a.bytes);
        jw_str(&w, "op", "create+delete");
        jw_str(&w, "fs_type", fs_type(r->workdir));
        jw_double(&w, "files_per_s", t.ns_per_op > 0 ? 1e9 / t.ns_per_op : NAN);
        os_result_end(&w, &t);
        if (!os_stop)
            file_batch(r, data, a.bytes);
    }
    free(data);
}

/* --------------------------------------------------------------- re-read */

/* Read bandwidth of a cached file, each byte read by the program: with
 * read() in 64 KiB calls into one buffer that is then summed, and through
 * a fresh mapping (mmap, sum, munmap) per pass. mmap_reread has a second
 * result, LMbench's definition (mapping "once"): the file is mapped and its
 * pages faulted in before timing, and a pass only sums them, so it is a
 * memory read through the page cache, without the faults and the unmapping
 * that a program reading a file through mmap pays.
 *
 * Each test also has an "open2close" result, LMbench's other definition:
 * a pass opens the file by name, reads it (read() to the end; or mmap,
 * sum, munmap) and closes it, so the path lookup, the open file's set-up
 * and the close are part of every pass, as for a program that reads a
 * whole file each time it needs it. */
struct reread_arg {
    struct op_base b;
    int fd;
    size_t bytes;
    char *buf;
    const char *map;         /* mapping "once": the mapping every pass sums */
    const char *path;        /* open2close: the file to open every pass */
    int map_pass;            /* open2close: mmap the file (mmap_reread), else read() it */
};

static void op_file_reread(void *arg, uint64_t n)
{
    struct reread_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = 0;
        for (size_t off = 0; off < a->bytes;) {
            size_t want = a->bytes - off < REREAD_CALL ? a->bytes - off : REREAD_CALL;
            ssize_t got = pread(a->fd, a->buf, want, (off_t)off);
            if (got <= 0) {
                op_fail(&a->b, "read", got < 0 ? errno : EIO);
                return;
            }
            s += os_sum(a->buf, (size_t)got);
            off += (size_t)got;
        }
        sink += s;
    }
}

static void op_mmap_reread(void *arg, uint64_t n)
{
    struct reread_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        void *p = mmap(NULL, a->bytes, PROT_READ, MAP_SHARED, a->fd, 0);
        if (p == MAP_FAILED) {
            op_fail(&a->b, "mmap", errno);
            return;
        }
        sink += os_sum(p, a->bytes);
        munmap(p, a->bytes);
    }
}

static void op_mapped_reread(void *arg, uint64_t n)
{
    struct reread_arg *a = arg;
    for (uint64_t i = 0; i < n; i++)
        sink += os_sum(a->map, a->bytes);
}

/* One open2close pass over the open file fd: read() to the end of the
 * file, or mmap, sum, munmap. Returns the sum; a failure is recorded. */
static uint64_t open2close_pass(struct reread_arg *a, int fd)
{
    uint64_t s = 0;
    if (a->map_pass) {
        void *p = mmap(NULL, a->bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            op_fail(&a->b, "mmap", errno);
            return 0;
        }
        s = os_sum(p, a->bytes);
        munmap(p, a->bytes);
        return s;
    }
    size_t total = 0;
    ssize_t got;
    while ((got = read(fd, a->buf, REREAD_CALL)) > 0) {
        s += os_sum(a->buf, (size_t)got);
        total += (size_t)got;
    }
    if (got < 0 || total != a->bytes)
        op_fail(&a->b, "read", got < 0 ? errno : EIO);
    return s;
}

static void op_open2close(void *arg, uint64_t n)
{
    struct reread_arg *a = arg;
    for (uint64_t i = 0; i < n && !a->b.err; i++) {
        int fd = open(a->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            op_fail(&a->b, "open", errno);
            return;
        }
        sink += open2close_pass(a, fd);
        close(fd);
    }
}

/* `scope` (file_reread) or `mapping` (mmap_reread): which definition. */
static void reread_result(struct os_run *r, const char *test, timed_fn fn, struct reread_arg *a,
                          const char *key, const char *variant)
{
    struct timing t;
    struct jw w;
    if (os_time(r, test, fn, &a->b, NULL, &t))
        return;
    os_result_begin(&w, test);
    jw_uint(&w, "size_bytes", a->bytes);
    jw_str(&w, key, variant);
    jw_str(&w, "fs_type", fs_type(r->workdir));
    jw_double(&w, "bandwidth_bps", t.ns_per_op > 0 ? (double)a->bytes * 1e9 / t.ns_per_op : NAN);
    os_result_end(&w, &t);
}

static void reread_test(struct os_run *r, const char *test, timed_fn fn)
{
    char path[PATH_MAX];
    struct reread_arg a = {.bytes = (size_t)r->o->reread_bytes, .buf = malloc(REREAD_CALL)};
    a.fd = a.buf ? make_file(r, test, "reread", a.bytes, path, sizeof path) : -1;
    a.path = path;
    if (a.fd >= 0) {
        int mapped = fn == op_mmap_reread;
        reread_result(r, test, fn, &a, mapped ? "mapping" : "scope", mapped ? "per pass" : "io_only");
        void *p = mapped && !os_stop ? mmap(NULL, a.bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, a.fd, 0) : NULL;
        if (p == MAP_FAILED) {
            os_failed(r, test, "mmap: %s", strerror(errno));
        } else if (p) {
            a.map = p;
            reread_result(r, test, op_mapped_reread, &a, "mapping", "once");
            munmap(p, a.bytes);
        }
        a.map_pass = mapped;
        if (!os_stop)
            reread_result(r, test, op_open2close, &a, mapped ? "mapping" : "scope", "open2close");
        close(a.fd);
        unlink(path);
    } else if (!a.buf) {
        os_failed(r, test, "out of memory");
    }
    free(a.buf);
}

void os_test_file_reread(struct os_run *r) { reread_test(r, "file_reread", op_file_reread); }
void os_test_mmap_reread(struct os_run *r) { reread_test(r, "mmap_reread", op_mmap_reread); }
