/*
 * LMbench's method for the OS figures where rtvb-probe and LMbench disagree,
 * written here from the published descriptions (the LMbench papers and man
 * pages), so that bench/lmbench_compare.py can put both side by side on a
 * machine where LMbench itself is not installable (Debian does not ship it).
 *
 * Each subcommand prints one JSON line: {"test": ..., "value": V, "unit": U}
 * where V is the median of 11 repetitions (LMbench's TRIES), each repetition
 * an operation loop calibrated to last at least 10 ms.
 *
 *   select N        N descriptors of one regular file (dup), select() asks
 *                   whether they are writable, timeout 0, nfds = N (as
 *                   LMbench passes it: the descriptors are numbered from 4,
 *                   so only those below N are examined); then the same
 *                   descriptors with every one examined (variant _all).
 *   sig_catch       kill(self, SIGUSR1) with an empty handler, minus the
 *                   cost of kill(self, 0); then without the subtraction
 *                   (variant with_send).
 *   prot            a store to a read-only shared file mapping: SIGSEGV, an
 *                   empty handler that returns, the store faults again; the
 *                   cost per fault minus sig_catch's figure.
 *   pagefault SIZE  a read of one byte per page, in a random order, of a
 *                   fresh read-only shared mapping of a cached file, minus
 *                   the cost of replacing the mapping; per page.
 *   mmap SIZE       mmap (shared, read-write) of a cached file, a store
 *                   every 16 KiB over the first tenth of it, munmap.
 *   mmap_reread SIZE  sum the 64-bit words of a file mapped once (no faults
 *                   in the loop); MB/s.
 *   file_reread SIZE  read() a cached file in 64 KiB calls, summing 64-bit
 *                   words; MB/s.
 *   fs SIZE         create (creat + write + close) files of SIZE bytes in
 *                   directories of at most 100, then delete them all;
 *                   creations and deletions per second, two lines.
 *   fork            fork, the child exits, wait.
 *   exec PROGRAM    fork, the child execs PROGRAM, wait.
 *   sh PROGRAM      fork, the child runs /bin/sh -c PROGRAM, wait.
 *   tcp_bw          a child writes 64 KiB messages without pause on a
 *                   127.0.0.1 connection, this end reads them; socket
 *                   buffers requested at 1 MiB each; MB/s.
 *
 * Files live in the directory given by $TMPDIR (default /tmp).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIES 11
#define ENOUGH_NS 10000000ull

typedef void (*loop_fn)(uint64_t n);

static volatile uint64_t sink;
static const char *tmpdir = "/tmp";

static void die(const char *what)
{
    fprintf(stderr, "lmbench_method: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Grow n until one loop lasts ENOUGH_NS, then take TRIES repetitions and
 * return the median nanoseconds per operation. */
static double median_ns(loop_fn fn, uint64_t max_n)
{
    uint64_t n = 1, t;
    for (;;) {
        uint64_t t0 = now_ns();
        fn(n);
        t = now_ns() - t0;
        if (t >= ENOUGH_NS || (max_n && n >= max_n))
            break;
        uint64_t next = t ? n * ENOUGH_NS / t + n / 10 + 1 : n * 10;
        n = next > n * 10 ? n * 10 : next;
        if (max_n && n > max_n)
            n = max_n;
    }
    double v[TRIES];
    for (int i = 0; i < TRIES; i++) {
        uint64_t t0 = now_ns();
        fn(n);
        v[i] = (double)(now_ns() - t0) / (double)n;
    }
    qsort(v, TRIES, sizeof *v, cmp_double);
    return v[TRIES / 2];
}

static void print(const char *test, const char *variant, double value, const char *unit)
{
    printf("{\"test\": \"%s\", \"variant\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n", test, variant, value,
           unit);
    fflush(stdout);
}

/* A cached file of `bytes` in tmpdir, unlinked at once (the descriptor keeps it). */
static int cached_file(uint64_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/lmbench_method.XXXXXX", tmpdir);
    int fd = mkstemp(path);
    if (fd < 0)
        die("mkstemp");
    unlink(path);
    char buf[65536];
    memset(buf, 0x5a, sizeof buf);
    for (uint64_t done = 0; done < bytes;) {
        size_t want = bytes - done < sizeof buf ? (size_t)(bytes - done) : sizeof buf;
        ssize_t got = write(fd, buf, want);
        if (got <= 0)
            die("write");
        done += (uint64_t)got;
    }
    fsync(fd);
    return fd;
}

static uint64_t parse_size(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': return v << 10;
    case 'm': case 'M': return v << 20;
    case 'g': case 'G': return v << 30;
    default: return v;
    }
}

/* ---------------------------------------------------------------- select */

static fd_set select_set;
static int select_nfds;

static void loop_select(uint64_t n)
{
    struct timeval tv = {0, 0};
    for (uint64_t i = 0; i < n; i++) {
        fd_set s = select_set;
        select(select_nfds, NULL, &s, NULL, &tv);
    }
}

static void run_select(int count)
{
    int fd = cached_file(1);
    FD_ZERO(&select_set);
    for (int i = 0; i < count; i++) {
        int d = dup(fd);
        if (d < 0 || d >= FD_SETSIZE)
            die("dup");
        FD_SET(d, &select_set);
    }
    close(fd);
    char variant[32];
    select_nfds = count;
    snprintf(variant, sizeof variant, "%dfd", count);
    print("select", variant, median_ns(loop_select, 0) / 1e3, "us");
    /* The same descriptors, every one examined (nfds = highest + 1). */
    select_nfds = FD_SETSIZE;
    while (select_nfds > 0 && !FD_ISSET(select_nfds - 1, &select_set))
        select_nfds--;
    snprintf(variant, sizeof variant, "%dfd_all", count);
    print("select", variant, median_ns(loop_select, 0) / 1e3, "us");
}

/* --------------------------------------------------------------- signals */

static volatile uint64_t caught, catch_target;
static void on_usr1(int sig) { (void)sig; }

static void loop_send(uint64_t n)
{
    pid_t me = getpid();
    for (uint64_t i = 0; i < n; i++)
        kill(me, 0);
}

static void loop_catch(uint64_t n)
{
    pid_t me = getpid();
    for (uint64_t i = 0; i < n; i++)
        kill(me, SIGUSR1);
}

/* LMbench's figure, catch minus send; *with_send: the catch loop itself. */
static double sig_catch_ns(double *with_send)
{
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    double send = median_ns(loop_send, 0), both = median_ns(loop_catch, 0);
    if (with_send)
        *with_send = both;
    return both > send ? both - send : 0;
}

/* The protection fault: the handler returns, so the store faults again;
 * after the n-th fault the handler maps a writable anonymous page over the
 * read-only one, and the store completes. */
static char *prot_page;
static int prot_fd;
static size_t page_size;

static void on_segv(int sig)
{
    (void)sig;
    if (++caught >= catch_target &&
        mmap(prot_page, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
            MAP_FAILED)
        _exit(3);
}

static void loop_prot(uint64_t n)
{
    if (mmap(prot_page, page_size, PROT_READ, MAP_SHARED | MAP_FIXED, prot_fd, 0) == MAP_FAILED)
        die("mmap");
    caught = 0;
    catch_target = n;
    *(volatile char *)prot_page = 1;
}

static void run_prot(void)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    prot_fd = cached_file(page_size);
    prot_page = mmap(NULL, page_size, PROT_READ, MAP_SHARED, prot_fd, 0);
    if (prot_page == MAP_FAILED)
        die("mmap");
    struct sigaction sa = {.sa_handler = on_segv};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    double catch_cost = sig_catch_ns(NULL), fault = median_ns(loop_prot, 0);
    print("prot", "", (fault > catch_cost ? fault - catch_cost : 0) / 1e3, "us");
    print("prot", "with_signal", fault / 1e3, "us");
}

/* ------------------------------------------------------------ page fault */

static int pf_fd;
static size_t pf_bytes, pf_pages;
static size_t *pf_order;
static char *pf_map;

static void pf_remap(void)
{
    munmap(pf_map, pf_bytes);
    pf_map = mmap(NULL, pf_bytes, PROT_READ, MAP_SHARED, pf_fd, 0);
    if (pf_map == MAP_FAILED)
        die("mmap");
    msync(pf_map, pf_bytes, MS_INVALIDATE);
}

static void loop_pf_touch(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        unsigned s = 0;
        for (size_t i = 0; i < pf_pages; i++)
            s += (unsigned char)pf_map[pf_order[i]];
        sink += s;
        pf_remap();
    }
}

static void loop_pf_map_only(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++)
        pf_remap();
}

static void run_pagefault(uint64_t bytes)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    pf_bytes = (size_t)bytes;
    pf_pages = pf_bytes / page_size;
    pf_fd = cached_file(bytes);
    pf_order = malloc(pf_pages * sizeof *pf_order);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < pf_pages; i++)
        pf_order[i] = i * page_size;
    for (size_t i = pf_pages - 1; i > 0; i--) {   /* Fisher-Yates with xorshift */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % (i + 1)), t = pf_order[i];
        pf_order[i] = pf_order[j], pf_order[j] = t;
    }
    pf_map = mmap(NULL, pf_bytes, PROT_READ, MAP_SHARED, pf_fd, 0);
    double map = median_ns(loop_pf_map_only, 0), both = median_ns(loop_pf_touch, 0);
    print("pagefault", "file", (both - map) / (double)pf_pages / 1e3, "us");
}

/* ------------------------------------------------------------------ mmap */

static int mm_fd;
static size_t mm_bytes;

static void loop_mmap(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        char *p = mmap(NULL, mm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mm_fd, 0);
        if (p == MAP_FAILED)
            die("mmap");
        for (char *q = p; q < p + mm_bytes / 10; q += 16384)
            *q = (char)mm_bytes;
        munmap(p, mm_bytes);
    }
}

static void run_mmap(uint64_t bytes)
{
    mm_bytes = (size_t)bytes;
    mm_fd = cached_file(bytes);
    char variant[32];
    snprintf(variant, sizeof variant, "%llu", (unsigned long long)bytes);
    print("mmap", variant, median_ns(loop_mmap, 0) / 1e3, "us");
}

/* --------------------------------------------------------------- re-read */

static const uint64_t *rr_map;
static int rr_fd;
static size_t rr_bytes;
static uint64_t *rr_buf;

/* LMbench reads by summing machine words a kilobyte (128 words) at a time
 * in one long expression, whose evaluation order is the compiler's. */
#define W8(i) (p[i] + p[i + 1] + p[i + 2] + p[i + 3] + p[i + 4] + p[i + 5] + p[i + 6] + p[i + 7])
#define W64(i) (W8(i) + W8(i + 8) + W8(i + 16) + W8(i + 24) + W8(i + 32) + W8(i + 40) + W8(i + 48) + W8(i + 56))

static uint64_t sum_words(const uint64_t *p, size_t words)
{
    uint64_t sum = 0;
    for (const uint64_t *end = p + words; p + 128 <= end; p += 128)
        sum += W64(0) + W64(64);
    return sum;
}

static void loop_mmap_reread(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++)
        sink += sum_words(rr_map, rr_bytes / 8);
}

static void loop_file_reread(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        lseek(rr_fd, 0, SEEK_SET);
        for (size_t done = 0; done < rr_bytes;) {
            ssize_t got = read(rr_fd, rr_buf, 65536);
            if (got <= 0)
                die("read");
            sink += sum_words(rr_buf, (size_t)got / 8);
            done += (size_t)got;
        }
    }
}

static void run_reread(const char *test, uint64_t bytes)
{
    rr_bytes = (size_t)bytes;
    rr_fd = cached_file(bytes);
    rr_buf = malloc(65536);
    rr_map = mmap(NULL, rr_bytes, PROT_READ, MAP_SHARED, rr_fd, 0);
    if (rr_map == MAP_FAILED || !rr_buf)
        die("mmap");
    double ns = median_ns(strcmp(test, "mmap_reread") ? loop_file_reread : loop_mmap_reread, 0);
    print(test, "", (double)rr_bytes / ns * 1e3, "MB/s");
}

/* ------------------------------------------------------- create / delete */

/* The names of `count` files spread over directories of at most 100. */
static char **fs_names;
static char fs_root[4096];
static size_t fs_size;
static char *fs_data;
static uint64_t fs_count;

static void fs_setup(uint64_t count)
{
    snprintf(fs_root, sizeof fs_root, "%s/lmbench_fs.XXXXXX", tmpdir);
    if (!mkdtemp(fs_root))
        die("mkdtemp");
    fs_names = malloc(count * sizeof *fs_names);
    fs_count = count;
    for (uint64_t i = 0; i < count; i++) {
        char dir[4200], name[4300];
        snprintf(dir, sizeof dir, "%s/%llu", fs_root, (unsigned long long)(i / 100));
        if (i % 100 == 0 && mkdir(dir, 0700))
            die("mkdir");
        snprintf(name, sizeof name, "%s/%llu", dir, (unsigned long long)(i % 100));
        fs_names[i] = strdup(name);
    }
}

static void fs_teardown(void)
{
    for (uint64_t i = 0; i < fs_count; i += 100) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%llu", fs_root, (unsigned long long)(i / 100));
        rmdir(dir);
    }
    for (uint64_t i = 0; i < fs_count; i++)
        free(fs_names[i]);
    free(fs_names);
    rmdir(fs_root);
}

static void fs_create(void)
{
    for (uint64_t i = 0; i < fs_count; i++) {
        int fd = creat(fs_names[i], 0666);
        if (fd < 0)
            die("creat");
        if (fs_size && write(fd, fs_data, fs_size) != (ssize_t)fs_size)
            die("write");
        close(fd);
    }
}

static void fs_delete(void)
{
    for (uint64_t i = 0; i < fs_count; i++)
        unlink(fs_names[i]);
}

/* Creation and deletion are timed in separate batches of the same files,
 * so the timed loop cannot be the harness's: one batch is one repetition. */
static void run_fs(uint64_t bytes)
{
    fs_size = (size_t)bytes;
    fs_data = calloc(1, fs_size + 1);
    uint64_t count = 100;
    for (;;) {   /* a batch of creations lasting at least ENOUGH_NS */
        fs_setup(count);
        uint64_t t0 = now_ns();
        fs_create();
        uint64_t t = now_ns() - t0;
        fs_delete();
        fs_teardown();
        if (t >= ENOUGH_NS || count >= 100000)
            break;
        count *= 4;
    }
    double mk[TRIES], rm[TRIES];
    for (int i = 0; i < TRIES; i++) {
        fs_setup(count);
        uint64_t t0 = now_ns();
        fs_create();
        uint64_t t1 = now_ns();
        fs_delete();
        uint64_t t2 = now_ns();
        fs_teardown();
        mk[i] = (double)(t1 - t0) / (double)count;
        rm[i] = (double)(t2 - t1) / (double)count;
    }
    qsort(mk, TRIES, sizeof *mk, cmp_double);
    qsort(rm, TRIES, sizeof *rm, cmp_double);
    char variant[32];
    snprintf(variant, sizeof variant, "%llu", (unsigned long long)bytes);
    print("fs_create", variant, 1e9 / mk[TRIES / 2], "files/s");
    print("fs_delete", variant, 1e9 / rm[TRIES / 2], "files/s");
}

/* -------------------------------------------------------------- processes */

static char *const *proc_argv;

static void loop_fork(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (proc_argv)
                execv(proc_argv[0], proc_argv);
            _exit(proc_argv ? 127 : 0);
        }
        if (pid < 0)
            die("fork");
        waitpid(pid, NULL, 0);
    }
}

static void run_proc(const char *test, const char *program)
{
    char *exec_argv[] = {(char *)program, NULL};
    char *sh_argv[] = {"/bin/sh", "-c", (char *)program, NULL};
    proc_argv = !strcmp(test, "exec") ? exec_argv : !strcmp(test, "sh") ? sh_argv : NULL;
    print(test, program ? program : "", median_ns(loop_fork, 0) / 1e3, "us");
}

/* --------------------------------------------------------------- tcp bw */

#define BW_MSG 65536

static int bw_sock;
static char *bw_buf;

static void loop_tcp_read(uint64_t n)
{
    for (uint64_t k = 0; k < n; k++)
        for (size_t left = BW_MSG; left > 0;) {
            ssize_t got = read(bw_sock, bw_buf, BW_MSG);
            if (got <= 0)
                die("read");
            left -= (size_t)got > left ? left : (size_t)got;
        }
}

static void sock_buffers(int s)
{
    int size = 1 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

static void run_tcp_bw(int autotune)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int lsn = socket(AF_INET, SOCK_STREAM, 0);
    if (lsn < 0 || bind(lsn, (struct sockaddr *)&addr, sizeof addr) || listen(lsn, 1) ||
        getsockname(lsn, (struct sockaddr *)&addr, &len))
        die("listen");
    pid_t pid = fork();
    if (pid == 0) {
        int c = accept(lsn, NULL, NULL);
        char *buf = calloc(1, BW_MSG);
        if (!autotune)
            sock_buffers(c);
        while (write(c, buf, BW_MSG) == BW_MSG)
            ;
        _exit(0);
    }
    close(lsn);
    bw_sock = socket(AF_INET, SOCK_STREAM, 0);
    if (!autotune)
        sock_buffers(bw_sock);
    if (connect(bw_sock, (struct sockaddr *)&addr, sizeof addr))
        die("connect");
    bw_buf = malloc(BW_MSG);
    loop_tcp_read(16384);   /* warm up the connection: 1 GiB */
    double ns = median_ns(loop_tcp_read, 0);
    close(bw_sock);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    print("tcp_bw", autotune ? "autotuned" : "1MiB_buffers", (double)BW_MSG / ns * 1e3, "MB/s");
}

int main(int argc, char **argv)
{
    if (getenv("TMPDIR"))
        tmpdir = getenv("TMPDIR");
    if (argc < 2) {
        fprintf(stderr, "usage: lmbench_method TEST [ARG]  (tests: see the comment at the top of the source)\n");
        return 2;
    }
    const char *t = argv[1], *arg = argc > 2 ? argv[2] : NULL;
    if (!strcmp(t, "select") && arg)
        run_select(atoi(arg));
    else if (!strcmp(t, "sig_catch")) {
        double with_send, net = sig_catch_ns(&with_send);
        print("sig_catch", "", net / 1e3, "us");
        print("sig_catch", "with_send", with_send / 1e3, "us");
    }
    else if (!strcmp(t, "prot"))
        run_prot();
    else if (!strcmp(t, "pagefault") && arg)
        run_pagefault(parse_size(arg));
    else if (!strcmp(t, "mmap") && arg)
        run_mmap(parse_size(arg));
    else if ((!strcmp(t, "mmap_reread") || !strcmp(t, "file_reread")) && arg)
        run_reread(t, parse_size(arg));
    else if (!strcmp(t, "fs") && arg)
        run_fs(parse_size(arg));
    else if (!strcmp(t, "fork"))
        run_proc(t, NULL);
    else if ((!strcmp(t, "exec") || !strcmp(t, "sh")) && arg)
        run_proc(t, arg);
    else if (!strcmp(t, "tcp_bw"))
        run_tcp_bw(arg && !strcmp(arg, "autotune"));
    else {
        fprintf(stderr, "lmbench_method: unknown test or missing argument: %s\n", t);
        return 2;
    }
    return 0;
}
