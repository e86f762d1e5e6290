#include "clock.h"

#include "arch.h"

#define NS_PER_S 1000000000ull

/* Split in whole seconds and the rest, so that neither product can
 * overflow 64 bits for any counter value or frequency. */
uint64_t ticks_to_ns(uint64_t ticks)
{
    uint64_t hz = counter_hz();
    return ticks / hz * NS_PER_S + ticks % hz * NS_PER_S / hz;
}

uint64_t ns_to_ticks(uint64_t ns)
{
    uint64_t hz = counter_hz();
    return ns / NS_PER_S * hz + (ns % NS_PER_S * hz + NS_PER_S - 1) / NS_PER_S;
}

uint64_t clock_ns(void) { return ticks_to_ns(counter_now()); }
