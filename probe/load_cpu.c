/*
 * load kinds `cpu` (duty-cycle CPU load) and `timer` (high-rate wake-ups).
 *
 * cpu: time is cut in periods on the common origin, start + k * period.
 * In each period a worker computes until it has been given `percent` of the
 * period as CPU time (its own CPU-time clock, so time other tasks take on
 * its CPU does not count as load), or until the period ends, whichever
 * comes first, then sleeps to the next period boundary with
 * clock_nanosleep(TIMER_ABSTIME). With --busy-clock wall the busy phase is
 * measured on the monotonic clock from the period start instead (the load
 * then yields its share when it is preempted). The work is done in chunks
 * calibrated to a small fraction of the busy phase, so a period overshoots
 * its budget by half a chunk at most, which the loop anticipates.
 *
 * timer: each worker sleeps to absolute deadlines spaced workers / rate
 * apart, the workers' phases spread over one interval, and counts wake-ups,
 * lateness and the deadlines it overslept.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "probe.h"

/* ---- work units ----------------------------------------------------------------------------- */

#define MAT_N 16

struct cpu_worker {
    uint64_t units;             /* units per chunk */
    uint64_t chunk_ns;          /* CPU time of one chunk, calibrated */
    uint64_t ix;                /* integer state */
    double fx, fy;              /* float state */
    double a[MAT_N][MAT_N], b[MAT_N][MAT_N], m[MAT_N][MAT_N];
    volatile uint64_t sink;
};

/* integer: 64 rounds of a 64-bit multiply-xorshift mix. */
static void unit_integer(struct cpu_worker *w)
{
    uint64_t x = w->ix;
    for (int i = 0; i < 64; i++) {
        x ^= x >> 31;
        x *= 0x7fb5d329728ea185ull;
        x ^= x >> 27;
        x += 0x9e3779b97f4a7c15ull;
    }
    w->ix = x;
}

/* float: 64 steps of a damped rotation plus a square root, all double. */
static void unit_float(struct cpu_worker *w)
{
    double x = w->fx, y = w->fy;
    for (int i = 0; i < 64; i++) {
        double nx = 0.8 * x - 0.6 * y + 0.001;
        double ny = 0.6 * x + 0.8 * y;
        x = nx;
        y = ny + 1e-3 * sqrt(fabs(nx) + 1.0);
    }
    w->fx = x;
    w->fy = y;
}

/* matrix: one 16 x 16 double matrix product, accumulated. */
static void unit_matrix(struct cpu_worker *w)
{
    for (int i = 0; i < MAT_N; i++)
        for (int j = 0; j < MAT_N; j++) {
            double s = 0;
            for (int k = 0; k < MAT_N; k++)
                s += w->a[i][k] * w->b[k][j];
            w->m[i][j] = s * 1e-3 + w->m[i][j] * 0.5;
        }
    w->a[0][0] = w->m[MAT_N - 1][MAT_N - 1];   /* a dependency between products */
}

static void run_units(struct cpu_worker *w, enum cpu_method m, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        switch (m) {
        case CM_INTEGER: unit_integer(w); break;
        case CM_FLOAT: unit_float(w); break;
        case CM_MATRIX: unit_matrix(w); break;
        case CM_MIXED: unit_integer(w); unit_float(w); unit_matrix(w); break;
        }
    }
    w->sink = w->ix ^ (uint64_t)(w->fx * 1e6) ^ (uint64_t)(w->m[1][1] * 1e6);
}

/* Chunk: 1/100 of the busy phase, between 2 and 50 us of CPU time. */
static int cpu_prepare(struct load_thread *t)
{
    const struct load_options *o = &t->ctx->opt;
    struct cpu_worker *w = calloc(1, sizeof *w);
    if (!w) {
        load_fail(t, ENOMEM, "allocating the work state");
        return -1;
    }
    w->ix = 0x1234567ull + (uint64_t)t->worker;
    w->fx = 0.5;
    w->fy = 0.25;
    for (int i = 0; i < MAT_N; i++)
        for (int j = 0; j < MAT_N; j++) {
            w->a[i][j] = (double)((i * 7 + j * 3) % 11) / 11.0;
            w->b[i][j] = (double)((i * 5 + j) % 13) / 13.0;
        }
    t->state = w;

    double busy = o->percent / 100.0 * (double)o->period_ns;
    double target = busy / 100.0;
    target = target < 2000 ? 2000 : target > 50000 ? 50000 : target;
    uint64_t n = 1, spent = 0;
    for (;;) {
        uint64_t c0 = load_thread_cpu_ns();
        run_units(w, o->method, n);
        spent = load_thread_cpu_ns() - c0;
        if (spent >= 200000 || n >= (1ull << 40))
            break;
        n *= 2;
    }
    double per_unit = (double)spent / (double)n;
    w->units = (uint64_t)(target / (per_unit > 0 ? per_unit : 1));
    if (w->units < 1)
        w->units = 1;
    w->chunk_ns = (uint64_t)(per_unit * (double)w->units);
    return 0;
}

static void cpu_body(struct load_thread *t)
{
    const struct load_options *o = &t->ctx->opt;
    struct cpu_worker *w = t->state;
    const uint64_t period = o->period_ns;
    const uint64_t busy = (uint64_t)(o->percent / 100.0 * (double)period + 0.5);
    const uint64_t half_chunk = w->chunk_ns / 2;

    if (busy >= period) {   /* 100 %: no sleep at all */
        while (!load_stopping()) {
            run_units(w, o->method, w->units);
            load_add(&t->ops, w->units);
        }
        return;
    }
    /* CPU-time budget of the thread clock: each period adds `busy`, every
     * nanosecond the thread runs (work, and the cost of sleeping and waking)
     * takes from it, so per-period overheads are paid back in the next busy
     * phase. Unused budget is not carried beyond one period: a load that was
     * kept off its CPU does not burst afterwards. */
    int64_t credit = 0;
    /* A budget smaller than one chunk builds up to a chunk, run every few periods. */
    const int64_t cap = (int64_t)(busy > w->chunk_ns ? busy : w->chunk_ns);
    uint64_t c_last = load_thread_cpu_ns();
    uint64_t next = t->ctx->start_ns + period;   /* end of the current period */
    for (;;) {
        credit += (int64_t)busy;
        if (credit > cap)
            credit = cap;
        else if (credit < -cap)   /* overheads above the budget (tiny periods): no endless debt */
            credit = -cap;
        const uint64_t begin = next - period;
        while (busy > 0) {
            uint64_t now = mono_ns();
            if (o->busy_clock == BC_THREAD) {
                uint64_t c = load_thread_cpu_ns();
                credit -= (int64_t)(c - c_last);
                c_last = c;
                if (credit <= (int64_t)half_chunk)
                    break;
            } else if (now - begin + half_chunk >= busy) {
                break;
            }
            if (now >= next) {
                load_add(&t->counter[0], 1);   /* short period: the budget was not granted in time */
                break;
            }
            run_units(w, o->method, w->units);
            load_add(&t->ops, w->units);
            if (load_stopping())
                return;
        }
        uint64_t now = mono_ns();
        if (now >= next)   /* overran: the periods already gone are skipped */
            next += ((now - next) / period + 1) * period;
        load_sleep_until(next);
        if (load_stopping())
            return;
        next += period;
    }
}

static void cpu_params(const struct load_ctx *c, struct jw *w)
{
    const struct load_options *o = &c->opt;
    jw_double(w, "percent", o->percent);
    jw_uint(w, "period_ns", o->period_ns);
    jw_str(w, "method", load_method_name(o->method));
    jw_str(w, "busy_clock", o->busy_clock == BC_THREAD ? "thread" : "wall");
}

const struct load_kind load_kind_cpu = {
    .name = "cpu",
    .roles = 1,
    .role_names = {"worker"},
    .has_ops = 1,
    .counters = {"short_periods", NULL},
    .params = cpu_params,
    .prepare = cpu_prepare,
    .body = {cpu_body},
    .cleanup = load_free_thread_states,
};

/* ---- timer ---------------------------------------------------------------------------------- */

struct timer_worker {
    uint64_t late_max_ns;
};

static int timer_prepare(struct load_thread *t)
{
    t->state = calloc(1, sizeof(struct timer_worker));
    if (!t->state) {
        load_fail(t, ENOMEM, "allocating the timer state");
        return -1;
    }
    return 0;
}

static void timer_body(struct load_thread *t)
{
    const struct load_options *o = &t->ctx->opt;
    struct timer_worker *tw = t->state;
    const uint64_t interval = (uint64_t)((double)o->workers * 1e9 / o->rate_hz + 0.5);
    uint64_t deadline = t->ctx->start_ns + interval + interval * (uint64_t)t->worker / (uint64_t)o->workers;

    while (!load_stopping()) {
        struct timespec ts = load_ts(deadline);
        int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (rc == EINTR)
            continue;
        if (rc != 0) {
            load_fail(t, rc, "clock_nanosleep");
            return;
        }
        uint64_t now = mono_ns();
        uint64_t late = now > deadline ? now - deadline : 0;
        load_add(&t->ops, 1);
        load_add(&t->counter[1], late);
        if (late > tw->late_max_ns)
            tw->late_max_ns = late;
        uint64_t skipped = late / interval;
        if (skipped)
            load_add(&t->counter[0], skipped);
        deadline += (skipped + 1) * interval;
    }
}

static void timer_params(const struct load_ctx *c, struct jw *w)
{
    const struct load_options *o = &c->opt;
    jw_double(w, "rate_hz", o->rate_hz);
    jw_uint(w, "interval_ns", (uint64_t)((double)o->workers * 1e9 / o->rate_hz + 0.5));
}

static void timer_extra(const struct load_ctx *c, struct jw *w, const uint64_t *counters, uint64_t ops, int result)
{
    if (ops)
        jw_double(w, "late_avg_ns", (double)counters[1] / (double)ops);
    else
        jw_null(w, "late_avg_ns");
    if (result) {
        uint64_t mx = 0;
        for (int i = 0; i < c->nthreads; i++) {
            const struct timer_worker *tw = c->threads[i].state;
            if (tw && tw->late_max_ns > mx)
                mx = tw->late_max_ns;
        }
        jw_uint(w, "late_max_ns", mx);
    }
}

const struct load_kind load_kind_timer = {
    .name = "timer",
    .roles = 1,
    .role_names = {"worker"},
    .has_ops = 1,
    .counters = {"missed", "_late_sum_ns", NULL},
    .params = timer_params,
    .prepare = timer_prepare,
    .body = {timer_body},
    .record_extra = timer_extra,
    .cleanup = load_free_thread_states,
};
