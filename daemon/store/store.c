/* SQLite store: WAL mode, prepared statements, in-memory id caches for the
 * rows every drain references again (mappings, functions, locations). */
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

#include "cgroup.h"
#include "hashmap.h"
#include "log.h"
#include "macro.h"
#include "privacy.h"
#include "schema.h"

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
        STMT_INSERT_SAMPLE,
        STMT_SELECT_LOCATION_INFO,
        STMT_INSERT_LOCATION_LINE,
        STMT_SELECT_LOCATION_LINES,
        STMT_SELECT_STACK_FRAMES,
        STMT_UPSERT_THREAD,
        STMT_SELECT_LOCATION_RESOLVED,
        _STMT_MAX,
};

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_INSERT_DRAIN] = "INSERT INTO drains (start_ns, end_ns, samples, keys) VALUES (?1, ?2, 0, 0)",
        [STMT_UPDATE_DRAIN] = "UPDATE drains SET samples = ?2, keys = ?3 WHERE id = ?1",
        [STMT_INSERT_DROP] = "INSERT INTO drops (drain_id, reason, count) VALUES (?1, ?2, ?3) "
                             "ON CONFLICT (drain_id, reason) DO UPDATE SET count = count + excluded.count",
        [STMT_SELECT_MAPPING] = "SELECT id FROM mappings WHERE path = ?1 AND build_id = ?2",
        [STMT_INSERT_MAPPING] = "INSERT INTO mappings (path, build_id) VALUES (?1, ?2)",
        [STMT_SELECT_FUNCTION] = "SELECT id FROM functions WHERE mapping_id = ?1 AND raw_name = ?2",
        [STMT_INSERT_FUNCTION] = "INSERT INTO functions (mapping_id, raw_name, name) VALUES (?1, ?2, ?3)",
        [STMT_SELECT_LOCATION] = "SELECT id FROM locations WHERE mapping_id = ?1 AND address = ?2",
        [STMT_INSERT_LOCATION] = "INSERT INTO locations (mapping_id, address, function_id, kernel, unresolved) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_SELECT_STACK] = "SELECT id FROM stacks WHERE hash = ?1 AND frames = ?2 AND user_end IS ?3",
        [STMT_INSERT_STACK] = "INSERT INTO stacks (hash, frames, user_end) VALUES (?1, ?2, ?3)",
        [STMT_UPSERT_PROCESS] = "INSERT INTO processes (pid, start_ns, comm, exe, uid, cgroup, unit, container) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                                "ON CONFLICT (pid, start_ns) DO UPDATE SET comm = excluded.comm, "
                                "exe = coalesce(excluded.exe, exe), uid = coalesce(excluded.uid, uid), "
                                "cgroup = coalesce(excluded.cgroup, cgroup), "
                                "unit = CASE WHEN excluded.cgroup IS NULL THEN unit ELSE excluded.unit END, "
                                "container = CASE WHEN excluded.cgroup IS NULL THEN container ELSE excluded.container END",
        [STMT_SELECT_PROCESS] = "SELECT id FROM processes WHERE pid = ?1 AND start_ns = ?2",
        [STMT_INSERT_SAMPLE] = "INSERT INTO samples (drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, "
                               "stack_id, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        [STMT_SELECT_LOCATION_INFO] = "SELECT l.address, l.kernel, m.path, f.name, f.raw_name, m.build_id, l.unresolved "
                                      "FROM locations l "
                                      "JOIN mappings m ON m.id = l.mapping_id "
                                      "LEFT JOIN functions f ON f.id = l.function_id WHERE l.id = ?1",
        [STMT_INSERT_LOCATION_LINE] = "INSERT INTO location_lines (location_id, depth, function_id, file, line, inlined) "
                                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [STMT_SELECT_LOCATION_LINES] = "SELECT f.name, f.raw_name, ll.file, ll.line, ll.inlined FROM location_lines ll "
                                       "JOIN functions f ON f.id = ll.function_id "
                                       "WHERE ll.location_id = ?1 ORDER BY ll.depth DESC",
        [STMT_SELECT_STACK_FRAMES] = "SELECT frames, user_end FROM stacks WHERE id = ?1",
        [STMT_UPSERT_THREAD] = "INSERT INTO threads (process_id, tid, comm) VALUES (?1, ?2, ?3) "
                               "ON CONFLICT (process_id, tid) DO UPDATE SET comm = excluded.comm",
        [STMT_SELECT_LOCATION_RESOLVED] = "SELECT l.function_id IS NOT NULL FROM locations l "
                                          "JOIN mappings m ON m.id = l.mapping_id "
                                          "WHERE m.path = ?1 AND m.build_id = ?2 AND l.address = ?3",
};

struct store {
        sqlite3 *db;
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
        /* the drain being written */
        bool in_drain;
        int64_t drain_id;
        uint64_t drain_samples, drain_keys;
        /* a reader (store_open_reader): locations loaded by earlier
         * queries, kept (see query_location_cache) */
        bool reader;
        hashmap *query_locations;
        uint64_t query_locations_deleted;
        struct location_info **transient; /* see transient_add */
        size_t n_transient, transient_cap;
};

static int sqlite_to_errno(int rc) {
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

static int store_fail(store *s, int rc, const char *what) {
        int r = sqlite_to_errno(rc);
        if (r == -ECANCELED) /* a cancelled query, not a problem with the store */
                return r;
        log_error("Store %s: %s failed: %s", s->path, what, sqlite3_errmsg(s->db));
        return r;
}

/* Frees a map whose keys and values are both malloc'd; returns NULL. */
static hashmap *hashmap_free_with_keys_and_values(hashmap *m) {
        size_t state = 0;
        const void *k;
        void *v;

        while (m && hashmap_iterate(m, &state, &k, &v))
                free(v);
        return hashmap_free_with_keys(m);
}

static int caches_reset(store *s) {
        hashmap_free_with_keys(s->mapping_ids);
        hashmap_free_with_keys(s->function_ids);
        hashmap_free_with_keys(s->location_ids);
        hashmap_free_with_keys(s->process_ids);
        hashmap_free_with_keys_and_values(s->thread_names);
        s->mapping_ids = hashmap_new_string();
        s->function_ids = hashmap_new_string();
        s->location_ids = hashmap_new_string();
        s->process_ids = hashmap_new_string();
        s->thread_names = hashmap_new_string();
        if (!s->mapping_ids || !s->function_ids || !s->location_ids || !s->process_ids || !s->thread_names)
                return -ENOMEM;
        return 0;
}

static int exec_sql(store *s, const char *sql) {
        char *err = NULL;
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, &err);

        if (rc != SQLITE_OK) {
                log_error("Store %s: %s", s->path, err ? err : sqlite3_errstr(rc));
                sqlite3_free(err);
                return sqlite_to_errno(rc);
        }
        return 0;
}

static int migrate(store *s) {
        sqlite3_stmt *st = NULL;
        int64_t version;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, "reading the schema version");
        rc = sqlite3_step(st);
        version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_finalize(st);
        if (version < 0)
                return store_fail(s, rc, "reading the schema version");
        if (version > (int64_t) schema_version) {
                log_error("Store %s has schema version %" PRId64 ", newer than this profd's %u; "
                          "use a newer profd or another --store.", s->path, version, schema_version);
                return -EPROTO;
        }
        for (unsigned v = version; v < schema_version; v++) {
                char pragma[64];

                log_info("Migrating store %s to schema version %u.", s->path, v + 1);
                r = exec_sql(s, "BEGIN IMMEDIATE");
                if (r < 0)
                        return r;
                snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u", v + 1);
                r = exec_sql(s, schema_migrations[v]);
                if (r >= 0)
                        r = exec_sql(s, pragma);
                if (r >= 0)
                        r = exec_sql(s, "COMMIT");
                if (r < 0) {
                        (void) exec_sql(s, "ROLLBACK");
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

int store_open(const char *path, store **ret) {
        store *s;
        int rc, r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->path = strdup(path);
        if (!s->path || caches_reset(s) < 0) {
                store_close(s);
                return log_oom();
        }
        /* created 0600 before SQLite opens it, which gives its -wal and
         * -shm the store's mode; ones that exist are judged as the store */
        r = store_make_private(s, true);
        if (r < 0) {
                store_close(s);
                return r;
        }
        rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK) {
                r = s->db ? store_fail(s, rc, "opening") : -ENOMEM;
                store_close(s);
                return r;
        }
        sqlite3_extended_result_codes(s->db, 1);
        /* SQLite quietly falls back to read-only (an immutable file, a
         * read-only mount): every drain would fail, so refuse to start */
        if (sqlite3_db_readonly(s->db, "main") == 1) {
                log_error("Store %s can only be opened read-only (immutable file or read-only file system?); "
                          "profd needs to write it.", path);
                store_close(s);
                return -EROFS;
        }
        /* A drain may wait a little for a reader checkpointing; never forever. */
        sqlite3_busy_timeout(s->db, 5000);
        /* WAL: readers never block the drain. synchronous=NORMAL: a power cut
         * can lose the last drains, never corrupt the file. */
        r = exec_sql(s, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;");
        if (r < 0)
                goto fail;
        /* the -wal and -shm SQLite just created: private as the store */
        r = store_make_private(s, false);
        if (r < 0)
                goto fail;
        /* no page check here: it reads the whole file (seconds for a store
         * of hundreds of MiB, more under load), so store_check_start runs
         * it after READY; a file that is not a store, or whose header or
         * schema SQLite cannot read, fails above or in migrate() */
        r = migrate(s);
        if (r < 0)
                goto fail;
        for (int i = 0; i < _STMT_MAX; i++) {
                rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmts[i], NULL);
                if (rc != SQLITE_OK) {
                        r = store_fail(s, rc, "preparing statements");
                        goto fail;
                }
        }
        *ret = s;
        return 0;
fail:
        if (r == -EIO || r == -EPROTO)
                log_error("Store %s is not usable (corrupt or not a profd store?). Move it aside to start "
                          "a new one; profd does not delete it.", path);
        store_close(s);
        return r == -EIO ? -EPROTO : r;
}

struct location_info;
static void location_cache_free(hashmap *m);
static void transient_release(store *s);

store *store_close(store *s) {
        if (!s)
                return NULL;
        for (int i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        if (s->db)
                sqlite3_close(s->db);
        hashmap_free_with_keys(s->mapping_ids);
        hashmap_free_with_keys(s->function_ids);
        hashmap_free_with_keys(s->location_ids);
        hashmap_free_with_keys(s->process_ids);
        hashmap_free_with_keys_and_values(s->thread_names);
        location_cache_free(s->query_locations);
        transient_release(s);
        free(s->transient);
        free(s->path);
        free(s);
        return NULL;
}

const char *store_path(const store *s) {
        return s->path;
}

/* --- reader connections (daemon/serve/query.c, daemon/export/) ------------------ */

/* A connection of another thread to a store the daemon's own connection
 * created and migrated: read-only for queries, read-write for the export
 * outbox (which writes only its cursor). Either keeps the locations it
 * loaded from one query to the next (query_location_cache). */
static int open_secondary(const char *path, bool writable, store **ret) {
        sqlite3_stmt *st = NULL;
        int64_t version = -1;
        store *s;
        int rc, r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->reader = true;
        s->path = strdup(path);
        if (!s->path || caches_reset(s) < 0) {
                store_close(s);
                return log_oom();
        }
        /* read-only: a query can never change the store, whatever it asks */
        rc = sqlite3_open_v2(path, &s->db, (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc != SQLITE_OK) {
                r = s->db ? store_fail(s, rc, "opening for reading") : -ENOMEM;
                store_close(s);
                return r;
        }
        sqlite3_extended_result_codes(s->db, 1);
        /* WAL readers only wait while a checkpoint resets the log; the
         * outbox's one-row cursor update waits at most for one drain's
         * transaction */
        sqlite3_busy_timeout(s->db, 5000);
        rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
        if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                version = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        /* the daemon's own connection migrated it before readers open */
        if (version != (int64_t) schema_version) {
                log_error("Store %s has schema version %" PRId64 ", expected %u for reading.", path, version,
                          schema_version);
                store_close(s);
                return -EPROTO;
        }
        for (int i = 0; i < _STMT_MAX; i++) {
                rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmts[i], NULL);
                if (rc != SQLITE_OK) {
                        r = store_fail(s, rc, "preparing statements");
                        store_close(s);
                        return r;
                }
        }
        *ret = s;
        return 0;
}

int store_open_reader(const char *path, store **ret) {
        return open_secondary(path, false, ret);
}

int store_open_outbox(const char *path, store **ret) {
        return open_secondary(path, true, ret);
}

void store_interrupt(store *s) {
        sqlite3_interrupt(s->db);
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
        store_check *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return log_oom();
        c->path = strdup(path);
        if (!c->path) {
                free(c);
                return log_oom();
        }
        pthread_mutex_init(&c->lock, NULL);
        c->status.state = STORE_CHECK_RUNNING;
        c->status.started_ns = realtime_ns();
        r = -pthread_create(&c->thread, NULL, check_main, c);
        if (r < 0) {
                log_warning_errno(r, "Failed to start the integrity check of store %s: %m", path);
                pthread_mutex_destroy(&c->lock);
                free(c->path);
                free(c);
                return r;
        }
        *ret = c;
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

/* Runs a statement that returns nothing. */
static int step_done(store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (rc != SQLITE_DONE)
                return store_fail(s, rc, what);
        return 0;
}

/* Runs a statement that returns at most one integer. Returns 1 with
 * *ret set, 0 for no row, or a negative errno. */
static int step_id(store *s, sqlite3_stmt *st, int64_t *ret, const char *what) {
        int rc = sqlite3_step(st), r = 0;

        if (rc == SQLITE_ROW) {
                *ret = sqlite3_column_int64(st, 0);
                r = 1;
        } else if (rc != SQLITE_DONE)
                r = store_fail(s, rc, what);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return r;
}

/* Looks key up in cache, else runs select, else insert; caches the id. The
 * statements are already bound by the caller. */
static int intern(store *s, hashmap *cache, const char *key, sqlite3_stmt *select, sqlite3_stmt *insert,
                  int64_t *ret) {
        void *v;
        char *k;
        int r;

        if (hashmap_get(cache, key, &v) >= 0) {
                *ret = (int64_t) (intptr_t) v;
                sqlite3_clear_bindings(select);
                sqlite3_clear_bindings(insert);
                return 0;
        }
        r = step_id(s, select, ret, "lookup");
        if (r < 0)
                return r;
        if (r == 0) {
                r = step_done(s, insert, "insert");
                if (r < 0)
                        return r;
                *ret = sqlite3_last_insert_rowid(s->db);
        } else
                sqlite3_clear_bindings(insert);
        k = strdup(key);
        if (!k)
                return -ENOMEM;
        r = hashmap_put(cache, k, (void *) (intptr_t) *ret);
        if (r < 0)
                free(k);
        return r;
}

static int mapping_id(store *s, const char *path, const char *build_id, int64_t *ret) {
        _cleanup_free_ char *key = NULL;
        const char *bid = build_id ? build_id : "";

        if (asprintf(&key, "%s\n%s", path, bid) < 0)
                return -ENOMEM;
        sqlite3_bind_text(s->stmts[STMT_SELECT_MAPPING], 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->stmts[STMT_SELECT_MAPPING], 2, bid, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->stmts[STMT_INSERT_MAPPING], 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->stmts[STMT_INSERT_MAPPING], 2, bid, -1, SQLITE_STATIC);
        return intern(s, s->mapping_ids, key, s->stmts[STMT_SELECT_MAPPING], s->stmts[STMT_INSERT_MAPPING], ret);
}

static int function_id(store *s, int64_t mapping, const char *name, const char *raw_name, int64_t *ret) {
        _cleanup_free_ char *key = NULL;

        if (!raw_name)
                raw_name = name;
        if (asprintf(&key, "%" PRId64 "\n%s", mapping, raw_name) < 0)
                return -ENOMEM;
        sqlite3_bind_int64(s->stmts[STMT_SELECT_FUNCTION], 1, mapping);
        sqlite3_bind_text(s->stmts[STMT_SELECT_FUNCTION], 2, raw_name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s->stmts[STMT_INSERT_FUNCTION], 1, mapping);
        sqlite3_bind_text(s->stmts[STMT_INSERT_FUNCTION], 2, raw_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s->stmts[STMT_INSERT_FUNCTION], 3, name, -1, SQLITE_STATIC);
        return intern(s, s->function_ids, key, s->stmts[STMT_SELECT_FUNCTION], s->stmts[STMT_INSERT_FUNCTION], ret);
}

/* Stores the inline chain of a location that was just created. */
static int location_lines_insert(store *s, int64_t location, int64_t mapping, const struct store_frame *f) {
        sqlite3_stmt *ins = s->stmts[STMT_INSERT_LOCATION_LINE];
        int r;

        for (size_t i = 0; i < f->n_lines; i++) {
                const struct store_line *l = &f->lines[i];
                int64_t fn;

                r = function_id(s, mapping, l->function, l->raw_function, &fn);
                if (r < 0)
                        return r;
                sqlite3_bind_int64(ins, 1, location);
                sqlite3_bind_int64(ins, 2, (int64_t) i);
                sqlite3_bind_int64(ins, 3, fn);
                sqlite3_bind_text(ins, 4, l->file, -1, SQLITE_STATIC);
                sqlite3_bind_int64(ins, 5, l->line);
                sqlite3_bind_int(ins, 6, l->inlined);
                r = step_done(s, ins, "location line insert");
                if (r < 0)
                        return r;
        }
        return 0;
}

static int location_id(store *s, const struct store_frame *f, int64_t *ret) {
        sqlite3_stmt *sel = s->stmts[STMT_SELECT_LOCATION], *ins = s->stmts[STMT_INSERT_LOCATION];
        int64_t mapping, function = 0;
        char key[64], *k;
        void *v;
        int r;

        r = mapping_id(s, f->module, f->build_id, &mapping);
        if (r < 0)
                return r;
        snprintf(key, sizeof(key), "%" PRId64 "\n%" PRIx64, mapping, f->address);
        if (hashmap_get(s->location_ids, key, &v) >= 0) {
                *ret = (int64_t) (intptr_t) v;
                return 0;
        }
        sqlite3_bind_int64(sel, 1, mapping);
        sqlite3_bind_int64(sel, 2, (int64_t) f->address);
        r = step_id(s, sel, ret, "location lookup");
        if (r < 0)
                return r;
        if (r == 0) {
                /* new: with its function and the inline chain debug info gave */
                if (f->function) {
                        r = function_id(s, mapping, f->function, f->raw_function, &function);
                        if (r < 0)
                                return r;
                }
                sqlite3_bind_int64(ins, 1, mapping);
                sqlite3_bind_int64(ins, 2, (int64_t) f->address);
                if (f->function)
                        sqlite3_bind_int64(ins, 3, function);
                else
                        sqlite3_bind_null(ins, 3);
                sqlite3_bind_int(ins, 4, f->kernel);
                if (f->unresolved != STORE_UNRESOLVED_NONE && !f->function && !f->kernel)
                        sqlite3_bind_int(ins, 5, f->unresolved);
                else
                        sqlite3_bind_null(ins, 5);
                r = step_done(s, ins, "location insert");
                if (r < 0)
                        return r;
                *ret = sqlite3_last_insert_rowid(s->db);
                r = location_lines_insert(s, *ret, mapping, f);
                if (r < 0)
                        return r;
        }
        k = strdup(key);
        if (!k)
                return -ENOMEM;
        r = hashmap_put(s->location_ids, k, (void *) (intptr_t) *ret);
        if (r < 0)
                free(k);
        return r;
}

int store_location_resolved(store *s, const char *module, const char *build_id, uint64_t address) {
        sqlite3_stmt *st = s->stmts[STMT_SELECT_LOCATION_RESOLVED];
        int64_t resolved = 0;
        int r;

        sqlite3_bind_text(st, 1, module, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, build_id ? build_id : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) address);
        r = step_id(s, st, &resolved, "location lookup");
        if (r <= 0)
                return r;
        return resolved != 0;
}

/* Binds a stack's user_end: NULL for STORE_END_UNKNOWN. */
static void bind_user_end(sqlite3_stmt *st, int i, int user_end) {
        if (user_end == STORE_END_UNKNOWN)
                sqlite3_bind_null(st, i);
        else
                sqlite3_bind_int(st, i, user_end);
}

/* A stack is its frames and how its user part ended: the same frames
 * truncated and complete are two rows, so each answers for its own end. */
static int stack_id(store *s, const int64_t *locations, size_t n, int user_end, int64_t *ret) {
        size_t bytes = n * sizeof(int64_t);
        uint64_t h = hash_bytes(locations, bytes);
        sqlite3_stmt *sel = s->stmts[STMT_SELECT_STACK], *ins = s->stmts[STMT_INSERT_STACK];
        int r;

        /* locations are stored little-endian; this build only targets
         * little-endian machines (x86-64, arm64), asserted below */
        _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stack blobs are little-endian");
        sqlite3_bind_int64(sel, 1, (int64_t) h);
        sqlite3_bind_blob(sel, 2, locations, bytes, SQLITE_STATIC);
        bind_user_end(sel, 3, user_end);
        r = step_id(s, sel, ret, "stack lookup");
        if (r != 0)
                return r < 0 ? r : 0;
        sqlite3_bind_int64(ins, 1, (int64_t) h);
        sqlite3_bind_blob(ins, 2, locations, bytes, SQLITE_STATIC);
        bind_user_end(ins, 3, user_end);
        r = step_done(s, ins, "stack insert");
        if (r < 0)
                return r;
        *ret = sqlite3_last_insert_rowid(s->db);
        return 0;
}

static int process_id(store *s, const struct store_process *p, int64_t *ret) {
        sqlite3_stmt *up = s->stmts[STMT_UPSERT_PROCESS], *sel = s->stmts[STMT_SELECT_PROCESS];
        _cleanup_free_ char *unit = NULL, *container = NULL;
        char key[64];
        void *v;
        int r;

        snprintf(key, sizeof(key), "%" PRIu32 "\n%" PRIu64, p->pid, p->start_ns);
        if (hashmap_get(s->process_ids, key, &v) >= 0) {
                *ret = (int64_t) (intptr_t) v;
                return 0;
        }
        sqlite3_bind_int64(up, 1, p->pid);
        sqlite3_bind_int64(up, 2, (int64_t) p->start_ns);
        sqlite3_bind_text(up, 3, p->comm ? p->comm : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 4, p->exe, -1, SQLITE_STATIC);
        if (p->have_uid)
                sqlite3_bind_int64(up, 5, p->uid);
        sqlite3_bind_text(up, 6, p->cgroup, -1, SQLITE_STATIC);
        /* derived once here, so queries filter on plain columns */
        if (cgroup_unit(p->cgroup, &unit) == -ENOMEM || cgroup_container_id(p->cgroup, &container) == -ENOMEM) {
                sqlite3_clear_bindings(up);
                return -ENOMEM;
        }
        sqlite3_bind_text(up, 7, unit, -1, SQLITE_STATIC);
        sqlite3_bind_text(up, 8, container, -1, SQLITE_STATIC);
        r = step_done(s, up, "process insert");
        if (r < 0)
                return r;
        sqlite3_bind_int64(sel, 1, p->pid);
        sqlite3_bind_int64(sel, 2, (int64_t) p->start_ns);
        r = step_id(s, sel, ret, "process lookup");
        if (r <= 0)
                return r < 0 ? r : -EIO;
        char *k = strdup(key);
        if (!k)
                return -ENOMEM;
        r = hashmap_put(s->process_ids, k, (void *) (intptr_t) *ret);
        if (r < 0)
                free(k);
        return r;
}

/* A thread's name as the kernel keeps it: TASK_COMM_LEN, with the NUL. */
#define THREAD_NAME_SIZE 16

/* Stores the name of thread tid of process proc when it differs from the
 * one stored (the cache knows; its values are THREAD_NAME_SIZE buffers,
 * rewritten in place when a thread is renamed). */
static int thread_name(store *s, int64_t proc, uint32_t tid, const char *comm) {
        sqlite3_stmt *up = s->stmts[STMT_UPSERT_THREAD];
        _cleanup_free_ char *k = NULL, *name = NULL;
        char key[64], *cached = NULL;
        void *v;
        int r;

        snprintf(key, sizeof(key), "%" PRId64 "\n%" PRIu32, proc, tid);
        if (hashmap_get(s->thread_names, key, &v) >= 0) {
                cached = v;
                if (strncmp(cached, comm, THREAD_NAME_SIZE - 1) == 0)
                        return 0;
        }
        sqlite3_bind_int64(up, 1, proc);
        sqlite3_bind_int64(up, 2, tid);
        sqlite3_bind_text(up, 3, comm, -1, SQLITE_STATIC);
        r = step_done(s, up, "thread insert");
        if (r < 0)
                return r;
        if (cached) {
                snprintf(cached, THREAD_NAME_SIZE, "%s", comm);
                return 0;
        }
        k = strdup(key);
        name = malloc(THREAD_NAME_SIZE);
        if (!k || !name)
                return -ENOMEM;
        snprintf(name, THREAD_NAME_SIZE, "%s", comm);
        r = hashmap_put(s->thread_names, k, name);
        if (r < 0)
                return r;
        TAKE_PTR(k);
        TAKE_PTR(name);
        return 0;
}

int store_drain_begin(store *s, uint64_t start_ns, uint64_t end_ns) {
        int r;

        r = exec_sql(s, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        s->in_drain = true;
        sqlite3_bind_int64(s->stmts[STMT_INSERT_DRAIN], 1, (int64_t) start_ns);
        sqlite3_bind_int64(s->stmts[STMT_INSERT_DRAIN], 2, (int64_t) end_ns);
        r = step_done(s, s->stmts[STMT_INSERT_DRAIN], "drain insert");
        if (r < 0)
                return r;
        s->drain_id = sqlite3_last_insert_rowid(s->db);
        s->drain_samples = s->drain_keys = 0;
        return 0;
}

int store_drain_add(store *s, const struct store_sample *smp) {
        _cleanup_free_ int64_t *locs = calloc(smp->n_frames ? smp->n_frames : 1, sizeof(int64_t));
        sqlite3_stmt *ins = s->stmts[STMT_INSERT_SAMPLE];
        int64_t stack, proc;
        int r;

        if (!locs)
                return -ENOMEM;
        for (size_t i = 0; i < smp->n_frames; i++) {
                r = location_id(s, &smp->frames[i], &locs[i]);
                if (r < 0)
                        return r;
        }
        r = stack_id(s, locs, smp->n_frames, smp->user_end, &stack);
        if (r < 0)
                return r;
        r = process_id(s, smp->process, &proc);
        if (r < 0)
                return r;
        if (smp->thread_comm) {
                r = thread_name(s, proc, smp->tid, smp->thread_comm);
                if (r < 0)
                        return r;
        }
        sqlite3_bind_int64(ins, 1, s->drain_id);
        sqlite3_bind_int64(ins, 2, proc);
        sqlite3_bind_int64(ins, 3, smp->tid);
        sqlite3_bind_int64(ins, 4, (int64_t) smp->cgroup_id);
        sqlite3_bind_int(ins, 5, smp->kind);
        sqlite3_bind_int(ins, 6, smp->state);
        sqlite3_bind_int64(ins, 7, smp->peer_tid);
        sqlite3_bind_int64(ins, 8, stack);
        sqlite3_bind_int64(ins, 9, (int64_t) smp->value);
        r = step_done(s, ins, "sample insert");
        if (r < 0)
                return r;
        if (smp->kind == 0) /* PROFD_KIND_CPU: values of other kinds are ns */
                s->drain_samples += smp->value;
        s->drain_keys++;
        return 0;
}

int store_drain_drop(store *s, const char *reason, uint64_t count) {
        sqlite3_stmt *st = s->stmts[STMT_INSERT_DROP];

        if (count == 0)
                return 0;
        sqlite3_bind_int64(st, 1, s->drain_id);
        sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) count);
        return step_done(s, st, "drop insert");
}

int store_drain_commit(store *s, int64_t *ret_drain_id, uint64_t *ret_samples, uint64_t *ret_keys) {
        sqlite3_stmt *st = s->stmts[STMT_UPDATE_DRAIN];
        int r;

        sqlite3_bind_int64(st, 1, s->drain_id);
        sqlite3_bind_int64(st, 2, (int64_t) s->drain_samples);
        sqlite3_bind_int64(st, 3, (int64_t) s->drain_keys);
        r = step_done(s, st, "drain update");
        if (r < 0)
                return r;
        r = exec_sql(s, "COMMIT");
        if (r < 0)
                return r;
        s->in_drain = false;
        if (ret_drain_id)
                *ret_drain_id = s->drain_id;
        if (ret_samples)
                *ret_samples = s->drain_samples;
        if (ret_keys)
                *ret_keys = s->drain_keys;
        return 0;
}

void store_drain_abort(store *s) {
        if (!sqlite3_get_autocommit(s->db))
                (void) exec_sql(s, "ROLLBACK");
        s->in_drain = false;
        /* ids cached during the transaction point at rows that are gone */
        if (caches_reset(s) < 0)
                log_oom();
}

void store_forget_ids(store *s) {
        /* retention (daemon/store/retention.c) deleted rows these may point at */
        if (caches_reset(s) < 0)
                log_oom();
}

/* A location as queries return it: one frame, or several for inlined calls.
 * Strings are owned here. */
struct location_info {
        struct store_frame_out *frames; /* outermost first */
        size_t n;
        char **strings;
        size_t n_strings;
};

static void location_info_free(struct location_info *li) {
        if (li) {
                for (size_t i = 0; i < li->n_strings; i++)
                        free(li->strings[i]);
                free(li->strings);
                free(li->frames);
                free(li);
        }
}

/* Keeps a copy of s (NULL stays NULL) owned by li. */
static int li_strdup(struct location_info *li, const char *s, const char **ret) {
        char **ns;
        char *c;

        if (!s) {
                *ret = NULL;
                return 0;
        }
        c = strdup(s);
        ns = c ? realloc(li->strings, (li->n_strings + 1) * sizeof(char *)) : NULL;
        if (!ns) {
                free(c);
                return -ENOMEM;
        }
        li->strings = ns;
        li->strings[li->n_strings++] = c;
        *ret = c;
        return 0;
}

static const char *path_basename(const char *p) {
        const char *b = strrchr(p, '/');
        return b ? b + 1 : p;
}

/* Adds the inline chain of location id to li; none when it has no lines. */
static int load_location_lines(store *s, int64_t id, const struct store_frame_out *base, struct location_info *li) {
        sqlite3_stmt *st = s->stmts[STMT_SELECT_LOCATION_LINES];
        int rc, r = 0;

        sqlite3_bind_int64(st, 1, id);
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_frame_out *nf = realloc(li->frames, (li->n + 1) * sizeof(*nf));
                struct store_frame_out *f;

                if (!nf) {
                        r = -ENOMEM;
                        break;
                }
                li->frames = nf;
                f = &li->frames[li->n++];
                *f = *base;
                f->resolved = true;
                f->line = (unsigned) sqlite3_column_int64(st, 3);
                f->inlined = sqlite3_column_int(st, 4);
                if ((r = li_strdup(li, (const char *) sqlite3_column_text(st, 0), &f->name)) < 0 ||
                    (r = li_strdup(li, (const char *) sqlite3_column_text(st, 1), &f->raw_name)) < 0 ||
                    (r = li_strdup(li, (const char *) sqlite3_column_text(st, 2), &f->file)) < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, "location lines lookup");
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return r;
}

static int load_location(store *s, int64_t id, struct location_info **ret) {
        sqlite3_stmt *st = s->stmts[STMT_SELECT_LOCATION_INFO];
        struct store_frame_out base = {};
        struct location_info *li;
        char *unresolved = NULL;
        int rc, r = 0;

        li = calloc(1, sizeof(*li));
        if (!li)
                return -ENOMEM;
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                uint64_t address = (uint64_t) sqlite3_column_int64(st, 0);
                const char *module = (const char *) sqlite3_column_text(st, 2);
                const char *fn = (const char *) sqlite3_column_text(st, 3);
                const char *raw = (const char *) sqlite3_column_text(st, 4);
                const char *build_id = (const char *) sqlite3_column_text(st, 5);
                int64_t why = sqlite3_column_int64(st, 6); /* NULL reads as 0: not known */

                base.kernel = sqlite3_column_int(st, 1);
                base.address = address;
                /* a stack that could not be walked has no address to give */
                base.has_address = !module || !streq(module, "[lost]");
                /* the writer puts perf-map and anonymous code in [jit]; its
                 * build_id is a tag telling processes apart, not a build-id */
                base.jit = module && streq(module, "[jit]");
                r = li_strdup(li, module ? module : "[unknown]", &base.module);
                if (r >= 0 && build_id && build_id[0] && !base.jit)
                        r = li_strdup(li, build_id, &base.build_id);
                if (r >= 0 && fn) {
                        base.resolved = true;
                        r = li_strdup(li, fn, &base.name);
                        if (r >= 0)
                                r = li_strdup(li, raw, &base.raw_name);
                } else if (r >= 0) {
                        base.unresolved = why > 0 && why < _STORE_UNRESOLVED_MAX ? (uint8_t) why
                                                                                  : STORE_UNRESOLVED_NONE;
                        /* kept as module+0xoffset, never dropped */
                        if (asprintf(&unresolved, "%s+0x%" PRIx64, path_basename(base.module), address) < 0)
                                r = -ENOMEM;
                        else
                                r = li_strdup(li, unresolved, &base.name);
                        base.raw_name = base.name;
                }
        } else
                r = rc == SQLITE_DONE ? -ENOENT : store_fail(s, rc, "location lookup");
        free(unresolved);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (r >= 0)
                r = load_location_lines(s, id, &base, li);
        if (r >= 0 && li->n == 0) {
                li->frames = malloc(sizeof(*li->frames));
                if (!li->frames)
                        r = -ENOMEM;
                else
                        li->frames[li->n++] = base;
        }
        if (r < 0) {
                location_info_free(li);
                return r;
        }
        *ret = li;
        return 0;
}

static void location_cache_free(hashmap *m) {
        void *v;
        size_t i = 0;

        if (!m)
                return;
        while (hashmap_iterate(m, &i, NULL, &v))
                location_info_free(v);
        hashmap_free(m);
}

static bool is_glob(const char *s) {
        return s && strpbrk(s, "*?[");
}

/* A statement's text, built from fixed fragments only: what varies between
 * queries is which filters apply, never their values, which are bound by
 * name (":pid") afterwards. */
struct sql_text {
        char *buf;
        size_t len, cap;
        bool oom;
};

static void sql_add(struct sql_text *t, const char *fragment) {
        size_t n = strlen(fragment);

        if (t->oom)
                return;
        if (t->len + n + 1 > t->cap) {
                size_t cap = MAX(t->cap * 2, t->len + n + 1);
                char *b = realloc(t->buf, MAX(cap, (size_t) 512));
                if (!b) {
                        t->oom = true;
                        return;
                }
                t->buf = b;
                t->cap = MAX(cap, (size_t) 512);
        }
        memcpy(t->buf + t->len, fragment, n + 1);
        t->len += n;
}

static void sql_add_process_filters(struct sql_text *t, const struct store_query *q);

/* The FROM and WHERE clauses a query's filters make.
 *
 * The plan (docs/performance.md, Queries): drains of the window first (by
 * drains_end), then their samples of the kind through the covering index
 * samples_query (schema/0004), whose next column is the process: the
 * process filters become one set of process ids, computed once, so a
 * filtered query seeks to that process's samples in each drain and an
 * unfiltered one never reads the samples table itself. CROSS JOIN fixes
 * that order: without statistics SQLite would rather walk samples_stack
 * for the GROUP BY, reading every sample of the store for any window.
 * `with_process` joins processes for the columns a grouped query shows. */
static void sql_add_filters(struct sql_text *t, const struct store_query *q, bool with_process) {
        bool process_filter = q->pid || q->comm || q->exe || q->have_uid || q->only_uid || q->cgroup || q->unit ||
                              q->container;

        sql_add(t, " FROM drains d CROSS JOIN samples s ON s.drain_id = d.id");
        if (with_process)
                sql_add(t, " JOIN processes p ON p.id = s.process_id");
        if (with_process && q->group == STORE_GROUP_THREAD)
                sql_add(t, " LEFT JOIN threads th ON th.process_id = s.process_id AND th.tid = s.tid");
        sql_add(t, " WHERE s.kind = :kind");
        if (q->drain_id > 0)
                sql_add(t, " AND d.id = :drain");
        else
                /* every drain interval that overlaps the window */
                sql_add(t, " AND d.end_ns >= :from AND d.start_ns <= :to");
        if (q->tid)
                sql_add(t, " AND s.tid = :tid");
        if (q->state_mask)
                sql_add(t, " AND ((1 << s.state) & :states) != 0");
        if (!process_filter)
                return;
        sql_add(t, " AND s.process_id IN (SELECT p.id FROM processes p WHERE 1");
        sql_add_process_filters(t, q);
        sql_add(t, ")");
}

/* The conditions on processes (alias p) of sql_add_filters. */
static void sql_add_process_filters(struct sql_text *t, const struct store_query *q) {
        if (q->pid)
                sql_add(t, " AND p.pid = :pid");
        if (q->comm)
                sql_add(t, is_glob(q->comm) ? " AND p.comm GLOB :comm" : " AND p.comm = :comm");
        if (q->exe)
                sql_add(t, is_glob(q->exe) ? " AND p.exe GLOB :exe" : " AND p.exe = :exe");
        if (q->have_uid)
                sql_add(t, " AND p.uid = :uid");
        if (q->only_uid)
                sql_add(t, " AND p.uid = :own_uid");
        if (q->cgroup) {
                if (is_glob(q->cgroup))
                        /* the matching cgroups and their subtrees ('*' matches '/') */
                        sql_add(t, " AND (p.cgroup GLOB :cgroup OR p.cgroup GLOB :cgroup || '/*')");
                else
                        /* that cgroup and below, not its siblings that share a
                         * prefix (/a.service must not match /a.service-2) */
                        sql_add(t, " AND (p.cgroup = :cgroup OR substr(p.cgroup, 1, length(:cgroup_dir)) = :cgroup_dir)");
        }
        if (q->unit)
                sql_add(t, is_glob(q->unit) ? " AND p.unit GLOB :unit" : " AND p.unit = :unit");
        if (q->container)
                sql_add(t, " AND substr(p.container, 1, length(:container)) = :container");
}

static void bind_i64(sqlite3_stmt *st, const char *name, int64_t v) {
        int i = sqlite3_bind_parameter_index(st, name);
        if (i > 0)
                sqlite3_bind_int64(st, i, v);
}

static void bind_text(sqlite3_stmt *st, const char *name, const char *v) {
        int i = sqlite3_bind_parameter_index(st, name);
        if (i > 0)
                sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/* Prepares the statement t built and binds what q filters on. */
static int query_prepare(store *s, struct sql_text *t, const struct store_query *q, sqlite3_stmt **ret) {
        _cleanup_free_ char *cgroup_dir = NULL;
        sqlite3_stmt *st = NULL;
        int rc;

        if (t->oom)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->db, t->buf, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, "preparing the query");
        bind_i64(st, ":kind", q->kind);
        bind_i64(st, ":drain", q->drain_id);
        bind_i64(st, ":from", (int64_t) q->from_ns);
        bind_i64(st, ":to", (int64_t) q->to_ns);
        bind_i64(st, ":pid", q->pid);
        bind_i64(st, ":tid", q->tid);
        bind_text(st, ":comm", q->comm);
        bind_text(st, ":exe", q->exe);
        bind_i64(st, ":uid", q->filter_uid);
        bind_i64(st, ":own_uid", q->uid);
        bind_text(st, ":cgroup", q->cgroup);
        if (q->cgroup && !is_glob(q->cgroup)) {
                size_t n = strlen(q->cgroup);
                /* "/" is the root: everything is below it */
                if (asprintf(&cgroup_dir, "%s%s", q->cgroup, n > 0 && q->cgroup[n - 1] == '/' ? "" : "/") < 0) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
                bind_text(st, ":cgroup_dir", cgroup_dir);
        }
        bind_text(st, ":unit", q->unit);
        bind_text(st, ":container", q->container);
        bind_i64(st, ":states", q->state_mask);
        *ret = st;
        return 0;
}

/* Appends the frames of stack sid to *out, loading (and caching) each
 * location once per query. Returns the number of frames or a negative errno. */
/* Most locations a reader keeps between queries: a day of a busy host
 * references some tens of thousands; at a few hundred bytes each this caps
 * a worker's cache near 10 MiB. Past it, a query loads what its stacks
 * need one stack at a time (transient_add), so a worker's memory does not
 * grow with the answer. */
#define QUERY_LOCATION_CACHE_MAX 32768

/* Locations of the stack being answered that did not fit in the cache:
 * freed once the stack line was made, at the next stack or the query's end. */
static void transient_release(store *s) {
        for (size_t i = 0; i < s->n_transient; i++)
                location_info_free(s->transient[i]);
        s->n_transient = 0;
}

static int transient_add(store *s, struct location_info *li) {
        if (s->n_transient == s->transient_cap) {
                size_t cap = MAX(s->transient_cap * 2, 64u);
                struct location_info **t = realloc(s->transient, cap * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                s->transient = t;
                s->transient_cap = cap;
        }
        s->transient[s->n_transient++] = li;
        return 0;
}

static int stack_frames(store *s, int64_t sid, hashmap *cache, struct store_frame_out **out, size_t *out_cap,
                        size_t *ret_n, int *ret_user_end) {
        sqlite3_stmt *frames_st = s->stmts[STMT_SELECT_STACK_FRAMES];
        const int64_t *locs;
        size_t n, n_out = 0;
        int rc, r = 0;

        transient_release(s); /* the previous stack's: its line is made */
        sqlite3_bind_int64(frames_st, 1, sid);
        rc = sqlite3_step(frames_st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(frames_st);
                sqlite3_clear_bindings(frames_st);
                return rc == SQLITE_DONE ? -ENOENT : store_fail(s, rc, "stack lookup");
        }
        n = (size_t) sqlite3_column_bytes(frames_st, 0) / sizeof(int64_t);
        locs = sqlite3_column_blob(frames_st, 0);
        *ret_user_end = sqlite3_column_type(frames_st, 1) == SQLITE_NULL ? STORE_END_UNKNOWN
                                                                          : sqlite3_column_int(frames_st, 1);
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct location_info *li;
                int64_t lid;
                void *v;

                memcpy(&lid, &locs[i], sizeof(lid));
                if (hashmap_get(cache, UINT64_TO_KEY(lid), &v) < 0) {
                        r = load_location(s, lid, &li);
                        if (r < 0)
                                break;
                        if (cache == s->query_locations && hashmap_size(cache) >= QUERY_LOCATION_CACHE_MAX)
                                r = transient_add(s, li);
                        else
                                r = hashmap_put(cache, UINT64_TO_KEY(lid), li);
                        if (r < 0) {
                                location_info_free(li);
                                break;
                        }
                } else
                        li = v;
                if (n_out + li->n > *out_cap) {
                        size_t cap = MAX(*out_cap * 2, n_out + li->n);
                        struct store_frame_out *no = realloc(*out, cap * sizeof(**out));
                        if (!no) {
                                r = -ENOMEM;
                                break;
                        }
                        *out = no;
                        *out_cap = cap;
                }
                memcpy(*out + n_out, li->frames, li->n * sizeof(**out));
                n_out += li->n;
        }
        sqlite3_reset(frames_st);
        sqlite3_clear_bindings(frames_st);
        if (r < 0)
                return r;
        *ret_n = n_out;
        return 0;
}

/* --- query speed (C2; docs/performance.md, Queries) ------------------------ */

/* The location cache a query uses. A reader connection keeps its locations
 * from one query to the next: a location row never changes once written,
 * only retention deletes rows (and SQLite may then give a deleted id to a
 * new location), so the cache is emptied when retention's count of deleted
 * locations moved. The check and the query share one read transaction
 * (committed at the end of store_query_stacks), so they see the same
 * store. Anything but a reader gets a new cache, freed after the query. */
static hashmap *query_location_cache(store *s) {
        uint64_t deleted = UINT64_MAX;
        sqlite3_stmt *st = NULL;

        if (!s->reader)
                return hashmap_new_u64();
        if (sqlite3_get_autocommit(s->db) && exec_sql(s, "BEGIN") < 0)
                return hashmap_new_u64();
        if (sqlite3_prepare_v2(s->db, "SELECT coalesce((SELECT value FROM retention_totals "
                                      "WHERE name = 'deleted_locations'), 0)", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                deleted = (uint64_t) sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (s->query_locations &&
            (deleted != s->query_locations_deleted || deleted == UINT64_MAX ||
             hashmap_size(s->query_locations) > QUERY_LOCATION_CACHE_MAX)) {
                location_cache_free(s->query_locations);
                s->query_locations = NULL;
        }
        if (!s->query_locations)
                s->query_locations = hashmap_new_u64();
        s->query_locations_deleted = deleted;
        return s->query_locations;
}

struct stack_sum {
        int64_t stack_id;
        uint64_t value;
};

static int stack_sum_cmp(const void *a, const void *b) {
        const struct stack_sum *x = a, *y = b;
        return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* An ungrouped query's rows (stack, value), summed per stack in a hash map
 * and answered in stack order. SQLite's GROUP BY would sort every row of
 * the window through a temporary B-tree first: for a day's window that
 * was most of the query's time. */
static int query_stacks_summed(store *s, sqlite3_stmt *st, hashmap *cache, store_stack_fn fn, void *userdata,
                               uint64_t *ret_total, uint64_t *ret_stacks) {
        _cleanup_free_ struct stack_sum *sums = NULL;
        _cleanup_free_ struct store_frame_out *out = NULL;
        hashmap *index = hashmap_new_u64();
        size_t n = 0, cap = 0, out_cap = 0;
        int rc, r = 0;

        if (!index)
                return -ENOMEM;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t sid = sqlite3_column_int64(st, 0);
                uint64_t value = (uint64_t) sqlite3_column_int64(st, 1);
                void *v;

                if (hashmap_get(index, UINT64_TO_KEY(sid), &v) >= 0) {
                        sums[(uintptr_t) v].value += value;
                        continue;
                }
                if (n == cap) {
                        size_t ncap = MAX(cap * 2, 1024u);
                        struct stack_sum *ns = realloc(sums, ncap * sizeof(*ns));
                        if (!ns) {
                                r = -ENOMEM;
                                break;
                        }
                        sums = ns;
                        cap = ncap;
                }
                r = hashmap_put(index, UINT64_TO_KEY(sid), (void *) (uintptr_t) n);
                if (r < 0)
                        break;
                sums[n++] = (struct stack_sum) { sid, value };
        }
        hashmap_free(index);
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, "query");
        if (r < 0)
                return r;
        if (n > 1) /* an empty answer has no array: qsort(NULL, ...) is undefined */
                qsort(sums, n, sizeof(*sums), stack_sum_cmp);
        *ret_total = *ret_stacks = 0;
        for (size_t i = 0; i < n; i++) {
                struct store_stack_out so = { .value = sums[i].value };

                r = stack_frames(s, sums[i].stack_id, cache, &out, &out_cap, &so.n_frames, &so.user_end);
                if (r < 0)
                        return r;
                so.frames = out;
                *ret_total += so.value;
                (*ret_stacks)++;
                r = fn(&so, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int store_query_stacks(store *s, const struct store_query *q, store_stack_fn fn, void *userdata,
                       uint64_t *ret_total, uint64_t *ret_stacks) {
        struct sql_text t = {};
        sqlite3_stmt *st = NULL;
        hashmap *cache = NULL;
        struct store_frame_out *out = NULL;
        size_t out_cap = 0;
        uint64_t total = 0, stacks = 0;
        int rc, r;

        switch (q->group) {
        case STORE_GROUP_PROCESS:
                /* by name and pid, as the root frame shows it: two instances
                 * of a reused pid with the same comm are one root */
                sql_add(&t, "SELECT s.stack_id, sum(s.value), p.comm || '-' || p.pid AS grp");
                break;
        case STORE_GROUP_UNIT:
                sql_add(&t, "SELECT s.stack_id, sum(s.value), coalesce(p.unit, '-') AS grp");
                break;
        case STORE_GROUP_THREAD:
                /* by name alone, as stackcollapse-perf.pl's root frame: the
                 * threads of a pool with one name are one root */
                sql_add(&t, "SELECT s.stack_id, sum(s.value), coalesce(th.comm, p.comm) AS grp");
                break;
        default:
                sql_add(&t, "SELECT s.stack_id, s.value");
        }
        sql_add_filters(&t, q, q->group != STORE_GROUP_NONE);
        /* ungrouped: summed per stack here, not by SQLite (see query_stacks_summed) */
        if (q->group != STORE_GROUP_NONE)
                sql_add(&t, " GROUP BY grp, s.stack_id ORDER BY grp");
        r = query_prepare(s, &t, q, &st);
        free(t.buf);
        if (r < 0)
                return r;
        cache = query_location_cache(s);
        if (!cache) {
                r = -ENOMEM;
                goto out;
        }
        if (q->group == STORE_GROUP_NONE) {
                r = query_stacks_summed(s, st, cache, fn, userdata, &total, &stacks);
                goto out;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_stack_out so = {
                        .value = (uint64_t) sqlite3_column_int64(st, 1),
                        .group = (const char *) sqlite3_column_text(st, 2),
                };

                r = stack_frames(s, sqlite3_column_int64(st, 0), cache, &out, &out_cap, &so.n_frames, &so.user_end);
                if (r < 0)
                        goto out;
                so.frames = out;
                total += so.value;
                stacks++;
                r = fn(&so, userdata);
                if (r < 0)
                        goto out;
        }
        if (rc != SQLITE_DONE)
                r = store_fail(s, rc, "query");
out:
        sqlite3_finalize(st);
        if (cache != s->query_locations)
                location_cache_free(cache);
        transient_release(s);
        if (s->reader && !sqlite3_get_autocommit(s->db))
                (void) exec_sql(s, "COMMIT");
        free(out);
        if (r >= 0) {
                if (ret_total)
                        *ret_total = total;
                if (ret_stacks)
                        *ret_stacks = stacks;
        }
        return r;
}

int store_query_drains(store *s, const struct store_query *q, store_drain_value_fn fn, void *userdata) {
        struct sql_text t = {};
        sqlite3_stmt *st = NULL;
        int rc, r;

        /* the complete set is one ephemeral index built once per query from
         * the stacks table, not a lookup per sample row */
        sql_add(&t, "SELECT d.start_ns, d.end_ns, sum(s.value), "
                    "sum(CASE WHEN s.stack_id IN (SELECT id FROM stacks WHERE user_end = 0) THEN s.value ELSE 0 END)");
        sql_add_filters(&t, q, false);
        /* grouped in the order drains come (drains_end: end_ns, id), so
         * SQLite sums each drain's samples as they stream by instead of
         * sorting all of them (3.4 s -> 1.0 s for a day); only the per-drain
         * sums are sorted into time order */
        sql_add(&t, " GROUP BY d.end_ns, d.id ORDER BY d.start_ns, d.end_ns");
        r = query_prepare(s, &t, q, &st);
        free(t.buf);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = fn((uint64_t) sqlite3_column_int64(st, 0), (uint64_t) sqlite3_column_int64(st, 1),
                       (uint64_t) sqlite3_column_int64(st, 2), (uint64_t) sqlite3_column_int64(st, 3), userdata);
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, "series query");
        sqlite3_finalize(st);
        return r;
}

int store_query_drops(store *s, const struct store_query *q, store_drop_fn fn, void *userdata) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        /* the same drains as the query's samples (sql_add_filters) */
        rc = sqlite3_prepare_v2(s->db, q->drain_id > 0 ?
                                "SELECT x.reason, sum(x.count) FROM drops x WHERE x.drain_id = :drain "
                                "GROUP BY x.reason ORDER BY x.reason" :
                                "SELECT x.reason, sum(x.count) FROM drains d CROSS JOIN drops x ON x.drain_id = d.id "
                                "WHERE d.end_ns >= :from AND d.start_ns <= :to GROUP BY x.reason ORDER BY x.reason",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, "drops query");
        bind_i64(st, ":drain", q->drain_id);
        bind_i64(st, ":from", (int64_t) q->from_ns);
        bind_i64(st, ":to", (int64_t) q->to_ns);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = fn((const char *) sqlite3_column_text(st, 0), (uint64_t) sqlite3_column_int64(st, 1), userdata);
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, "drops query");
        sqlite3_finalize(st);
        return r;
}

int store_outbox_drops(store *s, int64_t drain_id, store_drop_fn fn, void *userdata) {
        struct store_query q = { .drain_id = drain_id };

        /* one drain's rows, no window: the query above's first form */
        if (drain_id <= 0)
                return -EINVAL;
        return store_query_drops(s, &q, fn, userdata);
}

int store_last_drain(store *s, int64_t *ret_id, uint64_t *ret_start_ns, uint64_t *ret_end_ns) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, start_ns, end_ns FROM drains ORDER BY end_ns DESC, id DESC LIMIT 1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, "last drain lookup");
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *ret_id = sqlite3_column_int64(st, 0);
                *ret_start_ns = (uint64_t) sqlite3_column_int64(st, 1);
                *ret_end_ns = (uint64_t) sqlite3_column_int64(st, 2);
        } else
                r = rc == SQLITE_DONE ? -ENOENT : store_fail(s, rc, "last drain lookup");
        sqlite3_finalize(st);
        return r;
}

static int query_u64(store *s, const char *sql, uint64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

        if (rc != SQLITE_OK)
                return store_fail(s, rc, "status query");
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(s, rc, "status query");
}

int store_get_stats(store *s, struct store_stats *ret) {
        struct store_stats st = {};
        sqlite3_stmt *q = NULL;
        struct stat sb;
        char wal[4096];
        int rc, r;

        if ((r = query_u64(s, "SELECT count(*) FROM drains", &st.drains)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(samples), 0) FROM drains", &st.samples)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM stacks", &st.stacks)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM processes", &st.processes)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(max(end_ns), 0) FROM drains", &st.last_drain_ns)) < 0)
                return r;
        if (stat(s->path, &sb) == 0)
                st.file_bytes += sb.st_size;
        snprintf(wal, sizeof(wal), "%s-wal", s->path);
        if (stat(wal, &sb) == 0)
                st.file_bytes += sb.st_size;

        rc = sqlite3_prepare_v2(s->db, "SELECT reason, sum(count) FROM drops GROUP BY reason ORDER BY reason",
                                -1, &q, NULL);
        if (rc != SQLITE_OK)
                return store_fail(s, rc, "status query");
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                struct store_drop_total *nd = realloc(st.drops, (st.n_drops + 1) * sizeof(*nd));
                if (!nd) {
                        r = -ENOMEM;
                        break;
                }
                st.drops = nd;
                nd[st.n_drops].reason = strdup((const char *) sqlite3_column_text(q, 0));
                nd[st.n_drops].count = (uint64_t) sqlite3_column_int64(q, 1);
                if (!nd[st.n_drops].reason) {
                        r = -ENOMEM;
                        break;
                }
                st.n_drops++;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_fail(s, rc, "status query");
        sqlite3_finalize(q);
        if (r < 0) {
                store_stats_done(&st);
                return r;
        }
        *ret = st;
        return 0;
}

void store_stats_done(struct store_stats *st) {
        for (size_t i = 0; i < st->n_drops; i++)
                free(st->drops[i].reason);
        free(st->drops);
        *st = (struct store_stats) {};
}

/* --- the export outbox (daemon/export/exporter.c, schema/0005) ------------------ */

/* Runs sql with its parameters bound: ?1 the text when not NULL, then the
 * next one (if sql has it) arg. Returns the first column of its row in
 * *ret, or dflt when there is no row or it is NULL. */
static int outbox_i64(store *s, const char *sql, const char *text, int64_t arg, int64_t dflt, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

        if (rc != SQLITE_OK)
                return store_fail(s, rc, "preparing an outbox statement");
        if (text)
                sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        if (sqlite3_bind_parameter_count(st) > (text ? 1 : 0))
                sqlite3_bind_int64(st, text ? 2 : 1, arg);
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int64(st, 0) : dflt;
        sqlite3_finalize(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(s, rc, "outbox statement");
}

int store_outbox_cursor(store *s, const char *target, int64_t *ret_drain_id, uint64_t *ret_lost) {
        int64_t id, lost, max_id, ignored;
        int r;

        if ((r = outbox_i64(s, "SELECT drain_id FROM export_cursors WHERE target = ?1", target, 0, -1, &id)) < 0)
                return r;
        /* a new target: nothing sent yet (written once, not at every look) */
        if (id < 0 && ((r = outbox_i64(s, "INSERT INTO export_cursors (target, drain_id) VALUES (?1, 0)", target, 0,
                                       0, &ignored)) < 0 ||
                       (r = outbox_i64(s, "SELECT drain_id FROM export_cursors WHERE target = ?1", target, 0, 0,
                                       &id)) < 0))
                return r;
        if ((r = outbox_i64(s, "SELECT lost_drains FROM export_cursors WHERE target = ?1", target, 0, 0, &lost)) < 0 ||
            (r = outbox_i64(s, "SELECT max(id) FROM drains", NULL, 0, 0, &max_id)) < 0)
                return r;
        /* ids start over only in a table retention emptied (everything older
         * than `retention`): what is there now was never sent */
        if (id > max_id && max_id > 0) {
                log_info("Store %s: export cursor %" PRId64 " is past the newest drain %" PRId64
                         " (the store was emptied since); exporting from its oldest drain.", s->path, id, max_id);
                r = store_outbox_ack(s, target, 0);
                if (r < 0)
                        return r;
                id = 0;
        }
        *ret_drain_id = id;
        *ret_lost = (uint64_t) lost;
        return 0;
}

int store_outbox_ack(store *s, const char *target, int64_t drain_id) {
        int64_t ignored;
        return outbox_i64(s, "UPDATE export_cursors SET drain_id = ?2 WHERE target = ?1", target, drain_id, 0, &ignored);
}

int store_outbox_pending(store *s, int64_t after_id, size_t max, struct store_outbox_drain *ret, size_t *ret_n,
                         uint64_t *ret_backlog, uint64_t *ret_oldest_end_ns) {
        sqlite3_stmt *st = NULL;
        size_t n = 0;
        int rc, r = 0;

        /* one read transaction: the list and the counts agree */
        if ((r = exec_sql(s, "BEGIN")) < 0)
                return r;
        rc = sqlite3_prepare_v2(s->db, "SELECT id, start_ns, end_ns FROM drains WHERE id > ?1 AND resolution_ns = 0 "
                                       "ORDER BY id LIMIT ?2", -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = store_fail(s, rc, "outbox lookup");
                goto out;
        }
        sqlite3_bind_int64(st, 1, after_id);
        sqlite3_bind_int64(st, 2, (int64_t) max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < max)
                ret[n++] = (struct store_outbox_drain) {
                        .id = sqlite3_column_int64(st, 0),
                        .start_ns = (uint64_t) sqlite3_column_int64(st, 1),
                        .end_ns = (uint64_t) sqlite3_column_int64(st, 2),
                };
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                r = store_fail(s, rc, "outbox lookup");
                goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
        if (ret_backlog) {
                int64_t v;
                r = outbox_i64(s, "SELECT count(*) FROM drains WHERE id > ?1 AND resolution_ns = 0", NULL, after_id, 0,
                               &v);
                if (r < 0)
                        goto out;
                *ret_backlog = (uint64_t) v;
        }
        if (ret_oldest_end_ns) {
                int64_t v;
                r = outbox_i64(s, "SELECT min(end_ns) FROM drains WHERE id > ?1 AND resolution_ns = 0", NULL, after_id,
                               0, &v);
                if (r < 0)
                        goto out;
                *ret_oldest_end_ns = (uint64_t) v;
        }
        *ret_n = n;
out:
        sqlite3_finalize(st);
        (void) exec_sql(s, "COMMIT");
        return r;
}

int store_outbox_samples(store *s, int64_t drain_id, store_outbox_sample_fn fn, void *userdata) {
        _cleanup_free_ struct store_frame_out *out = NULL;
        sqlite3_stmt *st = NULL;
        size_t out_cap = 0;
        int64_t raw = 0;
        hashmap *cache;
        int rc, r;

        /* one read transaction: retention may merge or delete the drain
         * meanwhile, this sees it whole or not at all */
        if ((r = exec_sql(s, "BEGIN")) < 0)
                return r;
        r = outbox_i64(s, "SELECT count(*) FROM drains WHERE id = ?1 AND resolution_ns = 0", NULL, drain_id, 0, &raw);
        if (r < 0)
                goto out;
        if (raw == 0) {
                r = -ENOENT;
                goto out;
        }
        cache = query_location_cache(s);
        if (!cache) {
                r = -ENOMEM;
                goto out;
        }
        rc = sqlite3_prepare_v2(s->db, "SELECT p.pid, p.start_ns, p.comm, p.exe, p.uid, p.cgroup, p.unit, p.container, "
                                       "s.tid, s.cgroup_id, s.kind, s.state, s.peer_tid, s.stack_id, s.value "
                                       "FROM samples s JOIN processes p ON p.id = s.process_id WHERE s.drain_id = ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = store_fail(s, rc, "outbox samples");
                goto out;
        }
        sqlite3_bind_int64(st, 1, drain_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_outbox_sample smp = {
                        .pid = (uint32_t) sqlite3_column_int64(st, 0),
                        .process_start_ns = (uint64_t) sqlite3_column_int64(st, 1),
                        .comm = (const char *) sqlite3_column_text(st, 2),
                        .exe = (const char *) sqlite3_column_text(st, 3),
                        .have_uid = sqlite3_column_type(st, 4) != SQLITE_NULL,
                        .uid = (uint32_t) sqlite3_column_int64(st, 4),
                        .cgroup = (const char *) sqlite3_column_text(st, 5),
                        .unit = (const char *) sqlite3_column_text(st, 6),
                        .container = (const char *) sqlite3_column_text(st, 7),
                        .tid = (uint32_t) sqlite3_column_int64(st, 8),
                        .cgroup_id = (uint64_t) sqlite3_column_int64(st, 9),
                        .kind = sqlite3_column_int(st, 10),
                        .state = sqlite3_column_int(st, 11),
                        .peer_tid = (uint32_t) sqlite3_column_int64(st, 12),
                        .stack_id = sqlite3_column_int64(st, 13),
                        .value = (uint64_t) sqlite3_column_int64(st, 14),
                };

                r = stack_frames(s, smp.stack_id, cache, &out, &out_cap, &smp.n_frames, &smp.user_end);
                if (r < 0)
                        goto out;
                smp.frames = out;
                r = fn(&smp, userdata);
                if (r < 0)
                        goto out;
        }
        if (rc != SQLITE_DONE)
                r = store_fail(s, rc, "outbox samples");
out:
        sqlite3_finalize(st);
        transient_release(s);
        (void) exec_sql(s, "COMMIT");
        return r;
}
