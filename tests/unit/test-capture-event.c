/* Unit test of captures as events of an answer (common/capture-event.c):
 * which captures a window holds, who sees them, and the event line written
 * and read back, with the errors a malformed line gets and the kinds a
 * newer profd may send skipped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture-event.h"
#include "macro.h"
#include "tests.h"

#define S(x) ((uint64_t) (x) * NSEC_PER_SEC)

static const struct capture_event cap = {
        .id = 3, .cause = "psi:cpu.some.avg10>50", .trigger_ns = S(1300), .from_ns = S(1000), .to_ns = S(1330),
        .state = "pinned",
};

static void test_overlaps(void) {
        /* what it pins, both ends inclusive, not only its trigger */
        CHECK(capture_event_overlaps(&cap, S(900), S(1000)));
        CHECK(capture_event_overlaps(&cap, S(1330), S(2000)));
        CHECK(capture_event_overlaps(&cap, S(1100), S(1101)));
        CHECK(capture_event_overlaps(&cap, S(0), S(5000)));
        CHECK(!capture_event_overlaps(&cap, S(900), S(1000) - 1));
        CHECK(!capture_event_overlaps(&cap, S(1330) + 1, S(2000)));
}

static void test_visible(void) {
        CHECK(capture_event_visible(0, true, 1000));      /* root sees the setting's */
        CHECK(capture_event_visible(1000, true, 0));
        CHECK(capture_event_visible(1000, false, 1000));  /* a user its own */
        CHECK(!capture_event_visible(0, false, 1000));    /* not the setting's */
        CHECK(!capture_event_visible(1001, false, 1000)); /* nor another user's */
}

static json_t *parse(const char *text) {
        json_t *j = json_loads(text, 0, NULL);

        CHECK(j);
        return j;
}

static void check_refused(const char *text, const char *message_part) {
        json_t *j = parse(text);
        struct capture_event e;
        const char *err = NULL;

        CHECK_INT_EQ(capture_event_from_json(j, &e, &err), -EBADMSG);
        if (!err || !strstr(err, message_part))
                fprintf(stderr, "  for %s: %s\n", text, err ? err : "(no message)");
        CHECK(err && strstr(err, message_part));
        json_decref(j);
}

static void test_lines(void) {
        json_t *line = capture_event_to_json(&cap), *view, *other;
        char *text;
        struct capture_event e;
        const char *err = "";

        CHECK(line);
        text = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS);
        CHECK_STR_EQ(text, "{\"cause\":\"psi:cpu.some.avg10>50\",\"from_ns\":1000000000000,\"id\":3,"
                           "\"kind\":\"capture\",\"state\":\"pinned\",\"to_ns\":1330000000000,"
                           "\"trigger_ns\":1300000000000,\"type\":\"event\"}");
        free(text);
        CHECK_INT_EQ(capture_event_from_json(line, &e, &err), 1);
        CHECK(err == NULL);
        CHECK(e.id == 3 && e.trigger_ns == S(1300) && e.from_ns == S(1000) && e.to_ns == S(1330));
        CHECK_STR_EQ(e.cause, cap.cause);
        CHECK_STR_EQ(e.state, "pinned");

        /* a view's JSON: the lines but their type */
        other = json_array();
        CHECK(other && json_array_append(other, line) == 0);
        view = capture_events_view_json(other);
        text = json_dumps(view, JSON_COMPACT | JSON_SORT_KEYS);
        CHECK(text && strstr(text, "[{\"cause\":") == text && !strstr(text, "\"type\""));
        free(text);
        json_decref(view);
        json_decref(other);
        view = capture_events_view_json(NULL);
        CHECK(view && json_array_size(view) == 0);
        json_decref(view);
        json_decref(line);

        /* a newer profd's kind of event: skipped, not an error */
        other = parse("{\"type\":\"event\",\"kind\":\"deploy\",\"t_ns\":5}");
        CHECK_INT_EQ(capture_event_from_json(other, &e, &err), 0);
        json_decref(other);

        check_refused("{\"type\":\"event\"}", "without a \"kind\"");
        check_refused("{\"type\":\"event\",\"kind\":\"capture\",\"cause\":\"oom\",\"state\":\"pinned\","
                      "\"trigger_ns\":5,\"from_ns\":1,\"to_ns\":9}", "without an \"id\"");
        check_refused("{\"type\":\"event\",\"kind\":\"capture\",\"id\":1,\"state\":\"pinned\","
                      "\"trigger_ns\":5,\"from_ns\":1,\"to_ns\":9}", "\"cause\"");
        check_refused("{\"type\":\"event\",\"kind\":\"capture\",\"id\":1,\"cause\":\"oom\",\"state\":\"pinned\","
                      "\"trigger_ns\":-5,\"from_ns\":1,\"to_ns\":9}", "unsigned integers");
        check_refused("{\"type\":\"event\",\"kind\":\"capture\",\"id\":1,\"cause\":\"oom\",\"state\":\"pinned\","
                      "\"trigger_ns\":10,\"from_ns\":1,\"to_ns\":9}", "not within");
}

int main(void) {
        test_overlaps();
        test_visible();
        test_lines();
        TESTS_DONE();
}
