/* What profctl query shares with top, whose every refresh is a query's
 * table: the parsed options and the streamed views. */
#pragma once

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "answer.h"
#include "conn.h"
#include "filters.h"
#include "render.h"

typedef enum QueryFormat {
        FORMAT_TABLE,
        FORMAT_FOLDED,
        FORMAT_JSON,
        FORMAT_TREE,
        FORMAT_SVG,
        FORMAT_PPROF,
        _FORMAT_MAX,
} QueryFormat;

struct query_args {
        struct filters filters;
        QueryFormat format;
        bool json;              /* the view as JSON */
        const char *output;
        TopBy by;
        bool by_set, children;
        size_t limit;
        bool limit_set;
        bool lines, raw_names;
        const char *root;       /* "process", "unit", "thread" or NULL */
        regex_t focus, hide;
        const char *focus_text, *hide_text;
        size_t max_depth;
        bool max_depth_set;
        bool icicle;
        const char *title;
        bool quality;           /* --quality: the report alone */
};

/* table, folded, json: written as the answer to request streams in from c.
 * Returns 0 or a negative errno after a message. */
int query_stream(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                 struct answer_end *end);
