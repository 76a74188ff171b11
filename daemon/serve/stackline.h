/* The "stack" line of a query answer written as JSON text directly, without
 * building jansson objects: the same line as answer_stack_line() (same keys,
 * same values; tests/unit/test-stackline.c compares them), at a fraction of
 * the cost. A day's answer has hundreds of thousands of frames, and making
 * and freeing an object per frame was most of what a query cost the daemon
 * (docs/performance.md, Queries). Pure: unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "store.h"

struct stackline_buf {
        char *data;
        size_t len, cap;
};

/* How a stack line is written, from the request and who asks. */
struct stack_style {
        bool collapse_kernel; /* unprivileged caller: each run of kernel frames is one "[kernel]" */
        bool raw_names;       /* symbol-table names instead of demangled ones */
        bool folded;          /* "folded":"root;..;leaf" instead of "frames" */
        bool lines;           /* folded: "name (file:line)" where debug info placed a frame */
};

/* The folded string of a stack (no weight, no newline): the grouping root
 * when there is one, then the frames joined by ';', kernel frames suffixed
 * "_[k]" (flamegraph.pl's colouring). ';' in a name becomes ':', control
 * characters and bytes that are not UTF-8 become '?', an empty name
 * "[unknown]": the result is valid UTF-8 and one folded line. Appends to b
 * without a terminating NUL; returns 0 or -ENOMEM (b keeps what it had). */
int stackline_folded(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style);

/* Appends the line, newline included, to b. Strings are written as jansson
 * writes them with JSON_ENSURE_ASCII; a byte sequence that is not UTF-8
 * (a symbol name is whatever bytes the ELF file has) becomes U+FFFD rather
 * than failing the whole answer. Returns 0 or -ENOMEM (b keeps what it had). */
int stackline_append(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style);
void stackline_buf_done(struct stackline_buf *b);
