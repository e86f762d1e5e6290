/*
 * xorshift64*: the tests' deterministic random numbers, so that a failure
 * reproduces and two builds of one harness see the same samples.
 */
#ifndef RTVB_TESTS_XORSHIFT_H
#define RTVB_TESTS_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64s(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

#endif
