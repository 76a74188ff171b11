/* The store's connection, the bottom of its files (store.h): opening the
 * file (private files, WAL mode, schema migration, or the schema version
 * a reader expects), closing it, and the background integrity check. It
 * calls none of the files above it: the write path (store-write.c) and the
 * read path (store-query.c) keep their own state, and store-conn.c puts a
 * connection together from them. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "macro.h"
#include "privacy.h"
#include "schema.h"
#include "store-private.h"

static int migrate(store *s) {
        sqlite3_stmt *st = NULL;
        int64_t version;
        int rc, r;

        rc = sqlite3_prepare_v2(s->d.handle, "PRAGMA user_version", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "reading the schema version");
        rc = sqlite3_step(st);
        version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_finalize(st);
        if (version < 0)
                return db_fail(&s->d, rc, "reading the schema version");
        if (version > (int64_t) schema_version) {
                log_error("Store %s has schema version %" PRId64 ", newer than this profd's %u; "
                          "use a newer profd or another --store.", s->path, version, schema_version);
                return -EPROTO;
        }
        for (unsigned v = version; v < schema_version; v++) {
                char pragma[64];

                log_info("Migrating store %s to schema version %u.", s->path, v + 1);
                r = db_exec(&s->d, "BEGIN IMMEDIATE");
                if (r < 0)
                        return r;
                snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u", v + 1);
                /* schema 8 moves the samples aside (samples_v7) and
                 * converts none of them here: the writer does, in steps
                 * after READY (store_migrate_step, store-migrate.c) */
                r = db_exec(&s->d, schema_migrations[v]);
                /* a store without samples (a new one) has nothing to
                 * convert: the empty table goes at once */
                if (r >= 0 && v + 1 == 8) {
                        int64_t any;

                        r = db_query_i64(&s->d, "SELECT EXISTS (SELECT 1 FROM samples_v7)", NULL, 0, 0, &any);
                        if (r >= 0 && !any)
                                r = db_exec(&s->d, "DROP TABLE samples_v7");
                }
                if (r >= 0)
                        r = db_exec(&s->d, pragma);
                if (r >= 0)
                        r = db_exec(&s->d, "COMMIT");
                if (r < 0) {
                        (void) db_exec(&s->d, "ROLLBACK");
                        return r;
                }
        }
        return 0;
}

/* The store and SQLite's files beside it are private (privacy.h): judged,
 * tightened or refused; with create, a missing store is created 0600. */
static int store_make_private(store *s, bool create) {
        static const char *const suffixes[] = { "-wal", "-shm", "-journal" };
        int r;

        r = create ? privacy_make_file(s->path) : privacy_check_file(s->path);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s%s", s->path, suffixes[i]) < 0)
                        return log_oom();
                r = privacy_check_file(p);
        }
        return r;
}

/* A store object for path, no connection yet. Returns 0 or -ENOMEM,
 * logged. */
static int store_new(const char *path, store **ret) {
        _cleanup_(store_disconnectp) store *s = calloc(1, sizeof(*s));

        if (!s)
                return log_oom();
        s->path = strdup(path);
        s->d.path = s->path;
        if (!s->path)
                return log_oom();
        *ret = TAKE_PTR(s);
        return 0;
}

/* The pages the drain connection caches, in KiB (SQLite's default is
 * 2000). The cache is given back after each drain (store_release_memory),
 * so it only spares reading a page twice within one drain, from the
 * kernel's page cache; at the default it filled within every drain of a
 * build host and was 2 MiB of profd's peak. */
#define STORE_DRAIN_CACHE_KIB "512"

/* The drain connection, once SQLite opened the file: WAL, its files
 * private, the schema migrated (store-write.c and store-query.c then
 * prepare their statements). */
static int store_setup(store *s) {
        int64_t pages;
        int r;

        /* A drain may wait a little for a reader checkpointing; never forever. */
        sqlite3_busy_timeout(s->d.handle, 5000);
        /* A new file: 16 KiB pages and incremental auto-vacuum, both of
         * which SQLite only sets before the first table (then only a
         * VACUUM outside WAL changes them). A block spanning drains is
         * often 1-4 KiB: in a WITHOUT ROWID table a cell keeps at most
         * about a quarter of a page, the rest goes to overflow pages of
         * its own, mostly empty (a generated day: 45 MiB of 141 were such
         * slack with 4 KiB pages; docs/performance.md, Store size). */
        r = db_query_i64(&s->d, "PRAGMA page_count", NULL, 0, -1, &pages);
        if (r >= 0 && pages == 0)
                r = db_exec(&s->d, "PRAGMA page_size = 16384; PRAGMA auto_vacuum = INCREMENTAL;");
        if (r < 0)
                return r;
        /* WAL: readers never block the drain. synchronous=NORMAL: a power cut
         * can lose the last drains, never corrupt the file. */
        r = db_exec(&s->d, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;");
        if (r < 0)
                return r;
        r = db_limit_wal(&s->d);
        if (r < 0)
                return r;
        /* the -wal and -shm SQLite just created: private as the store */
        r = store_make_private(s, false);
        if (r < 0)
                return r;
        /* no page check here: it reads the whole file (seconds for a store
         * of hundreds of MiB, more under load), so store_check_start runs
         * it after READY; a file that is not a store, or whose header or
         * schema SQLite cannot read, fails above or in migrate() */
        r = migrate(s);
        if (r < 0)
                return r;
        /* After the migration, which may read the whole store once. */
        return db_exec(&s->d, "PRAGMA cache_size = -" STORE_DRAIN_CACHE_KIB);
}

int store_unusable(const store *s, int r) {
        if (r != -EIO && r != -EPROTO)
                return r;
        log_error("Store %s is not usable (corrupt or not a profd store?). Move it aside to start "
                  "a new one; profd does not delete it.", s->path);
        return -EPROTO;
}

/* The drain connection (store_open): the file created private if new,
 * opened read-write, set up. */
static int connect_drain(store *s) {
        int rc, r;

        /* created 0600 before SQLite opens it, which gives its -wal and
         * -shm the store's mode; ones that exist are judged as the store */
        r = store_make_private(s, true);
        if (r < 0)
                return r;
        rc = sqlite3_open_v2(s->path, &s->d.handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc != SQLITE_OK)
                return s->d.handle ? db_fail(&s->d, rc, "opening") : -ENOMEM;
        sqlite3_extended_result_codes(s->d.handle, 1);
        /* SQLite quietly falls back to read-only (an immutable file, a
         * read-only mount): every drain would fail, so refuse to start */
        if (sqlite3_db_readonly(s->d.handle, "main") == 1) {
                log_error("Store %s can only be opened read-only (immutable file or read-only file system?); "
                          "profd needs to write it.", s->path);
                return -EROFS;
        }
        return store_unusable(s, store_setup(s));
}

/* A connection of another thread to a store the daemon's own connection
 * created and migrated: read-only for queries, read-write for the export
 * outbox (which writes only its cursor). */
static int connect_secondary(store *s, bool writable) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int64_t version = -1;
        int rc;

        /* read-only: a query can never change the store, whatever it asks */
        rc = sqlite3_open_v2(s->path, &s->d.handle,
                             (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return s->d.handle ? db_fail(&s->d, rc, "opening for reading") : -ENOMEM;
        sqlite3_extended_result_codes(s->d.handle, 1);
        /* WAL readers only wait while a checkpoint resets the log; the
         * outbox's one-row cursor update waits at most for one drain's
         * transaction */
        sqlite3_busy_timeout(s->d.handle, 5000);
        rc = sqlite3_prepare_v2(s->d.handle, "PRAGMA user_version", -1, &st, NULL);
        if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                version = sqlite3_column_int64(st, 0);
        /* the daemon's own connection migrated it before readers open */
        if (version != (int64_t) schema_version) {
                log_error("Store %s has schema version %" PRId64 ", expected %u for reading.", s->path, version,
                          schema_version);
                return -EPROTO;
        }
        return 0;
}

int store_connect(const char *path, enum store_mode mode, store **ret) {
        _cleanup_(store_disconnectp) store *s = NULL;
        int r;

        r = store_new(path, &s);
        if (r < 0)
                return r;
        r = mode == STORE_MODE_DRAIN ? connect_drain(s) : connect_secondary(s, mode == STORE_MODE_OUTBOX);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

store *store_disconnect(store *s) {
        if (!s)
                return NULL;
        if (s->d.handle)
                sqlite3_close(s->d.handle);
        free(s->path);
        free(s);
        return NULL;
}

void store_release_memory(store *s) {
        (void) sqlite3_db_release_memory(s->d.handle);
}

const char *store_path(const store *s) {
        return s->path;
}

void store_interrupt(store *s) {
        sqlite3_interrupt(s->d.handle);
}

/* --- integrity check, in the background (store_check_start) ---------------- */

/* Lowest-but-one CPU priority for the check: it reads the whole file,
 * seconds of CPU for a large store, and must not slow drains or queries;
 * not 19, so it still finishes on a host kept busy by niced batch jobs. */
#define STORE_CHECK_NICE 15

struct store_check {
        char *path;
        pthread_t thread;
        pthread_mutex_t lock;
        bool stopping;                   /* atomic: store_check_free asks the check to end */
        struct store_check_status status; /* under lock */
};

static uint64_t realtime_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

const char *store_check_state_name(enum store_check_state state) {
        static const char *const names[_STORE_CHECK_STATE_MAX] = {
                [STORE_CHECK_RUNNING] = "running",
                [STORE_CHECK_OK] = "ok",
                [STORE_CHECK_FAILED] = "failed",
        };
        return state >= 0 && state < _STORE_CHECK_STATE_MAX ? names[state] : "unknown";
}

/* Appends one finding to msg (size bytes), "; " between them; a message
 * that does not fit ends in "...". */
static void check_message_add(char *msg, size_t size, const char *finding) {
        size_t n = strlen(msg);

        if (n + 4 >= size)
                return;
        snprintf(msg + n, size - n, "%s%s", n ? "; " : "", finding);
        if (strlen(msg) + 1 >= size)
                memcpy(msg + size - 4, "...", 4);
}

static int check_should_stop(void *userdata) {
        store_check *c = userdata;
        return __atomic_load_n(&c->stopping, __ATOMIC_RELAXED);
}

static void *check_main(void *userdata) {
        store_check *c = userdata;
        char msg[sizeof(c->status.message)] = "";
        sqlite3_stmt *st = NULL;
        sqlite3 *db = NULL;
        bool ok = false;
        int rc, rows = 0;

        (void) pthread_setname_np(pthread_self(), "profd-check");
        /* this thread only (a thread is a process to setpriority) */
        (void) setpriority(PRIO_PROCESS, (id_t) gettid(), STORE_CHECK_NICE);
        rc = sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc == SQLITE_OK) {
                /* the writer's checkpoints may make a reader wait a moment */
                sqlite3_busy_timeout(db, 5000);
                /* a check of gigabytes must not delay profd's exit:
                 * asked often enough to end within milliseconds */
                sqlite3_progress_handler(db, 10000, check_should_stop, c);
                rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
        }
        /* one row "ok", or one row per problem found */
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *row = (const char *) sqlite3_column_text(st, 0);

                rows++;
                if (rows == 1 && row && streq(row, "ok"))
                        ok = true;
                else {
                        ok = false;
                        /* SQLite names the database first: always "main" here */
                        static const char prefix[] = "*** in database main ***\n";
                        if (row && strncmp(row, prefix, strlen(prefix)) == 0)
                                row += strlen(prefix);
                        check_message_add(msg, sizeof(msg), row ? row : "(null)");
                }
                rc = SQLITE_OK;
        }
        if (rc != SQLITE_DONE && rc != SQLITE_INTERRUPT) {
                ok = false;
                check_message_add(msg, sizeof(msg), db ? sqlite3_errmsg(db) : "out of memory");
        }
        sqlite3_finalize(st);

        pthread_mutex_lock(&c->lock);
        if (rc != SQLITE_INTERRUPT) {
                c->status.finished_ns = realtime_ns();
                c->status.state = ok ? STORE_CHECK_OK : STORE_CHECK_FAILED;
                memcpy(c->status.message, msg, sizeof(msg));
        }
        pthread_mutex_unlock(&c->lock);
        sqlite3_close(db);

        if (rc == SQLITE_INTERRUPT)
                log_debug("Integrity check of store %s interrupted: profd is stopping.", c->path);
        else if (ok)
                log_info("Integrity check of store %s: ok.", c->path);
        else
                log_error("Integrity check of store %s failed: %s. profd goes on storing and answering what "
                          "it can read; to start a clean store, stop profd and move the file aside (profd "
                          "does not delete it).", c->path, msg);
        return NULL;
}

int store_check_start(const char *path, store_check **ret) {
        _cleanup_free_ store_check *c = calloc(1, sizeof(*c));
        _cleanup_free_ char *p = strdup(path);
        int r;

        if (!c || !p)
                return log_oom();
        pthread_mutex_init(&c->lock, NULL);
        c->path = p;
        c->status.state = STORE_CHECK_RUNNING;
        c->status.started_ns = realtime_ns();
        r = -pthread_create(&c->thread, NULL, check_main, c);
        if (r < 0) {
                pthread_mutex_destroy(&c->lock);
                return log_warning_errno(r, "Failed to start the integrity check of store %s: %m", path);
        }
        TAKE_PTR(p);
        *ret = TAKE_PTR(c);
        return 0;
}

void store_check_get(store_check *c, struct store_check_status *ret) {
        pthread_mutex_lock(&c->lock);
        *ret = c->status;
        pthread_mutex_unlock(&c->lock);
}

store_check *store_check_free(store_check *c) {
        if (!c)
                return NULL;
        __atomic_store_n(&c->stopping, true, __ATOMIC_RELAXED);
        pthread_join(c->thread, NULL);
        pthread_mutex_destroy(&c->lock);
        free(c->path);
        free(c);
        return NULL;
}

