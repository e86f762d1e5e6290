/*
 * Unit tests of the trace clock's alignment: the offset between a trace
 * buffer's clock and CLOCK_MONOTONIC comes from the probe's own markers, and
 * one marker written late (its thread preempted, its virtual CPU stopped
 * between reading the clock and writing) must not move it.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "trace.h"

/* Lines as the per-CPU trace file prints them; the trace clock is 1000 s
 * ahead of CLOCK_MONOTONIC, and every marker but the late one was written
 * 1 us after its thread read the clock. */
static const char BUFFER[] =
    "# tracer: nop\n"
    "#\n"
    "      rtvb-probe-500     [001] ..... 1000.001001: tracing_mark_write: rtvb-probe wake cycle=0 latency_ns=900 wake_ns=1000000\n"
    "          <idle>-0       [001] d.h1. 1000.001500: local_timer_entry: vector=236\n"
    "      rtvb-probe-500     [001] ..... 1000.002002: tracing_mark_write: rtvb-probe wake cycle=1 latency_ns=950 wake_ns=2000950\n"
    "      rtvb-probe-500     [001] ..... 1000.008101: tracing_mark_write: rtvb-probe breach cycle=2 latency_ns=3100000 wake_ns=3100000\n";

static void test_the_smallest_delay_is_the_offset(void)
{
    int found = 0;
    int64_t offset = trace_clock_offset(BUFFER, strlen(BUFFER), &found);
    /* Markers: 1000.001001 - 0.001000 and 1000.002002 - 0.002000950 give
     * 1000 s + 1 us and + 1.05 us; the breach marker, written 5 ms after its
     * clock read, would give + 5001 us alone. */
    CHECK(found == 1, "markers not found");
    CHECK(offset == 1000000000000LL + 1000, "offset %lld", (long long)offset);
}

static void test_a_buffer_without_markers_is_not_aligned(void)
{
    static const char none[] =
        "          <idle>-0       [001] d.h1. 1000.001500: local_timer_entry: vector=236\n"
        "      rtvb-probe-500     [001] ..... 1000.002002: tracing_mark_write: rtvb-probe wake cycle=1 latency_ns=950\n";
    int found = 1;
    trace_clock_offset(none, strlen(none), &found);
    CHECK(found == 0, "a marker without wake_ns was used");
    found = 1;
    trace_clock_offset("", 0, &found);
    CHECK(found == 0, "an empty buffer was aligned");
}

static void test_a_marker_cut_off_at_the_end_of_the_text_is_read_safely(void)
{
    /* The copy stops right after "wake_ns=": nothing past the end is read. */
    const char *cut = strstr(BUFFER, "wake_ns=1000000");
    size_t len = (size_t)(cut - BUFFER) + strlen("wake_ns=");
    int found = 1;
    trace_clock_offset(BUFFER, len, &found);
    CHECK(found == 0, "a marker without its number was used");
}

int main(void)
{
    test_the_smallest_delay_is_the_offset();
    test_a_buffer_without_markers_is_not_aligned();
    test_a_marker_cut_off_at_the_end_of_the_text_is_read_safely();
    return check_verdict("test-trace_offset");
}
