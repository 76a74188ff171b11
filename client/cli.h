/* What every profctl command shares: where to ask (profd's socket or a
 * ClickHouse fleet), the usage error of an option getopt refused, and the
 * fleet-only options. Each function that can fail prints its own
 * "profctl: ..." message and returns a negative errno. */
#pragma once

#include "conn.h"
#include "filters.h"

/* Where a command's requests go, from the options before the command. */
struct cli_target {
        const char *socket;                 /* profd's socket */
        /* Fleet mode: answers come from ClickHouse (fleet.h), not profd's socket. */
        const char *clickhouse;             /* NULL: ask profd */
        const char *clickhouse_credentials; /* NULL: ClickHouse's default user */
};

/* The help text of durations and regular expressions, under each command's
 * options. */
extern const char duration_help[];

#define IN_SET_FORMAT(x, a, b, c) ((x) == (a) || (x) == (b) || (x) == (c))
/* A switch over an enum that handled every value before reaching here. */
#define assert_not_reached() abort()

/* Opens the connection a command's requests go to. Returns 0 or a negative
 * errno after a message. */
int cli_connect(const struct cli_target *t, conn **ret);

/* Refuses --host and --root host without --clickhouse, and --root thread
 * with it (root: --root's value or NULL). Returns 0 or -EINVAL. */
int cli_check_fleet_options(const struct cli_target *t, const struct filters *f, const char *root);
