/* Reading profd's answers to profctl's requests (answer.h). */
#include "answer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture-event.h"
#include "macro.h"
#include "protocol.h"
#include "util.h"

json_t *request_new(const char *op, const struct filters *f, const struct view_options *v) {
        _cleanup_json_ json_t *req = json_pack("{ss}", PROTO_KEY_OP, op);

        if (!req || (f && filters_to_request(f, req) < 0) ||
            (v && v->raw_names && json_object_set_new(req, PROTO_KEY_RAW_NAMES, json_true()) < 0) ||
            (v && v->root && json_object_set_new(req, PROTO_KEY_GROUP, json_string(v->root)) < 0))
                return NULL;
        return TAKE_PTR(req);
}

/* Reads the next response line and checks it is of type expected. */
int read_expected(conn *c, const char *op, const char *expected, json_t **ret_line,
                  const char **ret_raw, size_t *ret_raw_len) {
        _cleanup_json_ json_t *line = NULL;
        const char *type;
        int r;

        r = conn_read_response(c, &line, &type, ret_raw, ret_raw_len);
        if (r < 0)
                return r;
        if (!streq(type, expected))
                return cli_error(-EBADMSG, "profd answered '%s' with an unexpected '%s' line",
                                 op, type);
        *ret_line = TAKE_PTR(line);
        return 0;
}

int ask_and_print(const char *socket, const json_t *request, const char *op, const char *expected, bool json,
                  int (*write_human)(FILE *f, const json_t *line)) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *line = NULL;
        const char *raw;
        size_t raw_len;

        if (conn_open(socket, &c) < 0 || conn_send(c, request) < 0 ||
            read_expected(c, op, expected, &line, &raw, &raw_len) < 0)
                return EXIT_FAILURE;
        if (json) {
                fwrite(raw, 1, raw_len, stdout);
                fputc('\n', stdout);
        } else if (write_human(stdout, line) < 0)
                return EXIT_FAILURE;
        return EXIT_SUCCESS;
}

void answer_end_done(struct answer_end *e) {
        json_decref(e->line);
        json_decref(e->by_host);
}

/* Sends request on c and hands every "stack" line to on_stack, then checks
 * the "end" line against what came before it: a mismatch means stacks were
 * lost on the way and the numbers would be wrong, so it is an error. */
int query_send_and_read(conn *c, const json_t *request, stack_handler on_stack, void *userdata,
                        struct answer_end *ret_end) {
        uint64_t n_stacks = 0, n_rows = 0, sum = 0;
        int r;

        r = conn_send(c, request);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw;
                size_t raw_len;
                uint64_t value;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return r;
                if (streq(type, PROTO_TYPE_END)) {
                        if ((r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_STACKS, &ret_end->stacks)) < 0 ||
                            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_TOTAL, &ret_end->total)) < 0 ||
                            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_FROM_NS, &ret_end->from_ns)) < 0 ||
                            (r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_TO_NS, &ret_end->to_ns)) < 0)
                                return r;
                        if (json_object_get(line, PROTO_KEY_ROWS) || n_rows > 0) {
                                uint64_t rows;

                                /* a table's rows: the stacks stayed in ClickHouse */
                                if ((r = response_get_u64(line, PROTO_TYPE_END, PROTO_KEY_ROWS, &rows)) < 0)
                                        return r;
                                if (rows != n_rows || n_stacks > 0)
                                        return cli_error(-EBADMSG, "the fleet's answer ends with \"rows\":%" PRIu64
                                                         " but it sent %" PRIu64 " row and %" PRIu64 " stack lines",
                                                         rows, n_rows, n_stacks);
                        } else if (ret_end->stacks != n_stacks)
                                return cli_error(-EBADMSG, "profd's answer ends with \"stacks\":%" PRIu64
                                                 " but it sent %" PRIu64 " stack lines", ret_end->stacks, n_stacks);
                        if (n_rows == 0 && !json_object_get(line, PROTO_KEY_ROWS) && ret_end->total != sum)
                                return cli_error(-EBADMSG, "profd's answer ends with \"total\":%" PRIu64
                                                 " but its stacks add up to %" PRIu64, ret_end->total, sum);
                        if (json_object_get(line, PROTO_KEY_QUALITY)) {
                                if (quality_from_json(json_object_get(line, PROTO_KEY_QUALITY), &ret_end->quality) < 0)
                                        return cli_error(-EBADMSG, "profd's answer ends with a \"quality\" that "
                                                         "is not a report of unsigned integers");
                                ret_end->have_quality = true;
                        }
                        if (json_object_get(line, PROTO_KEY_QUALITY_BY_HOST)) {
                                if (quality_by_host_check(json_object_get(line, PROTO_KEY_QUALITY_BY_HOST)) < 0)
                                        return cli_error(-EBADMSG, "the fleet's answer ends with a "
                                                         "\"quality_by_host\" that is not an object of reports");
                                ret_end->by_host = json_incref(json_object_get(line, PROTO_KEY_QUALITY_BY_HOST));
                        }
                        ret_end->line = TAKE_PTR(line);
                        return 0;
                }
                /* a fleet's table (a request with "table"): its rows, summed
                 * by ClickHouse, instead of the stacks */
                if (streq(type, "row") && json_object_get(request, "table")) {
                        n_rows++;
                        r = on_stack(userdata, line, raw, raw_len);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!streq(type, "stack"))
                        return cli_error(-EBADMSG, "profd answered 'query' with an unexpected '%s' line", type);
                r = response_get_u64(line, "stack", "value", &value);
                if (r < 0)
                        return r;
                if (__builtin_add_overflow(sum, value, &sum))
                        return cli_error(-EBADMSG, "profd sent stack values that add up to more than 2^64");
                n_stacks++;
                r = on_stack(userdata, line, raw, raw_len);
                if (r < 0)
                        return r;
        }
}

static int profile_on_stack(void *userdata, const json_t *line, const char *raw _unused_, size_t raw_len _unused_) {
        return profile_add_stack_line(userdata, line);
}

/* The sampling period of profd, for pprof's cpu/nanoseconds, when the
 * answer did not carry it. */
int profile_ask_frequency(conn *c, profile *p) {
        _cleanup_json_ json_t *request = request_new(PROTO_OP_STATUS, NULL, NULL), *line = NULL;
        const char *type, *raw;
        size_t raw_len;
        uint64_t hz;
        int r;

        if (!request)
                return cli_error(-ENOMEM, "%m");
        r = conn_send(c, request);
        if (r < 0)
                return r;
        r = conn_read_response(c, &line, &type, &raw, &raw_len);
        if (r < 0)
                return r;
        if (!streq(type, "status"))
                return cli_error(-EBADMSG, "profd answered 'status' with an unexpected '%s' line", type);
        r = response_get_u64(line, "status", "frequency_hz", &hz);
        if (r < 0)
                return r;
        profile_set_frequency(p, hz);
        return 0;
}

/* Runs request on c and keeps the whole answer. */
int profile_fetch(conn *c, const json_t *request, profile **ret) {
        _cleanup_profile_ profile *p = profile_new();
        _cleanup_(answer_end_done) struct answer_end end = {};
        int r;

        if (!p)
                return cli_error(-ENOMEM, "%m");
        r = query_send_and_read(c, request, profile_on_stack, p, &end);
        if (r < 0)
                return r;
        r = profile_set_end(p, end.line);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* "no samples match --pid 42 from <time> to <time>" on stderr: an empty
 * answer is not an error, but a person must learn why the output is empty. */
void no_samples_message(const struct filters *f, uint64_t from_ns, uint64_t to_ns, const char *where) {
        _cleanup_free_ char *filters = filters_describe(f);
        char from[64], to[64];

        fflush(stdout);
        fprintf(stderr, "no samples%s%s%s from %s to %s\n", filters && *filters ? " match " : "",
                filters && *filters ? filters : "", where ? where : "",
                format_local_time(from, sizeof(from), from_ns), format_local_time(to, sizeof(to), to_ns));
}

void unconverted_note(const json_t *end) {
        const json_t *v = json_object_get(end, "unconverted_drains");

        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                return;
        fflush(stdout);
        fprintf(stderr, "note: %" PRId64 " drains of this window are still being converted to profd's new store "
                "format (after an upgrade; profctl status shows how far) and are not in this answer\n",
                (int64_t) json_integer_value(v));
}

void quality_summary_print(const struct quality *q) {
        _cleanup_free_ char *s = quality_summary(q);

        fflush(stdout);
        fprintf(stderr, "%s\n", s ? s : "quality: (out of memory)");
}

int event_line_keep(json_t *kept, const json_t *line, const char *op, uint64_t *seen) {
        struct capture_event e;
        const char *error;
        int r;

        r = capture_event_from_json(line, &e, &error);
        if (r < 0)
                return cli_error(r, "profd's %s answer has a malformed event line: %s", op, error);
        (*seen)++;
        if (r == 0)
                return 0;
        if (json_array_append(kept, (json_t *) line) < 0)
                return cli_error(-ENOMEM, "%m");
        return 0;
}

int events_check_end(const json_t *end, const char *op, uint64_t seen) {
        const json_t *v = json_object_get(end, PROTO_KEY_EVENTS);

        if (!v && seen == 0)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t) json_integer_value(v) != seen)
                return cli_error(-EBADMSG, "profd's %s answer ends with \"events\":%" PRId64 " but it sent %" PRIu64
                                 " event lines", op, json_is_integer(v) ? (int64_t) json_integer_value(v) : -1, seen);
        return 0;
}
