#include "records.h"

#include <stddef.h>

#include "arch.h"
#include "board.h"
#include "clock.h"
#include "console.h"
#include "jsonw.h"
#include "version.h"

#define TICK_NS 1000000000ull

void record_meta_begin(struct jw *w, const char *sub, int argc, char **argv)
{
    jw_record(w, "meta");
    jw_int(w, "schema", RTVB_SCHEMA_VERSION);
    jw_str(w, "probe_version", RTVB_PROBE_VERSION);
    jw_str(w, "subcommand", sub);
    jw_str(w, "arch", ARCH_NAME);
    jw_str(w, "platform", "baremetal");
    jw_str(w, "board", BOARD_NAME);
    jw_uint(w, "counter_hz", counter_hz());
    arch_write_meta(w);
    jw_arr(w, "argv");
    for (int i = 0; i < argc; i++)
        jw_str(w, NULL, argv[i]);
    jw_end(w);
}

void record_end(uint64_t elapsed_ns) { record_end_stopped(elapsed_ns, 0); }

void record_end_stopped(uint64_t elapsed_ns, int stopped)
{
    struct jw w = {0};
    jw_record(&w, "end");
    jw_str(&w, "status", stopped ? "interrupted" : "ok");
    jw_uint(&w, "elapsed_ns", elapsed_ns);
    jw_emit(&w);
    jw_free(&w);
}

int record_usage(const char *sub, const char *what, const char *arg, const char *fix)
{
    console_err("rtvb-probe ", sub, ": ", what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "", "; ", fix, NULL);
    return 2;
}

int record_option(const char *sub, int argc, char **argv, int *i, const char **name, const char **value)
{
    *name = argv[*i];
    if (*i + 1 >= argc)
        return record_usage(sub, "option without a value", *name, "options are --name value pairs.");
    *value = argv[++*i];
    return 0;
}

void record_tick_due(uint64_t *next_ns)
{
    uint64_t now = clock_ns();
    if (now >= *next_ns) {
        console_tick(now);
        *next_ns = now + TICK_NS;
    }
}
