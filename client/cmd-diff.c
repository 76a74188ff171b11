/* profctl diff: what changed between a baseline (another window, process
 * or host) and the current window. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "answer.h"
#include "cli.h"
#include "commands.h"
#include "flame.h"
#include "output.h"
#include "profile.h"
#include "util.h"
#include "views.h"

static void help_diff(void) {
        printf("Usage: profctl diff [FILTERS] --baseline-from TIME --baseline-to TIME [OPTIONS]\n"
               "       profctl diff [FILTERS] --pid N --baseline-pid P [OPTIONS]\n"
               "       profctl --clickhouse URL diff [FILTERS] --host H --baseline-host B [OPTIONS]\n"
               "\n"
               "Compare the current window (given by the filters, as for query) with a\n"
               "baseline: the same filters in another window (--baseline-from/--baseline-to),\n"
               "or another process in the same window (--baseline-pid). Shares are compared,\n"
               "not counts, so windows with different numbers of samples compare: the\n"
               "baseline is scaled to the current total (as difffolded.pl -n does).\n"
               "\n"
               "%s"
               "\n"
               "Baseline:\n"
               "      --baseline-from TIME  Baseline window start (RFC 3339 or a duration ago)\n"
               "      --baseline-to TIME    Baseline window end\n"
               "      --baseline-pid P      Baseline: process P (the current one is --pid)\n"
               "      --baseline-host NAME  With --clickhouse: baseline host NAME or glob (the\n"
               "                            current one is --host)\n"
               "\n"
               "Views:\n"
               "      --format FORMAT  table (default): per function its baseline and current\n"
               "                       share and the change in percentage points, biggest change\n"
               "                       first; folded: \"stack BASELINE CURRENT\" lines as\n"
               "                       difffolded.pl writes them, for flamegraph.pl; json: those\n"
               "                       stacks as JSON; svg: a differential flame graph\n"
               "      --json           JSON of the view (alone: --format json)\n"
               "      --output FILE    Write to FILE instead of standard output\n"
               "      --by WHAT        Table rows by function (default), line or module\n"
               "      --children       Table: compare TOTAL shares instead of SELF\n"
               "      --limit N        Table rows to show (default %d, 0 for all)\n"
               "      --lines          Name frames \"function (file:line)\"\n"
               "      --raw-names      Function names as in the symbol table\n"
               "      --icicle, --title TEXT  SVG options, as for query\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, QUERY_LIMIT_DEFAULT, duration_help);
}

typedef enum DiffFormat {
        DIFF_TABLE,
        DIFF_FOLDED,
        DIFF_JSON,
        DIFF_SVG,
} DiffFormat;

struct diff_args {
        struct filters filters;
        const char *baseline_from, *baseline_to;
        uint64_t baseline_pid;
        const char *baseline_host;
        DiffFormat format;
        bool json;
        const char *output;
        struct diff_opts opts;
        bool by_set, limit_set;
        bool raw_names, icicle;
        const char *title;
};

static int diff_parse_argv(const struct cli_target *t, int argc, char *argv[], struct diff_args *a) {
        enum {
                ARG_BASELINE_FROM = FILTER_OPTION_END,
                ARG_BASELINE_TO,
                ARG_BASELINE_PID,
                ARG_BASELINE_HOST,
                ARG_FORMAT,
                ARG_JSON,
                ARG_OUTPUT,
                ARG_BY,
                ARG_CHILDREN,
                ARG_LIMIT,
                ARG_LINES,
                ARG_RAW_NAMES,
                ARG_ICICLE,
                ARG_TITLE,
        };
        static const struct option options[] = {
                { "help",          no_argument,       NULL, 'h'               },
                FILTER_OPTIONS,
                { "baseline-from", required_argument, NULL, ARG_BASELINE_FROM },
                { "baseline-to",   required_argument, NULL, ARG_BASELINE_TO   },
                { "baseline-pid",  required_argument, NULL, ARG_BASELINE_PID  },
                { "baseline-host", required_argument, NULL, ARG_BASELINE_HOST },
                { "format",        required_argument, NULL, ARG_FORMAT        },
                { "json",          no_argument,       NULL, ARG_JSON          },
                { "output",        required_argument, NULL, ARG_OUTPUT        },
                { "by",            required_argument, NULL, ARG_BY            },
                { "children",      no_argument,       NULL, ARG_CHILDREN      },
                { "limit",         required_argument, NULL, ARG_LIMIT         },
                { "lines",         no_argument,       NULL, ARG_LINES         },
                { "raw-names",     no_argument,       NULL, ARG_RAW_NAMES     },
                { "icicle",        no_argument,       NULL, ARG_ICICLE        },
                { "title",         required_argument, NULL, ARG_TITLE         },
                {}
        };
        bool format_set = false;
        int opt, r;

        a->opts.limit = QUERY_LIMIT_DEFAULT;
        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                r = filters_parse_option(&a->filters, opt, optarg);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                switch (opt) {
                case 'h':
                        help_diff();
                        return 0;
                case ARG_BASELINE_FROM:
                case ARG_BASELINE_TO:
                        r = filters_check_time(opt == ARG_BASELINE_FROM ? "--baseline-from" : "--baseline-to", optarg);
                        if (r < 0)
                                return r;
                        *(opt == ARG_BASELINE_FROM ? &a->baseline_from : &a->baseline_to) = optarg;
                        break;
                case ARG_BASELINE_PID:
                        r = parse_uint_strict(optarg, INT32_MAX, &a->baseline_pid);
                        if (r < 0 || a->baseline_pid == 0)
                                return cli_usage_error("--baseline-pid '%s' is not a process id (expected a "
                                                       "positive integer)", optarg);
                        break;
                case ARG_BASELINE_HOST:
                        if (!*optarg)
                                return cli_usage_error("--baseline-host needs a host name or glob, got ''");
                        a->baseline_host = optarg;
                        break;
                case ARG_FORMAT:
                        if (streq(optarg, "table"))
                                a->format = DIFF_TABLE;
                        else if (streq(optarg, "folded"))
                                a->format = DIFF_FOLDED;
                        else if (streq(optarg, "json"))
                                a->format = DIFF_JSON;
                        else if (streq(optarg, "svg"))
                                a->format = DIFF_SVG;
                        else
                                return cli_usage_error("--format '%s' is not known for diff (expected table, "
                                                       "folded, json or svg)", optarg);
                        format_set = true;
                        break;
                case ARG_JSON:
                        a->json = true;
                        break;
                case ARG_OUTPUT:
                        if (!*optarg)
                                return cli_usage_error("--output needs a file name, got ''");
                        a->output = optarg;
                        break;
                case ARG_BY:
                        r = cli_parse_by(optarg, &a->opts.by);
                        if (r < 0)
                                return r;
                        a->by_set = true;
                        break;
                case ARG_CHILDREN:
                        a->opts.children = true;
                        break;
                case ARG_LIMIT:
                        r = cli_parse_limit(optarg, &a->opts.limit);
                        if (r < 0)
                                return r;
                        a->limit_set = true;
                        break;
                case ARG_LINES:
                        a->opts.lines = true;
                        break;
                case ARG_RAW_NAMES:
                        a->raw_names = true;
                        break;
                case ARG_ICICLE:
                        a->icicle = true;
                        break;
                case ARG_TITLE:
                        a->title = optarg;
                        break;
                default:
                        return cli_bad_option(opt, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error("diff takes no arguments, got '%s'", argv[optind]);
        r = filters_check(&a->filters);
        if (r < 0)
                return r;

        r = cli_check_fleet_options(t, &a->filters, NULL);
        if (r < 0)
                return r;
        if (a->baseline_host) {
                if (!t->clickhouse)
                        return cli_usage_error("--baseline-host compares hosts of a fleet: give --clickhouse URL "
                                               "(before the command)");
                if (a->baseline_pid > 0 || a->baseline_from || a->baseline_to)
                        return cli_usage_error("--baseline-host compares two hosts in one window; it cannot be "
                                               "combined with --baseline-pid, --baseline-from or --baseline-to");
                if (!a->filters.host)
                        return cli_usage_error("--baseline-host compares two hosts: give the current one with "
                                               "--host");
                if (streq(a->baseline_host, a->filters.host))
                        return cli_usage_error("--baseline-host and --host are both '%s'; nothing to compare",
                                               a->baseline_host);
        } else if (!a->baseline_from && !a->baseline_to && a->baseline_pid == 0)
                return cli_usage_error("diff needs a baseline: --baseline-from and --baseline-to (another "
                                       "window), --baseline-pid (another process) or --baseline-host (another "
                                       "host, with --clickhouse)");
        if (a->baseline_pid > 0 && (a->baseline_from || a->baseline_to))
                return cli_usage_error("--baseline-pid compares two processes in one window; it cannot be "
                                       "combined with --baseline-from/--baseline-to");
        if (a->baseline_pid > 0 && a->filters.pid == 0)
                return cli_usage_error("--baseline-pid compares two processes: give the current one with --pid");
        if (a->baseline_pid > 0 && a->baseline_pid == a->filters.pid)
                return cli_usage_error("--baseline-pid and --pid are both %" PRIu64 "; nothing to compare",
                                       a->baseline_pid);
        if (a->baseline_pid == 0 && !a->baseline_host && (!a->baseline_from || !a->baseline_to))
                return cli_usage_error("the baseline window needs both --baseline-from and --baseline-to");
        if (a->baseline_from && a->baseline_to &&
            filters_check_window("--baseline-from", a->baseline_from, "--baseline-to", a->baseline_to) < 0)
                return -EINVAL;

        if (a->json && !format_set)
                a->format = DIFF_JSON;
        if (a->json && a->format != DIFF_TABLE && a->format != DIFF_JSON)
                return cli_usage_error("--json cannot be combined with --format %s",
                                       a->format == DIFF_FOLDED ? "folded" : "svg");
        if ((r = cli_check_applies(a->by_set, "--by", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = cli_check_applies(a->opts.children, "--children", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = cli_check_applies(a->limit_set, "--limit", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = cli_check_applies(a->icicle, "--icicle", a->format == DIFF_SVG, "--format svg")) < 0 ||
            (r = cli_check_applies(a->title, "--title", a->format == DIFF_SVG, "--format svg")) < 0)
                return r;
        if (a->opts.by == TOP_BY_LINE)
                a->opts.lines = true;
        return 1;
}

/* The baseline asks what the current request asks, in its own window or
 * of its own process. */
static json_t *diff_baseline_request(const struct diff_args *a, const json_t *current) {
        _cleanup_json_ json_t *req = json_deep_copy(current);

        if (!req)
                return NULL;
        if (a->baseline_host)
                return json_object_set_new(req, "host", json_string(a->baseline_host)) < 0 ? NULL : TAKE_PTR(req);
        if (a->baseline_pid > 0)
                return json_object_set_new(req, "pid", json_integer((json_int_t) a->baseline_pid)) < 0 ?
                        NULL : TAKE_PTR(req);
        json_object_del(req, "since");
        json_object_del(req, "until");
        json_object_del(req, "last");
        if (json_object_set_new(req, "from", json_string(a->baseline_from)) < 0 ||
            json_object_set_new(req, "to", json_string(a->baseline_to)) < 0)
                return NULL;
        return TAKE_PTR(req);
}

static int diff_run(const struct cli_target *t, const struct diff_args *a) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL, *baseline_request = NULL;
        _cleanup_profile_ profile *baseline = NULL, *current = NULL;
        struct output out;
        int r;

        request = json_pack("{ss}", "op", "query");
        if (!request || filters_to_request(&a->filters, request) < 0 ||
            (a->raw_names && json_object_set_new(request, "raw_names", json_true()) < 0))
                return cli_error(-ENOMEM, "%m");
        baseline_request = diff_baseline_request(a, request);
        if (!baseline_request)
                return cli_error(-ENOMEM, "%m");

        /* two requests, one connection: profd answers them in order */
        r = cli_connect(t, &c);
        if (r < 0)
                return r;
        r = profile_fetch(c, baseline_request, &baseline);
        if (r < 0)
                return r;
        r = profile_fetch(c, request, &current);
        if (r < 0)
                return r;

        r = output_open(&out, a->output);
        if (r < 0)
                return r;
        switch (a->format) {
        case DIFF_TABLE:
                r = a->json ? diff_table_write_json(out.f, baseline, current, &a->opts) :
                        diff_table_write(out.f, baseline, current, &a->opts);
                break;
        case DIFF_FOLDED:
                r = diff_write_folded(out.f, baseline, current, &a->opts);
                break;
        case DIFF_JSON:
                r = diff_write_json(out.f, baseline, current, &a->opts);
                break;
        case DIFF_SVG: {
                struct flame_opts fo = { .title = a->title, .icicle = a->icicle };

                r = flame_svg_write_diff(out.f, baseline, current, &fo);
                break;
        }
        }
        if (r < 0)
                r = cli_error(r, "cannot write the diff: %m");
        if (r >= 0 && (fflush(out.f) != 0 || ferror(out.f)))
                r = cli_error(-EIO, "cannot write %s", a->output ? a->output : "to standard output");
        if (output_close(&out, r >= 0) < 0)
                r = -EIO;
        if (r < 0)
                return r;
        if (baseline->total == 0)
                no_samples_message(&a->filters, baseline->from_ns, baseline->to_ns, " in the baseline");
        if (current->total == 0)
                no_samples_message(&a->filters, current->from_ns, current->to_ns, " in the current window");
        /* a change is only as good as the worse of its two pictures */
        if (!a->json && a->format != DIFF_JSON)
                for (int i = 0; i < 2; i++) {
                        const profile *p = i == 0 ? baseline : current;
                        _cleanup_free_ char *line = p->have_quality ? quality_summary(&p->quality) : NULL;

                        if (line)
                                fprintf(stderr, "%s %s\n", i == 0 ? "baseline" : "current", line);
                }
        return 0;
}

int cmd_diff(const struct cli_target *t, int argc, char *argv[]) {
        struct diff_args a = {};
        int r;

        r = diff_parse_argv(t, argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return diff_run(t, &a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
