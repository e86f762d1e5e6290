#include "fdt.h"

#define FDT_MAGIC 0xd00dfeedu
#define FDT_BEGIN_NODE 1u
#define FDT_END_NODE 2u
#define FDT_PROP 3u
#define FDT_NOP 4u
#define FDT_END 9u
#define HEADER_SIZE 40u

struct blob {
    const uint8_t *base;
    uint32_t size;          /* totalsize, within max_size */
    uint32_t strings, strings_size;
};

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
static uint32_t string_len(const struct blob *b, uint32_t off, uint32_t end)
{
    for (uint32_t i = off; i < end; i++)
        if (!b->base[i])
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

uint64_t fdt_timebase_hz(const void *fdt, size_t max_size)
{
    const uint8_t *h = fdt;
    if (!fdt || max_size < HEADER_SIZE || be32(h) != FDT_MAGIC)
        return 0;
    struct blob b = {.base = h, .size = be32(h + 4)};
    uint32_t off = be32(h + 8), strings = be32(h + 12), version = be32(h + 20);
    uint32_t strings_size = be32(h + 32), struct_size = be32(h + 36);
    if (b.size < HEADER_SIZE || b.size > max_size || version < 17 || off % 4 ||
        off > b.size || struct_size > b.size - off || strings > b.size || strings_size > b.size - strings)
        return 0;
    b.strings = strings;
    b.strings_size = strings_size;
    uint32_t end = off + struct_size;
    /* depth: 1 inside the root, 2 inside /cpus, 3 inside a cpu node */
    unsigned depth = 0, cpu_nodes = 0;
    int in_cpus = 0;
    uint64_t from_cpu = 0;
    while (off + 4 <= end) {
        uint32_t token = be32(h + off);
        off += 4;
        if (token == FDT_BEGIN_NODE) {
            uint32_t n = string_len(&b, off, end);
            if (!n)
                return 0;
            if (depth == 1 && node_is(h + off, n, "cpus"))
                in_cpus = 1;
            else if (in_cpus && depth == 2 && node_is(h + off, n, "cpu"))
                cpu_nodes++;
            depth++;
            off += (n + 3) & ~3u;
        } else if (token == FDT_END_NODE) {
            if (!depth)
                return 0;
            depth--;
            if (depth < 2)
                in_cpus = 0;
        } else if (token == FDT_PROP) {
            if (end - off < 8)
                return 0;
            uint32_t len = be32(h + off), nameoff = be32(h + off + 4);
            off += 8;
            if (len > end - off || nameoff >= b.strings_size)
                return 0;
            const uint8_t *name = h + b.strings + nameoff;
            uint32_t avail = b.strings_size - nameoff;
            if (in_cpus && name_is(name, avail, "timebase-frequency")) {
                uint64_t hz = cell_value(h + off, len);
                if (depth == 2 && hz)
                    return hz;
                if (depth == 3 && cpu_nodes == 1 && !from_cpu)
                    from_cpu = hz;
            }
            off += (len + 3) & ~3u;
        } else if (token == FDT_END) {
            return from_cpu;
        } else if (token != FDT_NOP) {
            return 0;
        }
    }
    return 0;
}
