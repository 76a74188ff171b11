/* Answers to query and series requests: from a parsed request and who asks,
 * the store query to run, and the JSON lines of the answer
 * (docs/protocol.md). Independent of the event loop and the socket: lines go
 * to a callback, so the same code answers wherever the query runs. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "request.h"
#include "timed-samples.h"
#include "protocol.h"
#include "store.h"

/* Who asks, from the socket's peer credentials. */
struct answer_caller {
        bool privileged; /* root or admin group: every process, kernel frames named */
        uint32_t uid;    /* else: only processes that ran with this effective uid */
};

/* Takes one answer line (steals the reference; NULL means out of memory and
 * should return -ENOMEM). A negative return stops the answer. */
typedef int (*answer_emit_fn)(json_t *line, void *userdata);

struct answer_context {
        store *store;
        uint64_t now_ns;          /* CLOCK_REALTIME when the request arrived */
        uint64_t default_step_ns; /* series without "step": the drain interval */
        unsigned base_hz;         /* cpu values are counted at this rate (status frequency_hz) */
        bool timeline_off;        /* the setting timeline is off: a timeline answer's error names it */
        struct answer_caller caller;
        answer_emit_fn emit;
        /* writes one "stack" line, with stackline_append() (common/protocol.h)
         * as query.c does: text written directly, no jansson object per
         * frame; same userdata */
        int (*emit_stack)(const struct store_stack_out *stack, const struct stack_style *style, void *userdata);
        /* writes whole lines of text made elsewhere (a timeline's "samples"
         * lines, common/timed-samples.h); same userdata */
        int (*emit_text)(const char *text, size_t n, void *userdata);
        void *userdata;
};

/* Answers a REQUEST_QUERY, REQUEST_SERIES or REQUEST_TIMELINE request: every line, the last
 * being "end" or, for a request that turns out unanswerable (an empty
 * window, too many points), "error". Returns 0, or a negative errno when the
 * store or emit failed (the caller then reports an internal error). */
int answer_request(const struct answer_context *ctx, const struct request *req);

/* Fills the store query for a request, as the caller may see it, with the
 * window resolved against now_ns (a "last" request needs the drain set by
 * the caller). Returns 0, or -EINVAL with *ret_error saying why, -ENOMEM. */
int answer_store_query(const struct query_request *rq, const struct answer_caller *who, uint64_t now_ns,
                       struct store_query *ret, char **ret_error);
