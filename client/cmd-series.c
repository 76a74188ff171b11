/* profctl series: samples (or off-CPU time) per step of time, to see when
 * something started. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "answer.h"
#include "cli.h"
#include "commands.h"
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

int cmd_series(const struct cli_target *t, int argc, char *argv[]) {
        enum {
                ARG_STEP = FILTER_OPTION_END,
                ARG_JSON,
                ARG_OUTPUT,
        };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h'        },
                FILTER_OPTIONS,
                { "step",   required_argument, NULL, ARG_STEP   },
                { "json",   no_argument,       NULL, ARG_JSON   },
                { "output", required_argument, NULL, ARG_OUTPUT },
                {}
        };
        struct filters f = {};
        const char *step = NULL, *output = NULL;
        bool json = false;
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        _cleanup_(series_done) struct series s = {};
        struct output out;
        uint64_t step_ns;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                r = filters_parse_option(&f, opt, optarg);
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (opt) {
                case 'h':
                        help_series();
                        return EXIT_SUCCESS;
                case ARG_STEP:
                        if (filters_check_duration("--step", optarg, &step_ns) < 0)
                                return EXIT_USAGE;
                        if (step_ns == 0) {
                                cli_usage_error("--step must be longer than 0");
                                return EXIT_USAGE;
                        }
                        step = optarg;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_OUTPUT:
                        if (!*optarg) {
                                cli_usage_error("--output needs a file name, got ''");
                                return EXIT_USAGE;
                        }
                        output = optarg;
                        break;
                default:
                        cli_bad_option(opt, argv);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_usage_error("series takes no arguments, got '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (filters_check(&f) < 0 || cli_check_fleet_options(t, &f, NULL) < 0)
                return EXIT_USAGE;

        request = json_pack("{ss}", "op", "series");
        if (!request || filters_to_request(&f, request) < 0 ||
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
                no_samples_message(&f, s.from_ns, s.to_ns, NULL);
        else if (!json && s.have_quality) {
                _cleanup_free_ char *summary = quality_summary(&s.quality);

                fflush(stdout);
                fprintf(stderr, "%s\n", summary ? summary : "quality: (out of memory)");
        }
        return EXIT_SUCCESS;
}
