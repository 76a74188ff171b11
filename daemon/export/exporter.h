/* The ClickHouse export: a thread with an event loop of its own
 * (loopthread.h) that sends every stored drain to ClickHouse over its HTTP
 * interface (libcurl), from the local store as the outbox, exactly once.
 * Its cursor (export_cursors in the store) moves only after ClickHouse
 * stored a drain; a drain whose earlier attempt may have landed is looked
 * up before it is sent again; failures are retried with backoff. It never
 * runs on the manager's event loop and shares nothing with the drain path
 * but a wake-up, so neither a drain nor a query ever waits for ClickHouse.
 * Design and status fields: docs/clickhouse.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

/* Why an attempt failed, as counted in status. */
enum exporter_error {
        EXPORTER_ERROR_CONNECT, /* no connection, or it broke (a shard down too) */
        EXPORTER_ERROR_TIMEOUT, /* no answer within the timeout */
        EXPORTER_ERROR_AUTH,    /* wrong user or password, or not allowed to insert */
        EXPORTER_ERROR_SCHEMA,  /* no profd schema there, or another version */
        EXPORTER_ERROR_HTTP,    /* any other refusal: HTTP status and ClickHouse's message */
        EXPORTER_ERROR_LOCAL,   /* the store could not be read, the credentials file neither */
        _EXPORTER_ERROR_MAX,
};

/* Status names of the errors, by enum exporter_error. */
extern const char *const exporter_error_names[_EXPORTER_ERROR_MAX];

struct exporter_status {
        const char *state;          /* "starting", "sending", "caught_up", "retrying" */
        uint64_t backlog_drains;    /* stored, not yet acknowledged */
        int64_t acknowledged_drain_id; /* the cursor: drains up to this id are in ClickHouse */
        uint64_t backlog_oldest_ns; /* the oldest one's end, Unix-epoch ns; 0: none */
        uint64_t last_success_ns;   /* when ClickHouse last acknowledged a drain, Unix-epoch ns; 0: never */
        uint64_t exported_drains, exported_samples, exported_stacks, exported_frames;
        uint64_t exported_timeline; /* timeline rows: on-CPU samples with their own time */
        uint64_t timeline_unmatched; /* timeline samples naming no sample row of their drain: not sent */
        uint64_t exported_captures; /* capture rows: a capture in one state each (chcapture.h) */
        uint64_t captures_backlog;  /* captures whose current state ClickHouse does not hold yet */
        uint64_t captures_already_stored; /* capture states found in ClickHouse before a resend: not sent twice */
        uint64_t bytes_sent;        /* request bodies */
        uint64_t already_stored;    /* drains found in ClickHouse when about to be sent again: not sent twice */
        uint64_t lost_by_retention; /* drains retention merged or deleted before they were acknowledged */
        uint64_t damaged_blocks;    /* damaged blocks of samples skipped, once per drain sent: their entries not sent */
        uint64_t errors[_EXPORTER_ERROR_MAX];
        int last_error_kind;        /* enum exporter_error, -1: no error since the last success */
        char last_error[512];       /* what went wrong last, as logged */
        uint64_t last_error_ns;
};

typedef struct exporter exporter;

/* Starts the export thread. Problems with ClickHouse or the credentials are
 * not errors here: the thread logs them, shows them in status and retries.
 * Returns 0 or a negative errno (logged). */
/* From the settings: clickhouse_url (not NULL), host_name,
 * clickhouse_credentials, clickhouse_timeout and the store (created and
 * migrated already); copies what it needs. */
int exporter_new(const struct conf *cfg, exporter **ret);
/* Stops the thread, abandoning a request in flight (its drain is sent, or
 * found in ClickHouse, at the next start). */
exporter *exporter_free(exporter *e);

/* A drain was stored: look for work now rather than at the next check.
 * Never blocks (a write to the thread's eventfd). */
void exporter_wake(exporter *e);

void exporter_get_status(exporter *e, struct exporter_status *ret);

/* The ClickHouse error code in an HTTP error body ("Code: 193, ..."), or
 * -1. Pure; exposed for tests. */
int exporter_clickhouse_code(const char *body);
/* The kind of failure an HTTP answer with this status and ClickHouse code
 * is. Pure; exposed for tests. */
enum exporter_error exporter_classify(long http_status, int clickhouse_code);
