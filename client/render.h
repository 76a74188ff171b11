/* What profctl prints from profd's answers: the status summary, the flush
 * line, and the top-functions table aggregated from streamed stacks. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "folded.h"
#include "macro.h"

/* One "stack" response line, checked and flattened. Strings point into the
 * json_t it was parsed from; the arrays are reused from line to line so a
 * long query does not allocate per stack. */
struct stack {
        uint64_t value;
        size_t n_frames;
        struct folded_frame *frames; /* root first, ready for folded_write_line() */
        const char **modules;        /* modules[i] belongs to frames[i]; "" if none */
        char **owned;                /* names made here (with_lines); freed by the next parse */
        size_t allocated;
};

/* Fills s from a "stack" line. with_lines: a frame that debug info placed
 * is named "function (file:line)", the file as its last path component, so
 * the table and folded output tell lines apart. A missing or mistyped field
 * is reported on stderr; returns 0, -EBADMSG or -ENOMEM. */
int stack_parse(struct stack *s, const json_t *line, bool with_lines);
void stack_done(struct stack *s);

/* Per-function self and total counts over all stacks added. */
typedef struct top_table top_table;

top_table *top_table_new(void);
top_table *top_table_free(top_table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(top_table *, top_table_free);
#define _cleanup_top_table_ _cleanup_(top_table_freep)

/* Counts s: its value goes to the leaf function's SELF and once to the TOTAL
 * of every distinct function in it. Returns 0 or -ENOMEM. */
int top_table_add(top_table *t, const struct stack *s);

/* Writes the header (total samples and the window) and the rows sorted by
 * self, then total, then name; at most limit rows, 0 meaning all.
 * Percentages are of total. Returns 0, -ENOMEM or -EIO. */
int top_table_write(const top_table *t, FILE *f, uint64_t total, uint64_t from_ns,
                    uint64_t to_ns, size_t limit, const char *kind);

/* The human summary of a "status" line, now_ns being the current Unix-epoch
 * time (for "12s ago"). Reports a missing field; returns 0, -EBADMSG or
 * -EIO. */
int status_write(FILE *f, const json_t *status, uint64_t now_ns);

/* "drain 42 stored: 980 samples" for a "flushed" line. Returns 0, -EBADMSG
 * or -EIO. */
int flushed_write(FILE *f, const json_t *flushed);
