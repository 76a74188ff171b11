/* Text in the SVG pictures profctl draws (flame graphs, heatmaps): names
 * from binaries and /proc written so that the file stays well-formed XML,
 * and numbers and times written the same way in every picture. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the UTF-8 sequence at s (1 for a byte that starts none), and
 * in *ret_allowed whether XML 1.0 allows it as a character: not when it is
 * malformed, overlong, a surrogate, a control character or U+FFFE/U+FFFF. */
size_t svg_utf8_sequence(const unsigned char *s, bool *ret_allowed);

/* Number of characters svg_xml_write writes for s. */
size_t svg_char_count(const char *s);

/* Writes at most max_chars characters of s (SIZE_MAX: all) as XML text or
 * attribute value: markup escaped, and every byte that would make the file
 * ill-formed (invalid UTF-8, control characters) replaced by '?'. Names
 * come from binaries and /proc: nothing is assumed about them. */
void svg_xml_write(FILE *f, const char *s, size_t max_chars);

/* A number with two decimals, whatever LC_NUMERIC says: SVG wants '.'.
 * Returns buf. */
const char *svg_fixed2(char *buf, size_t size, double v);

/* "12 samples", or with ns a time: "1.50 s", "20.00 ms", "3.00 us",
 * "800 ns". Returns buf. */
const char *svg_format_value(char *buf, size_t size, uint64_t v, const char *unit, bool ns);

/* "2026-12-02 08:30:00 UTC" of a Unix-epoch nanosecond count. Returns buf. */
const char *svg_format_utc(char *buf, size_t size, uint64_t ns);

/* Its time of day, "08:30:00", for an axis; "@SECONDS" when it cannot be
 * written. Returns buf. */
const char *svg_format_hms(char *buf, size_t size, uint64_t ns);
