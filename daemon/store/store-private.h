/* What the store's files offer the ones above them (the order: store.h),
 * one section per file: the connection store.c opens, the write state of
 * store-write.c, the read state of store-query.c. Not for use outside
 * daemon/store/. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "hashmap.h"
#include "store.h"
#include "varint.h"

/* --- store.c: the connection --------------------------------------------- */

/* Which connection store_connect opens. */
enum store_mode {
        STORE_MODE_DRAIN,  /* store_open's: read-write, created, made private and migrated as needed */
        STORE_MODE_READER, /* store_open_reader's: read-only, at this profd's schema */
        STORE_MODE_OUTBOX, /* store_open_outbox's: read-write, at this profd's schema */
};

struct store_write; /* store-write.c's */
struct store_read;  /* store-query.c's */

/* A connection. store.c opens and closes its SQLite connection; the files
 * above it own the rest (store-conn.c puts them together). */
struct store {
        struct db d; /* the connection; d.path is path */
        char *path;
        struct store_write *write; /* store-write.c: store_open's connection only, else NULL */
        struct store_read *read;   /* store-query.c: every connection */
        /* store-migrate.c: samples_v7 (schema 7's samples, being converted) was seen gone */
        bool v7_gone;
        bool v7_indexes_gone; /* its indexes samples_stack and samples_process were dropped */
};

/* Opens the store at path as mode says, without write or read state.
 * Returns 0 or a negative errno, logged: those of store_open for
 * STORE_MODE_DRAIN (the file is checked as store_open says), of
 * store_open_reader for the others. */
int store_connect(const char *path, enum store_mode mode, store **ret);
/* Closes the SQLite connection and frees s, whose write and read state
 * must be gone (their statements finalized). NULL is fine. */
store *store_disconnect(store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(store *, store_disconnect)

/* For a failure setting up a drain connection: -EIO and -EPROTO (SQLite
 * could not read the file as a store) are logged as a store profd cannot
 * use and returned as -EPROTO; other errors as they are. */
int store_unusable(const store *s, int r);

/* --- store-write.c: the drain connection's write state ------------------- */

/* The statements store_stack_id runs, prepared on the connection it is
 * given: ?4 is the frames in the form before schema 15 (stack-pack.h), so
 * a stack stored before the upgrade is found, not stored again. */
#define STORE_STACK_SELECT_SQL "SELECT id FROM stacks WHERE hash = ?1 AND frames IN (?2, ?4) AND user_end IS ?3"
#define STORE_STACK_INSERT_SQL "INSERT INTO stacks (hash, frames, user_end) VALUES (?1, ?2, ?3)"

/* The id of the stack of these n location ids (root first) and user_end
 * (STORE_END_UNKNOWN: NULL), stored if new: the drain connection's writes
 * and retention's folded stacks (merge-fold.c) share it. sel and ins are
 * the two statements above, prepared on d; packed is the caller's scratch
 * buffer. Returns 0 or a negative errno, logged. */
int store_stack_id(const struct db *d, sqlite3_stmt *sel, sqlite3_stmt *ins, const int64_t *ids, size_t n,
                   int user_end, struct varint_out *packed, int64_t *ret);

/* Prepares the write statements and makes the id caches, empty. Returns 0
 * or a negative errno, logged. */
int store_write_new(store *s);
/* Frees the write state, if there is one. */
void store_write_free(store *s);

/* --- store-query.c: the read state --------------------------------------- */

/* Prepares the read statements. keep_locations: the locations queries
 * load are kept from one query to the next (readers and the outbox; see
 * store_query_location_cache). Returns 0 or a negative errno, logged. */
int store_read_new(store *s, bool keep_locations);
/* Frees the read state, if there is one. */
void store_read_free(store *s);

/* The location cache a query uses (in the read transaction it opens),
 * NULL on out of memory, and store_query_location_cache_done at the end of
 * that query: a cache not kept is freed, so are the locations that did not
 * fit in a kept one. */
hashmap *store_query_location_cache(store *s);
void store_query_location_cache_done(store *s, hashmap *cache);
/* Appends the frames of stack sid to *out through cache, and gives its
 * number of frames and how its user part ended. Returns 0 or a negative
 * errno. */
int store_stack_frames(store *s, int64_t sid, hashmap *cache, struct store_frame_out **out, size_t *out_cap,
                       size_t *ret_n, int *ret_user_end);
