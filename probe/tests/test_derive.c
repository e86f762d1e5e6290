/*
 * The bounded correction of derived timings: a figure made by subtracting a
 * separately measured cost (the context switch less its ring's hop without a
 * switch) can never be negative. A sample the subtraction takes below zero is
 * 0, counted, and the figure is no longer converged, so the record says that
 * the difference was lost in the noise instead of printing an impossible time.
 */
#include <string.h>

#include "check.h"
#include "os.h"
#include "timing.h"

static struct timing five(const double *v)
{
    struct timing t;
    memset(&t, 0, sizeof t);
    t.samples = 5;
    t.converged = 1;
    memcpy(t.values, v, 5 * sizeof *v);
    return t;
}

int main(void)
{
    /* A primitive cheaper than the noise of what is subtracted: the -0.773 us
     * of a 64 KiB ring that once reached a report. */
    const double noisy[5] = {10.0, 11.0, 9.0, 10.0, 10.2};
    struct timing t = five(noisy);
    os_timing_derive(&t, 1.0, 10.5, NULL, 0.01);
    CHECK(t.clamped == 4, "clamped %d samples, want 4", t.clamped);
    CHECK(t.min_ns == 0.0 && t.median_ns == 0.0, "min %g median %g, want 0", t.min_ns, t.median_ns);
    CHECK(t.ns_per_op >= 0.0 && t.ns_per_op <= 0.5 / 5 + 1e-9, "mean %g", t.ns_per_op);
    for (int i = 0; i < 5; i++)
        CHECK(t.values[i] >= 0.0, "sample %d is %g", i, t.values[i]);
    CHECK(!t.converged, "a clamped figure must not be converged");

    /* Well above the noise: untouched, and converged when precise enough. */
    const double clear[5] = {110.0, 110.5, 109.5, 110.0, 110.0};
    t = five(clear);
    os_timing_derive(&t, 0.5, 5.0, NULL, 0.01);
    CHECK(t.clamped == 0 && t.converged, "clamped %d converged %d", t.clamped, t.converged);
    CHECK(t.median_ns == 50.0 && t.min_ns == 49.75, "median %g min %g", t.median_ns, t.min_ns);

    /* Per-sample subtraction, one sample over: still bounded and flagged. */
    const double sub[5] = {1.0, 1.0, 12.0, 1.0, 1.0};
    t = five(clear);
    os_timing_derive(&t, 0.1, 0.0, sub, 0.5);
    CHECK(t.clamped == 1 && t.min_ns == 0.0 && !t.converged, "clamped %d min %g", t.clamped, t.min_ns);
    return check_verdict("test_derive");
}
