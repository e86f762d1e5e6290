/*
 * opts: the command-line options of every subcommand, from one table.
 *
 * A subcommand sets its defaults, then describes each option once: its long
 * name, what kind of argument it takes and in which range, where the value
 * goes and one line of help. opts_parse() reads argv against the table with
 * strict numbers, prints the one-sentence error that names the option and
 * what it accepts, and prints --help from the same table, so the accepted
 * options, their checks and their documentation cannot drift apart.
 *
 * Syntax: --name VALUE or --name=VALUE; a unique prefix of a name is taken
 * for the name (as getopt_long did); "--" ends the options. The last of a
 * repeated option wins, except for custom options, which see every one.
 */
#ifndef RTVB_OPTS_H
#define RTVB_OPTS_H

#include <stddef.h>
#include <stdint.h>

enum opt_kind {
    OPT_END,        /* ends a table */
    OPT_NOTE,       /* no option: a line of --help (help, or note() when set) */
    OPT_FLAG,       /* no argument: stores `value` */
    OPT_INT,        /* integer in [min, max], times `scale` when set */
    OPT_DOUBLE,     /* decimal number in [dmin, dmax] into a double, times `scale` when set */
    OPT_SCALED,     /* decimal number in [dmin, dmax] times `scale`, rounded into a uint64_t */
    OPT_SIZE,       /* parse_size() in [min, max] into a uint64_t */
    OPT_STRING,     /* the argument itself, into a const char * */
    OPT_ENUM,       /* one of names[0..nnames), stores values[i] (i without values) */
    OPT_NAMES,      /* comma-separated names[0..nnames), stores a bit mask of their indexes */
    OPT_SIZE_LIST,  /* parse_size_list() in [min, max] into a uint64_t array of cap entries, count in *count */
    OPT_CPUS,       /* CPU list (parse_cpu_list) into an int array of cap entries, count in *count;
                     * every CPU must be in this process's affinity mask */
    OPT_CUSTOM,     /* parse(opt, arg): 0, -1 for the generic error, or EXIT_USAGE after its own */
};

struct opt {
    const char *name;           /* long name, without "--" */
    enum opt_kind kind;
    void *field;                /* where the value goes */
    size_t width;               /* sizeof the field: integer kinds store any width */
    const char *meta;           /* the argument in --help; NULL: from the kind */
    const char *help;           /* --help text, '\n' starting an indented continuation line;
                                 * NULL: not shown (test hooks) */
    const char *expect;         /* "--name must be <expect>, got 'x'."; NULL: from the kind and range */
    const char *unit;           /* OPT_DOUBLE, OPT_SCALED: "a number of <unit> from ..." */
    int64_t min;                /* OPT_INT (may be negative), OPT_SIZE */
    uint64_t max;               /* OPT_INT, OPT_SIZE, OPT_SIZE_LIST */
    int cap;                    /* OPT_SIZE_LIST, OPT_CPUS: entries of the array */
    int *count;                 /* OPT_SIZE_LIST, OPT_CPUS: entries stored */
    double dmin, dmax, scale;
    int zero_ok;                /* OPT_DOUBLE, OPT_SCALED: 0 is accepted besides [dmin, dmax] */
    const char *const *names;   /* OPT_ENUM, OPT_NAMES */
    const int *values;
    int nnames;
    int value;                  /* OPT_FLAG */
    int (*parse)(const struct opt *o, const char *arg);   /* OPT_CUSTOM */
    void (*note)(void);         /* OPT_NOTE: prints lines of its own */
    unsigned tag;               /* for the subcommand (load: kinds an option applies to) */
    int seen;                   /* set by opts_parse: times the option was given */
};

/* Entries; each goes in braces and may add members: {OPT_I(...), .expect = "..."}. */
#define OPT_F(n, f, v, h) .name = (n), .kind = OPT_FLAG, .field = (f), .width = sizeof *(f), .value = (v), .help = (h)
#define OPT_I(n, f, lo, hi, m, h) \
    .name = (n), .kind = OPT_INT, .field = (f), .width = sizeof *(f), .min = (lo), .max = (hi), .meta = (m), .help = (h)
#define OPT_D(n, f, lo, hi, u, m, h) \
    .name = (n), .kind = OPT_DOUBLE, .field = (f), .dmin = (lo), .dmax = (hi), .unit = (u), .meta = (m), .help = (h)
#define OPT_NS(n, f, sc, lo, hi, u, m, h)                                                                \
    .name = (n), .kind = OPT_SCALED, .field = (f), .scale = (sc), .dmin = (lo), .dmax = (hi), .unit = (u), \
    .meta = (m), .help = (h)
#define OPT_SZ(n, f, lo, hi, h) .name = (n), .kind = OPT_SIZE, .field = (f), .min = (lo), .max = (hi), .help = (h)
#define OPT_S(n, f, m, h) .name = (n), .kind = OPT_STRING, .field = (f), .meta = (m), .help = (h)
#define OPT_E(n, f, nm, vals, cnt, h)                                                                    \
    .name = (n), .kind = OPT_ENUM, .field = (f), .width = sizeof *(f), .names = (nm), .values = (vals), \
    .nnames = (cnt), .help = (h)
#define OPT_L(n, f, nm, cnt, h) \
    .name = (n), .kind = OPT_NAMES, .field = (f), .width = sizeof *(f), .names = (nm), .nnames = (cnt), .help = (h)
#define OPT_SZ_LIST(n, arr, cnt, lo, hi, h)                                                                      \
    .name = (n), .kind = OPT_SIZE_LIST, .field = (arr), .cap = (int)(sizeof(arr) / sizeof *(arr)), .count = (cnt), \
    .min = (lo), .max = (hi), .meta = "LIST", .help = (h)
#define OPT_CPU_LIST(n, arr, cnt, h) \
    .name = (n), .kind = OPT_CPUS, .field = (arr), .cap = (int)(sizeof(arr) / sizeof *(arr)), .count = (cnt), .help = (h)
#define OPT_C(n, fn, f, m, ex, h) \
    .name = (n), .kind = OPT_CUSTOM, .parse = (fn), .field = (f), .meta = (m), .expect = (ex), .help = (h)
#define OPT_TEXT(h) .kind = OPT_NOTE, .help = (h)
#define OPTS_END .kind = OPT_END

/* What opts_parse does with a table. Set once by main() from its first argument:
 * `rtvb-probe --check-args SUB ...` and `rtvb-probe --describe-options SUB` let
 * the host check a campaign's commands against the probe's own tables without
 * measuring anything (tests/test_probe_ranges.py). */
enum opts_mode {
    OPTS_RUN,       /* parse and go on to measure */
    OPTS_CHECK,     /* parse with every check that does not depend on this machine (no
                     * affinity mask, no directory lookup); the subcommand then exits */
    OPTS_DESCRIBE,  /* print the table as JSON Lines, one option per line, and return -1 */
};
extern enum opts_mode opts_mode;

/* Parse argv[1..argc) into the table's fields. Returns 0; EXIT_USAGE after
 * printing "rtvb-probe <sub>: <sentence>" on stderr; or -1 after printing
 * --help (-h too) on stdout, which the subcommand turns into EXIT_OK. */
int opts_parse(const char *sub, struct opt *table, int argc, char **argv);

/* The subcommand's verdict after its own checks: in OPTS_CHECK mode, 0 (the
 * arguments are good) becomes -1 so that it exits with EXIT_OK there. */
int opts_done(int rc);

/* --help from the table, as opts_parse prints it. */
void opts_help(const char *sub, const struct opt *table);

/* The entry of an option by name; NULL if the table has none. */
struct opt *opts_find(struct opt *table, const char *name);
/* Times an option was given (0 also for a name not in the table). */
int opts_seen(struct opt *table, const char *name);

#endif
