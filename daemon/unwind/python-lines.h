/* CPython 3.11+ location tables (co_linetable): from an instruction offset to its line. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "bytecursor.h"

/* The forms of an entry (the 4-bit code of its first byte), as
 * Objects/locations.md in CPython's source describes them. */
enum python_line_form {
        PYTHON_LINE_SHORT,             /* codes 0-9: same line, one column byte */
        PYTHON_LINE_ONE_LINE,          /* codes 10-12: line + 0, 1 or 2, two column bytes */
        PYTHON_LINE_NO_COLUMN,         /* code 13: line delta, no columns */
        PYTHON_LINE_LONG,              /* code 14: line delta, end line, both columns */
        PYTHON_LINE_NONE,              /* code 15: no location */
        _PYTHON_LINE_FORM_MAX,
};

/* One entry: code units [start, end) are on `line` (-1: no location). */
struct python_line_entry {
        uint32_t start, end;
        int32_t line;
        enum python_line_form form;
};

/* A walk of a table, entry by entry. The table is untrusted: every read is
 * bounded by the cursor, and a varint wider than 32 bits, a line outside
 * int32, a located entry on a negative line or an entry not starting with
 * its marker bit ends the walk. */
struct python_lines {
        struct bytecursor c;
        int64_t line;                  /* the line the deltas accumulate on */
        uint32_t next_start;
};

void python_lines_init(struct python_lines *it, const void *table, size_t size, int32_t firstlineno);

/* The next entry: 1 with *ret filled, 0 at the end of the table, -EBADMSG
 * when the table is malformed. */
int python_lines_next(struct python_lines *it, struct python_line_entry *ret);

/* The line of the code unit at `offset`. Returns 0 with *ret_line; -ENODATA
 * when that instruction has no location (code 15); -ENOENT when the table
 * ends before it; -EBADMSG when the table is malformed before it. */
int python_lines_find(const void *table, size_t size, int32_t firstlineno, uint32_t offset,
                      int32_t *ret_line);

/* "short", "one-line", ...: for tests and messages. */
const char *python_line_form_name(enum python_line_form form);
