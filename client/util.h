/* profctl's small helpers: error lines on stderr, strict number parsing, human
 * units, and typed access to the fields of profd's response lines. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "helpers.h"

/* Exit statuses scripts rely on: 1 = profd said no or could not be reached,
 * 2 = the command line was wrong (nothing was sent). */
#define EXIT_USAGE 2

/* jansson (>= 2.9) ships json_decrefp, NULL-safe */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* Prints "profctl: <message>" to stderr; %m is strerror(-r). Returns r if it
 * is negative, else -EIO, so `return cli_error(r, ...)` always fails. */
int cli_error(int r, const char *fmt, ...) _printf_(2, 3);

/* Prints "profctl: <message>" and the hint to --help to stderr. Returns
 * -EINVAL. */
int cli_usage_error(const char *fmt, ...) _printf_(1, 2);

/* "512 B", "1.5 KiB", "3.2 GiB". Returns buf. */
const char *format_bytes(char *buf, size_t size, uint64_t bytes);

/* Local time "2024-11-21 01:53:20" of a Unix-epoch nanosecond count, what
 * a person reads (common/timestamp.h's format_timestamp() is RFC 3339 UTC,
 * for machines). Returns buf. */
const char *format_local_time(char *buf, size_t size, uint64_t epoch_ns);

/* Field `key` of a response line of type `line_type` as a non-negative
 * integer or a string. A missing or mistyped field is reported on
 * stderr as a fault of profd's answer; returns 0 or -EBADMSG. */
int response_get_u64(const json_t *line, const char *line_type, const char *key, uint64_t *ret);
int response_get_string(const json_t *line, const char *line_type, const char *key, const char **ret);
