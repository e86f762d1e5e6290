/*
 * Shared declarations of rtvb-probe: subcommand entry points, exit codes,
 * and the small helpers every subcommand uses.
 */
#ifndef RTVB_PROBE_H
#define RTVB_PROBE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "jsonw_fd.h"
#include "version.h"

/* A numeric macro as a string literal, for help texts. */
#define RTVB_STR(x) RTVB_STR_(x)
#define RTVB_STR_(x) #x

/* Exit codes, as listed in README.md. */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 2,   /* bad option or value */
    EXIT_ENV = 3,     /* the environment refused something essential */
};

int cmd_latency(int argc, char **argv);
int cmd_noise(int argc, char **argv);
int cmd_sysinfo(int argc, char **argv);
int cmd_work(int argc, char **argv);
int cmd_mem_lat(int argc, char **argv);
int cmd_mem_bw(int argc, char **argv);
int cmd_mem_alloc(int argc, char **argv);
int cmd_os(int argc, char **argv);
int cmd_ipc(int argc, char **argv);
int cmd_network(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_rtos(int argc, char **argv);
int cmd_kernel_tracer(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_sample(int argc, char **argv);

/* Print "rtvb-probe <sub>: <message>" on stderr and return EXIT_USAGE. */
int usage_error(const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The two errors that end every subcommand's option loop, worded alike. */
int unknown_option(const char *sub, const char *arg);
int unexpected_argument(const char *sub, const char *arg);

/* Strict number parsing: the whole string must be a plain decimal number in
 * [min, max] (no spaces, sign on an unsigned, hex, inf or nan). */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A double of plain decimal notation, [-]digits[.digits][e[+-]digits], in
 * [min, max]; exactly strtod's value for up to 15 significant digits within
 * 1e-22..1e37, within a few units in the last place beyond (util.c). */
int parse_double(const char *s, double min, double max, double *out);
/* "4096", "4K", "1.5M", "2G" (binary multiples, either case; the result
 * must be a whole number of bytes within [min, max]). */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* The next item of a comma-separated list at *p (NULL once the list is
 * done) into item, cap bytes: 1 when one was read, 0 at the end, -1 for an
 * empty or overlong item (so an empty list or a stray comma is refused). */
int list_item(const char **p, char *item, size_t cap);
/* parse_size() items separated by commas, kept in the order given, at most
 * max_n. Returns the count or -1 on a malformed or out-of-range entry. */
int parse_size_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int max_n);

/* Fields of the text the kernel writes (/proc, /sys, tracefs), read in place
 * of sscanf. Each skips white space at *p, reads one field and moves *p past
 * it: 0, or -1 when there is no such field there (then *p is unchanged).
 *   scan_u64    decimal digits; a value past 2^64 - 1 is no field
 *   scan_i64    [-]decimal digits, within int64_t
 *   scan_x64    hex digits (no 0x prefix), within 64 bits
 *   scan_double plain decimal notation, as parse_double reads it
 *   scan_word   a run of non-space characters, into buf if it fits in cap
 *               bytes with its terminating NUL (a longer one is no field);
 *               with buf NULL, skipped whatever its length */
int scan_u64(const char **p, uint64_t *out);
int scan_i64(const char **p, int64_t *out);
int scan_x64(const char **p, uint64_t *out);
int scan_double(const char **p, double *out);
int scan_word(const char **p, char *buf, size_t cap);
/* The first line of a file, without its newline; 0, or -1 if unreadable. */
int read_line(const char *path, char *buf, size_t len);

/* A comma-separated list of names out of names[0..n) as a bit mask of their
 * indexes; -1 if an item is unknown or the list is empty. */
int parse_names(const char *s, const char *const *names, int n, unsigned *mask);

/* Parse a CPU list like "0-3,6" into a sorted array of distinct CPU numbers.
 * Returns the count, or -1 on a malformed list. */
int parse_cpu_list(const char *s, int *cpus, int max_cpus);
/* The CPUs this process may run on (its affinity mask), sorted. */
int allowed_cpus(int *cpus, int max_cpus);
/* Whether this process may run on `cpu` (online and in its affinity mask). */
int cpu_allowed(int cpu);

static inline uint64_t ts_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static inline uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return ts_ns(&t);
}

/* t (seconds since 1970 UTC) as a UTC date and time: the fields of gmtime_r
 * (tm_isdst 0), without glibc's time-zone code. */
void utc_time(int64_t t, struct tm *tm);

/* Start a "meta" record with the fields every subcommand shares; the caller
 * adds its parameters and privileges, then jw_emit()s. */
void meta_begin(struct jw *w, const char *subcommand, int argc, char **argv);

/* Fill *set with the stop signals (SIGINT, SIGTERM, and SIGHUP: an ssh
 * session that drops) and block them in the calling thread. Called before
 * any thread exists, every thread inherits the mask, so only the main
 * thread takes them, with sigtimedwait on *set. */
void block_stop_signals(sigset_t *set);
/* Close a meta record whose only privilege is the effective uid, and emit it. */
void meta_finish_euid(struct jw *w);
/* CPU time of helpers that work for the subcommand outside its process (the
 * kernel tracers' threads), added to the end record's cpu_time_ns so that the
 * host counts it as the measurement's own, not as foreign load. */
extern uint64_t end_extra_cpu_ns;
/* Emit the final "end" record. status: "ok", "interrupted" or "error". */
void emit_end(const char *status, uint64_t elapsed_ns, const char *error);

#endif
