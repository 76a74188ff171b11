/* The columnar lines of a "timeline" answer ("samples", "spans"; see
 * timed-samples.h and timed-spans.h): a time origin, then one array per
 * column, entry i of the line being element i of each. What both line
 * kinds share: writing a column from an array of entries, and reading a
 * line's origin and columns, trusting nothing. Pure: no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* Entries a line carries at most: about 15 bytes each in a "samples"
 * line, a line of ~15 KB. */
#define TIMED_LINE_ENTRIES 1000u

/* One column of a line to write: its key, and its value for an entry. */
struct timed_column_out {
        const char *key;
        uint64_t (*get)(const void *entry, uint64_t t0);
};

/* Appends the line {"type":type,t0_key:t0,key:[...],...} and its newline
 * to b: for each column, get(entry, t0) of the n entries (size bytes
 * apart from entries). Returns 0 or -ENOMEM (b keeps what it had). */
int timed_line_write(struct stackline_buf *b, const char *type, const char *t0_key, uint64_t t0,
                     const struct timed_column_out *columns, size_t n_columns, const void *entries, size_t size,
                     size_t n);

/* One column of a line to read: its key, the largest value it may hold,
 * and (set by timed_columns_parse) its array. */
struct timed_column {
        const char *key;
        uint64_t max;
        const json_t *array;
};

/* Reads a line's origin, field t0_key (an unsigned integer), into *ret_t0,
 * and its n_columns columns: arrays of one length, 1 to
 * TIMED_LINE_ENTRIES, which *ret_n gets. Returns 0, or -EBADMSG with
 * *ret_error (a static sentence) naming what is wrong: bad_origin when the
 * origin is, bad_columns when the arrays are. */
int timed_columns_parse(const json_t *line, const char *t0_key, struct timed_column *columns, size_t n_columns,
                        uint64_t *ret_t0, size_t *ret_n, const char *bad_origin, const char *bad_columns,
                        const char **ret_error);

/* Element i of every column into values[0..n_columns): false when one is
 * not an unsigned integer of at most its column's max. */
bool timed_columns_at(const struct timed_column *columns, size_t n_columns, size_t i, uint64_t *values);
