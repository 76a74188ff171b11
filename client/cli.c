/* The pieces every profctl command shares: where to ask and usage errors
 * (cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdint.h>

#include "fleet.h"
#include "util.h"

const char duration_help[] =
        "DUR is one or more <number><unit> parts, units ns us ms s m h d (1h30m,\n"
        "500ms); a bare number is seconds. REGEX is a POSIX extended regular\n"
        "expression matched against function names.\n";

/* The connection a command's requests go to: profd's socket, or with
 * --clickhouse the fleet in ClickHouse, after checking that it answers and
 * holds the schema profctl reads. */
int cli_connect(const struct cli_target *t, conn **ret) {
        _cleanup_fleet_ fleet *f = NULL;
        int r;

        if (!t->clickhouse)
                return conn_open(t->socket, ret);
        r = fleet_open(t->clickhouse, t->clickhouse_credentials, &f);
        if (r < 0)
                return r;
        r = fleet_check_schema(f);
        if (r < 0)
                return r;
        return conn_open_fleet(TAKE_PTR(f), ret);
}

/* --host and --root host select among a fleet's hosts: without
 * --clickhouse there is one host, profd's. */
int cli_check_fleet_options(const struct cli_target *t, const struct filters *f, const char *root) {
        if (f->host && !t->clickhouse)
                return cli_usage_error("--host selects hosts of a fleet: give --clickhouse URL (before the "
                                       "command)");
        if (root && streq(root, "host") && !t->clickhouse)
                return cli_usage_error("--root host groups a fleet by host: give --clickhouse URL (before the "
                                       "command)");
        if (root && streq(root, "thread") && t->clickhouse)
                return cli_usage_error("--root thread: thread names are kept in the local store only, not "
                                       "exported to ClickHouse");
        return 0;
}
