/*
 * agent: serve the host's requests over one channel (docs/probe/init.md).
 *
 * Everything happens in one poll(2) loop, single-threaded: the channel, the
 * stdout/stderr pipe of every running command, a signalfd that carries
 * SIGCHLD (and, outside PID 1, the stop signals), and a 1 s tick deadline
 * used as the poll timeout. No request ever blocks the loop for long: fork +
 * exec is waited for only until the exec succeeds or fails, and `read` is
 * meant for /proc and /sys files.
 *
 * Output goes through one queue of whole lines, written to the channel as
 * far as it accepts (non-blocking, short writes resumed later). A line is
 * appended to the queue only once complete, so two commands' lines never
 * interleave however the writes are cut. When the host stops reading and
 * the queue passes OUTQ_HIGH, the commands' pipes are no longer read: the
 * commands block on their own output instead of the agent growing forever.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "opts.h"
#include "probe.h"

#define READ_CHUNK (64u * 1024)
#define LINE_CAP (16u << 20)       /* longer lines are forwarded in 16 MiB pieces */
#define READ_FILE_CAP (16u << 20)  /* `read` is for /proc, /sys and small files */
#define DRAIN_CAP (1u << 20)       /* per pipe, after the command has exited */
#define OUTQ_HIGH (8u << 20)
#define TICK_NS 1000000000ull
#define RECONNECT_NS 100000000ull  /* PID 1: look at a channel that read EOF again */
#define KILL_WAIT_NS 2000000000ull
#define FLUSH_WAIT_NS 1000000000ull

struct buf {
    char *p;
    size_t len, cap;
};

/* One of a command's output pipes and the start of its current line. */
struct stream {
    int fd;          /* -1 once closed */
    struct buf line; /* bytes after the last '\n' */
};

struct cmd {
    unsigned long long id;
    pid_t pid; /* also its process group and session: the child calls setsid */
    struct stream s[2];
};

static const char *const stream_name[2] = {"out", "err"};

struct agent {
    const struct agent_config *cfg;
    int fd, sigfd;
    struct buf in;     /* host bytes not yet cut into lines */
    int skipping;      /* discarding an over-long request line up to its '\n' */
    struct buf outq;
    size_t outq_head;  /* bytes of outq already written */
    struct cmd *cmds;
    size_t ncmds, capcmds;
    int stop;          /* poweroff asked, or a stop signal (agent mode) */
    int closed;        /* the host closed the channel (agent mode) */
    uint64_t paused_until; /* PID 1: channel reads EOF, nobody connected */
};

static int g_pid1;

void agent_console(const char *who, const char *fmt, ...)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: ", who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(msg);
    msg[len++] = '\n';
    (void)!write(2, msg, len);
}

/* Out of memory: nothing sane is left to do. PID 1 must not exit (the
 * kernel would panic and hide the message), so it powers off instead. */
static void out_of_memory(void)
{
    static const char msg[] = "rtvb-probe agent: out of memory\n";
    (void)!write(2, msg, sizeof msg - 1);
    if (g_pid1) {
        sync();
        reboot(RB_POWER_OFF);
    }
    _exit(EXIT_ENV);
}

static void buf_reserve(struct buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        out_of_memory();
    b->p = p;
    b->cap = cap;
}

static void buf_put(struct buf *b, const void *s, size_t n)
{
    if (n == 0)
        return;     /* an empty frame: s may be NULL, which memcpy may not be given even for 0 bytes */
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* Drop the first n bytes. */
static void buf_consume(struct buf *b, size_t n)
{
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

static uint64_t boottime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return ts_ns(&t);
}

/* A request or path quoted in a diagnostic: at most max bytes, control
 * bytes as '?', so the diagnostic stays one line. */
static const char *printable(char *dst, size_t size, const char *src, size_t len)
{
    size_t n = len < size - 4 ? len : size - 4;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    strcpy(dst + n, n < len ? "..." : "");
    return dst;
}

/* ---- output queue ------------------------------------------------------------------------- */

static size_t backlog(const struct agent *a) { return a->outq.len - a->outq_head; }

static void emit_line(struct agent *a, const char *prefix, const char *text, size_t len)
{
    buf_put(&a->outq, prefix, strlen(prefix));
    buf_put(&a->outq, text, len);
    buf_put(&a->outq, "\n", 1);
}

static void emitf(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emitf(struct agent *a, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    emit_line(a, "", line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The agent's own diagnostic: on the channel and on the console. */
static void agent_log(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void agent_log(struct agent *a, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emitf(a, "log %s", msg);
    agent_console(a->cfg->who, "%s", msg);
}

static void channel_gone(struct agent *a, const char *why)
{
    if (g_pid1) {
        /* A virtio port reads EOF (and polls HUP) while nobody is connected
         * on the host side; the host may still connect, so look again soon. */
        a->paused_until = mono_ns() + RECONNECT_NS;
    } else {
        if (!a->closed && why)
            agent_console(a->cfg->who, "%s; stopping.", why);
        a->closed = 1;
    }
}

/* Write as much of the queue as the channel takes now. */
static void flush_out(struct agent *a)
{
    while (backlog(a) && !a->closed) {
        ssize_t n = write(a->fd, a->outq.p + a->outq_head, backlog(a));
        if (n > 0) {
            a->outq_head += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            break;
        } else {
            char why[128];
            snprintf(why, sizeof why, "cannot write to the channel: %s", n < 0 ? strerror(errno) : "no progress");
            channel_gone(a, why);
            break;
        }
    }
    /* Compact rather than on every write: a 200 KiB line written in pieces
     * would otherwise be moved once per piece. */
    if (a->outq_head == a->outq.len) {
        a->outq.len = a->outq_head = 0;
    } else if (a->outq_head > READ_CHUNK && a->outq_head > a->outq.len / 2) {
        buf_consume(&a->outq, a->outq_head);
        a->outq_head = 0;
    }
}

/* ---- command output ----------------------------------------------------------------------- */

/* Forward every complete line of s->line as "<id> <kind> <text>"; an
 * over-long unterminated line goes out in LINE_CAP pieces. `scanned` is how
 * much of the buffer was already known to hold no '\n'. */
static void forward_lines(struct agent *a, unsigned long long id, int kind, struct stream *s, size_t scanned)
{
    char prefix[48];
    snprintf(prefix, sizeof prefix, "%llu %s ", id, stream_name[kind]);
    size_t start = 0;
    for (;;) {
        char *nl = memchr(s->line.p + scanned, '\n', s->line.len - scanned);
        if (!nl)
            break;
        size_t end = (size_t)(nl - s->line.p);
        emit_line(a, prefix, s->line.p + start, end - start);
        start = scanned = end + 1;
    }
    while (s->line.len - start >= LINE_CAP) {
        emit_line(a, prefix, s->line.p + start, LINE_CAP);
        start += LINE_CAP;
    }
    if (start)
        buf_consume(&s->line, start);
}

static void close_stream(struct agent *a, unsigned long long id, int kind, struct stream *s)
{
    if (s->line.len) { /* a last line without '\n' */
        char prefix[48];
        snprintf(prefix, sizeof prefix, "%llu %s ", id, stream_name[kind]);
        emit_line(a, prefix, s->line.p, s->line.len);
        s->line.len = 0;
    }
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* Read up to `budget` bytes from a command's pipe (stopping early when it
 * is empty) and forward its lines; closes the stream at EOF. */
static void pump(struct agent *a, struct cmd *c, int kind, size_t budget)
{
    struct stream *s = &c->s[kind];
    size_t got = 0;
    while (s->fd >= 0 && got < budget) {
        buf_reserve(&s->line, READ_CHUNK);
        size_t before = s->line.len;
        ssize_t n = read(s->fd, s->line.p + before, READ_CHUNK);
        if (n > 0) {
            s->line.len += (size_t)n;
            got += (size_t)n;
            forward_lines(a, c->id, kind, s, before);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return;
        } else {
            close_stream(a, c->id, kind, s);
        }
    }
}

/* ---- commands ----------------------------------------------------------------------------- */

static struct cmd *find_id(struct agent *a, unsigned long long id)
{
    for (size_t i = 0; i < a->ncmds; i++)
        if (a->cmds[i].id == id)
            return &a->cmds[i];
    return NULL;
}

static void remove_cmd(struct agent *a, struct cmd *c)
{
    for (int k = 0; k < 2; k++) {
        if (c->s[k].fd >= 0)
            close(c->s[k].fd);
        free(c->s[k].line.p);
    }
    *c = a->cmds[--a->ncmds];
}

/* A command that could not be started still gets its err and exit lines:
 * the host waits for `exit` of every id it ran. */
static void start_failed(struct agent *a, unsigned long long id, const char *what, int err)
{
    emitf(a, "%llu err %s: %s", id, what, strerror(err));
    emitf(a, "%llu exit 127", id);
}

static void run_cmd(struct agent *a, unsigned long long id, char **argv)
{
    char shown[256];
    printable(shown, sizeof shown, argv[0], strlen(argv[0]));
    if (find_id(a, id)) {
        agent_log(a, "run: command id %llu is still running; ignored.", id);
        return;
    }
    /* report: the child writes {stage, errno} here if it cannot exec; the
     * write end closes on a successful exec (O_CLOEXEC). Waiting for that
     * also means the child has called setsid, so `signal` right after `run`
     * finds its process group. */
    int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (out[i] >= 0) close(out[i]);
            if (err[i] >= 0) close(err[i]);
            if (report[i] >= 0) close(report[i]);
        }
        start_failed(a, id, "cannot create pipes", e);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* Undo what the agent changed for itself: exec keeps the signal mask
         * and ignored signals, and a probe must see default SIGINT/SIGPIPE. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        int fail[2] = {0, 0};
        int nul = open("/dev/null", O_RDONLY);
        if (setsid() < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) {
            fail[1] = errno;
        } else {
            close(nul);
            execv(argv[0], argv);
            fail[0] = 1;
            fail[1] = errno;
        }
        (void)!write(report[1], fail, sizeof fail);
        _exit(127);
    }
    int fork_errno = errno;
    close(out[1]);
    close(err[1]);
    close(report[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        close(report[0]);
        start_failed(a, id, "cannot fork", fork_errno);
        return;
    }
    int fail[2];
    ssize_t n;
    while ((n = read(report[0], fail, sizeof fail)) < 0 && errno == EINTR)
        ;
    close(report[0]);

    if (a->ncmds == a->capcmds) {
        size_t cap = a->capcmds ? a->capcmds * 2 : 8;
        struct cmd *p = realloc(a->cmds, cap * sizeof *p);
        if (!p)
            out_of_memory();
        a->cmds = p;
        a->capcmds = cap;
    }
    struct cmd *c = &a->cmds[a->ncmds++];
    *c = (struct cmd){.id = id, .pid = pid, .s = {{.fd = out[0]}, {.fd = err[0]}}};
    for (int k = 0; k < 2; k++)
        fcntl(c->s[k].fd, F_SETFL, fcntl(c->s[k].fd, F_GETFL) | O_NONBLOCK);
    /* The child exits 127 and is reaped like any command, which sends the
     * exit line after this one. */
    if (n == (ssize_t)sizeof fail)
        emitf(a, "%llu err cannot %s %s: %s", id, fail[0] ? "execute" : "set up the child for", shown,
              strerror(fail[1]));
}

static void signal_cmd(struct agent *a, unsigned long long id, int sig)
{
    struct cmd *c = find_id(a, id);
    if (!c)
        agent_log(a, "signal: no running command with id %llu; ignored.", id);
    else if (kill(-c->pid, sig) < 0)
        agent_log(a, "signal: cannot send signal %d to command %llu: %s", sig, id, strerror(errno));
}

/* Answer a `read` like a command that prints the file. */
static void read_file(struct agent *a, unsigned long long id, const char *path)
{
    char shown[256];
    printable(shown, sizeof shown, path, strlen(path));
    /* O_NONBLOCK: a FIFO or device named by mistake must not hang the agent. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        emitf(a, "%llu err cannot open %s: %s", id, shown, strerror(errno));
        emitf(a, "%llu exit 1", id);
        return;
    }
    struct stream s = {.fd = fd};
    size_t total = 0;
    int status = 0;
    for (;;) {
        buf_reserve(&s.line, READ_CHUNK);
        size_t before = s.line.len;
        ssize_t n = read(fd, s.line.p + before, READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN) {
            emitf(a, "%llu err cannot read %s: %s", id, shown, strerror(errno));
            status = 1;
        }
        if (n <= 0)
            break;
        s.line.len += (size_t)n;
        total += (size_t)n;
        forward_lines(a, id, 0, &s, before);
        if (total >= READ_FILE_CAP) {
            emitf(a, "%llu err stopped reading %s after %u MiB: read is meant for small files", id, shown,
                  READ_FILE_CAP >> 20);
            status = 1;
            break;
        }
    }
    close_stream(a, id, 0, &s);
    free(s.line.p);
    emitf(a, "%llu exit %d", id, status);
}

/* Collect every exited child. A child that is not a command is an orphan
 * re-parented to us (PID 1, or the subreaper in agent mode): reaping it is
 * all there is to do. */
static void reap(struct agent *a)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        struct cmd *c = NULL;
        for (size_t i = 0; i < a->ncmds && !c; i++)
            if (a->cmds[i].pid == pid)
                c = &a->cmds[i];
        if (!c)
            continue;
        int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        /* Its output is in the pipes now (or held by processes it left
         * behind: those are not waited for). Forward it before `exit`. */
        for (int k = 0; k < 2; k++) {
            pump(a, c, k, DRAIN_CAP);
            close_stream(a, c->id, k, &c->s[k]);
        }
        emitf(a, "%llu exit %d", c->id, status);
        remove_cmd(a, c);
    }
}

static void on_signals(struct agent *a)
{
    struct signalfd_siginfo si;
    int child = 0;
    while (read(a->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            child = 1;
        } else if (!a->stop) {
            agent_console(a->cfg->who, "stopping on signal %u.", si.ssi_signo);
            a->stop = 1;
        }
    }
    if (child)
        reap(a);
}

/* SIGKILL every command's group and reap them, so none outlives the agent. */
static void kill_all(struct agent *a)
{
    for (size_t i = 0; i < a->ncmds; i++)
        kill(-a->cmds[i].pid, SIGKILL);
    uint64_t deadline = mono_ns() + KILL_WAIT_NS;
    while (a->ncmds) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid < 0)
            break;
        if (pid == 0) {
            if (mono_ns() > deadline) {
                agent_console(a->cfg->who, "%zu command(s) did not end after SIGKILL.", a->ncmds);
                break;
            }
            nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
            continue;
        }
        for (size_t i = 0; i < a->ncmds; i++)
            if (a->cmds[i].pid == pid) {
                remove_cmd(a, &a->cmds[i]);
                break;
            }
    }
}

/* ---- requests ----------------------------------------------------------------------------- */

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Decode a hex argument in place ("-" is the empty argument). Arguments end
 * up as C strings, so a NUL byte cannot be passed. */
static int unhex(char *s)
{
    if (!strcmp(s, "-")) {
        *s = '\0';
        return 0;
    }
    size_t n = strlen(s);
    if (n == 0 || n % 2)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0)
            return -1;
        s[i] = (char)(hi << 4 | lo);
    }
    s[n / 2] = '\0';
    return 0;
}

static int parse_id(const char *s, unsigned long long *id)
{
    uint64_t v;
    if (!(*s >= '0' && *s <= '9') || parse_u64(s, 0, UINT64_MAX, &v))
        return -1;
    *id = v;
    return 0;
}

/* One request line (NUL-terminated, without '\n'). Returns NULL when it was
 * served, else what is wrong with it. */
static const char *serve_line(struct agent *a, char *line, size_t len)
{
    size_t ntok = 0;
    char **tok = malloc((len + 2) * sizeof *tok); /* at most one token per byte, plus one */
    if (!tok)
        out_of_memory();
    for (char *p = line;;) {
        tok[ntok++] = p;
        char *sp = strchr(p, ' ');
        if (!sp)
            break;
        *sp = '\0';
        p = sp + 1;
    }
    tok[ntok] = NULL;

    const char *bad = NULL;
    unsigned long long id = 0;
    for (size_t i = 0; i < ntok && !bad; i++)
        if (!*tok[i])
            bad = "empty field (fields are separated by exactly one space)";
    if (bad) {
    } else if (!strcmp(tok[0], "run")) {
        if (ntok < 3 || parse_id(tok[1], &id))
            bad = "expected: run <id> <arg-hex>...";
        for (size_t i = 2; i < ntok && !bad; i++)
            if (unhex(tok[i]))
                bad = "an argument is not hex (or encodes a NUL byte)";
        if (!bad)
            run_cmd(a, id, tok + 2);
    } else if (!strcmp(tok[0], "signal")) {
        uint64_t sig;
        if (ntok != 3 || parse_id(tok[1], &id) || parse_u64(tok[2], 1, 64, &sig))
            bad = "expected: signal <id> <signum 1..64>";
        else
            signal_cmd(a, id, (int)sig);
    } else if (!strcmp(tok[0], "read")) {
        if (ntok != 3 || parse_id(tok[1], &id) || unhex(tok[2]) || !*tok[2])
            bad = "expected: read <id> <path-hex>";
        else
            read_file(a, id, tok[2]);
    } else if (!strcmp(tok[0], "poweroff")) {
        if (ntok != 1)
            bad = "expected: poweroff";
        else
            a->stop = 1;
    } else {
        bad = "unknown request (run, signal, read, poweroff)";
    }
    free(tok);
    return bad;
}

static void on_channel(struct agent *a)
{
    buf_reserve(&a->in, READ_CHUNK);
    ssize_t n = read(a->fd, a->in.p + a->in.len, READ_CHUNK);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        char why[128];
        snprintf(why, sizeof why, "%s", n == 0 ? "the host closed the channel" : strerror(errno));
        channel_gone(a, why);
        return;
    }
    size_t scanned = a->in.len, start = 0;
    a->in.len += (size_t)n;
    char *nl;
    while (!a->stop && (nl = memchr(a->in.p + scanned, '\n', a->in.len - scanned))) {
        size_t end = (size_t)(nl - a->in.p), len = end - start;
        char *line = a->in.p + start;
        *nl = '\0';
        if (len && line[len - 1] == '\r') /* a host on a tty may send CRLF */
            line[--len] = '\0';
        char copy[200];
        printable(copy, 120, line, len);
        if (a->skipping)
            a->skipping = 0;
        else if (len && memchr(line, '\0', len))
            agent_log(a, "bad request line '%s': it contains a NUL byte; ignored.", copy);
        else if (len) {
            const char *bad = serve_line(a, line, len);
            if (bad)
                agent_log(a, "bad request line '%s': %s; ignored.", copy, bad);
        }
        start = scanned = end + 1;
    }
    if (a->stop) {
        a->in.len = 0;
        return;
    }
    buf_consume(&a->in, start);
    if (a->in.len > LINE_CAP) {
        if (!a->skipping)
            agent_log(a, "bad request line: longer than %u MiB; ignored.", LINE_CAP >> 20);
        a->skipping = 1;
        a->in.len = 0;
    }
}

/* ---- the loop ----------------------------------------------------------------------------- */

static int open_signals(struct agent *a, sigset_t *old)
{
    /* Exec keeps ignored dispositions: SIGCHLD must not be SIG_IGN, or the
     * kernel reaps children before we see their status. */
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_IGN); /* a closed channel is an EPIPE to handle, not death */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (!g_pid1) { /* PID 1 never gets these unless it asks; the kernel's C-A-D is left alone */
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
    }
    sigprocmask(SIG_BLOCK, &set, old);
    a->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return a->sigfd < 0 ? -1 : 0;
}

int agent_serve(const struct agent_config *cfg)
{
    struct agent a = {.cfg = cfg, .fd = cfg->fd, .sigfd = -1};
    sigset_t oldmask;
    g_pid1 = cfg->pid1;
    if (open_signals(&a, &oldmask) < 0) {
        agent_console(cfg->who, "cannot create a signalfd: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        return -1;
    }
    /* Outside PID 1, become the reaper of what commands leave behind, so
     * both modes treat orphans alike. */
    if (!cfg->pid1)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    fcntl(a.fd, F_SETFL, fcntl(a.fd, F_GETFL) | O_NONBLOCK);
    fcntl(a.fd, F_SETFD, FD_CLOEXEC);

    if (cfg->init_ns)
        emitf(&a, "ready %s %llu %llu", RTVB_PROBE_VERSION, (unsigned long long)boottime_ns(),
              (unsigned long long)cfg->init_ns);
    else
        emitf(&a, "ready %s %llu", RTVB_PROBE_VERSION, (unsigned long long)boottime_ns());
    for (const char *p = cfg->early_log; p && *p;) {
        size_t n = strcspn(p, "\n");
        if (n)
            emitf(&a, "log %.*s", (int)n, p);
        p += n + (p[n] == '\n');
    }

    struct pollfd *pfd = NULL;
    struct { struct cmd *c; int kind; } *who = NULL; /* which stream each pollfd is */
    size_t cap = 0;
    uint64_t next_tick = mono_ns() + TICK_NS;
    while (!a.stop && !a.closed) {
        flush_out(&a);
        if (a.closed)
            break;
        if (cap < 2 + 2 * a.ncmds) {
            cap = 2 + 2 * a.ncmds + 16;
            pfd = realloc(pfd, cap * sizeof *pfd);
            who = realloc(who, cap * sizeof *who);
            if (!pfd || !who)
                out_of_memory();
        }
        uint64_t now = mono_ns();
        int paused = a.paused_until > now;
        size_t n = 0;
        pfd[n++] = (struct pollfd){.fd = a.sigfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = paused ? -1 : a.fd, .events = POLLIN | (backlog(&a) ? POLLOUT : 0)};
        if (backlog(&a) < OUTQ_HIGH)
            for (size_t i = 0; i < a.ncmds; i++)
                for (int k = 0; k < 2; k++)
                    if (a.cmds[i].s[k].fd >= 0) {
                        who[n].c = &a.cmds[i];
                        who[n].kind = k;
                        pfd[n++] = (struct pollfd){.fd = a.cmds[i].s[k].fd, .events = POLLIN};
                    }
        uint64_t wake = paused && a.paused_until < next_tick ? a.paused_until : next_tick;
        int timeout = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
        if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
            agent_console(cfg->who, "poll failed: %s", strerror(errno));
            break;
        }

        now = mono_ns();
        if (now >= next_tick) {
            emitf(&a, "tick %llu", (unsigned long long)boottime_ns());
            next_tick += TICK_NS;
            if (next_tick <= now) /* late (a suspended VM): no burst of ticks */
                next_tick = now + TICK_NS;
        }
        /* Pipes before SIGCHLD, which removes commands (and the pointers in
         * `who` with them); the channel last, as it may add commands. */
        for (size_t i = 2; i < n; i++)
            if (pfd[i].revents)
                pump(&a, who[i].c, who[i].kind, READ_CHUNK);
        if (pfd[0].revents)
            on_signals(&a);
        if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
            on_channel(&a);
    }

    kill_all(&a);
    /* Best effort: let the host see what was queued before the end. */
    for (uint64_t deadline = mono_ns() + FLUSH_WAIT_NS; backlog(&a) && !a.closed && mono_ns() < deadline;) {
        flush_out(&a);
        poll(&(struct pollfd){.fd = a.fd, .events = POLLOUT}, 1, 50);
    }
    free(pfd);
    free(who);
    free(a.in.p);
    free(a.outq.p);
    free(a.cmds);
    close(a.sigfd);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    return 0;
}

/* ---- `rtvb-probe agent` ------------------------------------------------------------------- */

#define SUB "agent"

/* --channel PATH: a unix socket is connected to, anything else (a tty, a
 * virtio port, a character device) opened read-write; a tty is made raw so
 * the line discipline neither echoes nor rewrites the stream. */
static int open_channel(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return -1;
    if (S_ISSOCK(st.st_mode)) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof sa.sun_path) {
            errno = ENAMETOOLONG;
            return -1;
        }
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        return fd;
    }
    int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct termios t;
    if (fd >= 0 && tcgetattr(fd, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(fd, TCSANOW, &t);
    }
    return fd;
}

int cmd_agent(int argc, char **argv)
{
    const char *channel = NULL;
    int fd = -1;
    struct opt table[] = {
        {OPT_TEXT("Serve the rtvbench agent protocol (docs/probe/init.md) on an open file descriptor\n"
                  "or on PATH (a unix socket is connected to; a tty or device is opened read-write).\n"
                  "Ends on `poweroff`, when the host closes the channel, or on SIGINT/SIGTERM/SIGHUP;\n"
                  "running commands are killed first. Give one of:")},
        {OPT_I("fd", &fd, 0, INT_MAX, "N", "an open file descriptor, one end of a socket"),
         .expect = "a file descriptor number"},
        {OPT_S("channel", &channel, "PATH", "a unix socket, tty or device")},
        {OPTS_END},
    };
    int rc = opts_parse(SUB, table, argc, argv);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    if ((fd < 0) == !channel)
        return usage_error(SUB, "give exactly one of --fd N or --channel PATH; run 'rtvb-probe agent --help'.");
    if (channel && (fd = open_channel(channel)) < 0)
        return usage_error(SUB, "cannot open the channel '%s': %s.", channel, strerror(errno));
    if (fcntl(fd, F_GETFD) < 0)
        return usage_error(SUB, "--fd %d is not an open file descriptor; pass one end of a socket.", fd);
    /* Commands' pipes must not land on 0-2 (dup2 onto themselves would keep
     * O_CLOEXEC): make sure the standard descriptors are taken. */
    for (int std = 0; std < 3; std++)
        if (fcntl(std, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
            return EXIT_ENV;
    struct agent_config cfg = {.fd = fd, .pid1 = 0, .who = "rtvb-probe agent"};
    return agent_serve(&cfg) == 0 ? EXIT_OK : EXIT_ENV;
}
