/* profctl query: where the time went in a window, as a table, folded
 * stacks, a tree, JSON, a flame graph or a pprof profile. */
#include "cmd-query.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "flame.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "pprof.h"
#include "profile.h"
#include "protocol.h"
#include "util.h"
#include "views.h"

static void help_query(void) {
        printf("Usage: profctl query [FILTERS] [VIEW OPTIONS]\n"
               "\n"
               "Show where time went in a window of time: by default the functions with the\n"
               "most samples (--kind cpu) or the most time (offcpu, wakeup). SELF counts\n"
               "what landed in the function itself, TOTAL what has it anywhere on the stack.\n"
               "\n"
               "%s"
               "\n"
               "Views:\n"
               "      --format FORMAT  table (default), folded, json, tree, svg or pprof\n"
               "      --folded         The same as --format folded: folded stacks for\n"
               "                       flamegraph.pl and speedscope; weights are samples (cpu)\n"
               "                       or microseconds (offcpu, wakeup)\n"
               "      --json           JSON of the view: alone the same as --format json (every\n"
               "                       stack), with --format table or tree that view as JSON\n"
               "      --output FILE    Write to FILE (replaced only when the answer is complete)\n"
               "                       instead of standard output\n"
               "      --lines          Name frames \"function (file:line)\" where debug info has them\n"
               "      --raw-names      Function names as in the symbol table, not demangled\n"
               "\n"
               "Table:\n"
               "      --by WHAT        Rows by function (default), line (file:line) or module\n"
               "      --children       Sort by TOTAL (time with the function on the stack) instead\n"
               "                       of SELF, like perf report --children\n"
               "      --limit N        Rows to show (default %d, 0 for all)\n"
               "\n"
               "Folded, tree, json, svg, pprof:\n"
               "      --root WHAT      process: a root frame \"comm-pid\" per process; unit: a root\n"
               "                       frame per systemd unit (\"-\" for processes in none);\n"
               "                       thread: a root frame per thread name, as\n"
               "                       stackcollapse-perf.pl writes by default\n"
               "                       host (with --clickhouse): a root frame per host\n"
               "\n"
               "Tree (caller/callee tree, like pprof -focus and perf report -G):\n"
               "      --focus REGEX    Only stacks with a function matching REGEX; its callers are\n"
               "                       shown above it, its callees below (without --focus: one\n"
               "                       tree from the outermost callers down)\n"
               "      --hide REGEX     Drop frames whose function matches REGEX\n"
               "      --max-depth N    Show at most N levels from the root (or from the focus)\n"
               "\n"
               "SVG (a flame graph rendered by profctl) and pprof (gzipped profile.proto for\n"
               "go tool pprof, needs --output or a pipe):\n"
               "      --icicle         SVG: root at the top, callees below\n"
               "      --title TEXT     SVG: the graph's title\n"
               "\n"
               "Quality (a summary line on stderr under every view; in --json, the pprof\n"
               "comments and the SVG subtitle):\n"
               "      --quality        Print only the quality report of the answer: the share\n"
               "                       with complete stacks, truncated and unresolved by reason,\n"
               "                       data lost in the window (with --json: as JSON)\n"
               "\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, QUERY_LIMIT_DEFAULT, duration_help);
}

/* Checks what single options can't: combinations. Returns 1 to go on,
 * -EINVAL on a usage error. */
static int query_check(const struct cli_target *t, struct query_args *a) {
        struct view_options *v = &a->view;
        bool format_set = view_options_given(v, VIEW_FORMAT);
        int r;

        r = filters_check(&a->filters);
        if (r < 0)
                return r;
        r = cli_check_fleet_options(t, &a->filters, v->root);
        if (r < 0)
                return r;

        /* the report alone, as text or (--json) as JSON: no view to pick */
        if (v->quality && (v->folded || format_set))
                return cli_usage_error("--quality prints only the quality report; drop --format/--folded "
                                       "(--json gives it as JSON)");
        /* --folded and --json: the old shorthands for --format */
        if (v->folded) {
                if (v->json)
                        return cli_usage_error("--folded and --json cannot be combined");
                if (format_set && v->format != FORMAT_FOLDED)
                        return cli_usage_error("--folded and --format %s cannot be combined",
                                               view_format_to_string(v->format));
                v->format = FORMAT_FOLDED;
        } else if (v->json && !format_set && !v->quality)
                v->format = FORMAT_JSON;
        if (v->json && !IN_SET_FORMAT(v->format, FORMAT_TABLE, FORMAT_TREE, FORMAT_JSON))
                return cli_usage_error("--json cannot be combined with --format %s (JSON is there for "
                                       "the table, the tree and the stacks: --format json)",
                                       view_format_to_string(v->format));

        r = view_options_check_applies(v);
        if (r < 0)
                return r;
        if (view_options_given(v, VIEW_BY) && v->by == TOP_BY_LINE && v->lines)
                return cli_usage_error("--by line already names rows by file:line; drop --lines");
        if (v->format == FORMAT_PPROF && !v->output && isatty(STDOUT_FILENO))
                return cli_usage_error("--format pprof writes gzipped binary data; give --output FILE "
                                       "or redirect standard output");
        if (!view_options_given(v, VIEW_LIMIT))
                v->limit = QUERY_LIMIT_DEFAULT;
        return 1;
}

static const struct command_options query_options = {
        .name = "query",
        .help = help_query,
        .filters = true,
        /* every view option is query's */
        .views = VIEW_OPTS_ALL,
        .formats = FORMATS_ALL,
};

static json_t *query_request(const struct cli_target *t, const struct query_args *a) {
        _cleanup_json_ json_t *req = request_new(PROTO_OP_QUERY, &a->filters, &a->view);

        if (!req)
                return NULL;
        /* a fleet sums the table itself (ClickHouse), when it is told
         * how: rows instead of stacks */
        if (t->clickhouse && a->view.format == FORMAT_TABLE && !a->view.quality) {
                json_t *tab = json_pack("{ss, sb, sb, sI}", "by", top_by_to_string(a->view.by),
                                        "children", a->view.children, "lines", a->view.lines,
                                        "limit", (json_int_t) a->view.limit);

                if (!tab || json_object_set_new(req, "table", tab) < 0)
                        return NULL;
        }
        /* folded output needs only names: profd sends each stack as one
         * folded string, a fraction of the bytes of its frames (most of
         * what reading a large answer cost profctl was parsing them); the
         * quality report alone needs no frames at all, so the same */
        if ((a->view.format == FORMAT_FOLDED || a->view.quality) &&
            (json_object_set_new(req, PROTO_KEY_FORMAT, json_string(PROTO_FORMAT_FOLDED)) < 0 ||
             (a->view.lines && json_object_set_new(req, PROTO_KEY_LINES, json_true()) < 0)))
                return NULL;
        return TAKE_PTR(req);
}

struct stream_ctx {
        const struct query_args *a;
        FILE *out;
        top_table *table;
        struct stack stack;
        uint64_t n;
};

/* A stack line of a "format":"folded" answer: profd wrote the frames (and
 * the group as root, with --root) as one folded string. */
static int stream_folded(struct stream_ctx *x, const json_t *line) {
        const char *folded;
        uint64_t value;
        int r;

        if ((r = response_get_string(line, PROTO_TYPE_STACK, PROTO_KEY_FOLDED, &folded)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_STACK, PROTO_KEY_VALUE, &value)) < 0)
                return r;
        /* one stack must stay one line, whatever profd sent */
        if (!*folded || strpbrk(folded, "\n\r"))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose \"folded\" is empty or "
                                 "spans lines");
        /* off-CPU weights are microseconds (rounded): flamegraph.pl wants
         * integers, and nanoseconds overflow its counts */
        if (fprintf(x->out, "%s %" PRIu64 "\n", folded,
                    filters_kind_is_time(&x->a->filters) ? (value + 500) / 1000 : value) < 0)
                return cli_error(-EIO, "cannot write the output");
        return 0;
}

/* A "row" line of a fleet's table: a function's sums, as top_table_add()
 * would have made them of the stacks. */
static int stream_table_row(struct stream_ctx *x, const json_t *line) {
        json_t *kernel = json_object_get(line, "kernel");
        struct func_key key = { .kernel = json_is_true(kernel) };
        uint64_t self, total;
        int r;

        if ((r = response_get_string(line, "row", "name", &key.name)) < 0 ||
            (r = response_get_string(line, "row", "module", &key.module)) < 0 ||
            (r = response_get_u64(line, "row", "self", &self)) < 0 ||
            (r = response_get_u64(line, "row", "total", &total)) < 0)
                return r;
        if (!json_is_boolean(kernel) || self > total)
                return cli_error(-EBADMSG, "the fleet sent a 'row' line whose \"kernel\" is not a boolean or "
                                 "whose \"self\" exceeds its \"total\"");
        r = top_table_add_row(x->table, &key, self, total);
        return r < 0 ? cli_error(r, "%m") : 0;
}

static int stream_on_stack(void *userdata, const json_t *line, const char *raw, size_t raw_len) {
        struct stream_ctx *x = userdata;
        int r;

        x->n++;
        switch (x->a->view.format) {
        case FORMAT_FOLDED:
                return stream_folded(x, line);
        case FORMAT_JSON:
                /* The array is written as the stacks arrive, each as profd
                 * sent it, one per line: the document can hold more stacks
                 * than would fit in memory at once. */
                fputs(x->n == 1 ? "{\"stacks\":[\n" : ",\n", x->out);
                fwrite(raw, 1, raw_len, x->out);
                return 0;
        case FORMAT_TABLE:
                if (streq(json_string_value(json_object_get(line, "type")) ?: "", "row"))
                        return stream_table_row(x, line);
                r = stack_parse(&x->stack, line, x->a->view.lines || x->a->view.by == TOP_BY_LINE);
                if (r < 0)
                        return r;
                r = top_table_add(x->table, &x->stack);
                return r < 0 ? cli_error(r, "%m") : 0;
        default:
                assert_not_reached();
        }
}

/* table, folded, json: written as the answer streams in. */
int query_stream(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                 struct answer_end *end) {
        struct stream_ctx x = { .a = a, .out = out };
        int r;

        if (a->view.format == FORMAT_TABLE) {
                x.table = top_table_new(a->view.by);
                if (!x.table)
                        return cli_error(-ENOMEM, "%m");
        }
        r = query_send_and_read(c, request, stream_on_stack, &x, end);
        if (r >= 0)
                switch (a->view.format) {
                case FORMAT_JSON: {
                        _cleanup_free_ char *quality = NULL, *by_host = NULL;

                        if (end->have_quality) {
                                json_t *o = quality_to_json(&end->quality);
                                quality = o ? json_dumps(o, JSON_COMPACT) : NULL;
                                json_decref(o);
                                if (!quality) {
                                        r = cli_error(-ENOMEM, "%m");
                                        break;
                                }
                        }
                        if (end->by_host && !(by_host = json_dumps(end->by_host, JSON_COMPACT))) {
                                r = cli_error(-ENOMEM, "%m");
                                break;
                        }
                        /* a cpu window: selected by the samples' own time
                         * (the timeline) or by drains */
                        const json_t *tl = end->line ? json_object_get(end->line, PROTO_KEY_TIMELINE) : NULL;

                        fprintf(out, "%s],\"kind\":\"%s\",\"unit\":\"%s\",\"total\":%" PRIu64
                                ",\"stacks_count\":%" PRIu64 ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
                                "%s%s%s%s%s}\n",
                                x.n == 0 ? "{\"stacks\":[" : "\n", filters_kind(&a->filters),
                                filters_kind_is_time(&a->filters) ? "ns" : "samples",
                                end->total, end->stacks, end->from_ns, end->to_ns,
                                !json_is_boolean(tl) ? "" : json_is_true(tl) ? ",\"timeline\":true" : ",\"timeline\":false",
                                quality ? ",\"quality\":" : "", quality ?: "",
                                by_host ? ",\"quality_by_host\":" : "", by_host ?: "");
                        break;
                }
                case FORMAT_TABLE: {
                        struct top_table_info info = {
                                .kind = filters_kind(&a->filters),
                                .total = end->total,
                                .from_ns = end->from_ns,
                                .to_ns = end->to_ns,
                                .limit = a->view.limit,
                                .children = a->view.children,
                                .quality = end->have_quality ? &end->quality : NULL,
                                .quality_by_host = end->by_host,
                        };

                        if (a->view.json)
                                r = top_table_write_json(x.table, out, &info);
                        /* an empty table would be a header alone */
                        else if (end->total > 0)
                                r = top_table_write(x.table, out, &info);
                        if (r < 0)
                                r = cli_error(r, "cannot write the table: %m");
                        break;
                }
                default:
                        break;
                }
        stack_done(&x.stack);
        top_table_free(x.table);
        return r;
}

/* tree, svg, pprof: need the whole answer. */
static int query_whole(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                       struct answer_end *end) {
        _cleanup_profile_ profile *p = NULL;
        int r;

        r = profile_fetch(c, request, &p);
        if (r < 0)
                return r;
        *end = (struct answer_end) { .stacks = p->n_stacks, .total = p->total, .from_ns = p->from_ns,
                                     .to_ns = p->to_ns, .quality = p->quality, .have_quality = p->have_quality,
                                     .by_host = json_incref(p->quality_by_host) };

        switch (a->view.format) {
        case FORMAT_TREE: {
                _cleanup_view_tree_ view_tree *t = NULL;
                struct tree_opts o = {
                        .focus = a->view.focus_text ? &a->view.focus : NULL,
                        .focus_text = a->view.focus_text,
                        .hide = a->view.hide_text ? &a->view.hide : NULL,
                        .max_depth = a->view.max_depth,
                        .lines = a->view.lines,
                        .root_group = a->view.root != NULL,
                };

                r = view_tree_build(p, &o, &t);
                if (r < 0)
                        return cli_error(r, "%m");
                if (a->view.json)
                        r = view_tree_write_json(t, out);
                else if (p->total > 0 && view_tree_matched(t) > 0)
                        r = view_tree_write(t, out);
                if (r < 0)
                        return cli_error(r, "cannot write the tree: %m");
                if (p->total > 0 && view_tree_matched(t) == 0) {
                        fflush(out);
                        fprintf(stderr, "no frame matches --focus '%s' in the %" PRIu64 " stacks of the window\n",
                                a->view.focus_text, (uint64_t) p->n_stacks);
                }
                return 0;
        }
        case FORMAT_PPROF:
                if (p->period_ns == 0 && streq(p->kind, "cpu")) {
                        r = profile_ask_frequency(c, p);
                        if (r < 0)
                                return r;
                }
                r = pprof_write(out, p);
                if (r == -EOVERFLOW)
                        return cli_error(r, "a value is too large for pprof's 64-bit signed integers");
                if (r < 0)
                        return cli_error(r, "cannot write the pprof profile: %m");
                return 0;
        case FORMAT_SVG: {
                struct flame_opts o = { .title = a->view.title, .icicle = a->view.icicle };

                r = flame_svg_write(out, p, &o);
                if (r < 0)
                        return cli_error(r, "cannot write the flame graph: %m");
                return 0;
        }
        default:
                assert_not_reached();
        }
}

static int ignore_stack(void *userdata _unused_, const json_t *line _unused_, const char *raw _unused_,
                        size_t raw_len _unused_) {
        return 0;
}

/* --quality: the report of the answer, without the answer. */
static int query_quality(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                         struct answer_end *end) {
        const char *unit = filters_kind_is_time(&a->filters) ? "ns" : "samples";
        int r;

        r = query_send_and_read(c, request, ignore_stack, NULL, end);
        if (r < 0)
                return r;
        if (!end->have_quality)
                return cli_error(-EPROTO, "this profd sends no quality report (it is older than profctl)");
        if (a->view.json) {
                _cleanup_json_ json_t *doc = json_pack("{ss, ss, ss, sI, sI, so*, sO*}", "view", "quality",
                                                       "kind", filters_kind(&a->filters), "unit", unit,
                                                       "from_ns", (json_int_t) end->from_ns,
                                                       "to_ns", (json_int_t) end->to_ns,
                                                       "quality", quality_to_json(&end->quality),
                                                       "quality_by_host", end->by_host);

                r = doc ? json_document_write(out, doc) : -ENOMEM;
        } else {
                /* a fleet's: each host's report, then the fleet's */
                const char *host;
                json_t *o;

                json_object_foreach((json_t *) end->by_host, host, o) {
                        struct quality q;

                        if (quality_from_json(o, &q) < 0)
                                return cli_error(-EBADMSG, "the fleet's report of host %s is malformed", host);
                        fprintf(out, "host %s: ", host);
                        r = quality_write_report(out, &q, filters_kind(&a->filters), unit, end->from_ns, end->to_ns);
                        if (r < 0)
                                break;
                        fputc('\n', out);
                }
                if (r >= 0 && end->by_host)
                        fprintf(out, "fleet, %zu hosts: ", json_object_size(end->by_host));
                if (r >= 0)
                        r = quality_write_report(out, &end->quality, filters_kind(&a->filters), unit, end->from_ns,
                                                 end->to_ns);
        }
        return r < 0 ? cli_error(r, "cannot write the quality report: %m") : 0;
}

/* The summary under a view, on stderr: how far to trust what was shown. */
static void quality_summary_write(const struct answer_end *end) {
        if (!end->have_quality)
                return;
        fflush(stdout);
        /* a fleet's: a line per host, "HOST: quality: ...", then the fleet's */
        if (end->by_host) {
                const char *host;
                json_t *o;

                json_object_foreach((json_t *) end->by_host, host, o) {
                        _cleanup_free_ char *hs = NULL;
                        struct quality q;

                        if (quality_from_json(o, &q) >= 0)
                                hs = quality_summary(&q);
                        fprintf(stderr, "%s: %s\n", host, hs ? hs : "quality: (out of memory)");
                }
        }
        quality_summary_print(&end->quality);
}

static int query_run(const struct cli_target *t, const struct query_args *a) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        struct answer_end end = {};
        struct output out;
        int r;

        request = query_request(t, a);
        if (!request)
                return cli_error(-ENOMEM, "%m");
        r = cli_connect(t, &c);
        if (r < 0)
                return r;
        r = output_open(&out, a->view.output);
        if (r < 0)
                return r;

        if (a->view.quality)
                r = query_quality(c, a, request, out.f, &end);
        else if (IN_SET_FORMAT(a->view.format, FORMAT_TABLE, FORMAT_FOLDED, FORMAT_JSON))
                r = query_stream(c, a, request, out.f, &end);
        else
                r = query_whole(c, a, request, out.f, &end);
        r = output_finish(&out, r);
        if (r >= 0 && end.total == 0 && !a->view.quality)
                no_samples_message(&a->filters, end.from_ns, end.to_ns, NULL);
        /* JSON carries the whole report; --quality is the report */
        else if (r >= 0 && !a->view.json && !a->view.quality && a->view.format != FORMAT_JSON)
                quality_summary_write(&end);
        if (r >= 0 && end.line)
                unconverted_note(end.line);
        answer_end_done(&end);
        return r;
}

int cmd_query(const struct cli_target *t, int argc, char *argv[]) {
        _cleanup_(query_args_done) struct query_args a = {};
        int r;

        r = command_parse_argv(&query_options, argc, argv, &a.filters, &a.view, NULL);
        if (r > 0)
                r = query_check(t, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return query_run(t, &a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
