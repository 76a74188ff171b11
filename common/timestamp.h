/* RFC 3339 timestamps ("2026-11-21T05:00:00Z", "2026-11-21T06:00:00.5+01:00")
 * <-> Unix-epoch nanoseconds, shared by profctl's options and profd's request
 * parser so both accept exactly the same forms. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses an RFC 3339 date-time: YYYY-MM-DD, 'T' (or 't', or one space),
 * hh:mm:ss, optional '.' and 1-9 fraction digits, then 'Z' (or 'z') or an
 * offset +hh:mm / -hh:mm. Strict: every field has its exact number of digits
 * and a valid range (the day is checked against the month and leap years;
 * second 60, a leap second, is refused since Unix time has none), nothing may
 * follow. Returns 0 with the time in Unix-epoch ns, -EINVAL (malformed or out
 * of range) or -ERANGE (before 1970 or after 2262, outside what uint64/int64
 * nanoseconds hold). */
int parse_timestamp_ns(const char *s, uint64_t *ret_ns);

/* Parses a point in time as requests and profctl take it: an RFC 3339 time,
 * or a duration meaning "that long ago" ("10m", see duration.h). Returns 0
 * with *ret_absolute telling which and *ret_ns the epoch time (absolute) or
 * the duration; -EINVAL when it is neither, -ERANGE when out of range. */
int parse_time_point(const char *s, bool *ret_absolute, uint64_t *ret_ns);

/* Formats epoch ns as RFC 3339 in UTC, with a fraction only when it is not
 * zero ("2026-11-21T05:00:00Z", "2026-11-21T05:00:00.250Z"). Returns buf. */
const char *format_timestamp(char *buf, size_t size, uint64_t ns);
