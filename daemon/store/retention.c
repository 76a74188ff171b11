/* Retention: merges old drains into coarser buckets, deletes what is too
 * old or too much, removes rows nothing refers to any more, and returns
 * the space. Every step is one short transaction on this module's own
 * connection, run by the writer thread between drains, so a drain waits at
 * most for one step. */
#include "retention.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "hashmap.h"
#include "log.h"
#include "macro.h"
#include "merge-fold.h"
#include "process-groups.h"
#include "sample-blocks.h"
#include "stack-pack.h"

/* Drains deleted per step: a raw drain of a busy host is a few thousand
 * sample rows, so a step stays in the tens of milliseconds. */
#define DELETE_BATCH 32

/* Captures' pins (schema/0012): a drain whose time overlaps the range of
 * a capture not unpinned is neither merged nor deleted, and the timeline
 * block written with it stays. The timeline's pin follows its drain's, so
 * a kept block never names stacks or processes whose blocks went. The
 * captures table holds a few rows (one per cool-down at most). */
#define DRAIN_PINNED(d)                                                                         \
        "EXISTS (SELECT 1 FROM captures c WHERE c.state <> 'unpinned' AND " d ".end_ns >= c.from_ns " \
        "AND " d ".start_ns <= c.to_ns)"
#define TIMELINE_PINNED(t)                                                                      \
        "EXISTS (SELECT 1 FROM drains pd WHERE pd.id = " t ".drain_id AND " DRAIN_PINNED("pd") ")"
/* Sample rows merged per step: a merge re-aggregates and rewrites them in one
 * transaction (about 10 us a row here), so a busy host's 10-minute bucket
 * (up to hundreds of thousands of rows) is merged in several steps, into
 * several rows of that bucket, rather than stalling the writer for
 * seconds. */
#define MERGE_ROWS_MAX 16384
/* Candidate stacks and processes checked per step (one index probe each). */
#define GC_BATCH 4096
/* Bytes of free pages returned to the file system per step (4096 pages of
 * an older store, 1024 of a store made with 16 KiB pages). */
#define VACUUM_BATCH_BYTES (16ULL << 20)
/* Free space worth returning when the store is not over its maximum: below
 * this the free pages are simply reused by the next drains. */
#define VACUUM_MIN_BYTES (1ULL << 20)

struct retention {
        struct db d;                     /* the connection; d.path is path */
        char *path;
        struct retention_settings set;
        struct retention_totals totals;
        bool shrinking;                  /* over max_bytes: deleting down to 90% of it */
        uint64_t stacks_since_sweep;     /* stacks deleted since locations were last swept */
        bool gc_pending;                 /* temp.gc_stacks or temp.gc_processes may have rows */
        bool v7_gone;                    /* samples_v7 (schema 7's samples being converted) was seen gone */
        uint64_t damaged_pending;        /* damaged blocks dropped in the open transaction */
        uint64_t timeline_pending;       /* timeline blocks deleted in the open transaction */
        uint64_t grouped_pending;        /* processes grouped in the open transaction */
        uint64_t folded_pending;         /* (stack, kind) folded in the open transaction */
        uint64_t fold_big_pending;       /* steps folded by their own weights in it */
};

static const char *const total_names[] = {
        "merged_drains", "deleted_drains", "deleted_for_size", "deleted_stacks", "deleted_processes",
        "deleted_locations", "vacuumed_bytes", "spanned_drains", "damaged_blocks", "deleted_timeline",
        "grouped_processes", "merged_for_size", "folded_stacks", "fold_buckets_big",
};

static uint64_t *total_field(struct retention_totals *t, size_t i) {
        uint64_t *f[] = {
                &t->merged_drains, &t->deleted_drains, &t->deleted_for_size, &t->deleted_stacks,
                &t->deleted_processes, &t->deleted_locations, &t->vacuumed_bytes, &t->spanned_drains,
                &t->damaged_blocks, &t->deleted_timeline, &t->grouped_processes, &t->merged_for_size,
                &t->folded_stacks, &t->fold_buckets_big,
        };
        _Static_assert(ELEMENTSOF(f) == ELEMENTSOF(total_names), "a name per total");
        return f[i];
}

static int totals_load(retention *r) {
        for (size_t i = 0; i < ELEMENTSOF(total_names); i++) {
                sqlite3_stmt *st;
                int rc = sqlite3_prepare_v2(r->d.handle, "SELECT value FROM retention_totals WHERE name = ?1", -1, &st, NULL);

                if (rc != SQLITE_OK)
                        return db_fail(&r->d, rc, "reading retention totals");
                sqlite3_bind_text(st, 1, total_names[i], -1, SQLITE_STATIC);
                rc = sqlite3_step(st);
                *total_field(&r->totals, i) = rc == SQLITE_ROW ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
                sqlite3_finalize(st);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                        return db_fail(&r->d, rc, "reading retention totals");
        }
        return 0;
}

static int totals_save(retention *r, struct retention_totals *t) {
        for (size_t i = 0; i < ELEMENTSOF(total_names); i++) {
                sqlite3_stmt *st;
                int rc = sqlite3_prepare_v2(r->d.handle,
                                            "INSERT INTO retention_totals (name, value) VALUES (?1, ?2) "
                                            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                                            -1, &st, NULL);
                if (rc != SQLITE_OK)
                        return db_fail(&r->d, rc, "saving retention totals");
                sqlite3_bind_text(st, 1, total_names[i], -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 2, (int64_t) *total_field(t, i));
                rc = sqlite3_step(st);
                sqlite3_finalize(st);
                if (rc != SQLITE_DONE)
                        return db_fail(&r->d, rc, "saving retention totals");
        }
        return 0;
}

static int begin(retention *r) {
        return db_exec(&r->d, "BEGIN IMMEDIATE");
}

/* Commits with the totals t, and the damaged blocks the transaction
 * dropped; on failure rolls back and keeps the old ones. */
static int commit(retention *r, struct retention_totals *t) {
        int k;

        t->damaged_blocks += r->damaged_pending;
        r->damaged_pending = 0;
        t->deleted_timeline += r->timeline_pending;
        r->timeline_pending = 0;
        t->grouped_processes += r->grouped_pending;
        r->grouped_pending = 0;
        t->folded_stacks += r->folded_pending;
        r->folded_pending = 0;
        t->fold_buckets_big += r->fold_big_pending;
        r->fold_big_pending = 0;
        k = totals_save(r, t);
        if (k >= 0)
                k = db_exec(&r->d, "COMMIT");
        if (k < 0) {
                db_rollback(&r->d);
                return k;
        }
        r->totals = *t;
        return 0;
}

static int rollback(retention *r, int err) {
        r->damaged_pending = 0;
        r->timeline_pending = 0;
        r->grouped_pending = 0;
        r->folded_pending = 0;
        r->fold_big_pending = 0;
        db_rollback(&r->d);
        return err;
}

int retention_open(const char *path, const struct retention_settings *settings, retention **ret) {
        _cleanup_(retention_closep) retention *r = calloc(1, sizeof(*r));
        int64_t mode;
        int rc, k;

        if (!r)
                return log_oom();
        r->set = *settings;
        r->path = strdup(path);
        if (!r->path)
                return log_oom();
        r->d.path = r->path;
        r->d.who = "retention: ";
        rc = sqlite3_open_v2(path, &r->d.handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return r->d.handle ? db_fail(&r->d, rc, "opening") : -ENOMEM;
        sqlite3_busy_timeout(r->d.handle, 5000);
        k = db_exec(&r->d, "PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY;"
                    "CREATE TEMP TABLE doomed (id INTEGER PRIMARY KEY);"
                    "CREATE TEMP TABLE fold_bucket (id INTEGER PRIMARY KEY);"
                    "CREATE TEMP TABLE batch (id INTEGER PRIMARY KEY);"
                    "CREATE TEMP TABLE gc_stacks (id INTEGER PRIMARY KEY);"
                    "CREATE TEMP TABLE gc_processes (id INTEGER PRIMARY KEY);");
        if (k >= 0)
                k = process_groups_prepare(&r->d);
        if (k >= 0)
                k = db_limit_wal(&r->d);
        if (k >= 0)
                k = db_query_i64(&r->d, "PRAGMA auto_vacuum", NULL, 0, 0, &mode);
        /* Deleted data only frees pages inside the file; with incremental
         * auto-vacuum they can be given back to the file system. A store
         * created without it (SQLite's default) is switched once: setting
         * the mode takes effect only through a VACUUM, which rewrites the
         * file (a new store is nearly empty here, so that is instant). */
        if (k >= 0 && mode != 2) {
                log_info("Store %s: switching to incremental auto-vacuum (rewrites the file once).", path);
                k = db_exec(&r->d, "PRAGMA auto_vacuum = INCREMENTAL");
                if (k >= 0 && db_exec(&r->d, "VACUUM") < 0)
                        /* a reader in the way: space is still reused inside
                         * the file, and the next start tries again */
                        log_warning("Store %s: could not switch to incremental auto-vacuum now; deleted data "
                                    "is reused inside the file but not given back.", path);
        }
        if (k >= 0)
                k = totals_load(r);
        /* Rows left unreferenced when profd stopped between deleting samples
         * and removing what they referred to: every stack and process is a
         * candidate once (checked in batches by the next steps, an index
         * probe each), then locations are swept. */
        if (k >= 0)
                k = db_exec(&r->d, "INSERT INTO temp.gc_stacks SELECT id FROM stacks;"
                            "INSERT INTO temp.gc_processes SELECT id FROM processes;");
        if (k < 0)
                return k;
        r->gc_pending = true;
        r->stacks_since_sweep = UINT64_MAX / 2;
        *ret = TAKE_PTR(r);
        return 0;
}

retention *retention_close(retention *r) {
        if (!r)
                return NULL;
        if (r->d.handle)
                sqlite3_close(r->d.handle);
        free(r->path);
        free(r);
        return NULL;
}

void retention_configure(retention *r, const struct retention_settings *settings) {
        r->set = *settings;
        r->shrinking = false;
}

void retention_get_totals(const retention *r, struct retention_totals *ret) {
        *ret = r->totals;
}

void retention_release_memory(retention *r) {
        (void) sqlite3_db_release_memory(r->d.handle);
}

/* The drains as drained in temp.doomed, about to be merged or deleted,
 * that an export target has not acknowledged yet are lost to it: counted
 * in its export cursor (schema/0005), shown by profctl status. Inside the
 * transaction that merges or deletes them. */
static int64_t count_unexported(retention *r) {
        return db_run(&r->d, "UPDATE export_cursors SET lost_drains = lost_drains + "
                      "(SELECT count(*) FROM drains d WHERE d.id IN temp.doomed AND d.resolution_ns = 0 "
                      "AND d.id > export_cursors.drain_id)", NULL, 0);
}

/* What blocks_take does with the entries of the drains in temp.doomed. */
enum take_mode {
        TAKE_DELETE, /* dropped */
        TAKE_MERGE,  /* combined per (process, kind; thread, cgroup, state, peer, stack) into drain `to`,
                      * short-lived processes by their group (process-groups.h) */
        TAKE_SPAN,   /* moved as they are into blocks keyed `to`, the first drain of their span */
};

static int entries_reserve(struct sample_entry **e, size_t *cap, size_t want) {
        struct sample_entry *ne;
        size_t ncap;

        if (want <= *cap)
                return 0;
        ncap = MAX(*cap * 2, want);
        ne = realloc(*e, ncap * sizeof(*ne));
        if (!ne)
                return -ENOMEM;
        *e = ne;
        *cap = ncap;
        return 0;
}

/* The keys of the blocks holding the drains of temp.doomed: a drain's own
 * id, or its span's first drain (schema 9). */
#define DOOMED_KEYS "(SELECT DISTINCT coalesce(span, id) FROM drains WHERE id IN temp.doomed)"

/* Applies the stack counts of one process and kind, and starts anew. */
static int refs_apply_renew(retention *r, hashmap **refs) {
        int k;

        if (hashmap_size(*refs) == 0)
                return 0;
        k = stack_refs_apply(&r->d, *refs, true);
        hashmap_free(*refs);
        *refs = hashmap_new_u64();
        return k < 0 ? k : *refs ? 0 : -ENOMEM;
}

/* The keys of the blocks holding the drains of the bucket being merged
 * (temp.fold_bucket, step_merge). */
#define BUCKET_KEYS "(SELECT DISTINCT coalesce(span, id) FROM drains WHERE id IN temp.fold_bucket)"

/* (stack, kind) a bucket may name to be weighed whole: their frames, 8
 * bytes each, about 40 a stack on a build host: 5 MiB. A 1-minute bucket
 * of the build loop names about 5,400 stacks. */
#define FOLD_BUCKET_STACKS_MAX 16384

/* Adds the ids of a temporary table's rows (table: "temp.doomed") to set. */
static int ids_read(retention *r, const char *table, hashmap *set) {
        _cleanup_free_ char *sql = NULL;
        sqlite3_stmt *st = NULL;
        int k, rc = SQLITE_DONE;

        if (asprintf(&sql, "SELECT id FROM %s", table) < 0)
                return -ENOMEM;
        k = db_prepare(&r->d, sql, NULL, 0, &st);
        while (k >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
                k = hashmap_put(set, UINT64_TO_KEY(sqlite3_column_int64(st, 0)), (void *) 1);
        if (k >= 0 && rc != SQLITE_DONE)
                k = db_fail(&r->d, rc, "reading drains");
        sqlite3_finalize(st);
        return k;
}

/* Plans the folding of the step's entries (temp.doomed, in doomed),
 * weighed over the bucket's (temp.fold_bucket): merge-fold.h. */
static int fold_plan(retention *r, const hashmap *doomed, hashmap **ret_map, uint64_t *ret_folded) {
        hashmap *bucket = hashmap_new_u64();
        bool big = false;
        int k;

        if (!bucket)
                return -ENOMEM;
        k = ids_read(r, "temp.fold_bucket", bucket);
        if (k >= 0)
                k = merge_fold_plan(&r->d, BUCKET_KEYS, bucket, DOOMED_KEYS, doomed,
                                    r->set.fold_bucket_stacks_max ? r->set.fold_bucket_stacks_max
                                                                  : FOLD_BUCKET_STACKS_MAX,
                                    r->set.fold_ppm, ret_map, ret_folded, &big);
        hashmap_free(bucket);
        if (k >= 0 && big)
                r->fold_big_pending++;
        return k;
}

/* Takes the entries of the drains in temp.doomed out of the blocks holding
 * them, which may hold other drains too (spans): each block read counts
 * -1 for its process and each of its stacks and is deleted; what it holds
 * of other drains is written back under the same key; the entries taken
 * are dropped, merged into drain `to` or moved into a span keyed `to`
 * (mode), and every block written counts +1. The counts are applied, the
 * stacks and processes that reach 0 made candidates for removal. Returns
 * the entries written for `to`, or a negative errno.
 *
 * One process and kind at a time, in memory that does not grow with the
 * step: a build host's 5-minute span is about 26,000 blocks and 100,000
 * stacks, whose counts in one map and entries queued until the end took
 * 16 MiB. Blocks are written as soon as a process and kind is read, keyed
 * by the negative of their key: the blocks read have positive keys (drain
 * ids), so the reading statement never meets them, whatever its plan.
 * Once the blocks read are deleted, the keys are made positive. Stack
 * counts are applied at the end of each process and kind: a block written
 * holds only stacks of the blocks it replaces, so counts only fall within
 * a step, and a stack that reaches 0 is the candidate it was when all were
 * applied at once. */
static int64_t blocks_take(retention *r, enum take_mode mode, int64_t to) {
        _cleanup_free_ struct sample_entry *taken = NULL, *kept = NULL;
        hashmap *refs = hashmap_new_u64(), *prefs = hashmap_new_u64(), *doomed = hashmap_new_u64(), *fold = NULL;
        sqlite3_stmt *st = NULL;
        _cleanup_stmt_ sqlite3_stmt *ins = NULL; /* the blocks written, one statement for all */
        int64_t process = -1, written = 0;
        size_t n = 0, cap = 0, kept_cap = 0;
        int kind = -1, rc, k;

        if (!refs || !prefs || !doomed) {
                k = -ENOMEM;
                goto out;
        }
        k = ids_read(r, "temp.doomed", doomed);
        if (k < 0)
                goto out;
        /* a merge writes a short-lived process's entries under its group
         * (temp.churn); the other modes keep every process */
        if (mode == TAKE_MERGE && !r->set.no_groups) {
                int64_t g = process_groups_assign(&r->d, DOOMED_KEYS, "temp.doomed");

                if (g < 0) {
                        k = (int) g;
                        goto out;
                }
        } else if ((k = db_exec(&r->d, "DELETE FROM temp.churn")) < 0)
                goto out;
        /* a merge folds rare stacks (merge-fold.h), unless a timeline of
         * these drains names them */
        if (mode == TAKE_MERGE && r->set.fold_ppm) {
                bool timed;
                uint64_t folded;

                k = drains_timed(&r->d, "temp.doomed", &timed);
                if (k >= 0 && !timed)
                        k = fold_plan(r, doomed, &fold, &folded);
                if (k < 0)
                        goto out;
                r->folded_pending += fold ? folded : 0;
        }
        k = db_prepare(&r->d, "SELECT b.drain_id, b.process_id, b.kind, coalesce(c.group_id, b.process_id) AS dest, "
                       SAMPLE_BLOCK_COLUMNS " FROM sample_blocks b LEFT JOIN temp.churn c ON c.process_id = b.process_id "
                       "WHERE b.drain_id IN " DOOMED_KEYS " ORDER BY dest, b.kind, b.drain_id", NULL, 0, &st);
        for (;;) {
                bool row = k >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW;
                int64_t key = row ? sqlite3_column_int64(st, 0) : -1;
                int64_t p = row ? sqlite3_column_int64(st, 1) : -1;
                int kd = row ? sqlite3_column_int(st, 2) : -1;
                /* where the taken entries go: p, or its group */
                int64_t dest = row ? sqlite3_column_int64(st, 3) : -1;
                struct sample_block b;
                size_t n_kept = 0;

                if (k < 0)
                        break;
                if (!row && rc != SQLITE_DONE) {
                        k = db_fail(&r->d, rc, "reading blocks");
                        break;
                }
                if (process >= 0 && (!row || dest != process || kd != kind)) {
                        if (mode == TAKE_MERGE)
                                n = sample_entries_combine(taken, n);
                        if (mode != TAKE_DELETE) {
                                k = sample_blocks_insert(&r->d, &ins, -to, kind, process, taken, n, refs, prefs);
                                written += (int64_t) n;
                        }
                        n = 0;
                        if (k >= 0)
                                k = refs_apply_renew(r, &refs);
                        if (k < 0)
                                break;
                }
                if (!row)
                        break;
                if (key <= 0) {
                        /* a key made negative would meet it */
                        k = log_error_errno(-EBADMSG, "Store %s: a block of samples has the key %" PRId64
                                            ", not a drain's: %m", r->path, key);
                        break;
                }
                process = dest, kind = kd;
                if (sample_block_from_row(st, 4, &b) < 0) {
                        /* its entries cannot be read, so they are lost
                         * already; kept, it would stop this step, and every
                         * step after it, each time (the store would outgrow
                         * max_store_size): it goes with its key's blocks,
                         * counted. Its stacks stay counted as named, so
                         * they are never removed. */
                        log_error("Store %s: the block of samples (key %" PRId64 ", kind %d, process %" PRId64
                                  ") is damaged: dropped with its entries (damaged_blocks in status).",
                                  r->path, key, kd, p);
                        r->damaged_pending++;
                        k = stack_refs_add(prefs, p, -1);
                        continue;
                }
                k = stack_refs_add_block(refs, &b, -1);
                if (k >= 0)
                        k = stack_refs_add(prefs, p, -1);
                if (k >= 0)
                        k = entries_reserve(&taken, &cap, n + b.n);
                if (k >= 0)
                        k = entries_reserve(&kept, &kept_cap, b.n);
                if (k < 0)
                        break;
                for (size_t i = 0; i < b.n; i++) {
                        struct sample_entry e;
                        int64_t drain;

                        sample_block_get(&b, i, &e);
                        drain = key + e.span;
                        if (hashmap_get(doomed, UINT64_TO_KEY(drain), NULL) < 0) {
                                kept[n_kept++] = e;
                                continue;
                        }
                        e.span = (uint8_t) (mode == TAKE_SPAN ? drain - to : 0);
                        if (dest != p)
                                process_group_entry(&e);
                        e.stack_id = merge_fold_stack(fold, e.stack_id, kd);
                        taken[n++] = e;
                }
                /* what it holds of other drains stays the process's own */
                k = sample_blocks_insert(&r->d, &ins, -key, kind, p, kept, n_kept, refs, prefs);
        }
        sqlite3_finalize(st);
        st = NULL;
        if (k >= 0)
                k = (int) db_run(&r->d, "DELETE FROM sample_blocks WHERE drain_id IN " DOOMED_KEYS, NULL, 0);
        if (k >= 0)
                k = (int) db_run(&r->d, "UPDATE sample_blocks SET drain_id = -drain_id WHERE drain_id < 0", NULL, 0);
        /* the stack counts are applied: the last process and kind's at the
         * end of the rows */
        if (k >= 0)
                k = process_refs_apply(&r->d, prefs, true);
        /* the stacks folded away are candidates now */
        if (k >= 0 && fold)
                r->gc_pending = true;
        /* grouped: a process all of whose blocks went to its group (one
         * whose span also holds drains not merged yet goes at a later step) */
        if (k >= 0 && mode == TAKE_MERGE) {
                int64_t g;

                k = db_query_i64(&r->d, "SELECT count(*) FROM temp.churn c WHERE coalesce((SELECT blocks FROM "
                                 "process_refs WHERE process_id = c.process_id), 0) <= 0", NULL, 0, 0, &g);
                if (k >= 0 && g > 0) {
                        r->grouped_pending += (uint64_t) g;
                        r->gc_pending = true; /* their rows are candidates now */
                }
        }
out:
        hashmap_free(refs);
        hashmap_free(prefs);
        hashmap_free(doomed);
        hashmap_free(fold);
        return k < 0 ? k : written;
}

/* Whether schema 7's samples are still being converted (samples_v7,
 * store-migrate.c): expired drains are deleted with their rows there too,
 * while merges and the removal of stacks and processes wait. */
static int v7_present(retention *r, bool *ret) {
        return db_v7_present(&r->d, &r->v7_gone, ret);
}

/* Deletes the drains listed in temp.doomed with their samples and drops;
 * the stacks and processes they referred to become candidates for removal.
 * Inside a transaction. Returns the number of drains deleted. */
static int64_t delete_doomed(retention *r) {
        static const char *const sql[] = {
                "DELETE FROM drops WHERE drain_id IN temp.doomed",
        };
        int64_t k = count_unexported(r);
        bool v7;

        if (k < 0)
                return k;
        /* their entries go; their stacks' and processes' counts of blocks
         * go down, those at 0 are candidates for removal */
        k = blocks_take(r, TAKE_DELETE, 0);
        if (k < 0)
                return k;
        k = v7_present(r, &v7);
        if (k < 0)
                return k;
        /* drains not converted yet: their rows go from samples_v7 (the
         * conversion would never reach them), and what they name, counted
         * in no stack_refs yet, becomes a candidate like the rest */
        if (v7) {
                static const char *const v7_sql[] = {
                        "INSERT OR IGNORE INTO temp.gc_stacks SELECT DISTINCT stack_id FROM samples_v7 "
                        "WHERE drain_id IN temp.doomed",
                        "INSERT OR IGNORE INTO temp.gc_processes SELECT DISTINCT process_id FROM samples_v7 "
                        "WHERE drain_id IN temp.doomed",
                        "DELETE FROM samples_v7 WHERE drain_id IN temp.doomed",
                };
                for (size_t i = 0; i < ELEMENTSOF(v7_sql); i++) {
                        k = db_run(&r->d, v7_sql[i], NULL, 0);
                        if (k < 0)
                                return k;
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(sql); i++) {
                k = db_run(&r->d, sql[i], NULL, 0);
                if (k < 0)
                        return k;
        }
        /* the timeline of their time goes with them: its stacks and
         * processes are held by their blocks (schema/0011), and drains go
         * oldest first, so every timeline block that ends by the last of
         * them is theirs or older */
        k = db_run(&r->d, "DELETE FROM timeline_blocks WHERE end_ns <= "
                   "(SELECT max(end_ns) FROM drains WHERE id IN temp.doomed) "
                   "AND NOT " TIMELINE_PINNED("timeline_blocks"), NULL, 0);
        if (k < 0)
                return k;
        r->timeline_pending += (uint64_t) k;
        /* and the off-CPU timeline's (schema/0013), the same way */
        k = db_run(&r->d, "DELETE FROM offcpu_timeline WHERE end_ns <= "
                   "(SELECT max(end_ns) FROM drains WHERE id IN temp.doomed) "
                   "AND NOT " TIMELINE_PINNED("offcpu_timeline"), NULL, 0);
        if (k < 0)
                return k;
        r->timeline_pending += (uint64_t) k;
        r->gc_pending = true;
        return db_run(&r->d, "DELETE FROM drains WHERE id IN temp.doomed", NULL, 0);
}

/* The database's pages in use (not on the free list), in bytes. */
static int used_bytes(retention *r, uint64_t *ret, uint64_t *ret_free) {
        int64_t pages, free_pages, page_size;
        int k;

        if ((k = db_query_i64(&r->d, "PRAGMA page_count", NULL, 0, 0, &pages)) < 0 ||
            (k = db_query_i64(&r->d, "PRAGMA freelist_count", NULL, 0, 0, &free_pages)) < 0 ||
            (k = db_query_i64(&r->d, "PRAGMA page_size", NULL, 0, 4096, &page_size)) < 0)
                return k;
        *ret = (uint64_t) (pages - free_pages) * (uint64_t) page_size;
        if (ret_free)
                *ret_free = (uint64_t) free_pages * (uint64_t) page_size;
        return 0;
}

/* Over max_bytes: deletes the oldest drains, whatever their level, until
 * the data takes 90% of it (so the next drains do not tip it over again at
 * once). The newest drain always stays. */
static int step_gc(retention *r, bool *ret_forget);
static int step_sweep(retention *r, bool force, bool *ret_forget);

static int step_merge(retention *r, uint64_t now_ns, uint64_t width, uint64_t age, bool for_size);

/* Drains this recent are never merged early for size: at least the
 * timeline's window and an hour stay as drained, by pid. */
#define EARLY_MERGE_MIN_AGE_NS (3600ULL * NSEC_PER_SEC)

static int step_size(retention *r, uint64_t now_ns, bool *ret_forget) {
        struct retention_totals t = r->totals;
        uint64_t used, age;
        int64_t n, limit = DELETE_BATCH;
        int k;

        if (r->set.max_bytes == 0)
                return 0;
        k = used_bytes(r, &used, NULL);
        if (k < 0)
                return k;
        if (used > r->set.max_bytes)
                r->shrinking = true;
        if (!r->shrinking || used <= r->set.max_bytes / 10 * 9) {
                r->shrinking = false;
                return 0;
        }
        /* what the deleted drains alone referred to is counted in use until
         * it is removed: remove it before deciding that more must go */
        if (r->gc_pending)
                return step_gc(r, ret_forget);
        k = step_sweep(r, true, ret_forget);
        if (k != 0)
                return k;
        /* before any data goes: the oldest raw drains into 1-minute
         * buckets, then the oldest of those into 10-minute ones, ahead of
         * their age (merges group and fold, so they keep the totals in
         * less room); except the last hour, or the timeline's window */
        age = MAX(r->set.timeline_ns, EARLY_MERGE_MIN_AGE_NS);
        if ((k = step_merge(r, now_ns, RETENTION_1M_NS, MIN(age, r->set.raw_ns), true)) != 0 ||
            (k = step_merge(r, now_ns, RETENTION_10M_NS, MIN(age, r->set.m1_ns), true)) != 0)
                return k;
        k = begin(r);
        if (k < 0)
                return k;
        n = db_run(&r->d, "DELETE FROM temp.doomed", NULL, 0);
        if (n >= 0)
                n = db_run(&r->d, "INSERT INTO temp.doomed SELECT id FROM drains "
                           "WHERE end_ns < (SELECT max(end_ns) FROM drains) AND NOT " DRAIN_PINNED("drains")
                           " ORDER BY end_ns LIMIT ?1",
                        &limit, 1);
        if (n >= 0)
                n = delete_doomed(r);
        if (n < 0)
                return rollback(r, (int) n);
        if (n == 0) {
                /* only the newest drain is left: nothing more to give */
                r->shrinking = false;
                return rollback(r, 0);
        }
        t.deleted_for_size += (uint64_t) n;
        k = commit(r, &t);
        if (k < 0)
                return k;
        log_debug("Store %s: %" PRIu64 " bytes in use, over the maximum of %" PRIu64 ": deleted the %" PRId64
                  " oldest drains.", r->path, used, r->set.max_bytes, n);
        return 1;
}

/* Deletes drains that ended longer than `retention` ago. */
static int step_expire(retention *r, uint64_t now_ns) {
        struct retention_totals t = r->totals;
        int64_t args[2], n, oldest;
        int k;

        if (now_ns <= r->set.all_ns)
                return 0;
        args[0] = (int64_t) (now_ns - r->set.all_ns);
        args[1] = DELETE_BATCH;
        k = db_query_i64(&r->d, "SELECT min(end_ns) FROM drains WHERE NOT " DRAIN_PINNED("drains"), NULL, 0,
                         INT64_MAX, &oldest);
        if (k < 0)
                return k;
        if (oldest >= args[0])
                return 0;
        k = begin(r);
        if (k < 0)
                return k;
        n = db_run(&r->d, "DELETE FROM temp.doomed", NULL, 0);
        if (n >= 0)
                n = db_run(&r->d, "INSERT INTO temp.doomed SELECT id FROM drains WHERE end_ns < ?1 "
                           "AND NOT " DRAIN_PINNED("drains") " ORDER BY end_ns LIMIT ?2",
                        args, 2);
        if (n >= 0)
                n = delete_doomed(r);
        if (n < 0)
                return rollback(r, (int) n);
        t.deleted_drains += (uint64_t) n;
        k = commit(r, &t);
        return k < 0 ? k : n > 0;
}

/* Merges the oldest bucket of width `width` whose every drain is older than
 * `age` (its end no later than now - age) from the finer rows in it: one
 * new drains row spanning them, its samples the sums per (process, thread,
 * cgroup, kind, state, peer, stack), its drops the sums per reason. A
 * bucket with more sample rows than one step merges becomes several rows
 * of that width, each merging a run of consecutive finer rows; a single
 * row is only relabelled. */
static int step_merge(retention *r, uint64_t now_ns, uint64_t width, uint64_t age, bool for_size) {
        struct retention_totals t = r->totals;
        int64_t oldest, count, merged, keys, args[4];
        uint64_t bucket;
        bool relabel;
        int k;

        bool v7;

        if (now_ns < age + width)
                return 0;
        /* a merge reads blocks: while drains are still in samples_v7 (the
         * oldest are converted last) merges wait for the conversion */
        k = v7_present(r, &v7);
        if (k < 0 || v7)
                return k;
        args[0] = (int64_t) width;
        k = db_query_i64(&r->d, "SELECT min(end_ns) FROM drains WHERE resolution_ns < ?1 AND NOT "
                         DRAIN_PINNED("drains"), args, 1, -1, &oldest);
        if (k < 0 || oldest < 0)
                return k;
        bucket = retention_bucket((uint64_t) oldest, width);
        if (bucket + width > now_ns - age)
                return 0;
        args[1] = (int64_t) bucket;
        args[2] = (int64_t) (bucket + width);

        args[3] = (int64_t) (r->set.merge_rows_max ? r->set.merge_rows_max : MERGE_ROWS_MAX);
        k = begin(r);
        if (k < 0)
                return k;
        /* the bucket's rows, oldest first, as many as fit in one step's
         * share of sample rows (at least one), of the oldest one's
         * sampling rate (schema 14): a merged row has one rate, which
         * queries weigh its samples by, so rows of another rate (a
         * capture's raise, a reload) are merged by later steps into rows
         * of their own in the same bucket */
        count = db_run(&r->d, "DELETE FROM temp.doomed", NULL, 0);
        if (count >= 0)
                count = db_run(&r->d, "INSERT INTO temp.doomed SELECT id FROM ("
                               "SELECT id, keys, sum(keys) OVER (ORDER BY end_ns, id) AS upto FROM drains "
                               "WHERE resolution_ns < ?1 AND end_ns >= ?2 AND end_ns < ?3 AND NOT "
                               DRAIN_PINNED("drains") " AND coalesce(frequency_hz, 0) = ("
                               "SELECT coalesce(frequency_hz, 0) FROM drains WHERE resolution_ns < ?1 AND end_ns >= ?2 "
                               "AND end_ns < ?3 AND NOT " DRAIN_PINNED("drains") " ORDER BY end_ns, id LIMIT 1)"
                               ") WHERE upto - keys < ?4",
                            args, 4);
        /* the whole bucket, rows merged into it before included: a fold's
         * share is of the bucket (merge-fold.h) */
        if (count >= 0 && r->set.fold_ppm) {
                int64_t b = db_run(&r->d, "DELETE FROM temp.fold_bucket", NULL, 0);

                if (b >= 0)
                        b = db_run(&r->d, "INSERT INTO temp.fold_bucket SELECT id FROM drains WHERE resolution_ns <= ?1 "
                                    "AND end_ns >= ?2 AND end_ns < ?3 AND NOT " DRAIN_PINNED("drains"),
                                    args, 3);
                if (b < 0)
                        count = b;
        }
        if (count >= 0) {
                int64_t lost = count_unexported(r);
                if (lost < 0)
                        count = lost;
        }
        if (count < 0)
                return rollback(r, (int) count);
        /* a bucket of one drain is only relabelled, unless it has
         * short-lived processes to group (then merged like the others) */
        relabel = count <= 1;
        if (count == 1 && !r->set.no_groups) {
                int64_t g = process_groups_assign(&r->d, DOOMED_KEYS, "temp.doomed");

                if (g < 0)
                        return rollback(r, (int) g);
                relabel = g == 0;
        }
        /* folding rewrites a lone drain's blocks too, when it may fold
         * them: not while a timeline names the drain (blocks_take) */
        if (relabel && count == 1 && r->set.fold_ppm) {
                bool timed;

                k = drains_timed(&r->d, "temp.doomed", &timed);
                if (k < 0)
                        return rollback(r, k);
                relabel = timed;
        }
        if (relabel) {
                merged = db_run(&r->d, "UPDATE drains SET resolution_ns = ?1 WHERE id IN temp.doomed", args, 1);
                if (merged < 0)
                        return rollback(r, (int) merged);
                k = commit(r, &t);
                return k < 0 ? k : 1;
        }
        merged = db_run(&r->d, "INSERT INTO drains (start_ns, end_ns, samples, keys, resolution_ns, frequency_hz) "
                        "SELECT min(start_ns), max(end_ns), sum(samples), 0, ?1, max(frequency_hz) FROM drains "
                        "WHERE id IN temp.doomed", args, 1);
        if (merged < 0)
                return rollback(r, (int) merged);
        int64_t id[1] = { sqlite3_last_insert_rowid(r->d.handle) };
        keys = blocks_take(r, TAKE_MERGE, id[0]);
        if (keys >= 0)
                k = (int) db_run(&r->d, "INSERT INTO drops (drain_id, reason, count) "
                                 "SELECT ?1, reason, sum(count) FROM drops WHERE drain_id IN temp.doomed GROUP BY reason",
                              id, 1);
        else
                k = (int) keys;
        if (k >= 0)
                k = (int) db_run(&r->d, "DELETE FROM drops WHERE drain_id IN temp.doomed", NULL, 0);
        if (k >= 0)
                k = (int) db_run(&r->d, "DELETE FROM drains WHERE id IN temp.doomed", NULL, 0);
        if (k >= 0) {
                int64_t a[2] = { id[0], keys };
                k = (int) db_run(&r->d, "UPDATE drains SET keys = ?2 WHERE id = ?1", a, 2);
        }
        if (k < 0)
                return rollback(r, k);
        t.merged_drains += (uint64_t) count;
        if (for_size)
                t.merged_for_size += (uint64_t) count;
        k = commit(r, &t);
        if (k < 0)
                return k;
        log_debug("Store %s: merged %" PRId64 " drains into the %" PRIu64 " s bucket at %" PRIu64 " (%" PRId64
                  " sample rows).", r->path, count, (uint64_t) (width / NSEC_PER_SEC), bucket, keys);
        return 1;
}

/* Drain ids one span covers: at the default 10 s interval, 5 minutes. A
 * block per process and kind for each drain cost about 35 bytes besides
 * its entries (key, bases, widths, record header, cell) for 2-3 entries on
 * a busy host; spanning 30 drains took the generated day from 202 to 108
 * MiB. 45 and 60 gave 109 and 107: fewer blocks, but more of them past
 * what a page keeps in the cell (docs/performance.md, Store size). */
#define SPAN_DRAINS 30
_Static_assert(SPAN_DRAINS <= SAMPLE_SPAN_MAX, "span offsets fit a query's mask");

/* Packs the oldest run of raw drains not in a span yet, SPAN_DRAINS ids
 * wide, into one block per process and kind keyed by the run's first
 * drain: drains.span names that key for each. Only a closed run: a newer
 * drain exists past it, so the newest drains stay in blocks of their own
 * and a drain is never written twice while it is fresh. */
static int step_span(retention *r) {
        struct retention_totals t = r->totals;
        int64_t first, newest, n, key[2];
        bool v7;
        int k;

        /* drains still in samples_v7 have no blocks yet: a span would miss them */
        k = v7_present(r, &v7);
        if (k < 0 || v7)
                return k;
        k = db_query_i64(&r->d, "SELECT min(id) FROM drains WHERE span IS NULL AND resolution_ns = 0", NULL, 0, -1,
                         &first);
        if (k < 0 || first < 0)
                return k;
        k = db_query_i64(&r->d, "SELECT max(id) FROM drains", NULL, 0, -1, &newest);
        if (k < 0 || newest < first + SPAN_DRAINS)
                return k;
        key[0] = first;
        key[1] = first + SPAN_DRAINS;
        k = begin(r);
        if (k < 0)
                return k;
        n = db_run(&r->d, "DELETE FROM temp.doomed", NULL, 0);
        if (n >= 0)
                n = db_run(&r->d, "INSERT INTO temp.doomed SELECT id FROM drains "
                           "WHERE span IS NULL AND resolution_ns = 0 AND id >= ?1 AND id < ?2", key, 2);
        if (n >= 0) {
                int64_t w = blocks_take(r, TAKE_SPAN, first);
                if (w < 0)
                        n = w;
        }
        if (n >= 0) {
                int64_t u = db_run(&r->d, "UPDATE drains SET span = ?1 WHERE id IN temp.doomed", key, 1);
                if (u < 0)
                        n = u;
        }
        if (n < 0)
                return rollback(r, (int) n);
        t.spanned_drains += (uint64_t) n;
        k = commit(r, &t);
        return k < 0 ? k : 1;
}

/* Removes a batch of the stacks and processes whose samples were deleted, if
 * no sample refers to them any more. */
static int step_gc(retention *r, bool *ret_forget) {
        struct retention_totals t = r->totals;
        int64_t limit = GC_BATCH, stacks, procs, left;
        int k;

        bool v7;

        if (!r->gc_pending)
                return 0;
        /* the rows of samples_v7 are in no count yet, and no index tells
         * which stacks and processes they name (the conversion dropped
         * samples_stack and samples_process): removals wait for the
         * conversion, the candidates kept */
        k = v7_present(r, &v7);
        if (k < 0 || v7)
                return k;
        k = begin(r);
        if (k < 0)
                return k;
        stacks = db_run(&r->d, "DELETE FROM temp.batch", NULL, 0);
        if (stacks >= 0)
                stacks = db_run(&r->d, "INSERT INTO temp.batch SELECT id FROM temp.gc_stacks LIMIT ?1", &limit, 1);
        if (stacks >= 0)
                stacks = db_run(&r->d, "DELETE FROM stacks WHERE id IN temp.batch "
                                "AND coalesce((SELECT blocks FROM stack_refs WHERE stack_id = stacks.id), 0) <= 0",
                                NULL, 0);
        /* the counts of the stacks just removed */
        if (stacks >= 0) {
                int64_t c = db_run(&r->d, "DELETE FROM stack_refs WHERE stack_id IN temp.batch "
                                   "AND NOT EXISTS (SELECT 1 FROM stacks WHERE id = stack_refs.stack_id)", NULL, 0);
                if (c < 0)
                        stacks = c;
        }
        if (stacks >= 0)
                k = (int) db_run(&r->d, "DELETE FROM temp.gc_stacks WHERE id IN temp.batch", NULL, 0);
        else
                k = (int) stacks;
        if (k >= 0)
                k = (int) db_run(&r->d, "DELETE FROM temp.batch", NULL, 0);
        if (k >= 0)
                k = (int) db_run(&r->d, "INSERT INTO temp.batch SELECT id FROM temp.gc_processes LIMIT ?1", &limit, 1);
        procs = k >= 0 ? db_run(&r->d, "DELETE FROM processes WHERE id IN temp.batch "
                                "AND coalesce((SELECT blocks FROM process_refs WHERE process_id = processes.id), 0) <= 0", NULL, 0)
                       : k;
        /* their counts and their threads' names go with them */
        if (procs > 0)
                k = (int) db_run(&r->d, "DELETE FROM process_refs WHERE process_id IN temp.batch "
                                 "AND NOT EXISTS (SELECT 1 FROM processes WHERE id = process_refs.process_id)", NULL, 0);
        if (procs > 0 && k >= 0)
                k = (int) db_run(&r->d, "DELETE FROM threads WHERE process_id IN temp.batch "
                                 "AND NOT EXISTS (SELECT 1 FROM processes WHERE id = threads.process_id)", NULL, 0);
        if (k < 0)
                procs = k;
        if (procs >= 0)
                k = (int) db_run(&r->d, "DELETE FROM temp.gc_processes WHERE id IN temp.batch", NULL, 0);
        else
                k = (int) procs;
        if (k >= 0)
                k = db_query_i64(&r->d, "SELECT (SELECT count(*) FROM temp.gc_stacks) + (SELECT count(*) FROM temp.gc_processes)",
                              NULL, 0, 0, &left);
        if (k < 0)
                return rollback(r, k);
        t.deleted_stacks += (uint64_t) stacks;
        t.deleted_processes += (uint64_t) procs;
        k = commit(r, &t);
        if (k < 0)
                return k;
        r->gc_pending = left > 0;
        r->stacks_since_sweep += (uint64_t) stacks;
        /* the drain connection caches process ids */
        if (procs > 0)
                *ret_forget = true;
        return 1;
}

/* Adds every integer of column 0 of sql's rows to set. */
static int mark(retention *r, hashmap *set, const char *sql) {
        sqlite3_stmt *st;
        int rc, k = db_prepare(&r->d, sql, NULL, 0, &st);

        if (k < 0)
                return k;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                k = hashmap_put(set, UINT64_TO_KEY(sqlite3_column_int64(st, 0)), (void *) 1);
                if (k < 0 && k != -EEXIST)
                        break;
                k = 0;
        }
        sqlite3_finalize(st);
        if (k < 0)
                return k;
        return rc == SQLITE_DONE ? 0 : db_fail(&r->d, rc, sql);
}

/* Deletes the rows of `table` whose id is not in live (and, with
 * lines_too, their location_lines). Returns the number deleted. */
static int64_t sweep_table(retention *r, hashmap *live, const char *select_ids, const char *delete_one,
                           const char *delete_lines) {
        _cleanup_free_ int64_t *dead = NULL;
        _cleanup_stmt_ sqlite3_stmt *one = NULL, *lines = NULL;
        size_t n = 0, cap = 0;
        sqlite3_stmt *st;
        int rc, k = db_prepare(&r->d, select_ids, NULL, 0, &st);

        if (k < 0)
                return k;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                void *v;

                if (hashmap_get(live, UINT64_TO_KEY(id), &v) >= 0)
                        continue;
                if (n == cap) {
                        int64_t *nd = realloc(dead, (cap = cap ? cap * 2 : 256) * sizeof(*dead));
                        if (!nd) {
                                sqlite3_finalize(st);
                                return -ENOMEM;
                        }
                        dead = nd;
                }
                dead[n++] = id;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return db_fail(&r->d, rc, select_ids);
        if (n == 0)
                return 0;
        /* each statement compiled once for all the rows (compiled for each
         * row, they took a third of a sweep of a build host's store) */
        k = db_prepare(&r->d, delete_one, NULL, 0, &one);
        if (k >= 0 && delete_lines)
                k = db_prepare(&r->d, delete_lines, NULL, 0, &lines);
        for (size_t i = 0; i < n && k >= 0; i++) {
                if (lines) {
                        sqlite3_bind_int64(lines, 1, dead[i]);
                        k = db_step(&r->d, lines, NULL, delete_lines);
                }
                if (k >= 0) {
                        sqlite3_bind_int64(one, 1, dead[i]);
                        k = db_step(&r->d, one, NULL, delete_one);
                }
        }
        return k < 0 ? k : (int64_t) n;
}

/* Locations are referred to from inside stacks' frame blobs, which no index
 * sees: once enough stacks are gone, one pass marks every location still in
 * a stack, then the functions and mappings those need, and deletes the
 * rest. Rare (an eighth of the stacks turned over) and linear in the
 * store's stacks and locations. */
static int step_sweep(retention *r, bool force, bool *ret_forget) {
        struct retention_totals t = r->totals;
        hashmap *locs = NULL, *fns = NULL, *maps = NULL;
        _cleanup_free_ int64_t *ids = NULL;
        size_t ids_cap = 0;
        int64_t n_stacks, dead_locs = 0, dead_fns = 0, dead_maps = 0;
        sqlite3_stmt *st = NULL;
        int rc, k;

        if (r->stacks_since_sweep == 0 || r->gc_pending)
                return 0;
        k = db_query_i64(&r->d, "SELECT count(*) FROM stacks", NULL, 0, 0, &n_stacks);
        if (k < 0)
                return k;
        if (!force && r->stacks_since_sweep < 1024 && r->stacks_since_sweep * 8 < (uint64_t) n_stacks)
                return 0;
        k = begin(r);
        if (k < 0)
                return k;
        locs = hashmap_new_u64();
        fns = hashmap_new_u64();
        maps = hashmap_new_u64();
        if (!locs || !fns || !maps) {
                k = -ENOMEM;
                goto out;
        }
        k = db_prepare(&r->d, "SELECT frames FROM stacks", NULL, 0, &st);
        while (k >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                size_t n = 0;

                k = stack_unpack(sqlite3_column_blob(st, 0), (size_t) sqlite3_column_bytes(st, 0), &ids, &ids_cap,
                                 &n);
                for (size_t i = 0; i < n && k >= 0; i++) {
                        k = hashmap_put(locs, UINT64_TO_KEY(ids[i]), (void *) 1);
                        if (k == -EEXIST)
                                k = 0;
                }
        }
        if (k >= 0 && rc != SQLITE_DONE)
                k = db_fail(&r->d, rc, "reading stacks");
        sqlite3_finalize(st);
        if (k == -EBADMSG) {
                /* a stack whose frames cannot be read may name any
                 * location: none is removed, and retention goes on (the
                 * next sweep, when due, tries again) */
                log_error("Store %s: a stack's frames are unreadable; locations were not swept.", r->path);
                hashmap_free(locs);
                hashmap_free(fns);
                hashmap_free(maps);
                r->stacks_since_sweep = 0;
                return rollback(r, 1);
        }
        if (k < 0)
                goto out;
        dead_locs = sweep_table(r, locs, "SELECT id FROM locations", "DELETE FROM locations WHERE id = ?1",
                                "DELETE FROM location_lines WHERE location_id = ?1");
        if (dead_locs < 0) {
                k = (int) dead_locs;
                goto out;
        }
        if ((k = mark(r, fns, "SELECT function_id FROM locations WHERE function_id IS NOT NULL")) < 0 ||
            (k = mark(r, fns, "SELECT function_id FROM location_lines")) < 0)
                goto out;
        dead_fns = sweep_table(r, fns, "SELECT id FROM functions", "DELETE FROM functions WHERE id = ?1", NULL);
        if (dead_fns < 0) {
                k = (int) dead_fns;
                goto out;
        }
        if ((k = mark(r, maps, "SELECT mapping_id FROM locations")) < 0 ||
            (k = mark(r, maps, "SELECT mapping_id FROM functions")) < 0)
                goto out;
        dead_maps = sweep_table(r, maps, "SELECT id FROM mappings", "DELETE FROM mappings WHERE id = ?1", NULL);
        if (dead_maps < 0)
                k = (int) dead_maps;
out:
        hashmap_free(locs);
        hashmap_free(fns);
        hashmap_free(maps);
        if (k < 0)
                return rollback(r, k);
        t.deleted_locations += (uint64_t) dead_locs;
        k = commit(r, &t);
        if (k < 0)
                return k;
        r->stacks_since_sweep = 0;
        if (dead_locs || dead_fns || dead_maps) {
                /* the drain connection caches location, function and mapping ids */
                *ret_forget = true;
                log_debug("Store %s: removed %" PRId64 " locations, %" PRId64 " functions and %" PRId64
                          " mappings no stack refers to.", r->path, dead_locs, dead_fns, dead_maps);
        }
        return 1;
}

/* Gives free pages back to the file system: all of them, a batch per step,
 * when over the maximum size; otherwise once they add up to a megabyte. */
static int step_vacuum(retention *r) {
        struct retention_totals t = r->totals;
        uint64_t used, free_bytes;
        int64_t before, after, page_size;
        char sql[64];
        int k;

        k = used_bytes(r, &used, &free_bytes);
        if (k < 0)
                return k;
        if (free_bytes == 0 || (free_bytes < VACUUM_MIN_BYTES && (r->set.max_bytes == 0 ||
                                                                  used + free_bytes <= r->set.max_bytes)))
                return 0;
        if ((k = db_query_i64(&r->d, "PRAGMA page_count", NULL, 0, 0, &before)) < 0 ||
            (k = db_query_i64(&r->d, "PRAGMA page_size", NULL, 0, 4096, &page_size)) < 0)
                return k;
        snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%" PRId64 ")",
                 (int64_t) VACUUM_BATCH_BYTES / MAX(page_size, (int64_t) 512));
        k = db_exec(&r->d, sql);
        if (k >= 0)
                k = db_query_i64(&r->d, "PRAGMA page_count", NULL, 0, 0, &after);
        if (k < 0)
                return k;
        if (after >= before)
                return 0; /* the store is not in incremental mode after all */
        /* the file itself shrinks when the log is copied back into it */
        (void) db_exec(&r->d, "PRAGMA wal_checkpoint(PASSIVE)");
        t.vacuumed_bytes += (uint64_t) (before - after) * (uint64_t) page_size;
        k = begin(r);
        if (k >= 0)
                k = commit(r, &t);
        return k < 0 ? k : 1;
}

/* Timeline blocks deleted per step: a block is one drain's, tens of KiB on
 * a busy host. */
#define TIMELINE_BATCH 64

/* The timeline's own retention: deletes its blocks (timeline_blocks, and
 * offcpu_timeline's rows, schema/0013: both are "the timeline" to the
 * settings) that ended longer than timeline_ns ago, then, while their
 * blobs take more than timeline_max_bytes together, the oldest of either.
 * The drains' aggregates stay: nothing else refers to a timeline block,
 * and it holds no stack or process of its own (schema/0011). */
static int step_timeline(retention *r, uint64_t now_ns) {
        struct retention_totals t = r->totals;
        int64_t n = 0, args[2] = { 0, TIMELINE_BATCH }, bytes, oldest, k2;
        int k;

        if (r->set.timeline_ns > 0 && now_ns > r->set.timeline_ns) {
                args[0] = (int64_t) (now_ns - r->set.timeline_ns);
                k = db_query_i64(&r->d, "SELECT min(e) FROM (SELECT min(end_ns) AS e FROM timeline_blocks WHERE NOT "
                                        TIMELINE_PINNED("timeline_blocks") " UNION ALL SELECT min(end_ns) FROM "
                                        "offcpu_timeline WHERE NOT " TIMELINE_PINNED("offcpu_timeline") ")",
                                 NULL, 0, INT64_MAX, &oldest);
                if (k < 0)
                        return k;
                if (oldest < args[0]) {
                        k = begin(r);
                        if (k < 0)
                                return k;
                        n = db_run(&r->d, "DELETE FROM timeline_blocks WHERE drain_id IN (SELECT drain_id FROM "
                                   "timeline_blocks WHERE end_ns < ?1 AND NOT " TIMELINE_PINNED("timeline_blocks")
                                   " ORDER BY end_ns LIMIT ?2)", args, 2);
                        if (n >= 0) {
                                k2 = db_run(&r->d, "DELETE FROM offcpu_timeline WHERE drain_id IN (SELECT drain_id "
                                            "FROM offcpu_timeline WHERE end_ns < ?1 AND NOT "
                                            TIMELINE_PINNED("offcpu_timeline") " ORDER BY end_ns LIMIT ?2)", args, 2);
                                n = k2 < 0 ? k2 : n + k2;
                        }
                        goto done;
                }
        }
        if (r->set.timeline_max_bytes == 0)
                return 0;
        /* the blobs' bytes, not the pages': one scan of each table's
         * b-tree (an hour of 10 s drains is 360 rows each); pinned blocks
         * are capture_max_pinned's to bound, not this */
        k = db_query_i64(&r->d, "SELECT (SELECT coalesce(sum(length(data)), 0) FROM timeline_blocks WHERE NOT "
                                TIMELINE_PINNED("timeline_blocks") ") + (SELECT coalesce(sum(length(data)), 0) FROM "
                                "offcpu_timeline WHERE NOT " TIMELINE_PINNED("offcpu_timeline") ")",
                         NULL, 0, 0, &bytes);
        if (k < 0 || (uint64_t) bytes <= r->set.timeline_max_bytes)
                return k;
        k = begin(r);
        if (k < 0)
                return k;
        /* the oldest of either table, each one's newest always kept, down
         * to 90% (as step_size): up to the end of the last one chosen */
        {
                int64_t want = bytes - (int64_t) (r->set.timeline_max_bytes / 10 * 9), freed = 0, cutoff = -1;
                sqlite3_stmt *st;
                int rc = sqlite3_prepare_v2(r->d.handle,
                                            "SELECT end_ns, length(data) FROM timeline_blocks "
                                            "WHERE end_ns < (SELECT max(end_ns) FROM timeline_blocks) AND NOT "
                                            TIMELINE_PINNED("timeline_blocks") " "
                                            "UNION ALL SELECT end_ns, length(data) FROM offcpu_timeline "
                                            "WHERE end_ns < (SELECT max(end_ns) FROM offcpu_timeline) AND NOT "
                                            TIMELINE_PINNED("offcpu_timeline") " ORDER BY 1 LIMIT ?1", -1, &st, NULL);

                if (rc != SQLITE_OK)
                        return rollback(r, db_fail(&r->d, rc, "choosing timeline blocks"));
                sqlite3_bind_int64(st, 1, TIMELINE_BATCH);
                while (freed < want && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                        cutoff = sqlite3_column_int64(st, 0);
                        freed += sqlite3_column_int64(st, 1);
                }
                sqlite3_finalize(st);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                        return rollback(r, db_fail(&r->d, rc, "choosing timeline blocks"));
                if (cutoff < 0)
                        return rollback(r, 0);
                args[0] = cutoff;
                n = db_run(&r->d, "DELETE FROM timeline_blocks WHERE end_ns <= ?1 AND "
                           "end_ns < (SELECT max(end_ns) FROM timeline_blocks) AND NOT "
                           TIMELINE_PINNED("timeline_blocks"), args, 1);
                if (n >= 0) {
                        k2 = db_run(&r->d, "DELETE FROM offcpu_timeline WHERE end_ns <= ?1 AND "
                                    "end_ns < (SELECT max(end_ns) FROM offcpu_timeline) AND NOT "
                                    TIMELINE_PINNED("offcpu_timeline"), args, 1);
                        n = k2 < 0 ? k2 : n + k2;
                }
        }
done:
        if (n < 0)
                return rollback(r, (int) n);
        r->timeline_pending += (uint64_t) n;
        k = commit(r, &t);
        return k < 0 ? k : n > 0;
}

int retention_step(retention *r, uint64_t now_ns, bool *ret_forget) {
        int k;

        *ret_forget = false;
        if ((k = step_size(r, now_ns, ret_forget)) != 0 ||
            (k = step_expire(r, now_ns)) != 0 ||
            (k = step_timeline(r, now_ns)) != 0 ||
            (k = step_merge(r, now_ns, RETENTION_10M_NS, r->set.m1_ns, false)) != 0 ||
            (k = step_merge(r, now_ns, RETENTION_1M_NS, r->set.raw_ns, false)) != 0 ||
            (k = step_span(r)) != 0 ||
            (k = step_gc(r, ret_forget)) != 0 ||
            (k = step_sweep(r, false, ret_forget)) != 0 ||
            (k = step_vacuum(r)) != 0)
                return k;
        return 0;
}
