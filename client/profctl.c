/* profctl: command line and commands of profd's client; the wire protocol is
 * docs/protocol.md, the output formats are in render.c and folded.c. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "conn.h"
#include "duration.h"
#include "folded.h"
#include "macro.h"
#include "render.h"
#include "util.h"

/* The kernel keeps a command name in 16 bytes (TASK_COMM_LEN) with its NUL,
 * so a longer --comm could never match; saying so beats an empty answer. */
#define COMM_LEN_MAX 15

/* Enough to see where the time went on one screen; --limit 0 shows all. */
#define QUERY_LIMIT_DEFAULT 25

static const char *arg_socket = NULL;

static void help_global(void) {
        printf("Usage: profctl [--socket PATH] COMMAND [OPTIONS]\n"
               "\n"
               "Ask profd, the system-wide sampling profiler, what it has seen.\n"
               "\n"
               "Commands:\n"
               "  status [--json]   What profd samples, how much it stored, what it dropped\n"
               "  flush [--json]    Make profd store the samples it holds now\n"
               "  query [OPTIONS]   Where the CPU time went (see 'profctl query --help')\n"
               "\n"
               "Options:\n"
               "      --socket PATH  profd's socket (default: $PROFD_SOCKET, else %s)\n"
               "  -h, --help         Show this help\n"
               "      --version      Show the version\n"
               "\n"
               "Query options:\n"
               "      --pid N        Only process N\n"
               "      --comm NAME    Only processes with command name NAME\n"
               "      --since DUR    Window start, DUR ago (default 10m)\n"
               "      --until DUR    Window end, DUR ago (default 0s: now)\n"
               "      --kind KIND    cpu (default), offcpu or wakeup\n"
               "      --state LIST   Task states for offcpu/wakeup, e.g. S,D\n"
               "      --folded       Folded stacks for flame graphs instead of the table\n"
               "      --json         One JSON document with every stack instead of the table\n"
               "      --limit N      Table rows (default %d, 0 for all)\n"
               "\n"
               "Exit status: 0 success, 1 profd answered with an error or could not be\n"
               "reached, 2 the command line is wrong.\n",
               PROFD_DEFAULT_SOCKET, QUERY_LIMIT_DEFAULT);
}

static void help_status(void) {
        printf("Usage: profctl status [--json]\n"
               "\n"
               "Show profd's version and uptime, its sampling frequency and event, the\n"
               "drain interval, what the store holds and every drop reason with its count.\n"
               "\n"
               "Options:\n"
               "      --json   Print profd's status object as it sent it\n"
               "  -h, --help   Show this help\n");
}

static void help_flush(void) {
        printf("Usage: profctl flush [--json]\n"
               "\n"
               "Make profd drain the kernel's maps now and wait until that drain is stored,\n"
               "so a query right after sees the latest samples.\n"
               "\n"
               "Options:\n"
               "      --json   Print profd's answer as it sent it\n"
               "  -h, --help   Show this help\n");
}

static void help_query(void) {
        printf("Usage: profctl query [OPTIONS]\n"
               "\n"
               "Show where time went in a window of time: by default the functions with the\n"
               "most samples (--kind cpu) or the most time (offcpu, wakeup). SELF counts\n"
               "what landed in the function itself, TOTAL what has it anywhere on the stack.\n"
               "\n"
               "Options:\n"
               "      --pid N       Only process N\n"
               "      --comm NAME   Only processes with command name NAME (at most %d characters)\n"
               "      --since DUR   Window start, DUR ago (default 10m)\n"
               "      --until DUR   Window end, DUR ago (default 0s: now)\n"
               "      --kind KIND   cpu: on-CPU samples (default); offcpu: time blocked or\n"
               "                    waiting for a CPU, by the stack it blocked in; wakeup:\n"
               "                    blocked time by the stack of the thread that ended it\n"
               "      --state LIST  offcpu/wakeup only: task states at the block, e.g. S,D\n"
               "                    (R preempted, S sleeping, D uninterruptible, T stopped,\n"
               "                    I idle kernel thread)\n"
               "      --lines       Name frames \"function (file:line)\" where debug info has them\n"
               "      --raw-names   Function names as in the symbol table, not demangled\n"
               "      --folded      Print folded stacks (flamegraph.pl, speedscope) instead;\n"
               "                    weights are samples (cpu) or microseconds (offcpu, wakeup)\n"
               "      --json        Print one JSON document with every stack instead\n"
               "      --limit N     Table rows to show (default %d, 0 for all)\n"
               "  -h, --help        Show this help\n"
               "\n"
               "DUR is one or more <number><unit> parts, units ns us ms s m h d (1h30m,\n"
               "500ms); a bare number is seconds.\n",
               COMM_LEN_MAX, QUERY_LIMIT_DEFAULT);
}

/* Reports what getopt_long() stopped at; opterr is off so every message has
 * the same "profctl: " form. */
static int bad_option(int c, char *const *argv) {
        const char *arg = argv[optind - 1];

        if (c == ':')
                return cli_usage_error("option '%s' needs a value", arg);
        /* long options in this file have values above 0xff; optopt holds one
         * when such an option was given "=value" it does not take */
        if (optopt > 0xff)
                return cli_usage_error("option '%s' takes no value", arg);
        if (optopt > 0)
                return cli_usage_error("unrecognized option '-%c'", optopt);
        return cli_usage_error("unrecognized option '%s'", arg);
}

/* Reads the next response line and checks it is of type expected. */
static int read_expected(conn *c, const char *op, const char *expected, json_t **ret_line,
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

static int status_write_now(FILE *f, const json_t *status) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return status_write(f, status, (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec);
}

/* status and flush: one request, one answer line, printed as sent (--json)
 * or by write_human. */
static int run_simple(int argc, char *argv[], const char *op, const char *answer,
                      void (*help)(void), int (*write_human)(FILE *f, const json_t *line)) {
        enum { ARG_JSON = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "json", no_argument, NULL, ARG_JSON },
                {}
        };
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL, *line = NULL;
        const char *raw;
        size_t raw_len;
        bool json = false;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_JSON:
                        json = true;
                        break;
                default:
                        bad_option(opt, argv);
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                cli_usage_error("%s takes no arguments, got '%s'", op, argv[optind]);
                return EXIT_USAGE;
        }

        request = json_pack("{ss}", "op", op);
        if (!request) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        r = conn_open(arg_socket, &c);
        if (r < 0)
                return EXIT_FAILURE;
        r = conn_send(c, request);
        if (r < 0)
                return EXIT_FAILURE;
        r = read_expected(c, op, answer, &line, &raw, &raw_len);
        if (r < 0)
                return EXIT_FAILURE;

        if (json) {
                fwrite(raw, 1, raw_len, stdout);
                fputc('\n', stdout);
        } else if (write_human(stdout, line) < 0)
                return EXIT_FAILURE;
        return EXIT_SUCCESS;
}

static int run_status(int argc, char *argv[]) {
        return run_simple(argc, argv, "status", "status", help_status, status_write_now);
}

static int run_flush(int argc, char *argv[]) {
        return run_simple(argc, argv, "flush", "flushed", help_flush, flushed_write);
}

typedef enum QueryOutput {
        QUERY_TABLE,
        QUERY_FOLDED,
        QUERY_JSON,
} QueryOutput;

struct query_args {
        uint64_t pid; /* 0: any */
        const char *comm;
        const char *since;
        const char *until;
        const char *kind;   /* NULL: profd's default, cpu */
        const char *state;
        bool lines;         /* show file:line where debug info has them */
        bool raw_names;     /* names as in the symbol table */
        QueryOutput output;
        size_t limit;
        bool limit_set;
};

/* Checks a duration option locally, so a typo is a usage error that names
 * the option rather than a round trip to profd. */
static int check_duration(const char *option, const char *value, uint64_t *ret_ns) {
        int r = parse_duration_ns(value, ret_ns);

        if (r == -ERANGE)
                return cli_usage_error("%s '%s' is too long a duration", option, value);
        if (r < 0)
                return cli_usage_error("%s '%s' is not a duration (like 10m, 1h30m or 500ms; "
                                       "whole numbers, no sign)", option, value);
        return 0;
}

/* Returns 1 to go on, 0 if --help was shown, -EINVAL on a usage error. */
static int query_parse_argv(int argc, char *argv[], struct query_args *a) {
        enum {
                ARG_PID = 0x100,
                ARG_COMM,
                ARG_SINCE,
                ARG_UNTIL,
                ARG_KIND,
                ARG_STATE,
                ARG_LINES,
                ARG_RAW_NAMES,
                ARG_FOLDED,
                ARG_JSON,
                ARG_LIMIT,
        };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h'        },
                { "pid",    required_argument, NULL, ARG_PID    },
                { "comm",   required_argument, NULL, ARG_COMM   },
                { "since",  required_argument, NULL, ARG_SINCE  },
                { "until",  required_argument, NULL, ARG_UNTIL  },
                { "kind",   required_argument, NULL, ARG_KIND   },
                { "state",  required_argument, NULL, ARG_STATE  },
                { "lines",  no_argument,       NULL, ARG_LINES  },
                { "raw-names", no_argument,    NULL, ARG_RAW_NAMES },
                { "folded", no_argument,       NULL, ARG_FOLDED },
                { "json",   no_argument,       NULL, ARG_JSON   },
                { "limit",  required_argument, NULL, ARG_LIMIT  },
                {}
        };
        bool folded = false, json = false;
        uint64_t since_ns = 0, until_ns = 0, u;
        int opt, r;

        *a = (struct query_args) { .limit = QUERY_LIMIT_DEFAULT };

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help_query();
                        return 0;
                case ARG_PID:
                        /* pid_t is an int; the running kernel's pid_max is
                         * lower, but profd knows which pids it saw */
                        r = parse_uint_strict(optarg, INT32_MAX, &a->pid);
                        if (r < 0 || a->pid == 0)
                                return cli_usage_error("--pid '%s' is not a process id (expected a "
                                                       "positive integer)", optarg);
                        break;
                case ARG_COMM: {
                        _cleanup_json_ json_t *probe = NULL;

                        if (!*optarg)
                                return cli_usage_error("--comm needs a command name, got ''");
                        if (strlen(optarg) > COMM_LEN_MAX)
                                return cli_usage_error("--comm '%s' is longer than the %d characters "
                                                       "the kernel keeps of a command name; try "
                                                       "'%.*s'", optarg, COMM_LEN_MAX,
                                                       COMM_LEN_MAX, optarg);
                        /* JSON strings must be UTF-8; jansson refuses others */
                        probe = json_string(optarg);
                        if (!probe)
                                return cli_usage_error("--comm '%s' is not valid UTF-8", optarg);
                        a->comm = optarg;
                        break;
                }
                case ARG_SINCE:
                        r = check_duration("--since", optarg, &since_ns);
                        if (r < 0)
                                return r;
                        a->since = optarg;
                        break;
                case ARG_UNTIL:
                        r = check_duration("--until", optarg, &until_ns);
                        if (r < 0)
                                return r;
                        a->until = optarg;
                        break;
                case ARG_KIND:
                        if (!streq(optarg, "cpu") && !streq(optarg, "offcpu") && !streq(optarg, "wakeup"))
                                return cli_usage_error("--kind '%s' is not known (expected cpu, offcpu "
                                                       "or wakeup)", optarg);
                        a->kind = optarg;
                        break;
                case ARG_STATE:
                        /* letters R S D T I, comma-separated; profd checks the same */
                        for (const char *p = optarg;; p += 2) {
                                if (!strchr("RSDTI", p[0]) || p[0] == '\0' || (p[1] != ',' && p[1] != '\0'))
                                        return cli_usage_error("--state '%s' is not a list of task states "
                                                               "(letters R, S, D, T, I separated by "
                                                               "commas, e.g. S,D)", optarg);
                                if (p[1] == '\0')
                                        break;
                        }
                        a->state = optarg;
                        break;
                case ARG_LINES:
                        a->lines = true;
                        break;
                case ARG_RAW_NAMES:
                        a->raw_names = true;
                        break;
                case ARG_FOLDED:
                        folded = true;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_LIMIT:
                        r = parse_uint_strict(optarg, SIZE_MAX, &u);
                        if (r < 0)
                                return cli_usage_error("--limit '%s' is not a row count (expected "
                                                       "0 for all, or a positive integer)", optarg);
                        a->limit = (size_t) u;
                        a->limit_set = true;
                        break;
                default:
                        return bad_option(opt, argv);
                }

        if (optind < argc)
                return cli_usage_error("query takes no arguments, got '%s'", argv[optind]);
        if (folded && json)
                return cli_usage_error("--folded and --json cannot be combined");
        if (a->state && (!a->kind || streq(a->kind, "cpu")))
                return cli_usage_error("--state applies to --kind offcpu and --kind wakeup");
        /* both stream every stack as profd sends it; cutting them off would
         * need them all in memory to find the largest first */
        if (a->limit_set && (folded || json))
                return cli_usage_error("--limit applies to the table; it cannot be combined "
                                       "with --%s", folded ? "folded" : "json");
        /* Only when both are given: otherwise the missing end is profd's
         * default, and profd checks the window itself. */
        if (a->since && a->until && since_ns < until_ns)
                return cli_usage_error("--since %s is later than --until %s (both count back "
                                       "from now, so --since is the longer one)",
                                       a->since, a->until);

        a->output = folded ? QUERY_FOLDED : json ? QUERY_JSON : QUERY_TABLE;
        return 1;
}

static const char *query_kind(const struct query_args *a) {
        return a->kind ? a->kind : "cpu";
}

/* Off-CPU and wakeup values are nanoseconds, cpu values sample counts. */
static bool kind_is_time(const struct query_args *a) {
        return !streq(query_kind(a), "cpu");
}

static json_t *query_request(const struct query_args *a) {
        _cleanup_json_ json_t *req = json_pack("{ss}", "op", "query");

        /* only what the user gave: profd's defaults stay profd's */
        if (!req ||
            (a->kind && json_object_set_new(req, "kind", json_string(a->kind)) < 0) ||
            (a->state && json_object_set_new(req, "state", json_string(a->state)) < 0) ||
            (a->raw_names && json_object_set_new(req, "raw_names", json_true()) < 0) ||
            (a->since && json_object_set_new(req, "since", json_string(a->since)) < 0) ||
            (a->until && json_object_set_new(req, "until", json_string(a->until)) < 0) ||
            (a->pid > 0 && json_object_set_new(req, "pid", json_integer((json_int_t) a->pid)) < 0) ||
            (a->comm && json_object_set_new(req, "comm", json_string(a->comm)) < 0))
                return NULL;
        return TAKE_PTR(req);
}

/* What the "end" line says, checked against what was streamed before it. */
struct query_end {
        uint64_t stacks;
        uint64_t total;
        uint64_t from_ns;
        uint64_t to_ns;
};

static int query_end_parse(const json_t *line, uint64_t n_stacks, uint64_t sum, struct query_end *ret) {
        int r;

        if ((r = response_get_u64(line, "end", "stacks", &ret->stacks)) < 0 ||
            (r = response_get_u64(line, "end", "total", &ret->total)) < 0 ||
            (r = response_get_u64(line, "end", "from_ns", &ret->from_ns)) < 0 ||
            (r = response_get_u64(line, "end", "to_ns", &ret->to_ns)) < 0)
                return r;
        /* a mismatch means stacks were lost on the way: the numbers printed
         * would be wrong, so don't pretend they are fine */
        if (ret->stacks != n_stacks)
                return cli_error(-EBADMSG, "profd's answer ends with \"stacks\":%" PRIu64
                                 " but it sent %" PRIu64 " stack lines", ret->stacks, n_stacks);
        if (ret->total != sum)
                return cli_error(-EBADMSG, "profd's answer ends with \"total\":%" PRIu64
                                 " but its stacks add up to %" PRIu64, ret->total, sum);
        return 0;
}

static int query_stream(const struct query_args *a) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        _cleanup_top_table_ top_table *table = NULL;
        _cleanup_(stack_done) struct stack stack = {};
        struct query_end end = {};
        uint64_t n_stacks = 0, sum = 0;
        int r;

        request = query_request(a);
        if (!request)
                return cli_error(-ENOMEM, "%m");
        if (a->output == QUERY_TABLE) {
                table = top_table_new();
                if (!table)
                        return cli_error(-ENOMEM, "%m");
        }

        r = conn_open(arg_socket, &c);
        if (r < 0)
                return r;
        r = conn_send(c, request);
        if (r < 0)
                return r;

        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw;
                size_t raw_len;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return r;
                if (streq(type, "end")) {
                        r = query_end_parse(line, n_stacks, sum, &end);
                        if (r < 0)
                                return r;
                        break;
                }
                if (!streq(type, "stack"))
                        return cli_error(-EBADMSG, "profd answered 'query' with an unexpected "
                                         "'%s' line", type);

                r = stack_parse(&stack, line, a->lines);
                if (r < 0)
                        return r;
                if (__builtin_add_overflow(sum, stack.value, &sum))
                        return cli_error(-EBADMSG, "profd sent stack values that add up to more "
                                         "than 2^64");
                n_stacks++;

                switch (a->output) {
                case QUERY_FOLDED:
                        /* off-CPU weights are microseconds (rounded): flamegraph.pl
                         * wants integers, and nanoseconds overflow its counts */
                        if (folded_write_line(stdout, stack.frames, stack.n_frames,
                                              kind_is_time(a) ? (stack.value + 500) / 1000 : stack.value) < 0)
                                return cli_error(-EIO, "cannot write to standard output");
                        break;
                case QUERY_JSON:
                        /* The array is written as the stacks arrive, each as
                         * profd sent it, one per line: the document can hold
                         * more stacks than would fit in memory at once. */
                        fputs(n_stacks == 1 ? "{\"stacks\":[\n" : ",\n", stdout);
                        fwrite(raw, 1, raw_len, stdout);
                        break;
                case QUERY_TABLE:
                        r = top_table_add(table, &stack);
                        if (r < 0)
                                return cli_error(r, "%m");
                        break;
                }
        }

        switch (a->output) {
        case QUERY_FOLDED:
                break;
        case QUERY_JSON:
                printf("%s],\"kind\":\"%s\",\"unit\":\"%s\",\"total\":%" PRIu64 ",\"stacks_count\":%" PRIu64
                       ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 "}\n",
                       n_stacks == 0 ? "{\"stacks\":[" : "\n", query_kind(a), kind_is_time(a) ? "ns" : "samples",
                       end.total, end.stacks, end.from_ns, end.to_ns);
                break;
        case QUERY_TABLE:
                if (end.total == 0)
                        break;
                r = top_table_write(table, stdout, end.total, end.from_ns, end.to_ns, a->limit, query_kind(a));
                if (r < 0)
                        return cli_error(r, "cannot write the table: %m");
                break;
        }
        /* nothing matching is an answer, not an error: stdout stays a valid
         * (empty) document, and a person still learns why it is empty */
        if (end.total == 0) {
                fflush(stdout);
                fputs("no samples match\n", stderr);
        }
        return 0;
}

static int run_query(int argc, char *argv[]) {
        struct query_args a;
        int r;

        r = query_parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return query_stream(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Returns 1 to go on with a command, 0 if help or the version was shown,
 * -EINVAL on a usage error. */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_SOCKET = 0x100, ARG_VERSION };
        static const struct option options[] = {
                { "help",    no_argument,       NULL, 'h'         },
                { "socket",  required_argument, NULL, ARG_SOCKET  },
                { "version", no_argument,       NULL, ARG_VERSION },
                {}
        };
        const char *env;
        int opt;

        opterr = 0;
        /* "+": stop at the command, whose options are its own */
        while ((opt = getopt_long(argc, argv, "+:h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help_global();
                        return 0;
                case ARG_SOCKET:
                        if (!*optarg)
                                return cli_usage_error("--socket needs a path, got ''");
                        arg_socket = optarg;
                        break;
                case ARG_VERSION:
                        printf("profctl %s\n", PROFD_VERSION);
                        return 0;
                default:
                        return bad_option(opt, argv);
                }

        if (!arg_socket) {
                env = getenv("PROFD_SOCKET");
                arg_socket = env && *env ? env : PROFD_DEFAULT_SOCKET;
        }
        if (optind >= argc)
                return cli_usage_error("missing command (status, flush or query)");
        return 1;
}

static const struct {
        const char *name;
        int (*run)(int argc, char *argv[]);
} commands[] = {
        { "status", run_status },
        { "flush",  run_flush  },
        { "query",  run_query  },
};

int main(int argc, char *argv[]) {
        int r, status = -1;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;

        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(argv[optind], commands[i].name)) {
                        /* the command sees itself as argv[0], as getopt wants */
                        status = commands[i].run(argc - optind, argv + optind);
                        break;
                }
        if (status < 0) {
                cli_usage_error("unknown command '%s'", argv[optind]);
                return EXIT_USAGE;
        }

        /* Buffered output may fail only now (a full disk behind a redirect);
         * a script must not take a truncated result for a whole one. */
        if (fflush(stdout) != 0 || ferror(stdout)) {
                cli_error(-EIO, "cannot write to standard output");
                return EXIT_FAILURE;
        }
        return status;
}
