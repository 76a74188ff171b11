/* profctl series: samples (or off-CPU time) per step of time, to see when
 * something started. */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "answer.h"
#include "cli.h"
#include "commands.h"
#include "options.h"
#include "protocol.h"
#include "output.h"
#include "util.h"
#include "views.h"

static void help_series(void) {
        printf("Usage: profctl series [FILTERS] [--step DUR] [--json] [--output FILE]\n"
               "\n"
               "Show, per step of time, the samples per second (--kind cpu) or milliseconds\n"
               "per second spent off the CPU (offcpu, wakeup) of what the filters match, with\n"
               "a bar per line: when did it start, when did it stop? Steps without samples\n"
               "between the first and the last show as 0. COMPLETE is the share of the step\n"
               "with complete stacks: when did the picture get worse? A capture (profctl\n"
               "capture) that pins part of the window is a line 'capture ID (CAUSE) at TIME'\n"
               "after the step of its trigger (with --clickhouse, those the hosts exported,\n"
               "of every user). A summary of the window's quality follows on stderr.\n"
               "\n"
               "%s"
               "\n"
               "Options:\n"
               "      --step DUR       Length of one step (default: profd's, see the output)\n"
               "      --json           One JSON document with every point\n"
               "      --output FILE    Write to FILE instead of standard output\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, duration_help);
}

enum {
        ARG_STEP = VIEW_OPTION_END,
};

struct series_args {
        struct filters filters;
        struct view_options view;
        const char *step;       /* NULL: profd's */
};

static int series_parse_option(void *userdata, int opt, const char *arg) {
        struct series_args *a = userdata;
        uint64_t step_ns;

        assert(opt == ARG_STEP);
        if (filters_check_duration("--step", arg, &step_ns) < 0)
                return -EINVAL;
        if (step_ns == 0)
                return cli_usage_error("--step must be longer than 0");
        a->step = arg;
        return 0;
}

static const struct command_options series_options = {
        .name = "series",
        .help = help_series,
        .filters = true,
        .views = VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT),
        .options = (const struct option[]) {
                { "step", required_argument, NULL, ARG_STEP },
                {}
        },
        .parse_option = series_parse_option,
};

/* Runs request on c and keeps its points in s. */
static int series_fetch(conn *c, const json_t *request, struct series *s) {
        int r;

        uint64_t events_seen = 0;

        s->events = json_array();
        if (!s->events)
                return cli_error(-ENOMEM, "%m");
        r = conn_send(c, request);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw;
                size_t raw_len;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return r;
                if (streq(type, PROTO_TYPE_END)) {
                        r = events_check_end(line, "series", events_seen);
                        return r < 0 ? r : series_set_end(s, line);
                }
                /* the captures of the window (issue 44) */
                if (streq(type, PROTO_TYPE_EVENT)) {
                        r = event_line_keep(s->events, line, "series", &events_seen);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!streq(type, PROTO_TYPE_POINT))
                        return cli_error(-EBADMSG, "profd answered 'series' with an unexpected '%s' line", type);
                r = series_add_point_line(s, line);
                if (r < 0)
                        return r;
        }
}

/* Writes s to --output (or standard output), then what is to be said on
 * stderr. */
static int series_show(const struct series_args *a, const struct series *s) {
        struct output out;
        int r;

        r = output_open(&out, a->view.output);
        if (r < 0)
                return r;
        if (a->view.json)
                r = series_write_json(out.f, s);
        else if (s->total > 0 || json_array_size(s->events) > 0)
                r = series_write(out.f, s);
        if (r < 0)
                cli_error(r, "cannot write the series: %m");
        r = output_finish(&out, r);
        if (r < 0)
                return r;
        if (s->total == 0)
                no_samples_message(&a->filters, s->from_ns, s->to_ns, NULL);
        else if (!a->view.json && s->have_quality)
                quality_summary_print(&s->quality);
        if (s->end)
                unconverted_note(s->end);
        return 0;
}

int cmd_series(const struct cli_target *t, int argc, char *argv[]) {
        struct series_args a = {};
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        _cleanup_(series_done) struct series s = {};
        int r;

        r = command_parse_argv(&series_options, argc, argv, &a.filters, &a.view, &a);
        if (r > 0 && (filters_check(&a.filters) < 0 || cli_check_fleet_options(t, &a.filters, NULL) < 0))
                r = -EINVAL;
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;

        request = request_new(PROTO_OP_SERIES, &a.filters, &a.view);
        /* the captures of the window, marked on the series */
        if (!request || json_object_set_new(request, PROTO_KEY_EVENTS, json_true()) < 0 ||
            (a.step && json_object_set_new(request, PROTO_KEY_STEP, json_string(a.step)) < 0)) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        r = cli_connect(t, &c);
        if (r >= 0)
                r = series_fetch(c, request, &s);
        if (r >= 0)
                r = series_show(&a, &s);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
