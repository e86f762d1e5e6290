/*
 * Number formatting of the probe's records, without printf: the Linux probe
 * and the bare-metal image print the same bytes for the same figures.
 *
 * fmt_double writes what printf's "%.10g" writes (glibc's, in the default
 * rounding mode: the exact binary value rounded half to even), so records of
 * the Linux probe stay as they were before it formatted numbers itself.
 */
#ifndef RTVB_NUMFMT_H
#define RTVB_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

#define NUMFMT_INT_MAX 21      /* "-9223372036854775808" and its NUL */
#define NUMFMT_DOUBLE_MAX 24   /* "-1.234567891e-308" and its NUL, with room */

/* Each writes a NUL-terminated string into buf and returns its length. */
size_t fmt_uint(char *buf, uint64_t v);
size_t fmt_int(char *buf, int64_t v);
/* Finite values only; the JSON writer prints null for NaN and infinities. */
size_t fmt_double(char *buf, double v);

#endif
