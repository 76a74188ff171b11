/* Schema 8's conversion of schema 7's samples, in steps (issue 14).
 *
 * Opening a schema 7 store runs schema/0008 only: the new tables, the old
 * `samples` renamed `samples_v7` (a change of the schema, instant whatever
 * its size). The rows are packed into blocks afterwards, by the writer
 * thread between drains (writer.c), a step at a time: each step one
 * transaction that converts whole drains, newest first, and deletes their
 * rows from samples_v7, so a drain is either all in samples_v7 or all in
 * sample_blocks, whoever looks; a step that fails or is cut short (a crash,
 * a stop) leaves the store as the step before left it, and the next one
 * starts again from the newest drain left. The last step drops samples_v7
 * and its indexes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "store-private.h"

/* A step converts whole drains, as many as hold this many rows by their
 * keys (at least one, at most MIGRATE_DRAINS_MAX): 40-60 ms on the 2-vCPU
 * test machine (docs/performance.md, Migration). Bounded in rows, not
 * time: a step stopped halfway through its drains would leave converted
 * drains below unconverted ones, which the progress and the answers'
 * notes count as drains "up to the newest one left". */
#define MIGRATE_ROWS_MAX 8192
#define MIGRATE_DRAINS_MAX 256

/* retention_totals rows (schema 3's table of counters) that say how much
 * was converted so far, kept across restarts with the rest */
#define DONE_ROWS "v8_converted_rows"
#define DONE_DRAINS "v8_converted_drains"

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

int store_v7_present(store *s, bool *ret) {
        return db_v7_present(&s->d, &s->v7_gone, ret);
}

/* Packs the rows of drain into blocks, one per (kind, process), counting
 * stacks and processes in refs and prefs, and deletes them. Inside the
 * step's transaction. Returns the number of rows converted or a negative
 * errno. */
static int64_t convert_drain(store *s, int64_t drain, hashmap *refs, hashmap *prefs, struct sample_entry **e,
                             size_t *cap) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL, *ins = NULL;
        int64_t process = -1, rows = 0;
        int kind = -1, rc, r;
        size_t n = 0;

        r = db_prepare(&s->d,
                       "SELECT kind, process_id, stack_id, tid, state, peer_tid, cgroup_id, value "
                       "FROM samples_v7 WHERE drain_id = ?1 ORDER BY kind, process_id",
                       &drain, 1, &st);
        if (r < 0)
                return r;
        for (;;) {
                bool row = (rc = sqlite3_step(st)) == SQLITE_ROW;
                int64_t p = row ? sqlite3_column_int64(st, 1) : -1;
                int k = row ? sqlite3_column_int(st, 0) : -1;

                if (!row && rc != SQLITE_DONE)
                        return db_fail(&s->d, rc, "reading samples to convert");
                if (n > 0 && (!row || k != kind || p != process)) {
                        r = sample_blocks_insert(&s->d, &ins, drain, kind, process, *e, n, refs, prefs);
                        if (r < 0)
                                return r;
                        n = 0;
                }
                if (!row)
                        break;
                kind = k, process = p;
                if (n == *cap) {
                        size_t ncap = MAX(*cap * 2, (size_t) 256);
                        struct sample_entry *ne = realloc(*e, ncap * sizeof(*ne));
                        if (!ne)
                                return log_oom();
                        *e = ne;
                        *cap = ncap;
                }
                (*e)[n++] = (struct sample_entry) {
                        .stack_id = sqlite3_column_int64(st, 2),
                        .tid = (uint32_t) sqlite3_column_int64(st, 3),
                        .state = (uint8_t) sqlite3_column_int(st, 4),
                        .peer_tid = (uint32_t) sqlite3_column_int64(st, 5),
                        .cgroup_id = (uint64_t) sqlite3_column_int64(st, 6),
                        .value = (uint64_t) sqlite3_column_int64(st, 7),
                };
                rows++;
        }
        sqlite3_finalize(TAKE_PTR(st));
        r = (int) db_run(&s->d, "DELETE FROM samples_v7 WHERE drain_id = ?1", &drain, 1);
        return r < 0 ? r : rows;
}

static int counter_add(store *s, const char *name, int64_t delta) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->d.handle,
                                    "INSERT INTO retention_totals (name, value) VALUES (?1, ?2) "
                                    "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
                                    -1, &st, NULL);

        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing the conversion's counters");
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, delta);
        rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : db_fail(&s->d, rc, "conversion counters");
}

/* Drops the first of schema 7's secondary indexes still there, in a
 * transaction of its own. Returns 1 when it dropped one, 0 when none is
 * left, or a negative errno (logged). */
static int drop_one_index(store *s) {
        static const char *const indexes[] = { "samples_stack", "samples_process" };
        uint64_t t0 = monotonic_ns();

        if (s->v7_indexes_gone)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(indexes); i++) {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                char sql[64];
                int rc, r;

                rc = sqlite3_prepare_v2(s->d.handle, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1",
                                        -1, &st, NULL);
                if (rc != SQLITE_OK)
                        return db_fail(&s->d, rc, "looking for schema 7's indexes");
                sqlite3_bind_text(st, 1, indexes[i], -1, SQLITE_STATIC);
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        continue;
                if (rc != SQLITE_ROW)
                        return db_fail(&s->d, rc, "looking for schema 7's indexes");
                sqlite3_finalize(TAKE_PTR(st));
                snprintf(sql, sizeof(sql), "DROP INDEX %s", indexes[i]);
                r = db_exec(&s->d, sql);
                if (r < 0)
                        return r;
                log_debug("Store %s: dropped index %s in %.1f ms.", s->path, indexes[i],
                          (double) (monotonic_ns() - t0) / 1e6);
                return 1;
        }
        s->v7_indexes_gone = true;
        return 0;
}

int store_migrate_step(store *s, const struct store_migrate_limits *lim, uint64_t *ret_rows) {
        _cleanup_free_ struct sample_entry *e = NULL;
        uint64_t max_rows = lim && lim->max_rows ? lim->max_rows : MIGRATE_ROWS_MAX;
        uint64_t t0 = monotonic_ns(), rows = 0;
        int64_t drain = INT64_MAX, drains = 0, left, batch[MIGRATE_DRAINS_MAX];
        size_t n_batch = 0;
        hashmap *refs = NULL, *prefs = NULL;
        size_t cap = 0;
        bool present;
        int r;

        if (ret_rows)
                *ret_rows = 0;
        r = store_v7_present(s, &present);
        if (r < 0 || !present)
                return r;
        /* first, one a step: schema 7's two indexes nothing reads now
         * (samples_stack, samples_process; retention's removal of stacks
         * and processes waits for the conversion instead). Kept, every row
         * deleted would dirty a page of each at random, so a step would
         * write megabytes of log; dropping one frees its pages in one go,
         * too long for the open before READY (docs/performance.md) */
        r = drop_one_index(s);
        if (r != 0)
                return r;
        refs = hashmap_new_u64();
        prefs = hashmap_new_u64();
        if (!refs || !prefs) {
                r = log_oom();
                goto out;
        }
        r = db_exec(&s->d, "BEGIN IMMEDIATE");
        if (r < 0)
                goto out;
        /* the step's drains, newest first, until their keys (rows) add
         * up to max_rows; then converted oldest first: blocks inserted in
         * ascending key order fill their pages (inserted newest first,
         * the pages of sample_blocks were a third empty) and cost less */
        for (int64_t est = 0; n_batch < ELEMENTSOF(batch) && (uint64_t) est < max_rows;) {
                int64_t keys;

                r = db_query_i64(&s->d, "SELECT max(drain_id) FROM samples_v7 WHERE drain_id < ?1", &drain, 1, -1,
                                 &drain);
                if (r < 0 || drain < 0)
                        break;
                r = db_query_i64(&s->d, "SELECT keys FROM drains WHERE id = ?1", &drain, 1, 0, &keys);
                if (r < 0)
                        break;
                batch[n_batch++] = drain;
                est += MAX(keys, (int64_t) 1);
        }
        for (size_t i = n_batch; r >= 0 && i > 0; i--) {
                int64_t n = convert_drain(s, batch[i - 1], refs, prefs, &e, &cap);

                if (n < 0) {
                        r = (int) n;
                        break;
                }
                rows += (uint64_t) n;
                drains++;
        }
        if (r >= 0)
                r = stack_refs_apply(&s->d, refs, false);
        if (r >= 0)
                r = process_refs_apply(&s->d, prefs, false);
        if (r >= 0)
                r = counter_add(s, DONE_ROWS, (int64_t) rows);
        if (r >= 0)
                r = counter_add(s, DONE_DRAINS, drains);
        /* the last rows converted: the table and its three indexes go, in
         * the same transaction (nearly empty by now: quick) */
        if (r >= 0)
                r = db_query_i64(&s->d, "SELECT EXISTS (SELECT 1 FROM samples_v7)", NULL, 0, 0, &left);
        if (r >= 0 && !left)
                r = db_exec(&s->d, "DROP TABLE samples_v7");
        if (r >= 0 && lim && lim->rollback)
                r = -ECANCELED; /* tests: a step cut short before its commit */
        if (r >= 0)
                r = db_exec(&s->d, "COMMIT");
        if (r < 0) {
                db_rollback(&s->d);
                goto out;
        }
        if (!left) {
                s->v7_gone = true;
                log_info("Store %s: every schema 7 sample converted to blocks; samples_v7 dropped.", s->path);
        }
        log_debug("Store %s: converted %" PRId64 " drains (%" PRIu64 " sample rows) to blocks in %.1f ms.", s->path,
                  drains, rows, (double) (monotonic_ns() - t0) / 1e6);
        if (ret_rows)
                *ret_rows = rows;
        r = 1;
out:
        hashmap_free(refs);
        hashmap_free(prefs);
        return r;
}

int store_migration_get(store *s, struct store_migration *ret) {
        struct store_migration m = {};
        int64_t v, newest;
        bool present;
        int r;

        r = store_v7_present(s, &present);
        if (r < 0)
                return r;
        /* one read transaction: the counts agree with each other */
        r = db_exec(&s->d, "BEGIN");
        if (r < 0)
                return r;
        if (present) {
                /* steps go newest first: every drain up to the newest one
                 * left in samples_v7 is still to convert, and its keys are
                 * its rows (cheaper than counting 10 M rows) */
                r = db_query_i64(&s->d, "SELECT max(drain_id) FROM samples_v7", NULL, 0, -1, &newest);
                if (r >= 0 && newest >= 0) {
                        m.active = true;
                        if ((r = db_query_i64(&s->d, "SELECT coalesce(sum(keys), 0) FROM drains WHERE id <= ?1",
                                              &newest, 1, 0, &v)) >= 0)
                                m.pending_rows = (uint64_t) v;
                        if (r >= 0 && (r = db_query_i64(&s->d, "SELECT count(*) FROM drains WHERE id <= ?1",
                                                        &newest, 1, 0, &v)) >= 0)
                                m.pending_drains = (uint64_t) v;
                        if (r >= 0 && (r = db_query_i64(&s->d, "SELECT coalesce(max(end_ns), 0) FROM drains WHERE id <= ?1",
                                                        &newest, 1, 0, &v)) >= 0)
                                m.complete_after_ns = (uint64_t) v;
                } else if (r >= 0)
                        m.active = true; /* empty, not dropped yet: the next step drops it */
        }
        if (r >= 0 && (r = db_query_i64(&s->d, "SELECT value FROM retention_totals WHERE name = '" DONE_ROWS "'", NULL,
                                        0, 0, &v)) >= 0)
                m.done_rows = (uint64_t) v;
        if (r >= 0 && (r = db_query_i64(&s->d, "SELECT value FROM retention_totals WHERE name = '" DONE_DRAINS "'",
                                        NULL, 0, 0, &v)) >= 0)
                m.done_drains = (uint64_t) v;
        (void) db_exec(&s->d, "COMMIT");
        if (r < 0)
                return r;
        *ret = m;
        return 0;
}

int store_query_unconverted(store *s, const struct store_query *q, uint64_t *ret) {
        int64_t args[3], v = 0, newest;
        bool present;
        int r;

        *ret = 0;
        r = store_v7_present(s, &present);
        if (r < 0 || !present)
                return r;
        r = db_query_i64(&s->d, "SELECT max(drain_id) FROM samples_v7", NULL, 0, -1, &newest);
        if (r < 0 || newest < 0)
                return r;
        args[0] = newest;
        if (q->drain_id > 0) {
                *ret = q->drain_id <= newest;
                return 0;
        }
        /* the drains of the window, as queries pick them (drains_end) */
        args[1] = (int64_t) q->from_ns;
        args[2] = (int64_t) q->to_ns;
        r = db_query_i64(&s->d, "SELECT count(*) FROM drains WHERE id <= ?1 AND end_ns >= ?2 AND start_ns <= ?3", args, 3,
                         0, &v);
        if (r < 0)
                return r;
        *ret = (uint64_t) v;
        return 0;
}
