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
#include "options.h"
#include "output.h"
#include "profile.h"
#include "protocol.h"
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

enum {
        ARG_BASELINE_FROM = VIEW_OPTION_END,
        ARG_BASELINE_TO,
        ARG_BASELINE_PID,
        ARG_BASELINE_HOST,
};

struct diff_args {
        struct filters filters;
        struct view_options view;
        const char *baseline_from, *baseline_to;
        uint64_t baseline_pid;
        const char *baseline_host;
        struct diff_opts opts;  /* from view, for views.h */
};

static int diff_parse_option(void *userdata, int opt, const char *arg) {
        struct diff_args *a = userdata;
        int r;

        switch (opt) {
        case ARG_BASELINE_FROM:
        case ARG_BASELINE_TO:
                r = filters_check_time(opt == ARG_BASELINE_FROM ? "--baseline-from" : "--baseline-to", arg);
                if (r < 0)
                        return r;
                *(opt == ARG_BASELINE_FROM ? &a->baseline_from : &a->baseline_to) = arg;
                return 0;
        case ARG_BASELINE_PID:
                r = parse_uint_strict(arg, INT32_MAX, &a->baseline_pid);
                if (r < 0 || a->baseline_pid == 0)
                        return cli_usage_error("--baseline-pid '%s' is not a process id (expected a "
                                               "positive integer)", arg);
                return 0;
        case ARG_BASELINE_HOST:
                if (!*arg)
                        return cli_usage_error("--baseline-host needs a host name or glob, got ''");
                a->baseline_host = arg;
                return 0;
        default:
                assert_not_reached();
        }
}

static const struct command_options diff_options = {
        .name = "diff",
        .help = help_diff,
        .filters = true,
        .views = VIEW_OPT(VIEW_FORMAT) | VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT) | VIEW_OPT(VIEW_BY) |
                 VIEW_OPT(VIEW_CHILDREN) | VIEW_OPT(VIEW_LIMIT) | VIEW_OPT(VIEW_LINES) | VIEW_OPT(VIEW_RAW_NAMES) |
                 VIEW_OPT(VIEW_ICICLE) | VIEW_OPT(VIEW_TITLE),
        .formats = FORMAT_BIT(FORMAT_TABLE) | FORMAT_BIT(FORMAT_FOLDED) | FORMAT_BIT(FORMAT_JSON) |
                   FORMAT_BIT(FORMAT_SVG),
        /* diff has always let the last --format win */
        .format_last_wins = true,
        .options = (const struct option[]) {
                { "baseline-from", required_argument, NULL, ARG_BASELINE_FROM },
                { "baseline-to",   required_argument, NULL, ARG_BASELINE_TO   },
                { "baseline-pid",  required_argument, NULL, ARG_BASELINE_PID  },
                { "baseline-host", required_argument, NULL, ARG_BASELINE_HOST },
                {}
        },
        .parse_option = diff_parse_option,
};

/* Checks what single options can't: combinations. Returns 1 to go on,
 * -EINVAL on a usage error. */
static int diff_check(const struct cli_target *t, struct diff_args *a) {
        struct view_options *v = &a->view;
        int r;

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

        if (v->json && !view_options_given(v, VIEW_FORMAT))
                v->format = FORMAT_JSON;
        if (v->json && v->format != FORMAT_TABLE && v->format != FORMAT_JSON)
                return cli_usage_error("--json cannot be combined with --format %s",
                                       view_format_to_string(v->format));
        r = view_options_check_applies(v);
        if (r < 0)
                return r;
        a->opts = (struct diff_opts) {
                .lines = v->lines || v->by == TOP_BY_LINE,
                .by = v->by,
                .children = v->children,
                .limit = view_options_given(v, VIEW_LIMIT) ? v->limit : QUERY_LIMIT_DEFAULT,
        };
        return 1;
}

/* The baseline asks what the current request asks, in its own window or
 * of its own process. */
static json_t *diff_baseline_request(const struct diff_args *a, const json_t *current) {
        _cleanup_json_ json_t *req = json_deep_copy(current);

        if (!req)
                return NULL;
        if (a->baseline_host)
                return json_object_set_new(req, PROTO_KEY_HOST, json_string(a->baseline_host)) < 0 ? NULL : TAKE_PTR(req);
        if (a->baseline_pid > 0)
                return json_object_set_new(req, PROTO_KEY_PID, json_integer((json_int_t) a->baseline_pid)) < 0 ?
                        NULL : TAKE_PTR(req);
        json_object_del(req, "since");
        json_object_del(req, "until");
        json_object_del(req, "last");
        if (json_object_set_new(req, PROTO_KEY_FROM, json_string(a->baseline_from)) < 0 ||
            json_object_set_new(req, PROTO_KEY_TO, json_string(a->baseline_to)) < 0)
                return NULL;
        return TAKE_PTR(req);
}

static int diff_run(const struct cli_target *t, const struct diff_args *a) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL, *baseline_request = NULL;
        _cleanup_profile_ profile *baseline = NULL, *current = NULL;
        struct output out;
        int r;

        request = request_new(PROTO_OP_QUERY, &a->filters, &a->view);
        if (!request)
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

        r = output_open(&out, a->view.output);
        if (r < 0)
                return r;
        switch (a->view.format) {
        case FORMAT_TABLE:
                r = a->view.json ? diff_table_write_json(out.f, baseline, current, &a->opts) :
                        diff_table_write(out.f, baseline, current, &a->opts);
                break;
        case FORMAT_FOLDED:
                r = diff_write_folded(out.f, baseline, current, &a->opts);
                break;
        case FORMAT_JSON:
                r = diff_write_json(out.f, baseline, current, &a->opts);
                break;
        case FORMAT_SVG: {
                struct flame_opts fo = { .title = a->view.title, .icicle = a->view.icicle };

                r = flame_svg_write_diff(out.f, baseline, current, &fo);
                break;
        }
        default:
                assert_not_reached();
        }
        if (r < 0)
                r = cli_error(r, "cannot write the diff: %m");
        r = output_finish(&out, r);
        if (r < 0)
                return r;
        if (baseline->total == 0)
                no_samples_message(&a->filters, baseline->from_ns, baseline->to_ns, " in the baseline");
        if (current->total == 0)
                no_samples_message(&a->filters, current->from_ns, current->to_ns, " in the current window");
        /* a change is only as good as the worse of its two pictures */
        if (!a->view.json && a->view.format != FORMAT_JSON)
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

        r = command_parse_argv(&diff_options, argc, argv, &a.filters, &a.view, &a);
        if (r > 0)
                r = diff_check(t, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return diff_run(t, &a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
