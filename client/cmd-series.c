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
               "with complete stacks: when did the picture get worse? A summary of the\n"
               "window's quality follows on stderr.\n"
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

int cmd_series(const struct cli_target *t, int argc, char *argv[]) {
        struct series_args a = {};
        struct filters *f = &a.filters;
        const char *step, *output;
        bool json;
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        _cleanup_(series_done) struct series s = {};
        struct output out;
        int r;

        r = command_parse_argv(&series_options, argc, argv, &a.filters, &a.view, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        step = a.step;
        output = a.view.output;
        json = a.view.json;
        if (filters_check(f) < 0 || cli_check_fleet_options(t, f, NULL) < 0)
                return EXIT_USAGE;

        request = json_pack("{ss}", "op", "series");
        if (!request || filters_to_request(f, request) < 0 ||
            (step && json_object_set_new(request, "step", json_string(step)) < 0)) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        if (cli_connect(t, &c) < 0 || conn_send(c, request) < 0)
                return EXIT_FAILURE;
        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw;
                size_t raw_len;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return EXIT_FAILURE;
                if (streq(type, "end")) {
                        r = series_set_end(&s, line);
                        if (r < 0)
                                return EXIT_FAILURE;
                        break;
                }
                if (!streq(type, "point")) {
                        cli_error(-EBADMSG, "profd answered 'series' with an unexpected '%s' line", type);
                        return EXIT_FAILURE;
                }
                r = series_add_point_line(&s, line);
                if (r < 0)
                        return EXIT_FAILURE;
        }

        if (output_open(&out, output) < 0)
                return EXIT_FAILURE;
        r = 0;
        if (json)
                r = series_write_json(out.f, &s);
        else if (s.total > 0)
                r = series_write(out.f, &s);
        if (r < 0)
                cli_error(r, "cannot write the series: %m");
        if (r >= 0 && (fflush(out.f) != 0 || ferror(out.f)))
                r = cli_error(-EIO, "cannot write %s", output ? output : "to standard output");
        if (output_close(&out, r >= 0) < 0)
                r = -EIO;
        if (r < 0)
                return EXIT_FAILURE;
        if (s.total == 0)
                no_samples_message(f, s.from_ns, s.to_ns, NULL);
        else if (!json && s.have_quality) {
                _cleanup_free_ char *summary = quality_summary(&s.quality);

                fflush(stdout);
                fprintf(stderr, "%s\n", summary ? summary : "quality: (out of memory)");
        }
        return EXIT_SUCCESS;
}
