/* The top-functions table aggregated from streamed stack lines: a stack
 * line flattened (struct stack), and per function (or line, or module) its
 * self and total over the stacks added. render.h writes it. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "folded.h"
#include "macro.h"
#include "protocol.h"

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

/* The name stack_parse() gives frame fr of the line stackline_append()
 * writes of it (raw_names: the symbol-table name, as the line's "name"),
 * for a table made of frames rather than lines (a fleet's); with_lines as
 * stack_parse's. *ret points into fr, or is *ret_owned (malloc'd, to
 * free; NULL when not made). Returns 0 or -ENOMEM. */
int frame_shown_name(const struct store_frame_out *fr, bool with_lines, bool raw_names, const char **ret,
                     char **ret_owned);

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

/* Adds a row whose sums were made elsewhere (a fleet's table: ClickHouse
 * sums what top_table_add() would, docs/clickhouse.md): key as top_table_add
 * keys it for the table's "by". Returns 0 or -ENOMEM. */
int top_table_add_row(top_table *t, const struct func_key *key, uint64_t self, uint64_t total);

/* The key top_table_add() counts a frame under in t (its function, line
 * or module, by t's TopBy); strings point into the arguments. */
struct func_key top_table_key(const top_table *t, const char *name, const char *module, bool kernel);

/* A row of the table, for top_table_add_funcs(). */
struct top_func;

/* The row of key (made when new): a caller adding many stacks made of the
 * same frames looks each frame's row up once, not once per stack. Returns
 * 0 or -ENOMEM. */
int top_table_func(top_table *t, const struct func_key *key, struct top_func **ret);

/* top_table_add() of a stack given as the rows of its frames, root first
 * (a stack without frames: the row of "[unknown]" in module "", alone).
 * Returns 0. */
int top_table_add_funcs(top_table *t, struct top_func *const *funcs, size_t n, uint64_t value);

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

/* What the table's rows stand for. */
TopBy top_table_by(const top_table *t);
