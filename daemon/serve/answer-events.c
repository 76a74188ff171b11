/* Capture events in series and timeline answers (answer-events.h). */
#include "answer-events.h"

#include <errno.h>

#include "capture-event.h"
#include "protocol.h"

static int emit_capture(const struct store_capture *c, void *userdata) {
        const struct answer_context *ctx = ((void **) userdata)[0];
        struct answer_events *ev = ((void **) userdata)[1];
        struct capture_event e = {
                .id = c->id,
                .cause = c->cause,
                .trigger_ns = c->trigger_ns,
                .from_ns = c->from_ns,
                .to_ns = c->to_ns,
                .state = store_capture_state_name(c->state),
        };
        int r;

        r = ctx->emit(capture_event_to_json(&e), ctx->userdata);
        if (r < 0)
                return r;
        ev->sent++;
        return 0;
}

int answer_events_emit(const struct answer_context *ctx, const struct query_request *rq, uint64_t from_ns,
                       uint64_t to_ns, struct answer_events *ret) {
        void *pair[2] = { (void *) ctx, ret };

        *ret = (struct answer_events) { .asked = rq->events };
        if (!rq->events)
                return 0;
        /* the SQL applies capture_event_visible's rule: only_uid unless privileged */
        return store_capture_window(ctx->store, from_ns, to_ns, !ctx->caller.privileged, ctx->caller.uid,
                                    CAPTURE_EVENTS_MAX, emit_capture, pair, &ret->omitted);
}

int answer_events_end(json_t *end, const struct answer_events *ev) {
        if (!end || !ev->asked)
                return 0;
        if (json_object_set_new(end, PROTO_KEY_EVENTS, json_integer((json_int_t) ev->sent)) < 0 ||
            (ev->omitted > 0 &&
             json_object_set_new(end, PROTO_KEY_EVENTS_OMITTED, json_integer((json_int_t) ev->omitted)) < 0))
                return -ENOMEM;
        return 0;
}
