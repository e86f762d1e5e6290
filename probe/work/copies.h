/*
 * work --copies N: the same kernel run by N independent copies at once
 * (docs/probe/work.md, "Copies: multi-core scaling").
 *
 * Each copy is a forked process, not a thread: the kernels keep state in
 * static variables (aes's lazily built tables, for instance) that were written
 * for one run at a time, and separate address spaces make the copies as
 * independent as N copies of a program, sharing nothing but the machine
 * (caches, memory bandwidth, the CPUs) -- which is what the scaling measures.
 */
#ifndef RTVB_WORK_COPIES_H
#define RTVB_WORK_COPIES_H

#include <signal.h>
#include <stdint.h>

#include "../jsonw_fd.h"
#include "work.h"

#define WORK_MAX_COPIES 256
#define WORK_MAX_ROUNDS 1000

struct copies_plan {
    int copies;                     /* N >= 2 */
    int rounds;                     /* pairs of (1 copy, N copies) rounds */
    int cpus[WORK_MAX_COPIES];      /* the CPU of copy i; the 1-copy rounds use cpus[0] */
    uint64_t repetitions;           /* runs per copy per round */
    uint64_t seed;
    int has_expected;
    uint64_t expected;
};

/* What one copy did in one round. */
struct copy_report {
    int cpu, ran_on;                /* pinned to; where it was at its end (-1: unknown) */
    int verified;
    uint64_t runs, time_ns;         /* runs done; from the barrier to its end */
    uint64_t checksum;
    int have_checksum;
};

struct copies_round {
    int ncopies;
    uint64_t span_ns;               /* barrier to the last copy's end */
    uint64_t runs;                  /* over all copies */
    double runs_per_s;              /* runs / span */
    struct copy_report *copy;       /* [ncopies] */
};

struct copies_outcome {
    struct work_ctx c;              /* the first copy's context: input, ops, detail, output */
    int ok;                         /* every copy of every round passed its self-checks, same checksum */
    int have_checksum;
    uint64_t checksum;              /* the first copy's */
    uint64_t *times;                /* the 1-copy rounds' run times, in order */
    int ntimes;
    struct copies_round *round;     /* [2 * rounds]: 1 copy, N copies, 1 copy, ... */
    int nrounds;                    /* rounds done (fewer after a signal) */
    int round_cap;                  /* entries of round */
    char error[256];
};

/* Run the rounds; 0, or -1 when the copies could not be started at all
 * (out.error says why). `stop` is the subcommand's SIGINT/SIGTERM flag. */
int work_copies_run(const struct work_kernel *K, int size, const struct copies_plan *p,
                    volatile sig_atomic_t *stop, struct copies_outcome *out);
/* The result fields of the copies: copies, rounds, cpus, single_ips, copies_ips,
 * scaling_efficiency, copy_rounds. */
void work_copies_json(struct jw *w, const struct copies_plan *p, const struct copies_outcome *out);
void work_copies_free(struct copies_outcome *out);

#endif
