#include "rtos.h"

#include <stdint.h>

#include "clock.h"
#include "hist.h"
#include "jsonw.h"
#include "parse.h"
#include "port.h"
#include "port_records.h"
#include "port_tests.h"
#include "records.h"

#define SUB "rtos"
#define DEFAULT_COUNT 1000
#define MAX_COUNT 1000000

struct rtos_options {
    uint64_t count;
    unsigned tests;   /* bit i: port_test_names[i] */
};

/* 59 KiB each: in BSS, not on a task's stack. */
static struct hist round_trip, forward, back;

static int usage(const char *what, const char *arg, const char *fix) { return record_usage(SUB, what, arg, fix); }

/* Whether s starts with the word w, ended by a comma or the end. */
static int starts_with_word(const char *s, const char *w)
{
    while (*w && *s == *w)
        s++, w++;
    return !*w && (*s == ',' || !*s);
}

/* "all" or names of port_test_names, comma separated: 0, or -1. */
static int parse_tests(const char *s, unsigned *mask)
{
    if (!__builtin_strcmp(s, "all")) {
        *mask = (1u << PORT_NTESTS) - 1;
        return 0;
    }
    *mask = 0;
    while (*s) {
        int found = -1;
        for (int t = 0; t < PORT_NTESTS && found < 0; t++) {
            if (starts_with_word(s, port_test_names[t]))
                found = t;
        }
        if (found < 0)
            return -1;
        *mask |= 1u << found;
        s += __builtin_strlen(port_test_names[found]);
        if (*s == ',' && !*++s)
            return -1;
    }
    return *mask ? 0 : -1;
}

static int parse_options(int argc, char **argv, struct rtos_options *o)
{
    *o = (struct rtos_options){.count = DEFAULT_COUNT, .tests = (1u << PORT_NTESTS) - 1};
    for (int i = 1; i < argc; i++) {
        const char *name, *arg;
        if (record_option(SUB, argc, argv, &i, &name, &arg))
            return 2;
        if (!__builtin_strcmp(name, "--count")) {
            if (parse_u64(arg, MAX_COUNT, &o->count) || !o->count)
                return usage("bad value", arg, "give --count from 1 to 1000000.");
        } else if (!__builtin_strcmp(name, "--tests")) {
            if (parse_tests(arg, &o->tests))
                return usage("bad --tests", arg,
                             "give all or a comma-separated list of task_activate, sem_wake, sem_pingpong, irq_task.");
        } else {
            return usage("unknown option", name, "the image's rtos takes --count and --tests.");
        }
    }
    return 0;
}

static void print_meta(int argc, char **argv, const struct rtos_options *o)
{
    struct jw w = {0};
    record_meta_begin(&w, SUB, argc, argv);
    jw_obj(&w, "params");
    jw_str(&w, "policy", "fifo");
    jw_int(&w, "priority", PORT_PRIO_HIGH);
    jw_uint(&w, "count", o->count);
    jw_bool(&w, "port", 1);
    jw_arr(&w, "tests");
    for (int t = 0; t < PORT_NTESTS; t++)
        if (o->tests & (1u << t))
            jw_str(&w, NULL, port_test_names[t]);
    jw_end(&w);
    jw_uint(&w, "warmup", PORT_WARMUP);
    jw_uint(&w, "timer_period_ns", PORT_TIMER_AHEAD_NS);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
}

struct run {
    const struct rtos_options *o;
    const char *why;
};

/* port_run's main task: the tests in order, each result as soon as it
 * ends, a tick between them. */
static void tests_main(void *arg)
{
    struct run *run = arg;
    static struct port_result r = {.h = &round_trip, .fwd = &forward, .back = &back};
    uint64_t next_tick = clock_ns() + 1000000000ull;
    for (int t = 0; t < PORT_NTESTS && !run->why; t++) {
        if (!(run->o->tests & (1u << t)))
            continue;
        const char *why = NULL;
        if (port_test_run((enum port_test)t, run->o->count, &r, &why))
            run->why = why;
        port_write_result((enum port_test)t, &r, run->why);
        record_tick_due(&next_tick);
    }
}

int rtos_command(int argc, char **argv)
{
    struct rtos_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    uint64_t start = clock_ns();
    print_meta(argc, argv, &o);
    struct run run = {.o = &o};
    const char *why = NULL;
    if (port_run(PORT_PRIO_MAIN, tests_main, &run, &why))
        run.why = why;
    record_end(clock_ns() - start);
    return 0;
}
