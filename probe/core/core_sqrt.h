/*
 * Square root without libm: the core compiles freestanding, and the Linux
 * probe uses this one too so that both print the same standard deviations.
 * Correctly rounded (as IEEE 754 and libm's sqrt are), so the figures are
 * those sqrt gave.
 */
#ifndef RTVB_CORE_SQRT_H
#define RTVB_CORE_SQRT_H

double core_sqrt(double x);

#endif
