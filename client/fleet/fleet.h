/* A fleet of hosts' profiles in ClickHouse, asked the way profd is asked:
 * fleet_answer() takes the request profctl would send to profd's socket
 * (docs/protocol.md) and makes the answer lines profd would send, from
 * ClickHouse, which filters and sums; only the summed stacks and their
 * frames come back over HTTP (libcurl). So every view and export of profctl
 * works on a fleet answer unchanged.
 *
 * Two request fields are the fleet's own: "host" (a host name or glob) and
 * "group":"host" (a root frame per host). Every function here prints its
 * own failure ("profctl: ...") and returns a negative errno; a request
 * ClickHouse cannot answer becomes an "error" line, as profd's would. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef struct fleet fleet;

/* Whether url can be ClickHouse's HTTP interface: http:// or https://
 * and a host. */
bool fleet_url_valid(const char *url);

/* url: ClickHouse's HTTP interface ("http://127.0.0.1:8123/"). credentials:
 * a file of "user = NAME" and "password = SECRET" lines, as profd's
 * (common/credentials.h; NULL: ClickHouse's default user without a
 * password), so no password is ever on a command line. Returns 0, -EINVAL for a bad URL or file, -ENOMEM. */
int fleet_open(const char *url, const char *credentials, fleet **ret);
fleet *fleet_free(fleet *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(fleet *, fleet_free);
#define _cleanup_fleet_ _cleanup_(fleet_freep)

/* Checks that ClickHouse answers and holds the schema version profctl
 * reads. Returns 0, -ECONNREFUSED (unreachable), -EACCES (credentials),
 * -ENOENT (no schema: run init), -EPROTO (another version). */
int fleet_check_schema(fleet *f);

/* Creates the schema (schema/clickhouse/, embedded), on every shard of
 * cluster when it is not NULL. Idempotent: an existing schema of the same
 * version is kept as it is. Returns 0 or a negative errno. */
int fleet_init(fleet *f, const char *cluster);

/* Answers request (a "query", "series" or "status" object) with profd's
 * answer lines, each ending in '\n', in a malloc'd *ret_text. Returns 0 or
 * a negative errno (ClickHouse failed; printed). */
int fleet_answer(fleet *f, const json_t *request, uint64_t now_ns, char **ret_text, size_t *ret_len);
