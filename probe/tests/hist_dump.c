/*
 * Prints the records of a fixed set of samples with the core alone: a
 * latency-like result (statistics and histogram) and a record of awkward
 * doubles. Built twice (Makefile): with the Linux probe's output side, and
 * with the core compiled freestanding beside hist_dump_sink.c; the two
 * outputs must be the same bytes (tests/test_probe_core_freestanding.py).
 */
#include <stdint.h>

#include "hist.h"
#include "jsonw.h"
#include "xorshift.h"

/* The same samples in both builds. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return xorshift64s(&rng_state); }

static struct hist h, tail;

int main(void)
{
    hist_reset(&h);
    hist_reset(&tail);
    /* A floor near 15 us, a spread of a few us and a long tail up to ms. */
    for (int i = 0; i < 100000; i++) {
        uint64_t r = rnd();
        uint64_t v = 15000 + r % 3000;
        if (i % 97 == 0)
            v += (r >> 20) % 2000000;
        hist_record(i % 3 ? &h : &tail, v);
    }
    hist_merge(&h, &tail);

    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "cpu", "all");
    jw_uint(&w, "missed", 3);
    hist_write_stats(&h, &w);
    hist_write_json(&h, &w, "histogram");
    jw_emit(&w);

    static const double awkward[] = {0.0, -0.0, 1e-7, 0.1, 2.0 / 3.0, 123456.5, 12345678905.0, 1e300, 5e-324};
    jw_record(&w, "doubles");
    jw_arr(&w, "values");
    for (unsigned i = 0; i < sizeof awkward / sizeof *awkward; i++)
        jw_double(&w, NULL, awkward[i]);
    jw_end(&w);
    jw_int(&w, "int_min", INT64_MIN);
    jw_str(&w, "escapes", "tab\there \"quoted\" \x01");
    jw_emit(&w);
    jw_free(&w);
    return 0;
}
