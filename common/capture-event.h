/* A capture as an event of a window (issue 44): the "event" lines of a
 * series or timeline answer that asks for them ("events":true), so that
 * profctl series and profctl heatmap mark when a capture fired and why
 * (docs/protocol.md, "Events"). Pure: both sides link it, profd to write
 * the lines, profctl to read them back. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Captures an answer carries at most: one per cool-down (10 min by
 * default) makes this a week of them in one window, and bounds the lines a
 * window of a year would otherwise bring. Those beyond are counted in the
 * end line's "events_omitted". */
#define CAPTURE_EVENTS_MAX 1000u

struct capture_event {
        int64_t id;
        const char *cause;     /* borrowed from the line or the row */
        uint64_t trigger_ns;   /* Unix-epoch ns */
        uint64_t from_ns, to_ns; /* what it pins */
        const char *state;     /* "active", "pinned" or "unpinned" */
};

/* Whether the capture's pinned range [from_ns, to_ns] overlaps the window
 * [w_from_ns, w_to_ns] (both inclusive, as a window's to_ns is). */
bool capture_event_overlaps(const struct capture_event *e, uint64_t w_from_ns, uint64_t w_to_ns);

/* Whether a caller may see a capture armed by owner_uid: root and admins
 * see every capture; anyone else only its own (a capture's cause may name
 * a pid or a cgroup of another user). */
bool capture_event_visible(uint32_t owner_uid, bool privileged, uint32_t uid);

/* The answer line {"type":"event","kind":"capture",...}; NULL on ENOMEM. */
json_t *capture_event_to_json(const struct capture_event *e);

/* Reads an "event" line. Returns 1 and fills *ret (its strings borrowed
 * from line) for a capture, 0 for an event of another kind (a newer
 * profd's: to be skipped), -EBADMSG with *ret_error saying what is wrong. */
int capture_event_from_json(const json_t *line, struct capture_event *ret, const char **ret_error);

/* The event lines kept from an answer (an array; NULL: none) as a view's
 * JSON writes them: each line but its "type". NULL on ENOMEM. */
json_t *capture_events_view_json(const json_t *lines);
