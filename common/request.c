/* Request validation: every field is checked against what its operation
 * accepts, so a typo is an error instead of a silently wider query. */
#include "request.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bpf/profd.h"
#include "capture.h"
#include "duration.h"
#include "timestamp.h"
#include "macro.h"
#include "helpers.h"
#include "protocol.h"
#include "timed-samples.h"

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

bool request_is_glob(const char *s) {
        return s && strpbrk(s, "*?[");
}

/* A non-empty string field of at most max bytes, copied to *ret. */
static int parse_string_field(json_t *v, const char *name, size_t max, char **ret, char **ret_error) {
        const char *c;
        char *copy;

        if (!json_is_string(v))
                return format_error(ret_error, "field '%s' must be a string", name);
        c = json_string_value(v);
        if (c[0] == '\0')
                return format_error(ret_error, "field '%s' is empty", name);
        if (strlen(c) > max)
                return format_error(ret_error, "field '%s' is longer than %zu bytes", name, max);
        copy = strdup(c);
        if (!copy)
                return -ENOMEM;
        free(*ret);
        *ret = copy;
        return 0;
}

static int parse_id_field(json_t *v, const char *name, json_int_t min, json_int_t max, const char *what,
                          json_int_t *ret, char **ret_error) {
        json_int_t i;

        if (!json_is_integer(v))
                return format_error(ret_error, "field '%s' must be an integer", name);
        i = json_integer_value(v);
        if (i < min || i > max)
                return format_error(ret_error, "field '%s': %lld is not %s", name, (long long) i, what);
        *ret = i;
        return 0;
}

static int parse_time_field(json_t *v, const char *name, struct request_time *ret, char **ret_error) {
        const char *s;
        int r;

        if (!json_is_string(v))
                return format_error(ret_error, "field '%s' must be a string: an RFC 3339 time such as "
                                               "\"2026-11-21T05:00:00Z\", or a duration ago such as \"10m\"", name);
        s = json_string_value(v);
        r = parse_time_point(s, &ret->absolute, &ret->ns);
        if (r == -ERANGE)
                return format_error(ret_error, "field '%s': \"%s\" is out of range (times from 1970 to 2262)", name, s);
        if (r < 0)
                return format_error(ret_error,
                            "field '%s': \"%.64s\" is neither an RFC 3339 time (e.g. \"2026-11-21T05:00:00Z\", "
                            "\"2026-11-21T06:00:00.5+01:00\") nor a duration ago (e.g. \"10m\")", name, s);
        return 0;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), l = strlen(suffix);
        return n > l && streq(s + n - l, suffix);
}

static int check_cgroup(char *cg, char **ret_error) {
        size_t n = strlen(cg);

        if (cg[0] != '/')
                return format_error(ret_error, "field 'cgroup': \"%.64s\" is not a cgroup v2 path: it starts with '/', "
                                               "e.g. \"/system.slice/nginx.service\"", cg);
        /* "/system.slice/" is "/system.slice"; "/" stays the root */
        while (n > 1 && cg[n - 1] == '/')
                cg[--n] = '\0';
        return 0;
}

static int check_unit(const char *u, char **ret_error) {
        if (strchr(u, '/'))
                return format_error(ret_error, "field 'unit': \"%.64s\" is a path, not a unit name "
                                               "(use 'cgroup' for paths)", u);
        if (!request_is_glob(u) && !ends_with(u, ".service") && !ends_with(u, ".scope"))
                return format_error(ret_error, "field 'unit': \"%.64s\" is not a unit processes run in: "
                                               "it ends in .service or .scope, e.g. \"nginx.service\"", u);
        return 0;
}

static int check_container(char *c, char **ret_error) {
        size_t n = strlen(c);

        if (n < REQUEST_CONTAINER_MIN || n > REQUEST_CONTAINER_MAX ||
            strspn(c, "0123456789abcdefABCDEF") != n)
                return format_error(ret_error, "field 'container': \"%.80s\" is not a container id "
                                               "(%d to %d hex digits)", c, REQUEST_CONTAINER_MIN,
                                               REQUEST_CONTAINER_MAX);
        /* ids are lowercase in cgroup paths */
        for (char *p = c; *p; p++)
                if (*p >= 'A' && *p <= 'F')
                        *p += 'a' - 'A';
        return 0;
}

/* The window a query request gives in durations ago ("since", "until"), to
 * refuse combinations that contradict each other. */
struct window_given {
        const char *since, *until; /* the field's name when given, else NULL */
};

/* Fields "kind" and the window: "since", "until", "from", "to", "last",
 * "by_drains".
 * Returns 1 when key is one of them, 0 when not, or a negative errno with
 * *ret_error set. */
static int parse_when_field(const char *key, json_t *v, struct query_request *q, struct window_given *w,
                            char **ret_error) {
        int r;

        if (streq(key, PROTO_KEY_KIND)) {
                if (!json_is_string(v))
                        return format_error(ret_error, "field 'kind' must be a string");
                if (parse_kind(json_string_value(v), &q->kind) < 0)
                        return format_error(ret_error, "unknown kind '%s' (expected cpu, offcpu or wakeup)",
                                    json_string_value(v));
        } else if (streq(key, PROTO_KEY_SINCE)) {
                r = parse_duration_field(v, key, &q->since_ns, ret_error);
                if (r < 0)
                        return r;
                w->since = "since";
                q->have_since = true;
        } else if (streq(key, PROTO_KEY_UNTIL)) {
                r = parse_duration_field(v, key, &q->until_ns, ret_error);
                if (r < 0)
                        return r;
                w->until = "until";
        } else if (streq(key, PROTO_KEY_FROM)) {
                r = parse_time_field(v, key, &q->from, ret_error);
                if (r < 0)
                        return r;
                q->have_from = true;
        } else if (streq(key, PROTO_KEY_TO)) {
                r = parse_time_field(v, key, &q->to, ret_error);
                if (r < 0)
                        return r;
                q->have_to = true;
        } else if (streq(key, PROTO_KEY_LAST)) {
                if (!json_is_boolean(v))
                        return format_error(ret_error, "field 'last' must be true or false");
                q->last = json_is_true(v);
        } else if (streq(key, PROTO_KEY_BY_DRAINS)) {
                if (!json_is_boolean(v))
                        return format_error(ret_error, "field 'by_drains' must be true or false");
                q->by_drains = json_is_true(v);
        } else
                return 0;
        return 1;
}

/* The fields that choose processes: "pid", "tid", "uid", "comm", "exe",
 * "cgroup", "unit", "container", and "state" (of a blocked thread).
 * Returns 1 when key is one of them, 0 when not, or a negative errno with
 * *ret_error set. */
static int parse_who_field(const char *key, json_t *v, struct query_request *q, char **ret_error) {
        int r;

        if (streq(key, PROTO_KEY_PID)) {
                json_int_t pid;
                r = parse_id_field(v, key, 1, INT32_MAX, "a process id", &pid, ret_error);
                if (r < 0)
                        return r;
                q->pid = pid;
        } else if (streq(key, PROTO_KEY_TID)) {
                json_int_t tid;
                r = parse_id_field(v, key, 1, INT32_MAX, "a thread id", &tid, ret_error);
                if (r < 0)
                        return r;
                q->tid = tid;
        } else if (streq(key, PROTO_KEY_UID)) {
                json_int_t uid;
                /* (uid_t) -1 means "no uid" to the kernel */
                r = parse_id_field(v, key, 0, (json_int_t) UINT32_MAX - 1, "a user id", &uid, ret_error);
                if (r < 0)
                        return r;
                q->uid = uid;
                q->have_uid = true;
        } else if (streq(key, PROTO_KEY_COMM)) {
                r = parse_string_field(v, key, REQUEST_STRING_MAX, &q->comm, ret_error);
                if (r < 0)
                        return r;
                /* a pattern may be longer than the names it matches */
                if (!request_is_glob(q->comm) && strlen(q->comm) > REQUEST_COMM_MAX)
                        return format_error(ret_error,
                                    "field 'comm': \"%.32s\" is longer than %d characters, "
                                    "the most the kernel keeps of a command name",
                                    q->comm, REQUEST_COMM_MAX);
        } else if (streq(key, PROTO_KEY_EXE)) {
                r = parse_string_field(v, key, REQUEST_STRING_MAX, &q->exe, ret_error);
                if (r < 0)
                        return r;
                if (!request_is_glob(q->exe) && q->exe[0] != '/')
                        return format_error(ret_error,
                                    "field 'exe': \"%.64s\" is not an absolute path (a glob such as "
                                    "\"*/%.64s\" matches it by name)", q->exe, q->exe);
        } else if (streq(key, PROTO_KEY_CGROUP)) {
                r = parse_string_field(v, key, REQUEST_STRING_MAX, &q->cgroup, ret_error);
                if (r < 0)
                        return r;
                r = check_cgroup(q->cgroup, ret_error);
                if (r < 0)
                        return r;
        } else if (streq(key, PROTO_KEY_UNIT)) {
                r = parse_string_field(v, key, REQUEST_STRING_MAX, &q->unit, ret_error);
                if (r < 0)
                        return r;
                r = check_unit(q->unit, ret_error);
                if (r < 0)
                        return r;
        } else if (streq(key, PROTO_KEY_CONTAINER)) {
                r = parse_string_field(v, key, REQUEST_STRING_MAX, &q->container, ret_error);
                if (r < 0)
                        return r;
                r = check_container(q->container, ret_error);
                if (r < 0)
                        return r;
        } else if (streq(key, PROTO_KEY_STATE)) {
                if (!json_is_string(v))
                        return format_error(ret_error, "field 'state' must be a string such as \"S,D\"");
                r = parse_states(json_string_value(v), &q->state_mask, ret_error);
                if (r < 0)
                        return r;
        } else
                return 0;
        return 1;
}

/* The fields that shape the answer: "raw_names", "format", "lines" and
 * "group" of a query (a timeline's but "group"), "step" of a series,
 * "max_samples" of a timeline, "events" of both. Returns 1 when key is one of them for this
 * op, 0 when not, or a negative errno with *ret_error set. */
static int parse_answer_field(const char *key, json_t *v, enum request_op op, struct query_request *q,
                              char **ret_error) {
        bool series = op == REQUEST_SERIES;
        int r;

        if (!series && streq(key, PROTO_KEY_RAW_NAMES)) {
                if (!json_is_boolean(v))
                        return format_error(ret_error, "field 'raw_names' must be true or false");
                q->raw_names = json_is_true(v);
        } else if (!series && streq(key, PROTO_KEY_FORMAT)) {
                /* folded: what a flame graph needs and nothing else,
                 * a fraction of the bytes to send and to parse */
                if (!json_is_string(v) ||
                    (!streq(json_string_value(v), PROTO_FORMAT_FRAMES) &&
                     !streq(json_string_value(v), PROTO_FORMAT_FOLDED)))
                        return format_error(ret_error, "field 'format' must be \"frames\" or \"folded\"");
                q->folded = streq(json_string_value(v), PROTO_FORMAT_FOLDED);
        } else if (!series && streq(key, PROTO_KEY_LINES)) {
                if (!json_is_boolean(v))
                        return format_error(ret_error, "field 'lines' must be true or false");
                q->lines = json_is_true(v);
        } else if (op == REQUEST_QUERY && streq(key, PROTO_KEY_GROUP)) {
                const char *g;
                if (!json_is_string(v))
                        return format_error(ret_error, "field 'group' must be a string");
                g = json_string_value(v);
                if (streq(g, PROTO_GROUP_PROCESS))
                        q->group = STORE_GROUP_PROCESS;
                else if (streq(g, PROTO_GROUP_UNIT))
                        q->group = STORE_GROUP_UNIT;
                else if (streq(g, PROTO_GROUP_THREAD))
                        q->group = STORE_GROUP_THREAD;
                else
                        return format_error(ret_error, "field 'group': \"%.32s\" is not a grouping "
                                                       "(expected \"process\", \"unit\" or \"thread\")", g);
        } else if (series && streq(key, PROTO_KEY_STEP)) {
                r = parse_duration_field(v, key, &q->step_ns, ret_error);
                if (r < 0)
                        return r;
                if (q->step_ns < REQUEST_STEP_MIN_NS)
                        return format_error(ret_error, "field 'step': \"%s\" is shorter than 1ms",
                                    json_string_value(v));
        } else if (op == REQUEST_TIMELINE && streq(key, PROTO_KEY_MAX_SAMPLES)) {
                json_int_t m;
                r = parse_id_field(v, key, 1, (json_int_t) TIMED_MAX_SAMPLES, "a sample count from 1 to 1000000",
                                   &m, ret_error);
                if (r < 0)
                        return r;
                q->max_samples = (uint64_t) m;
        } else if ((series || op == REQUEST_TIMELINE) && streq(key, PROTO_KEY_EVENTS)) {
                /* asked for, not sent by default: a profctl older than the
                 * event lines refuses a line type it does not know */
                if (!json_is_boolean(v))
                        return format_error(ret_error, "field 'events' must be true or false");
                q->events = json_is_true(v);
        } else
                return 0;
        return 1;
}

/* What no single field decides: fields that contradict each other, and a
 * window all in durations that is empty. Returns 0, or a negative errno
 * with *ret_error set. */
static int check_query(const struct query_request *q, const struct window_given *w, enum request_op op,
                       char **ret_error) {
        if (op == REQUEST_TIMELINE) {
                /* on-CPU samples ("samples" lines) and off-CPU blocks
                 * ("spans" lines) keep their times; wakeups do not */
                if (q->kind == PROFD_KIND_WAKEUP)
                        return format_error(ret_error, "kind 'wakeup': a timeline answer carries on-CPU samples "
                                                       "(kind cpu) and off-CPU blocks (kind offcpu); wakeups do "
                                                       "not keep their times");
                if (q->last)
                        return format_error(ret_error, "field 'last' (the most recent drain) applies to query "
                                                       "and series; a timeline takes a window");
                if (q->by_drains)
                        return format_error(ret_error, "field 'by_drains' applies to query; a timeline is "
                                                       "by each sample's own time");
        }
        if (q->lines && !q->folded)
                return format_error(ret_error, "field 'lines' applies to \"format\":\"folded\" (frames carry "
                                               "their file and line already)");
        if (q->state_mask && q->kind == PROFD_KIND_CPU)
                return format_error(ret_error, "field 'state' applies to kinds offcpu and wakeup, not cpu");
        if (w->since && q->have_from)
                return format_error(ret_error, "fields 'since' and 'from' both give the start of the window; "
                                               "give one");
        if (w->until && q->have_to)
                return format_error(ret_error, "fields 'until' and 'to' both give the end of the window; give one");
        if (q->last) {
                const char *other = w->since ?: w->until ?: q->have_from ? "from" : q->have_to ? "to" : NULL;
                if (other)
                        return format_error(ret_error, "field 'last' (the most recent drain) cannot be combined "
                                                       "with '%s'", other);
        }
        /* a window all in durations is checked now; one with a time of
         * day only when it runs (request_window) */
        if (!q->last && !(q->have_from && q->from.absolute) && !(q->have_to && q->to.absolute)) {
                uint64_t start = q->have_from ? q->from.ns : q->since_ns;
                uint64_t end = q->have_to ? q->to.ns : q->until_ns;
                if (end >= start)
                        return format_error(ret_error, "empty window: '%s' must be more recent than '%s'%s",
                                    q->have_to ? "to" : "until", q->have_from ? "from" : "since",
                                    w->since || q->have_from ? "" : " (default since: 10m)");
        }
        return 0;
}

static int parse_query(json_t *o, enum request_op op, struct query_request *q, char **ret_error) {
        const char *op_name = op == REQUEST_SERIES ? PROTO_OP_SERIES :
                              op == REQUEST_TIMELINE ? PROTO_OP_TIMELINE : PROTO_OP_QUERY;
        /* the window fields given, to refuse contradicting combinations */
        struct window_given w = {};
        const char *key;
        json_t *v;
        int r;

        q->kind = PROFD_KIND_CPU;
        q->since_ns = QUERY_DEFAULT_SINCE_NS;
        json_object_foreach(o, key, v) {
                if (streq(key, PROTO_KEY_OP))
                        continue;
                r = parse_when_field(key, v, q, &w, ret_error);
                if (r == 0)
                        r = parse_who_field(key, v, q, ret_error);
                if (r == 0)
                        r = parse_answer_field(key, v, op, q, ret_error);
                if (r < 0)
                        return r;
                if (r == 0)
                        return format_error(ret_error, "unknown field '%s' in %s request", key, op_name);
        }
        return check_query(q, &w, op, ret_error);
}

int request_window(const struct query_request *q, uint64_t now_ns, uint64_t *ret_from_ns, uint64_t *ret_to_ns,
                   char **ret_error) {
        const struct request_time start = q->have_from ? q->from : (struct request_time) { .ns = q->since_ns };
        const struct request_time end = q->have_to ? q->to : (struct request_time) { .ns = q->until_ns };
        uint64_t from = start.absolute ? start.ns : start.ns < now_ns ? now_ns - start.ns : 0;
        uint64_t to = end.absolute ? end.ns : end.ns < now_ns ? now_ns - end.ns : 0;

        *ret_error = NULL;
        if (from > now_ns) {
                char a[64];
                return format_error(ret_error, "empty window: '%s' (%s) is in the future",
                                    q->have_from ? "from" : "since", format_timestamp(a, sizeof(a), from));
        }
        if (to < from) {
                char a[64], b[64];
                return format_error(ret_error, "empty window: '%s' (%s) is before '%s' (%s)",
                                    q->have_to ? "to" : "until", format_timestamp(a, sizeof(a), to),
                                    q->have_from ? "from" : "since", format_timestamp(b, sizeof(b), from));
        }
        *ret_from_ns = from;
        *ret_to_ns = to;
        return 0;
}

static int parse_no_args(json_t *o, const char *op, char **ret_error) {
        const char *key;
        json_t *v;

        json_object_foreach(o, key, v)
                if (!streq(key, PROTO_KEY_OP))
                        return format_error(ret_error, "unknown field '%s' in %s request", key, op);
        return 0;
}

/* {"op":"capture","action":"start","condition":"cpu:pid=42>80"},
 * {"action":"list"}, {"action":"unpin","id":3}, {"action":"stop","id":2}:
 * each action takes exactly its own fields. */
static int parse_capture(json_t *o, struct capture_request *ret, char **ret_error) {
        static const char *const actions[] = {
                [CAPTURE_ACTION_START] = PROTO_CAPTURE_START,
                [CAPTURE_ACTION_LIST] = PROTO_CAPTURE_LIST,
                [CAPTURE_ACTION_UNPIN] = PROTO_CAPTURE_UNPIN,
                [CAPTURE_ACTION_STOP] = PROTO_CAPTURE_STOP,
        };
        json_t *a = json_object_get(o, PROTO_KEY_ACTION), *v;
        const char *key, *err;
        bool wants_condition, wants_id;
        size_t i;

        if (!a || !json_is_string(a))
                return format_error(ret_error, "capture needs 'action': start, list, unpin or stop");
        for (i = 0; i < ELEMENTSOF(actions); i++)
                if (streq(json_string_value(a), actions[i]))
                        break;
        if (i == ELEMENTSOF(actions))
                return format_error(ret_error, "unknown capture action '%s' (expected start, list, unpin or stop)",
                                    json_string_value(a));
        ret->action = (enum capture_action) i;
        wants_condition = ret->action == CAPTURE_ACTION_START;
        wants_id = ret->action == CAPTURE_ACTION_UNPIN || ret->action == CAPTURE_ACTION_STOP;
        json_object_foreach(o, key, v) {
                if (streq(key, PROTO_KEY_OP) || streq(key, PROTO_KEY_ACTION) ||
                    (wants_condition && streq(key, PROTO_KEY_CONDITION)) || (wants_id && streq(key, PROTO_KEY_ID)))
                        continue;
                return format_error(ret_error, "unknown field '%s' in capture %s request", key, actions[i]);
        }
        if (wants_condition) {
                struct capture_cond c;
                int r;

                v = json_object_get(o, PROTO_KEY_CONDITION);
                if (!v || !json_is_string(v))
                        return format_error(ret_error, "capture start needs 'condition' (psi:..., cpu:..., oom or manual)");
                if (strlen(json_string_value(v)) > REQUEST_STRING_MAX + 64)
                        return format_error(ret_error, "'condition' is longer than %d bytes", REQUEST_STRING_MAX + 64);
                r = capture_cond_parse(json_string_value(v), &c, &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return format_error(ret_error, "bad capture condition '%s': %s", json_string_value(v), err);
                capture_cond_done(&c);
                ret->condition = strdup(json_string_value(v));
                if (!ret->condition)
                        return -ENOMEM;
        }
        if (wants_id) {
                v = json_object_get(o, PROTO_KEY_ID);
                if (!v || !json_is_integer(v) || json_integer_value(v) <= 0)
                        return format_error(ret_error, "capture %s needs 'id', a positive integer", actions[i]);
                ret->id = (int64_t) json_integer_value(v);
        }
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
        op = json_object_get(root, PROTO_KEY_OP);
        if (!op) {
                r = format_error(ret_error, "missing field 'op'");
                goto out;
        }
        if (!json_is_string(op)) {
                r = format_error(ret_error, "field 'op' must be a string");
                goto out;
        }
        ops = json_string_value(op);
        if (streq(ops, PROTO_OP_STATUS)) {
                req.op = REQUEST_STATUS;
                r = parse_no_args(root, ops, ret_error);
        } else if (streq(ops, PROTO_OP_FLUSH)) {
                req.op = REQUEST_FLUSH;
                r = parse_no_args(root, ops, ret_error);
        } else if (streq(ops, PROTO_OP_QUERY)) {
                req.op = REQUEST_QUERY;
                r = parse_query(root, REQUEST_QUERY, &req.query, ret_error);
        } else if (streq(ops, PROTO_OP_SERIES)) {
                req.op = REQUEST_SERIES;
                r = parse_query(root, REQUEST_SERIES, &req.query, ret_error);
        } else if (streq(ops, PROTO_OP_TIMELINE)) {
                req.op = REQUEST_TIMELINE;
                r = parse_query(root, REQUEST_TIMELINE, &req.query, ret_error);
        } else if (streq(ops, PROTO_OP_CAPTURE)) {
                req.op = REQUEST_CAPTURE;
                r = parse_capture(root, &req.capture, ret_error);
        } else
                r = format_error(ret_error, "unknown op '%s' (expected status, flush, query, series, timeline or "
                                 "capture)", ops);
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
        struct query_request *q = &r->query;

        free(q->comm);
        free(q->exe);
        free(q->cgroup);
        free(q->unit);
        free(q->container);
        q->comm = q->exe = q->cgroup = q->unit = q->container = NULL;
        free(r->capture.condition);
        r->capture.condition = NULL;
}
