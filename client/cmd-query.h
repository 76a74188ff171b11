/* What profctl query shares with top, whose every refresh is a query's
 * table: the parsed options and the streamed views. */
#pragma once

#include <jansson.h>
#include <stdio.h>

#include "answer.h"
#include "conn.h"
#include "filters.h"
#include "options.h"
#include "render.h"

struct query_args {
        struct filters filters;
        struct view_options view;
};

static inline void query_args_done(struct query_args *a) {
        view_options_done(&a->view);
}

/* table, folded, json: written as the answer to request streams in from c.
 * Returns 0 or a negative errno after a message. */
int query_stream(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                 struct answer_end *end);
