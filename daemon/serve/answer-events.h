/* The events of a series or timeline answer (issue 44): the captures whose
 * pinned range overlaps the window, as "event" lines before the end line,
 * when the request asks for them ("events":true). */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "answer.h"

struct answer_events {
        bool asked;
        uint64_t sent;     /* event lines written */
        uint64_t omitted;  /* beyond CAPTURE_EVENTS_MAX */
};

/* Writes the event lines of [from_ns, to_ns] a caller may see (root and
 * admins every capture, anyone else its own: capture_event_visible).
 * Nothing when rq did not ask. Returns 0 or a negative errno. */
int answer_events_emit(const struct answer_context *ctx, const struct query_request *rq, uint64_t from_ns,
                       uint64_t to_ns, struct answer_events *ret);

/* Adds "events" (and "events_omitted") to the end line when asked, so a
 * reader can tell lost lines from none. end may be NULL (out of memory,
 * said by the caller). Returns 0 or -ENOMEM. */
int answer_events_end(json_t *end, const struct answer_events *ev);
