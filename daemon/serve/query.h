/* Query and series requests, answered off the event loop: a few worker
 * threads, each with its own read-only SQLite connection (WAL lets them read
 * while the writer stores drains), stream their answer lines to the client
 * through a small buffer with backpressure. A long query or a slow client
 * so never delays a drain or another client's status, and what profd holds
 * for one answer stays bounded however large the answer is. */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "answer.h"
#include "macro.h"
#include "request.h"
#include "server.h"

typedef struct query_pool query_pool;

/* Answer lines a job may hold before its worker waits for the client to
 * read: small, since a busy client is fed again as soon as it takes data. */
#define QUERY_BUFFER_BYTES (1024u * 1024)
/* Answers made at once; further queries wait in order. Two: a long query
 * (a day of data takes a second or two) does not hold up short ones, and
 * on a small machine queries never take every CPU from the drains. A job
 * parked on a client that does not read is not among them (query.c). */
#define QUERY_WORKERS 2

/* What the workers do now (profctl status, "queries"). */
struct query_pool_stats {
        unsigned threads;  /* worker threads: QUERY_WORKERS plus spares for parked jobs */
        unsigned running;  /* answers being made (at most QUERY_WORKERS) */
        unsigned parked;   /* answers waiting for their client to read */
        unsigned queued;   /* requests waiting for a worker */
        uint64_t parks;    /* times an answer was parked since start */
};

/* Starts the workers, each with a reader connection to store_path (which
 * must exist and be migrated: the daemon opened it first). Returns 0 or a
 * negative errno with the reason logged. */
int query_pool_new(sd_event *event, const char *store_path, query_pool **ret);
/* Cancels every job (running SQL is interrupted), waits for every worker
 * thread to end. */
query_pool *query_pool_free(query_pool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(query_pool *, query_pool_free)

/* Queues req (REQUEST_QUERY or REQUEST_SERIES) for client c, its cpu
 * values counted at base_hz (store_query.base_hz). Returns
 * SERVER_DEFERRED: the client's answer follows and its next requests wait
 * until it is complete; or a negative errno (nothing was queued). */
int query_pool_submit(query_pool *p, server_client *c, const struct request *req, const struct answer_caller *caller,
                      uint64_t now_ns, uint64_t default_step_ns, unsigned base_hz,
                      bool timeline_off);

/* A consistent snapshot of the counts; cannot fail. */
void query_pool_get_stats(query_pool *p, struct query_pool_stats *ret);
