#include "port_records.h"

#include "jsonw.h"
#include "port.h"

/* Half of a round trip's statistics: what one direction costs when both are alike. */
static void write_half(struct jw *w, const struct hist *h)
{
    jw_obj(w, "half_round_trip");
    if (h->count) {
        jw_double(w, "min_ns", (double)h->min / 2);
        jw_double(w, "avg_ns", hist_mean(h) / 2);
        jw_double(w, "p50_ns", (double)hist_percentile(h, 50) / 2);
        jw_double(w, "p99_ns", (double)hist_percentile(h, 99) / 2);
        jw_double(w, "max_ns", (double)h->max / 2);
    }
    jw_end(w);
}

void port_write_pingpong(struct jw *w, const struct hist *round_trip, const struct hist *fwd,
                         const struct hist *back)
{
    write_half(w, round_trip);
    jw_obj(w, "forward");
    hist_write_stats(fwd, w);
    jw_end(w);
    jw_obj(w, "back");
    hist_write_stats(back, w);
    jw_end(w);
}

void port_write_result(enum port_test t, const struct port_result *r, const char *error)
{
    struct port_info info;
    port_describe(&info);
    struct jw w = {0};
    jw_record(&w, "result");
    jw_str(&w, "test", port_test_names[t]);
    jw_str(&w, "policy", info.policy);
    jw_str(&w, "policy_granted", info.policy_granted);
    jw_int(&w, "priority", info.priority_base + PORT_PRIO_HIGH);
    jw_int(&w, "cpu", info.cpu);
    jw_str(&w, "via", "port");
    hist_write_stats(r->h, &w);
    jw_uint(&w, "missed", 0);
    jw_uint(&w, "attempted", r->h->count);
    jw_uint(&w, "clock_read_ns", r->clock_read_ns);
    jw_uint(&w, "warmup", PORT_WARMUP);
    jw_uint(&w, "runs", r->runs);
    jw_uint(&w, "in_order", r->in_order);
    jw_uint(&w, "sem_left", r->sem_left);
    if (t == PORT_SEM_PINGPONG) {
        port_write_pingpong(&w, r->h, r->fwd, r->back);
    }
    if (error)
        jw_str(&w, "error", error);
    hist_write_json(r->h, &w, "histogram");
    jw_emit(&w);
    jw_free(&w);
}
