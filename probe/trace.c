/*
 * trace: kernel trace capture around latency breaches (see trace.h).
 *
 * Decisions:
 *  - A tracefs instance of our own (instances/rtvb-probe-<pid>): the user's
 *    top-level buffer, tracer and events are never touched, and two probes
 *    never share a buffer. An instance left by a probe that was killed is
 *    removed by the next one.
 *  - The instance's clock is "local" (the CPU's sched_clock), the cheapest
 *    to read on every event: with "mono" (CLOCK_MONOTONIC) every event cost
 *    more, about 0.3 us of added median latency on an x86 guest. The breach
 *    marker, written right after the thread read CLOCK_MONOTONIC, gives the
 *    offset between the two, so the host still places the deadline and the
 *    wake-up among the events to the microsecond.
 *  - Only events, no function tracer: a few tracepoints cost a little per
 *    event, where function tracing would slow the kernel paths we measure.
 *  - On a breach the measuring thread only writes "0" to tracing_on (one
 *    write); reading and printing the buffer, megabytes of text, is done by
 *    the main thread, which runs SCHED_OTHER and so never delays a
 *    measuring thread. Breaches while a save is in progress are counted, not
 *    traced.
 */
#include "trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonw_fd.h"
#include "probe.h"

#define INSTANCE_PREFIX TRACEFS_INSTANCE_PREFIX
#define BUFFER_KB "1024"
#define MAX_TRACE_CPUS 1024
#define MAX_EVENTS 16
#define MAX_LINES_PER_RECORD 6000
#define MAX_TEXT_PER_RECORD (3u << 20)   /* under the host's 4 MiB line limit */
#define MAX_TASKS 64

/* The event set: what can hold a CPU between a timer's deadline and the
 * woken thread running. Groups whose members differ between architectures
 * (ipi, irq_vectors) are enabled whole. Every event on the wake-up path,
 * before the thread reads the clock, adds to every latency measured, so the
 * local timer interrupt's own entry and exit are left out: the hrtimer
 * expiry entry and exit in hard interrupt context mark that interrupt. */
static const char *const wanted_events[] = {
    "sched:sched_switch", "sched:sched_wakeup",
    "irq:irq_handler_entry", "irq:irq_handler_exit", "irq:softirq_entry", "irq:softirq_exit",
    "timer:hrtimer_expire_entry", "timer:hrtimer_expire_exit",
    "ipi:*", "irq_vectors:*", "!irq_vectors:local_timer_entry", "!irq_vectors:local_timer_exit",
};

enum { OFF, ARMED, SAVING, SPENT };

struct breach {
    int cpu;
    pid_t tid;
    uint64_t cycle, deadline_ns, wake_ns, origin_ns;
};

static struct {
    struct trace_options opt;
    char dir[512];
    int cpus[MAX_TRACE_CPUS];
    int ncpus;
    int marker_fd, on_fd;
    const char *events[MAX_EVENTS];
    int nevents;
    unsigned saved;
    atomic_int state;
    atomic_int pending;        /* a breach stopped the buffer; main thread saves it */
    _Atomic uint64_t armed_ns; /* when the buffer last started recording */
    struct breach b;           /* written before `pending` is released */
    /* Steal time per traced CPU at the last poll: the hypervisor's share
     * around a breach is the rise from the poll before it to the save. */
    uint64_t *steal_ticks;
    uint64_t steal_at_ns;
} T = {.marker_fd = -1, .on_fd = -1};

static int read_steal(uint64_t *out);

int tracefs_write(const char *dir, const char *name, const char *text, int flags)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
    if (fd < 0)
        return errno;
    ssize_t n = write(fd, text, strlen(text));
    int err = n < 0 ? errno : 0;
    close(fd);
    return err;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The tracefs mount with instances, mounting it at its usual place when it
 * is not mounted (as tracing tools do); NULL with the reason in why. */
const char *tracefs_root(char *why, size_t why_len)
{
    static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
    char path[128];
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
        snprintf(path, sizeof path, "%s/instances", roots[i]);
        if (is_dir(path))
            return roots[i];
    }
    if (!is_dir("/sys/kernel/tracing")) {
        snprintf(why, why_len, "this kernel has no tracefs (no /sys/kernel/tracing): it was built without "
                 "CONFIG_FTRACE");
        return NULL;
    }
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
        int e = errno;
        snprintf(why, why_len, "tracefs is not mounted at /sys/kernel/tracing and mounting it failed (%s): "
                 "run as root or mount it (mount -t tracefs nodev /sys/kernel/tracing)", strerror(e));
        return NULL;
    }
    if (is_dir("/sys/kernel/tracing/instances"))
        return "/sys/kernel/tracing";
    snprintf(why, why_len, "tracefs at /sys/kernel/tracing has no instances directory (kernel too old)");
    return NULL;
}

/* Instances of probes that no longer run: a probe killed with SIGKILL cannot
 * remove its own. */
void tracefs_remove_stale(const char *root)
{
    char path[512];
    snprintf(path, sizeof path, "%s/instances", root);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)))
            continue;
        char *end;
        long pid = strtol(e->d_name + strlen(INSTANCE_PREFIX), &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            char inst[800];
            snprintf(inst, sizeof inst, "%s/%s", path, e->d_name);
            rmdir(inst);
        }
    }
    closedir(d);
}

/* tracing_cpumask: hexadecimal in comma-separated 32-bit groups, highest first. */
static void cpumask_text(const int *cpus, int n, char *out, size_t cap)
{
    int top = 0;
    for (int i = 0; i < n; i++)
        if (cpus[i] > top)
            top = cpus[i];
    int groups = top / 32 + 1;
    size_t len = 0;
    out[0] = 0;
    for (int g = groups - 1; g >= 0 && len + 10 < cap; g--) {
        uint32_t bits = 0;
        for (int i = 0; i < n; i++)
            if (cpus[i] / 32 == g)
                bits |= 1u << (cpus[i] % 32);
        len += (size_t)snprintf(out + len, cap - len, g ? "%08x," : "%08x", bits);
    }
}

static int open_in(const char *name)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", T.dir, name);
    return open(path, O_WRONLY | O_CLOEXEC);
}

static void remove_instance(void)
{
    if (T.on_fd >= 0) {
        (void)!write(T.on_fd, "0", 1);
        close(T.on_fd);
    }
    if (T.marker_fd >= 0)
        close(T.marker_fd);
    T.on_fd = T.marker_fd = -1;
    if (T.dir[0]) {
        tracefs_write(T.dir, "set_event", "", O_TRUNC);
        rmdir(T.dir);
        T.dir[0] = 0;
    }
}

static int fail(char *why, size_t why_len, const char *what, int err)
{
    snprintf(why, why_len, "%s failed (%s)", what, strerror(err));
    remove_instance();
    return -1;
}

int trace_setup(const struct trace_options *o, const int *cpus, int ncpus, char *why, size_t why_len)
{
    T.opt = *o;
    const char *root = tracefs_root(why, why_len);
    if (!root)
        return -1;
    tracefs_remove_stale(root);
    snprintf(T.dir, sizeof T.dir, "%s/instances/%s%d", root, INSTANCE_PREFIX, (int)getpid());
    if (mkdir(T.dir, 0700) != 0) {
        int e = errno;
        T.dir[0] = 0;
        snprintf(why, why_len, "creating a tracefs instance in %s/instances failed (%s)%s", root, strerror(e),
                 e == EACCES || e == EPERM ? ": run as root" : "");
        return -1;
    }
    int err;
    if ((err = tracefs_write(T.dir, "trace_clock", "local", 0)))
        return fail(why, why_len, "selecting the tracing clock \"local\"", err);
    if ((err = tracefs_write(T.dir, "buffer_size_kb", BUFFER_KB, 0)))
        return fail(why, why_len, "sizing the trace buffer", err);
    char mask[MAX_TRACE_CPUS / 4 + MAX_TRACE_CPUS / 32 + 2];
    cpumask_text(cpus, ncpus, mask, sizeof mask);
    if ((err = tracefs_write(T.dir, "tracing_cpumask", mask, 0)))
        return fail(why, why_len, "limiting tracing to the measured CPUs", err);
    /* One event per write: a kernel without one of them refuses only it. */
    for (size_t i = 0; i < sizeof wanted_events / sizeof *wanted_events && T.nevents < MAX_EVENTS; i++)
        if (tracefs_write(T.dir, "set_event", wanted_events[i], O_APPEND) == 0)
            T.events[T.nevents++] = wanted_events[i];
    if (T.nevents == 0)
        return fail(why, why_len, "enabling the scheduler, interrupt and timer events", EINVAL);
    T.marker_fd = open_in("trace_marker");
    T.on_fd = open_in("tracing_on");
    if (T.marker_fd < 0 || T.on_fd < 0)
        return fail(why, why_len, "opening trace_marker and tracing_on", errno);
    T.ncpus = ncpus < MAX_TRACE_CPUS ? ncpus : MAX_TRACE_CPUS;
    memcpy(T.cpus, cpus, (size_t)T.ncpus * sizeof *cpus);
    T.steal_ticks = calloc((size_t)T.ncpus, sizeof *T.steal_ticks);
    if (!T.steal_ticks)
        return fail(why, why_len, "allocating", ENOMEM);
    if (read_steal(T.steal_ticks) == 0)
        T.steal_at_ns = mono_ns();
    if (write(T.on_fd, "1", 1) != 1)
        return fail(why, why_len, "starting the trace buffer", errno);
    atomic_store(&T.armed_ns, mono_ns());
    atomic_store(&T.state, ARMED);
    return 0;
}

int trace_active(void)
{
    return atomic_load(&T.state) != OFF;
}

void trace_write_events(struct jw *w, const char *key)
{
    jw_arr(w, key);
    for (int i = 0; i < T.nevents; i++)
        jw_str(w, NULL, T.events[i]);
    jw_end(w);
}

/* Decimal without stdio: this runs once per cycle on the measuring thread. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* The wake-up time goes with every marker: each one then tells the offset
 * between the trace's clock and CLOCK_MONOTONIC (trace_clock_offset). */
static void write_marker(const char *word, uint64_t cycle, uint64_t latency_ns, uint64_t wake_ns)
{
    char buf[128], *p = buf;
    size_t n = strlen(word);
    memcpy(p, word, n);
    p += n;
    memcpy(p, " cycle=", 7);
    p = put_u64(p + 7, cycle);
    memcpy(p, " latency_ns=", 12);
    p = put_u64(p + 12, latency_ns);
    memcpy(p, " wake_ns=", 9);
    p = put_u64(p + 9, wake_ns);
    (void)!write(T.marker_fd, buf, (size_t)(p - buf));
}

void trace_mark(uint64_t cycle, uint64_t latency_ns, uint64_t wake_ns)
{
    if (atomic_load_explicit(&T.state, memory_order_relaxed) == ARMED)
        write_marker("rtvb-probe wake", cycle, latency_ns, wake_ns);
}

int trace_breach(int cpu, pid_t tid, uint64_t cycle, uint64_t deadline_ns, uint64_t wake_ns, uint64_t origin_ns)
{
    /* The saved trace must reach back `history` before the deadline: a
     * breach sooner after the buffer (re)started would come with too little
     * of what led to it to be explained. */
    if (deadline_ns < atomic_load_explicit(&T.armed_ns, memory_order_relaxed) + T.opt.history_ns)
        return 0;
    int armed = ARMED;
    if (!atomic_compare_exchange_strong(&T.state, &armed, SAVING))
        return 0;
    write_marker("rtvb-probe breach", cycle, wake_ns - deadline_ns, wake_ns);
    (void)!write(T.on_fd, "0", 1);
    T.b = (struct breach){.cpu = cpu, .tid = tid, .cycle = cycle, .deadline_ns = deadline_ns, .wake_ns = wake_ns,
                         .origin_ns = origin_ns};
    atomic_store_explicit(&T.pending, 1, memory_order_release);
    return 1;
}

unsigned trace_saved(void)
{
    return T.saved;
}

/* Per-CPU steal ticks from /proc/stat into out[] (for the traced CPUs). */
static int read_steal(uint64_t *out)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        uint64_t cpu, v[8];
        const char *p = line + 3;
        int k = 0;
        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9' || scan_u64(&p, &cpu) || cpu > INT32_MAX)
            continue;
        while (k < 8 && scan_u64(&p, &v[k]) == 0)
            k++;
        if (k < 8)
            continue;
        for (int i = 0; i < T.ncpus; i++)
            if (T.cpus[i] == (int)cpu)
                out[i] = v[7];
    }
    fclose(f);
    return 0;
}

/* The whole text of a per-CPU trace file (the buffer is stopped, so it does
 * not change while it is read). */
static char *read_all(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 65536 + 1 > cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

/* The timestamp of a trace line ("comm-pid [cpu] flags secs.usecs: ...")
 * in ns, or 0 for a header or a line it cannot read. */
static uint64_t line_time_ns(const char *line, const char *end)
{
    const char *p = line;
    /* The CPU column is the first "[digits]" followed by a space: a task
     * name may hold anything, but the columns after it are fixed. */
    for (;;) {
        p = memchr(p, '[', (size_t)(end - p));
        if (!p)
            return 0;
        const char *q = p + 1;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
        if (q > p + 1 && q + 1 < end && q[0] == ']' && q[1] == ' ') {
            p = q + 2;
            break;
        }
        p++;
    }
    while (p < end && *p == ' ')
        p++;
    while (p < end && *p != ' ')
        p++;                           /* the flags column */
    while (p < end && *p == ' ')
        p++;
    uint64_t secs = 0, frac = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9')
        secs = secs * 10 + (uint64_t)(*p++ - '0');
    if (p >= end || *p++ != '.')
        return 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 9) {
        frac = frac * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (p >= end || *p != ':' || digits == 0)
        return 0;
    while (digits++ < 9)
        frac *= 10;
    return secs * 1000000000ull + frac;
}

struct span {
    const char *start;
    size_t len;
};

/* The lines of one CPU's buffer from `from_ns` on. When there are more than
 * `max_lines`, the oldest half and the newest half are kept: the first lines
 * say what held the CPU at the deadline, the last ones how the wake-up
 * finally came; *omitted_at is then the index where lines were left out and
 * *dropped how many. Returns the count kept, NULL spans on no memory. */
static struct span *select_lines(char *text, size_t len, uint64_t from_ns, size_t max_lines, size_t *kept,
                                 size_t *omitted_at, size_t *dropped)
{
    size_t n = 0, cap = 4096;
    struct span *all = malloc(cap * sizeof *all);
    *kept = *omitted_at = *dropped = 0;
    char *p = text, *end = text + len;
    while (all && p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        if (*p != '#') {
            uint64_t t = line_time_ns(p, le);
            if (t && t >= from_ns) {
                if (n == cap) {
                    struct span *grown = realloc(all, 2 * cap * sizeof *all);
                    if (!grown) {
                        free(all);
                        return NULL;
                    }
                    all = grown;
                    cap *= 2;
                }
                all[n++] = (struct span){p, (size_t)(le - p)};
            }
        }
        p = le + 1;
    }
    if (!all)
        return NULL;
    if (n > max_lines) {
        size_t head = max_lines / 2, tail = max_lines - head;
        memmove(all + head, all + n - tail, tail * sizeof *all);
        *omitted_at = head;
        *dropped = n - max_lines;
        n = max_lines;
    }
    *kept = n;
    return all;
}

int proc_stat(int pid, char *comm, size_t comm_len, long long *f)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = 0;
    /* comm is in parentheses and may hold anything: fields resume after the last ')'. */
    char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
    if (!open_p || !close_p || close_p < open_p)
        return -1;
    *close_p = 0;
    snprintf(comm, comm_len, "%s", open_p + 1);
    memset(f, 0, PROC_STAT_FIELDS * sizeof *f);
    int n = 3;                      /* field 3, the state letter, stays 0 */
    char *s = close_p + 2;
    while (*s && *s != ' ')
        s++;
    while (*s && n + 1 < PROC_STAT_FIELDS) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        f[++n] = strtoll(s, &s, 10);
    }
    return n >= 41 ? 0 : -1;
}

/* The policy and priority of the threads named in the saved lines, while
 * they still exist: the trace itself gives only the kernel's priority. */
static void write_tasks(struct jw *w, struct span *lines, size_t n)
{
    int pids[MAX_TASKS], npids = 0;
    static const char *const keys[] = {"next_pid=", "prev_pid=", " pid="};
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            const char *p = memmem(lines[i].start, lines[i].len, keys[k], strlen(keys[k]));
            if (!p)
                continue;
            int pid = atoi(p + strlen(keys[k]));
            int seen = pid <= 0;
            for (int j = 0; j < npids && !seen; j++)
                seen = pids[j] == pid;
            if (!seen && npids < MAX_TASKS)
                pids[npids++] = pid;
        }
    }
    jw_arr(w, "tasks");
    for (int i = 0; i < npids; i++) {
        char comm[64];
        long long f[PROC_STAT_FIELDS];
        if (proc_stat(pids[i], comm, sizeof comm, f) < 0)
            continue;
        jw_obj(w, NULL);
        jw_int(w, "pid", pids[i]);
        jw_str(w, "comm", comm);
        static const char *const policies[] = {"other", "fifo", "rr", "batch", "iso", "idle", "deadline"};
        long long pol = f[41];
        jw_str(w, "policy", pol >= 0 && pol < 7 ? policies[pol] : "unknown");
        jw_int(w, "rt_priority", f[40]);
        jw_int(w, "nice", f[19]);
        jw_end(w);
    }
    jw_end(w);
}

/* trace time - CLOCK_MONOTONIC on the CPU whose buffer `text` is. A thread
 * writes each marker right after reading the clock (the marker's wake_ns),
 * so marker time - wake_ns is the offset plus however long the write came
 * after the read. That delay is about a microsecond, but it is never
 * negative and can be long: the thread preempted, or a virtual CPU
 * stopped, between the two. The smallest over every marker in
 * the buffer is the offset; a single marker could misplace every event of
 * the breach by the whole delay. 0 with *found = 0 when there is none. */
int64_t trace_clock_offset(const char *text, size_t len, int *found)
{
    static const char tag[] = "rtvb-probe ", key[] = " wake_ns=";
    const char *end = text + len;
    int64_t best = 0;
    *found = 0;
    for (const char *hit = text; (hit = memmem(hit, (size_t)(end - hit), tag, sizeof tag - 1)); hit += sizeof tag - 1) {
        const char *eol = memchr(hit, '\n', (size_t)(end - hit));
        if (!eol)
            eol = end;
        const char *w = memmem(hit, (size_t)(eol - hit), key, sizeof key - 1);
        if (!w)
            continue;
        uint64_t wake = 0;
        const char *d = w + sizeof key - 1;
        if (d >= eol || *d < '0' || *d > '9')
            continue;
        while (d < eol && *d >= '0' && *d <= '9')
            wake = wake * 10 + (uint64_t)(*d++ - '0');
        const char *line = hit;
        while (line > text && line[-1] != '\n')
            line--;
        uint64_t t = line_time_ns(line, hit);
        if (!t)
            continue;
        int64_t offset = (int64_t)(t - wake);
        if (!*found || offset < best)
            best = offset;
        *found = 1;
    }
    return best;
}

static void save_breach(void)
{
    struct breach b = T.b;
    uint64_t *steal_now = calloc((size_t)T.ncpus, sizeof *steal_now);
    uint64_t steal_from_ns = T.steal_at_ns, now = mono_ns();
    int have_steal = steal_now && T.steal_at_ns && read_steal(steal_now) == 0;

    /* Every CPU's text first: the breach CPU's markers give the clock offset
     * the others are cut with. */
    char **texts = calloc((size_t)T.ncpus, sizeof *texts);
    size_t *lens = calloc((size_t)T.ncpus, sizeof *lens);
    int64_t offset = 0;
    int aligned = 0;
    for (int i = 0; texts && lens && i < T.ncpus; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/per_cpu/cpu%d/trace", T.dir, T.cpus[i]);
        texts[i] = read_all(path, &lens[i]);
        if (texts[i] && T.cpus[i] == b.cpu)
            offset = trace_clock_offset(texts[i], lens[i], &aligned);
    }
    /* Without the offset nothing can be cut by time: the newest lines are kept. */
    uint64_t from = 0;
    if (aligned && (int64_t)b.deadline_ns + offset > (int64_t)T.opt.history_ns)
        from = (uint64_t)((int64_t)b.deadline_ns + offset) - T.opt.history_ns;

    struct jw w = {0};
    jw_record(&w, "trace");
    jw_uint(&w, "index", T.saved);
    jw_int(&w, "cpu", b.cpu);
    jw_int(&w, "tid", b.tid);
    jw_uint(&w, "cycle", b.cycle);
    jw_uint(&w, "deadline_ns", b.deadline_ns);
    jw_uint(&w, "wake_ns", b.wake_ns);
    jw_uint(&w, "latency_ns", b.wake_ns - b.deadline_ns);
    jw_uint(&w, "offset_ns", b.deadline_ns - b.origin_ns);
    jw_str(&w, "clock", "local");
    if (aligned)
        jw_int(&w, "clock_offset_ns", offset);
    else
        jw_null(&w, "clock_offset_ns");
    if (have_steal) {
        long hz = sysconf(_SC_CLK_TCK);
        for (int i = 0; i < T.ncpus; i++)
            if (T.cpus[i] == b.cpu)
                jw_uint(&w, "steal_ns", (steal_now[i] - T.steal_ticks[i]) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100)));
        jw_uint(&w, "steal_window_ns", now - steal_from_ns);
    } else {
        jw_null(&w, "steal_ns");
    }
    jw_arr(&w, "cpus");
    /* Lines average well under 200 bytes: this keeps a record under the
     * host's 4 MiB limit with room for escaping. */
    size_t per_cpu = MAX_TEXT_PER_RECORD / 200 / (size_t)(T.ncpus ? T.ncpus : 1);
    if (per_cpu > MAX_LINES_PER_RECORD)
        per_cpu = MAX_LINES_PER_RECORD;
    for (int i = 0; texts && lens && i < T.ncpus; i++) {
        size_t n = 0, omitted_at = 0, dropped = 0;
        if (!texts[i])
            continue;
        struct span *spans = select_lines(texts[i], lens[i], from, per_cpu, &n, &omitted_at, &dropped);
        jw_obj(&w, NULL);
        jw_int(&w, "cpu", T.cpus[i]);
        jw_uint(&w, "dropped_lines", dropped);
        if (dropped)
            jw_uint(&w, "dropped_at", omitted_at);
        jw_arr(&w, "lines");
        for (size_t k = 0; spans && k < n; k++) {
            char saved = spans[k].start[spans[k].len];
            ((char *)spans[k].start)[spans[k].len] = 0;
            jw_str(&w, NULL, spans[k].start);
            ((char *)spans[k].start)[spans[k].len] = saved;
        }
        jw_end(&w);
        if (T.cpus[i] == b.cpu && spans)
            write_tasks(&w, spans, n);
        jw_end(&w);
        free(spans);
        free(texts[i]);
    }
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
    free(texts);
    free(lens);
    free(steal_now);
    T.saved++;
}

void trace_poll(void)
{
    int state = atomic_load(&T.state);
    if (state == OFF || state == SPENT)
        return;
    if (atomic_load_explicit(&T.pending, memory_order_acquire)) {
        save_breach();
        atomic_store(&T.pending, 0);
        if (T.saved >= T.opt.max_breaches) {
            atomic_store(&T.state, SPENT);
            tracefs_write(T.dir, "set_event", "", O_TRUNC);   /* nothing more to record: no event cost */
            return;
        }
        tracefs_write(T.dir, "trace", "", O_TRUNC);           /* empty the buffer for the next breach */
        (void)!write(T.on_fd, "1", 1);
        atomic_store(&T.armed_ns, mono_ns());
        atomic_store(&T.state, ARMED);
    }
    if (read_steal(T.steal_ticks) == 0)
        T.steal_at_ns = mono_ns();
}

void trace_finish(void)
{
    if (atomic_load(&T.state) == OFF)
        return;
    if (atomic_load_explicit(&T.pending, memory_order_acquire)) {
        save_breach();
        atomic_store(&T.pending, 0);
    }
    atomic_store(&T.state, SPENT);
    remove_instance();
    free(T.steal_ticks);
    T.steal_ticks = NULL;
}
