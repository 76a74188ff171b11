/* The move to schema 8 (blocks of samples): a store written in schema 7's
 * layout, one row per sample, opens at once with nothing converted (the
 * rows moved aside to samples_v7), answers from what is converted and says
 * how many drains are not; the conversion's steps go newest drain first,
 * a step rolled back or cut off by a crash changes nothing and the next
 * resumes; once done, the same rows through the samples view, a block per
 * (drain, kind, process), each stack's and each process's count of blocks,
 * and the same answers to every kind of query (stacks, grouped by process,
 * unit and thread, per drain, with thread, state and process filters) as
 * SQL over the old rows gave. Then retention and the export's outbox on a
 * store half converted: expired drains leave samples_v7 too, what its rows
 * name is kept, merges wait, and every drain is exported from wherever its
 * rows are. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "macro.h"
#include "retention.h"
#include "schema.h"
#include "store.h"
#include "tests.h"

#define SEC 1000000000ULL
#define T0 (1700000000ULL * SEC)
#define N_STACKS 40
#define N_DRAINS 6

static char dir[] = "/tmp/test-store-migrate-XXXXXX";

static void exec(sqlite3 *db, const char *sql) {
        char *err = NULL;

        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
                fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
                tests_failed++;
        }
        sqlite3_free(err);
}

static char *text1(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        char *v = NULL;

        CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                v = strdup(sqlite3_column_text(st, 0) ? (const char *) sqlite3_column_text(st, 0) : "");
        sqlite3_finalize(st);
        return v ? v : strdup("(none)");
}

static uint64_t rnd(uint64_t *x) {
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        return *x;
}

/* A store as schema 7 made it: migrations 1-7, rows written in SQL. */
static void make_v7_store(const char *path) {
        sqlite3 *db;
        sqlite3_stmt *st;
        uint64_t x = 0x9e3779b97f4a7c15ULL;

        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        for (unsigned v = 0; v < 7; v++)
                exec(db, schema_migrations[v]);
        exec(db, "PRAGMA user_version = 7");
        /* one transaction: a sync per row made this take 30 s on a busy disk */
        exec(db, "BEGIN");
        exec(db, "INSERT INTO mappings (id, path, build_id) VALUES (1, '/usr/bin/app', 'ab')");
        exec(db, "INSERT INTO processes (id, pid, start_ns, comm, exe, uid, cgroup, unit) VALUES "
                 "(1, 100, 5, 'alpha', '/usr/bin/alpha', 0, '/system.slice/alpha.service', 'alpha.service'), "
                 "(2, 200, 6, 'beta', '/usr/bin/beta', 1000, '/user.slice', NULL), "
                 "(3, 300, 7, 'gamma', '/usr/bin/gamma', 0, '/system.slice/gamma.service', 'gamma.service')");
        exec(db, "INSERT INTO threads (process_id, tid, comm) VALUES (1, 101, 'alpha-worker'), (2, 200, 'beta-main')");
        /* stack k: one frame, function fK, location k; even ones complete */
        CHECK(sqlite3_prepare_v2(db, "INSERT INTO functions (id, mapping_id, name, raw_name) VALUES (?1, 1, 'f' || ?1, 'f' || ?1)",
                                 -1, &st, NULL) == SQLITE_OK);
        for (int k = 1; k <= N_STACKS; k++) {
                sqlite3_bind_int(st, 1, k);
                CHECK(sqlite3_step(st) == SQLITE_DONE);
                sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        CHECK(sqlite3_prepare_v2(db, "INSERT INTO locations (id, mapping_id, address, function_id) VALUES (?1, 1, ?1 * 4096, ?1)",
                                 -1, &st, NULL) == SQLITE_OK);
        for (int k = 1; k <= N_STACKS; k++) {
                sqlite3_bind_int(st, 1, k);
                CHECK(sqlite3_step(st) == SQLITE_DONE);
                sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        CHECK(sqlite3_prepare_v2(db, "INSERT INTO stacks (id, hash, frames, user_end) VALUES (?1, ?1, ?2, ?3)", -1, &st,
                                 NULL) == SQLITE_OK);
        for (int64_t k = 1; k <= N_STACKS; k++) {
                sqlite3_bind_int64(st, 1, k);
                sqlite3_bind_blob(st, 2, &k, sizeof(k), SQLITE_TRANSIENT);
                sqlite3_bind_int(st, 3, k % 2 ? 5 : 0);
                CHECK(sqlite3_step(st) == SQLITE_DONE);
                sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        CHECK(sqlite3_prepare_v2(db, "INSERT INTO drains (id, start_ns, end_ns, samples, keys) VALUES (?1, ?2, ?3, 0, 0)",
                                 -1, &st, NULL) == SQLITE_OK);
        for (int d = 1; d <= N_DRAINS; d++) {
                sqlite3_bind_int(st, 1, d);
                sqlite3_bind_int64(st, 2, (int64_t) (T0 + (uint64_t) (d - 1) * 10 * SEC));
                sqlite3_bind_int64(st, 3, (int64_t) (T0 + (uint64_t) d * 10 * SEC));
                CHECK(sqlite3_step(st) == SQLITE_DONE);
                sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        /* samples: per drain, process and kind, random keys; wakeups with
         * peers, off-CPU values in ns up to minutes, a second cgroup */
        CHECK(sqlite3_prepare_v2(db, "INSERT INTO samples (drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, "
                                 "stack_id, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &st, NULL) == SQLITE_OK);
        for (int d = 1; d <= N_DRAINS; d++)
                for (int p = 1; p <= 3; p++)
                        for (int kind = 0; kind < 3; kind++) {
                                if ((d + p + kind) % 5 == 0)
                                        continue; /* some blocks absent */
                                for (int i = 0; i < 25; i++) {
                                        uint64_t v = rnd(&x);
                                        sqlite3_bind_int(st, 1, d);
                                        sqlite3_bind_int(st, 2, p);
                                        sqlite3_bind_int(st, 3, p * 100 + (int) (v % 3));
                                        sqlite3_bind_int64(st, 4, v % 7 ? 4242 : 77777777777LL);
                                        sqlite3_bind_int(st, 5, kind);
                                        sqlite3_bind_int(st, 6, kind ? 1 + (int) ((v >> 8) % 3) : 0);
                                        sqlite3_bind_int(st, 7, kind == 2 ? 5000 + (int) ((v >> 12) % 50) : 0);
                                        sqlite3_bind_int64(st, 8, 1 + (int64_t) ((v >> 20) % N_STACKS));
                                        sqlite3_bind_int64(st, 9, kind ? (int64_t) ((v >> 24) % 200000000000ULL)
                                                                       : 1 + (int64_t) ((v >> 24) % 50));
                                        CHECK(sqlite3_step(st) == SQLITE_DONE);
                                        sqlite3_reset(st);
                                }
                        }
        sqlite3_finalize(st);
        exec(db, "UPDATE drains SET keys = (SELECT count(*) FROM samples WHERE drain_id = drains.id), "
                 "samples = (SELECT coalesce(sum(value), 0) FROM samples WHERE drain_id = drains.id AND kind = 0)");
        exec(db, "COMMIT");
        sqlite3_close(db);
}

/* An answer as text: "group:fN=value;" per line, N the stack's function. */
struct answer {
        char buf[65536];
        size_t len;
};

static int collect(const struct store_stack_out *so, void *userdata) {
        struct answer *a = userdata;
        const char *fn = so->n_frames ? so->frames[so->n_frames - 1].name : "?";

        a->len += (size_t) snprintf(a->buf + a->len, sizeof(a->buf) - a->len, "%s%s%s=%" PRIu64 ";",
                                    so->group ? so->group : "", so->group ? ":" : "", fn, so->value);
        return 0;
}

static int collect_drain(uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct answer *a = userdata;

        a->len += (size_t) snprintf(a->buf + a->len, sizeof(a->buf) - a->len, "%" PRIu64 "-%" PRIu64 "=%" PRIu64 "/%" PRIu64 ";",
                                    (uint64_t) ((start_ns - T0) / SEC), (uint64_t) ((end_ns - T0) / SEC), value, complete);
        return 0;
}

/* The old layout's answers, by the SQL schema 7's queries ran. */
#define OLD_FILTERED(where) \
        "FROM samples s JOIN processes p ON p.id = s.process_id LEFT JOIN threads th ON th.process_id = s.process_id " \
        "AND th.tid = s.tid JOIN drains d ON d.id = s.drain_id WHERE " where
static const struct {
        const char *name;
        struct store_query q;
        const char *sql; /* one text per answer, as collect makes it */
} cases[] = {
        { "cpu by stack", { .kind = 0 },
          "SELECT group_concat(x, '') FROM (SELECT 'f' || s.stack_id || '=' || sum(s.value) || ';' AS x "
          OLD_FILTERED("s.kind = 0") " GROUP BY s.stack_id ORDER BY s.stack_id)" },
        { "offcpu by process", { .kind = 1, .group = STORE_GROUP_PROCESS },
          "SELECT group_concat(x, '') FROM (SELECT p.comm || '-' || p.pid || ':f' || s.stack_id || '=' || sum(s.value) || ';' AS x, "
          "p.comm || '-' || p.pid AS grp " OLD_FILTERED("s.kind = 1") " GROUP BY grp, s.stack_id ORDER BY grp, s.stack_id)" },
        { "wakeup by unit, state S or D", { .kind = 2, .group = STORE_GROUP_UNIT, .state_mask = (1 << 2) | (1 << 3) },
          "SELECT group_concat(x, '') FROM (SELECT coalesce(p.unit, '-') || ':f' || s.stack_id || '=' || sum(s.value) || ';' AS x, "
          "coalesce(p.unit, '-') AS grp " OLD_FILTERED("s.kind = 2 AND s.state IN (2, 3)")
          " GROUP BY grp, s.stack_id ORDER BY grp, s.stack_id)" },
        { "cpu by thread", { .kind = 0, .group = STORE_GROUP_THREAD },
          "SELECT group_concat(x, '') FROM (SELECT coalesce(th.comm, p.comm) || ':f' || s.stack_id || '=' || sum(s.value) || ';' AS x, "
          "coalesce(th.comm, p.comm) AS grp " OLD_FILTERED("s.kind = 0") " GROUP BY grp, s.stack_id ORDER BY grp, s.stack_id)" },
        { "offcpu of pid 200, tid 201, window of drains 2-3", { .kind = 1, .pid = 200, .tid = 201,
          .from_ns = T0 + 15 * SEC, .to_ns = T0 + 25 * SEC },
          "SELECT group_concat(x, '') FROM (SELECT 'f' || s.stack_id || '=' || sum(s.value) || ';' AS x "
          OLD_FILTERED("s.kind = 1 AND p.pid = 200 AND s.tid = 201 AND d.end_ns >= 1700000015000000000 "
                       "AND d.start_ns <= 1700000025000000000") " GROUP BY s.stack_id ORDER BY s.stack_id)" },
        { "cpu of drain 4", { .kind = 0, .drain_id = 4 },
          "SELECT group_concat(x, '') FROM (SELECT 'f' || s.stack_id || '=' || sum(s.value) || ';' AS x "
          OLD_FILTERED("s.kind = 0 AND d.id = 4") " GROUP BY s.stack_id ORDER BY s.stack_id)" },
};

#define SERIES_SQL(kind) \
        "SELECT group_concat(x, '') FROM (SELECT ((d.start_ns - 1700000000000000000) / 1000000000) || '-' || " \
        "((d.end_ns - 1700000000000000000) / 1000000000) || '=' || sum(s.value) || '/' || " \
        "sum(CASE WHEN st.user_end = 0 THEN s.value ELSE 0 END) || ';' AS x " \
        "FROM drains d JOIN samples s ON s.drain_id = d.id JOIN stacks st ON st.id = s.stack_id " \
        "WHERE s.kind = " kind " GROUP BY d.id ORDER BY d.start_ns)"

#define ROWS_SQL \
        "SELECT group_concat(x, ';') FROM (SELECT drain_id || ',' || process_id || ',' || tid || ',' || cgroup_id || ',' " \
        "|| kind || ',' || state || ',' || peer_tid || ',' || stack_id || ',' || value AS x FROM samples ORDER BY 1)"
#define PREFS_SQL_OLD \
        "SELECT group_concat(x, ';') FROM (SELECT process_id || '=' || count(*) AS x FROM (SELECT DISTINCT drain_id, kind, " \
        "process_id FROM samples) GROUP BY process_id ORDER BY process_id)"
#define REFS_SQL_OLD \
        "SELECT group_concat(x, ';') FROM (SELECT stack_id || '=' || count(*) AS x FROM (SELECT DISTINCT drain_id, kind, " \
        "process_id, stack_id FROM samples) GROUP BY stack_id ORDER BY stack_id)"

static int64_t i64(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        int64_t v = -1;

        CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

static uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Every query case against its expected text. */
static void check_answers(const char *path, char *const *expected, char *const *series_before) {
        store *rd = NULL;

        CHECK_INT_EQ(store_open_reader(path, &rd), 0);
        for (size_t i = 0; rd && i < ELEMENTSOF(cases); i++) {
                struct store_query q = cases[i].q;
                struct answer *a = calloc(1, sizeof(*a));
                uint64_t unconverted = 99;

                if (!q.to_ns)
                        q.to_ns = q.drain_id ? 0 : UINT64_MAX / 2;
                CHECK_INT_EQ(store_query_stacks(rd, &q, collect, a, NULL, NULL), 0);
                if (strcmp(a->buf, expected[i]) != 0) {
                        fprintf(stderr, "%s:\n  got      %s\n  expected %s\n", cases[i].name, a->buf, expected[i]);
                        tests_failed++;
                }
                CHECK_INT_EQ(store_query_unconverted(rd, &q, &unconverted), 0);
                CHECK_INT_EQ(unconverted, 0);
                free(a);
        }
        for (int kind = 0; rd && kind < 3; kind++) {
                struct answer *a = calloc(1, sizeof(*a));

                CHECK_INT_EQ(store_query_drains(rd, &(struct store_query) { .kind = kind, .to_ns = UINT64_MAX / 2 },
                                                collect_drain, a), 0);
                CHECK_STR_EQ(a->buf, series_before[kind]);
                free(a);
        }
        store_close(rd);
}

/* The outbox's rows of a drain, as text sorted like ROWS_SQL's. */
struct outbox_rows {
        char *rows[4096];
        size_t n;
        int64_t drain;
};

static int outbox_collect(const struct store_outbox_sample *smp, void *userdata) {
        struct outbox_rows *o = userdata;

        if (o->n < ELEMENTSOF(o->rows))
                CHECK(asprintf(&o->rows[o->n++], "%" PRId64 ",%u,%u,%" PRIu64 ",%d,%d,%u,%s,%" PRIu64, o->drain,
                               smp->pid, smp->tid, smp->cgroup_id, smp->kind, smp->state, smp->peer_tid,
                               smp->n_frames ? smp->frames[smp->n_frames - 1].name : "?", smp->value) > 0);
        return 0;
}

static int strcmp_p(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static char *outbox_text(store *ob, int64_t drain) {
        struct outbox_rows *o = calloc(1, sizeof(*o));
        size_t len = 0;
        char *text;

        o->drain = drain;
        CHECK_INT_EQ(store_outbox_samples(ob, drain, outbox_collect, o, NULL), 0);
        qsort(o->rows, o->n, sizeof(char *), strcmp_p);
        for (size_t i = 0; i < o->n; i++)
                len += strlen(o->rows[i]) + 1;
        text = calloc(1, len + 1);
        for (size_t i = 0; i < o->n; i++) {
                strcat(text, o->rows[i]);
                strcat(text, ";");
                free(o->rows[i]);
        }
        free(o);
        return text;
}

#define OUTBOX_SQL(drain) \
        "SELECT group_concat(x, ';') || ';' FROM (SELECT s.drain_id || ',' || p.pid || ',' || s.tid || ',' || s.cgroup_id || ',' " \
        "|| s.kind || ',' || s.state || ',' || s.peer_tid || ',f' || s.stack_id || ',' || s.value AS x " \
        "FROM samples s JOIN processes p ON p.id = s.process_id WHERE s.drain_id = " drain " ORDER BY 1)"

#define V7_DRAINS "SELECT coalesce(group_concat(drain_id, ','), '') FROM (SELECT DISTINCT drain_id FROM samples_v7 ORDER BY 1)"
#define BLOCK_DRAINS "SELECT coalesce(group_concat(drain_id, ','), '') FROM (SELECT DISTINCT drain_id FROM sample_blocks ORDER BY 1)"

/* Retention and the outbox on a half-converted copy of the store. */
static void check_half_converted(const char *v7_path, char *const *outbox_before) {
        char path[160], cmd[512];
        store *s = NULL, *ob = NULL;
        retention *ret = NULL;
        sqlite3 *db;
        bool forget;
        int k;

        snprintf(path, sizeof(path), "%s/half.db", dir);
        snprintf(cmd, sizeof(cmd), "cp %s %s", v7_path, path);
        CHECK_INT_EQ(system(cmd), 0);
        CHECK_INT_EQ(store_open(path, &s), 0);
        /* the indexes dropped, drains 6 and 5 converted, 1-4 not */
        CHECK_INT_EQ(store_migrate_step(s, NULL, NULL), 1);
        CHECK_INT_EQ(store_migrate_step(s, NULL, NULL), 1);
        CHECK_INT_EQ(store_migrate_step(s, &(struct store_migrate_limits) { .max_rows = 1 }, NULL), 1);
        CHECK_INT_EQ(store_migrate_step(s, &(struct store_migrate_limits) { .max_rows = 1 }, NULL), 1);

        /* the export reads each drain from where its rows are: all of them */
        CHECK_INT_EQ(store_open_outbox(path, &ob), 0);
        for (int d = 1; ob && d <= N_DRAINS; d++) {
                _cleanup_free_ char *got = outbox_text(ob, d);
                CHECK_STR_EQ(got, outbox_before[d - 1]);
        }
        store_close(ob);

        /* expire drains 1 and 2 (ended before now - retention), merges due
         * for everything older than a second */
        CHECK_INT_EQ(retention_open(path, &(struct retention_settings) { .raw_ns = SEC, .m1_ns = 100000 * SEC,
                                                                           .all_ns = 975 * SEC },
                                    &ret), 0);
        while (ret && (k = retention_step(ret, T0 + 1000 * SEC, &forget)) > 0)
                ;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        {
                _cleanup_free_ char *v7 = text1(db, V7_DRAINS);
                _cleanup_free_ char *blocks = text1(db, BLOCK_DRAINS);

                CHECK_STR_EQ(v7, "3,4");
                CHECK_STR_EQ(blocks, "5,6");
                /* merges waited: every drain as drained */
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM drains WHERE resolution_ns != 0"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM drains"), 4);
                /* what samples_v7's rows name is still there */
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM samples_v7 s WHERE NOT EXISTS "
                                     "(SELECT 1 FROM stacks WHERE id = s.stack_id)"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM samples_v7 s WHERE NOT EXISTS "
                                     "(SELECT 1 FROM processes WHERE id = s.process_id)"), 0);
        }
        sqlite3_close(db);

        /* the rest converted; then merges run, and the counts still agree
         * with the blocks */
        while (store_migrate_step(s, NULL, NULL) > 0)
                ;
        while (ret && (k = retention_step(ret, T0 + 1000 * SEC, &forget)) > 0)
                ;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK_INT_EQ(i64(db, "SELECT count(*) FROM sqlite_master WHERE name = 'samples_v7'"), 0);
        CHECK(i64(db, "SELECT count(*) FROM drains WHERE resolution_ns != 0") > 0);
        {
                _cleanup_free_ char *refs = text1(db, "SELECT group_concat(x, ';') FROM (SELECT stack_id || '=' || blocks AS x "
                                                  "FROM stack_refs WHERE blocks > 0 ORDER BY stack_id)");
                _cleanup_free_ char *refs_blocks = text1(db, REFS_SQL_OLD);
                _cleanup_free_ char *orphans = text1(db, "SELECT count(*) FROM samples s WHERE NOT EXISTS "
                                                     "(SELECT 1 FROM stacks WHERE id = s.stack_id)");

                CHECK_STR_EQ(refs, refs_blocks);
                CHECK_STR_EQ(orphans, "0");
        }
        sqlite3_close(db);
        retention_close(ret);
        store_close(s);
}

int main(void) {
        char path[128], *expected[ELEMENTSOF(cases)], *rows_before, *refs_before, *prefs_before, *series_before[3],
                *outbox_before[N_DRAINS], *drain6_before;
        struct store_migration mg;
        store *s = NULL, *rd = NULL;
        int64_t total_rows;
        uint64_t t0, rows;
        sqlite3 *db;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/v7.db", dir);
        make_v7_store(path);

        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                expected[i] = text1(db, cases[i].sql);
                CHECK(strlen(expected[i]) > 10); /* each case selects something */
        }
        series_before[0] = text1(db, SERIES_SQL("0"));
        series_before[1] = text1(db, SERIES_SQL("1"));
        series_before[2] = text1(db, SERIES_SQL("2"));
        rows_before = text1(db, ROWS_SQL);
        refs_before = text1(db, REFS_SQL_OLD);
        prefs_before = text1(db, PREFS_SQL_OLD);
        drain6_before = text1(db, "SELECT group_concat(x, '') FROM (SELECT 'f' || s.stack_id || '=' || sum(s.value) || ';' AS x "
                                  OLD_FILTERED("s.kind = 0 AND d.id = 6") " GROUP BY s.stack_id ORDER BY s.stack_id)");
        for (int d = 1; d <= N_DRAINS; d++) {
                char sql[1024], ds[8];

                snprintf(ds, sizeof(ds), "%d", d);
                snprintf(sql, sizeof(sql), OUTBOX_SQL("%s"), ds);
                outbox_before[d - 1] = text1(db, sql);
                CHECK(strlen(outbox_before[d - 1]) > 100);
        }
        total_rows = i64(db, "SELECT count(*) FROM samples");
        CHECK(strlen(rows_before) > 1000);
        sqlite3_close(db);

        /* the daemon's open: schema 8 at once, nothing converted yet */
        t0 = mono_ns();
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK(mono_ns() - t0 < 1000000000ULL);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        {
                _cleanup_free_ char *v = text1(db, "PRAGMA user_version");

                CHECK_STR_EQ(v, "15");
                /* schema 11: an older store gets an empty timeline; 12: no
                 * captures; 13: an empty off-CPU timeline; 14: drains of
                 * no known rate, counted at the base; 15: stacks keep the
                 * frames' form they were written in (8 bytes an id, last
                 * byte 0), which queries read below */
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM drains WHERE frequency_hz IS NOT NULL"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM timeline_blocks"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM captures"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM offcpu_timeline"), 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM samples_v7"), total_rows);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM sample_blocks"), 0);
        }
        CHECK_INT_EQ(store_migration_get(s, &mg), 0);
        CHECK(mg.active);
        CHECK_INT_EQ(mg.pending_rows, (uint64_t) total_rows);
        CHECK_INT_EQ(mg.pending_drains, N_DRAINS);
        CHECK_INT_EQ(mg.done_rows, 0);
        CHECK_INT_EQ(mg.complete_after_ns, T0 + N_DRAINS * 10 * SEC);

        /* a reader (serve-only profd too) answers from blocks: nothing yet,
         * and says that every drain of the window is missing */
        CHECK_INT_EQ(store_open_reader(path, &rd), 0);
        {
                struct answer *a = calloc(1, sizeof(*a));
                struct store_query q = { .kind = 0, .to_ns = UINT64_MAX / 2 };
                uint64_t unconverted = 0;

                CHECK_INT_EQ(store_query_stacks(rd, &q, collect, a, NULL, NULL), 0);
                CHECK_STR_EQ(a->buf, "");
                CHECK_INT_EQ(store_query_unconverted(rd, &q, &unconverted), 0);
                CHECK_INT_EQ(unconverted, N_DRAINS);
                free(a);
        }

        /* the first two steps drop schema 7's indexes nothing reads now,
         * one each, and convert nothing */
        for (int i = 0; i < 2; i++) {
                CHECK_INT_EQ(store_migrate_step(s, NULL, &rows), 1);
                CHECK_INT_EQ(rows, 0);
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('samples_stack', 'samples_process')"),
                             1 - i);
        }
        CHECK_INT_EQ(i64(db, "SELECT count(*) FROM samples_v7"), total_rows);
        CHECK_INT_EQ(i64(db, "SELECT count(*) FROM sample_blocks"), 0);
        /* then a step of one drain: the newest one */
        CHECK_INT_EQ(store_migrate_step(s, &(struct store_migrate_limits) { .max_rows = 1 }, &rows), 1);
        CHECK(rows > 0);
        {
                _cleanup_free_ char *v7 = text1(db, V7_DRAINS);
                _cleanup_free_ char *blocks = text1(db, BLOCK_DRAINS);

                CHECK_STR_EQ(v7, "1,2,3,4,5");
                CHECK_STR_EQ(blocks, "6");
        }
        CHECK_INT_EQ(store_migration_get(s, &mg), 0);
        CHECK_INT_EQ(mg.done_rows, rows);
        CHECK_INT_EQ(mg.done_drains, 1);
        CHECK_INT_EQ(mg.pending_rows + rows, (uint64_t) total_rows);
        CHECK_INT_EQ(mg.pending_drains, N_DRAINS - 1);
        CHECK_INT_EQ(mg.complete_after_ns, T0 + (N_DRAINS - 1) * 10 * SEC);
        /* the newest window is complete: its answer whole, nothing missing */
        {
                struct answer *a = calloc(1, sizeof(*a));
                struct store_query q = { .kind = 0, .from_ns = T0 + 51 * SEC, .to_ns = UINT64_MAX / 2 };
                uint64_t unconverted = 99;

                CHECK_INT_EQ(store_query_stacks(rd, &q, collect, a, NULL, NULL), 0);
                CHECK_STR_EQ(a->buf, drain6_before);
                CHECK_INT_EQ(store_query_unconverted(rd, &q, &unconverted), 0);
                CHECK_INT_EQ(unconverted, 0);
                q.from_ns = T0;
                CHECK_INT_EQ(store_query_unconverted(rd, &q, &unconverted), 0);
                CHECK_INT_EQ(unconverted, N_DRAINS - 1);
                free(a);
        }
        store_close(rd);

        /* a step rolled back (as when its commit fails) changes nothing */
        CHECK(store_migrate_step(s, &(struct store_migrate_limits) { .max_rows = 1, .rollback = true }, NULL) < 0);
        {
                _cleanup_free_ char *v7 = text1(db, V7_DRAINS);
                _cleanup_free_ char *blocks = text1(db, BLOCK_DRAINS);

                CHECK_STR_EQ(v7, "1,2,3,4,5");
                CHECK_STR_EQ(blocks, "6");
                CHECK_INT_EQ(i64(db, "SELECT value FROM retention_totals WHERE name = 'v8_converted_drains'"), 1);
        }
        /* a process that dies in the middle of a step (here: rows deleted
         * and blocks half written, never committed) changes nothing
         * either; then a restart resumes where the last committed step
         * stopped. Every connection closed first: SQLite's connections do
         * not survive a fork, nor do its locks */
        store_close(s);
        s = NULL;
        sqlite3_close(db);
        {
                pid_t pid = fork();

                if (pid == 0) {
                        sqlite3 *c;

                        if (sqlite3_open(path, &c) != SQLITE_OK ||
                            sqlite3_exec(c, "BEGIN IMMEDIATE; DELETE FROM samples_v7 WHERE drain_id = 5; "
                                            "INSERT INTO sample_blocks (drain_id, kind, process_id, n, widths, stack_base, "
                                            "tid_base, state_base, peer_base, cgroup_base, value_base) "
                                            "VALUES (5, 0, 1, 1, 0, 1, 1, 0, 0, 0, 1); "
                                            "UPDATE stack_refs SET blocks = blocks + 1;", NULL, NULL, NULL) != SQLITE_OK)
                                _exit(2);
                        _exit(0); /* no COMMIT, no close: as if killed */
                }
                int status = -1;
                CHECK(waitpid(pid, &status, 0) == pid);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        {
                _cleanup_free_ char *v7 = text1(db, V7_DRAINS);
                _cleanup_free_ char *blocks = text1(db, BLOCK_DRAINS);

                CHECK_STR_EQ(v7, "1,2,3,4,5");
                CHECK_STR_EQ(blocks, "6");
        }
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK_INT_EQ(store_migrate_step(s, &(struct store_migrate_limits) { .max_rows = 1 }, NULL), 1);
        {
                _cleanup_free_ char *v7 = text1(db, V7_DRAINS);
                _cleanup_free_ char *blocks = text1(db, BLOCK_DRAINS);

                CHECK_STR_EQ(v7, "1,2,3,4");
                CHECK_STR_EQ(blocks, "5,6");
        }
        /* the rest with the default limits: one step here; the last one
         * drops samples_v7, and the next finds nothing to do */
        while (store_migrate_step(s, NULL, NULL) > 0)
                ;
        CHECK_INT_EQ(store_migrate_step(s, NULL, NULL), 0);
        CHECK_INT_EQ(store_migration_get(s, &mg), 0);
        CHECK(!mg.active);
        CHECK_INT_EQ(mg.done_rows, (uint64_t) total_rows);
        CHECK_INT_EQ(mg.done_drains, N_DRAINS);
        {
                _cleanup_free_ char *v = text1(db, "PRAGMA user_version");
                _cleanup_free_ char *rows_after = text1(db, ROWS_SQL);
                _cleanup_free_ char *refs = text1(db, "SELECT group_concat(x, ';') FROM (SELECT stack_id || '=' || blocks AS x "
                                                  "FROM stack_refs ORDER BY stack_id)");
                _cleanup_free_ char *prefs = text1(db, "SELECT group_concat(x, ';') FROM (SELECT process_id || '=' || blocks AS x "
                                                   "FROM process_refs ORDER BY process_id)");
                _cleanup_free_ char *blocks = text1(db, "SELECT count(*) FROM sample_blocks");
                _cleanup_free_ char *old = text1(db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                                 "('samples_v7', 'samples_query', 'samples_stack', 'samples_process')");

                CHECK_STR_EQ(v, "15");
                CHECK_INT_EQ(i64(db, "SELECT count(*) FROM stacks WHERE length(frames) % 8 != 0 "
                                     "OR substr(frames, -1) != X'00'"), 0);
                /* every row back, exactly */
                CHECK_STR_EQ(rows_after, rows_before);
                CHECK_STR_EQ(refs, refs_before);
                CHECK_STR_EQ(prefs, prefs_before);
                /* 6 drains x 3 processes x 3 kinds, minus those left out */
                CHECK_STR_EQ(blocks, "43");
                CHECK_STR_EQ(old, "0");
        }
        sqlite3_close(db);
        check_answers(path, expected, series_before);
        store_close(s);

        /* retention and the outbox meet a half-converted store */
        {
                char v7_path[160];

                snprintf(v7_path, sizeof(v7_path), "%s/v7-again.db", dir);
                make_v7_store(v7_path);
                check_half_converted(v7_path, outbox_before);
        }

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                free(expected[i]);
        for (int k = 0; k < 3; k++)
                free(series_before[k]);
        for (int d = 0; d < N_DRAINS; d++)
                free(outbox_before[d]);
        free(drain6_before);
        free(rows_before);
        free(refs_before);
        free(prefs_before);
        {
                _cleanup_free_ char *cmd = NULL;
                CHECK(asprintf(&cmd, "rm -rf %s", dir) > 0);
                CHECK_INT_EQ(system(cmd), 0);
        }
        TESTS_DONE();
}
