/* The store's write path: one transaction per drain (store_drain_*), each
 * row referred to again (mapping, function, location, stack, process,
 * thread name) looked up in this connection's caches before SQLite. The
 * state it keeps (statements, caches, the drain being written) is its
 * own, made and freed through store-private.h; it calls store.c and
 * db.c below it, nothing beside or above it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "idmap.h"
#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "stack-pack.h"
#include "store-private.h"
#include "offtime-pack.h"
#include "timeline-pack.h"

/* The most ids the drain connection's caches keep in all: each costs about
 * 80 bytes (its slot, its key, a thread's name), so about 1.3 MiB. A
 * drain at defaults looks up a few thousand; one of a host running builds
 * adds 3-6 thousand (mostly locations), and at 32768 the caches, full
 * every minute there, were 2.5 MiB of the daemon's peak. See
 * store_drain_commit. */
#define STORE_ID_CACHE_MAX 16384

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
        STMT_INSERT_BLOCK,
        STMT_UPSERT_PROCESS,
        STMT_SELECT_PROCESS,
        STMT_INSERT_LOCATION_LINE,
        STMT_UPSERT_THREAD,
        STMT_SELECT_LOCATION_RESOLVED,
        STMT_INSERT_TIMELINE,
        STMT_INSERT_OFFTIME,
        STMT_SELECT_LOCATION_HAS_LINES,
        STMT_UPDATE_LOCATION_FUNCTION,
        STMT_COUNT_CHANGED_LOCATIONS,
        _STMT_MAX,
};

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_INSERT_DRAIN] = "INSERT INTO drains (start_ns, end_ns, samples, keys) VALUES (?1, ?2, 0, 0)",
        [STMT_UPDATE_DRAIN] = "UPDATE drains SET samples = ?2, keys = ?3, frequency_hz = ?4 WHERE id = ?1",
        [STMT_INSERT_DROP] = "INSERT INTO drops (drain_id, reason, count) VALUES (?1, ?2, ?3) "
                             "ON CONFLICT (drain_id, reason) DO UPDATE SET count = count + excluded.count",
        [STMT_SELECT_MAPPING] = "SELECT id FROM mappings WHERE path = ?1 AND build_id = ?2",
        [STMT_INSERT_MAPPING] = "INSERT INTO mappings (path, build_id) VALUES (?1, ?2)",
        [STMT_SELECT_FUNCTION] = "SELECT id FROM functions WHERE mapping_id = ?1 AND raw_name = ?2",
        [STMT_INSERT_FUNCTION] = "INSERT INTO functions (mapping_id, raw_name, name) VALUES (?1, ?2, ?3)",
        [STMT_SELECT_LOCATION] = "SELECT id FROM locations WHERE mapping_id = ?1 AND address = ?2",
        [STMT_INSERT_LOCATION] = "INSERT INTO locations (mapping_id, address, function_id, kernel, unresolved) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_SELECT_STACK] = STORE_STACK_SELECT_SQL,
        [STMT_INSERT_STACK] = STORE_STACK_INSERT_SQL,
        [STMT_INSERT_BLOCK] = SAMPLE_BLOCKS_INSERT_SQL,
        [STMT_UPSERT_PROCESS] = "INSERT INTO processes (pid, start_ns, comm, exe, uid, cgroup, unit, container) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                                "ON CONFLICT (pid, start_ns) DO UPDATE SET comm = excluded.comm, "
                                "exe = coalesce(excluded.exe, exe), uid = coalesce(excluded.uid, uid), "
                                "cgroup = coalesce(excluded.cgroup, cgroup), "
                                "unit = CASE WHEN excluded.cgroup IS NULL THEN unit ELSE excluded.unit END, "
                                "container = CASE WHEN excluded.cgroup IS NULL THEN container ELSE excluded.container END",
        [STMT_SELECT_PROCESS] = "SELECT id FROM processes WHERE pid = ?1 AND start_ns = ?2",
        [STMT_INSERT_LOCATION_LINE] = "INSERT INTO location_lines (location_id, depth, function_id, file, line, inlined) "
                                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [STMT_UPSERT_THREAD] = "INSERT INTO threads (process_id, tid, comm) VALUES (?1, ?2, ?3) "
                               "ON CONFLICT (process_id, tid) DO UPDATE SET comm = excluded.comm",
        [STMT_SELECT_LOCATION_RESOLVED] = "SELECT l.function_id IS NOT NULL FROM locations l "
                                          "JOIN mappings m ON m.id = l.mapping_id "
                                          "WHERE m.path = ?1 AND m.build_id = ?2 AND l.address = ?3",
        [STMT_INSERT_TIMELINE] = "INSERT INTO timeline_blocks (drain_id, start_ns, end_ns, n, data) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_INSERT_OFFTIME] = "INSERT INTO offcpu_timeline (drain_id, start_ns, end_ns, n, data) "
                                "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_SELECT_LOCATION_HAS_LINES] = "SELECT 1 FROM location_lines WHERE location_id = ?1 LIMIT 1",
        [STMT_UPDATE_LOCATION_FUNCTION] = "UPDATE locations SET function_id = ?2, unresolved = NULL WHERE id = ?1",
        /* readers' location caches are emptied when this or retention's
         * deleted_locations moved (store_query_location_cache) */
        [STMT_COUNT_CHANGED_LOCATIONS] = "INSERT INTO retention_totals (name, value) VALUES ('" STORE_CHANGED_LOCATIONS
                                         "', ?1) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
};

/* The samples of one (process, kind) of the drain being written. */
struct pending_block {
        int64_t process_id;
        int kind;
        struct sample_entry *entries;
        size_t n, cap;
};

/* The drain connection's write state (store_open). */
struct store_write {
        sqlite3_stmt *stmts[_STMT_MAX];
        /* Ids of rows already in the file, so a drain does not ask SQLite
         * again for every frame. Keys are malloc'd strings, or pairs of
         * integers in the idmaps ((mapping id, address) of a location,
         * (pid, start) of a process: the lookups made per frame and per
         * key). Cleared when a transaction rolls back, since its new rows
         * are gone. */
        hashmap *mapping_ids;
        /* the mappings asked for last, by their strings: a drain asks for
         * a mapping's id at every frame of every key, and consecutive
         * frames mostly share a few files; a hit spares building the
         * key and hashing it (about 4% of the daemon's CPU samples on a
         * build host went to that) */
        struct recent_mapping {
                char *path, *build_id; /* NULL: empty slot */
                int64_t id;
        } recent_mappings[4];
        unsigned recent_next;
        hashmap *function_ids;
        idmap *location_ids;
        idmap *process_ids;
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
        unsigned drain_hz; /* the rate its cpu samples were taken at; 0 unknown (NULL) */
        /* what each store_drain_add of the drain stored, in order: the
         * keys its timeline names */
        struct timeline_key *added;
        size_t n_added, added_cap;
        /* the stack being looked up, packed (stack-pack.h); reused */
        struct varint_out packed;
};

/* Frees a map whose keys and values are both malloc'd; returns NULL. */
static hashmap *hashmap_free_with_keys_and_values(hashmap *m) {
        size_t state = 0;
        const void *k;
        void *v;

        while (m && hashmap_iterate(m, &state, &k, &v))
                free(v);
        return hashmap_free_with_keys(m);
}

static void caches_free(struct store_write *w) {
        for (size_t i = 0; i < ELEMENTSOF(w->recent_mappings); i++) {
                free(w->recent_mappings[i].path);
                free(w->recent_mappings[i].build_id);
                w->recent_mappings[i] = (struct recent_mapping) {};
        }
        hashmap_free_with_keys(w->mapping_ids);
        hashmap_free_with_keys(w->function_ids);
        idmap_free(w->location_ids);
        idmap_free(w->process_ids);
        hashmap_free_with_keys_and_values(w->thread_names);
}

/* (Re)creates the id caches, empty. Returns 0 or -ENOMEM. */
static int caches_reset(struct store_write *w) {
        caches_free(w);
        w->mapping_ids = hashmap_new_string();
        w->function_ids = hashmap_new_string();
        w->location_ids = idmap_new();
        w->process_ids = idmap_new();
        w->thread_names = hashmap_new_string();
        if (!w->mapping_ids || !w->function_ids || !w->location_ids || !w->process_ids || !w->thread_names)
                return -ENOMEM;
        return 0;
}

/* Frees the samples gathered for the drain being written. */
static void pending_free(struct store_write *w) {
        for (size_t i = 0; i < w->n_pending; i++)
                free(w->pending[i].entries);
        free(w->pending);
        w->pending = NULL;
        w->n_pending = w->pending_cap = 0;
        hashmap_free(w->pending_index);
        w->pending_index = NULL;
        free(w->added);
        w->added = NULL;
        w->n_added = w->added_cap = 0;
}

int store_write_new(store *s) {
        struct store_write *w = calloc(1, sizeof(*w));

        if (!w)
                return log_oom();
        s->write = w;
        if (caches_reset(w) < 0)
                return log_oom();
        return db_prepare_all(&s->d, stmt_sql, _STMT_MAX, w->stmts);
}

void store_write_free(store *s) {
        struct store_write *w = s->write;

        if (!w)
                return;
        db_finalize_all(w->stmts, _STMT_MAX);
        caches_free(w);
        pending_free(w);
        free(w->packed.data);
        free(w);
        s->write = NULL;
}

/* Runs a statement that returns nothing. */
static int step_done(store *s, sqlite3_stmt *st, const char *what) {
        int r = db_step(&s->d, st, NULL, what);

        return r < 0 ? r : 0;
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
        r = db_step(&s->d, select, ret, "lookup");
        if (r < 0)
                return r;
        if (r == 0) {
                r = step_done(s, insert, "insert");
                if (r < 0)
                        return r;
                *ret = sqlite3_last_insert_rowid(s->d.handle);
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
        struct store_write *w = s->write;
        _cleanup_free_ char *key = NULL;
        const char *bid = build_id ? build_id : "";
        struct recent_mapping *slot;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(w->recent_mappings); i++) {
                const struct recent_mapping *m = &w->recent_mappings[i];

                if (m->path && streq(m->path, path) && streq(m->build_id, bid)) {
                        *ret = m->id;
                        return 0;
                }
        }
        if (asprintf(&key, "%s\n%s", path, bid) < 0)
                return -ENOMEM;
        sqlite3_bind_text(w->stmts[STMT_SELECT_MAPPING], 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->stmts[STMT_SELECT_MAPPING], 2, bid, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->stmts[STMT_INSERT_MAPPING], 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->stmts[STMT_INSERT_MAPPING], 2, bid, -1, SQLITE_STATIC);
        r = intern(s, w->mapping_ids, key, w->stmts[STMT_SELECT_MAPPING], w->stmts[STMT_INSERT_MAPPING], ret);
        if (r < 0)
                return r;
        /* kept in the next slot, the oldest; without memory, not kept */
        slot = &w->recent_mappings[w->recent_next++ % ELEMENTSOF(w->recent_mappings)];
        free(slot->path);
        free(slot->build_id);
        *slot = (struct recent_mapping) { .path = strdup(path), .build_id = strdup(bid), .id = *ret };
        if (!slot->path || !slot->build_id) {
                free(slot->path);
                free(slot->build_id);
                *slot = (struct recent_mapping) {};
        }
        return 0;
}

static int function_id(store *s, int64_t mapping, const char *name, const char *raw_name, int64_t *ret) {
        struct store_write *w = s->write;
        _cleanup_free_ char *key = NULL;

        if (!raw_name)
                raw_name = name;
        if (asprintf(&key, "%" PRId64 "\n%s", mapping, raw_name) < 0)
                return -ENOMEM;
        sqlite3_bind_int64(w->stmts[STMT_SELECT_FUNCTION], 1, mapping);
        sqlite3_bind_text(w->stmts[STMT_SELECT_FUNCTION], 2, raw_name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(w->stmts[STMT_INSERT_FUNCTION], 1, mapping);
        sqlite3_bind_text(w->stmts[STMT_INSERT_FUNCTION], 2, raw_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(w->stmts[STMT_INSERT_FUNCTION], 3, name, -1, SQLITE_STATIC);
        return intern(s, w->function_ids, key, w->stmts[STMT_SELECT_FUNCTION], w->stmts[STMT_INSERT_FUNCTION], ret);
}

/* Stores the inline chain of a location that was just created. */
static int location_lines_insert(store *s, int64_t location, int64_t mapping, const struct store_frame *f) {
        struct store_write *w = s->write;
        sqlite3_stmt *ins = w->stmts[STMT_INSERT_LOCATION_LINE];
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
        struct store_write *w = s->write;
        sqlite3_stmt *sel = w->stmts[STMT_SELECT_LOCATION], *ins = w->stmts[STMT_INSERT_LOCATION];
        int64_t mapping, function = 0;
        int r;

        r = mapping_id(s, f->module, f->build_id, &mapping);
        if (r < 0)
                return r;
        if (idmap_get(w->location_ids, (uint64_t) mapping, f->address, ret) >= 0)
                return 0;
        sqlite3_bind_int64(sel, 1, mapping);
        sqlite3_bind_int64(sel, 2, (int64_t) f->address);
        r = db_step(&s->d, sel, ret, "location lookup");
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
                /* why a frame has no function; for a named one, only that
                 * its inlined calls are not known (a Java frame's) */
                if (f->unresolved != STORE_UNRESOLVED_NONE && !f->kernel &&
                    (!f->function || f->unresolved == STORE_UNRESOLVED_HOTSPOT_NO_SCOPE))
                        sqlite3_bind_int(ins, 5, f->unresolved);
                else
                        sqlite3_bind_null(ins, 5);
                r = step_done(s, ins, "location insert");
                if (r < 0)
                        return r;
                *ret = sqlite3_last_insert_rowid(s->d.handle);
                r = location_lines_insert(s, *ret, mapping, f);
                if (r < 0)
                        return r;
        }
        return idmap_put(w->location_ids, (uint64_t) mapping, f->address, *ret);
}

int store_location_add_lines(store *s, const struct store_frame *f) {
        struct store_write *w = s->write;
        sqlite3_stmt *sel, *has, *upd;
        int64_t mapping, location, function, one;
        int r;

        if (!w)
                return -EBADF;
        if (!f->function || f->n_lines == 0)
                return 0;
        r = mapping_id(s, f->module, f->build_id, &mapping);
        if (r < 0)
                return r;
        if (idmap_get(w->location_ids, (uint64_t) mapping, f->address, &location) < 0) {
                sel = w->stmts[STMT_SELECT_LOCATION];
                sqlite3_bind_int64(sel, 1, mapping);
                sqlite3_bind_int64(sel, 2, (int64_t) f->address);
                r = db_step(&s->d, sel, &location, "location lookup");
                if (r <= 0)
                        return r; /* not stored (retention deleted it, or its drain was rolled back) */
        }
        has = w->stmts[STMT_SELECT_LOCATION_HAS_LINES];
        sqlite3_bind_int64(has, 1, location);
        r = db_step(&s->d, has, &one, "location lines lookup");
        if (r != 0)
                return r < 0 ? r : 0; /* it has its lines already */
        r = function_id(s, mapping, f->function, f->raw_function, &function);
        if (r < 0)
                return r;
        upd = w->stmts[STMT_UPDATE_LOCATION_FUNCTION];
        sqlite3_bind_int64(upd, 1, location);
        sqlite3_bind_int64(upd, 2, function);
        r = step_done(s, upd, "location update");
        if (r < 0)
                return r;
        r = location_lines_insert(s, location, mapping, f);
        return r < 0 ? r : 1;
}

int store_locations_changed(store *s, uint64_t n) {
        struct store_write *w = s->write;
        sqlite3_stmt *st;

        if (!w)
                return -EBADF;
        if (n == 0)
                return 0;
        st = w->stmts[STMT_COUNT_CHANGED_LOCATIONS];
        sqlite3_bind_int64(st, 1, (int64_t) n);
        return step_done(s, st, "changed locations count");
}

int store_location_resolved(store *s, const char *module, const char *build_id, uint64_t address) {
        struct store_write *w = s->write;
        sqlite3_stmt *st;
        int64_t resolved = 0;
        int r;

        if (!w) /* a reader's or the outbox's connection */
                return -EBADF;
        st = w->stmts[STMT_SELECT_LOCATION_RESOLVED];
        sqlite3_bind_text(st, 1, module, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, build_id ? build_id : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) address);
        r = db_step(&s->d, st, &resolved, "location lookup");
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
 * truncated and complete are two rows, so each answers for its own end.
 * The hash is of the ids as 64-bit integers whatever form the row keeps
 * them in, so rows of both forms are found by it. */
int store_stack_id(const struct db *d, sqlite3_stmt *sel, sqlite3_stmt *ins, const int64_t *ids, size_t n,
                   int user_end, struct varint_out *packed, int64_t *ret) {
        size_t bytes = n * sizeof(int64_t);
        uint64_t h = hash_bytes(ids, bytes);
        int r;

        /* the form before schema 15 is the ids little-endian; this build
         * only targets little-endian machines (x86-64, arm64) */
        _Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stack blobs are little-endian");
        packed->size = 0;
        r = stack_pack(ids, n, packed);
        if (r < 0)
                return r;
        sqlite3_bind_int64(sel, 1, (int64_t) h);
        sqlite3_bind_blob(sel, 2, packed->data, (int) packed->size, SQLITE_STATIC);
        bind_user_end(sel, 3, user_end);
        sqlite3_bind_blob(sel, 4, ids, (int) bytes, SQLITE_STATIC);
        r = db_step(d, sel, ret, "stack lookup");
        if (r != 0)
                return r < 0 ? r : 0;
        sqlite3_bind_int64(ins, 1, (int64_t) h);
        sqlite3_bind_blob(ins, 2, packed->data, (int) packed->size, SQLITE_STATIC);
        bind_user_end(ins, 3, user_end);
        r = db_step(d, ins, NULL, "stack insert");
        if (r < 0)
                return r;
        *ret = sqlite3_last_insert_rowid(d->handle);
        return 0;
}

static int stack_id(store *s, const int64_t *locations, size_t n, int user_end, int64_t *ret) {
        struct store_write *w = s->write;

        return store_stack_id(&s->d, w->stmts[STMT_SELECT_STACK], w->stmts[STMT_INSERT_STACK], locations, n, user_end,
                              &w->packed, ret);
}

static int process_id(store *s, const struct store_process *p, int64_t *ret) {
        struct store_write *w = s->write;
        sqlite3_stmt *up = w->stmts[STMT_UPSERT_PROCESS], *sel = w->stmts[STMT_SELECT_PROCESS];
        _cleanup_free_ char *unit = NULL, *container = NULL;
        int r;

        if (idmap_get(w->process_ids, p->pid, p->start_ns, ret) >= 0)
                return 0;
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
        r = db_step(&s->d, sel, ret, "process lookup");
        if (r <= 0)
                return r < 0 ? r : -EIO;
        return idmap_put(w->process_ids, p->pid, p->start_ns, *ret);
}

/* A thread's name as the kernel keeps it: TASK_COMM_LEN, with the NUL. */
#define THREAD_NAME_SIZE 16

/* Stores the name of thread tid of process proc when it differs from the
 * one stored (the cache knows; its values are THREAD_NAME_SIZE buffers,
 * rewritten in place when a thread is renamed). */
static int thread_name(store *s, int64_t proc, uint32_t tid, const char *comm) {
        struct store_write *w = s->write;
        sqlite3_stmt *up = w->stmts[STMT_UPSERT_THREAD];
        _cleanup_free_ char *k = NULL, *name = NULL;
        char key[64], *cached = NULL;
        void *v;
        int r;

        snprintf(key, sizeof(key), "%" PRId64 "\n%" PRIu32, proc, tid);
        if (hashmap_get(w->thread_names, key, &v) >= 0) {
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
        r = hashmap_put(w->thread_names, k, name);
        if (r < 0)
                return r;
        TAKE_PTR(k);
        TAKE_PTR(name);
        return 0;
}

/* Gathers one sample of the drain into its (process, kind) block. */
static int pending_add(store *s, int64_t proc, int kind, const struct sample_entry *e) {
        struct store_write *w = s->write;
        uint64_t key = (uint64_t) proc << 8 | ((uint64_t) kind & 0xff);
        struct pending_block *b;
        void *v;
        int r;

        if (!w->pending_index && !(w->pending_index = hashmap_new_u64()))
                return -ENOMEM;
        if (hashmap_get(w->pending_index, UINT64_TO_KEY(key), &v) >= 0)
                b = &w->pending[(uintptr_t) v - 1];
        else {
                if (w->n_pending == w->pending_cap) {
                        size_t cap = MAX(w->pending_cap * 2, (size_t) 64);
                        struct pending_block *np = realloc(w->pending, cap * sizeof(*np));
                        if (!np)
                                return -ENOMEM;
                        w->pending = np;
                        w->pending_cap = cap;
                }
                r = hashmap_put(w->pending_index, UINT64_TO_KEY(key), (void *) (uintptr_t) (w->n_pending + 1));
                if (r < 0)
                        return r;
                b = &w->pending[w->n_pending++];
                *b = (struct pending_block) { .process_id = proc, .kind = kind };
        }
        if (b->n == b->cap) {
                size_t cap = MAX(b->cap * 2, (size_t) 16);
                struct sample_entry *ne = realloc(b->entries, cap * sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                b->entries = ne;
                b->cap = cap;
        }
        b->entries[b->n++] = *e;
        return 0;
}

/* Writes the drain's gathered samples as blocks and counts their stacks. */
static int pending_flush(store *s) {
        struct store_write *w = s->write;
        hashmap *refs = hashmap_new_u64(), *prefs = hashmap_new_u64();
        int r = refs && prefs ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < w->n_pending; i++) {
                struct pending_block *b = &w->pending[i];
                r = sample_blocks_insert(&s->d, &w->stmts[STMT_INSERT_BLOCK], w->drain_id, b->kind, b->process_id,
                                         b->entries, b->n, refs, prefs);
        }
        if (r >= 0)
                r = stack_refs_apply(&s->d, refs, false);
        if (r >= 0)
                r = process_refs_apply(&s->d, prefs, false);
        hashmap_free(refs);
        hashmap_free(prefs);
        pending_free(w);
        return r;
}

int store_drain_begin(store *s, uint64_t start_ns, uint64_t end_ns) {
        struct store_write *w = s->write;
        int r;

        if (!w) /* a reader's or the outbox's connection */
                return -EBADF;
        pending_free(w);

        r = db_exec(&s->d, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        w->in_drain = true;
        sqlite3_bind_int64(w->stmts[STMT_INSERT_DRAIN], 1, (int64_t) start_ns);
        sqlite3_bind_int64(w->stmts[STMT_INSERT_DRAIN], 2, (int64_t) end_ns);
        r = step_done(s, w->stmts[STMT_INSERT_DRAIN], "drain insert");
        if (r < 0)
                return r;
        w->drain_id = sqlite3_last_insert_rowid(s->d.handle);
        w->drain_samples = w->drain_keys = 0;
        w->drain_hz = 0;
        return 0;
}

int store_drain_rate(store *s, unsigned frequency_hz) {
        struct store_write *w = s->write;

        if (!w || !w->in_drain)
                return -EBADF;
        w->drain_hz = frequency_hz;
        return 0;
}

int store_drain_add(store *s, const struct store_sample *smp) {
        struct store_write *w = s->write;
        _cleanup_free_ int64_t *locs = calloc(smp->n_frames ? smp->n_frames : 1, sizeof(int64_t));
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
        r = pending_add(s, proc, smp->kind, &(struct sample_entry) {
                .stack_id = stack, .tid = smp->tid, .state = (uint8_t) smp->state, .peer_tid = smp->peer_tid,
                .cgroup_id = smp->cgroup_id, .value = smp->value,
        });
        if (r < 0)
                return r;
        if (w->n_added == w->added_cap) {
                size_t cap = MAX(w->added_cap * 2, (size_t) 256);
                struct timeline_key *na = realloc(w->added, cap * sizeof(*na));
                if (!na)
                        return -ENOMEM;
                w->added = na;
                w->added_cap = cap;
        }
        w->added[w->n_added++] = (struct timeline_key) { proc, stack, smp->tid };
        if (smp->kind == 0) /* PROFD_KIND_CPU: values of other kinds are ns */
                w->drain_samples += smp->value;
        w->drain_keys++;
        return 0;
}

int store_drain_drop(store *s, const char *reason, uint64_t count) {
        struct store_write *w = s->write;
        sqlite3_stmt *st = w->stmts[STMT_INSERT_DROP];

        if (count == 0)
                return 0;
        sqlite3_bind_int64(st, 1, w->drain_id);
        sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) count);
        return step_done(s, st, "drop insert");
}

int store_drain_timeline(store *s, const struct store_timed *t, size_t n) {
        struct store_write *w = s->write;
        sqlite3_stmt *st = w->stmts[STMT_INSERT_TIMELINE];
        _cleanup_free_ uint32_t *key_of = NULL;
        _cleanup_free_ struct timeline_key *keys = NULL;
        _cleanup_free_ struct timeline_sample *samples = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        uint64_t start = UINT64_MAX, end = 0;
        size_t n_keys = 0, size = 0;
        int r;

        if (n == 0)
                return 0;
        /* only the adds the samples name become keys, renumbered */
        key_of = malloc(MAX(w->n_added, (size_t) 1) * sizeof(*key_of));
        keys = malloc(MIN(n, MAX(w->n_added, (size_t) 1)) * sizeof(*keys));
        samples = malloc(n * sizeof(*samples));
        if (!key_of || !keys || !samples)
                return -ENOMEM;
        memset(key_of, 0xff, MAX(w->n_added, (size_t) 1) * sizeof(*key_of));
        for (size_t i = 0; i < n; i++) {
                if (t[i].sample >= w->n_added)
                        return log_error_errno(-EINVAL, "Timeline sample names add %" PRIu32 " of %zu.",
                                               t[i].sample, w->n_added);
                start = MIN(start, t[i].time_ns);
                end = MAX(end, t[i].time_ns);
        }
        start -= start % 1000; /* µs: the block's unit */
        for (size_t i = 0; i < n; i++) {
                uint32_t *k = &key_of[t[i].sample];

                if (*k == UINT32_MAX) {
                        *k = (uint32_t) n_keys;
                        keys[n_keys++] = w->added[t[i].sample];
                }
                samples[i] = (struct timeline_sample) { (t[i].time_ns - start) / 1000, *k };
        }
        r = timeline_pack(keys, n_keys, samples, n, &data, &size);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, w->drain_id);
        sqlite3_bind_int64(st, 2, (int64_t) start);
        sqlite3_bind_int64(st, 3, (int64_t) end);
        sqlite3_bind_int64(st, 4, (int64_t) n);
        sqlite3_bind_blob(st, 5, data, (int) size, SQLITE_STATIC);
        return step_done(s, st, "timeline insert");
}

int store_drain_offtime(store *s, const struct store_block *t, size_t n) {
        struct store_write *w = s->write;
        sqlite3_stmt *st = w->stmts[STMT_INSERT_OFFTIME];
        _cleanup_free_ uint32_t *key_of = NULL;
        _cleanup_free_ struct offtime_key *keys = NULL;
        _cleanup_free_ struct offtime_block *blocks = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        uint64_t start = UINT64_MAX, end = 0;
        size_t n_keys = 0, size = 0;
        int r;

        if (n == 0)
                return 0;
        /* only the (add, state) pairs the blocks name become keys,
         * renumbered: an add is one state already (the key's) */
        key_of = malloc(MAX(w->n_added, (size_t) 1) * sizeof(*key_of));
        keys = malloc(MIN(n, MAX(w->n_added, (size_t) 1)) * sizeof(*keys));
        blocks = malloc(n * sizeof(*blocks));
        if (!key_of || !keys || !blocks)
                return -ENOMEM;
        memset(key_of, 0xff, MAX(w->n_added, (size_t) 1) * sizeof(*key_of));
        for (size_t i = 0; i < n; i++) {
                if (t[i].sample >= w->n_added)
                        return log_error_errno(-EINVAL, "Off-CPU block names add %" PRIu32 " of %zu.",
                                               t[i].sample, w->n_added);
                if (t[i].duration_ns > t[i].end_ns)
                        return log_error_errno(-EINVAL, "Off-CPU block ends before the epoch.");
                start = MIN(start, t[i].end_ns - t[i].duration_ns);
                end = MAX(end, t[i].end_ns);
        }
        start -= start % 1000; /* µs: the blob's unit */
        for (size_t i = 0; i < n; i++) {
                uint32_t *k = &key_of[t[i].sample];
                uint64_t begin = t[i].end_ns - t[i].duration_ns;

                if (*k == UINT32_MAX) {
                        const struct timeline_key *a = &w->added[t[i].sample];

                        *k = (uint32_t) n_keys;
                        keys[n_keys++] = (struct offtime_key) { a->process_id, a->stack_id, a->tid, t[i].state };
                }
                /* the start rounded down and the end up to the µs: a
                 * block's µs hold all of its ns */
                blocks[i] = (struct offtime_block) {
                        .start_us = (begin - start) / 1000,
                        .duration_us = (t[i].end_ns - start + 999) / 1000 - (begin - start) / 1000,
                        .key = *k,
                };
        }
        r = offtime_pack(keys, n_keys, blocks, n, &data, &size);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, w->drain_id);
        sqlite3_bind_int64(st, 2, (int64_t) start);
        sqlite3_bind_int64(st, 3, (int64_t) end);
        sqlite3_bind_int64(st, 4, (int64_t) n);
        sqlite3_bind_blob(st, 5, data, (int) size, SQLITE_STATIC);
        return step_done(s, st, "off-CPU timeline insert");
}

int store_drain_commit(store *s, int64_t *ret_drain_id, uint64_t *ret_samples, uint64_t *ret_keys) {
        struct store_write *w = s->write;
        sqlite3_stmt *st = w->stmts[STMT_UPDATE_DRAIN];
        int r;

        r = pending_flush(s);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, w->drain_id);
        sqlite3_bind_int64(st, 2, (int64_t) w->drain_samples);
        sqlite3_bind_int64(st, 3, (int64_t) w->drain_keys);
        if (w->drain_hz > 0)
                sqlite3_bind_int64(st, 4, w->drain_hz);
        else
                sqlite3_bind_null(st, 4);
        r = step_done(s, st, "drain update");
        if (r < 0)
                return r;
        r = db_exec(&s->d, "COMMIT");
        if (r < 0)
                return r;
        w->in_drain = false;
        /* The id caches only spare SQLite lookups (a miss selects the row,
         * as after a rollback), and without a bound they keep every
         * process, thread, location and function stored since the last
         * rollback or retention pass: on a host starting thousands of
         * processes a minute, megabytes an hour. Past the bound they start
         * over empty, at the cost of one drain's lookups. */
        if (hashmap_size(w->mapping_ids) + hashmap_size(w->function_ids) + idmap_size(w->location_ids) +
                    idmap_size(w->process_ids) + hashmap_size(w->thread_names) >
            STORE_ID_CACHE_MAX)
                store_forget_ids(s);
        if (ret_drain_id)
                *ret_drain_id = w->drain_id;
        if (ret_samples)
                *ret_samples = w->drain_samples;
        if (ret_keys)
                *ret_keys = w->drain_keys;
        return 0;
}

void store_drain_abort(store *s) {
        struct store_write *w = s->write;

        db_rollback(&s->d);
        if (!w)
                return;
        pending_free(w);
        w->in_drain = false;
        /* ids cached during the transaction point at rows that are gone */
        if (caches_reset(w) < 0)
                log_oom();
}

void store_forget_ids(store *s) {
        /* retention (daemon/store/retention.c) deleted rows these may point at */
        if (s->write && caches_reset(s->write) < 0)
                log_oom();
}

