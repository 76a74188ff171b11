/* Capture events in answers (capture-event.h). */
#include "capture-event.h"

#include <errno.h>
#include <string.h>

#include "helpers.h"
#include "protocol.h"

bool capture_event_overlaps(const struct capture_event *e, uint64_t w_from_ns, uint64_t w_to_ns) {
        return e->from_ns <= w_to_ns && e->to_ns >= w_from_ns;
}

bool capture_event_visible(uint32_t owner_uid, bool privileged, uint32_t uid) {
        return privileged || owner_uid == uid;
}

json_t *capture_event_to_json(const struct capture_event *e) {
        return json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:s}", PROTO_KEY_TYPE, PROTO_TYPE_EVENT,
                         PROTO_KEY_KIND, PROTO_EVENT_CAPTURE, PROTO_KEY_ID, (json_int_t) e->id,
                         PROTO_KEY_CAUSE, e->cause, PROTO_KEY_TRIGGER_NS, (json_int_t) e->trigger_ns,
                         PROTO_KEY_FROM_NS, (json_int_t) e->from_ns,
                         PROTO_KEY_TO_NS, (json_int_t) (e->to_ns > INT64_MAX ? INT64_MAX : e->to_ns),
                         PROTO_KEY_STATE, e->state);
}

static int get_u64(const json_t *line, const char *key, uint64_t *ret) {
        const json_t *v = json_object_get(line, key);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

static const char *get_string(const json_t *line, const char *key) {
        const json_t *v = json_object_get(line, key);

        return json_is_string(v) ? json_string_value(v) : NULL;
}

int capture_event_from_json(const json_t *line, struct capture_event *ret, const char **ret_error) {
        const char *kind = get_string(line, PROTO_KEY_KIND);
        struct capture_event e = {};
        uint64_t id;

        *ret_error = NULL;
        if (!kind) {
                *ret_error = "an event line without a \"kind\"";
                return -EBADMSG;
        }
        /* a kind this profctl does not know: a newer profd's, not an error */
        if (!streq(kind, PROTO_EVENT_CAPTURE))
                return 0;
        if (get_u64(line, PROTO_KEY_ID, &id) < 0 || id > INT64_MAX) {
                *ret_error = "a capture event without an \"id\"";
                return -EBADMSG;
        }
        e.id = (int64_t) id;
        e.cause = get_string(line, PROTO_KEY_CAUSE);
        e.state = get_string(line, PROTO_KEY_STATE);
        if (!e.cause || !e.state) {
                *ret_error = "a capture event without a \"cause\" or a \"state\"";
                return -EBADMSG;
        }
        if (get_u64(line, PROTO_KEY_TRIGGER_NS, &e.trigger_ns) < 0 || get_u64(line, PROTO_KEY_FROM_NS, &e.from_ns) < 0 ||
            get_u64(line, PROTO_KEY_TO_NS, &e.to_ns) < 0) {
                *ret_error = "a capture event without \"trigger_ns\", \"from_ns\" or \"to_ns\" as unsigned integers";
                return -EBADMSG;
        }
        if (e.from_ns > e.to_ns || e.trigger_ns < e.from_ns || e.trigger_ns > e.to_ns) {
                *ret_error = "a capture event whose trigger_ns is not within from_ns..to_ns";
                return -EBADMSG;
        }
        *ret = e;
        return 1;
}

json_t *capture_events_view_json(const json_t *lines) {
        json_t *events = json_array(), *line;
        size_t i;

        if (!events)
                return NULL;
        json_array_foreach(lines, i, line) {
                json_t *e = json_deep_copy(line);

                if (!e || json_object_del(e, PROTO_KEY_TYPE) < 0 || json_array_append_new(events, e) < 0) {
                        json_decref(e);
                        json_decref(events);
                        return NULL;
                }
        }
        return events;
}
