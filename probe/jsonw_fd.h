/*
 * The Linux probe's side of the JSON Lines writer (core/jsonw.h): records
 * go to a file descriptor in one write(2) each, their buffer grows with
 * realloc, and warnings are formatted with vsnprintf.
 */
#ifndef RTVB_JSONW_FD_H
#define RTVB_JSONW_FD_H

#include "jsonw.h"

/* Where records go; stdout by default (the `init` subcommand redirects it). */
void jw_set_output_fd(int fd);
int jw_output_fd(void);

/* Convenience: a "warning" record with a machine-readable code. */
void jw_warning(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
