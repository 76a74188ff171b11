/* Retention on a real store file with synthetic drains: merging keeps every
 * total (per process, thread, stack, kind and state; drops; cpu samples),
 * each level holds what its age says, old data is deleted with what only it
 * referred to, and the maximum size deletes the oldest data first and gives
 * the space back. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "offtime-pack.h"
#include "retention.h"
#include "stack-pack.h"
#include "store.h"
#include "tests.h"
#include "timeline-pack.h"

#define SEC NSEC_PER_SEC
#define MINUTE (60 * SEC)
/* a bucket boundary, so expected bucket contents are easy to state */
#define T0 (1700000000ULL * SEC - (1700000000ULL * SEC) % (600 * SEC))

static char dir[] = "/tmp/test-retention-XXXXXX";

static int64_t q1(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        int64_t v = -1;

        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
                fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
                tests_failed++;
                return -1;
        }
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

/* Writes drains of `interval` ending at from+interval, ... up to `to`,
 * each with samples of two processes in `stacks` distinct stacks (stack k
 * of drain i has value (i + k) % 5 + 1), an offcpu block and a drop. */
static void write_drains(store *s, uint64_t from, uint64_t to, uint64_t interval, unsigned stacks, unsigned salt) {
        static const struct store_process procs[2] = {
                { .pid = 100, .start_ns = 1, .comm = "alpha", .exe = "/usr/bin/alpha", .uid = 0, .have_uid = true },
                { .pid = 200, .start_ns = 2, .comm = "beta", .exe = "/usr/bin/beta", .uid = 1000, .have_uid = true },
        };
        unsigned i = 0;

        for (uint64_t end = from + interval; end <= to; end += interval, i++) {
                CHECK(store_drain_begin(s, end - interval, end) == 0);
                for (unsigned k = 0; k < stacks; k++) {
                        char fn[64];
                        struct store_frame frames[2] = {
                                { .module = "/usr/bin/app", .address = 0x1000, .function = "main" },
                                { .module = "/usr/bin/app", .address = 0x2000 + 16 * (k + salt * 100000), .function = fn },
                        };
                        snprintf(fn, sizeof(fn), "work_%u", k + salt * 100000);
                        CHECK(store_drain_add(s, &(struct store_sample) {
                                .process = &procs[k % 2], .tid = procs[k % 2].pid + k % 3, .kind = 0,
                                .frames = frames, .n_frames = 2, .value = (i + k) % 5 + 1 }) == 0);
                }
                CHECK(store_drain_add(s, &(struct store_sample) {
                        .process = &procs[0], .tid = 100, .kind = 1, .state = 2,
                        .frames = (struct store_frame[]) { { .module = "[kernel.kallsyms]", .address = 0xffff0000,
                                                             .function = "schedule", .kernel = true } },
                        .n_frames = 1, .value = 1000000 }) == 0);
                CHECK(store_drain_drop(s, "map_full", 3) == 0);
                CHECK(store_drain_commit(s, NULL, NULL, NULL) == 0);
        }
}

/* Runs retention until nothing is due; returns the number of steps. */
static unsigned settle(retention *r, store *s, uint64_t now) {
        unsigned steps = 0;
        bool forget;
        int k;

        while ((k = retention_step(r, now, &forget)) > 0) {
                if (forget)
                        store_forget_ids(s);
                steps++;
                if (steps > 100000) {
                        fprintf(stderr, "retention never settles\n");
                        tests_failed++;
                        break;
                }
        }
        CHECK_INT_EQ(k, 0);
        return steps;
}

/* Totals that merging must keep, as one row per group. */
#define TOTALS_SQL                                                                                    \
        "SELECT group_concat(x, ';') FROM (SELECT p.pid || ',' || s.tid || ',' || s.kind || ',' || s.state " \
        "|| ',' || s.stack_id || '=' || sum(s.value) AS x FROM samples s JOIN processes p ON p.id = s.process_id " \
        "GROUP BY p.pid, s.tid, s.kind, s.state, s.stack_id ORDER BY 1)"

/* Up to three pieces of SQL joined, in a static buffer (one use at a time). */
static const char *sql_cat(const char *a, const char *b, const char *c) {
        static char buf[1024];

        snprintf(buf, sizeof(buf), "%s%s%s", a, b, c ? c : "");
        return buf;
}

/* The rows of table whose end_ns is below (op "<") or at (op "=") t. */
static int64_t count_end(sqlite3 *db, const char *table, const char *op, uint64_t t) {
        char sql[256];

        snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE end_ns %s %" PRIu64, table, op, t);
        return q1(db, sql);
}

static char *text1(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        char *v = NULL;

        CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                v = strdup((const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        return v;
}

static void test_merge_keeps_totals_and_levels_follow_age(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 60 * MINUTE;
        int64_t drains_before, sum_before, drops_before, cpu_before;
        char *totals_before, *totals_after;

        snprintf(path, sizeof(path), "%s/merge.db", dir);
        CHECK(store_open(path, &s) == 0);
        /* an hour of 10 s drains */
        write_drains(s, T0, now, 10 * SEC, 12, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        drains_before = q1(db, "SELECT count(*) FROM drains");
        CHECK_INT_EQ(drains_before, 360);
        sum_before = q1(db, "SELECT sum(value) FROM samples");
        drops_before = q1(db, "SELECT sum(count) FROM drops");
        cpu_before = q1(db, "SELECT sum(samples) FROM drains");
        totals_before = text1(db, TOTALS_SQL);

        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        {
                /* a connection opened before the switch still reports the old mode */
                sqlite3 *fresh = NULL;
                CHECK(sqlite3_open(path, &fresh) == SQLITE_OK);
                CHECK_INT_EQ(q1(fresh, "PRAGMA auto_vacuum"), 2);
                sqlite3_close(fresh);
        }
        settle(r, s, now);

        /* raw: the drains that end within the last 10 minutes (the bucket
         * of a drain is the one its end falls in) */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 0"), 61);
        CHECK(q1(db, "SELECT min(end_ns) FROM drains WHERE resolution_ns = 0") >= (int64_t) (now - 10 * MINUTE));
        /* 1 minute: from 30 to 10 minutes ago, one row per minute, 6 drains each */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000"), 20);
        /* 10 minutes: the three oldest buckets */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 600000000000"), 3);
        /* a merged row spans its drains, from the first start to the last
         * end: at most its width */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0 AND end_ns - start_ns > resolution_ns"), 0);
        CHECK_INT_EQ(q1(db, "SELECT min(start_ns) FROM drains"), T0);
        CHECK_INT_EQ(q1(db, "SELECT max(end_ns) FROM drains"), now);
        CHECK_INT_EQ(q1(db, "SELECT sum(value) FROM samples"), sum_before);
        CHECK_INT_EQ(q1(db, "SELECT sum(count) FROM drops"), drops_before);
        CHECK_INT_EQ(q1(db, "SELECT sum(samples) FROM drains"), cpu_before);
        totals_after = text1(db, TOTALS_SQL);
        CHECK(totals_before && totals_after && streq(totals_before, totals_after));
        /* re-aggregated: one row per key within a merged drain */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM (SELECT drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, "
                            "stack_id, count(*) AS n FROM samples GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING n > 1)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains d WHERE keys != (SELECT count(*) FROM samples WHERE drain_id = d.id)"), 0);
        /* no drop or sample row points at a drain that is gone */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id NOT IN (SELECT id FROM drains)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drops WHERE drain_id NOT IN (SELECT id FROM drains)"), 0);
        retention_get_totals(r, &t);
        /* 179 drains into three 10-minute rows (directly: they were due for
         * both levels), 120 into twenty 1-minute rows */
        CHECK_INT_EQ(t.merged_drains, 179 + 120);
        CHECK_INT_EQ(t.deleted_drains, 0);

        /* merging again changes nothing */
        CHECK_INT_EQ(settle(r, s, now), 0);

        /* a day and a bit later everything is gone, and what only it used */
        settle(r, s, now + 25 * 60 * MINUTE);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drops"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM stacks"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM locations"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM functions"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM mappings"), 0);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.deleted_drains, 61 + 20 + 3);
        CHECK_INT_EQ(t.deleted_processes, 2);

        /* the drain connection forgot the ids it cached: writing again works
         * and creates the rows anew */
        write_drains(s, now + 25 * 60 * MINUTE, now + 25 * 60 * MINUTE + MINUTE, 10 * SEC, 4, 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes"), 2);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples s JOIN stacks st ON st.id = s.stack_id "
                            "JOIN processes p ON p.id = s.process_id"), 6 * 5);

        /* totals survive a restart of retention */
        retention_close(r);
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.deleted_drains, 61 + 20 + 3);

        free(totals_before);
        free(totals_after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

static void test_big_buckets_merge_in_bounded_steps(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 60 * MINUTE;
        int64_t sum_before;
        char *totals_before, *totals_after;

        snprintf(path, sizeof(path), "%s/steps.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_drains(s, T0, now, 10 * SEC, 12, 0); /* 13 sample rows a drain */
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        sum_before = q1(db, "SELECT sum(value) FROM samples");
        totals_before = text1(db, TOTALS_SQL);
        /* at most 30 rows a step: a run of drains whose rows before the last
         * one stay under 30, i.e. three drains (39 rows) */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .merge_rows_max = 30 },
                             &r) == 0);
        settle(r, s, now);
        /* a 1-minute bucket of six drains becomes two rows; the 10-minute
         * buckets of 59, 60 and 60 drains twenty rows each (the drains
         * repeat the same 13 keys: each merged row has those 13) */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000"), 40);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 600000000000"), 60);
        CHECK_INT_EQ(q1(db, "SELECT max(keys) FROM drains"), 13);
        /* nothing lost, nothing counted twice */
        CHECK_INT_EQ(q1(db, "SELECT sum(value) FROM samples"), sum_before);
        totals_after = text1(db, TOTALS_SQL);
        CHECK(totals_before && totals_after && streq(totals_before, totals_after));
        /* a row spans at most its bucket and the interval of its first drain */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0 "
                            "AND end_ns - start_ns > resolution_ns + 10000000000"), 0);
        free(totals_before);
        free(totals_after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

static void test_max_size_deletes_oldest_first_and_shrinks_the_file(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        struct stat st;
        uint64_t now = T0 + 200 * 10 * SEC;
        int64_t newest, page_size;

        snprintf(path, sizeof(path), "%s/size.db", dir);
        CHECK(store_open(path, &s) == 0);
        /* retention opened first: a new store switches to incremental vacuum */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        /* 200 drains, each with 150 stacks of its own: several MiB (the
         * 100 of schema 7 made 4.1 MiB, of schema 8 3.1 MiB: too little to
         * free the 2 MiB checked below) */
        for (unsigned i = 0; i < 200; i++)
                write_drains(s, T0 + i * 10 * SEC, T0 + (i + 1) * 10 * SEC, 10 * SEC, 150, i + 1);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        page_size = q1(db, "PRAGMA page_size");
        fprintf(stderr, "store of %" PRId64 " bytes\n", q1(db, "PRAGMA page_count") * page_size);
        CHECK(q1(db, "PRAGMA page_count") * page_size > 3 << 20);
        newest = q1(db, "SELECT max(end_ns) FROM drains");

        retention_configure(r, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                              .all_ns = 24 * 60 * MINUTE, .max_bytes = 2 << 20 });
        settle(r, s, now);
        /* the checkpoint that shrinks the file needs no reader in the way */
        sqlite3_close(db);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(stat(path, &st) == 0);
        fprintf(stderr, "shrunk to %jd bytes, %" PRId64 " drains left, %" PRId64 " free pages\n", (intmax_t) st.st_size,
                q1(db, "SELECT count(*) FROM drains"), q1(db, "PRAGMA freelist_count"));
        CHECK(st.st_size <= 2 << 20);
        CHECK(st.st_size > 1 << 20); /* down to 90%, not to nothing */
        CHECK_INT_EQ(q1(db, "SELECT max(end_ns) FROM drains"), newest);
        /* the oldest went: what is left is one contiguous run up to the newest */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"),
                     (newest - q1(db, "SELECT min(end_ns) FROM drains")) / (10 * (int64_t) SEC) + 1);
        retention_get_totals(r, &t);
        CHECK(t.deleted_for_size > 0);
        CHECK_INT_EQ(t.deleted_for_size, 200 - q1(db, "SELECT count(*) FROM drains"));
        CHECK(t.vacuumed_bytes > 2 << 20);
        CHECK_INT_EQ(t.deleted_drains, 0);
        /* stacks of deleted drains are gone too */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM stacks WHERE id NOT IN (SELECT stack_id FROM samples)"), 0);

        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* What the store answers about the drains of a store: stacks for several
 * windows and filters, the series, the outbox's rows of some drains, the
 * samples view per drain. Spanning blocks must not change a byte of it. */
static int stack_line(const struct store_stack_out *so, void *userdata) {
        char **out = userdata, *n = NULL;

        if (asprintf(&n, "%s%s:%" PRIu64 ":%zu:%s;", *out, so->group ? so->group : "", so->value, so->n_frames,
                     so->n_frames ? so->frames[so->n_frames - 1].name : "") < 0)
                return -ENOMEM;
        free(*out);
        *out = n;
        return 0;
}

static int drain_line(uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete, void *userdata) {
        char **out = userdata, *n = NULL;

        if (asprintf(&n, "%s%" PRIu64 "-%" PRIu64 "=%" PRIu64 "/%" PRIu64 ";", *out, start_ns, end_ns, value, complete) < 0)
                return -ENOMEM;
        free(*out);
        *out = n;
        return 0;
}

static int outbox_line(const struct store_outbox_sample *smp, void *userdata) {
        char **out = userdata, *n = NULL;

        if (asprintf(&n, "%s%u/%u/%d/%d/%" PRIu64 "/%zu;", *out, smp->pid, smp->tid, smp->kind, smp->state, smp->value,
                     smp->n_frames) < 0)
                return -ENOMEM;
        free(*out);
        *out = n;
        return 0;
}

static char *answers(store *s, sqlite3 *db) {
        const struct store_query queries[] = {
                /* everything; a window that starts and ends inside spans; one drain inside a span */
                { .kind = 0, .from_ns = 0, .to_ns = UINT64_MAX, .group = STORE_GROUP_PROCESS },
                { .kind = 0, .from_ns = T0 + 95 * SEC, .to_ns = T0 + 455 * SEC },
                { .kind = 0, .from_ns = T0 + 95 * SEC, .to_ns = T0 + 455 * SEC, .pid = 200 },
                /* thread and state filters read every field */
                { .kind = 0, .from_ns = T0 + 95 * SEC, .to_ns = T0 + 455 * SEC, .tid = 101, .group = STORE_GROUP_THREAD },
                { .kind = 1, .from_ns = T0 + 305 * SEC, .to_ns = T0 + 905 * SEC, .state_mask = 1u << 2 },
                { .kind = 0, .drain_id = 45 },
                { .kind = 1, .drain_id = 31 },
        };
        char *out = strdup("");

        for (size_t i = 0; i < ELEMENTSOF(queries); i++) {
                uint64_t total = 0, stacks = 0;
                char *n = NULL;

                CHECK_INT_EQ(store_query_stacks(s, &queries[i], stack_line, &out, &total, &stacks), 0);
                CHECK_INT_EQ(store_query_drains(s, &queries[i], drain_line, &out), 0);
                CHECK(asprintf(&n, "%s total %" PRIu64 " in %" PRIu64 "\n", out, total, stacks) > 0);
                free(out);
                out = n;
        }
        for (int64_t d = 1; d <= 100; d += 11)
                CHECK_INT_EQ(store_outbox_samples(s, d, outbox_line, &out, NULL), 0);
        {
                char *v = text1(db, "SELECT group_concat(x, ';') FROM (SELECT drain_id || ':' || kind || ':' || tid || ':' "
                                    "|| stack_id || '=' || value AS x FROM samples ORDER BY 1)");
                char *n = NULL;

                CHECK(asprintf(&n, "%s\n%s", out, v ? v : "") > 0);
                free(out);
                free(v);
                out = n;
        }
        return out;
}

/* The samples of drains 46-100, per drain, stack and thread. */
#define TAIL_SQL                                                                                                  \
        "SELECT group_concat(x, ';') FROM (SELECT drain_id || ':' || kind || ':' || tid || ':' || stack_id || '=' " \
        "|| value AS x FROM samples WHERE drain_id >= 46 ORDER BY drain_id, kind, tid, stack_id, value)"

/* Retention packs closed runs of 30 raw drains into blocks that span
 * them; every answer stays the same, and deleting or merging part of a
 * span keeps the rest of it. */
static void test_spans_keep_every_answer(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 1000 * SEC;
        char *before, *after, *totals_before, *totals_after, *tail_before, *tail_after;
        int64_t blocks_before, bytes_before;

        snprintf(path, sizeof(path), "%s/spans.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_drains(s, T0, now, 10 * SEC, 12, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 100);
        CHECK_INT_EQ(q1(db, "SELECT min(id) FROM drains"), 1);
        before = answers(s, db);
        blocks_before = q1(db, "SELECT count(*) FROM sample_blocks");
        bytes_before = q1(db, "SELECT sum(length(entries)) FROM sample_blocks");
        CHECK_INT_EQ(blocks_before, 100 * 3);
        totals_before = text1(db, TOTALS_SQL);
        tail_before = text1(db, TAIL_SQL);

        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 48 * 60 * MINUTE,
                                                                  .all_ns = 96 * 60 * MINUTE }, &r) == 0);
        settle(r, s, now);
        retention_get_totals(r, &t);
        /* drains 1-30, 31-60, 61-90; 91-100 wait for a newer drain past 120 */
        CHECK_INT_EQ(t.spanned_drains, 90);
        CHECK_INT_EQ(t.merged_drains, 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE span IS NOT NULL"), 90);
        CHECK_INT_EQ(q1(db, "SELECT count(DISTINCT span) FROM drains"), 3);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks"), 3 * 3 + 10 * 3);
        /* the span offsets (0-29) take five bits an entry; the blocks' own costs go */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks WHERE widths >> 49 = 1 AND (widths >> 42) & 127 = 5"), 3 * 3);
        CHECK(q1(db, "SELECT sum(length(entries)) FROM sample_blocks") < bytes_before * 2);
        after = answers(s, db);
        CHECK(before && after && streq(before, after));
        if (before && after && !streq(before, after))
                fprintf(stderr, "before:\n%s\nafter:\n%s\n", before, after);
        free(after);
        /* stack_refs counts blocks, now fewer */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM stack_refs s WHERE blocks != (SELECT count(*) FROM ("
                            "SELECT DISTINCT b.drain_id, b.kind, b.process_id FROM samples v JOIN sample_blocks b "
                            "ON b.kind = v.kind AND b.process_id = v.process_id AND b.drain_id = "
                            "coalesce((SELECT span FROM drains WHERE id = v.drain_id), v.drain_id) "
                            "WHERE v.stack_id = s.stack_id))"), 0);
        CHECK_INT_EQ(settle(r, s, now), 0);

        /* the first 45 drains expire: the first span goes, the second loses
         * its first half and keeps the rest */
        retention_configure(r, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 48 * 60 * MINUTE,
                                                              .all_ns = now - (T0 + 455 * SEC) });
        settle(r, s, now);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.deleted_drains, 45);
        CHECK_INT_EQ(q1(db, "SELECT min(id) FROM drains"), 46);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id <= 45"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id NOT IN (SELECT id FROM drains)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains d WHERE keys != (SELECT count(*) FROM samples WHERE drain_id = d.id)"), 0);
        tail_after = text1(db, TAIL_SQL);
        CHECK(tail_before && tail_after && streq(tail_before, tail_after));
        free(tail_after);
        free(totals_before);
        totals_before = text1(db, TOTALS_SQL);

        /* the rest merged into 1-minute buckets: totals per key kept */
        retention_configure(r, &(struct retention_settings) { .raw_ns = 1 * MINUTE, .m1_ns = 48 * 60 * MINUTE,
                                                              .all_ns = 96 * 60 * MINUTE });
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains d WHERE keys != (SELECT count(*) FROM samples WHERE drain_id = d.id)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id NOT IN (SELECT id FROM drains)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks WHERE drain_id NOT IN (SELECT coalesce(span, id) FROM drains)"), 0);
        retention_get_totals(r, &t);
        CHECK(t.merged_drains > 0);
        totals_after = text1(db, TOTALS_SQL);
        CHECK(totals_before && totals_after && streq(totals_before, totals_after));
        free(totals_after);
        free(totals_before);
        free(tail_before);
        free(before);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A block whose blob does not match its widths cannot be read: retention
 * drops it, counted, and goes on (it used to fail the step, and every
 * step after it, each time it was tried). The other blocks of its span
 * keep every entry. */
static void test_damaged_block_is_dropped_and_counted(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 1000 * SEC;
        int64_t entries, lost, rest;
        const struct retention_settings set = { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 48 * 60 * MINUTE,
                                                .all_ns = 96 * 60 * MINUTE };

        snprintf(path, sizeof(path), "%s/damaged.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_drains(s, T0, now, 10 * SEC, 12, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        entries = q1(db, "SELECT sum(n) FROM sample_blocks");
        lost = q1(db, "SELECT n FROM sample_blocks WHERE drain_id = 5 AND kind = 0 AND process_id = 1");
        CHECK(lost > 1);
        rest = q1(db, "SELECT count(*) FROM samples WHERE drain_id = 5") - lost;
        CHECK(rest > 0);
        CHECK(sqlite3_exec(db, "UPDATE sample_blocks SET entries = x'00' WHERE drain_id = 5 AND kind = 0 AND process_id = 1",
                           NULL, NULL, NULL) == SQLITE_OK);

        /* the export reads the drain's other blocks, and counts the damaged one */
        {
                _cleanup_free_ char *out = strdup("");
                uint64_t damaged = 0;
                int64_t rows = 0;

                CHECK(out);
                CHECK_INT_EQ(store_outbox_samples(s, 5, outbox_line, &out, &damaged), 0);
                CHECK_INT_EQ(damaged, 1);
                for (const char *c = out; c && *c; c++)
                        rows += *c == ';';
                CHECK_INT_EQ(rows, rest);
        }

        CHECK(retention_open(path, &set, &r) == 0);
        settle(r, s, now);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.spanned_drains, 90);
        CHECK_INT_EQ(t.damaged_blocks, 1);
        /* every other entry is in the spans, the damaged block's are gone */
        CHECK_INT_EQ(q1(db, "SELECT sum(n) FROM sample_blocks"), entries - lost);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id = 5 AND kind = 0 AND process_id = 1"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id = 5"), rest);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples WHERE drain_id = 6 AND kind = 0 AND process_id = 1"), lost);
        /* the count survives a restart (it is kept in the store) */
        retention_close(r);
        CHECK(retention_open(path, &set, &r) == 0);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.damaged_blocks, 1);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* Drains of `interval` from `from` to `to`, each with `stacks` cpu
 * samples and its timeline: sample j (of 2 x stacks) at 1 ms + j x 7 ms
 * into the drain, naming add j % stacks. */
static void write_timed_drains(store *s, uint64_t from, uint64_t to, uint64_t interval, unsigned stacks) {
        static const struct store_process proc = { .pid = 300, .start_ns = 3, .comm = "gamma", .exe = "/usr/bin/g" };
        struct store_timed t[64];

        CHECK(2 * stacks <= ELEMENTSOF(t));
        for (uint64_t end = from + interval; end <= to; end += interval) {
                CHECK(store_drain_begin(s, end - interval, end) == 0);
                for (unsigned k = 0; k < stacks; k++) {
                        char fn[32];
                        struct store_frame frames[1] = { { .module = "/usr/bin/g", .address = 0x3000 + 16 * k,
                                                           .function = fn } };
                        snprintf(fn, sizeof(fn), "step_%u", k);
                        CHECK(store_drain_add(s, &(struct store_sample) { .process = &proc, .tid = 300 + k % 2,
                                                                           .frames = frames, .n_frames = 1,
                                                                           .value = 2 }) == 0);
                }
                for (unsigned j = 0; j < 2 * stacks; j++)
                        t[j] = (struct store_timed) { end - interval + 1000000 + j * 7000000ULL, j % stacks };
                CHECK(store_drain_timeline(s, t, 2 * stacks) == 0);
                CHECK(store_drain_commit(s, NULL, NULL, NULL) == 0);
        }
}

/* Every timeline block names stored samples: its keys are (process, stack,
 * thread) of a sample of its drain's time, and each stack still exists. */
static int64_t timeline_dangling_keys(sqlite3 *db) {
        sqlite3_stmt *st, *q;
        int64_t bad = 0;

        CHECK(sqlite3_prepare_v2(db, "SELECT drain_id, data FROM timeline_blocks", -1, &st, NULL) == SQLITE_OK);
        CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM stacks WHERE id = ?1", -1, &q, NULL) == SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
                struct timeline_block b = {};

                CHECK_INT_EQ(timeline_unpack(sqlite3_column_blob(st, 1), (size_t) sqlite3_column_bytes(st, 1), &b), 0);
                for (size_t i = 0; i < b.n_keys; i++) {
                        sqlite3_bind_int64(q, 1, b.keys[i].stack_id);
                        if (sqlite3_step(q) != SQLITE_ROW || sqlite3_column_int64(q, 0) != 1)
                                bad++;
                        sqlite3_reset(q);
                }
                timeline_block_done(&b);
        }
        sqlite3_finalize(q);
        sqlite3_finalize(st);
        return bad;
}

static void test_timeline_has_a_retention_of_its_own(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 120 * MINUTE;
        int64_t cpu_before, bytes, newest;
        char *totals_before, *totals_after;

        snprintf(path, sizeof(path), "%s/timeline.db", dir);
        CHECK(store_open(path, &s) == 0);
        /* two hours of 1-minute drains, 8 stacks, 16 timed samples each */
        write_timed_drains(s, T0, T0 + 120 * MINUTE, MINUTE, 8);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks"), 120);
        CHECK_INT_EQ(q1(db, "SELECT sum(n) FROM timeline_blocks"), 120 * 16);
        /* a block's keys are its drain's samples: (process, stack, tid) of
         * a row of the samples view with that drain */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks b WHERE NOT EXISTS (SELECT 1 FROM samples s "
                            "WHERE s.drain_id = b.drain_id)"), 0);
        {
                sqlite3_stmt *st;
                struct timeline_block b = {};
                int64_t drain = -1, found = 0;

                CHECK(sqlite3_prepare_v2(db, "SELECT drain_id, data, start_ns, end_ns FROM timeline_blocks "
                                             "ORDER BY drain_id LIMIT 1", -1, &st, NULL) == SQLITE_OK);
                CHECK(sqlite3_step(st) == SQLITE_ROW);
                drain = sqlite3_column_int64(st, 0);
                CHECK_INT_EQ(timeline_unpack(sqlite3_column_blob(st, 1), (size_t) sqlite3_column_bytes(st, 1), &b), 0);
                /* time 0 is the first sample, 1 ms into the drain; the last 15 x 7 ms later */
                CHECK_INT_EQ(sqlite3_column_int64(st, 2), (int64_t) (T0 + 1000000));
                CHECK_INT_EQ(sqlite3_column_int64(st, 3), (int64_t) (T0 + 1000000 + 15 * 7000000ULL));
                CHECK_INT_EQ(b.n_keys, 8);
                CHECK_INT_EQ(b.n_samples, 16);
                CHECK_INT_EQ(b.span_us, 15 * 7000);
                for (size_t i = 0; i < b.n_samples; i++)
                        CHECK_INT_EQ(b.samples[i].time_us, i * 7000);
                sqlite3_finalize(st);
                CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM samples WHERE drain_id = ?1 AND process_id = ?2 "
                                             "AND stack_id = ?3 AND tid = ?4 AND kind = 0", -1, &st, NULL) == SQLITE_OK);
                for (size_t i = 0; i < b.n_keys; i++) {
                        sqlite3_bind_int64(st, 1, drain);
                        sqlite3_bind_int64(st, 2, b.keys[i].process_id);
                        sqlite3_bind_int64(st, 3, b.keys[i].stack_id);
                        sqlite3_bind_int64(st, 4, b.keys[i].tid);
                        if (sqlite3_step(st) == SQLITE_ROW)
                                found += sqlite3_column_int64(st, 0);
                        sqlite3_reset(st);
                }
                CHECK_INT_EQ(found, 8);
                sqlite3_finalize(st);
                timeline_block_done(&b);
        }
        cpu_before = q1(db, "SELECT sum(value) FROM samples WHERE kind = 0");
        totals_before = text1(db, TOTALS_SQL);

        /* 30 minutes of timeline: the older blocks go, every drain stays */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE,
                                                                  .timeline_ns = 30 * MINUTE }, &r) == 0);
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks"), 30);
        CHECK_INT_EQ(q1(db, "SELECT min(end_ns) FROM timeline_blocks") >= (int64_t) (now - 30 * MINUTE), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 120);
        CHECK_INT_EQ(q1(db, "SELECT sum(value) FROM samples WHERE kind = 0"), cpu_before);
        totals_after = text1(db, TOTALS_SQL);
        CHECK_STR_EQ(totals_after, totals_before);
        free(totals_after);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.deleted_timeline, 90);
        CHECK_INT_EQ(timeline_dangling_keys(db), 0);

        /* a size bound: the oldest go until the blobs take 90% of it, the
         * newest stays */
        bytes = q1(db, "SELECT sum(length(data)) FROM timeline_blocks");
        newest = q1(db, "SELECT max(drain_id) FROM timeline_blocks");
        retention_configure(r, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                              .all_ns = 24 * 60 * MINUTE, .timeline_ns = 30 * MINUTE,
                                                              .timeline_max_bytes = (uint64_t) bytes / 3 });
        settle(r, s, now);
        CHECK(q1(db, "SELECT sum(length(data)) FROM timeline_blocks") <= bytes / 3);
        CHECK(q1(db, "SELECT count(*) FROM timeline_blocks") >= 8);
        CHECK_INT_EQ(q1(db, "SELECT max(drain_id) FROM timeline_blocks"), newest);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 120);
        CHECK_INT_EQ(q1(db, "SELECT sum(value) FROM samples WHERE kind = 0"), cpu_before);

        /* the aggregates' own retention takes the timeline of their time
         * with them: no block is left naming a stack that is gone */
        retention_configure(r, &(struct retention_settings) { .raw_ns = 5 * MINUTE, .m1_ns = 5 * MINUTE,
                                                              .all_ns = 10 * MINUTE });
        settle(r, s, now);
        CHECK(q1(db, "SELECT count(*) FROM drains") < 120);
        CHECK(q1(db, "SELECT count(*) FROM timeline_blocks") > 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks WHERE end_ns < (SELECT min(start_ns) FROM drains)"),
                     0);
        CHECK_INT_EQ(timeline_dangling_keys(db), 0);

        free(totals_before);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A capture pins the drains and timeline of its range (schema 12): a
 * retention pass that deletes their neighbours, for age and for the
 * timeline's own age, keeps them raw and whole; unpinned, they go. */
static void test_capture_pins_survive_retention(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 120 * MINUTE, from = T0 + 25 * MINUTE, to = T0 + 31 * MINUTE, bytes = 0;
        const struct retention_settings set = { .raw_ns = 5 * MINUTE, .m1_ns = 5 * MINUTE, .all_ns = 10 * MINUTE,
                                                .timeline_ns = 5 * MINUTE };
        struct store_capture_totals tot;
        int64_t id = 0, pinned_cpu;
        char pinned_sql[512];

        snprintf(path, sizeof(path), "%s/capture.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_timed_drains(s, T0, T0 + 120 * MINUTE, MINUTE, 8);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(store_capture_add(s, &(struct store_capture) { .cause = "cpu:pid=42>80", .origin = "request",
                                                             .uid = 1000, .has_value = true, .value_centi = 9950,
                                                             .trigger_ns = T0 + 30 * MINUTE, .from_ns = from,
                                                             .to_ns = to, .state = STORE_CAPTURE_PINNED },
                                &id) == 0);
        CHECK(id > 0);
        CHECK(store_capture_bytes(s, from, to, &bytes) == 0);
        CHECK(bytes > 0);
        CHECK(store_capture_set(s, id, STORE_CAPTURE_PINNED, bytes) == 0);
        CHECK_INT_EQ(store_capture_set(s, id + 1, STORE_CAPTURE_PINNED, 0), -ENOENT);
        CHECK(store_capture_totals(s, &tot) == 0);
        CHECK_INT_EQ(tot.count, 1);
        CHECK_INT_EQ(tot.pinning, 1);
        CHECK_INT_EQ(tot.pinned_bytes, bytes);
        /* drains end every minute: those ending 25..32 min in overlap it */
        snprintf(pinned_sql, sizeof(pinned_sql), "FROM drains WHERE end_ns >= %" PRIu64 " AND start_ns <= %" PRIu64,
                 from, to);
        CHECK_INT_EQ(q1(db, sql_cat("SELECT count(*) ", pinned_sql, NULL)), 8);
        pinned_cpu = q1(db, sql_cat("SELECT sum(value) FROM samples WHERE kind = 0 AND drain_id IN (SELECT id ",
                                     pinned_sql, ")"));
        CHECK(pinned_cpu > 0);

        CHECK(retention_open(path, &set, &r) == 0);
        settle(r, s, now);
        /* the neighbours went: nothing else older than 10 minutes */
        CHECK_INT_EQ(count_end(db, "drains", "=", T0 + 24 * MINUTE), 0);
        CHECK_INT_EQ(count_end(db, "drains", "=", T0 + 33 * MINUTE), 0);
        CHECK_INT_EQ(count_end(db, "drains", "<", T0 + 110 * MINUTE), 8);
        /* the pinned ones stayed raw, with their samples and their timeline */
        CHECK_INT_EQ(q1(db, sql_cat("SELECT count(*) ", pinned_sql, " AND resolution_ns = 0")), 8);
        CHECK_INT_EQ(q1(db, sql_cat("SELECT sum(value) FROM samples WHERE kind = 0 AND drain_id IN (SELECT id ",
                                     pinned_sql, ")")),
                     pinned_cpu);
        CHECK_INT_EQ(q1(db, sql_cat("SELECT count(*) FROM timeline_blocks WHERE drain_id IN (SELECT id ", pinned_sql,
                                     ")")),
                     8);
        CHECK_INT_EQ(count_end(db, "timeline_blocks", "<", T0 + 110 * MINUTE), 8);
        CHECK_INT_EQ(timeline_dangling_keys(db), 0);

        /* unpinned: the data is retention's again */
        CHECK(store_capture_set(s, id, STORE_CAPTURE_UNPINNED, bytes) == 0);
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, sql_cat("SELECT count(*) ", pinned_sql, NULL)), 0);
        CHECK_INT_EQ(count_end(db, "timeline_blocks", "<", T0 + 110 * MINUTE), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM captures WHERE state = 'unpinned'"), 1);
        CHECK(store_capture_totals(s, &tot) == 0);
        CHECK_INT_EQ(tot.pinning, 0);
        CHECK_INT_EQ(tot.pinned_bytes, 0);

        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

static void test_bucket(void) {
        CHECK_INT_EQ(retention_bucket(T0 + 59 * SEC, RETENTION_1M_NS), T0);
        CHECK_INT_EQ(retention_bucket(T0 + 60 * SEC, RETENTION_1M_NS), T0 + MINUTE);
        CHECK_INT_EQ(retention_bucket(T0 + 599 * SEC, RETENTION_10M_NS), T0);
}

/* Drains of `interval` from `from` to `to`, each with 4 offcpu samples
 * (tid 400 + k, state S) and their off-CPU timeline: block k began 20 ms
 * before the drain (k = 0: a block longer than the drain's start) plus k x
 * 10 ms and lasted 30 ms + 1 ns (the µs rounded up to hold it). */
static void write_blocked_drains(store *s, uint64_t from, uint64_t to, uint64_t interval) {
        static const struct store_process proc = { .pid = 400, .start_ns = 4, .comm = "delta", .exe = "/usr/bin/d" };
        struct store_block b[4];

        for (uint64_t end = from + interval; end <= to; end += interval) {
                CHECK(store_drain_begin(s, end - interval, end) == 0);
                for (unsigned k = 0; k < 4; k++) {
                        struct store_frame frames[1] = { { .module = "/usr/bin/d", .address = 0x4000 + 16 * k,
                                                           .function = "wait_here" } };
                        CHECK(store_drain_add(s, &(struct store_sample) { .process = &proc, .tid = 400 + k, .kind = 1,
                                                                           .state = 2, .frames = frames, .n_frames = 1,
                                                                           .value = 30000001 }) == 0);
                        b[k] = (struct store_block) { end - interval - 20000000 + k * 10000000ULL + 30000001,
                                                      30000001, k, 2 };
                }
                CHECK(store_drain_offtime(s, b, 4) == 0);
                CHECK(store_drain_commit(s, NULL, NULL, NULL) == 0);
        }
}

/* The off-CPU timeline (schema 13): a row per drain whose blocks keep
 * their start and duration (to the µs, holding every ns) and name the
 * drain's offcpu samples with their state; retention takes rows by
 * timeline_retention, by timeline_max_size counted with the on-CPU
 * timeline's, and with the drains of their time. */
static void test_offcpu_timeline_follows_the_timeline_settings(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 120 * MINUTE;
        int64_t bytes;

        snprintf(path, sizeof(path), "%s/offtime.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_blocked_drains(s, T0, T0 + 120 * MINUTE, MINUTE);
        write_timed_drains(s, T0 + 120 * MINUTE, T0 + 121 * MINUTE, MINUTE, 8);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM offcpu_timeline"), 120);
        CHECK_INT_EQ(q1(db, "SELECT sum(n) FROM offcpu_timeline"), 120 * 4);
        {
                sqlite3_stmt *st;
                struct offtime_set b = {};

                CHECK(sqlite3_prepare_v2(db, "SELECT data, start_ns, end_ns FROM offcpu_timeline "
                                             "ORDER BY drain_id LIMIT 1", -1, &st, NULL) == SQLITE_OK);
                CHECK(sqlite3_step(st) == SQLITE_ROW);
                CHECK_INT_EQ(offtime_unpack(sqlite3_column_blob(st, 0), (size_t) sqlite3_column_bytes(st, 0), &b), 0);
                /* time 0 is the first block's start, 20 ms before the drain */
                CHECK_INT_EQ(sqlite3_column_int64(st, 1), (int64_t) (T0 - 20000000));
                CHECK_INT_EQ(sqlite3_column_int64(st, 2), (int64_t) (T0 + 10000000 + 30000001));
                CHECK_INT_EQ(b.n_keys, 4);
                CHECK_INT_EQ(b.n_blocks, 4);
                for (size_t i = 0; i < b.n_blocks; i++) {
                        CHECK_INT_EQ(b.blocks[i].start_us, i * 10000);
                        CHECK_INT_EQ(b.blocks[i].duration_us, 30001);
                        CHECK_INT_EQ(b.keys[b.blocks[i].key].tid, 400 + i);
                        CHECK_INT_EQ(b.keys[b.blocks[i].key].state, 2);
                }
                sqlite3_finalize(st);
                offtime_set_done(&b);
        }

        /* 30 minutes of timeline: the older rows of both tables go */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE,
                                                                  .timeline_ns = 30 * MINUTE }, &r) == 0);
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM offcpu_timeline"), 30);
        CHECK_INT_EQ(q1(db, "SELECT min(end_ns) FROM offcpu_timeline") >= (int64_t) (now - 30 * MINUTE), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks"), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 121);

        /* a size bound on both tables' blobs together: the oldest go, each
         * table's newest stays */
        bytes = q1(db, "SELECT (SELECT sum(length(data)) FROM offcpu_timeline) + "
                       "(SELECT sum(length(data)) FROM timeline_blocks)");
        retention_configure(r, &(struct retention_settings) { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 24 * 60 * MINUTE,
                                                              .all_ns = 24 * 60 * MINUTE, .timeline_ns = 30 * MINUTE,
                                                              .timeline_max_bytes = (uint64_t) bytes / 2 });
        settle(r, s, now);
        CHECK(q1(db, "SELECT (SELECT sum(length(data)) FROM offcpu_timeline) + "
                     "(SELECT sum(length(data)) FROM timeline_blocks)") <= bytes / 2);
        CHECK(q1(db, "SELECT count(*) FROM offcpu_timeline") >= 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM timeline_blocks"), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains"), 121);

        /* the aggregates' retention takes the rows of their time with them */
        retention_configure(r, &(struct retention_settings) { .raw_ns = 5 * MINUTE, .m1_ns = 5 * MINUTE,
                                                              .all_ns = 10 * MINUTE });
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM offcpu_timeline WHERE end_ns < (SELECT min(start_ns) FROM drains)"),
                     0);

        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A capture's raise (schema 14): drains sampled at 499 Hz amid drains at
 * 49 Hz are merged only with drains of their rate, into rows of that
 * rate, so the samples weighted by each row's rate (what queries count)
 * keep their total, in 1-minute and 10-minute rows alike. */
#define WEIGHTED_SQL \
        "SELECT sum(s.value * 49.0 / coalesce(d.frequency_hz, 49)) FROM samples s JOIN drains d ON d.id = s.drain_id " \
        "WHERE s.kind = 0"

static void test_merges_keep_each_rate_apart(void) {
        char path[128], sql[256];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 60 * MINUTE;
        double weighted_before, weighted_after;

        snprintf(path, sizeof(path), "%s/rates.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_drains(s, T0, now, 10 * SEC, 6, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        /* raised from 12:30 to 13:30 (due for 10-minute rows) and from
         * 35:30 to 36:30 (1-minute rows), each across a minute's end */
        snprintf(sql, sizeof(sql),
                 "UPDATE drains SET frequency_hz = CASE WHEN (end_ns > %" PRIu64 " AND end_ns <= %" PRIu64 ") OR "
                 "(end_ns > %" PRIu64 " AND end_ns <= %" PRIu64 ") THEN 499 ELSE 49 END",
                 (uint64_t) (T0 + 12 * MINUTE + 30 * SEC), (uint64_t) (T0 + 13 * MINUTE + 30 * SEC),
                 (uint64_t) (T0 + 35 * MINUTE + 30 * SEC), (uint64_t) (T0 + 36 * MINUTE + 30 * SEC));
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE frequency_hz = 499"), 12);
        {
                sqlite3_stmt *st;
                CHECK(sqlite3_prepare_v2(db, WEIGHTED_SQL, -1, &st, NULL) == SQLITE_OK);
                CHECK(sqlite3_step(st) == SQLITE_ROW);
                weighted_before = sqlite3_column_double(st, 0);
                sqlite3_finalize(st);
        }

        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        settle(r, s, now);
        /* the raised drains are in merged rows of their own: the 10-minute
         * bucket [10, 20) has one row of each rate, minutes 35 and 36 one
         * row of each rate each */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 600000000000 AND frequency_hz = 499"), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000 AND frequency_hz = 499"), 2);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 600000000000"), 3 + 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000"), 20 + 2);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0 AND frequency_hz IS NULL"), 0);
        {
                sqlite3_stmt *st;
                CHECK(sqlite3_prepare_v2(db, WEIGHTED_SQL, -1, &st, NULL) == SQLITE_OK);
                CHECK(sqlite3_step(st) == SQLITE_ROW);
                weighted_after = sqlite3_column_double(st, 0);
                sqlite3_finalize(st);
        }
        CHECK(weighted_before > 0 && weighted_after > weighted_before - 1e-6 && weighted_after < weighted_before + 1e-6);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* Writes drains of `interval` from `from` to `to` as a build host's: a
 * long-lived process (pid 100) in each, and in each drain new processes
 * that live in it alone: two of "cc1" (the same exe, user and cgroup) and
 * one "sh", all sampled in the same two stacks, with an off-CPU block
 * (their thread ids and a peer differ per process). With timed, each
 * drain keeps a timeline of its cpu samples. */
static void write_churn_drains(store *s, uint64_t from, uint64_t to, uint64_t interval, bool timed) {
        static const struct store_process daemon = { .pid = 100, .start_ns = 1, .comm = "make", .exe = "/usr/bin/make",
                                                     .cgroup = "/system.slice/ci.service", .uid = 1000,
                                                     .have_uid = true };
        struct store_frame frames[2][2] = {
                { { .module = "/usr/bin/cc1", .address = 0x1000, .function = "main" },
                  { .module = "/usr/bin/cc1", .address = 0x2000, .function = "parse" } },
                { { .module = "/usr/bin/cc1", .address = 0x1000, .function = "main" },
                  { .module = "/usr/bin/cc1", .address = 0x3000, .function = "emit" } },
        };
        unsigned i = 0;

        for (uint64_t end = from + interval; end <= to; end += interval, i++) {
                struct store_process procs[3] = {
                        { .pid = 1000 + 3 * i, .start_ns = end - interval + 1, .comm = "cc1", .exe = "/usr/bin/cc1",
                          .cgroup = "/system.slice/ci.service", .uid = 1000, .have_uid = true },
                        { .pid = 1001 + 3 * i, .start_ns = end - interval + 2, .comm = "cc1", .exe = "/usr/bin/cc1",
                          .cgroup = "/system.slice/ci.service", .uid = 1000, .have_uid = true },
                        { .pid = 1002 + 3 * i, .start_ns = end - interval + 3, .comm = "sh", .exe = NULL,
                          .cgroup = "/system.slice/ci.service", .uid = 1000, .have_uid = true },
                };
                struct store_timed t[2] = { { end - interval + 1000000, 0 }, { end - interval + 2000000, 1 } };

                CHECK(store_drain_begin(s, end - interval, end) == 0);
                CHECK(store_drain_add(s, &(struct store_sample) { .process = &daemon, .tid = 100, .frames = frames[0],
                                                                  .n_frames = 1, .value = 1 }) == 0);
                for (unsigned p = 0; p < 3; p++) {
                        for (unsigned k = 0; k < 2; k++)
                                CHECK(store_drain_add(s, &(struct store_sample) {
                                        .process = &procs[p], .tid = procs[p].pid, .frames = frames[k],
                                        .n_frames = 2, .value = 1 + k + p }) == 0);
                        CHECK(store_drain_add(s, &(struct store_sample) {
                                .process = &procs[p], .tid = procs[p].pid, .kind = 2, .state = 1,
                                .peer_tid = procs[p].pid + 1, .frames = frames[1], .n_frames = 2,
                                .value = 1000 * (p + 1) }) == 0);
                }
                if (timed)
                        CHECK(store_drain_timeline(s, t, 2) == 0);
                CHECK(store_drain_commit(s, NULL, NULL, NULL) == 0);
        }
}

/* What grouping must keep: the totals per command, executable, user,
 * cgroup, kind, state and stack. */
#define GROUP_TOTALS_SQL                                                                                         \
        "SELECT group_concat(k || '=' || v, ';') FROM (SELECT k, sum(value) AS v FROM (SELECT p.comm || ',' || "  \
        "coalesce(p.exe, '-') || ',' || p.uid || ',' || p.cgroup || ',' || s.kind || ',' || s.state || ',' || "  \
        "s.stack_id AS k, s.value FROM samples s JOIN processes p ON p.id = s.process_id) GROUP BY k ORDER BY k)"

/* ... and the long-lived process's, per thread and stack */
#define MAKE_TOTALS_SQL                                                                                          \
        "SELECT group_concat(k || '=' || v, ';') FROM (SELECT s.tid || ',' || s.stack_id AS k, sum(s.value) AS v " \
        "FROM samples s JOIN processes p ON p.id = s.process_id WHERE p.pid = 100 GROUP BY k ORDER BY k)"

static void test_short_lived_processes_grouped_by_what_they_ran(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 60 * MINUTE;
        char *totals_before, *totals_after, *make_before, *make_after;
        int64_t raw_procs;

        snprintf(path, sizeof(path), "%s/churn.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_churn_drains(s, T0, now, 10 * SEC, false);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes"), 1 + 3 * 360);
        totals_before = text1(db, GROUP_TOTALS_SQL);
        make_before = text1(db, MAKE_TOTALS_SQL);
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        settle(r, s, now);

        /* every total per command, executable, user, cgroup, kind, state
         * and stack is kept */
        totals_after = text1(db, GROUP_TOTALS_SQL);
        CHECK(totals_before && totals_after && streq(totals_before, totals_after));
        /* the long-lived process keeps its pid, threads and stacks */
        make_after = text1(db, MAKE_TOTALS_SQL);
        CHECK(make_before && make_after && streq(make_before, make_after));
        /* two groups: cc1, and sh (no exe); each a row of pid -1 */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1"), 2);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1 AND comm = 'cc1' AND exe = '/usr/bin/cc1' "
                            "AND uid = 1000 AND cgroup = '/system.slice/ci.service'"), 1);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1 AND comm = 'sh' AND exe IS NULL"), 1);
        /* merged buckets name groups and the long-lived process only, with
         * one entry per (kind, state, stack) of a group: no thread, no peer */
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks b JOIN drains d ON d.id = b.drain_id "
                            "JOIN processes p ON p.id = b.process_id WHERE d.resolution_ns > 0 AND p.pid >= 1000"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM samples s JOIN processes p ON p.id = s.process_id "
                            "WHERE p.pid = -1 AND (s.tid != 0 OR s.peer_tid != 0)"), 0);
        CHECK_INT_EQ(q1(db, "SELECT max(keys) FROM drains WHERE resolution_ns > 0"), 1 + 3 + 3);
        /* the raw window keeps its processes by pid; the others are gone */
        raw_procs = q1(db, "SELECT count(DISTINCT s.process_id) FROM samples s JOIN drains d ON d.id = s.drain_id "
                           "JOIN processes p ON p.id = s.process_id WHERE d.resolution_ns = 0 AND p.pid >= 1000");
        CHECK(raw_procs >= 3 * 60);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid >= 1000"), raw_procs);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM threads t WHERE NOT EXISTS (SELECT 1 FROM processes p "
                            "WHERE p.id = t.process_id)"), 0);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.grouped_processes, 3 * 360 - raw_procs);
        CHECK_INT_EQ(t.deleted_processes, 3 * 360 - raw_procs);

        /* an hour later the rest is grouped too, into the same two rows */
        write_churn_drains(s, now, now + 60 * MINUTE, 10 * SEC, false);
        settle(r, s, now + 60 * MINUTE);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1"), 2);
        /* these drains were in spans when merged: each process is counted
         * once, when the last of its blocks went to its group */
        raw_procs = q1(db, "SELECT count(*) FROM processes WHERE pid >= 1000");
        CHECK(raw_procs >= 3 * 60);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.grouped_processes, 3 * 720 - raw_procs);
        CHECK_INT_EQ(t.deleted_processes, 3 * 720 - raw_procs);
        CHECK(t.spanned_drains > 0);
        free(totals_after);
        totals_after = text1(db, "SELECT count(*) FROM processes WHERE pid = 100");
        CHECK(totals_after && streq(totals_after, "1"));

        /* and a day later everything is gone, the groups too */
        settle(r, s, now + 26 * 60 * MINUTE);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks"), 0);

        free(totals_before);
        free(totals_after);
        free(make_before);
        free(make_after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A bucket of one drain is only relabelled when merged, unless it has
 * short-lived processes: those are grouped all the same. */
static void test_one_drain_buckets_group_too(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 60 * MINUTE;
        char *totals_before, *totals_after;

        snprintf(path, sizeof(path), "%s/churn-minutes.db", dir);
        CHECK(store_open(path, &s) == 0);
        /* 1-minute drains: each 1-minute bucket holds one */
        write_churn_drains(s, T0, now, MINUTE, false);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        totals_before = text1(db, GROUP_TOTALS_SQL);
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE }, &r) == 0);
        settle(r, s, now);
        totals_after = text1(db, GROUP_TOTALS_SQL);
        CHECK(totals_before && totals_after && streq(totals_before, totals_after));
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1"), 2);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM sample_blocks b JOIN drains d ON d.id = b.drain_id "
                            "JOIN processes p ON p.id = b.process_id WHERE d.resolution_ns > 0 AND p.pid >= 1000"), 0);
        free(totals_before);
        free(totals_after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A timeline names its processes by id: while one of the drains merged
 * has its timeline, their processes keep their pid. */
static void test_no_grouping_under_a_timeline(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 60 * MINUTE;

        snprintf(path, sizeof(path), "%s/churn-timed.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_churn_drains(s, T0, now, 10 * SEC, true);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        /* the timeline kept as long as its drains; a share that folds
         * these drains' stacks without it (90%) */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 30 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .fold_ppm = 900000 },
                             &r) == 0);
        settle(r, s, now);
        CHECK(q1(db, "SELECT count(*) FROM timeline_blocks") > 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes WHERE pid = -1"), 0);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM processes"), 1 + 3 * 360);
        CHECK_INT_EQ(timeline_dangling_keys(db), 0);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.grouped_processes, 0);
        /* nor folded: the timeline names the stacks */
        CHECK_INT_EQ(t.folded_stacks, 0);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A bucket of one drain that a timeline names cannot be folded: it is
 * relabelled (its row, id and blocks kept), not rewritten, with folding
 * on as with it off. */
static void test_lone_timed_drain_relabelled_when_folding(void) {
        char path[128], sql[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        uint64_t now = T0 + 25 * MINUTE;
        int64_t old;

        snprintf(path, sizeof(path), "%s/lone-timed.db", dir);
        CHECK(store_open(path, &s) == 0);
        /* one drain a minute: each 1-minute bucket holds one */
        write_churn_drains(s, T0, now, MINUTE, true);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, "CREATE TEMP TABLE before AS SELECT id FROM drains", NULL, NULL, NULL) == SQLITE_OK);
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM drains WHERE end_ns < %" PRIu64, (uint64_t) (now - 10 * MINUTE));
        old = q1(db, sql);
        CHECK(old >= 10);
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .fold_ppm = 900000 },
                             &r) == 0);
        settle(r, s, now);
        CHECK(q1(db, "SELECT count(*) FROM timeline_blocks") > 0);
        /* every drain older than the raw window now a 1-minute row, each
         * the same row as before */
        CHECK(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000") >= old);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE id NOT IN temp.before"), 0);
        CHECK_INT_EQ(timeline_dangling_keys(db), 0);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* Drains of `interval` from `from` to `to` for folding: each has a hot cpu
 * stack main;hot;inner (value 5000, process 100), `rare` cpu stacks
 * main;work_X;leaf seen in no other drain (value 1-3, processes 100 and
 * 200), if `local`, one more main;local_X of that value, and an off-CPU
 * stack of value 10^6. */
static void write_fold_drains(store *s, uint64_t from, uint64_t to, uint64_t interval, unsigned rare, unsigned local) {
        static const struct store_process procs[2] = {
                { .pid = 100, .start_ns = 1, .comm = "alpha", .exe = "/usr/bin/alpha", .uid = 0, .have_uid = true },
                { .pid = 200, .start_ns = 2, .comm = "beta", .exe = "/usr/bin/beta", .uid = 1000, .have_uid = true },
        };
        static unsigned salt;

        for (uint64_t end = from + interval; end <= to; end += interval) {
                struct store_frame hot[3] = {
                        { .module = "/usr/bin/app", .address = 0x1000, .function = "main" },
                        { .module = "/usr/bin/app", .address = 0x1100, .function = "hot" },
                        { .module = "/usr/bin/app", .address = 0x1200, .function = "inner" },
                };

                CHECK(store_drain_begin(s, end - interval, end) == 0);
                CHECK(store_drain_add(s, &(struct store_sample) { .process = &procs[0], .tid = 100, .kind = 0,
                                                                  .frames = hot, .n_frames = 3, .value = 5000 }) == 0);
                for (unsigned k = 0; k < rare; k++, salt++) {
                        char fn[64];
                        struct store_frame frames[3] = {
                                { .module = "/usr/bin/app", .address = 0x1000, .function = "main" },
                                { .module = "/usr/bin/app", .address = 0x100000 + 16 * salt, .function = fn },
                                { .module = "/usr/bin/app", .address = 0x90000000 + 16 * salt, .function = "leaf" },
                        };
                        snprintf(fn, sizeof(fn), "work_%u", salt);
                        CHECK(store_drain_add(s, &(struct store_sample) {
                                .process = &procs[k % 2], .tid = procs[k % 2].pid, .kind = 0,
                                .frames = frames, .n_frames = 3, .value = salt % 3 + 1 }) == 0);
                }
                if (local) {
                        char fn[64];
                        struct store_frame frames[2] = {
                                { .module = "/usr/bin/app", .address = 0x1000, .function = "main" },
                                { .module = "/usr/bin/app", .address = 0x50000000 + 16 * salt, .function = fn },
                        };
                        snprintf(fn, sizeof(fn), "local_%u", salt++);
                        CHECK(store_drain_add(s, &(struct store_sample) { .process = &procs[0], .tid = 100, .kind = 0,
                                                                          .frames = frames, .n_frames = 2,
                                                                          .value = local }) == 0);
                }
                CHECK(store_drain_add(s, &(struct store_sample) {
                        .process = &procs[0], .tid = 100, .kind = 1, .state = 1,
                        .frames = (struct store_frame[]) { { .module = "[kernel.kallsyms]", .address = 0xffff0000,
                                                             .function = "schedule", .kernel = true } },
                        .n_frames = 1, .value = 1000000 }) == 0);
                CHECK(store_drain_commit(s, NULL, NULL, NULL) == 0);
        }
}

/* Each process's and kind's total, the sum of every value. */
#define KIND_TOTALS_SQL                                                                                        \
        "SELECT group_concat(x, ';') FROM (SELECT p.pid || ',' || s.kind || '=' || sum(s.value) AS x "          \
        "FROM samples s JOIN processes p ON p.id = s.process_id GROUP BY p.pid, s.kind ORDER BY 1)"

/* retention_fold: merged buckets keep the hot stack whole and fold the
 * rare ones into main;[folded]; every total stays; the rare stacks go with
 * their locations; the raw window keeps its stacks. */
static void test_merges_fold_rare_stacks(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 30 * MINUTE;
        char *before, *after;
        int64_t hot, folded_stack, raw_rare;

        snprintf(path, sizeof(path), "%s/fold.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_fold_drains(s, T0, now, 10 * SEC, 20, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        before = text1(db, KIND_TOTALS_SQL);
        hot = q1(db, "SELECT s.stack_id FROM samples s WHERE s.value = 5000 LIMIT 1");
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM stacks"), 2 + 180 * 20);
        /* 0.5% of a 1-minute bucket (about 30,000) is 150: a rare stack's
         * node holds 1-3 */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .fold_ppm = 5000 }, &r) == 0);
        settle(r, s, now);

        after = text1(db, KIND_TOTALS_SQL);
        CHECK(before && after && streq(before, after));
        CHECK(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0") > 0);
        /* merged buckets: the hot stack as it was, and one folded stack */
        CHECK_INT_EQ(q1(db, "SELECT count(DISTINCT s.stack_id) FROM samples s JOIN drains d ON d.id = s.drain_id "
                            "WHERE d.resolution_ns > 0 AND s.kind = 0"), 2);
        CHECK(q1(db, "SELECT count(*) FROM samples s JOIN drains d ON d.id = s.drain_id "
                     "WHERE d.resolution_ns > 0 AND s.stack_id = (SELECT stack_id FROM samples WHERE value = 5000 "
                     "LIMIT 1)") > 0);
        CHECK_INT_EQ(q1(db, "SELECT count(DISTINCT stack_id) FROM samples WHERE value = 5000"), 1);
        CHECK_INT_EQ(q1(db, "SELECT stack_id FROM samples WHERE value = 5000 LIMIT 1"), hot);
        folded_stack = q1(db, "SELECT DISTINCT s.stack_id FROM samples s JOIN drains d ON d.id = s.drain_id "
                              "WHERE d.resolution_ns > 0 AND s.kind = 0 AND s.stack_id <> (SELECT stack_id FROM "
                              "samples WHERE value = 5000 LIMIT 1)");
        /* main, then the folded frame, whose function is named [folded] */
        {
                sqlite3_stmt *st;
                int64_t *ids = NULL;
                size_t cap = 0, n = 0;
                char sql[256];

                CHECK(sqlite3_prepare_v2(db, "SELECT frames FROM stacks WHERE id = ?1", -1, &st, NULL) == SQLITE_OK);
                sqlite3_bind_int64(st, 1, folded_stack);
                CHECK(sqlite3_step(st) == SQLITE_ROW);
                CHECK_INT_EQ(stack_unpack(sqlite3_column_blob(st, 0), (size_t) sqlite3_column_bytes(st, 0), &ids, &cap, &n),
                             0);
                sqlite3_finalize(st);
                CHECK_INT_EQ(n, 2);
                if (n == 2) {
                        snprintf(sql, sizeof(sql), "SELECT address FROM locations WHERE id = %" PRId64, ids[0]);
                        CHECK_INT_EQ(q1(db, sql), 0x1000);
                        snprintf(sql, sizeof(sql), "SELECT f.name FROM locations l JOIN functions f "
                                 "ON f.id = l.function_id JOIN mappings m ON m.id = l.mapping_id "
                                 "WHERE l.id = %" PRId64 " AND m.path = '[folded]'", ids[1]);
                        char *name = text1(db, sql);
                        CHECK(name && streq(name, "[folded]"));
                        free(name);
                }
                free(ids);
        }
        /* the merged rare stacks went, with their frames' locations */
        raw_rare = q1(db, "SELECT count(DISTINCT s.stack_id) FROM samples s JOIN drains d ON d.id = s.drain_id "
                          "WHERE d.resolution_ns = 0 AND s.kind = 0 AND s.value < 5000");
        CHECK(raw_rare >= 55 * 20);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM stacks"), raw_rare + 3);
        CHECK(q1(db, "SELECT count(*) FROM locations") <= 2 * raw_rare + 5);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.folded_stacks, 180 * 20 - raw_rare);
        CHECK_INT_EQ(t.merged_for_size, 0);

        free(before);
        free(after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* A bucket merged in several steps (a busy host's) folds by the share of
 * the whole bucket, not of each step: each drain's local stack holds 0.8%
 * of its drain, 0.13% of the bucket, and folds at 0.5%. */
static void test_a_bucket_in_steps_folds_by_the_bucket(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 30 * MINUTE;
        char *before, *after;

        snprintf(path, sizeof(path), "%s/fold-steps.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_fold_drains(s, T0, now, 10 * SEC, 20, 40);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        before = text1(db, KIND_TOTALS_SQL);
        /* one drain a step */
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .fold_ppm = 5000,
                                                                  .merge_rows_max = 20 }, &r) == 0);
        settle(r, s, now);
        after = text1(db, KIND_TOTALS_SQL);
        CHECK(before && after && streq(before, after));
        /* several rows a bucket: it took several steps */
        CHECK(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0") >= 2 * 20);
        CHECK_INT_EQ(q1(db, "SELECT count(DISTINCT s.stack_id) FROM samples s JOIN drains d ON d.id = s.drain_id "
                            "WHERE d.resolution_ns > 0 AND s.kind = 0"), 2);
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.fold_buckets_big, 0);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);

        /* a bucket of more stacks than a merge holds the frames of is
         * weighed per step: each drain's local stack holds its step's
         * share, and stays */
        snprintf(path, sizeof(path), "%s/fold-steps-big.db", dir);
        CHECK(store_open(path, &s) == 0);
        write_fold_drains(s, T0, now, 10 * SEC, 20, 40);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(retention_open(path, &(struct retention_settings) { .raw_ns = 10 * MINUTE, .m1_ns = 60 * MINUTE,
                                                                  .all_ns = 24 * 60 * MINUTE, .fold_ppm = 5000,
                                                                  .merge_rows_max = 20,
                                                                  .fold_bucket_stacks_max = 5 }, &r) == 0);
        settle(r, s, now);
        free(after);
        after = text1(db, KIND_TOTALS_SQL);
        CHECK(before && after && streq(before, after));
        /* the hot stack, main;[folded], and each merged drain's own */
        retention_get_totals(r, &t);
        CHECK(t.merged_drains >= 100);
        CHECK_INT_EQ(q1(db, "SELECT count(DISTINCT s.stack_id) FROM samples s JOIN drains d ON d.id = s.drain_id "
                            "WHERE d.resolution_ns > 0 AND s.kind = 0"), 2 + (int64_t) t.merged_drains);
        /* a step a drain, each weighed alone */
        CHECK_INT_EQ(t.fold_buckets_big, t.merged_drains);
        free(before);
        free(after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

/* Over max_store_size, drains older than an hour are merged (and folded)
 * ahead of their age before any data is deleted: every total stays, the
 * last hour stays as drained. */
static void test_max_size_merges_before_deleting(void) {
        char path[128];
        store *s = NULL;
        retention *r = NULL;
        sqlite3 *db = NULL;
        struct retention_totals t;
        uint64_t now = T0 + 120 * MINUTE, page_size, used;
        struct retention_settings set = { .raw_ns = 24 * 60 * MINUTE, .m1_ns = 7 * 24 * 60 * MINUTE,
                                          .all_ns = 14 * 24 * 60 * MINUTE, .fold_ppm = 5000 };
        char *before, *after;

        snprintf(path, sizeof(path), "%s/size-merge.db", dir);
        CHECK(store_open(path, &s) == 0);
        CHECK(retention_open(path, &set, &r) == 0);
        /* two hours of drains a minute apart, 150 new stacks each */
        write_fold_drains(s, T0, now, MINUTE, 150, 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        page_size = (uint64_t) q1(db, "PRAGMA page_size");
        used = (uint64_t) (q1(db, "PRAGMA page_count") - q1(db, "PRAGMA freelist_count")) * page_size;
        fprintf(stderr, "store of %" PRIu64 " bytes in use\n", used);
        before = text1(db, KIND_TOTALS_SQL);
        /* nothing is due by age */
        settle(r, s, now);
        CHECK_INT_EQ(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns > 0"), 0);

        set.max_bytes = used / 10 * 8;
        retention_configure(r, &set);
        settle(r, s, now);
        used = (uint64_t) (q1(db, "PRAGMA page_count") - q1(db, "PRAGMA freelist_count")) * page_size;
        fprintf(stderr, "%" PRIu64 " bytes in use after, of at most %" PRIu64 "\n", used, set.max_bytes);
        CHECK(used <= set.max_bytes);
        after = text1(db, KIND_TOTALS_SQL);
        CHECK(before && after && streq(before, after));
        retention_get_totals(r, &t);
        CHECK_INT_EQ(t.deleted_for_size, 0);
        CHECK(t.merged_for_size > 0);
        CHECK_INT_EQ(t.merged_for_size, t.merged_drains);
        CHECK(t.folded_stacks > 0);
        /* the last hour as drained */
        {
                char sql[256];

                snprintf(sql, sizeof(sql), "SELECT count(*) FROM drains WHERE resolution_ns > 0 AND end_ns > %" PRIu64,
                         (uint64_t) (now - 60 * MINUTE));
                CHECK_INT_EQ(q1(db, sql), 0);
        }
        CHECK(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 0") >= 59);
        /* the oldest first, and no more than the room needed: the merges
         * stopped once the data took 90% of the maximum */
        CHECK(q1(db, "SELECT max(end_ns) FROM drains WHERE resolution_ns > 0") <
              q1(db, "SELECT min(end_ns) FROM drains WHERE resolution_ns = 0"));
        CHECK(q1(db, "SELECT count(*) FROM drains WHERE resolution_ns = 0") < 120);

        free(before);
        free(after);
        sqlite3_close(db);
        retention_close(r);
        store_close(s);
}

int main(void) {
        char cmd[128];

        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return 1;
        }
        test_bucket();
        test_merge_keeps_totals_and_levels_follow_age();
        test_merges_keep_each_rate_apart();
        test_big_buckets_merge_in_bounded_steps();
        test_short_lived_processes_grouped_by_what_they_ran();
        test_no_grouping_under_a_timeline();
        test_lone_timed_drain_relabelled_when_folding();
        test_merges_fold_rare_stacks();
        test_a_bucket_in_steps_folds_by_the_bucket();
        test_max_size_merges_before_deleting();
        test_one_drain_buckets_group_too();
        test_spans_keep_every_answer();
        test_damaged_block_is_dropped_and_counted();
        test_max_size_deletes_oldest_first_and_shrinks_the_file();
        test_timeline_has_a_retention_of_its_own();
        test_capture_pins_survive_retention();
        test_offcpu_timeline_follows_the_timeline_settings();
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void) system(cmd);
        TESTS_DONE();
}
