/* SQLite store: WAL mode, prepared statements, in-memory id caches for the
 * rows every drain references again (mappings, functions, locations). */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hashmap.h"
#include "log.h"
#include "macro.h"
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
        [STMT_INSERT_LOCATION] = "INSERT INTO locations (mapping_id, address, function_id, kernel) VALUES (?1, ?2, ?3, ?4)",
        [STMT_SELECT_STACK] = "SELECT id FROM stacks WHERE hash = ?1 AND frames = ?2",
        [STMT_INSERT_STACK] = "INSERT INTO stacks (hash, frames) VALUES (?1, ?2)",
        [STMT_UPSERT_PROCESS] = "INSERT INTO processes (pid, start_ns, comm, exe, uid, cgroup) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                                "ON CONFLICT (pid, start_ns) DO UPDATE SET comm = excluded.comm, "
                                "exe = coalesce(excluded.exe, exe), uid = coalesce(excluded.uid, uid), "
                                "cgroup = coalesce(excluded.cgroup, cgroup)",
        [STMT_SELECT_PROCESS] = "SELECT id FROM processes WHERE pid = ?1 AND start_ns = ?2",
        [STMT_INSERT_SAMPLE] = "INSERT INTO samples (drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, "
                               "stack_id, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        [STMT_SELECT_LOCATION_INFO] = "SELECT l.address, l.kernel, m.path, f.name, f.raw_name FROM locations l "
                                      "JOIN mappings m ON m.id = l.mapping_id "
                                      "LEFT JOIN functions f ON f.id = l.function_id WHERE l.id = ?1",
        [STMT_INSERT_LOCATION_LINE] = "INSERT INTO location_lines (location_id, depth, function_id, file, line, inlined) "
                                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [STMT_SELECT_LOCATION_LINES] = "SELECT f.name, f.raw_name, ll.file, ll.line, ll.inlined FROM location_lines ll "
                                       "JOIN functions f ON f.id = ll.function_id "
                                       "WHERE ll.location_id = ?1 ORDER BY ll.depth DESC",
        [STMT_SELECT_STACK_FRAMES] = "SELECT frames FROM stacks WHERE id = ?1",
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
        /* the drain being written */
        bool in_drain;
        int64_t drain_id;
        uint64_t drain_samples, drain_keys;
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
        default:
                return -EIO;
        }
}

static int store_fail(store *s, int rc, const char *what) {
        int r = sqlite_to_errno(rc);
        log_error("Store %s: %s failed: %s", s->path, what, sqlite3_errmsg(s->db));
        return r;
}

static int caches_reset(store *s) {
        hashmap_free_with_keys(s->mapping_ids);
        hashmap_free_with_keys(s->function_ids);
        hashmap_free_with_keys(s->location_ids);
        hashmap_free_with_keys(s->process_ids);
        s->mapping_ids = hashmap_new_string();
        s->function_ids = hashmap_new_string();
        s->location_ids = hashmap_new_string();
        s->process_ids = hashmap_new_string();
        if (!s->mapping_ids || !s->function_ids || !s->location_ids || !s->process_ids)
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
        r = exec_sql(s, "PRAGMA quick_check");
        if (r < 0)
                goto fail;
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
        free(s->path);
        free(s);
        return NULL;
}

const char *store_path(const store *s) {
        return s->path;
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

static int stack_id(store *s, const int64_t *locations, size_t n, int64_t *ret) {
        size_t bytes = n * sizeof(int64_t);
        uint64_t h = hash_bytes(locations, bytes);
        sqlite3_stmt *sel = s->stmts[STMT_SELECT_STACK], *ins = s->stmts[STMT_INSERT_STACK];
        int r;

        /* locations are stored little-endian; this build only targets
         * little-endian machines (x86-64, arm64), asserted below */
        _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stack blobs are little-endian");
        sqlite3_bind_int64(sel, 1, (int64_t) h);
        sqlite3_bind_blob(sel, 2, locations, bytes, SQLITE_STATIC);
        r = step_id(s, sel, ret, "stack lookup");
        if (r != 0)
                return r < 0 ? r : 0;
        sqlite3_bind_int64(ins, 1, (int64_t) h);
        sqlite3_bind_blob(ins, 2, locations, bytes, SQLITE_STATIC);
        r = step_done(s, ins, "stack insert");
        if (r < 0)
                return r;
        *ret = sqlite3_last_insert_rowid(s->db);
        return 0;
}

static int process_id(store *s, const struct store_process *p, int64_t *ret) {
        sqlite3_stmt *up = s->stmts[STMT_UPSERT_PROCESS], *sel = s->stmts[STMT_SELECT_PROCESS];
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
        r = stack_id(s, locs, smp->n_frames, &stack);
        if (r < 0)
                return r;
        r = process_id(s, smp->process, &proc);
        if (r < 0)
                return r;
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

                base.kernel = sqlite3_column_int(st, 1);
                r = li_strdup(li, module ? module : "[unknown]", &base.module);
                if (r >= 0 && fn) {
                        base.resolved = true;
                        r = li_strdup(li, fn, &base.name);
                        if (r >= 0)
                                r = li_strdup(li, raw, &base.raw_name);
                } else if (r >= 0) {
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

int store_query_stacks(store *s, const struct store_query *q, store_stack_fn fn, void *userdata,
                       uint64_t *ret_total, uint64_t *ret_stacks) {
        /* Filters are bound parameters: values are data, never SQL. A NULL
         * parameter disables its filter. */
        static const char sql[] =
                "SELECT s.stack_id, sum(s.value) FROM samples s "
                "JOIN drains d ON d.id = s.drain_id "
                "JOIN processes p ON p.id = s.process_id "
                "WHERE d.end_ns >= ?1 AND d.start_ns <= ?2 AND s.kind = ?3 "
                "AND (?4 IS NULL OR p.pid = ?4) AND (?5 IS NULL OR p.comm = ?5) "
                "AND (?6 IS NULL OR ((1 << s.state) & ?6) != 0) "
                "AND (?7 IS NULL OR p.uid = ?7) "
                "GROUP BY s.stack_id";
        sqlite3_stmt *st = NULL, *frames_st = s->stmts[STMT_SELECT_STACK_FRAMES];
        hashmap *cache = hashmap_new_u64();
        struct store_frame_out *out = NULL;
        size_t out_cap = 0, n_out;
        uint64_t total = 0, stacks = 0;
        int rc, r = 0;

        if (!cache)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = store_fail(s, rc, "preparing the query");
                goto out;
        }
        sqlite3_bind_int64(st, 1, (int64_t) q->from_ns);
        sqlite3_bind_int64(st, 2, (int64_t) q->to_ns);
        sqlite3_bind_int(st, 3, q->kind);
        if (q->pid)
                sqlite3_bind_int64(st, 4, q->pid);
        if (q->comm)
                sqlite3_bind_text(st, 5, q->comm, -1, SQLITE_STATIC);
        if (q->state_mask)
                sqlite3_bind_int64(st, 6, q->state_mask);
        if (q->only_uid)
                sqlite3_bind_int64(st, 7, q->uid);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t sid = sqlite3_column_int64(st, 0);
                uint64_t value = (uint64_t) sqlite3_column_int64(st, 1);
                const int64_t *locs;
                size_t n;

                sqlite3_bind_int64(frames_st, 1, sid);
                rc = sqlite3_step(frames_st);
                if (rc != SQLITE_ROW) {
                        sqlite3_reset(frames_st);
                        r = rc == SQLITE_DONE ? -ENOENT : store_fail(s, rc, "stack lookup");
                        goto out;
                }
                n = (size_t) sqlite3_column_bytes(frames_st, 0) / sizeof(int64_t);
                locs = sqlite3_column_blob(frames_st, 0);
                n_out = 0;
                for (size_t i = 0; i < n && r >= 0; i++) {
                        struct location_info *li;
                        int64_t lid;
                        void *v;

                        memcpy(&lid, &locs[i], sizeof(lid));
                        if (hashmap_get(cache, UINT64_TO_KEY(lid), &v) < 0) {
                                r = load_location(s, lid, &li);
                                if (r < 0)
                                        break;
                                r = hashmap_put(cache, UINT64_TO_KEY(lid), li);
                                if (r < 0) {
                                        location_info_free(li);
                                        break;
                                }
                        } else
                                li = v;
                        if (n_out + li->n > out_cap) {
                                size_t cap = MAX(out_cap * 2, n_out + li->n);
                                struct store_frame_out *no = realloc(out, cap * sizeof(*out));
                                if (!no) {
                                        r = -ENOMEM;
                                        break;
                                }
                                out = no;
                                out_cap = cap;
                        }
                        memcpy(out + n_out, li->frames, li->n * sizeof(*out));
                        n_out += li->n;
                }
                sqlite3_reset(frames_st);
                if (r < 0)
                        goto out;
                total += value;
                stacks++;
                r = fn(out, n_out, value, userdata);
                if (r < 0)
                        goto out;
        }
        if (rc != SQLITE_DONE)
                r = store_fail(s, rc, "query");
out:
        sqlite3_clear_bindings(frames_st);
        sqlite3_finalize(st);
        location_cache_free(cache);
        free(out);
        if (r >= 0) {
                if (ret_total)
                        *ret_total = total;
                if (ret_stacks)
                        *ret_stacks = stacks;
        }
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
