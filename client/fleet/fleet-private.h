/* What fleet.c (the connection to ClickHouse: HTTP, schema, init) and
 * fleet-answer.c (answers made of ClickHouse's sums) share. Not for other
 * files: fleet.h is the API. */
#pragma once

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fleet.h"

struct fleet {
        CURL *curl;
        char *url;
        char *user, *password;
};

/* Runs one statement; with ids (ids_len bytes of TabSeparated rows of
 * structure) sent as the external table "ids". The answer's body in
 * *ret_body (NUL-terminated, ret_len bytes). quiet_missing: a missing
 * table is -ENOENT without a message. Returns 0 or a negative errno after a
 * message. */
int fleet_http_ids(fleet *f, const char *sql, const char *structure, const char *ids, size_t ids_len,
                   bool quiet_missing, char **ret_body, size_t *ret_len);
/* fleet_http_ids() without ids. */
int fleet_http(fleet *f, const char *sql, bool quiet_missing, char **ret_body, size_t *ret_len);
/* Closes the memstream m that wrote *sql and runs the statement. */
int fleet_http_memstream(fleet *f, FILE *m, char **sql, char **ret_body, size_t *ret_len);
