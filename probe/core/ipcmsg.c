#include "ipcmsg.h"

#define IPC_MAGIC "RTVBIPC1"

void ipc_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t ipc_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put64(uint8_t *p, uint64_t v)
{
    ipc_put32(p, (uint32_t)v);
    ipc_put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)ipc_get32(p) | (uint64_t)ipc_get32(p + 4) << 32;
}

void ipc_ctrl_encode(const struct ipc_ctrl *m, uint8_t buf[IPC_CTRL])
{
    for (size_t i = 0; i < IPC_CTRL; i++)
        buf[i] = i < 8 ? (uint8_t)IPC_MAGIC[i] : 0;
    ipc_put32(buf + 8, m->op);
    ipc_put32(buf + 12, m->size);
    put64(buf + 16, m->a);
    put64(buf + 24, m->b);
    ipc_put32(buf + 32, m->c);
    buf[36] = m->expected;
    buf[37] = m->got;
}

int ipc_ctrl_decode(const uint8_t buf[IPC_CTRL], struct ipc_ctrl *m)
{
    for (size_t i = 0; i < 8; i++)
        if (buf[i] != (uint8_t)IPC_MAGIC[i])
            return -1;
    *m = (struct ipc_ctrl){.op = ipc_get32(buf + 8), .size = ipc_get32(buf + 12), .a = get64(buf + 16),
                           .b = get64(buf + 24), .c = ipc_get32(buf + 32), .expected = buf[36], .got = buf[37]};
    return 0;
}

void ipc_fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)(x >> 24);
    }
}

void ipc_set_header(uint8_t *msg, uint32_t seq, uint32_t kind)
{
    ipc_put32(msg, seq);
    ipc_put32(msg + 4, kind);
}

long ipc_first_diff(const uint8_t *msg, const uint8_t *pattern, size_t size, uint32_t seq, uint32_t kind,
                    uint8_t *expected)
{
    uint8_t hdr[IPC_HDR] = {0};
    ipc_set_header(hdr, seq, kind);
    for (size_t i = 0; i < IPC_HDR; i++)
        if (msg[i] != hdr[i]) {
            *expected = hdr[i];
            return (long)i;
        }
    for (size_t i = IPC_HDR; i < size; i++)
        if (msg[i] != pattern[i]) {
            *expected = pattern[i];
            return (long)i;
        }
    return -1;
}
