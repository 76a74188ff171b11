/* The filter options every profctl command that reads samples shares (query,
 * series, diff, top): parsed and checked here, sent as request fields
 * (docs/protocol.md), so a typo is a usage error naming the option rather
 * than a round trip to profd. */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* getopt_long values of the filter options; commands number their own
 * options from FILTER_OPTION_END on, so both share one option table. */
enum {
        FILTER_PID = 0x100,
        FILTER_TID,
        FILTER_COMM,
        FILTER_EXE,
        FILTER_UID,
        FILTER_CGROUP,
        FILTER_UNIT,
        FILTER_CONTAINER,
        FILTER_KIND,
        FILTER_STATE,
        FILTER_SINCE,
        FILTER_UNTIL,
        FILTER_FROM,
        FILTER_TO,
        FILTER_LAST,
        FILTER_BY_DRAINS,
        FILTER_HOST,
        FILTER_OPTION_END,
};

/* The struct option entries of the filters, for a command's table. */
#define FILTER_OPTIONS                                                  \
        { "pid",       required_argument, NULL, FILTER_PID       },    \
        { "tid",       required_argument, NULL, FILTER_TID       },    \
        { "comm",      required_argument, NULL, FILTER_COMM      },    \
        { "exe",       required_argument, NULL, FILTER_EXE       },    \
        { "uid",       required_argument, NULL, FILTER_UID       },    \
        { "cgroup",    required_argument, NULL, FILTER_CGROUP    },    \
        { "unit",      required_argument, NULL, FILTER_UNIT      },    \
        { "container", required_argument, NULL, FILTER_CONTAINER },    \
        { "kind",      required_argument, NULL, FILTER_KIND      },    \
        { "state",     required_argument, NULL, FILTER_STATE     },    \
        { "since",     required_argument, NULL, FILTER_SINCE     },    \
        { "until",     required_argument, NULL, FILTER_UNTIL     },    \
        { "from",      required_argument, NULL, FILTER_FROM      },    \
        { "to",        required_argument, NULL, FILTER_TO        },    \
        { "last",      no_argument,       NULL, FILTER_LAST      },    \
        { "by-drains", no_argument,       NULL, FILTER_BY_DRAINS },    \
        { "host",      required_argument, NULL, FILTER_HOST      }

/* The help text of the filter options, for every command's --help. */
extern const char filters_help[];

/* The kernel keeps a command name in 16 bytes (TASK_COMM_LEN) with its NUL,
 * so a longer exact --comm could never match; saying so beats an empty answer. */
#define COMM_LEN_MAX 15

struct filters {
        uint64_t pid, tid, uid; /* pid, tid 0: any */
        bool uid_set;
        const char *comm, *exe, *cgroup, *unit, *container;
        const char *kind;       /* NULL: profd's default, cpu */
        const char *state;
        const char *since, *until, *from, *to;
        uint64_t since_ns, until_ns;
        bool last;
        bool by_drains;         /* a window of whole drains, never by the timeline */
        const char *host;       /* fleet queries (--clickhouse): a host name or glob */
};

/* Takes option opt (a FILTER_* value) with its argument. Returns 1 if it
 * was a filter option, 0 if it is not one (the caller's), -EINVAL after
 * printing a usage error that says which option and why. */
int filters_parse_option(struct filters *f, int opt, const char *arg);

/* Checks what single options can't: combinations. Returns 0 or -EINVAL
 * after a usage error. */
int filters_check(const struct filters *f);

/* Sets the request fields of the filters given; profd's defaults stay
 * profd's. Returns 0 or -ENOMEM. */
int filters_to_request(const struct filters *f, json_t *request);

/* "cpu" unless --kind said otherwise. */
const char *filters_kind(const struct filters *f);

/* Off-CPU and wakeup values are nanoseconds, cpu values sample counts. */
bool filters_kind_is_time(const struct filters *f);

/* The filters as the options that gave them ("--pid 42 --comm nginx"), for
 * "no samples match ..."; "" if none. Returns a malloc'd string or NULL. */
char *filters_describe(const struct filters *f);

/* Checks a duration option locally. Returns 0 or -EINVAL after a usage
 * error. */
int filters_check_duration(const char *option, const char *value, uint64_t *ret_ns);

/* Checks a point in time (RFC 3339, or a duration meaning that long ago).
 * Returns 0 or -EINVAL after a usage error. */
int filters_check_time(const char *option, const char *value);

/* Checks that the window from..to (each a time point as above) does not end
 * before it starts. Returns 0 or -EINVAL after a usage error. */
int filters_check_window(const char *from_option, const char *from, const char *to_option, const char *to);
