/*
 * The probe's version and its records' schema, which the Linux probe and the
 * bare-metal image print alike.
 */
#ifndef RTVB_VERSION_H
#define RTVB_VERSION_H

#define RTVB_PROBE_VERSION "0.1.0"
/* Version of the JSON Lines schema (docs/probe-output.md). Bump on any
 * incompatible change; the host refuses schemas it does not know. */
#define RTVB_SCHEMA_VERSION 1

#endif
