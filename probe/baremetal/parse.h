/*
 * Reading what the host sends: decimal numbers of options and the hex
 * arguments of a `run` request. Each returns 0, or -1 for anything but a
 * well-formed value within its limits.
 */
#ifndef RTVB_BM_PARSE_H
#define RTVB_BM_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Decimal digits only, at most max. */
int parse_u64(const char *s, uint64_t max, uint64_t *out);
/* "D" or "D.DDD" times scale, rounded to the nearest integer (fraction
 * digits beyond the ninth are read but ignored), within [min, max]. */
int parse_scaled(const char *s, uint64_t scale, uint64_t min, uint64_t max, uint64_t *out);
/* A size: decimal digits and an optional binary suffix K, M or G, from 1
 * to max bytes. */
int parse_size(const char *s, uint64_t max, uint64_t *out);
/* A comma-separated list of sizes, at most max_n of them; the count, or -1. */
int parse_size_list(const char *s, uint64_t max, uint64_t *out, int max_n);
/* An argument as the agent protocol sends it: hex bytes, "-" for the empty
 * one; out gets the NUL-terminated bytes, NUL bytes refused. */
int hex_decode(const char *s, char *out, size_t cap);

#endif
