/* profctl: command line and commands of profd's client; the wire protocol is
 * docs/protocol.md, the views are in render.c and views.c, their JSON shapes
 * in docs/profctl.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "duration.h"
#include "filters.h"
#include "fleet.h"
#include "flame.h"
#include "folded.h"
#include "macro.h"
#include "pprof.h"
#include "profile.h"
#include "render.h"
#include "util.h"
#include "views.h"

/* Enough to see where the time went on one screen; --limit 0 shows all. */
#define QUERY_LIMIT_DEFAULT 25

static const char *arg_socket = NULL;
/* Fleet mode: answers come from ClickHouse (fleet.h), not profd's socket. */
static const char *arg_clickhouse = NULL;
static const char *arg_clickhouse_credentials = NULL;

static void help_global(void) {
        printf("Usage: profctl [--socket PATH] COMMAND [OPTIONS]\n"
               "       profctl --clickhouse URL [--clickhouse-credentials FILE] COMMAND [OPTIONS]\n"
               "\n"
               "Ask profd, the system-wide sampling profiler, what it has seen.\n"
               "\n"
               "Commands:\n"
               "  status [--json]   What profd samples, how much it stored, what it dropped\n"
               "  flush [--json]    Make profd store the samples it holds now\n"
               "  query [OPTIONS]   Where the time went: table, folded, tree, JSON, SVG, pprof\n"
               "  series [OPTIONS]  Samples (or off-CPU time) per second, to see when it started\n"
               "  diff [OPTIONS]    What changed between a baseline and the current window\n"
               "  top [OPTIONS]     Live view of the hottest functions, refreshed every second\n"
               "  init [--cluster NAME]  With --clickhouse: create profd's schema in ClickHouse\n"
               "\n"
               "With --clickhouse, query, series and diff ask ClickHouse for the profiles a\n"
               "fleet of profd hosts exported, with the same filters and views, and --host.\n"
               "\n"
               "'profctl COMMAND --help' shows a command's options.\n"
               "\n"
               "Options:\n"
               "      --socket PATH  profd's socket (default: $PROFD_SOCKET, else %s)\n"
               "      --clickhouse URL  Ask ClickHouse's HTTP interface (http://HOST:8123/)\n"
               "                     for the fleet instead of the local profd\n"
               "      --clickhouse-credentials FILE  ClickHouse user and password, lines\n"
               "                     'user = NAME' and 'password = SECRET' (default: user\n"
               "                     default, no password)\n"
               "  -h, --help         Show this help\n"
               "      --version      Show the version\n"
               "\n"
               "Exit status: 0 success (also when nothing matched: that is said on stderr),\n"
               "1 profd (or ClickHouse) answered with an error or could not be reached, 2 the\n"
               "command line is wrong.\n",
               PROFD_DEFAULT_SOCKET);
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

static const char duration_help[] =
        "DUR is one or more <number><unit> parts, units ns us ms s m h d (1h30m,\n"
        "500ms); a bare number is seconds. REGEX is a POSIX extended regular\n"
        "expression matched against function names.\n";

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

static void help_series(void) {
        printf("Usage: profctl series [FILTERS] [--step DUR] [--json] [--output FILE]\n"
               "\n"
               "Show, per step of time, the samples per second (--kind cpu) or milliseconds\n"
               "per second spent off the CPU (offcpu, wakeup) of what the filters match, with\n"
               "a bar per line: when did it start, when did it stop? Steps without samples\n"
               "between the first and the last show as 0. COMPLETE is the share of the step\n"
               "with complete stacks: when did the picture get worse? A summary of the\n"
               "window's quality follows on stderr.\n"
               "\n"
               "%s"
               "\n"
               "Options:\n"
               "      --step DUR       Length of one step (default: profd's, see the output)\n"
               "      --json           One JSON document with every point\n"
               "      --output FILE    Write to FILE instead of standard output\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, duration_help);
}

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

static void help_init(void) {
        printf("Usage: profctl --clickhouse URL [--clickhouse-credentials FILE] init [--cluster NAME]\n"
               "\n"
               "Create profd's schema (docs/clickhouse.md) on the ClickHouse server at URL:\n"
               "the database profd, the local tables a shard holds and, with --cluster, the\n"
               "Distributed tables over the shards of cluster NAME (remote_servers in the\n"
               "servers' configuration). Run it on every server of the cluster. Without\n"
               "--cluster the server is a fleet store of its own. An existing schema of the\n"
               "same version is kept as it is; one of another version is left untouched and\n"
               "is an error.\n"
               "\n"
               "Options:\n"
               "      --cluster NAME  The cluster the Distributed tables span\n"
               "  -h, --help          Show this help\n");
}

static void help_top(void) {
        printf("Usage: profctl top [FILTERS] [OPTIONS]\n"
               "\n"
               "A live table of the hottest functions, like perf top, asked again every second\n"
               "for the newest data: by default the most recent drain (profd stores samples\n"
               "once per drain interval), or a sliding window of --window. On a terminal the\n"
               "table is redrawn in place and 'q' quits; otherwise one table is printed per\n"
               "refresh.\n"
               "\n"
               "%s"
               "\n"
               "Options:\n"
               "      --window DUR     Show the last DUR (sliding) instead of the last drain\n"
               "      --by WHAT        Rows by function (default), line or module\n"
               "      --children       Sort by TOTAL instead of SELF\n"
               "      --limit N        Rows (default: what fits the terminal, else %d)\n"
               "      --iterations N   Stop after N refreshes (default: until 'q' or a signal)\n"
               "      --json           Print each refresh as one line of JSON: the table of\n"
               "                       'query --format table --json'\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, QUERY_LIMIT_DEFAULT, duration_help);
}

#define IN_SET_FORMAT(x, a, b, c) ((x) == (a) || (x) == (b) || (x) == (c))
/* A switch over an enum that handled every value before reaching here. */
#define assert_not_reached() abort()

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

/* The connection a command's requests go to: profd's socket, or with
 * --clickhouse the fleet in ClickHouse, after checking that it answers and
 * holds the schema profctl reads. */
static int profctl_connect(conn **ret) {
        _cleanup_fleet_ fleet *f = NULL;
        int r;

        if (!arg_clickhouse)
                return conn_open(arg_socket, ret);
        r = fleet_open(arg_clickhouse, arg_clickhouse_credentials, &f);
        if (r < 0)
                return r;
        r = fleet_check_schema(f);
        if (r < 0)
                return r;
        return conn_open_fleet(TAKE_PTR(f), ret);
}

/* --host and --root host select among a fleet's hosts: without
 * --clickhouse there is one host, profd's. */
static int check_fleet_options(const struct filters *f, const char *root) {
        if (f->host && !arg_clickhouse)
                return cli_usage_error("--host selects hosts of a fleet: give --clickhouse URL (before the "
                                       "command)");
        if (root && streq(root, "host") && !arg_clickhouse)
                return cli_usage_error("--root host groups a fleet by host: give --clickhouse URL (before the "
                                       "command)");
        if (root && streq(root, "thread") && arg_clickhouse)
                return cli_usage_error("--root thread: thread names are kept in the local store only, not "
                                       "exported to ClickHouse");
        return 0;
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

/* ---- output: standard output or a file replaced only when complete ---- */

struct output {
        FILE *f;
        const char *path; /* NULL: standard output */
        char *tmp_path;
};

/* A file given by --output is written beside itself under a temporary name
 * and renamed over it at the end: a failed query leaves the old file, not a
 * truncated one a script would take for whole. */
static int output_open(struct output *o, const char *path) {
        _cleanup_free_ char *tmp = NULL;
        mode_t mask;
        int fd;

        *o = (struct output) { .f = stdout, .path = path };
        if (!path)
                return 0;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return cli_error(-ENOMEM, "%m");
        fd = mkstemp(tmp);
        if (fd < 0)
                return cli_error(negative_errno(), "cannot create '%s': %m", tmp);
        /* mkstemp makes 0600; a file from the shell would be 0666 & ~umask */
        mask = umask(0);
        umask(mask);
        (void) fchmod(fd, 0666 & ~mask);
        o->f = fdopen(fd, "w");
        if (!o->f) {
                int r = negative_errno();
                close(fd);
                unlink(tmp);
                return cli_error(r, "cannot open '%s': %m", tmp);
        }
        o->tmp_path = TAKE_PTR(tmp);
        return 0;
}

/* ok: the output is complete. Returns 0, or -EIO after an error message. */
static int output_close(struct output *o, bool ok) {
        int r = 0;

        if (!o->tmp_path)
                return 0;
        if (fclose(o->f) != 0 && ok)
                r = cli_error(negative_errno(), "cannot write '%s': %m", o->path);
        o->f = NULL;
        if (ok && r == 0 && rename(o->tmp_path, o->path) < 0)
                r = cli_error(negative_errno(), "cannot rename '%s' to '%s': %m", o->tmp_path, o->path);
        if (!ok || r < 0)
                unlink(o->tmp_path);
        free(o->tmp_path);
        o->tmp_path = NULL;
        return r;
}

/* ---- requests and their streamed answers ---- */

/* What a stream of stack lines is handed to. */
typedef int (*stack_handler)(void *userdata, const json_t *line, const char *raw, size_t raw_len);

struct answer_end {
        uint64_t stacks, total, from_ns, to_ns;
        struct quality quality;
        bool have_quality;      /* false from a profd before quality reports */
        json_t *by_host;        /* a fleet answer's "quality_by_host" (a reference of its own); NULL: none */
        json_t *line;
};

static void answer_end_done(struct answer_end *e) {
        json_decref(e->line);
        json_decref(e->by_host);
}

/* Sends request on c and hands every "stack" line to on_stack, then checks
 * the "end" line against what came before it: a mismatch means stacks were
 * lost on the way and the numbers would be wrong, so it is an error. */
static int query_send_and_read(conn *c, const json_t *request, stack_handler on_stack, void *userdata,
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
                if (streq(type, "end")) {
                        if ((r = response_get_u64(line, "end", "stacks", &ret_end->stacks)) < 0 ||
                            (r = response_get_u64(line, "end", "total", &ret_end->total)) < 0 ||
                            (r = response_get_u64(line, "end", "from_ns", &ret_end->from_ns)) < 0 ||
                            (r = response_get_u64(line, "end", "to_ns", &ret_end->to_ns)) < 0)
                                return r;
                        if (json_object_get(line, "rows") || n_rows > 0) {
                                uint64_t rows;

                                /* a table's rows: the stacks stayed in ClickHouse */
                                if ((r = response_get_u64(line, "end", "rows", &rows)) < 0)
                                        return r;
                                if (rows != n_rows || n_stacks > 0)
                                        return cli_error(-EBADMSG, "the fleet's answer ends with \"rows\":%" PRIu64
                                                         " but it sent %" PRIu64 " row and %" PRIu64 " stack lines",
                                                         rows, n_rows, n_stacks);
                        } else if (ret_end->stacks != n_stacks)
                                return cli_error(-EBADMSG, "profd's answer ends with \"stacks\":%" PRIu64
                                                 " but it sent %" PRIu64 " stack lines", ret_end->stacks, n_stacks);
                        if (n_rows == 0 && !json_object_get(line, "rows") && ret_end->total != sum)
                                return cli_error(-EBADMSG, "profd's answer ends with \"total\":%" PRIu64
                                                 " but its stacks add up to %" PRIu64, ret_end->total, sum);
                        if (json_object_get(line, "quality")) {
                                if (quality_from_json(json_object_get(line, "quality"), &ret_end->quality) < 0)
                                        return cli_error(-EBADMSG, "profd's answer ends with a \"quality\" that "
                                                         "is not a report of unsigned integers");
                                ret_end->have_quality = true;
                        }
                        if (json_object_get(line, "quality_by_host")) {
                                if (quality_by_host_check(json_object_get(line, "quality_by_host")) < 0)
                                        return cli_error(-EBADMSG, "the fleet's answer ends with a "
                                                         "\"quality_by_host\" that is not an object of reports");
                                ret_end->by_host = json_incref(json_object_get(line, "quality_by_host"));
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
static int profile_ask_frequency(conn *c, profile *p) {
        _cleanup_json_ json_t *request = json_pack("{ss}", "op", "status"), *line = NULL;
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
static int profile_fetch(conn *c, const json_t *request, profile **ret) {
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
static void no_samples_message(const struct filters *f, uint64_t from_ns, uint64_t to_ns, const char *where) {
        _cleanup_free_ char *filters = filters_describe(f);
        char from[64], to[64];

        fflush(stdout);
        fprintf(stderr, "no samples%s%s%s from %s to %s\n", filters && *filters ? " match " : "",
                filters && *filters ? filters : "", where ? where : "",
                format_local_time(from, sizeof(from), from_ns), format_local_time(to, sizeof(to), to_ns));
}

static int parse_limit(const char *arg, size_t *ret) {
        uint64_t u;

        if (parse_uint_strict(arg, SIZE_MAX, &u) < 0)
                return cli_usage_error("--limit '%s' is not a row count (expected 0 for all, or a "
                                       "positive integer)", arg);
        *ret = (size_t) u;
        return 0;
}

static int parse_by(const char *arg, TopBy *ret) {
        if (top_by_from_string(arg, ret) < 0)
                return cli_usage_error("--by '%s' is not known (expected function, line or module)", arg);
        return 0;
}

static int compile_regex(const char *option, const char *arg, regex_t *re) {
        char msg[256];
        int r;

        /* REG_NOSUB: only whether it matches counts */
        r = regcomp(re, arg, REG_EXTENDED | REG_NOSUB);
        if (r != 0) {
                regerror(r, re, msg, sizeof(msg));
                return cli_usage_error("%s '%s' is not a valid regular expression: %s", option, arg, msg);
        }
        return 0;
}

/* ---- query ---- */

typedef enum QueryFormat {
        FORMAT_TABLE,
        FORMAT_FOLDED,
        FORMAT_JSON,
        FORMAT_TREE,
        FORMAT_SVG,
        FORMAT_PPROF,
        _FORMAT_MAX,
} QueryFormat;

static const char *const format_names[_FORMAT_MAX] = {
        [FORMAT_TABLE] = "table",
        [FORMAT_FOLDED] = "folded",
        [FORMAT_JSON] = "json",
        [FORMAT_TREE] = "tree",
        [FORMAT_SVG] = "svg",
        [FORMAT_PPROF] = "pprof",
};

static int parse_format(const char *arg, QueryFormat *ret) {
        for (size_t i = 0; i < _FORMAT_MAX; i++)
                if (streq(arg, format_names[i])) {
                        *ret = (QueryFormat) i;
                        return 0;
                }
        return -EINVAL;
}

struct query_args {
        struct filters filters;
        QueryFormat format;
        bool json;              /* the view as JSON */
        const char *output;
        TopBy by;
        bool by_set, children;
        size_t limit;
        bool limit_set;
        bool lines, raw_names;
        const char *root;       /* "process", "unit", "thread" or NULL */
        regex_t focus, hide;
        const char *focus_text, *hide_text;
        size_t max_depth;
        bool max_depth_set;
        bool icicle;
        const char *title;
        bool quality;           /* --quality: the report alone */
};

static void query_args_done(struct query_args *a) {
        if (a->focus_text)
                regfree(&a->focus);
        if (a->hide_text)
                regfree(&a->hide);
}

/* Options only some formats use: naming the one that does not fit beats
 * ignoring it. */
static int check_applies(bool given, const char *option, bool applies, const char *to) {
        if (given && !applies)
                return cli_usage_error("%s applies to %s", option, to);
        return 0;
}

/* Returns 1 to go on, 0 if --help was shown, -EINVAL on a usage error. */
static int query_parse_argv(int argc, char *argv[], struct query_args *a) {
        enum {
                ARG_FORMAT = FILTER_OPTION_END,
                ARG_FOLDED,
                ARG_JSON,
                ARG_OUTPUT,
                ARG_BY,
                ARG_CHILDREN,
                ARG_LIMIT,
                ARG_LINES,
                ARG_RAW_NAMES,
                ARG_ROOT,
                ARG_FOCUS,
                ARG_HIDE,
                ARG_MAX_DEPTH,
                ARG_ICICLE,
                ARG_TITLE,
                ARG_QUALITY,
        };
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h'           },
                FILTER_OPTIONS,
                { "format",    required_argument, NULL, ARG_FORMAT    },
                { "folded",    no_argument,       NULL, ARG_FOLDED    },
                { "json",      no_argument,       NULL, ARG_JSON      },
                { "output",    required_argument, NULL, ARG_OUTPUT    },
                { "by",        required_argument, NULL, ARG_BY        },
                { "children",  no_argument,       NULL, ARG_CHILDREN  },
                { "limit",     required_argument, NULL, ARG_LIMIT     },
                { "lines",     no_argument,       NULL, ARG_LINES     },
                { "raw-names", no_argument,       NULL, ARG_RAW_NAMES },
                { "root",      required_argument, NULL, ARG_ROOT      },
                { "focus",     required_argument, NULL, ARG_FOCUS     },
                { "hide",      required_argument, NULL, ARG_HIDE      },
                { "max-depth", required_argument, NULL, ARG_MAX_DEPTH },
                { "icicle",    no_argument,       NULL, ARG_ICICLE    },
                { "title",     required_argument, NULL, ARG_TITLE     },
                { "quality",   no_argument,       NULL, ARG_QUALITY   },
                {}
        };
        bool folded = false, format_set = false;
        QueryFormat format = FORMAT_TABLE;
        uint64_t u;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                r = filters_parse_option(&a->filters, opt, optarg);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                switch (opt) {
                case 'h':
                        help_query();
                        return 0;
                case ARG_FORMAT:
                        if (parse_format(optarg, &format) < 0)
                                return cli_usage_error("--format '%s' is not known (expected table, folded, "
                                                       "json, tree, svg or pprof)", optarg);
                        if (format_set && format != a->format)
                                return cli_usage_error("--format given twice, as %s and %s",
                                                       format_names[a->format], optarg);
                        a->format = format;
                        format_set = true;
                        break;
                case ARG_FOLDED:
                        folded = true;
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
                        r = parse_by(optarg, &a->by);
                        if (r < 0)
                                return r;
                        a->by_set = true;
                        break;
                case ARG_CHILDREN:
                        a->children = true;
                        break;
                case ARG_LIMIT:
                        r = parse_limit(optarg, &a->limit);
                        if (r < 0)
                                return r;
                        a->limit_set = true;
                        break;
                case ARG_LINES:
                        a->lines = true;
                        break;
                case ARG_RAW_NAMES:
                        a->raw_names = true;
                        break;
                case ARG_ROOT:
                        if (!streq(optarg, "process") && !streq(optarg, "unit") && !streq(optarg, "thread") &&
                            !streq(optarg, "host"))
                                return cli_usage_error("--root '%s' is not known (expected process, unit, thread or "
                                                       "host)", optarg);
                        a->root = optarg;
                        break;
                case ARG_FOCUS:
                case ARG_HIDE: {
                        bool focus = opt == ARG_FOCUS;
                        regex_t *re = focus ? &a->focus : &a->hide;
                        const char **text = focus ? &a->focus_text : &a->hide_text;

                        if (*text) {
                                regfree(re);
                                *text = NULL;
                        }
                        r = compile_regex(focus ? "--focus" : "--hide", optarg, re);
                        if (r < 0)
                                return r;
                        *text = optarg;
                        break;
                }
                case ARG_MAX_DEPTH:
                        r = parse_uint_strict(optarg, SIZE_MAX, &u);
                        if (r < 0 || u == 0)
                                return cli_usage_error("--max-depth '%s' is not a depth (expected a "
                                                       "positive integer)", optarg);
                        a->max_depth = (size_t) u;
                        a->max_depth_set = true;
                        break;
                case ARG_ICICLE:
                        a->icicle = true;
                        break;
                case ARG_TITLE:
                        a->title = optarg;
                        break;
                case ARG_QUALITY:
                        a->quality = true;
                        break;
                default:
                        return bad_option(opt, argv);
                }
        }

        if (optind < argc)
                return cli_usage_error("query takes no arguments, got '%s'", argv[optind]);
        r = filters_check(&a->filters);
        if (r < 0)
                return r;
        r = check_fleet_options(&a->filters, a->root);
        if (r < 0)
                return r;

        /* the report alone, as text or (--json) as JSON: no view to pick */
        if (a->quality && (folded || format_set))
                return cli_usage_error("--quality prints only the quality report; drop --format/--folded "
                                       "(--json gives it as JSON)");
        /* --folded and --json: the old shorthands for --format */
        if (folded) {
                if (a->json)
                        return cli_usage_error("--folded and --json cannot be combined");
                if (format_set && a->format != FORMAT_FOLDED)
                        return cli_usage_error("--folded and --format %s cannot be combined",
                                               format_names[a->format]);
                a->format = FORMAT_FOLDED;
        } else if (a->json && !format_set && !a->quality)
                a->format = FORMAT_JSON;
        if (a->json && !IN_SET_FORMAT(a->format, FORMAT_TABLE, FORMAT_TREE, FORMAT_JSON))
                return cli_usage_error("--json cannot be combined with --format %s (JSON is there for "
                                       "the table, the tree and the stacks: --format json)",
                                       format_names[a->format]);

        if ((r = check_applies(a->by_set, "--by", a->format == FORMAT_TABLE, "--format table")) < 0 ||
            (r = check_applies(a->children, "--children", a->format == FORMAT_TABLE, "--format table")) < 0 ||
            /* folded and json stream every stack as profd sends it; cutting
             * them off would need them all in memory to find the largest */
            (r = check_applies(a->limit_set, "--limit", a->format == FORMAT_TABLE, "--format table")) < 0 ||
            (r = check_applies(a->root, "--root", a->format != FORMAT_TABLE,
                               "--format folded, tree, json, svg and pprof")) < 0 ||
            (r = check_applies(a->focus_text, "--focus", a->format == FORMAT_TREE, "--format tree")) < 0 ||
            (r = check_applies(a->hide_text, "--hide", a->format == FORMAT_TREE, "--format tree")) < 0 ||
            (r = check_applies(a->max_depth_set, "--max-depth", a->format == FORMAT_TREE, "--format tree")) < 0 ||
            (r = check_applies(a->icicle, "--icicle", a->format == FORMAT_SVG, "--format svg")) < 0 ||
            (r = check_applies(a->title, "--title", a->format == FORMAT_SVG, "--format svg")) < 0)
                return r;
        if (a->by_set && a->by == TOP_BY_LINE && a->lines)
                return cli_usage_error("--by line already names rows by file:line; drop --lines");
        if (a->format == FORMAT_PPROF && !a->output && isatty(STDOUT_FILENO))
                return cli_usage_error("--format pprof writes gzipped binary data; give --output FILE "
                                       "or redirect standard output");
        if (!a->limit_set)
                a->limit = QUERY_LIMIT_DEFAULT;
        return 1;
}

static json_t *query_request(const struct query_args *a) {
        _cleanup_json_ json_t *req = json_pack("{ss}", "op", "query");

        if (!req || filters_to_request(&a->filters, req) < 0 ||
            (a->raw_names && json_object_set_new(req, "raw_names", json_true()) < 0) ||
            (a->root && json_object_set_new(req, "group", json_string(a->root)) < 0))
                return NULL;
        /* folded output needs only names: profd sends each stack as one
         * folded string, a fraction of the bytes of its frames (most of
         * what reading a large answer cost profctl was parsing them); the
         * quality report alone needs no frames at all, so the same */
        /* a fleet sums the table itself (ClickHouse), when it is told
         * how: rows instead of stacks */
        if (arg_clickhouse && a->format == FORMAT_TABLE && !a->quality) {
                json_t *t = json_pack("{ss, sb, sb, sI}", "by", top_by_to_string(a->by), "children", a->children,
                                      "lines", a->lines, "limit", (json_int_t) a->limit);

                if (!t || json_object_set_new(req, "table", t) < 0)
                        return NULL;
        }
        if ((a->format == FORMAT_FOLDED || a->quality) &&
            (json_object_set_new(req, "format", json_string("folded")) < 0 ||
             (a->lines && json_object_set_new(req, "lines", json_true()) < 0)))
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

        if ((r = response_get_string(line, "stack", "folded", &folded)) < 0 ||
            (r = response_get_u64(line, "stack", "value", &value)) < 0)
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
        switch (x->a->format) {
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
                r = stack_parse(&x->stack, line, x->a->lines || x->a->by == TOP_BY_LINE);
                if (r < 0)
                        return r;
                r = top_table_add(x->table, &x->stack);
                return r < 0 ? cli_error(r, "%m") : 0;
        default:
                assert_not_reached();
        }
}

/* table, folded, json: written as the answer streams in. */
static int query_stream(conn *c, const struct query_args *a, const json_t *request, FILE *out,
                        struct answer_end *end) {
        struct stream_ctx x = { .a = a, .out = out };
        int r;

        if (a->format == FORMAT_TABLE) {
                x.table = top_table_new(a->by);
                if (!x.table)
                        return cli_error(-ENOMEM, "%m");
        }
        r = query_send_and_read(c, request, stream_on_stack, &x, end);
        if (r >= 0)
                switch (a->format) {
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
                        fprintf(out, "%s],\"kind\":\"%s\",\"unit\":\"%s\",\"total\":%" PRIu64
                                ",\"stacks_count\":%" PRIu64 ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
                                "%s%s%s%s}\n",
                                x.n == 0 ? "{\"stacks\":[" : "\n", filters_kind(&a->filters),
                                filters_kind_is_time(&a->filters) ? "ns" : "samples",
                                end->total, end->stacks, end->from_ns, end->to_ns,
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
                                .limit = a->limit,
                                .children = a->children,
                                .quality = end->have_quality ? &end->quality : NULL,
                                .quality_by_host = end->by_host,
                        };

                        if (a->json)
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

        switch (a->format) {
        case FORMAT_TREE: {
                _cleanup_view_tree_ view_tree *t = NULL;
                struct tree_opts o = {
                        .focus = a->focus_text ? &a->focus : NULL,
                        .focus_text = a->focus_text,
                        .hide = a->hide_text ? &a->hide : NULL,
                        .max_depth = a->max_depth,
                        .lines = a->lines,
                        .root_group = a->root != NULL,
                };

                r = view_tree_build(p, &o, &t);
                if (r < 0)
                        return cli_error(r, "%m");
                if (a->json)
                        r = view_tree_write_json(t, out);
                else if (p->total > 0 && view_tree_matched(t) > 0)
                        r = view_tree_write(t, out);
                if (r < 0)
                        return cli_error(r, "cannot write the tree: %m");
                if (p->total > 0 && view_tree_matched(t) == 0) {
                        fflush(out);
                        fprintf(stderr, "no frame matches --focus '%s' in the %" PRIu64 " stacks of the window\n",
                                a->focus_text, (uint64_t) p->n_stacks);
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
                struct flame_opts o = { .title = a->title, .icicle = a->icicle };

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
        if (a->json) {
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
        _cleanup_free_ char *s = NULL;

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
        s = quality_summary(&end->quality);
        fprintf(stderr, "%s\n", s ? s : "quality: (out of memory)");
}

static int query_run(const struct query_args *a) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        struct answer_end end = {};
        struct output out;
        int r;

        request = query_request(a);
        if (!request)
                return cli_error(-ENOMEM, "%m");
        r = profctl_connect(&c);
        if (r < 0)
                return r;
        r = output_open(&out, a->output);
        if (r < 0)
                return r;

        if (a->quality)
                r = query_quality(c, a, request, out.f, &end);
        else if (IN_SET_FORMAT(a->format, FORMAT_TABLE, FORMAT_FOLDED, FORMAT_JSON))
                r = query_stream(c, a, request, out.f, &end);
        else
                r = query_whole(c, a, request, out.f, &end);
        if (r >= 0 && (fflush(out.f) != 0 || ferror(out.f)))
                r = cli_error(-EIO, "cannot write %s", a->output ? a->output : "to standard output");
        if (output_close(&out, r >= 0) < 0)
                r = -EIO;
        if (r >= 0 && end.total == 0 && !a->quality)
                no_samples_message(&a->filters, end.from_ns, end.to_ns, NULL);
        /* JSON carries the whole report; --quality is the report */
        else if (r >= 0 && !a->json && !a->quality && a->format != FORMAT_JSON)
                quality_summary_write(&end);
        answer_end_done(&end);
        return r;
}

static int run_query(int argc, char *argv[]) {
        _cleanup_(query_args_done) struct query_args a = {};
        int r;

        r = query_parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return query_run(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- series ---- */

static int run_series(int argc, char *argv[]) {
        enum {
                ARG_STEP = FILTER_OPTION_END,
                ARG_JSON,
                ARG_OUTPUT,
        };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h'        },
                FILTER_OPTIONS,
                { "step",   required_argument, NULL, ARG_STEP   },
                { "json",   no_argument,       NULL, ARG_JSON   },
                { "output", required_argument, NULL, ARG_OUTPUT },
                {}
        };
        struct filters f = {};
        const char *step = NULL, *output = NULL;
        bool json = false;
        _cleanup_conn_ conn *c = NULL;
        _cleanup_json_ json_t *request = NULL;
        _cleanup_(series_done) struct series s = {};
        struct output out;
        uint64_t step_ns;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                r = filters_parse_option(&f, opt, optarg);
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (opt) {
                case 'h':
                        help_series();
                        return EXIT_SUCCESS;
                case ARG_STEP:
                        if (filters_check_duration("--step", optarg, &step_ns) < 0)
                                return EXIT_USAGE;
                        if (step_ns == 0) {
                                cli_usage_error("--step must be longer than 0");
                                return EXIT_USAGE;
                        }
                        step = optarg;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_OUTPUT:
                        if (!*optarg) {
                                cli_usage_error("--output needs a file name, got ''");
                                return EXIT_USAGE;
                        }
                        output = optarg;
                        break;
                default:
                        bad_option(opt, argv);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_usage_error("series takes no arguments, got '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (filters_check(&f) < 0 || check_fleet_options(&f, NULL) < 0)
                return EXIT_USAGE;

        request = json_pack("{ss}", "op", "series");
        if (!request || filters_to_request(&f, request) < 0 ||
            (step && json_object_set_new(request, "step", json_string(step)) < 0)) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        if (profctl_connect(&c) < 0 || conn_send(c, request) < 0)
                return EXIT_FAILURE;
        for (;;) {
                _cleanup_json_ json_t *line = NULL;
                const char *type, *raw;
                size_t raw_len;

                r = conn_read_response(c, &line, &type, &raw, &raw_len);
                if (r < 0)
                        return EXIT_FAILURE;
                if (streq(type, "end")) {
                        r = series_set_end(&s, line);
                        if (r < 0)
                                return EXIT_FAILURE;
                        break;
                }
                if (!streq(type, "point")) {
                        cli_error(-EBADMSG, "profd answered 'series' with an unexpected '%s' line", type);
                        return EXIT_FAILURE;
                }
                r = series_add_point_line(&s, line);
                if (r < 0)
                        return EXIT_FAILURE;
        }

        if (output_open(&out, output) < 0)
                return EXIT_FAILURE;
        r = 0;
        if (json)
                r = series_write_json(out.f, &s);
        else if (s.total > 0)
                r = series_write(out.f, &s);
        if (r < 0)
                cli_error(r, "cannot write the series: %m");
        if (r >= 0 && (fflush(out.f) != 0 || ferror(out.f)))
                r = cli_error(-EIO, "cannot write %s", output ? output : "to standard output");
        if (output_close(&out, r >= 0) < 0)
                r = -EIO;
        if (r < 0)
                return EXIT_FAILURE;
        if (s.total == 0)
                no_samples_message(&f, s.from_ns, s.to_ns, NULL);
        else if (!json && s.have_quality) {
                _cleanup_free_ char *summary = quality_summary(&s.quality);

                fflush(stdout);
                fprintf(stderr, "%s\n", summary ? summary : "quality: (out of memory)");
        }
        return EXIT_SUCCESS;
}

/* ---- diff ---- */

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

static int diff_parse_argv(int argc, char *argv[], struct diff_args *a) {
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
                        r = parse_by(optarg, &a->opts.by);
                        if (r < 0)
                                return r;
                        a->by_set = true;
                        break;
                case ARG_CHILDREN:
                        a->opts.children = true;
                        break;
                case ARG_LIMIT:
                        r = parse_limit(optarg, &a->opts.limit);
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
                        return bad_option(opt, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error("diff takes no arguments, got '%s'", argv[optind]);
        r = filters_check(&a->filters);
        if (r < 0)
                return r;

        r = check_fleet_options(&a->filters, NULL);
        if (r < 0)
                return r;
        if (a->baseline_host) {
                if (!arg_clickhouse)
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
        if ((r = check_applies(a->by_set, "--by", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = check_applies(a->opts.children, "--children", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = check_applies(a->limit_set, "--limit", a->format == DIFF_TABLE, "--format table")) < 0 ||
            (r = check_applies(a->icicle, "--icicle", a->format == DIFF_SVG, "--format svg")) < 0 ||
            (r = check_applies(a->title, "--title", a->format == DIFF_SVG, "--format svg")) < 0)
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

static int diff_run(const struct diff_args *a) {
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
        r = profctl_connect(&c);
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

static int run_diff(int argc, char *argv[]) {
        struct diff_args a = {};
        int r;

        r = diff_parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return diff_run(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- top ---- */

/* Set by SIGINT/SIGTERM: the loop ends and the terminal is restored. */
static volatile sig_atomic_t top_quit = 0;

static void top_on_signal(int sig _unused_) {
        top_quit = 1;
}

struct tty_state {
        bool raw;            /* stdin's settings were changed */
        struct termios saved;
        bool cursor_hidden;  /* stdout's cursor was hidden */
};

static struct tty_state tty;

static void tty_restore(void) {
        if (tty.raw) {
                (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty.saved);
                tty.raw = false;
        }
        if (tty.cursor_hidden) {
                fputs("\033[?25h", stdout);
                fflush(stdout);
                tty.cursor_hidden = false;
        }
}

/* Keys without Enter and without echo, so 'q' quits at once. */
static void tty_make_raw(void) {
        struct termios t;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &tty.saved) < 0)
                return;
        t = tty.saved;
        t.c_lflag &= ~(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
                tty.raw = true;
}

/* Rows of the terminal, 0 if unknown. */
static size_t terminal_rows(void) {
        struct winsize ws;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
                return 0;
        return ws.ws_row;
}

/* Waits until deadline (CLOCK_MONOTONIC ns) or a 'q'. Returns true to quit. */
static bool top_wait(uint64_t deadline) {
        for (;;) {
                struct timespec ts;
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                uint64_t now;
                int r;

                if (top_quit)
                        return true;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
                if (now >= deadline)
                        return false;
                r = poll(&p, tty.raw ? 1 : 0, (int) ((deadline - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC));
                if (r > 0 && (p.revents & POLLIN)) {
                        char buf[64];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

                        for (ssize_t i = 0; i < n; i++)
                                if (buf[i] == 'q' || buf[i] == 'Q')
                                        return true;
                }
        }
}

struct top_args {
        struct filters filters;
        const char *window;
        TopBy by;
        bool children;
        bool json;           /* one JSON table per refresh, one per line */
        size_t limit;
        bool limit_set;
        uint64_t iterations; /* 0: until told to stop */
};

static int top_parse_argv(int argc, char *argv[], struct top_args *a) {
        enum {
                ARG_WINDOW = FILTER_OPTION_END,
                ARG_BY,
                ARG_CHILDREN,
                ARG_LIMIT,
                ARG_ITERATIONS,
                ARG_JSON,
        };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                FILTER_OPTIONS,
                { "window",     required_argument, NULL, ARG_WINDOW     },
                { "by",         required_argument, NULL, ARG_BY         },
                { "children",   no_argument,       NULL, ARG_CHILDREN   },
                { "limit",      required_argument, NULL, ARG_LIMIT      },
                { "iterations", required_argument, NULL, ARG_ITERATIONS },
                { "json",       no_argument,       NULL, ARG_JSON       },
                {}
        };
        uint64_t ns;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                r = filters_parse_option(&a->filters, opt, optarg);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                switch (opt) {
                case 'h':
                        help_top();
                        return 0;
                case ARG_WINDOW:
                        r = filters_check_duration("--window", optarg, &ns);
                        if (r < 0)
                                return r;
                        if (ns == 0)
                                return cli_usage_error("--window must be longer than 0");
                        a->window = optarg;
                        break;
                case ARG_BY:
                        r = parse_by(optarg, &a->by);
                        if (r < 0)
                                return r;
                        break;
                case ARG_CHILDREN:
                        a->children = true;
                        break;
                case ARG_LIMIT:
                        r = parse_limit(optarg, &a->limit);
                        if (r < 0)
                                return r;
                        a->limit_set = true;
                        break;
                case ARG_ITERATIONS:
                        r = parse_uint_strict(optarg, UINT64_MAX, &a->iterations);
                        if (r < 0 || a->iterations == 0)
                                return cli_usage_error("--iterations '%s' is not a count (expected a positive "
                                                       "integer)", optarg);
                        break;
                case ARG_JSON:
                        a->json = true;
                        break;
                default:
                        return bad_option(opt, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error("top takes no arguments, got '%s'", argv[optind]);
        /* a live view is of now: only a window ending now makes sense */
        if (a->filters.until || a->filters.to || a->filters.from)
                return cli_usage_error("top shows the newest data; use --window DUR (or --since) for its "
                                       "length, not --%s", a->filters.until ? "until" : a->filters.to ? "to" : "from");
        if (a->window && (a->filters.since || a->filters.last))
                return cli_usage_error("--window and --%s both say which samples to show; use one",
                                       a->filters.since ? "since" : "last");
        if (a->window) {
                a->filters.since = a->window;
        } else if (!a->filters.since)
                a->filters.last = true;
        r = filters_check(&a->filters);
        if (r < 0)
                return r;
        return 1;
}

/* One refresh: the table of the newest data, as one string so it is drawn
 * at once. */
static int top_frame(const struct top_args *a, const json_t *request, size_t limit, char **ret, size_t *ret_size) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_(answer_end_done) struct answer_end end = {};
        struct query_args qa = { .filters = a->filters, .format = FORMAT_TABLE, .by = a->by,
                                 .children = a->children, .limit = limit, .json = a->json };
        /* the window is said in words; the rest are the user's filters */
        struct filters shown = a->filters;
        _cleanup_free_ char *filters = NULL;
        char *text = NULL, now[64];
        size_t size = 0;
        struct timespec ts;
        FILE *f;
        int r;

        shown.last = false;
        shown.since = NULL;
        filters = filters_describe(&shown);
        r = conn_open(arg_socket, &c);
        if (r < 0)
                return r;
        f = open_memstream(&text, &size);
        if (!f)
                return cli_error(-ENOMEM, "%m");
        /* a script wants the tables alone (the window is in each) */
        if (!a->json) {
                clock_gettime(CLOCK_REALTIME, &ts);
                fprintf(f, "profctl top at %s: %s%s%s",
                        format_local_time(now, sizeof(now), (uint64_t) ts.tv_sec * NSEC_PER_SEC),
                        a->filters.since ? "the last " : "", a->filters.since ? a->filters.since : "the last drain",
                        filters && *filters ? ", " : "");
                if (filters && *filters)
                        fputs(filters, f);
                fputs(tty.raw ? " (q quits)\n" : "\n", f);
        }
        r = query_stream(c, &qa, request, f, &end);
        if (r >= 0 && end.total == 0 && !a->json)
                fputs("no samples match\n", f);
        if (fclose(f) != 0 && r >= 0)
                r = cli_error(-ENOMEM, "%m");
        if (r < 0) {
                free(text);
                return r;
        }
        *ret = text;
        *ret_size = size;
        return 0;
}

static int run_top(int argc, char *argv[]) {
        struct top_args a = {};
        _cleanup_json_ json_t *request = NULL;
        struct sigaction sa = { .sa_handler = top_on_signal };
        bool redraw;
        int r = 0;

        r = top_parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        /* JSON lines are for a program even on a terminal: no redrawing */
        redraw = isatty(STDOUT_FILENO) && !a.json;

        request = json_pack("{ss}", "op", "query");
        if (!request || filters_to_request(&a.filters, request) < 0) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }

        /* no SA_RESTART: poll() must return so the loop sees the flag */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        atexit(tty_restore);
        if (redraw) {
                tty_make_raw();
                fputs("\033[?25l", stdout);
                tty.cursor_hidden = true;
        }

        for (uint64_t i = 0; !top_quit && (a.iterations == 0 || i < a.iterations); i++) {
                _cleanup_free_ char *frame = NULL;
                struct timespec ts;
                uint64_t start;
                size_t size = 0, limit = a.limit_set ? a.limit : QUERY_LIMIT_DEFAULT, rows;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                start = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
                /* title, window, blank, header: 4 lines above the rows, and
                 * one spare so the last row does not scroll the screen */
                if (redraw && !a.limit_set && (rows = terminal_rows()) > 6)
                        limit = rows - 5;

                r = top_frame(&a, request, limit, &frame, &size);
                if (r < 0)
                        break;
                if (redraw)
                        fputs("\033[H\033[2J", stdout);
                else if (i > 0 && !a.json)
                        fputc('\n', stdout);
                fwrite(frame, 1, size, stdout);
                if (fflush(stdout) != 0) {
                        r = cli_error(-EIO, "cannot write to standard output");
                        break;
                }
                if (a.iterations > 0 && i + 1 >= a.iterations)
                        break;
                if (top_wait(start + NSEC_PER_SEC))
                        break;
        }
        tty_restore();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int run_init(int argc, char *argv[]) {
        enum { ARG_CLUSTER = 0x100 };
        static const struct option options[] = {
                { "help",    no_argument,       NULL, 'h'         },
                { "cluster", required_argument, NULL, ARG_CLUSTER },
                {}
        };
        _cleanup_fleet_ fleet *f = NULL;
        const char *cluster = NULL;
        int opt;

        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help_init();
                        return EXIT_SUCCESS;
                case ARG_CLUSTER:
                        if (!*optarg) {
                                cli_usage_error("--cluster needs a cluster name, got ''");
                                return EXIT_USAGE;
                        }
                        cluster = optarg;
                        break;
                default:
                        bad_option(opt, argv);
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                cli_usage_error("init takes no arguments, got '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (!arg_clickhouse) {
                cli_usage_error("init creates profd's schema in ClickHouse: give --clickhouse URL (before the "
                                "command)");
                return EXIT_USAGE;
        }
        if (fleet_open(arg_clickhouse, arg_clickhouse_credentials, &f) < 0 || fleet_init(f, cluster) < 0)
                return EXIT_FAILURE;
        printf("profd schema ready on ClickHouse at %s%s%s\n", arg_clickhouse, cluster ? ", cluster " : "",
               cluster ? cluster : "");
        return EXIT_SUCCESS;
}

/* Returns 1 to go on with a command, 0 if help or the version was shown,
 * -EINVAL on a usage error. */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_SOCKET = 0x100, ARG_VERSION, ARG_CLICKHOUSE, ARG_CLICKHOUSE_CREDENTIALS };
        static const struct option options[] = {
                { "help",                   no_argument,       NULL, 'h'                        },
                { "socket",                 required_argument, NULL, ARG_SOCKET                 },
                { "version",                no_argument,       NULL, ARG_VERSION                },
                { "clickhouse",             required_argument, NULL, ARG_CLICKHOUSE             },
                { "clickhouse-credentials", required_argument, NULL, ARG_CLICKHOUSE_CREDENTIALS },
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
                case ARG_CLICKHOUSE:
                        if (!fleet_url_valid(optarg))
                                return cli_usage_error("--clickhouse '%s' is not an http:// or https:// URL "
                                                       "(ClickHouse's HTTP interface, like "
                                                       "http://127.0.0.1:8123/)", optarg);
                        arg_clickhouse = optarg;
                        break;
                case ARG_CLICKHOUSE_CREDENTIALS:
                        if (!*optarg)
                                return cli_usage_error("--clickhouse-credentials needs a file name, got ''");
                        arg_clickhouse_credentials = optarg;
                        break;
                default:
                        return bad_option(opt, argv);
                }

        if (arg_clickhouse && arg_socket)
                return cli_usage_error("--socket and --clickhouse both say where to ask; give one");
        if (!arg_socket) {
                env = getenv("PROFD_SOCKET");
                arg_socket = env && *env ? env : PROFD_DEFAULT_SOCKET;
        }
        if (optind >= argc)
                return cli_usage_error("missing command (status, flush, query, series, diff, top or init)");
        if (arg_clickhouse_credentials && !arg_clickhouse)
                return cli_usage_error("--clickhouse-credentials is for --clickhouse URL");
        /* a fleet is asked for windows of what was stored: status, flush
         * and top's live refresh are one profd's */
        if (arg_clickhouse && (streq(argv[optind], "status") || streq(argv[optind], "flush") ||
                               streq(argv[optind], "top")))
                return cli_usage_error("%s asks one profd; with --clickhouse use query, series, diff or init",
                                       argv[optind]);
        return 1;
}

static const struct {
        const char *name;
        int (*run)(int argc, char *argv[]);
} commands[] = {
        { "status", run_status },
        { "flush",  run_flush  },
        { "query",  run_query  },
        { "series", run_series },
        { "diff",   run_diff   },
        { "top",    run_top    },
        { "init",   run_init   },
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
