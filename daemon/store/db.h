/* The SQLite helpers every connection to the store shares (the drain
 * connection, readers, the outbox, retention): SQLite result codes as
 * negative errno, one way to log a failure, statements run with integer
 * parameters, and _cleanup_ helpers for connections and statements. */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Closes a connection / finalizes a statement at the end of a scope:
 * _cleanup_(sqlite3_closep) sqlite3 *db = NULL; NULL is fine. */
DEFINE_TRIVIAL_CLEANUP_FUNC(sqlite3 *, sqlite3_close)
DEFINE_TRIVIAL_CLEANUP_FUNC(sqlite3_stmt *, sqlite3_finalize)
#define _cleanup_sqlite3_ _cleanup_(sqlite3_closep)
#define _cleanup_stmt_ _cleanup_(sqlite3_finalizep)

/* A connection as the helpers below see it: the handle, the store's path
 * and who uses it, both only for messages. */
struct db {
        sqlite3 *handle;
        const char *path;
        const char *who; /* "" or "retention: ", put before `what` in messages */
};

/* A SQLite result code as a negative errno (0 for SQLITE_OK): -ENOSPC disk
 * full, -EBUSY locked, -EACCES read-only or refused, -ENOENT cannot open,
 * -EPROTO corrupt or not a database, -ECANCELED interrupted
 * (sqlite3_interrupt), -EIO anything else. */
int db_errno(int rc);

/* Logs what failed, with SQLite's message for the connection, and returns
 * db_errno(rc). An interrupted statement (-ECANCELED) is a cancelled
 * query, not a problem with the store: not logged. */
int db_fail(const struct db *d, int rc, const char *what);

/* Runs one or more statements without results. Returns 0 or a negative
 * errno, logged. */
int db_exec(const struct db *d, const char *sql);

/* Prepares sql and binds the integers args[0..n) to ?1..?n. Returns 0 or a
 * negative errno, logged. */
int db_prepare(const struct db *d, const char *sql, const int64_t *args, size_t n, sqlite3_stmt **ret);

/* Prepares the n statements sql[0..n) for as long as the connection is
 * open (SQLITE_PREPARE_PERSISTENT), into ret[0..n). Returns 0 or a
 * negative errno, logged; the ones prepared before a failure are in ret,
 * for db_finalize_all. */
int db_prepare_all(const struct db *d, const char *const *sql, size_t n, sqlite3_stmt **ret);
/* Finalizes the statements of db_prepare_all; NULLs are fine. */
void db_finalize_all(sqlite3_stmt **stmts, size_t n);

/* Runs a statement without results, with integer parameters as
 * db_prepare. Returns the number of rows it changed, or a negative errno,
 * logged. */
int64_t db_run(const struct db *d, const char *sql, const int64_t *args, size_t n);

/* Runs the prepared statement st, its parameters bound, then resets it
 * and clears its bindings for the next use: a statement without results,
 * or one whose first column of its first row is an integer, put in *ret
 * (when not NULL). Returns 1 for a row, 0 for none, or a negative errno,
 * logged with what. */
int db_step(const struct db *d, sqlite3_stmt *st, int64_t *ret, const char *what);

/* Runs a query of one integer, with integer parameters as db_prepare: the
 * first column of its first row, or dflt when there is no row or it is
 * NULL. Returns 0 or a negative errno, logged. */
int db_query_i64(const struct db *d, const char *sql, const int64_t *args, size_t n, int64_t dflt, int64_t *ret);

/* The write-ahead log's size, in bytes whatever the page size: SQLite
 * checkpoints once the log holds so many bytes of pages, and truncates it
 * back to so many after a checkpoint. */
#define DB_WAL_BYTES (4 * 1024 * 1024)

/* Bounds the log's size (DB_WAL_BYTES) for the connection's own commits.
 * Returns 0 or a negative errno, logged. */
int db_limit_wal(const struct db *d);

/* Whether schema 7's samples (samples_v7) are still there, being converted
 * (store-migrate.c). *gone caches "no": nothing creates the table again
 * once it is dropped. Returns 0 or a negative errno, logged. */
int db_v7_present(const struct db *d, bool *gone, bool *ret);

/* The heap SQLite holds now for every connection of the process (page
 * caches, prepared statements, schemas), in bytes. */
uint64_t db_heap_bytes(void);

/* Rolls back the transaction open on the connection, if one is; quietly:
 * called on paths that already failed. */
void db_rollback(const struct db *d);
