/* profctl heatmap: a window's on-CPU samples (or, --kind offcpu, its off-CPU
 * blocks' blocked time) by their own time, one column
 * a second and rows of sub-second buckets (FlameScope's picture), from
 * profd's timeline ("timeline" request, docs/protocol.md). As text for a
 * terminal, an SVG, a self-contained HTML page where a dragged range shows
 * its flame graph (client/heatmap.c draws all three), or JSON. */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer.h"
#include "capture-event.h"
#include "cli.h"
#include "commands.h"
#include "hashmap.h"
#include "heatmap.h"
#include "heatmap-weight.h"
#include "helpers.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "protocol.h"
#include "quality.h"
#include "rate-weight.h"
#include "timed-samples.h"
#include "timed-spans.h"
#include "util.h"

static void help_heatmap(void) {
        printf("Usage: profctl heatmap [FILTERS] [--rows N] [--format FORMAT] [--output FILE]\n"
               "\n"
               "Show when the CPU samples the filters match were taken: one column per second\n"
               "(labelled with its UTC time), each split into N rows of equal parts of the\n"
               "second, a cell's shade its samples. A 300 ms stall is a hot run of cells in one\n"
               "column, where a 10 s drain averages it away. Samples are placed by their own\n"
               "time, from profd's timeline: a window must start after the oldest sample the\n"
               "timeline holds (profctl status, timeline). Without --since or --from the\n"
               "window is the last 10 minutes, or as much of them as the timeline holds.\n"
               "With --clickhouse URL (before the command), the fleet's: the samples every\n"
               "host's profd exported with their times (--host selects hosts).\n"
               "\n"
               "The HTML page needs no network: drag over the cells to select a range, and its\n"
               "flame graph and folded stacks appear below (the same stacks as profctl query\n"
               "--from --to --format folded over that range). A page's address can select one\n"
               "too: page.html#range=FROM-TO, in ms after the first column's second.\n"
               "\n"
               "Samples a capture took at a raised rate (capture_frequency) count at the base\n"
               "rate, rounded as query rounds them: a raise's cells are no hotter for the same\n"
               "CPU time, and a range gives query --from --to's stacks exactly.\n"
               "\n"
               "A capture (profctl capture) whose trigger is in the window is marked: in text\n"
               "'<- capture ID (CAUSE) at TIME' on its second's line, in the SVG and the page\n"
               "a line down its column with the cause as tooltip, in JSON under \"events\";\n"
               "with --clickhouse, the captures the hosts exported, of every user.\n"
               "\n"
               "%s"
               "\n"
               "--kind offcpu draws blocked time instead: each off-CPU block the off-CPU\n"
               "timeline holds (blocks of timeline_offcpu_min or longer) is spread over the\n"
               "cells it spans, a cell's shade the nanoseconds blocked in it, and a range of\n"
               "the page counts the part of each block inside it. --state filters blocks by\n"
               "their task state. Not with --clickhouse: the fleet has no off-CPU timeline.\n"
               "--kind wakeup is refused: wakeups do not keep their times.\n"
               "\n"
               "Options:\n"
               "      --rows N         Rows per second (default %u; 1 to %u, dividing a second\n"
               "                       into whole microseconds: 10, 20, 50, 100, 1000...)\n"
               "      --format FORMAT  text (default), html, svg or json (cells per second and\n"
               "                       row, start, rows and totals, for scripts); without it,\n"
               "                       an --output FILE ending in .html, .svg or .json says\n"
               "      --json           The same as --format json\n"
               "      --output FILE    Write to FILE instead of standard output\n"
               "      --raw-names      Function names as in the symbol table (not demangled)\n"
               "      --lines          Frames as 'name (file:line)' where debug info says\n"
               "      --max-samples N  Ask profd for at most N samples, or off-CPU blocks\n"
               "                       (default and most: %llu); the rest are counted and\n"
               "                       said, not drawn\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, HEATMAP_ROWS_DEFAULT, HEATMAP_ROWS_MAX, (unsigned long long) TIMED_MAX_SAMPLES,
               duration_help);
}

enum {
        ARG_ROWS = VIEW_OPTION_END,
        ARG_FORMAT,
        ARG_MAX_SAMPLES,
};

typedef enum HeatmapFormat {
        HEATMAP_TEXT,
        HEATMAP_HTML,
        HEATMAP_SVG,
        HEATMAP_JSON,
        _HEATMAP_FORMAT_MAX,
        _HEATMAP_FORMAT_NONE = -1, /* not given */
} HeatmapFormat;

static const char *const heatmap_format_names[_HEATMAP_FORMAT_MAX] = {
        [HEATMAP_TEXT] = "text",
        [HEATMAP_HTML] = "html",
        [HEATMAP_SVG] = "svg",
        [HEATMAP_JSON] = "json",
};

struct heatmap_args {
        struct filters filters;
        struct view_options view;
        unsigned rows;
        HeatmapFormat format;
        uint64_t max_samples; /* 0: profd's */
};

static int heatmap_parse_option(void *userdata, int opt, const char *arg) {
        struct heatmap_args *a = userdata;
        uint64_t u;

        switch (opt) {
        case ARG_ROWS:
                /* heatmap_init's rule: whole microseconds a row, at most 1 ms */
                if (parse_uint_strict(arg, HEATMAP_ROWS_MAX, &u) < 0 || u == 0 || 1000000 % u != 0)
                        return cli_usage_error("--rows '%s' is not a number of rows per second (1 to %u, "
                                               "dividing a second into whole microseconds: 10, 20, 50, "
                                               "100, 1000...)", arg, HEATMAP_ROWS_MAX);
                a->rows = (unsigned) u;
                return 0;
        case ARG_FORMAT:
                for (int f = 0; f < _HEATMAP_FORMAT_MAX; f++)
                        if (streq(arg, heatmap_format_names[f])) {
                                if (a->format != _HEATMAP_FORMAT_NONE && a->format != (HeatmapFormat) f)
                                        return cli_usage_error("--format given twice ('%s' and '%s'); give one",
                                                               heatmap_format_names[a->format], arg);
                                a->format = f;
                                return 0;
                        }
                return cli_usage_error("--format '%s' is not known (expected text, html, svg or json)", arg);
        case ARG_MAX_SAMPLES:
                if (parse_uint_strict(arg, TIMED_MAX_SAMPLES, &u) < 0 || u == 0)
                        return cli_usage_error("--max-samples '%s' is not a sample count from 1 to %llu", arg,
                                               (unsigned long long) TIMED_MAX_SAMPLES);
                a->max_samples = u;
                return 0;
        }
        assert_not_reached();
}

static const struct command_options heatmap_options = {
        .name = "heatmap",
        .help = help_heatmap,
        .filters = true,
        .views = VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT) | VIEW_OPT(VIEW_RAW_NAMES) | VIEW_OPT(VIEW_LINES),
        .options = (const struct option[]) {
                { "rows",        required_argument, NULL, ARG_ROWS        },
                { "format",      required_argument, NULL, ARG_FORMAT      },
                { "max-samples", required_argument, NULL, ARG_MAX_SAMPLES },
                {}
        },
        .parse_option = heatmap_parse_option,
};

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), l = strlen(suffix);

        return n > l && strcasecmp(s + n - l, suffix) == 0;
}

/* What the filters and options cannot be together. Sets the format when
 * not given. Returns 0 or -EINVAL after a usage error. */
static int heatmap_check(const struct cli_target *t, struct heatmap_args *a) {
        const struct filters *f = &a->filters;

        if (filters_check(f) < 0 || cli_check_fleet_options(t, f, NULL) < 0)
                return -EINVAL;
        if (f->kind && !streq(f->kind, "cpu") && !streq(f->kind, "offcpu"))
                return cli_usage_error("--kind %s: a heatmap draws on-CPU samples (cpu) or blocked time "
                                       "(offcpu), which keep their times; wakeups do not keep their times: "
                                       "profctl series --kind %s --step 1s shows them per second", f->kind,
                                       f->kind);
        if (f->kind && streq(f->kind, "offcpu") && t->clickhouse)
                return cli_usage_error("--kind offcpu with --clickhouse: the fleet's timeline has on-CPU samples "
                                       "only (ClickHouse holds no off-CPU blocks with their times); draw one "
                                       "host's blocked time from its profd, without --clickhouse");
        if (f->last)
                return cli_usage_error("--last is one drain, not a window of time; use --since or --from/--to");
        if (f->by_drains)
                return cli_usage_error("--by-drains applies to query; a heatmap places each sample by its own time");
        if (a->view.json) {
                if (a->format != _HEATMAP_FORMAT_NONE && a->format != HEATMAP_JSON)
                        return cli_usage_error("--json and --format %s both say what to write; give one",
                                               heatmap_format_names[a->format]);
                a->format = HEATMAP_JSON;
        }
        if (a->format == _HEATMAP_FORMAT_NONE) {
                const char *o = a->view.output;

                a->format = !o ? HEATMAP_TEXT :
                            ends_with(o, ".html") || ends_with(o, ".htm") ? HEATMAP_HTML :
                            ends_with(o, ".svg") ? HEATMAP_SVG :
                            ends_with(o, ".json") ? HEATMAP_JSON : HEATMAP_TEXT;
        }
        /* a page's or a picture's markup is no use on a terminal */
        if ((a->format == HEATMAP_HTML || a->format == HEATMAP_SVG) && !a->view.output && isatty(STDOUT_FILENO))
                return cli_usage_error("--format %s writes a file: give --output FILE (or redirect standard "
                                       "output)", heatmap_format_names[a->format]);
        return 0;
}

/* The answer as it is read: the stacks (the same folded text once), the
 * samples, the end's figures. */
struct heatmap_answer {
        char **stacks;            /* unique folded texts */
        size_t n_stacks;
        hashmap *by_text;         /* text -> index + 1 */
        uint32_t *stack_map;      /* a stack line's index -> its text's */
        size_t n_lines, lines_cap;
        uint64_t stack_sum;       /* the stack lines' values */
        struct heatmap_sample *samples;
        size_t n_samples, samples_cap;
        uint64_t sample_sum;      /* the "samples" lines' counts */
        uint64_t total, stacks_end, from_ns, to_ns, omitted, omitted_from_ns, oldest_ns;
        /* samples a capture's raised rate took ("rated_samples" lines,
         * issue 44), and the base rate the answer counts them in */
        uint64_t raised;
        uint64_t base_hz;
        bool offcpu;            /* "spans" lines: blocked ns, not samples */
        uint64_t omitted_ns;    /* offcpu: the ns of the omitted blocks */
        struct quality quality; /* of the samples sent */
        bool have_quality;
        json_t *events;           /* the captures' "event" lines (issue 44) */
        uint64_t events_seen;
};

static void heatmap_answer_done(struct heatmap_answer *h) {
        for (size_t i = 0; i < h->n_stacks; i++)
                free(h->stacks[i]);
        free(h->stacks);
        hashmap_free(h->by_text);
        free(h->stack_map);
        free(h->samples);
        json_decref(h->events);
}

/* A "stack" line: its folded text, kept once however many stack lines
 * carry it (an unprivileged caller's kernel frames are one "[kernel]", so
 * two stacks may read the same). */
static int answer_add_stack(struct heatmap_answer *h, const json_t *line) {
        const json_t *folded = json_object_get(line, PROTO_KEY_FOLDED);
        uint64_t value;
        uint32_t index;
        void *v;
        int r;

        r = response_get_u64(line, PROTO_TYPE_STACK, PROTO_KEY_VALUE, &value);
        if (r < 0)
                return r;
        if (!json_is_string(folded))
                return cli_error(-EBADMSG, "profd's timeline answer has a stack without \"folded\" text");
        if (__builtin_add_overflow(h->stack_sum, value, &h->stack_sum))
                return cli_error(-EBADMSG, "profd sent stack values that add up to more than 2^64");
        if (hashmap_get(h->by_text, json_string_value(folded), &v) >= 0)
                index = (uint32_t) ((uintptr_t) v - 1);
        else {
                char *text = strdup(json_string_value(folded)), **ns;

                ns = text ? realloc(h->stacks, (h->n_stacks + 1) * sizeof(*ns)) : NULL;
                if (!ns) {
                        free(text);
                        return cli_error(-ENOMEM, "%m");
                }
                h->stacks = ns;
                h->stacks[h->n_stacks] = text;
                r = hashmap_put(h->by_text, text, (void *) (uintptr_t) (h->n_stacks + 1));
                if (r < 0) {
                        free(text);
                        return cli_error(r, "%m");
                }
                index = (uint32_t) h->n_stacks++;
        }
        if (h->n_lines == h->lines_cap) {
                size_t cap = MAX(h->lines_cap * 2, (size_t) 256);
                uint32_t *m = realloc(h->stack_map, cap * sizeof(*m));

                if (!m)
                        return cli_error(-ENOMEM, "%m");
                h->stack_map = m;
                h->lines_cap = cap;
        }
        h->stack_map[h->n_lines++] = index;
        return 0;
}

static int answer_grow(struct heatmap_answer *h) {
        if (h->n_samples == h->samples_cap) {
                size_t cap = MAX(h->samples_cap * 2, (size_t) 4096);
                struct heatmap_sample *s = realloc(h->samples, cap * sizeof(*s));

                if (!s)
                        return cli_error(-ENOMEM, "%m");
                h->samples = s;
                h->samples_cap = cap;
        }
        return 0;
}

/* An off-CPU block: a span of its ns, which the page counts in a range by
 * the part the range holds. */
static int answer_add_span(const struct timed_span *e, void *userdata) {
        struct heatmap_answer *h = userdata;
        int r;

        r = answer_grow(h);
        if (r < 0)
                return r;
        h->samples[h->n_samples++] = (struct heatmap_sample) {
                .t_ns = e->start_us * NSEC_PER_USEC,
                .span_ns = e->ns,
                .weight = e->ns,
                .stack = h->stack_map[e->stack],
                .row = e->stack,
        };
        if (__builtin_add_overflow(h->sample_sum, e->ns, &h->sample_sum))
                return cli_error(-EBADMSG, "profd sent blocks that add up to more than 2^64 ns");
        return 0;
}

static int answer_add_entry(const struct timed_entry *e, void *userdata) {
        struct heatmap_answer *h = userdata;
        int r;

        r = answer_grow(h);
        if (r < 0)
                return r;
        h->samples[h->n_samples++] = (struct heatmap_sample) {
                .t_ns = e->t_ms * NSEC_PER_MSEC,
                .weight = e->n,
                .stack = h->stack_map[e->stack],
                .row = e->stack,
                .hz = e->hz,
        };
        h->sample_sum += e->n;
        if (e->hz != 0)
                h->raised += e->n;
        return 0;
}

/* The "end" line, checked against what came before it: a mismatch means
 * lines were lost and the picture would be wrong. */
static int answer_set_end(struct heatmap_answer *h, const json_t *line) {
        int r;

        if ((r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_STACKS, &h->stacks_end)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_TOTAL, &h->total)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_FROM_NS, &h->from_ns)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_TO_NS, &h->to_ns)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_OMITTED, &h->omitted)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_OLDEST_NS, &h->oldest_ns)) < 0)
                return r;
        if (h->omitted > 0 &&
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_OMITTED_FROM_NS, &h->omitted_from_ns)) < 0)
                return r;
        if (h->offcpu && h->omitted > 0 &&
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_OMITTED_NS, &h->omitted_ns)) < 0)
                return r;
        /* an older profd sends no rate: it took every sample at its one */
        if (json_object_get(line, PROTO_KEY_BASE_HZ) &&
            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_BASE_HZ, &h->base_hz)) < 0)
                return r;
        if (h->raised > 0 && (h->base_hz == 0 || h->base_hz > UINT32_MAX))
                return cli_error(-EBADMSG, "profd's timeline answer has samples of a raised rate but no base rate "
                                 "(\"" PROTO_KEY_BASE_HZ "\") to count them in");
        if (json_object_get(line, PROTO_KEY_QUALITY)) {
                if (quality_from_json(json_object_get(line, PROTO_KEY_QUALITY), &h->quality) < 0)
                        return cli_error(-EBADMSG, "profd's timeline answer ends with a \"quality\" that is not "
                                         "a report of unsigned integers");
                h->have_quality = true;
        }
        if (h->stacks_end != h->n_lines)
                return cli_error(-EBADMSG, "profd's timeline answer ends with \"stacks\":%" PRIu64 " but it sent %zu "
                                 "stack lines", h->stacks_end, h->n_lines);
        if (h->total != h->sample_sum || h->total != h->stack_sum)
                return cli_error(-EBADMSG, "profd's timeline answer ends with \"total\":%" PRIu64 " but its samples "
                                 "add up to %" PRIu64 " and its stacks to %" PRIu64, h->total, h->sample_sum,
                                 h->stack_sum);
        return 0;
}

/* Runs request on c and keeps the whole answer in h. */
static int heatmap_fetch(conn *c, const json_t *request, struct heatmap_answer *h) {
        int r;

        h->by_text = hashmap_new_string();
        h->events = json_array();
        if (!h->by_text || !h->events)
                return cli_error(-ENOMEM, "%m");
        r = conn_send(c, request);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw, *error;
                size_t raw_len;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return r;
                if (streq(type, PROTO_TYPE_END)) {
                        r = events_check_end(line, "timeline", h->events_seen);
                        return r < 0 ? r : answer_set_end(h, line);
                }
                if (streq(type, PROTO_TYPE_STACK))
                        r = answer_add_stack(h, line);
                else if (streq(type, PROTO_TYPE_SAMPLES) || streq(type, PROTO_TYPE_RATED_SAMPLES)) {
                        r = timed_line_parse(line, h->n_lines, answer_add_entry, h, &error);
                        if (r == -EBADMSG)
                                return cli_error(r, "profd's timeline answer has a malformed \"samples\" line: %s",
                                                 error);
                } else if (h->offcpu && streq(type, PROTO_TYPE_SPANS)) {
                        r = timed_spans_line_parse(line, h->n_lines, answer_add_span, h, &error);
                        if (r == -EBADMSG)
                                return cli_error(r, "profd's timeline answer has a malformed \"spans\" line: %s",
                                                 error);
                } else if (streq(type, PROTO_TYPE_EVENT))
                        r = event_line_keep(h->events, line, "timeline", &h->events_seen);
                else
                        return cli_error(-EBADMSG, "profd answered 'timeline' with an unexpected '%s' line", type);
                if (r < 0)
                        return r;
        }
}

/* The grid of the answer's window. Samples are sent by the millisecond: one
 * in the window's first (or last) partial millisecond is placed at its
 * edge, which it is within. */
static int heatmap_build(const struct heatmap_args *a, struct heatmap_answer *ans, struct heatmap *h) {
        /* the window is inclusive of to_ns, the grid's end is not */
        uint64_t end = ans->to_ns + 1;
        int r;

        r = heatmap_init(h, ans->from_ns, end, a->rows, ans->offcpu);
        if (r == -EINVAL)
                return cli_error(r, "the window (%" PRIu64 " s) is longer than a heatmap draws (%u s, a day); "
                                 "narrow it with --since or --from/--to",
                                 (uint64_t) ((end - ans->from_ns) / NSEC_PER_SEC), HEATMAP_COLUMNS_MAX);
        if (r < 0)
                return cli_error(r, "%m");
        for (size_t i = 0; i < ans->n_samples; i++) {
                struct heatmap_sample *s = &ans->samples[i];

                if (ans->offcpu) {
                        /* a block's start is sent to the µs below it, and
                         * its part in the window whole: moved to the
                         * window's start, it ends no later than it did */
                        s->t_ns = MAX(s->t_ns, ans->from_ns);
                        heatmap_add_span(h, s->t_ns, s->t_ns + s->span_ns);
                        continue;
                }
                s->t_ns = MIN(MAX(s->t_ns, ans->from_ns), end - 1);
                /* a raise's samples in fixed point, rounded below as the
                 * daemon's query rounds (heatmap-weight.h) */
                if (ans->raised > 0)
                        s->weight = heatmap_weight_fixed(s->weight, s->hz, (unsigned) ans->base_hz);
                heatmap_add(h, s->t_ns, s->weight);
        }
        if (ans->raised > 0) {
                r = heatmap_weigh_cells(h);
                if (r < 0)
                        return cli_error(r, "%m");
        }
        return 0;
}

static int heatmap_write_json(FILE *f, const struct heatmap *h, const struct heatmap_answer *ans) {
        _cleanup_json_ json_t *o = NULL, *cells = json_array();
        int r;

        if (!cells)
                return -ENOMEM;
        for (unsigned c = 0; c < h->columns; c++) {
                json_t *column = json_array();

                if (!column || json_array_append_new(cells, column) < 0)
                        return -ENOMEM;
                for (unsigned row = 0; row < h->rows; row++)
                        if (json_array_append_new(column, json_integer((json_int_t) heatmap_cell(h, c, row))) < 0)
                                return -ENOMEM;
        }
        o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O}",
                      "kind", ans->offcpu ? "offcpu" : "cpu", "unit", ans->offcpu ? "ns" : "samples",
                      "from_ns", (json_int_t) h->from_ns, "to_ns", (json_int_t) ans->to_ns,
                      "start_ns", (json_int_t) h->start_ns, "columns", (json_int_t) h->columns,
                      "rows", (json_int_t) h->rows, "bucket_ms", (json_int_t) (1000 / h->rows),
                      "total", (json_int_t) h->total, "max", (json_int_t) h->max,
                      "omitted", (json_int_t) ans->omitted, "oldest_ns", (json_int_t) ans->oldest_ns,
                      "cells", cells);
        if (!o)
                return -ENOMEM;
        /* bucket_ms is whole for the usual rows; bucket_us always is */
        if (json_object_set_new(o, "bucket_us", json_integer((json_int_t) (1000000 / h->rows))) < 0 ||
            (ans->omitted > 0 &&
             json_object_set_new(o, "omitted_from_ns", json_integer((json_int_t) ans->omitted_from_ns)) < 0) ||
            (ans->offcpu && ans->omitted > 0 &&
             json_object_set_new(o, "omitted_ns", json_integer((json_int_t) ans->omitted_ns)) < 0) ||
            json_object_set_new(o, "events", capture_events_view_json(ans->events)) < 0)
                return -ENOMEM;
        /* total and cells count at the base rate; what was taken, apart */
        if (!ans->offcpu &&
            (json_object_set_new(o, "samples_taken", json_integer((json_int_t) ans->total)) < 0 ||
             json_object_set_new(o, "raised_samples", json_integer((json_int_t) ans->raised)) < 0 ||
             (ans->base_hz > 0 && json_object_set_new(o, "base_hz", json_integer((json_int_t) ans->base_hz)) < 0)))
                return -ENOMEM;
        r = json_dumpf(o, f, JSON_COMPACT);
        if (r < 0)
                return -EIO;
        fputc('\n', f);
        return ferror(f) ? -EIO : 0;
}

static void labels_freep(char ***p) {
        if (!*p)
                return;
        for (char **l = *p; *l; l++)
                free(*l);
        free(*p);
}

/* The captures' triggers as the picture's marks ("capture 3 (oom)"),
 * labels[] holding their text. Returns 0 or -ENOMEM, said. */
static int heatmap_marks_build(const json_t *events, struct heatmap *h, struct heatmap_mark **ret_marks,
                               char ***ret_labels) {
        size_t n = json_array_size(events);
        _cleanup_free_ struct heatmap_mark *marks = calloc(MAX(n, (size_t) 1), sizeof(*marks));
        _cleanup_(labels_freep) char **labels = calloc(n + 1, sizeof(char *));

        if (!marks || !labels)
                return cli_error(-ENOMEM, "%m");
        for (size_t i = 0; i < n; i++) {
                struct capture_event e;
                const char *error;

                /* the lines were checked as they were read */
                if (capture_event_from_json(json_array_get(events, i), &e, &error) <= 0)
                        continue;
                if (asprintf(&labels[h->n_marks], "capture %" PRId64 " (%s)", e.id, e.cause) < 0) {
                        labels[h->n_marks] = NULL;
                        return cli_error(-ENOMEM, "%m");
                }
                marks[h->n_marks] = (struct heatmap_mark) { .t_ns = e.trigger_ns, .label = labels[h->n_marks] };
                h->n_marks++;
        }
        h->marks = marks;
        *ret_marks = TAKE_PTR(marks);
        *ret_labels = TAKE_PTR(labels);
        return 0;
}

static int heatmap_show(const struct heatmap_args *a, struct heatmap_answer *ans) {
        _cleanup_(heatmap_done) struct heatmap h = {};
        _cleanup_free_ struct heatmap_mark *marks = NULL;
        _cleanup_(labels_freep) char **labels = NULL;
        struct heatmap_svg_opts opts = {};
        _cleanup_free_ char *described = NULL, *title = NULL;
        struct output out;
        int r;

        r = heatmap_build(a, ans, &h);
        if (r >= 0)
                r = heatmap_marks_build(ans->events, &h, &marks, &labels);
        if (r < 0)
                return r;
        /* the title names what the filters chose */
        described = filters_describe(&a->filters);
        if (described && *described &&
            asprintf(&title, "%s by time: %s", ans->offcpu ? "Blocked time" : "CPU samples", described) >= 0)
                opts.title = title;
        r = output_open(&out, a->view.output);
        if (r < 0)
                return r;
        switch (a->format) {
        case HEATMAP_TEXT:
                r = heatmap_write_text(out.f, &h, 0);
                break;
        case HEATMAP_SVG:
                r = heatmap_write_svg(out.f, &h, &opts);
                break;
        case HEATMAP_HTML:
                r = heatmap_write_html(out.f, &h,
                                       &(struct heatmap_page) {
                                               .samples = ans->samples,
                                               .n_samples = ans->n_samples,
                                               .stacks = (const char *const *) ans->stacks,
                                               .n_stacks = ans->n_stacks,
                                               .row_stack = ans->stack_map,
                                               .n_rows = ans->n_lines,
                                               .one = ans->raised > 0 ? RATE_WEIGHT_ONE : 1,
                                       },
                                       &opts);
                break;
        case HEATMAP_JSON:
                r = heatmap_write_json(out.f, &h, ans);
                break;
        default:
                assert_not_reached();
        }
        if (r < 0)
                cli_error(r, "cannot write the heatmap: %m");
        r = output_finish(&out, r);
        if (r < 0)
                return r;
        if (ans->total == 0)
                no_samples_message(&a->filters, ans->from_ns, ans->to_ns, " in the timeline");
        else if (a->format == HEATMAP_TEXT && ans->have_quality)
                /* as under a query's table: how far to trust the stacks */
                quality_summary_print(&ans->quality);
        if (ans->raised > 0 && a->format == HEATMAP_TEXT) {
                fflush(stdout);
                fprintf(stderr, "note: %" PRIu64 " samples a capture took at a raised rate are counted at the base "
                        "rate, %" PRIu64 " Hz, as profctl query counts them\n", ans->raised, ans->base_hz);
        }
        if (ans->omitted > 0) {
                char t[64];

                fflush(stdout);
                if (ans->offcpu)
                        fprintf(stderr, "note: %" PRIu64 " off-CPU blocks (%" PRIu64 " ns blocked) from %s on are "
                                "not drawn: an answer carries at most %zu blocks (--max-samples); narrow the "
                                "window or the filters\n", ans->omitted, ans->omitted_ns,
                                format_local_time(t, sizeof(t), ans->omitted_from_ns), ans->n_samples);
                else
                        fprintf(stderr, "note: %" PRIu64 " samples from %s on are not drawn: an answer carries at "
                                "most %" PRIu64 " (--max-samples); narrow the window or the filters\n", ans->omitted,
                                format_local_time(t, sizeof(t), ans->omitted_from_ns), ans->total);
        }
        return 0;
}

int cmd_heatmap(const struct cli_target *t, int argc, char *argv[]) {
        struct heatmap_args a = { .rows = HEATMAP_ROWS_DEFAULT, .format = _HEATMAP_FORMAT_NONE };
        _cleanup_(heatmap_answer_done) struct heatmap_answer ans = {};
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        int r;

        r = command_parse_argv(&heatmap_options, argc, argv, &a.filters, &a.view, &a);
        if (r > 0 && heatmap_check(t, &a) < 0)
                r = -EINVAL;
        if (r <= 0) {
                view_options_done(&a.view);
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        }
        /* folded text is all a heatmap page needs of a stack */
        request = request_new(PROTO_OP_TIMELINE, &a.filters, &a.view);
        if (!request || json_object_set_new(request, PROTO_KEY_FORMAT, json_string(PROTO_FORMAT_FOLDED)) < 0 ||
            json_object_set_new(request, PROTO_KEY_EVENTS, json_true()) < 0 || /* captures, marked */
            (a.view.lines && json_object_set_new(request, PROTO_KEY_LINES, json_true()) < 0) ||
            (a.max_samples &&
             json_object_set_new(request, PROTO_KEY_MAX_SAMPLES, json_integer((json_int_t) a.max_samples)) < 0)) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        ans.offcpu = streq(filters_kind(&a.filters), "offcpu");
        r = cli_connect(t, &c);
        if (r >= 0)
                r = heatmap_fetch(c, request, &ans);
        if (r >= 0)
                r = heatmap_show(&a, &ans);
        view_options_done(&a.view);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
