/* The move to schema 8 (blocks of samples): a store written in schema 7's
 * layout, one row per sample, gives after migration the same rows through
 * the samples view, a block per (drain, kind, process), each stack's and
 * each process's count of blocks, and the same answers to every kind of query (stacks, grouped
 * by process, unit and thread, per drain, with thread, state and process
 * filters) as SQL over the old rows gave. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "macro.h"
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

int main(void) {
        char path[128], *expected[ELEMENTSOF(cases)], *rows_before, *refs_before, *prefs_before, *series_before[3];
        store *s = NULL, *rd = NULL;
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
        CHECK(strlen(rows_before) > 1000);
        sqlite3_close(db);

        /* the daemon's open migrates it */
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        {
                _cleanup_free_ char *v = text1(db, "PRAGMA user_version");
                _cleanup_free_ char *rows = text1(db, ROWS_SQL);
                _cleanup_free_ char *refs = text1(db, "SELECT group_concat(x, ';') FROM (SELECT stack_id || '=' || blocks AS x "
                                                  "FROM stack_refs ORDER BY stack_id)");
                _cleanup_free_ char *prefs = text1(db, "SELECT group_concat(x, ';') FROM (SELECT process_id || '=' || blocks AS x "
                                                   "FROM process_refs ORDER BY process_id)");
                _cleanup_free_ char *blocks = text1(db, "SELECT count(*) FROM sample_blocks");
                _cleanup_free_ char *old = text1(db, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                                 "('samples_v7', 'samples_query', 'samples_stack', 'samples_process')");

                CHECK_STR_EQ(v, "8");
                /* every row back, exactly */
                CHECK_STR_EQ(rows, rows_before);
                CHECK_STR_EQ(refs, refs_before);
                CHECK_STR_EQ(prefs, prefs_before);
                /* 6 drains x 3 processes x 3 kinds, minus those left out */
                CHECK_STR_EQ(blocks, "43");
                CHECK_STR_EQ(old, "0");
        }
        sqlite3_close(db);

        CHECK_INT_EQ(store_open_reader(path, &rd), 0);
        for (size_t i = 0; rd && i < ELEMENTSOF(cases); i++) {
                struct store_query q = cases[i].q;
                struct answer *a = calloc(1, sizeof(*a));

                if (!q.to_ns)
                        q.to_ns = q.drain_id ? 0 : UINT64_MAX / 2;
                CHECK_INT_EQ(store_query_stacks(rd, &q, collect, a, NULL, NULL), 0);
                if (strcmp(a->buf, expected[i]) != 0) {
                        fprintf(stderr, "%s:\n  got      %s\n  expected %s\n", cases[i].name, a->buf, expected[i]);
                        tests_failed++;
                }
                free(a);
                free(expected[i]);
        }
        for (int kind = 0; rd && kind < 3; kind++) {
                struct answer *a = calloc(1, sizeof(*a));

                CHECK_INT_EQ(store_query_drains(rd, &(struct store_query) { .kind = kind, .to_ns = UINT64_MAX / 2 },
                                                collect_drain, a), 0);
                CHECK_STR_EQ(a->buf, series_before[kind]);
                free(a);
                free(series_before[kind]);
        }
        store_close(rd);
        store_close(s);
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
