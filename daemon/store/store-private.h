/* What the store's files share (store.c opens and migrates, store-write.c
 * writes drains, store-query.c and store-outbox.c read): the connection
 * object, its prepared statements and caches. Not for use outside
 * daemon/store/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "hashmap.h"
#include "sample-pack.h"
#include "store.h"

enum {
        STMT_INSERT_DRAIN,
        STMT_UPDATE_DRAIN,
        STMT_INSERT_DROP,
        STMT_SELECT_MAPPING,
        STMT_INSERT_MAPPING,
        STMT_SELECT_FUNCTION,
        STMT_INSERT_FUNCTION,
        STMT_SELECT_LOCATION,
        STMT_INSERT_LOCATION,
        STMT_SELECT_STACK,
        STMT_INSERT_STACK,
        STMT_UPSERT_PROCESS,
        STMT_SELECT_PROCESS,
        STMT_SELECT_LOCATION_INFO,
        STMT_INSERT_LOCATION_LINE,
        STMT_SELECT_LOCATION_LINES,
        STMT_SELECT_STACK_FRAMES,
        STMT_UPSERT_THREAD,
        STMT_SELECT_LOCATION_RESOLVED,
        _STMT_MAX,
};

/* The samples of one (process, kind) of the drain being written. */
struct pending_block {
        int64_t process_id;
        int kind;
        struct sample_entry *entries;
        size_t n, cap;
};

struct store {
        struct db d;   /* the connection; d.path is path */
        char *path;
        sqlite3_stmt *stmts[_STMT_MAX];
        /* Ids of rows already in the file, so a drain does not ask SQLite
         * again for every frame. Keys are malloc'd strings. Cleared when a
         * transaction rolls back, since its new rows are gone. */
        hashmap *mapping_ids;
        hashmap *function_ids;
        hashmap *location_ids;
        hashmap *process_ids;
        /* "process_id\ntid" -> the thread's name as stored (malloc'd) */
        hashmap *thread_names;
        /* the drain being written; its samples gathered per (process,
         * kind) until the commit packs them into blocks (schema/0008):
         * key process_id << 8 | kind -> index + 1 in pending */
        bool in_drain;
        hashmap *pending_index;
        struct pending_block *pending;
        size_t n_pending, pending_cap;
        int64_t drain_id;
        uint64_t drain_samples, drain_keys;
        /* a reader (store_open_reader): locations loaded by earlier
         * queries, kept (see query_location_cache) */
        bool reader;
        /* samples_v7 (schema 7's samples, being converted) was seen gone */
        bool v7_gone;
        bool v7_indexes_gone; /* its indexes samples_stack and samples_process were dropped */
        hashmap *query_locations;
        uint64_t query_locations_deleted;
        struct location_info **transient; /* see transient_add (store-query.c) */
        size_t n_transient, transient_cap;
};

/* Frees the samples gathered for the drain being written. */
void store_pending_free(store *s);

/* (Re)creates the drain connection's id caches, empty. Returns 0 or -ENOMEM. */
int store_caches_reset(store *s);

/* store-query.c: the locations a reader keeps between queries (and the
 * ones one stack needed beyond them), for store_close. */
void store_location_cache_free(hashmap *m);
void store_transient_release(store *s);

/* store-query.c, for the outbox too: the location cache a query uses (in
 * the read transaction it opens), and the frames of stack sid appended to
 * *out through it. Return NULL on out of memory; 0 or a negative errno. */
hashmap *store_query_location_cache(store *s);
int store_stack_frames(store *s, int64_t sid, hashmap *cache, struct store_frame_out **out, size_t *out_cap,
                       size_t *ret_n, int *ret_user_end);
