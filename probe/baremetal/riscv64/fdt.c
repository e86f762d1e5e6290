#include "fdt.h"

#define FDT_MAGIC 0xd00dfeedu
#define FDT_BEGIN_NODE 1u
#define FDT_END_NODE 2u
#define FDT_PROP 3u
#define FDT_NOP 4u
#define FDT_END 9u
#define HEADER_SIZE 40u

/* What the walk hands a reader: a node begins (name, the depth inside it),
 * a property of the node at depth (name, value), or a node ends (the depth
 * it leaves to). Names and values lie inside the blob, with their length. */
enum fdt_what { NODE_BEGIN, NODE_PROP, NODE_END };

struct fdt_event {
    enum fdt_what what;
    unsigned depth;
    const uint8_t *name;
    uint32_t name_avail;     /* bytes from name to the end of its table */
    const uint8_t *value;
    uint32_t len;
};

/* Returns nonzero to end the walk there. */
typedef int (*fdt_reader)(void *ctx, const struct fdt_event *e);

enum walk_end { WALK_BROKEN, WALK_ENDED, WALK_STOPPED };

/* Byte by byte: big-endian whatever the CPU, and no alignment assumed. */
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int name_is(const uint8_t *s, uint32_t avail, const char *want)
{
    uint32_t i = 0;
    for (; want[i]; i++)
        if (i >= avail || s[i] != (uint8_t)want[i])
            return 0;
    return i < avail && s[i] == '\0';
}

/* A node's name up to its unit address ("cpu@0" is a "cpu"). */
static int node_is(const uint8_t *s, uint32_t avail, const char *want)
{
    uint32_t i = 0;
    for (; want[i]; i++)
        if (i >= avail || s[i] != (uint8_t)want[i])
            return 0;
    return i < avail && (s[i] == '\0' || s[i] == '@');
}

/* Bytes up to and with the NUL, from off; 0 when the string runs off the end. */
static uint32_t string_len(const uint8_t *base, uint32_t off, uint32_t end)
{
    for (uint32_t i = off; i < end; i++)
        if (!base[i])
            return i - off + 1;
    return 0;
}

static uint64_t cell_value(const uint8_t *p, uint32_t len)
{
    if (len == 4)
        return be32(p);
    if (len == 8)
        return (uint64_t)be32(p) << 32 | be32(p + 4);
    return 0;
}

/* Every node and property in the order of the blob, each checked against
 * the blob's size before the reader sees it. */
static enum walk_end fdt_walk(const void *fdt, size_t max_size, fdt_reader reader, void *ctx)
{
    const uint8_t *h = fdt;
    if (!fdt || max_size < HEADER_SIZE || be32(h) != FDT_MAGIC)
        return WALK_BROKEN;
    uint32_t size = be32(h + 4), off = be32(h + 8), strings = be32(h + 12), version = be32(h + 20);
    uint32_t strings_size = be32(h + 32), struct_size = be32(h + 36);
    if (size < HEADER_SIZE || size > max_size || version < 17 || off % 4 ||
        off > size || struct_size > size - off || strings > size || strings_size > size - strings)
        return WALK_BROKEN;
    uint32_t end = off + struct_size;
    unsigned depth = 0;
    while (off + 4 <= end) {
        uint32_t token = be32(h + off);
        off += 4;
        struct fdt_event e = {.depth = depth};
        if (token == FDT_BEGIN_NODE) {
            uint32_t n = string_len(h, off, end);
            if (!n)
                return WALK_BROKEN;
            e = (struct fdt_event){.what = NODE_BEGIN, .depth = ++depth, .name = h + off, .name_avail = n};
            off += (n + 3) & ~3u;
        } else if (token == FDT_END_NODE) {
            if (!depth)
                return WALK_BROKEN;
            e = (struct fdt_event){.what = NODE_END, .depth = --depth};
        } else if (token == FDT_PROP) {
            if (end - off < 8)
                return WALK_BROKEN;
            uint32_t len = be32(h + off), nameoff = be32(h + off + 4);
            off += 8;
            if (len > end - off || nameoff >= strings_size)
                return WALK_BROKEN;
            e = (struct fdt_event){.what = NODE_PROP, .depth = depth, .name = h + strings + nameoff,
                                   .name_avail = strings_size - nameoff, .value = h + off, .len = len};
            off += (len + 3) & ~3u;
        } else if (token == FDT_END) {
            return WALK_ENDED;
        } else if (token == FDT_NOP) {
            continue;
        } else {
            return WALK_BROKEN;
        }
        if (reader(ctx, &e))
            return WALK_STOPPED;
    }
    return WALK_BROKEN;
}

/* Where the walk is under /cpus: depth 2 is /cpus itself, 3 a cpu node. */
struct in_cpus {
    int inside;
    unsigned cpu_nodes;
};

static void follow_cpus(struct in_cpus *c, const struct fdt_event *e)
{
    if (e->what == NODE_BEGIN && e->depth == 2 && node_is(e->name, e->name_avail, "cpus"))
        c->inside = 1;
    else if (e->what == NODE_BEGIN && c->inside && e->depth == 3 && node_is(e->name, e->name_avail, "cpu"))
        c->cpu_nodes++;
    else if (e->what == NODE_END && e->depth < 2)
        c->inside = 0;
}

struct timebase {
    struct in_cpus cpus;
    uint64_t from_cpus, from_cpu;
};

static int read_timebase(void *ctx, const struct fdt_event *e)
{
    struct timebase *t = ctx;
    follow_cpus(&t->cpus, e);
    if (e->what != NODE_PROP || !t->cpus.inside || !name_is(e->name, e->name_avail, "timebase-frequency"))
        return 0;
    uint64_t hz = cell_value(e->value, e->len);
    if (e->depth == 2 && hz) {
        t->from_cpus = hz;
        return 1;
    }
    if (e->depth == 3 && t->cpus.cpu_nodes == 1 && !t->from_cpu)
        t->from_cpu = hz;
    return 0;
}

uint64_t fdt_timebase_hz(const void *fdt, size_t max_size)
{
    struct timebase t = {0};
    switch (fdt_walk(fdt, max_size, read_timebase, &t)) {
    case WALK_STOPPED: return t.from_cpus;
    case WALK_ENDED: return t.from_cpu;
    default: return 0;
    }
}

/* Whether an ISA string ("rv64imafdc_zicsr_sstc") names the extension
 * among its underscore-separated multi-letter ones. */
static int isa_string_has(const uint8_t *s, uint32_t len, const char *ext)
{
    uint32_t i = 0;
    while (i < len && s[i] && s[i] != '_')   /* the base and its single letters */
        i++;
    while (i < len && s[i] == '_') {
        uint32_t start = ++i, k = 0;
        while (i < len && s[i] && s[i] != '_')
            i++;
        for (; ext[k] && start + k < i; k++) {
            uint8_t c = s[start + k];
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (uint8_t)ext[k])
                break;
        }
        if (!ext[k] && start + k == i)
            return 1;
    }
    return 0;
}

/* Whether a string list ("zicsr\0sstc\0") holds the extension's name. */
static int string_list_has(const uint8_t *s, uint32_t len, const char *ext)
{
    for (uint32_t i = 0; i < len;) {
        uint32_t n = string_len(s, i, len);
        if (!n)
            return 0;
        if (name_is(s + i, n, ext))
            return 1;
        i += n;
    }
    return 0;
}

struct extension {
    struct in_cpus cpus;
    uint64_t hart;
    const char *ext;
    int reg_is_hart, has, result;
};

static int read_extension(void *ctx, const struct fdt_event *e)
{
    struct extension *x = ctx;
    follow_cpus(&x->cpus, e);
    if (!x->cpus.inside)
        return 0;
    if (e->what == NODE_BEGIN && e->depth == 3)
        x->reg_is_hart = x->has = 0;
    else if (e->what == NODE_PROP && e->depth == 3) {
        if (name_is(e->name, e->name_avail, "reg"))
            x->reg_is_hart = (e->len == 4 || e->len == 8) && cell_value(e->value, e->len) == x->hart;
        else if (name_is(e->name, e->name_avail, "riscv,isa"))
            x->has |= isa_string_has(e->value, e->len, x->ext);
        else if (name_is(e->name, e->name_avail, "riscv,isa-extensions"))
            x->has |= string_list_has(e->value, e->len, x->ext);
    } else if (e->what == NODE_END && e->depth == 2 && x->reg_is_hart) {
        x->result = x->has;
        return 1;
    }
    return 0;
}

int fdt_hart_has_extension(const void *fdt, size_t max_size, uint64_t hart, const char *ext)
{
    struct extension x = {.hart = hart, .ext = ext, .result = -1};
    return fdt_walk(fdt, max_size, read_extension, &x) == WALK_STOPPED ? x.result : -1;
}
