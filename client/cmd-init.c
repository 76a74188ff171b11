/* profctl init: create profd's schema in ClickHouse. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "fleet.h"
#include "util.h"

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

int cmd_init(const struct cli_target *t, int argc, char *argv[]) {
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
                        cli_bad_option(opt, argv);
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                cli_usage_error("init takes no arguments, got '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (!t->clickhouse) {
                cli_usage_error("init creates profd's schema in ClickHouse: give --clickhouse URL (before the "
                                "command)");
                return EXIT_USAGE;
        }
        if (fleet_open(t->clickhouse, t->clickhouse_credentials, &f) < 0 || fleet_init(f, cluster) < 0)
                return EXIT_FAILURE;
        printf("profd schema ready on ClickHouse at %s%s%s\n", t->clickhouse, cluster ? ", cluster " : "",
               cluster ? cluster : "");
        return EXIT_SUCCESS;
}
