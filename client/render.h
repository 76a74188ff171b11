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
#include "quality.h"

/* One "stack" response line, checked and flattened. Strings point into the
 * json_t it was parsed from; the arrays are reused from line to line so a
 * long query does not allocate per stack. */
struct stack {
        uint64_t value;
        const char *group;           /* the line's "group" (--root), NULL if none */
        size_t n_frames;
        struct folded_frame *frames; /* root first, ready for folded_write_line() */
        const char **modules;        /* modules[i] belongs to frames[i]; "" if none */
        char **owned;                /* names made here (with_lines); freed by the next parse */
        size_t allocated;
};

/* Fills s from a "stack" line, decoded by profile.h's one stack-line
 * decoder. with_lines: a frame that debug info placed
 * is named "function (file:line)", the file as its last path component, so
 * the table and folded output tell lines apart. A missing or mistyped field
 * is reported on stderr; returns 0, -EBADMSG or -ENOMEM. */
int stack_parse(struct stack *s, const json_t *line, bool with_lines);
void stack_done(struct stack *s);

/* Makes room for n frames in s (keeping none of its frames). Returns 0 or
 * -ENOMEM. */
int stack_reserve(struct stack *s, size_t n);

/* "function (file:line)", the file as its last path component, or NULL
 * and no allocation when file is NULL or "" or line 0. Returns 0 or
 * -ENOMEM. */
int frame_name_with_line(const char *name, const char *file, uint64_t line, char **ret);

/* What a table row stands for: a function (its name in its module), a
 * source line (frames named "function (file:line)" by stack_parse), or a
 * module (a binary or library, the kernel). */
typedef enum TopBy {
        TOP_BY_FUNCTION,
        TOP_BY_LINE,
        TOP_BY_MODULE,
} TopBy;

/* "function", "line", "module"; parse returns -EINVAL for others. */
const char *top_by_to_string(TopBy by);
int top_by_from_string(const char *s, TopBy *ret);

/* A function is its name in its module: "main" of two programs are two
 * rows. The views key their functions, tree nodes and diff rows by it. */
struct func_key {
        const char *name;
        const char *module;
        bool kernel;
};

/* Hash and equality of struct func_key for hashmap_new(); a struct whose
 * first member is a func_key may be the key itself. */
uint64_t func_key_hash(const void *p);
bool func_key_eq(const void *a, const void *b);

/* Per-function (or line, or module) self and total counts over all stacks
 * added. */
typedef struct top_table top_table;

top_table *top_table_new(TopBy by);
top_table *top_table_free(top_table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(top_table *, top_table_free);
#define _cleanup_top_table_ _cleanup_(top_table_freep)

/* Counts s: its value goes to the leaf function's SELF and once to the TOTAL
 * of every distinct function in it (perf report's self and children).
 * Returns 0 or -ENOMEM. */
int top_table_add(top_table *t, const struct stack *s);

struct top_row {
        const char *name;   /* function, "function (file:line)" or module path */
        const char *module; /* "" in a table by module */
        bool kernel;
        uint64_t self, total;
};

/* The rows, sorted by self then total (by total then self when children),
 * then name, module; valid while t is. *ret is malloc'd. Returns 0 or
 * -ENOMEM. */
int top_table_rows(const top_table *t, bool children, struct top_row **ret, size_t *ret_n);

/* What a table shows beyond its rows. */
struct top_table_info {
        const char *kind;            /* "cpu", "offcpu", "wakeup" */
        uint64_t total;              /* percentages are of it */
        uint64_t from_ns, to_ns;
        size_t limit;                /* rows at most, 0 for all */
        bool children;               /* sort by total */
        const struct quality *quality; /* the answer's quality report; NULL: none */
        const json_t *quality_by_host; /* a fleet answer's reports per host; NULL: none */
};

/* Writes the header (total samples and the window) and the rows in the
 * order of top_table_rows(). Returns 0, -ENOMEM or -EIO. */
int top_table_write(const top_table *t, FILE *f, const struct top_table_info *info);

/* The same as one JSON document (docs/profctl.md). Returns 0, -ENOMEM or
 * -EIO. */
int top_table_write_json(const top_table *t, FILE *f, const struct top_table_info *info);

/* Helpers the other views share with the table. */
double percent(uint64_t part, uint64_t total);
/* A time in the largest unit that keeps it readable: "2.31s", "12.5ms", "840us". */
const char *format_time_short(char *buf, size_t size, uint64_t ns);
/* A sample count, or a time for nanoseconds. */
const char *format_weight(char *buf, size_t size, uint64_t v, bool nanoseconds);
/* Names come from binaries and /proc: a stray escape sequence must not reach
 * the terminal. One byte in, one byte out, so widths still hold. */
void write_sanitized(FILE *f, const char *s);
/* A module as a table shows it: its file name; "[kernel]" or "-" if none. */
const char *module_display_name(const char *module, bool kernel);
/* "1000 samples from <time> to <time> (10m)\n", or the off-CPU time. */
void window_header_write(FILE *f, const char *kind, uint64_t total, uint64_t from_ns, uint64_t to_ns);
/* Writes a json_t document followed by a newline. Returns 0 or -EIO. */
int json_document_write(FILE *f, const json_t *doc);

/* The human summary of a "status" line, now_ns being the current Unix-epoch
 * time (for "12s ago"). Reports a missing field; returns 0, -EBADMSG or
 * -EIO. */
int status_write(FILE *f, const json_t *status, uint64_t now_ns);

/* "drain 42 stored: 980 samples" for a "flushed" line. Returns 0, -EBADMSG
 * or -EIO. */
int flushed_write(FILE *f, const json_t *flushed);
