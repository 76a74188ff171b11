/* profctl init: create profd's schema in ClickHouse. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "fleet.h"
#include "options.h"
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

enum {
        ARG_CLUSTER = VIEW_OPTION_END,
};

static int init_parse_option(void *userdata, int opt, const char *arg) {
        const char **cluster = userdata;

        assert(opt == ARG_CLUSTER);
        if (!*arg)
                return cli_usage_error("--cluster needs a cluster name, got ''");
        *cluster = arg;
        return 0;
}

static const struct command_options init_options = {
        .name = "init",
        .help = help_init,
        .options = (const struct option[]) {
                { "cluster", required_argument, NULL, ARG_CLUSTER },
                {}
        },
        .parse_option = init_parse_option,
};

int cmd_init(const struct cli_target *t, int argc, char *argv[]) {
        _cleanup_fleet_ fleet *f = NULL;
        struct view_options view = {};
        const char *cluster = NULL;
        int r;

        r = command_parse_argv(&init_options, argc, argv, NULL, &view, &cluster);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
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
