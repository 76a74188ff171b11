/* profctl capture start|list|unpin|stop: captures (issue 44), one request
 * and one answer line each, printed as sent (--json) or in words. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "cli.h"
#include "commands.h"
#include "conn.h"
#include "duration.h"
#include "options.h"
#include "protocol.h"
#include "render.h"
#include "util.h"

static void help_capture(void) {
        printf("Usage: profctl capture start CONDITION [--json]\n"
               "       profctl capture list [--json]\n"
               "       profctl capture unpin ID [--json]\n"
               "       profctl capture stop TRIGGER [--json]\n"
               "\n"
               "A capture keeps the raw drains and the timeline from capture_before before its\n"
               "trigger to capture_duration after it: retention does not take them until the\n"
               "capture is unpinned. At most one capture per capture_cooldown, within\n"
               "capture_max_pinned bytes (profd's settings).\n"
               "\n"
               "  start manual              capture now\n"
               "  start psi:RES[.some|.full][.avg10|.avg60|.avg300]>PERCENT\n"
               "                            when the pressure of cpu, memory or io rises above it\n"
               "  start cpu:pid=PID>PERCENT  when a process's CPU (100 = one CPU) rises above it\n"
               "  start cpu:cgroup=PATH>PERCENT\n"
               "                            likewise for a cgroup, e.g. /system.slice/nginx.service\n"
               "  list                      the captures recorded (newest first) and the triggers\n"
               "  unpin ID                  give a capture's data back to retention\n"
               "  stop TRIGGER              disarm a trigger armed by start\n"
               "\n"
               "A condition fires when it becomes true, and again only after it fell. Users\n"
               "other than root and profd's admin group may watch only their own processes\n"
               "(cpu:pid=) and unpin their own captures.\n"
               "\n"
               "Options:\n"
               "      --json   Print profd's answer as it sent it\n"
               "  -h, --help   Show this help\n");
}

static const char *str_of(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "?";
}

static uint64_t u64_of(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t) json_integer_value(v) : 0;
}

/* "3 pinned 2026-12-02 12:40:01 cpu:pid=42>80 at 99.50%, 5m before to 30s after, 1.2 MiB, 499 Hz (request, uid 1000)" */
static void capture_line_write(FILE *f, const json_t *c) {
        const json_t *value = json_object_get(c, "value_percent");
        uint64_t trigger = u64_of(c, "trigger_ns"), from = u64_of(c, "from_ns"), to = u64_of(c, "to_ns");
        char when[64], before[32], after[32], bytes[32];

        fprintf(f, "%4" PRIu64 "  %-8s  %s  ", u64_of(c, "id"), str_of(c, "state"),
                format_local_time(when, sizeof(when), trigger));
        write_sanitized(f, str_of(c, "cause"));
        if (json_is_number(value))
                fprintf(f, " at %.2f%%", json_number_value(value));
        fprintf(f, ", %s before to %s after, %s",
                format_duration(before, sizeof(before), trigger - MIN(from, trigger)),
                format_duration(after, sizeof(after), to > trigger ? to - trigger : 0),
                format_bytes(bytes, sizeof(bytes), u64_of(c, "pinned_bytes")));
        /* the on-CPU rate while it lasted; 0: unknown (before schema 14) or no sampler */
        if (u64_of(c, "frequency_hz") > 0)
                fprintf(f, ", %" PRIu64 " Hz", u64_of(c, "frequency_hz"));
        fprintf(f, " (%s, uid %" PRIu64 ")\n", str_of(c, "origin"), u64_of(c, "uid"));
}

static void trigger_line_write(FILE *f, const json_t *t) {
        const char *error = json_string_value(json_object_get(t, "error"));

        fprintf(f, "%4" PRIu64 "  ", u64_of(t, "id"));
        write_sanitized(f, str_of(t, "condition"));
        fprintf(f, " (%s, uid %" PRIu64 "): fired %" PRIu64 ", refused %" PRIu64, str_of(t, "origin"),
                u64_of(t, "uid"), u64_of(t, "fired"), u64_of(t, "refused"));
        if (error)
                fprintf(f, "; cannot read its value: %s", error);
        fputc('\n', f);
}

static int capture_answer_write(FILE *f, const json_t *line) {
        const char *action = str_of(line, PROTO_KEY_ACTION);
        const json_t *c = json_object_get(line, "capture"), *t = json_object_get(line, "trigger"), *v;
        size_t i;

        if (streq(action, PROTO_CAPTURE_LIST)) {
                const json_t *captures = json_object_get(line, "captures"), *triggers = json_object_get(line, "triggers");

                fprintf(f, "%zu captures (newest first):\n", json_array_size(captures));
                json_array_foreach(captures, i, v)
                        capture_line_write(f, v);
                fprintf(f, "%zu triggers:\n", json_array_size(triggers));
                json_array_foreach(triggers, i, v)
                        trigger_line_write(f, v);
        } else if (json_is_object(c)) {
                fprintf(f, streq(action, PROTO_CAPTURE_UNPIN) ? "unpinned, back to retention:\n" : "captured:\n");
                capture_line_write(f, c);
        } else if (json_is_object(t)) {
                fprintf(f, streq(action, PROTO_CAPTURE_STOP) ? "trigger stopped:\n"
                                                             : "trigger armed, read every second:\n");
                trigger_line_write(f, t);
        } else
                return cli_error(-EBADMSG, "profd's capture answer has neither a capture nor a trigger");
        return ferror(f) ? -EIO : 0;
}

int cmd_capture(const struct cli_target *t, int argc, char *argv[]) {
        static const struct command_options options = {
                .name = "capture",
                .help = help_capture,
                .views = VIEW_OPT(VIEW_JSON),
        };
        _cleanup_json_ json_t *request = NULL;
        struct view_options view = {};
        const char *action, *arg = NULL;
        _cleanup_free_ char **rest = NULL;
        int r, n_rest = 0, wanted;
        uint64_t id = 0;

        /* the action and its argument come first; the rest are options */
        if (argc < 2 || argv[1][0] == '-') {
                if (argc >= 2 && (streq(argv[1], "-h") || streq(argv[1], "--help"))) {
                        help_capture();
                        return EXIT_SUCCESS;
                }
                cli_usage_error("capture needs an action: start, list, unpin or stop");
                return EXIT_USAGE;
        }
        action = argv[1];
        if (streq(action, PROTO_CAPTURE_START) || streq(action, PROTO_CAPTURE_UNPIN) ||
            streq(action, PROTO_CAPTURE_STOP))
                wanted = 1;
        else if (streq(action, PROTO_CAPTURE_LIST))
                wanted = 0;
        else {
                cli_usage_error("unknown capture action '%s' (start, list, unpin or stop)", action);
                return EXIT_USAGE;
        }
        if (wanted) {
                if (argc < 3 || (argv[2][0] == '-' && !streq(argv[2], "-"))) {
                        if (argc >= 3 && (streq(argv[2], "-h") || streq(argv[2], "--help"))) {
                                help_capture();
                                return EXIT_SUCCESS;
                        }
                        cli_usage_error("capture %s needs %s", action,
                                        streq(action, PROTO_CAPTURE_START) ? "a CONDITION (e.g. manual, psi:cpu>50, "
                                                                             "cpu:pid=4242>80)"
                                                                           : "an ID (profctl capture list shows them)");
                        return EXIT_USAGE;
                }
                arg = argv[2];
        }
        rest = calloc((size_t) argc + 1, sizeof(char *));
        if (!rest) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        rest[n_rest++] = argv[0];
        for (int i = 2 + wanted; i < argc; i++)
                rest[n_rest++] = argv[i];
        r = command_parse_argv(&options, n_rest, rest, NULL, &view, NULL);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        if (arg && !streq(action, PROTO_CAPTURE_START) &&
            (parse_uint_strict(arg, INT64_MAX, &id) < 0 || id == 0)) {
                cli_usage_error("capture %s: '%s' is not an id (a positive whole number)", action, arg);
                return EXIT_USAGE;
        }

        request = json_pack("{s:s, s:s}", PROTO_KEY_OP, PROTO_OP_CAPTURE, PROTO_KEY_ACTION, action);
        if (!request || (streq(action, PROTO_CAPTURE_START) &&
                         json_object_set_new(request, PROTO_KEY_CONDITION, json_string(arg)) < 0) ||
            (id && json_object_set_new(request, PROTO_KEY_ID, json_integer((json_int_t) id)) < 0)) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        return ask_and_print(t->socket, request, PROTO_OP_CAPTURE, PROTO_TYPE_CAPTURE, view.json,
                             capture_answer_write);
}
