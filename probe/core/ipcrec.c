#include "ipcrec.h"

#include <stddef.h>

#include "hist.h"
#include "jsonw.h"

void ipc_write_limits(struct jw *w, int serve, const uint64_t *sizes, int nsizes, uint64_t count,
                      uint64_t duration_ns, uint64_t warmup)
{
    if (serve) {
        jw_null(w, "sizes_bytes");
        jw_null(w, "count");
        jw_null(w, "duration_ns");
        jw_null(w, "warmup");
        return;
    }
    jw_arr(w, "sizes_bytes");
    for (int i = 0; i < nsizes; i++)
        jw_uint(w, NULL, sizes[i]);
    jw_end(w);
    if (count)
        jw_uint(w, "count", count);
    else
        jw_null(w, "count");
    jw_uint(w, "duration_ns", duration_ns);
    jw_uint(w, "warmup", warmup);
}

void ipc_write_client_head(struct jw *w, const char *transport, const char *peer, uint64_t size, uint64_t count,
                           uint64_t warmup, int complete, int verified)
{
    jw_record(w, "result");
    jw_str(w, "role", "client");
    jw_str(w, "transport", transport);
    jw_str(w, "peer", peer);
    jw_uint(w, "size_bytes", size);
    jw_uint(w, "count", count);
    jw_uint(w, "warmup", warmup);
    jw_bool(w, "complete", complete);
    if (verified < 0)
        jw_null(w, "verified");
    else
        jw_bool(w, "verified", verified);
}

void ipc_write_round_trips(struct jw *w, const struct hist *h, uint64_t size, uint64_t elapsed_ns)
{
    static const struct { const char *key; double p; } pct[] = {
        {"p50_ns", 50}, {"p90_ns", 90}, {"p99_ns", 99}, {"p999_ns", 99.9}, {"p9999_ns", 99.99},
    };
    if (h->count) {
        jw_uint(w, "min_ns", h->min);
        jw_double(w, "avg_ns", hist_mean(h));
        jw_uint(w, "max_ns", h->max);
        jw_double(w, "stddev_ns", hist_stddev(h));
        for (size_t i = 0; i < sizeof pct / sizeof *pct; i++)
            jw_uint(w, pct[i].key, hist_percentile(h, pct[i].p));
    } else {
        static const char *const keys[] = {"min_ns", "avg_ns", "max_ns", "stddev_ns", "p50_ns", "p90_ns",
                                           "p99_ns", "p999_ns", "p9999_ns"};
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            jw_null(w, keys[i]);
    }
    jw_uint(w, "elapsed_ns", elapsed_ns);
    double secs = (double)elapsed_ns / 1e9;
    jw_double(w, "round_trips_per_s", secs > 0 ? (double)h->count / secs : __builtin_nan(""));
    jw_double(w, "payload_bps", secs > 0 ? 2.0 * (double)size * (double)h->count / secs : __builtin_nan(""));
}

void ipc_write_corruption(struct jw *w, const char *direction, uint64_t seq, long offset, uint8_t expected,
                          uint8_t got, uint64_t count)
{
    jw_obj(w, "corruption");
    jw_str(w, "direction", direction);
    jw_uint(w, "message", seq);
    jw_int(w, "offset", offset);
    jw_int(w, "expected", expected);
    jw_int(w, "got", got);
    jw_uint(w, "messages_affected", count);
    jw_end(w);
}
