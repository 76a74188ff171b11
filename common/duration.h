/* Duration strings ("10m", "1h30m", "500ms", a bare "30" is seconds), shared
 * by profctl's options and profd's request parser. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Parses s into nanoseconds. Strict: the whole string must be one or more
 * <number><unit> parts (units ns us ms s m h d; a lone number means seconds),
 * digits only (no sign, no exponent), optional single spaces between parts.
 * Returns 0, -EINVAL (empty, malformed, negative, unknown unit, trailing
 * garbage) or -ERANGE (overflows uint64 nanoseconds). */
int parse_duration_ns(const char *s, uint64_t *ret_ns);

/* Formats ns into buf as the largest whole units, e.g. "1h30m", "250ms",
 * "0s". Returns buf. */
const char *format_duration(char *buf, size_t size, uint64_t ns);
