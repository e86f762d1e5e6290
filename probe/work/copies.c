/*
 * work --copies N: rounds of 1 copy and of N copies of one kernel, alternated.
 *
 * Why alternate: the scaling efficiency compares the throughput of N copies
 * with N times that of one. Measured minutes apart, a change of load on a
 * shared machine (or a clock that moved) would enter the ratio; a 1-copy
 * round right before each N-copy round keeps both halves of every ratio
 * close in time, and the median over the pairs drops the odd disturbed one.
 *
 * One round: fork the copies; each pins itself to its CPU, prepares its input
 * (untimed) and says so on the "ready" pipe, then blocks reading the "go"
 * pipe. When all are ready the parent notes the time and closes the go pipe:
 * every copy's read returns at once (a barrier that costs no CPU while the
 * others prepare, which matters when copies share a CPU). A copy then does
 * its runs, checking each, and writes its report into a shared mapping. The
 * span of the round is from the barrier to the last copy's end.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "copies.h"
#include "../probe.h"

/* One copy's page of the shared mapping: its report, context and run times. */
struct slot {
    struct copy_report r;
    int ok;                     /* self-checks passed and every run gave the same checksum */
    uint64_t end_ns;
    struct work_ctx c;
    uint64_t times[];           /* [repetitions] */
};

static size_t slot_size(uint64_t reps)
{
    size_t s = sizeof(struct slot) + reps * sizeof(uint64_t);
    return (s + 63) & ~(size_t)63;   /* copies write their own cache lines */
}

static struct slot *slot_at(void *base, uint64_t reps, int i)
{
    return (struct slot *)((char *)base + (size_t)i * slot_size(reps));
}

/* The child: never returns. */
static void copy_main(const struct work_kernel *K, int size, const struct copies_plan *p, struct slot *s,
                      int cpu, int ready_fd, int go_fd, volatile sig_atomic_t *stop)
{
    struct work_ctx *c = &s->c;
    cpu_set_t one;
    char byte = 1, sink;

    memset(c, 0, sizeof *c);
    c->size = size;
    c->seed = p->seed;
    s->r.cpu = cpu;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    int ok = sched_setaffinity(0, sizeof one, &one) == 0;
    if (!ok)
        work_fail(c, "could not pin the copy to CPU %d: %s", cpu, strerror(errno));
    ok = ok && K->prepare(c) == 0;
    /* Ready even when prepare failed: the others must not wait for ever. */
    if (write(ready_fd, &byte, 1) != 1)
        _exit(1);
    close(ready_fd);
    while (read(go_fd, &sink, 1) < 0 && errno == EINTR)
        ;
    for (uint64_t r = 0; ok && r < p->repetitions && !*stop; r++) {
        uint64_t t0 = mono_ns();
        K->run(c);
        s->times[r] = mono_ns() - t0;
        s->r.runs = r + 1;
        uint64_t v = 0;
        if (K->check(c, &v)) {
            ok = 0;
        } else if (s->r.have_checksum && v != s->r.checksum) {
            ok = 0;
            work_fail(c, "run %llu of a copy gave checksum %016llx, its first gave %016llx",
                      (unsigned long long)r + 1, (unsigned long long)v, (unsigned long long)s->r.checksum);
        }
        s->r.checksum = v;
        s->r.have_checksum = 1;
    }
    s->end_ns = mono_ns();
    s->r.ran_on = sched_getcpu();
    s->ok = ok;
    /* release() is skipped: the process ends, and its state goes with it. */
    _exit(0);
}

/* One round of n copies into round; 0, or -1 with out->error set. */
static int one_round(const struct work_kernel *K, int size, const struct copies_plan *p, int n,
                     volatile sig_atomic_t *stop, struct copies_outcome *out, struct copies_round *round)
{
    size_t bytes = (size_t)n * slot_size(p->repetitions);
    void *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int ready[2], go[2];
    pid_t pid[WORK_MAX_COPIES];
    int started = 0;

    if (base == MAP_FAILED) {
        snprintf(out->error, sizeof out->error, "no shared memory for %d copies: %s", n, strerror(errno));
        return -1;
    }
    if (pipe(ready) || pipe(go)) {
        snprintf(out->error, sizeof out->error, "pipe: %s", strerror(errno));
        munmap(base, bytes);
        return -1;
    }
    fflush(stdout);   /* nothing buffered may be printed twice by a child */
    for (int i = 0; i < n; i++) {
        struct slot *s = slot_at(base, p->repetitions, i);
        s->r.cpu = p->cpus[i];
        s->r.ran_on = -1;
        pid[i] = fork();
        if (pid[i] == 0) {
            close(ready[0]);
            close(go[1]);   /* or the go pipe would never reach end of file */
            copy_main(K, size, p, s, p->cpus[i], ready[1], go[0], stop);
        }
        if (pid[i] < 0) {
            snprintf(out->error, sizeof out->error, "fork of copy %d: %s", i + 1, strerror(errno));
            break;
        }
        started++;
    }
    close(ready[1]);
    close(go[0]);
    /* The barrier: every copy prepared (or gone: end of file). */
    char buf[64];
    int got = 0;
    while (got < started) {
        ssize_t k = read(ready[0], buf, sizeof buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (int)k;
    }
    uint64_t go_ns = mono_ns();
    close(go[1]);
    close(ready[0]);
    int status[WORK_MAX_COPIES] = {0}, forwarded = 0;
    for (int i = 0; i < started; i++)
        for (;;) {
            if (*stop && !forwarded) {
                /* SIGINT/SIGTERM may have reached this process only: pass it on, the copies stop after their run. */
                for (int j = i; j < started; j++)
                    kill(pid[j], SIGTERM);
                forwarded = 1;
            }
            if (waitpid(pid[i], &status[i], 0) >= 0 || errno != EINTR)
                break;
        }

    round->ncopies = n;
    round->copy = calloc((size_t)n, sizeof *round->copy);
    uint64_t last = go_ns;
    for (int i = 0; i < n && round->copy; i++) {
        struct slot *s = slot_at(base, p->repetitions, i);
        struct copy_report *r = &round->copy[i];
        *r = s->r;
        /* consistent: self-checks passed and the same checksum as every other copy */
        int consistent = i < started && s->ok && s->r.have_checksum;
        if (i < started && s->ok && s->r.runs == 0 && *stop)
            consistent = 1;   /* stopped before its first run: nothing to verify, nothing wrong */
        if (i >= started)
            r->runs = 0;
        if (consistent && out->have_checksum)
            consistent = s->r.checksum == out->checksum;
        r->verified = consistent && s->r.have_checksum && (!p->has_expected || s->r.checksum == p->expected);
        r->time_ns = s->end_ns > go_ns ? s->end_ns - go_ns : 0;
        if (s->end_ns > last)
            last = s->end_ns;
        round->runs += r->runs;
        if (!out->have_checksum && s->r.have_checksum) {
            out->have_checksum = 1;
            out->checksum = s->r.checksum;
            out->c = s->c;
        }
        /* A checksum unlike the expected one is the caller's to report (as without copies). */
        if (!consistent && out->ok) {
            out->ok = 0;
            if (s->c.error[0])
                memcpy(out->c.error, s->c.error, sizeof out->c.error);
            else if (i >= started)
                snprintf(out->c.error, sizeof out->c.error, "copy %d could not be started", i + 1);
            else if (WIFSIGNALED(status[i]))
                snprintf(out->c.error, sizeof out->c.error, "copy %d on CPU %d was killed by signal %d after %llu runs",
                         i + 1, r->cpu, WTERMSIG(status[i]), (unsigned long long)s->r.runs);
            else if (s->ok && s->r.have_checksum)
                snprintf(out->c.error, sizeof out->c.error,
                         "copy %d on CPU %d computed checksum %016llx, the first copy %016llx", i + 1, r->cpu,
                         (unsigned long long)s->r.checksum, (unsigned long long)out->checksum);
            else
                snprintf(out->c.error, sizeof out->c.error, "copy %d on CPU %d did no run", i + 1, r->cpu);
        }
        if (n == 1)
            for (uint64_t k = 0; k < s->r.runs; k++)
                out->times[out->ntimes++] = s->times[k];
    }
    round->span_ns = last - go_ns;
    round->runs_per_s = round->span_ns ? (double)round->runs * 1e9 / (double)round->span_ns : 0;
    munmap(base, bytes);
    if (!round->copy) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    return started == n ? 0 : -1;
}

int work_copies_run(const struct work_kernel *K, int size, const struct copies_plan *p,
                    volatile sig_atomic_t *stop, struct copies_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->ok = 1;
    out->times = malloc((size_t)p->rounds * p->repetitions * sizeof *out->times);
    out->round = calloc(2 * (size_t)p->rounds, sizeof *out->round);
    out->round_cap = 2 * p->rounds;
    if (!out->times || !out->round) {
        snprintf(out->error, sizeof out->error, "out of memory for %d rounds", p->rounds);
        return -1;
    }
    /* A round begun after SIGINT/SIGTERM would start copies that stop at once; an interrupted pair is no pair. */
    for (int r = 0; r < p->rounds && !*stop; r++) {
        if (one_round(K, size, p, 1, stop, out, &out->round[2 * r]))
            return -1;
        if (*stop)
            break;
        if (one_round(K, size, p, p->copies, stop, out, &out->round[2 * r + 1]))
            return -1;
        if (*stop)
            break;
        out->nrounds = r + 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void work_copies_json(struct jw *w, const struct copies_plan *p, const struct copies_outcome *out)
{
    double one[WORK_MAX_ROUNDS], many[WORK_MAX_ROUNDS], eff[WORK_MAX_ROUNDS];
    int n = out->nrounds;
    for (int r = 0; r < n; r++) {
        one[r] = out->round[2 * r].runs_per_s;
        many[r] = out->round[2 * r + 1].runs_per_s;
        eff[r] = one[r] > 0 ? many[r] / (p->copies * one[r]) : 0;
    }
    jw_int(w, "copies", p->copies);
    jw_int(w, "rounds", n);
    jw_arr(w, "cpus");
    for (int i = 0; i < p->copies; i++)
        jw_int(w, NULL, p->cpus[i]);
    jw_end(w);
    if (n) {
        jw_double(w, "single_ips", median(one, n));
        jw_double(w, "copies_ips", median(many, n));
        jw_double(w, "scaling_efficiency", median(eff, n));
    } else {
        jw_null(w, "single_ips");
        jw_null(w, "copies_ips");
        jw_null(w, "scaling_efficiency");
    }
    jw_arr(w, "copy_rounds");
    for (int r = 0; r < 2 * n; r++) {
        const struct copies_round *R = &out->round[r];
        char hex[17];
        jw_obj(w, NULL);
        jw_int(w, "copies", R->ncopies);
        jw_uint(w, "span_ns", R->span_ns);
        jw_uint(w, "runs", R->runs);
        jw_double(w, "runs_per_s", R->runs_per_s);
        jw_arr(w, "per_copy");
        for (int i = 0; i < R->ncopies; i++) {
            const struct copy_report *c = &R->copy[i];
            jw_obj(w, NULL);
            jw_int(w, "cpu", c->cpu);
            if (c->ran_on >= 0)
                jw_int(w, "ran_on", c->ran_on);
            else
                jw_null(w, "ran_on");
            jw_uint(w, "runs", c->runs);
            jw_uint(w, "time_ns", c->time_ns);
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c->checksum);
            jw_str(w, "checksum", c->have_checksum ? hex : NULL);
            jw_bool(w, "verified", c->verified);
            jw_end(w);
        }
        jw_end(w);
        jw_end(w);
    }
    jw_end(w);
}

void work_copies_free(struct copies_outcome *out)
{
    for (int r = 0; out->round && r < out->round_cap; r++)
        free(out->round[r].copy);
    free(out->round);
    free(out->times);
}
