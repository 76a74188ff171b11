/* profctl's filter options: local checks and request fields. */
#include "filters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "helpers.h"
#include "macro.h"
#include "protocol.h"
#include "timestamp.h"
#include "util.h"

const char filters_help[] =
        "Filters (combinable):\n"
        "      --pid N          Only process N\n"
        "      --tid N          Only thread N\n"
        "      --comm NAME      Only processes with command name NAME (exact, at most 15\n"
        "                       characters), or a glob when it has *, ? or [\n"
        "      --exe PATH       Only processes running the executable PATH (exact or glob)\n"
        "      --uid N          Only processes running with user id N\n"
        "      --cgroup PATH    Only the cgroup PATH (like /system.slice/nginx.service) and\n"
        "                       the cgroups below it; a glob when it has *, ? or [\n"
        "      --unit UNIT      Only the systemd unit UNIT (nginx.service, session-3.scope)\n"
        "      --container ID   Only the container whose id starts with ID (4 to 64 hex\n"
        "                       digits, as docker ps shows them)\n"
        "      --kind KIND      cpu: on-CPU samples (default); offcpu: time blocked or\n"
        "                       waiting for a CPU, by the stack it blocked in; wakeup:\n"
        "                       blocked time by the stack of the thread that ended it\n"
        "      --state LIST     offcpu/wakeup only: task states at the block, e.g. S,D\n"
        "                       (R preempted, S sleeping, D uninterruptible, T stopped,\n"
        "                       I idle kernel thread)\n"
        "      --since DUR      Window start, DUR ago (default 10m)\n"
        "      --until DUR      Window end, DUR ago (default 0s: now)\n"
        "      --from TIME      Window start: RFC 3339 (2026-11-21T05:00:00Z, with an\n"
        "                       offset or fractional seconds) or a duration ago (10m)\n"
        "      --to TIME        Window end, as --from\n"
        "      --last           Only the most recent drain\n"
        "      --by-drains      The window's drains whole, as the fleet answers, even where\n"
        "                       the timeline could select cpu samples by their own time\n"
        "      --host NAME      With --clickhouse: only host NAME, or the hosts a glob\n"
        "                       like 'web-*' matches (default: every host)\n";

int filters_check_duration(const char *option, const char *value, uint64_t *ret_ns) {
        int r = parse_duration_ns(value, ret_ns);

        if (r == -ERANGE)
                return cli_usage_error("%s '%s' is too long a duration", option, value);
        if (r < 0)
                return cli_usage_error("%s '%s' is not a duration (like 10m, 1h30m or 500ms; "
                                       "whole numbers, no sign)", option, value);
        return 0;
}

int filters_check_time(const char *option, const char *value) {
        bool absolute;
        uint64_t ns;
        int r;

        r = parse_time_point(value, &absolute, &ns);
        if (r == -ERANGE)
                return cli_usage_error("%s '%s' is out of range (times from 1970 to 2262, durations "
                                       "up to 584 years)", option, value);
        if (r < 0)
                return cli_usage_error("%s '%s' is not a time (expected RFC 3339 like "
                                       "2026-11-21T05:00:00Z or 2026-11-21T06:00:00.5+01:00, or a "
                                       "duration ago like 10m)", option, value);
        return 0;
}

/* A point in time as epoch ns, durations counted back from now_ns. */
static int time_point_ns(const char *value, uint64_t now_ns, uint64_t *ret) {
        bool absolute;
        uint64_t ns;
        int r;

        r = parse_time_point(value, &absolute, &ns);
        if (r < 0)
                return r;
        *ret = absolute ? ns : ns > now_ns ? 0 : now_ns - ns;
        return 0;
}

/* JSON strings must be UTF-8: jansson refuses others, and so would profd. */
static int check_string(const char *option, const char *value, const char *what) {
        _cleanup_json_ json_t *probe = NULL;

        if (!*value)
                return cli_usage_error("%s needs %s, got ''", option, what);
        probe = json_string(value);
        if (!probe)
                return cli_usage_error("%s '%s' is not valid UTF-8", option, value);
        return 0;
}

static bool has_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t l = strlen(s), m = strlen(suffix);

        return l >= m && streq(s + l - m, suffix);
}

/* --pid, --tid, --uid: numeric ids. */
static int filters_parse_id(struct filters *f, int opt, const char *arg) {
        uint64_t u;
        int r;

        switch (opt) {
        case FILTER_PID:
        case FILTER_TID:
                /* pid_t is an int; the running kernel's pid_max is lower, but
                 * profd knows which ids it saw */
                r = parse_uint_strict(arg, INT32_MAX, &u);
                if (r < 0 || u == 0)
                        return cli_usage_error("%s '%s' is not a %s id (expected a positive integer)",
                                               opt == FILTER_PID ? "--pid" : "--tid", arg,
                                               opt == FILTER_PID ? "process" : "thread");
                *(opt == FILTER_PID ? &f->pid : &f->tid) = u;
                return 1;
        case FILTER_UID:
                /* uid_t is 32 bits and (uid_t) -1 means "no uid" */
                r = parse_uint_strict(arg, UINT32_MAX - 1, &u);
                if (r < 0)
                        return cli_usage_error("--uid '%s' is not a user id (expected an integer "
                                               "from 0 to 4294967294; names are not looked up)", arg);
                f->uid = u;
                f->uid_set = true;
                return 1;
        default:
                return 0;
        }
}

/* --comm, --exe: what a process runs. */
static int filters_parse_program(struct filters *f, int opt, const char *arg) {
        int r;

        switch (opt) {
        case FILTER_COMM:
                r = check_string("--comm", arg, "a command name");
                if (r < 0)
                        return r;
                if (!has_glob(arg) && strlen(arg) > COMM_LEN_MAX)
                        return cli_usage_error("--comm '%s' is longer than the %d characters the "
                                               "kernel keeps of a command name; try '%.*s'",
                                               arg, COMM_LEN_MAX, COMM_LEN_MAX, arg);
                f->comm = arg;
                return 1;
        case FILTER_EXE:
                r = check_string("--exe", arg, "an executable path");
                if (r < 0)
                        return r;
                /* profd stores the path the kernel resolved: always absolute */
                if (arg[0] != '/' && !has_glob(arg))
                        return cli_usage_error("--exe '%s' is not an absolute path (profd knows "
                                               "executables by their full path; a glob like '*/%s' "
                                               "matches any directory)", arg, arg);
                f->exe = arg;
                return 1;
        default:
                return 0;
        }
}

/* --cgroup, --unit, --container: where a process runs. */
static int filters_parse_placement(struct filters *f, int opt, const char *arg) {
        int r;

        switch (opt) {
        case FILTER_CGROUP:
                r = check_string("--cgroup", arg, "a cgroup path");
                if (r < 0)
                        return r;
                if (arg[0] != '/' && !has_glob(arg))
                        return cli_usage_error("--cgroup '%s' is not a cgroup path (cgroup v2 paths "
                                               "start with '/', like /system.slice/nginx.service)", arg);
                f->cgroup = arg;
                return 1;
        case FILTER_UNIT:
                r = check_string("--unit", arg, "a unit name");
                if (r < 0)
                        return r;
                /* units come from cgroup names: only services and scopes
                 * have processes of their own */
                if (!ends_with(arg, ".service") && !ends_with(arg, ".scope"))
                        return cli_usage_error("--unit '%s' is not a service or scope name (units are "
                                               "found by their cgroup, so they end in .service or "
                                               ".scope; try '%s.service')", arg, arg);
                if (strchr(arg, '/'))
                        return cli_usage_error("--unit '%s' is a path; give the unit name (the last "
                                               "component) or use --cgroup", arg);
                f->unit = arg;
                return 1;
        case FILTER_CONTAINER: {
                size_t l = strlen(arg);

                if (l < 4 || l > 64 || strspn(arg, "0123456789abcdefABCDEF") != l)
                        return cli_usage_error("--container '%s' is not a container id (expected 4 to "
                                               "64 hexadecimal digits, a prefix of the full id)", arg);
                f->container = arg;
                return 1;
        }
        default:
                return 0;
        }
}

/* --kind, --state: which samples. */
static int filters_parse_samples(struct filters *f, int opt, const char *arg) {
        switch (opt) {
        case FILTER_KIND:
                if (!streq(arg, "cpu") && !streq(arg, "offcpu") && !streq(arg, "wakeup"))
                        return cli_usage_error("--kind '%s' is not known (expected cpu, offcpu or "
                                               "wakeup)", arg);
                f->kind = arg;
                return 1;
        case FILTER_STATE:
                /* letters R S D T I, comma-separated; profd checks the same */
                for (const char *p = arg;; p += 2) {
                        if (p[0] == '\0' || !strchr("RSDTI", p[0]) || (p[1] != ',' && p[1] != '\0'))
                                return cli_usage_error("--state '%s' is not a list of task states "
                                                       "(letters R, S, D, T, I separated by commas, "
                                                       "e.g. S,D)", arg);
                        if (p[1] == '\0')
                                break;
                }
                f->state = arg;
                return 1;
        default:
                return 0;
        }
}

/* --since, --until, --from, --to, --last: the window. */
static int filters_parse_window(struct filters *f, int opt, const char *arg) {
        int r;

        switch (opt) {
        case FILTER_SINCE:
                r = filters_check_duration("--since", arg, &f->since_ns);
                if (r < 0)
                        return r;
                f->since = arg;
                return 1;
        case FILTER_UNTIL:
                r = filters_check_duration("--until", arg, &f->until_ns);
                if (r < 0)
                        return r;
                f->until = arg;
                return 1;
        case FILTER_FROM:
        case FILTER_TO:
                r = filters_check_time(opt == FILTER_FROM ? "--from" : "--to", arg);
                if (r < 0)
                        return r;
                *(opt == FILTER_FROM ? &f->from : &f->to) = arg;
                return 1;
        case FILTER_LAST:
                f->last = true;
                return 1;
        case FILTER_BY_DRAINS:
                f->by_drains = true;
                return 1;
        default:
                return 0;
        }
}

int filters_parse_option(struct filters *f, int opt, const char *arg) {
        int r;

        switch (opt) {
        case FILTER_PID:
        case FILTER_TID:
        case FILTER_UID:
                return filters_parse_id(f, opt, arg);
        case FILTER_COMM:
        case FILTER_EXE:
                return filters_parse_program(f, opt, arg);
        case FILTER_CGROUP:
        case FILTER_UNIT:
        case FILTER_CONTAINER:
                return filters_parse_placement(f, opt, arg);
        case FILTER_KIND:
        case FILTER_STATE:
                return filters_parse_samples(f, opt, arg);
        case FILTER_SINCE:
        case FILTER_UNTIL:
        case FILTER_FROM:
        case FILTER_TO:
        case FILTER_LAST:
        case FILTER_BY_DRAINS:
                return filters_parse_window(f, opt, arg);
        case FILTER_HOST:
                r = check_string("--host", arg, "a host name or glob");
                if (r < 0)
                        return r;
                f->host = arg;
                return 1;
        default:
                return 0;
        }
}

int filters_check_window(const char *from_option, const char *from, const char *to_option, const char *to) {
        struct timespec ts;
        uint64_t now_ns, from_ns, to_ns;

        clock_gettime(CLOCK_REALTIME, &ts);
        now_ns = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
        /* both were checked on their own already */
        if (time_point_ns(from, now_ns, &from_ns) >= 0 && time_point_ns(to, now_ns, &to_ns) >= 0 &&
            from_ns > to_ns)
                return cli_usage_error("%s %s is later than %s %s (durations count back from now, so "
                                       "the start is the longer one)", from_option, from, to_option, to);
        return 0;
}

int filters_check(const struct filters *f) {
        if (f->state && (!f->kind || streq(f->kind, "cpu")))
                return cli_usage_error("--state applies to --kind offcpu and --kind wakeup");
        if (f->since && f->from)
                return cli_usage_error("--since and --from both give the window's start; use one");
        if (f->until && f->to)
                return cli_usage_error("--until and --to both give the window's end; use one");
        if (f->last && (f->since || f->until || f->from || f->to))
                return cli_usage_error("--last is the most recent drain, a window of its own; it "
                                       "cannot be combined with --%s",
                                       f->since ? "since" : f->until ? "until" : f->from ? "from" : "to");
        /* Only when both are given: otherwise the missing end is profd's
         * default, and profd checks the window itself. */
        if (f->since && f->until && f->since_ns < f->until_ns)
                return cli_usage_error("--since %s is later than --until %s (both count back from "
                                       "now, so --since is the longer one)", f->since, f->until);
        if (f->from && f->to)
                return filters_check_window("--from", f->from, "--to", f->to);
        return 0;
}

static int set_string(json_t *req, const char *key, const char *value) {
        return value ? json_object_set_new(req, key, json_string(value)) : 0;
}

int filters_to_request(const struct filters *f, json_t *req) {
        if (set_string(req, PROTO_KEY_KIND, f->kind) < 0 ||
            set_string(req, PROTO_KEY_STATE, f->state) < 0 ||
            set_string(req, PROTO_KEY_SINCE, f->since) < 0 ||
            set_string(req, PROTO_KEY_UNTIL, f->until) < 0 ||
            set_string(req, PROTO_KEY_FROM, f->from) < 0 ||
            set_string(req, PROTO_KEY_TO, f->to) < 0 ||
            set_string(req, PROTO_KEY_COMM, f->comm) < 0 ||
            set_string(req, PROTO_KEY_EXE, f->exe) < 0 ||
            set_string(req, PROTO_KEY_CGROUP, f->cgroup) < 0 ||
            set_string(req, PROTO_KEY_UNIT, f->unit) < 0 ||
            set_string(req, PROTO_KEY_CONTAINER, f->container) < 0 ||
            set_string(req, PROTO_KEY_HOST, f->host) < 0 ||
            (f->pid > 0 && json_object_set_new(req, PROTO_KEY_PID, json_integer((json_int_t) f->pid)) < 0) ||
            (f->tid > 0 && json_object_set_new(req, PROTO_KEY_TID, json_integer((json_int_t) f->tid)) < 0) ||
            (f->uid_set && json_object_set_new(req, PROTO_KEY_UID, json_integer((json_int_t) f->uid)) < 0) ||
            (f->last && json_object_set_new(req, PROTO_KEY_LAST, json_true()) < 0) ||
            (f->by_drains && json_object_set_new(req, PROTO_KEY_BY_DRAINS, json_true()) < 0))
                return -ENOMEM;
        return 0;
}

const char *filters_kind(const struct filters *f) {
        return f->kind ? f->kind : "cpu";
}

bool filters_kind_is_time(const struct filters *f) {
        return !streq(filters_kind(f), "cpu");
}

char *filters_describe(const struct filters *f) {
        char *text = NULL;
        size_t size = 0;
        FILE *s = open_memstream(&text, &size);

        if (!s)
                return NULL;
        if (f->pid > 0)
                fprintf(s, " --pid %llu", (unsigned long long) f->pid);
        if (f->tid > 0)
                fprintf(s, " --tid %llu", (unsigned long long) f->tid);
        if (f->uid_set)
                fprintf(s, " --uid %llu", (unsigned long long) f->uid);
#define DESCRIBE(field, option) if (f->field) fprintf(s, " --" option " %s", f->field)
        DESCRIBE(comm, "comm");
        DESCRIBE(exe, "exe");
        DESCRIBE(cgroup, "cgroup");
        DESCRIBE(unit, "unit");
        DESCRIBE(container, "container");
        DESCRIBE(kind, "kind");
        DESCRIBE(state, "state");
        DESCRIBE(host, "host");
#undef DESCRIBE
        if (f->last)
                fputs(" --last", s);
        if (f->by_drains)
                fputs(" --by-drains", s);
        if (fclose(s) != 0) {
                free(text);
                return NULL;
        }
        /* drop the leading space */
        if (text[0] == ' ')
                memmove(text, text + 1, strlen(text));
        return text;
}
