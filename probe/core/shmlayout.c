#include "shmlayout.h"

uint32_t shm_checksum(const uint8_t *p, size_t n)
{
    uint64_t a = 1, b = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t w = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
        a += w;
        b += a;
    }
    for (; i < n; i++) {
        a += p[i];
        b += a;
    }
    uint32_t h = (uint32_t)a ^ (uint32_t)(a >> 32) * 0x85ebca6bu;
    return h ^ (uint32_t)b * 0xc2b2ae35u ^ (uint32_t)(b >> 32);
}

uint32_t shm_mix_id(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x ? (uint32_t)x : 1;
}
