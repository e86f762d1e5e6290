#include "irqlat.h"

#include <stdbool.h>
#include <stddef.h>

#include "clock.h"
#include "console.h"
#include "arch.h"
#include "hist.h"
#include "jsonw.h"
#include "numfmt.h"
#include "parse.h"
#include "records.h"
#include "stop.h"

#define MAX_THRESHOLDS 16
#define TICK_NS 1000000000ull
#define NO_STALL UINT64_MAX

struct irqlat_options {
    uint64_t interval_ns, loops, duration_ns;
    uint64_t thresholds_ns[MAX_THRESHOLDS];
    int nthresholds;
    /* Ground truth: interrupts masked for stall_ns past the deadline of
     * activation stall_at (or of the first after it that is not missed). */
    uint64_t stall_ns, stall_at;
};

/* What the main loop gathers from the handler's queue. */
struct irqlat_figures {
    uint64_t over[MAX_THRESHOLDS];
    uint64_t max_index;
    uint64_t stall_index;      /* the activation stalled: NO_STALL until then */
    uint64_t stall_latency_ns;
};

static struct hist total;   /* 59 KiB: in BSS, not on the 64 KiB stack */

static int usage(const char *what, const char *arg, const char *fix)
{
    return record_usage("latency", what, arg, fix);
}

static int parse_options(int argc, char **argv, struct irqlat_options *o)
{
    *o = (struct irqlat_options){.interval_ns = 1000000, .stall_at = NO_STALL};
    bool stall_us = false;
    for (int i = 1; i < argc; i++) {
        const char *name, *arg;
        if (record_option("latency", argc, argv, &i, &name, &arg))
            return 2;
        int bad;
        if (!__builtin_strcmp(name, "--interval-us"))
            bad = parse_scaled(arg, 1000, 1000, 3600000000000ull, &o->interval_ns);
        else if (!__builtin_strcmp(name, "--duration-s"))
            bad = parse_scaled(arg, 1000000000, 1000000, 10000000000000000ull, &o->duration_ns);
        else if (!__builtin_strcmp(name, "--loops"))
            bad = parse_u64(arg, UINT64_MAX / 2, &o->loops) || !o->loops;
        else if (!__builtin_strcmp(name, "--threshold-us")) {
            if (o->nthresholds == MAX_THRESHOLDS)
                return usage("too many --threshold-us", NULL, "at most 16 are supported.");
            bad = parse_scaled(arg, 1000, 1, 3600000000000ull, &o->thresholds_ns[o->nthresholds++]);
        } else if (!__builtin_strcmp(name, "--stall-us")) {
            bad = parse_scaled(arg, 1000, 1, 60000000000ull, &o->stall_ns);
            stall_us = true;
        } else if (!__builtin_strcmp(name, "--stall-at"))
            bad = parse_u64(arg, UINT64_MAX / 2, &o->stall_at);
        else
            return usage("unknown option", name,
                         "the image's latency takes --interval-us, --duration-s, --loops, --threshold-us, "
                         "--stall-us and --stall-at.");
        if (bad)
            return usage("bad value", arg, "give a positive decimal number in the option's range.");
    }
    if (!o->duration_ns && !o->loops)
        return usage("no end given", NULL,
                     "give --duration-s or --loops: the image runs to an end it knows, unless the host stops it.");
    if (stall_us != (o->stall_at != NO_STALL))
        return usage("a stall needs both", NULL, "give --stall-us and --stall-at together.");
    return 0;
}

static void print_meta(int argc, char **argv, const struct irqlat_options *o)
{
    struct jw w = {0};
    record_meta_begin(&w, "latency", argc, argv);
    jw_obj(&w, "params");
    jw_uint(&w, "interval_ns", o->interval_ns);
    jw_uint(&w, "loops", o->loops);
    jw_uint(&w, "duration_ns", o->duration_ns);
    jw_arr(&w, "thresholds_ns");
    for (int i = 0; i < o->nthresholds; i++)
        jw_uint(&w, NULL, o->thresholds_ns[i]);
    jw_end(&w);
    jw_uint(&w, "stall_ns", o->stall_ns);
    if (o->stall_at == NO_STALL)
        jw_null(&w, "stall_at");
    else
        jw_uint(&w, "stall_at", o->stall_at);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

/* Records what the handler queued; interrupts masked, so head is still. */
static void drain(const struct irqlat_options *o, struct irqlat_figures *f)
{
    volatile struct irqlat_state *s = &irqlat;
    while (s->tail != s->head) {
        uint32_t t = s->tail;
        uint64_t ns = ticks_to_ns(s->ring_latency[t % IRQLAT_RING]), index = s->ring_index[t % IRQLAT_RING];
        if (!total.count || ns > total.max)
            f->max_index = index;
        hist_record(&total, ns);
        for (int i = 0; i < o->nthresholds; i++)
            f->over[i] += ns > o->thresholds_ns[i];
        if (index == f->stall_index)
            f->stall_latency_ns = ns;
        s->tail = t + 1;
    }
}

/* The ground truth: interrupts masked from before the armed deadline until
 * stall_ns after it, so that activation's latency is at least stall_ns
 * whatever the machine does. */
static void stall(uint64_t stall_ticks)
{
    uint64_t until = irqlat.deadline + stall_ticks;
    while (counter_now() < until)
        ;
}

static void print_result(const struct irqlat_options *o, const struct irqlat_figures *f, bool all)
{
    struct jw w = {0};
    jw_record(&w, "result");
    if (all)
        jw_str(&w, "cpu", "all");
    else
        jw_int(&w, "cpu", 0);
    jw_uint(&w, "missed", irqlat.missed);
    jw_uint(&w, "activations", irqlat.handled + irqlat.missed);
    hist_write_stats(&total, &w);
    if (total.count)
        jw_uint(&w, "max_index", f->max_index);
    else
        jw_null(&w, "max_index");
    jw_obj(&w, "over");
    for (int i = 0; i < o->nthresholds; i++) {
        char key[NUMFMT_INT_MAX];
        fmt_uint(key, o->thresholds_ns[i]);
        jw_uint(&w, key, f->over[i]);
    }
    jw_end(&w);
    hist_write_json(&total, &w, "histogram");
    if (o->stall_at != NO_STALL) {
        jw_obj(&w, "stall");
        jw_uint(&w, "at", o->stall_at);
        jw_uint(&w, "ns", o->stall_ns);
        if (f->stall_index != NO_STALL) {
            jw_uint(&w, "index", f->stall_index);
            jw_uint(&w, "latency_ns", f->stall_latency_ns);
        } else {
            jw_null(&w, "index");        /* the run ended before activation stall_at */
            jw_null(&w, "latency_ns");
        }
        jw_end(&w);
    }
    jw_emit(&w);
    jw_free(&w);
}

int irqlat_command(int argc, char **argv)
{
    struct irqlat_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    print_meta(argc, argv, &o);

    uint64_t activations = o.duration_ns ? o.duration_ns / o.interval_ns : UINT64_MAX;
    if (o.loops && o.loops < activations)
        activations = o.loops;
    if (!activations)
        activations = 1;
    struct irqlat_figures f = {.stall_index = NO_STALL};
    hist_reset(&total);
    irq_mask();
    irqlat.interval = ns_to_ticks(o.interval_ns);
    irqlat.activations = activations;
    irqlat.handled = irqlat.missed = irqlat.lost = 0;
    irqlat.done = 0;
    irqlat.head = irqlat.tail = 0;
    irqlat.index = 0;
    irq_set_timer_handler(irqlat_on_timer);
    uint64_t start = counter_now(), stall_ticks = ns_to_ticks(o.stall_ns), next_tick = clock_ns() + TICK_NS;
    bool stalled = o.stall_at == NO_STALL;
    irqlat.deadline = start + irqlat.interval;
    timer_arm(irqlat.deadline);
    for (;;) {
        drain(&o, &f);
        if (irqlat.done)
            break;
        if (!stalled && irqlat.index >= o.stall_at) {
            f.stall_index = irqlat.index;
            stall(stall_ticks);
            stalled = true;
        }
        wait_for_interrupt();
        irq_unmask();   /* the pending interrupt is taken here */
        record_tick_due(&next_tick);
        irq_mask();
        if (stop_requested()) {
            timer_off();
            drain(&o, &f);
            break;
        }
    }
    irq_set_timer_handler(NULL);
    irq_unmask();
    uint64_t elapsed = ticks_to_ns(counter_now() - start);
    print_result(&o, &f, false);
    print_result(&o, &f, true);
    if (irqlat.lost) {
        struct jw w = {0};
        jw_record(&w, "warning");
        jw_str(&w, "code", "latencies_lost");
        jw_uint(&w, "lost", irqlat.lost);
        jw_str(&w, "message", "the main loop fell behind the interrupt handler: some latencies are not in the histogram");
        jw_emit(&w);
        jw_free(&w);
    }
    record_end_stopped(elapsed, stop_requested());
    return 0;
}
