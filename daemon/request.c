/* Request validation: every field is checked against what its operation
 * accepts, so a typo is an error instead of a silently wider query. */
#include "request.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bpf/profd.h"
#include "duration.h"
#include "macro.h"
#include "helpers.h"

/* Default window of a query without "since": recent enough to answer "what is
 * it doing now" quickly, long enough to hold dozens of drains. */
#define QUERY_DEFAULT_SINCE_NS (10 * 60 * NSEC_PER_SEC)

static int parse_duration_field(json_t *v, const char *name, uint64_t *ret, char **ret_error) {
        const char *s;
        int r;

        if (!json_is_string(v))
                return format_error(ret_error, "field '%s' must be a duration string such as \"10m\"", name);
        s = json_string_value(v);
        r = parse_duration_ns(s, ret);
        if (r == -ERANGE)
                return format_error(ret_error, "field '%s': duration \"%s\" is too large", name, s);
        if (r < 0)
                return format_error(ret_error,
                            "field '%s': \"%s\" is not a duration (expected e.g. \"90s\", \"10m\", \"1h30m\")",
                            name, s);
        return 0;
}

static int parse_kind(const char *s, int *ret) {
        if (streq(s, "cpu"))
                *ret = PROFD_KIND_CPU;
        else if (streq(s, "offcpu"))
                *ret = PROFD_KIND_OFFCPU;
        else if (streq(s, "wakeup"))
                *ret = PROFD_KIND_WAKEUP;
        else
                return -EINVAL;
        return 0;
}

/* "S,D,R": task states as ps(1) letters. */
static int parse_states(const char *s, uint32_t *ret_mask, char **ret_error) {
        static const struct {
                char letter;
                int state;
        } table[] = {
                { 'R', PROFD_STATE_RUNNING }, { 'S', PROFD_STATE_SLEEPING }, { 'D', PROFD_STATE_DISK },
                { 'T', PROFD_STATE_STOPPED }, { 'I', PROFD_STATE_IDLE },
        };
        uint32_t mask = 0;
        const char *p = s;

        for (;;) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(table); i++)
                        if (p[0] == table[i].letter && (p[1] == ',' || p[1] == '\0'))
                                break;
                if (i == ELEMENTSOF(table))
                        return format_error(ret_error, "field 'state': \"%s\" is not a list of task states "
                                                       "(letters R, S, D, T, I separated by commas)", s);
                mask |= 1u << table[i].state;
                if (p[1] == '\0')
                        break;
                p += 2;
        }
        *ret_mask = mask;
        return 0;
}

static int parse_query(json_t *o, struct query_request *q, char **ret_error) {
        bool have_since = false;
        const char *key;
        json_t *v;
        int r;

        q->kind = PROFD_KIND_CPU;
        q->since_ns = QUERY_DEFAULT_SINCE_NS;
        json_object_foreach(o, key, v) {
                if (streq(key, "op"))
                        continue;
                if (streq(key, "kind")) {
                        if (!json_is_string(v))
                                return format_error(ret_error, "field 'kind' must be a string");
                        if (parse_kind(json_string_value(v), &q->kind) < 0)
                                return format_error(ret_error, "unknown kind '%s' (expected cpu, offcpu or wakeup)",
                                            json_string_value(v));
                } else if (streq(key, "since")) {
                        r = parse_duration_field(v, key, &q->since_ns, ret_error);
                        if (r < 0)
                                return r;
                        have_since = true;
                } else if (streq(key, "until")) {
                        r = parse_duration_field(v, key, &q->until_ns, ret_error);
                        if (r < 0)
                                return r;
                } else if (streq(key, "pid")) {
                        json_int_t pid;
                        if (!json_is_integer(v))
                                return format_error(ret_error, "field 'pid' must be an integer");
                        pid = json_integer_value(v);
                        if (pid <= 0 || pid > INT32_MAX)
                                return format_error(ret_error, "field 'pid': %lld is not a process id",
                                            (long long) pid);
                        q->pid = pid;
                } else if (streq(key, "comm")) {
                        const char *c;
                        if (!json_is_string(v))
                                return format_error(ret_error, "field 'comm' must be a string");
                        c = json_string_value(v);
                        if (c[0] == '\0')
                                return format_error(ret_error, "field 'comm' is empty");
                        if (strlen(c) > REQUEST_COMM_MAX)
                                return format_error(ret_error,
                                            "field 'comm': \"%.32s\" is longer than %d characters, "
                                            "the most the kernel keeps of a command name",
                                            c, REQUEST_COMM_MAX);
                        free(q->comm);
                        q->comm = strdup(c);
                        if (!q->comm)
                                return -ENOMEM;
                } else if (streq(key, "raw_names")) {
                        if (!json_is_boolean(v))
                                return format_error(ret_error, "field 'raw_names' must be true or false");
                        q->raw_names = json_is_true(v);
                } else if (streq(key, "state")) {
                        if (!json_is_string(v))
                                return format_error(ret_error, "field 'state' must be a string such as \"S,D\"");
                        r = parse_states(json_string_value(v), &q->state_mask, ret_error);
                        if (r < 0)
                                return r;
                } else
                        return format_error(ret_error, "unknown field '%s' in query request", key);
        }
        if (q->state_mask && q->kind == PROFD_KIND_CPU)
                return format_error(ret_error, "field 'state' applies to kinds offcpu and wakeup, not cpu");
        if (q->until_ns >= q->since_ns)
                return format_error(ret_error, "empty window: 'until' must be more recent than 'since'%s",
                            have_since ? "" : " (default since: 10m)");
        return 0;
}

static int parse_no_args(json_t *o, const char *op, char **ret_error) {
        const char *key;
        json_t *v;

        json_object_foreach(o, key, v)
                if (!streq(key, "op"))
                        return format_error(ret_error, "unknown field '%s' in %s request", key, op);
        return 0;
}

int request_parse(const char *line, size_t len, struct request *ret, char **ret_error) {
        struct request req = {};
        json_error_t jerr;
        json_t *root, *op;
        const char *ops;
        int r;

        *ret_error = NULL;
        if (len > REQUEST_MAX_BYTES)
                return format_error(ret_error, "request is larger than %d bytes", REQUEST_MAX_BYTES);
        root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!root)
                return format_error(ret_error, "malformed JSON at column %d: %s", jerr.column, jerr.text);
        if (!json_is_object(root)) {
                r = format_error(ret_error, "request must be a JSON object");
                goto out;
        }
        op = json_object_get(root, "op");
        if (!op) {
                r = format_error(ret_error, "missing field 'op'");
                goto out;
        }
        if (!json_is_string(op)) {
                r = format_error(ret_error, "field 'op' must be a string");
                goto out;
        }
        ops = json_string_value(op);
        if (streq(ops, "status")) {
                req.op = REQUEST_STATUS;
                r = parse_no_args(root, ops, ret_error);
        } else if (streq(ops, "flush")) {
                req.op = REQUEST_FLUSH;
                r = parse_no_args(root, ops, ret_error);
        } else if (streq(ops, "query")) {
                req.op = REQUEST_QUERY;
                r = parse_query(root, &req.query, ret_error);
        } else
                r = format_error(ret_error, "unknown op '%s' (expected status, flush or query)", ops);
out:
        json_decref(root);
        if (r < 0) {
                request_done(&req);
                return r;
        }
        *ret = req;
        return 0;
}

void request_done(struct request *r) {
        free(r->query.comm);
        r->query.comm = NULL;
}
