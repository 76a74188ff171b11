/* The SQLite helpers shared by every connection to the store (db.h). */
#include "db.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "macro.h"

int db_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_OK:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
        case SQLITE_SCHEMA:
                return -EPROTO;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_INTERRUPT: /* store_interrupt: the query was cancelled */
                return -ECANCELED;
        default:
                return -EIO;
        }
}

int db_fail(const struct db *d, int rc, const char *what) {
        int r = db_errno(rc);

        if (r == -ECANCELED) /* a cancelled query, not a problem with the store */
                return r;
        log_error("Store %s: %s%s failed: %s", d->path, d->who ? d->who : "", what, sqlite3_errmsg(d->handle));
        return r;
}

int db_exec(const struct db *d, const char *sql) {
        char *err = NULL;
        int rc = sqlite3_exec(d->handle, sql, NULL, NULL, &err);

        if (rc != SQLITE_OK) {
                log_error("Store %s: %s%s", d->path, d->who ? d->who : "", err ? err : sqlite3_errstr(rc));
                sqlite3_free(err);
                return db_errno(rc);
        }
        return 0;
}

int db_prepare(const struct db *d, const char *sql, const int64_t *args, size_t n, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v2(d->handle, sql, -1, ret, NULL);

        if (rc != SQLITE_OK)
                return db_fail(d, rc, sql);
        for (size_t i = 0; i < n; i++)
                sqlite3_bind_int64(*ret, (int) i + 1, args[i]);
        return 0;
}

int db_prepare_all(const struct db *d, const char *const *sql, size_t n, sqlite3_stmt **ret) {
        for (size_t i = 0; i < n; i++) {
                int rc = sqlite3_prepare_v3(d->handle, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &ret[i], NULL);
                if (rc != SQLITE_OK)
                        return db_fail(d, rc, "preparing statements");
        }
        return 0;
}

void db_finalize_all(sqlite3_stmt **stmts, size_t n) {
        for (size_t i = 0; i < n; i++) {
                sqlite3_finalize(stmts[i]);
                stmts[i] = NULL;
        }
}

int64_t db_run(const struct db *d, const char *sql, const int64_t *args, size_t n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc, r = db_prepare(d, sql, args, n, &st);

        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return db_fail(d, rc, sql);
        return sqlite3_changes64(d->handle);
}

int db_step(const struct db *d, sqlite3_stmt *st, int64_t *ret, const char *what) {
        int rc = sqlite3_step(st), r = 0;

        if (rc == SQLITE_ROW) {
                if (ret)
                        *ret = sqlite3_column_int64(st, 0);
                r = 1;
        } else if (rc != SQLITE_DONE)
                r = db_fail(d, rc, what);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return r;
}

int db_limit_wal(const struct db *d) {
        char sql[128];
        int64_t page_size;
        int r;

        /* SQLite's default is a number of pages (1000): a 4 MiB log with
         * 4 KiB pages, 16 MiB with the 16 KiB of a new store, kept at that
         * size on disk between checkpoints. */
        r = db_query_i64(d, "PRAGMA page_size", NULL, 0, 4096, &page_size);
        if (r < 0)
                return r;
        snprintf(sql, sizeof(sql), "PRAGMA wal_autocheckpoint = %" PRId64 "; PRAGMA journal_size_limit = %d;",
                 MAX((int64_t) DB_WAL_BYTES / MAX(page_size, (int64_t) 512), (int64_t) 1), DB_WAL_BYTES);
        return db_exec(d, sql);
}

int db_query_i64(const struct db *d, const char *sql, const int64_t *args, size_t n, int64_t dflt, int64_t *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc, r = db_prepare(d, sql, args, n, &st);

        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int64(st, 0) : dflt;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return db_fail(d, rc, sql);
        return 0;
}

uint64_t db_heap_bytes(void) {
        sqlite3_int64 n = sqlite3_memory_used();

        return n > 0 ? (uint64_t) n : 0;
}

void db_rollback(const struct db *d) {
        if (!sqlite3_get_autocommit(d->handle))
                (void) sqlite3_exec(d->handle, "ROLLBACK", NULL, NULL, NULL);
}

int db_v7_present(const struct db *d, bool *gone, bool *ret) {
        int64_t n;
        int r;

        if (*gone) {
                *ret = false;
                return 0;
        }
        r = db_query_i64(d, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'samples_v7'", NULL,
                         0, 0, &n);
        if (r < 0)
                return r;
        *gone = n == 0;
        *ret = n > 0;
        return 0;
}
