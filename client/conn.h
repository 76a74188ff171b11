/* The client end of profd's socket (docs/protocol.md): a request goes out as
 * one JSON line, the answer comes back as JSON lines read one at a time. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "macro.h"

typedef struct conn conn;

/* Connects to the Unix socket at path. Every function here reports its own
 * failure on stderr ("profctl: cannot connect to ...") and returns a negative
 * errno, so callers only have to pass it on. */
int conn_open(const char *path, conn **ret);
/* A connection whose requests fleet answers from ClickHouse, as profd
 * would (fleet.h); the conn owns f from now on, also on failure. */
struct fleet;
int conn_open_fleet(struct fleet *f, conn **ret);
conn *conn_free(conn *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(conn *, conn_free);
#define _cleanup_conn_ _cleanup_(conn_freep)

/* Sends request as one compact line. */
int conn_send(conn *c, const json_t *request);

/* Reads the next response line. On success *ret_line is the parsed object
 * (owned by the caller), *ret_type its "type", and *ret_raw (*ret_raw_len
 * bytes) the line's text without the newline, valid until the next read. An "error"
 * line is printed as "profctl: <error>" and returns -EREMOTEIO; a line that is
 * not a JSON object with a string "type" returns -EBADMSG; the daemon closing
 * the connection returns -ECONNRESET; no data for CONN_TIMEOUT_SEC returns
 * -ETIMEDOUT. Line types other than "error" are for the caller to judge. */
int conn_read_response(conn *c, json_t **ret_line, const char **ret_type,
                       const char **ret_raw, size_t *ret_raw_len);

/* profd answers status and flush at once and streams a query's stacks as it
 * reads them, so a minute without a single byte means it is stuck; a shell
 * script calling profctl must not hang forever on that. */
#define CONN_TIMEOUT_SEC 60
