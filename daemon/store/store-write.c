/* The store's write path: one transaction per drain (store_drain_*), each
 * row referred to again (mapping, function, location, stack, process,
 * thread name) looked up in this connection's caches before SQLite. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "store-private.h"

/* The most ids the drain connection's caches keep in all: each costs about
 * 80 bytes (its slot, its key, a thread's name), so about 1.3 MiB. A
 * drain at defaults looks up a few thousand; one of a host running builds
 * adds 3-6 thousand (mostly locations), and at 32768 the caches, full
 * every minute there, were 2.5 MiB of the daemon's peak. See
 * store_drain_commit. */
#define STORE_ID_CACHE_MAX 16384

/* Runs a statement that returns nothing. */
static int step_done(store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (rc != SQLITE_DONE)
                return db_fail(&s->d, rc, what);
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
                r = db_fail(&s->d, rc, what);
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
                *ret = sqlite3_last_insert_rowid(s->d.handle);
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
        *ret = sqlite3_last_insert_rowid(s->d.handle);
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

void store_pending_free(store *s) {
        for (size_t i = 0; i < s->n_pending; i++)
                free(s->pending[i].entries);
        free(s->pending);
        s->pending = NULL;
        s->n_pending = s->pending_cap = 0;
        hashmap_free(s->pending_index);
        s->pending_index = NULL;
}

/* Gathers one sample of the drain into its (process, kind) block. */
static int pending_add(store *s, int64_t proc, int kind, const struct sample_entry *e) {
        uint64_t key = (uint64_t) proc << 8 | ((uint64_t) kind & 0xff);
        struct pending_block *b;
        void *v;
        int r;

        if (!s->pending_index && !(s->pending_index = hashmap_new_u64()))
                return -ENOMEM;
        if (hashmap_get(s->pending_index, UINT64_TO_KEY(key), &v) >= 0)
                b = &s->pending[(uintptr_t) v - 1];
        else {
                if (s->n_pending == s->pending_cap) {
                        size_t cap = MAX(s->pending_cap * 2, (size_t) 64);
                        struct pending_block *np = realloc(s->pending, cap * sizeof(*np));
                        if (!np)
                                return -ENOMEM;
                        s->pending = np;
                        s->pending_cap = cap;
                }
                r = hashmap_put(s->pending_index, UINT64_TO_KEY(key), (void *) (uintptr_t) (s->n_pending + 1));
                if (r < 0)
                        return r;
                b = &s->pending[s->n_pending++];
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
        hashmap *refs = hashmap_new_u64(), *prefs = hashmap_new_u64();
        int r = refs && prefs ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < s->n_pending; i++) {
                struct pending_block *b = &s->pending[i];
                r = sample_blocks_insert(&s->d, s->drain_id, b->kind, b->process_id, b->entries, b->n, refs, prefs);
        }
        if (r >= 0)
                r = stack_refs_apply(&s->d, refs, false);
        if (r >= 0)
                r = process_refs_apply(&s->d, prefs, false);
        hashmap_free(refs);
        hashmap_free(prefs);
        store_pending_free(s);
        return r;
}

int store_drain_begin(store *s, uint64_t start_ns, uint64_t end_ns) {
        int r;

        store_pending_free(s);

        r = db_exec(&s->d, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        s->in_drain = true;
        sqlite3_bind_int64(s->stmts[STMT_INSERT_DRAIN], 1, (int64_t) start_ns);
        sqlite3_bind_int64(s->stmts[STMT_INSERT_DRAIN], 2, (int64_t) end_ns);
        r = step_done(s, s->stmts[STMT_INSERT_DRAIN], "drain insert");
        if (r < 0)
                return r;
        s->drain_id = sqlite3_last_insert_rowid(s->d.handle);
        s->drain_samples = s->drain_keys = 0;
        return 0;
}

int store_drain_add(store *s, const struct store_sample *smp) {
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

        r = pending_flush(s);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, s->drain_id);
        sqlite3_bind_int64(st, 2, (int64_t) s->drain_samples);
        sqlite3_bind_int64(st, 3, (int64_t) s->drain_keys);
        r = step_done(s, st, "drain update");
        if (r < 0)
                return r;
        r = db_exec(&s->d, "COMMIT");
        if (r < 0)
                return r;
        s->in_drain = false;
        /* The id caches only spare SQLite lookups (a miss selects the row,
         * as after a rollback), and without a bound they keep every
         * process, thread, location and function stored since the last
         * rollback or retention pass: on a host starting thousands of
         * processes a minute, megabytes an hour. Past the bound they start
         * over empty, at the cost of one drain's lookups. */
        if (hashmap_size(s->mapping_ids) + hashmap_size(s->function_ids) + hashmap_size(s->location_ids) +
                    hashmap_size(s->process_ids) + hashmap_size(s->thread_names) >
            STORE_ID_CACHE_MAX)
                store_forget_ids(s);
        if (ret_drain_id)
                *ret_drain_id = s->drain_id;
        if (ret_samples)
                *ret_samples = s->drain_samples;
        if (ret_keys)
                *ret_keys = s->drain_keys;
        return 0;
}

void store_drain_abort(store *s) {
        db_rollback(&s->d);
        store_pending_free(s);
        s->in_drain = false;
        /* ids cached during the transaction point at rows that are gone */
        if (store_caches_reset(s) < 0)
                log_oom();
}

void store_forget_ids(store *s) {
        /* retention (daemon/store/retention.c) deleted rows these may point at */
        if (store_caches_reset(s) < 0)
                log_oom();
}

