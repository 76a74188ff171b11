/* profctl: the options before the command and the choice of command; the
 * commands are in cmd-*.c, the wire protocol is docs/protocol.md, the
 * views are in render.c and views.c, their JSON shapes in docs/profctl.md. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "fleet.h"
#include "macro.h"
#include "options.h"
#include "util.h"

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
               "  heatmap [OPTIONS] CPU samples by second and sub-second row: text, HTML, SVG\n"
               "  capture ACTION    Keep an incident's data: start, list, unpin or stop\n"
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

/* Fills t from the options before the command. Returns 1 to go on with a
 * command, 0 if help or the version was shown, -EINVAL on a usage error. */
static int parse_argv(int argc, char *argv[], struct cli_target *t) {
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
                        t->socket = optarg;
                        break;
                case ARG_VERSION:
                        printf("profctl %s\n", PROFD_VERSION);
                        return 0;
                case ARG_CLICKHOUSE:
                        if (!fleet_url_valid(optarg))
                                return cli_usage_error("--clickhouse '%s' is not an http:// or https:// URL "
                                                       "(ClickHouse's HTTP interface, like "
                                                       "http://127.0.0.1:8123/)", optarg);
                        t->clickhouse = optarg;
                        break;
                case ARG_CLICKHOUSE_CREDENTIALS:
                        if (!*optarg)
                                return cli_usage_error("--clickhouse-credentials needs a file name, got ''");
                        t->clickhouse_credentials = optarg;
                        break;
                default:
                        return command_bad_option(opt, argv);
                }

        if (t->clickhouse && t->socket)
                return cli_usage_error("--socket and --clickhouse both say where to ask; give one");
        if (!t->socket) {
                env = getenv("PROFD_SOCKET");
                t->socket = env && *env ? env : PROFD_DEFAULT_SOCKET;
        }
        if (optind >= argc)
                return cli_usage_error("missing command (status, flush, query, series, diff, top, init, heatmap or capture)");
        if (t->clickhouse_credentials && !t->clickhouse)
                return cli_usage_error("--clickhouse-credentials is for --clickhouse URL");
        /* a fleet is asked for windows of what was stored: status, flush,
         * top's live refresh and captures are one profd's */
        if (t->clickhouse && (streq(argv[optind], "status") || streq(argv[optind], "flush") ||
                               streq(argv[optind], "top") || streq(argv[optind], "capture")))
                return cli_usage_error("%s asks one profd; with --clickhouse use query, series, diff, heatmap or init",
                                       argv[optind]);
        return 1;
}

static const struct {
        const char *name;
        int (*run)(const struct cli_target *t, int argc, char *argv[]);
} commands[] = {
        { "status", cmd_status },
        { "flush",  cmd_flush  },
        { "query",  cmd_query  },
        { "series", cmd_series },
        { "diff",   cmd_diff   },
        { "top",    cmd_top    },
        { "init",   cmd_init   },
        /* the timeline by second (cmd-heatmap.c) */
        { "heatmap", cmd_heatmap },
        /* captures (issue 44) */
        { "capture", cmd_capture },
};

int main(int argc, char *argv[]) {
        struct cli_target target = {};
        int r, status = -1;

        r = parse_argv(argc, argv, &target);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;

        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(argv[optind], commands[i].name)) {
                        /* the command sees itself as argv[0], as getopt wants */
                        status = commands[i].run(&target, argc - optind, argv + optind);
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
