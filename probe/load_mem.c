/*
 * load kinds `mem` (memory-bandwidth hog), `cache` (last-level-cache
 * thrash) and `leak` (memory that grows at a rate up to a limit, then holds).
 *
 * mem: each worker streams over its own buffer in 256 KiB chunks: reads
 * every 64-bit word (read), fills it (write), or copies its first half onto
 * its second (copy). `bytes` counts bytes read plus bytes written.
 *
 * cache: each worker increments one byte of a random cache line of its own
 * buffer, over and over (xorshift addresses: no prefetcher can follow, and
 * the next address never waits for the previous load, so many misses are in
 * flight). With a buffer twice the LLC, nearly every access misses the LLC
 * and evicts another task's line. `ops` counts lines touched.
 *
 * leak: one worker touches (writes) the pages of an anonymous reservation at
 * the requested rate, in 10 ms steps, so the resident set really grows; at
 * the limit it holds the memory until the load stops. Base pages only
 * (MADV_NOHUGEPAGE), so the growth is smooth whatever the THP setting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"
#include "memutil.h"
#include "probe.h"

#define MEM_CHUNK (256 * 1024)

struct mem_worker {
    struct mem_buf buf;
    int mapped;
    volatile uint64_t sink;
};

/* A buffer of its own per worker, mapped and touched by the thread that
 * uses it (so it is local to that thread's node), before the start. */
static int map_worker_buffer(struct load_thread *t)
{
    struct mem_worker *m = calloc(1, sizeof *m);
    if (!m) {
        load_fail(t, ENOMEM, "allocating the worker state");
        return -1;
    }
    t->state = m;
    if (mem_buf_map(&m->buf, t->ctx->opt.buffer_bytes, HP_OFF) != 0) {
        load_fail(t, ENOMEM, "mapping the buffer");
        return -1;
    }
    m->mapped = 1;
    memset(m->buf.p, 0x11, m->buf.len);
    return 0;
}

static void unmap_worker_buffers(struct load_ctx *c)
{
    for (int i = 0; c->threads && i < c->nthreads; i++) {
        struct mem_worker *m = c->threads[i].state;
        if (m && m->mapped)
            mem_buf_unmap(&m->buf);
        free(m);
        c->threads[i].state = NULL;
    }
}

/* ---- mem ------------------------------------------------------------------------------------ */

static uint64_t read_words(const char *p, size_t len)
{
    const uint64_t *w = (const uint64_t *)(const void *)p;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t n = len / sizeof *w;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
    }
    return s0 ^ s1 ^ s2 ^ s3;
}

static void mem_body(struct load_thread *t)
{
    struct mem_worker *m = t->state;
    const enum mem_op op = t->ctx->opt.mem_op;
    char *p = m->buf.p;
    size_t len = m->buf.len, chunk = MEM_CHUNK, region, half = len / 2;
    uint64_t done = 0;
    unsigned char v = 0x22;

    if (op == MO_COPY) {
        if (chunk > half)
            chunk = half;
        region = half - half % chunk;
    } else {
        if (chunk > len)
            chunk = len;
        region = len - len % chunk;
    }
    for (size_t off = 0; !load_stopping();) {
        uint64_t n;
        switch (op) {
        case MO_READ:
            m->sink += read_words(p + off, chunk);
            n = chunk;
            break;
        case MO_WRITE:
            memset(p + off, v, chunk);
            n = chunk;
            break;
        default:
            memcpy(p + half + off, p + off, chunk);
            n = 2 * (uint64_t)chunk;
            break;
        }
        done += n;
        load_add(&t->bytes, n);
        off += chunk;
        if (off >= region) {
            off = 0;
            v++;
            load_add(&t->counter[0], 1);   /* one pass over the buffer */
        }
        load_pace_bytes(t, done);
    }
}

static void mem_params(const struct load_ctx *c, struct jw *w)
{
    const struct load_options *o = &c->opt;
    jw_uint(w, "buffer_size_bytes", o->buffer_bytes);
    jw_str(w, "op", load_mem_op_name(o->mem_op));
    jw_uint(w, "limit_bps", o->limit_bps);
    jw_uint(w, "chunk_bytes", MEM_CHUNK);
}

const struct load_kind load_kind_mem = {
    .name = "mem",
    .roles = 1,
    .role_names = {"worker"},
    .has_bytes = 1,
    .counters = {"passes", NULL},
    .params = mem_params,
    .prepare = map_worker_buffer,
    .body = {mem_body},
    .cleanup = unmap_worker_buffers,
};

/* ---- cache ---------------------------------------------------------------------------------- */

/* "32768K", "8M", "512" (bytes); -1 if malformed. */
static int64_t parse_cache_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0)
        return -1;
    switch (*end) {
    case 'K': v <<= 10; break;
    case 'M': v <<= 20; break;
    case 'G': v <<= 30; break;
    default: break;
    }
    return v;
}

/* The largest-level data or unified cache of a CPU, from sysfs. */
static void find_llc(int cpu, int64_t *bytes, int *level, uint64_t *line)
{
    char path[128], v[64];
    *bytes = -1;
    *level = 0;
    for (int i = 0; i < 16; i++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
        if (read_line(path, v, sizeof v) != 0)
            continue;
        if (strcmp(v, "Data") && strcmp(v, "Unified"))
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
        if (read_line(path, v, sizeof v) != 0)
            continue;
        int lv = atoi(v);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
        if (read_line(path, v, sizeof v) != 0)
            continue;
        int64_t sz = parse_cache_size(v);
        if (sz <= 0 || lv < *level)
            continue;
        *level = lv;
        *bytes = sz;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/coherency_line_size", cpu, i);
        if (read_line(path, v, sizeof v) == 0 && atoi(v) >= 16 && atoi(v) <= 4096)
            *line = (uint64_t)atoi(v);
    }
}

static int cache_setup(struct load_ctx *c, char *err, size_t errlen)
{
    struct load_options *o = &c->opt;
    (void)err;
    (void)errlen;
    find_llc(o->ncpus ? o->cpus[0] : 0, &o->llc_bytes, &o->llc_level, &o->line_bytes);
    if (o->buffer_source == BS_OPTION)
        return 0;
    if (o->llc_bytes > 0) {
        o->buffer_bytes = 2 * (uint64_t)o->llc_bytes;
        if (o->buffer_bytes > MEM_MAX_BYTES)
            o->buffer_bytes = MEM_MAX_BYTES;
    } else {
        o->buffer_source = BS_DEFAULT;
        o->buffer_bytes = 32ull << 20;
    }
    return 0;
}

static void cache_warn(const struct load_ctx *c)
{
    if (c->opt.buffer_source == BS_DEFAULT)
        jw_warning("llc_unknown", "the last-level cache size is not in /sys/devices/system/cpu/cpu%d/cache, so the "
                   "cache load uses 32 MiB per worker; give --buffer-size to match the platform.",
                   c->opt.ncpus ? c->opt.cpus[0] : 0);
}

static void cache_body(struct load_thread *t)
{
    struct mem_worker *m = t->state;
    const uint64_t line = t->ctx->opt.line_bytes;
    const uint64_t lines = m->buf.len / line;
    unsigned char *p = (unsigned char *)m->buf.p;
    uint64_t x = 0x9e3779b97f4a7c15ull ^ ((uint64_t)t->worker << 32), done = 0;
    enum { BATCH = 4096 };

    while (!load_stopping()) {
        for (int i = 0; i < BATCH; i++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            uint64_t r = x * 0x2545f4914f6cdd1dull;
            uint64_t idx = ((r >> 32) * lines) >> 32;
            p[idx * line + (r & 7)]++;
        }
        load_add(&t->ops, BATCH);
        load_add(&t->bytes, BATCH * line);
        done += BATCH * line;
        load_pace_bytes(t, done);
    }
}

static void cache_params(const struct load_ctx *c, struct jw *w)
{
    const struct load_options *o = &c->opt;
    static const char *const src[] = {"option", "llc", "default"};
    jw_uint(w, "buffer_size_bytes", o->buffer_bytes);
    jw_str(w, "buffer_size_source", src[o->buffer_source]);
    if (o->llc_bytes > 0) {
        jw_int(w, "llc_bytes", o->llc_bytes);
        jw_int(w, "llc_level", o->llc_level);
    } else {
        jw_null(w, "llc_bytes");
        jw_null(w, "llc_level");
    }
    jw_uint(w, "line_size_bytes", o->line_bytes);
    jw_uint(w, "limit_bps", o->limit_bps);
}

const struct load_kind load_kind_cache = {
    .name = "cache",
    .roles = 1,
    .role_names = {"worker"},
    .has_bytes = 1,
    .has_ops = 1,
    .counters = {NULL},
    .setup = cache_setup,
    .params = cache_params,
    .warn = cache_warn,
    .prepare = map_worker_buffer,
    .body = {cache_body},
    .cleanup = unmap_worker_buffers,
};

/* ---- leak ----------------------------------------------------------------------------------- */

struct leak_state {
    struct mem_buf buf;
    int mapped;
    uint64_t limit;             /* bytes to touch: the limit in whole pages */
    _Atomic uint64_t touched;
    _Atomic uint64_t reached_ns;   /* since the start; 0 = not yet */
};

static struct leak_state leak;

static int leak_setup(struct load_ctx *c, char *err, size_t errlen)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    leak.limit = (c->opt.limit_bytes + page - 1) / page * page;
    if (mem_buf_map(&leak.buf, leak.limit, HP_OFF) != 0) {
        snprintf(err, errlen, "cannot reserve %llu bytes of address space for the leak; lower --limit.",
                 (unsigned long long)leak.limit);
        return -1;
    }
    leak.mapped = 1;
    c->state = &leak;
    return 0;
}

static void leak_body(struct load_thread *t)
{
    const struct load_ctx *c = t->ctx;
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const uint64_t tick = 10000000ull;
    const double bps = c->opt.leak_bps;
    uint64_t touched = 0, next = c->start_ns;

    while (!load_stopping()) {
        uint64_t now = mono_ns();
        uint64_t target = leak.limit;
        if (bps > 0) {
            double due = bps * (double)(now - c->start_ns) / 1e9;
            if (due < (double)leak.limit)
                target = (uint64_t)due / page * page;
        }
        while (touched < target && !load_stopping()) {
            memset(leak.buf.p + touched, 0x5a, (size_t)page);
            touched += page;
            load_add(&t->bytes, page);
            atomic_store_explicit(&leak.touched, touched, memory_order_relaxed);
        }
        if (touched >= leak.limit) {
            atomic_store(&leak.reached_ns, mono_ns() - c->start_ns);
            while (!load_stopping())   /* hold */
                load_sleep_until(mono_ns() + 1000000000ull);
            return;
        }
        next += tick;
        load_sleep_until(next);
    }
}

/* Resident set of this process, from /proc/self/statm; -1 if unreadable. */
static int64_t rss_bytes(void)
{
    char line[128];
    const char *p = line;
    uint64_t size, res;
    if (read_line("/proc/self/statm", line, sizeof line) || scan_u64(&p, &size) || scan_u64(&p, &res))
        return -1;
    return (int64_t)(res * (uint64_t)sysconf(_SC_PAGESIZE));
}

/* VmHWM of /proc/self/status: the peak resident set; -1 if unreadable. */
static int64_t rss_peak_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    int64_t v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            v = strtoll(line + 6, NULL, 10) * 1024;
    if (f)
        fclose(f);
    return v;
}

static void leak_extra(const struct load_ctx *c, struct jw *w, const uint64_t *counters, uint64_t ops, int result)
{
    (void)c;
    (void)counters;
    (void)ops;
    uint64_t touched = atomic_load_explicit(&leak.touched, memory_order_relaxed);
    uint64_t reached = atomic_load(&leak.reached_ns);
    int64_t rss = rss_bytes();
    jw_uint(w, "leaked_bytes", touched);
    if (rss >= 0)
        jw_int(w, "rss_bytes", rss);
    else
        jw_null(w, "rss_bytes");
    jw_bool(w, "holding", reached != 0);
    if (result) {
        int64_t peak = rss_peak_bytes();
        if (peak >= 0)
            jw_int(w, "rss_peak_bytes", peak);
        else
            jw_null(w, "rss_peak_bytes");
        if (reached)
            jw_uint(w, "limit_reached_ns", reached);
        else
            jw_null(w, "limit_reached_ns");
    }
}

static void leak_params(const struct load_ctx *c, struct jw *w)
{
    jw_double(w, "rate_bps", c->opt.leak_bps);
    jw_uint(w, "limit_bytes", c->opt.limit_bytes);
    jw_uint(w, "page_size_bytes", (uint64_t)sysconf(_SC_PAGESIZE));
}

static void leak_cleanup(struct load_ctx *c)
{
    if (leak.mapped)
        mem_buf_unmap(&leak.buf);
    leak.mapped = 0;
    c->state = NULL;
}

const struct load_kind load_kind_leak = {
    .name = "leak",
    .roles = 1,
    .role_names = {"worker"},
    .has_bytes = 1,
    .counters = {NULL},
    .setup = leak_setup,
    .params = leak_params,
    .body = {leak_body},
    .record_extra = leak_extra,
    .cleanup = leak_cleanup,
};
