/* The store's write and query paths on a temporary file: drains written
 * through store_drain_* come back from a reader connection with their exact
 * sums per stack, per group, per drain and per drop reason, their frames
 * (inline chains, unresolved frames named module+offset with their reason,
 * kernel frames) and their filters; an aborted drain leaves nothing. */
#include <errno.h>
#include <sqlite3.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "macro.h"
#include "quality-sum.h"
#include "store.h"
#include "store-private.h"
#include "tests.h"
#include "timed-samples.h"

#define SEC 1000000000ULL
#define T0 (1700000000ULL * SEC)

static const struct store_process alpha = {
        .pid = 100, .start_ns = 11, .comm = "alpha", .exe = "/usr/bin/alpha",
        .cgroup = "/system.slice/alpha.service", .uid = 0, .have_uid = true,
};
static const struct store_process beta = {
        .pid = 200, .start_ns = 22, .comm = "beta", .exe = "/usr/bin/beta",
        .cgroup = "/user.slice/user-1000.slice/session-1.scope", .uid = 1000, .have_uid = true,
};

/* S1: main -> work, with work's code inlined from helper (file:line) */
static const struct store_line work_lines[2] = {
        { .function = "helper", .file = "app.c", .line = 7, .inlined = true },
        { .function = "work", .file = "app.c", .line = 30 },
};
static const struct store_frame s1[2] = {
        { .module = "/usr/bin/app", .build_id = "abcd", .address = 0x1000, .function = "main" },
        { .module = "/usr/bin/app", .build_id = "abcd", .address = 0x2000, .function = "work",
          .lines = work_lines, .n_lines = 2 },
};
/* S2: main -> an address no symbol covers; its user walk ended early */
static const struct store_frame s2[2] = {
        { .module = "/usr/bin/app", .build_id = "abcd", .address = 0x1000, .function = "main" },
        { .module = "/usr/bin/app", .build_id = "abcd", .address = 0x3000,
          .unresolved = STORE_UNRESOLVED_NO_SYMBOLS },
};
#define S2_END 6 /* a truncated walk: not complete */
/* K: a kernel stack (off-CPU) */
static const struct store_frame k1[1] = {
        { .module = "[kernel.kallsyms]", .address = 0xffffffff81000000ULL, .function = "schedule", .kernel = true },
};

static void add(store *s, const struct store_process *p, uint32_t tid, int kind, const struct store_frame *f,
                size_t n, int user_end, uint64_t value) {
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) {
                .process = p, .tid = tid, .kind = kind, .state = kind ? 2 : 0, .frames = f, .n_frames = n,
                .user_end = user_end, .value = value }), 0);
}

/* Drain 1 [T0, T0+10s]: alpha S1 5 (tid 100) + 3 (tid 101), beta S2 7,
 * alpha off-CPU K 1 ms, map_full 3. Drain 2 [T0+10s, T0+20s]: beta S1 11. */
static void write_drains(store *s, int64_t *ret_id1, int64_t *ret_id2) {
        uint64_t samples, keys;

        CHECK_INT_EQ(store_drain_begin(s, T0, T0 + 10 * SEC), 0);
        add(s, &alpha, 100, 0, s1, 2, 0, 5);
        add(s, &alpha, 101, 0, s1, 2, 0, 3);
        add(s, &beta, 200, 0, s2, 2, S2_END, 7);
        add(s, &alpha, 100, 1, k1, 1, 0, 1000000);
        CHECK_INT_EQ(store_drain_drop(s, "map_full", 3), 0);
        CHECK_INT_EQ(store_drain_drop(s, "ringbuf_full", 0), 0); /* zero: not stored */
        CHECK_INT_EQ(store_drain_commit(s, ret_id1, &samples, &keys), 0);
        CHECK_INT_EQ(samples, 15); /* on-CPU values only: the rest are ns */
        CHECK_INT_EQ(keys, 4);

        CHECK_INT_EQ(store_drain_begin(s, T0 + 10 * SEC, T0 + 20 * SEC), 0);
        add(s, &beta, 200, 0, s1, 2, 0, 11);
        CHECK_INT_EQ(store_drain_commit(s, ret_id2, &samples, &keys), 0);
        CHECK_INT_EQ(samples, 11);
        CHECK_INT_EQ(keys, 1);
}

/* Every answered stack as "group|frame;frame value end", one per line. */
struct answer {
        char text[2048];
};

static int collect(const struct store_stack_out *st, void *userdata) {
        struct answer *a = userdata;
        size_t n = strlen(a->text);

        n += snprintf(a->text + n, sizeof(a->text) - n, "%s|", st->group ? st->group : "");
        for (size_t i = 0; i < st->n_frames; i++)
                n += snprintf(a->text + n, sizeof(a->text) - n, "%s%s", i ? ";" : "", st->frames[i].name);
        snprintf(a->text + n, sizeof(a->text) - n, " %" PRIu64 " %d\n", st->value, st->user_end);
        return 0;
}

static const char *query(store *r, const struct store_query *q, uint64_t expect_total, uint64_t expect_stacks) {
        static struct answer a;
        uint64_t total = 0, stacks = 0;

        memset(&a, 0, sizeof(a));
        CHECK_INT_EQ(store_query_stacks(r, q, collect, &a, &total, &stacks), 0);
        CHECK_INT_EQ(total, expect_total);
        CHECK_INT_EQ(stacks, expect_stacks);
        return a.text;
}

#define WINDOW .from_ns = T0, .to_ns = T0 + 20 * SEC

static void test_stacks_summed_per_stack_and_group(store *r) {
        /* ungrouped: S1 = 5 + 3 + 11 over both drains, in stack order */
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW }, 26, 2),
                     "|main;work;helper 19 0\n|main;app+0x3000 7 6\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .group = STORE_GROUP_PROCESS }, 26, 3),
                     "alpha-100|main;work;helper 8 0\nbeta-200|main;work;helper 11 0\nbeta-200|main;app+0x3000 7 6\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .group = STORE_GROUP_UNIT }, 26, 3),
                     "alpha.service|main;work;helper 8 0\nsession-1.scope|main;work;helper 11 0\n"
                     "session-1.scope|main;app+0x3000 7 6\n");
        /* the off-CPU kind apart, kernel frame kept */
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 1, WINDOW }, 1000000, 1), "|schedule 1000000 0\n");
}

static void test_filters(store *r) {
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .pid = 200 }, 18, 2),
                     "|main;work;helper 11 0\n|main;app+0x3000 7 6\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .tid = 101 }, 3, 1), "|main;work;helper 3 0\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .comm = "al*" }, 8, 1), "|main;work;helper 8 0\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .only_uid = true, .uid = 1000 }, 18, 2),
                     "|main;work;helper 11 0\n|main;app+0x3000 7 6\n");
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .cgroup = "/system.slice" }, 8, 1),
                     "|main;work;helper 8 0\n");
        /* /system.slice/alpha must not match alpha.service's sibling prefix */
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, WINDOW, .cgroup = "/system.slice/alpha" }, 0, 0), "");
        /* only the second drain's window */
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 15 * SEC, .to_ns = T0 + 30 * SEC },
                           11, 1),
                     "|main;work;helper 11 0\n");
}

struct frames_seen {
        struct store_frame_out f[3];
        size_t n;
};

/* Keeps the first three-frame stack's frames (their flags and numbers;
 * strings are checked here: they live during the callback only) and checks
 * the unresolved frame of the two-frame one. */
static int frames_check(const struct store_stack_out *st, void *userdata) {
        struct frames_seen *fs = userdata;

        if (st->n_frames == 3 && !fs->n) {
                memcpy(fs->f, st->frames, sizeof(fs->f));
                fs->n = 3;
                CHECK(st->frames[0].file == NULL); /* main has no debug lines */
                CHECK_STR_EQ(st->frames[1].file, "app.c");
                CHECK_STR_EQ(st->frames[2].file, "app.c");
                CHECK_STR_EQ(st->frames[1].build_id, "abcd");
                CHECK_STR_EQ(st->frames[1].module, "/usr/bin/app");
        }
        if (st->n_frames == 2) {
                CHECK(!st->frames[1].resolved);
                CHECK_INT_EQ(st->frames[1].unresolved, STORE_UNRESOLVED_NO_SYMBOLS);
                CHECK_INT_EQ(st->frames[1].address, 0x3000);
        }
        return 0;
}

static void test_frames(store *r) {
        struct frames_seen seen = {};

        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, WINDOW }, frames_check, &seen, NULL, NULL), 0);
        CHECK_INT_EQ(seen.n, 3);
        /* work is at line 30 calling the inlined helper at line 7 */
        CHECK(seen.f[0].resolved && !seen.f[0].inlined);
        CHECK(!seen.f[1].inlined);
        CHECK_INT_EQ(seen.f[1].line, 30);
        CHECK(seen.f[2].inlined);
        CHECK_INT_EQ(seen.f[2].line, 7);
        CHECK_INT_EQ(seen.f[2].address, 0x2000);
}

/* A reader keeps the locations of a query for the next; forgetting them
 * empties that cache, and the next query loads them again, with the same
 * frames. */
static void test_forget_query_caches(store *r) {
        struct frames_seen seen = {};

        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, WINDOW }, frames_check, &seen, NULL, NULL), 0);
        CHECK(store_query_cached_locations(r) > 0);
        store_forget_query_caches(r);
        CHECK_INT_EQ(store_query_cached_locations(r), 0);
        seen = (struct frames_seen) {};
        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, WINDOW }, frames_check, &seen, NULL, NULL), 0);
        CHECK_INT_EQ(seen.n, 3);
        CHECK_INT_EQ(seen.f[1].line, 30);
        CHECK(seen.f[2].inlined);
        CHECK_INT_EQ(seen.f[2].line, 7);
        CHECK(store_query_cached_locations(r) > 0);
}

struct drain_sums {
        uint64_t start[4], value[4], complete[4];
        size_t n;
};

static int drain_value(uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct drain_sums *d = userdata;

        if (d->n < 4) {
                d->start[d->n] = start_ns;
                d->value[d->n] = value;
                d->complete[d->n] = complete;
        }
        d->n++;
        return 0;
}

static int drop_sum(const char *reason, uint64_t count, void *userdata) {
        char *out = userdata;
        size_t n = strlen(out);
        snprintf(out + n, 256 - n, "%s=%" PRIu64 ";", reason, count);
        return 0;
}

/* Bytes in the connection's page cache. */
static int cache_used(store *s) {
        int cur = 0, high = 0;

        (void) sqlite3_db_status(s->d.handle, SQLITE_DBSTATUS_CACHE_USED, &cur, &high, 0);
        return cur;
}

static void test_drains_drops_and_stats(store *r, int64_t id1, int64_t id2) {
        struct drain_sums d = {};
        struct store_stats st;
        char drops[256] = "";
        int64_t last;
        uint64_t start, end;

        CHECK_INT_EQ(store_query_drains(r, &(struct store_query) { .kind = 0, WINDOW }, drain_value, &d), 0);
        CHECK_INT_EQ(d.n, 2);
        CHECK_INT_EQ(d.start[0], T0);
        CHECK_INT_EQ(d.value[0], 15);
        CHECK_INT_EQ(d.complete[0], 8); /* S2's 7 ended early */
        CHECK_INT_EQ(d.start[1], T0 + 10 * SEC);
        CHECK_INT_EQ(d.value[1], 11);
        CHECK_INT_EQ(d.complete[1], 11);

        CHECK_INT_EQ(store_query_drops(r, &(struct store_query) { WINDOW }, drop_sum, drops), 0);
        CHECK_STR_EQ(drops, "map_full=3;");
        drops[0] = 0;
        CHECK_INT_EQ(store_query_drops(r, &(struct store_query) { .drain_id = id2 }, drop_sum, drops), 0);
        CHECK_STR_EQ(drops, "");

        CHECK_INT_EQ(store_last_drain(r, &last, &start, &end), 0);
        CHECK_INT_EQ(last, id2);
        CHECK_INT_EQ(start, T0 + 10 * SEC);
        CHECK_INT_EQ(end, T0 + 20 * SEC);
        CHECK(id1 != id2);

        CHECK_INT_EQ(store_get_stats(r, &st), 0);
        CHECK_INT_EQ(st.drains, 2);
        CHECK_INT_EQ(st.samples, 26);
        CHECK_INT_EQ(st.stacks, 3);
        CHECK_INT_EQ(st.processes, 2);
        CHECK_INT_EQ(st.last_drain_ns, T0 + 20 * SEC);
        CHECK_INT_EQ(st.n_drops, 1);
        CHECK(st.file_bytes > 0);
        store_stats_done(&st);
        /* the counts' pages are given back: at most one 16 KiB page and
         * its header stay in the connection's cache (17 KiB here; 293 KiB
         * without the release) */
        CHECK(cache_used(r) < 2 * 16384);
}

/* An aborted drain leaves no row; the next one is stored whole, its ids
 * not taken from the rolled-back rows. */
static void test_abort(store *s, store *r) {
        static const struct store_frame fresh[1] = {
                { .module = "/usr/lib/new.so", .address = 0x40, .function = "fresh" },
        };
        struct store_stats st;

        CHECK_INT_EQ(store_drain_begin(s, T0 + 20 * SEC, T0 + 30 * SEC), 0);
        add(s, &beta, 200, 0, fresh, 1, 0, 99);
        store_drain_abort(s);
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 21 * SEC, .to_ns = T0 + 40 * SEC },
                           0, 0), "");
        CHECK_INT_EQ(store_drain_begin(s, T0 + 30 * SEC, T0 + 40 * SEC), 0);
        add(s, &beta, 200, 0, fresh, 1, 0, 4);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        CHECK_STR_EQ(query(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 21 * SEC, .to_ns = T0 + 40 * SEC },
                           4, 1), "|fresh 4 0\n");
        CHECK_INT_EQ(store_get_stats(r, &st), 0);
        CHECK_INT_EQ(st.drains, 3);
        store_stats_done(&st);
}

static int count_twos(const struct store_stack_out *st, void *userdata) {
        uint64_t *n = userdata;

        if (st->value == 2 && st->n_frames == 200)
                (*n)++;
        return 0;
}

/* More ids than the drain connection's caches keep (STORE_ID_CACHE_MAX,
 * 16384): after that commit they start over, and the next drain finds the
 * same rows by lookup: 200 stacks of 200 distinct locations each, stored
 * twice, are 200 stacks of value 2, not 400. */
static void test_id_caches_bounded(store *s, store *r) {
        static const struct store_process gamma = {
                .pid = 300, .start_ns = 33, .comm = "gamma", .exe = "/usr/bin/gamma", .cgroup = "/",
        };
        _cleanup_free_ struct store_frame *frames = calloc(200 * 200, sizeof(*frames));
        uint64_t total = 0, stacks = 0, twos = 0;

        CHECK(frames != NULL);
        for (size_t i = 0; i < 200 * 200; i++)
                frames[i] = (struct store_frame) {
                        .module = "/usr/bin/gamma", .build_id = "ef01", .address = 0x100000 + i * 16, .function = "deep",
                };
        for (int round = 0; round < 2; round++) {
                CHECK_INT_EQ(store_drain_begin(s, T0 + (50 + 10 * round) * SEC, T0 + (60 + 10 * round) * SEC), 0);
                for (size_t i = 0; i < 200; i++)
                        add(s, &gamma, 300, 0, frames + i * 200, 200, 0, 1);
                CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        }
        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 50 * SEC,
                                                                   .to_ns = T0 + 70 * SEC },
                                        count_twos, &twos, &total, &stacks), 0);
        CHECK_INT_EQ(total, 400);
        CHECK_INT_EQ(stacks, 200);
        CHECK_INT_EQ(twos, 200);
}

static int delta_stack(const struct store_stack_out *st, void *userdata) {
        uint64_t *n = userdata;

        if (st->value == 2 && st->n_frames == 3 && streq(st->frames[0].name, "d0") && streq(st->frames[2].name, "d2"))
                (*n)++;
        return 0;
}

/* A stack stored before schema 15 keeps its frames as 8 bytes an id
 * (stack-pack.h): queries read it, and the writer finds it again by its
 * hash and that form instead of storing it a second time packed. */
static void test_stack_of_the_old_form_found_again(store *s, store *r, const char *path) {
        static const struct store_process delta = {
                .pid = 400, .start_ns = 44, .comm = "delta", .exe = "/usr/bin/delta", .cgroup = "/",
        };
        static const struct store_frame f[3] = {
                { .module = "/usr/bin/delta", .address = 0x10, .function = "d0" },
                { .module = "/usr/bin/delta", .address = 0x20, .function = "d1" },
                { .module = "/usr/bin/delta", .address = 0x30, .function = "d2" },
        };
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t ids[3], stack = 0, n_before = 0, n_after = 0, packed = 0;
        uint64_t total = 0, stacks = 0, found = 0;
        int k = 0;

        CHECK_INT_EQ(store_drain_begin(s, T0 + 5000 * SEC, T0 + 5010 * SEC), 0);
        add(s, &delta, 400, 0, f, 3, 0, 1);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        /* written packed: 3 one-byte steps and the mark */
        CHECK(sqlite3_prepare_v2(db, "SELECT max(id), (SELECT length(frames) FROM stacks ORDER BY id DESC LIMIT 1), "
                                 "(SELECT count(*) FROM stacks) FROM stacks", -1, &st, NULL) == SQLITE_OK);
        CHECK(sqlite3_step(st) == SQLITE_ROW);
        stack = sqlite3_column_int64(st, 0);
        packed = sqlite3_column_int64(st, 1);
        n_before = sqlite3_column_int64(st, 2);
        sqlite3_finalize(st);
        CHECK(packed < 3 * 8);
        /* rewritten as schema 14 wrote it */
        CHECK(sqlite3_prepare_v2(db, "SELECT l.id FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                                 "WHERE m.path = '/usr/bin/delta' ORDER BY l.address", -1, &st, NULL) == SQLITE_OK);
        while (k < 3 && sqlite3_step(st) == SQLITE_ROW)
                ids[k++] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        CHECK_INT_EQ(k, 3);
        CHECK(sqlite3_prepare_v2(db, "UPDATE stacks SET frames = ?1 WHERE id = ?2", -1, &st, NULL) == SQLITE_OK);
        sqlite3_bind_blob(st, 1, ids, sizeof(ids), SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, stack);
        CHECK(sqlite3_step(st) == SQLITE_DONE);
        sqlite3_finalize(st);
        store_forget_ids(s);

        CHECK_INT_EQ(store_drain_begin(s, T0 + 5010 * SEC, T0 + 5020 * SEC), 0);
        add(s, &delta, 400, 0, f, 3, 0, 1);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM stacks", -1, &st, NULL) == SQLITE_OK);
        CHECK(sqlite3_step(st) == SQLITE_ROW);
        n_after = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        CHECK_INT_EQ(n_after, n_before);
        /* one stack of both drains, its frames read from the old form */
        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 5000 * SEC,
                                                                   .to_ns = T0 + 5020 * SEC },
                                        delta_stack, &found, &total, &stacks), 0);
        CHECK_INT_EQ(total, 2);
        CHECK_INT_EQ(stacks, 1);
        CHECK_INT_EQ(found, 1);

        /* frames in no form (a damaged file): answered without them, the
         * query goes on */
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_prepare_v2(db, "UPDATE stacks SET frames = X'0507' WHERE id = ?1", -1, &st, NULL) == SQLITE_OK);
        sqlite3_bind_int64(st, 1, stack);
        CHECK(sqlite3_step(st) == SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);
        found = total = stacks = 0;
        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 5000 * SEC,
                                                                   .to_ns = T0 + 5020 * SEC },
                                        delta_stack, &found, &total, &stacks), 0);
        CHECK_INT_EQ(total, 2);
        CHECK_INT_EQ(stacks, 1);
        CHECK_INT_EQ(found, 0);
}

/* The write-ahead log stays near DB_WAL_BYTES whatever the page size (16
 * KiB in a new store, where SQLite's default of 1000 pages let it grow to
 * 16 MiB and stay so on disk): 24 drains of new frames, ~1 MiB of pages
 * each. Its largest size between drains is at most the limit and one
 * drain more. */
static void test_wal_bounded(store *s, const char *path) {
        static const struct store_process delta = {
                .pid = 400, .start_ns = 44, .comm = "delta", .exe = "/usr/bin/delta", .cgroup = "/",
        };
        enum { STACKS = 200, DEPTH = 40, DRAINS = 24 };
        _cleanup_free_ struct store_frame *frames = calloc(STACKS * DEPTH, sizeof(*frames));
        _cleanup_free_ char *wal = NULL, *names = calloc(STACKS * DEPTH, 16);
        uint64_t largest = 0, previous = 0, largest_step = 0;
        struct stat st;

        CHECK(frames && names);
        CHECK(asprintf(&wal, "%s-wal", path) > 0);
        CHECK_INT_EQ(stat(wal, &st), 0);
        previous = (uint64_t) st.st_size;
        for (int d = 0; d < DRAINS; d++) {
                for (size_t i = 0; i < STACKS * DEPTH; i++) {
                        snprintf(names + i * 16, 16, "f%d_%zu", d, i);
                        frames[i] = (struct store_frame) {
                                .module = "/usr/bin/delta", .build_id = "0123",
                                .address = 0x1000000 * (uint64_t) (d + 1) + i * 16, .function = names + i * 16,
                        };
                }
                CHECK_INT_EQ(store_drain_begin(s, T0 + (100 + 10 * d) * SEC, T0 + (110 + 10 * d) * SEC), 0);
                for (size_t i = 0; i < STACKS; i++)
                        add(s, &delta, 400, 0, frames + i * DEPTH, DEPTH, 0, 1);
                CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
                CHECK_INT_EQ(stat(wal, &st), 0);
                largest = MAX(largest, (uint64_t) st.st_size);
                if ((uint64_t) st.st_size > previous)
                        largest_step = MAX(largest_step, (uint64_t) st.st_size - previous);
                previous = (uint64_t) st.st_size;
        }
        fprintf(stderr, "test_wal_bounded: largest log %" PRIu64 " KiB, largest growth in a drain %" PRIu64 " KiB\n",
                largest >> 10, largest_step >> 10);
        /* enough written that SQLite's default would have gone past it */
        CHECK(largest_step * DRAINS > 3 * DB_WAL_BYTES);
        CHECK(largest <= DB_WAL_BYTES + largest_step);
}

/* A CPython frame as the writer stores it (common/protocol.h, issue 41):
 * named, it comes back resolved with qualname, .py file, line and its
 * "python-" build_id, and the quality report counts it named; unnamed, it
 * is "[python]+0xCODE" and counted unresolved. */
struct python_seen {
        size_t named, unnamed;
};

/* strings live as long as the callback: checked here */
static int python_check(const struct store_stack_out *st, void *userdata) {
        struct python_seen *ps = userdata;
        const struct store_frame_out *f = st->frames;

        if (st->n_frames == 3) {
                ps->named++;
                CHECK_INT_EQ(quality_unresolved_mask(st), 0);
                CHECK_STR_EQ(f[2].name, "Worker.run");
                CHECK_STR_EQ(f[2].module, "/srv/app/work.py");
                CHECK_STR_EQ(f[2].file, "/srv/app/work.py");
                CHECK_STR_EQ(f[2].build_id, "python-fedcba9876543210");
                CHECK(store_frame_is_python(f[2].build_id, f[2].module));
                CHECK(f[2].resolved && !f[2].inlined && !f[2].jit && !f[2].kernel);
                CHECK_INT_EQ(f[2].line, 41);
                CHECK_INT_EQ(f[2].address, 41);
                CHECK_STR_EQ(f[1].name, "<module>");
                CHECK_INT_EQ(f[1].line, 3);
                CHECK(!store_frame_is_python(f[0].build_id, f[0].module));
        } else if (st->n_frames == 2) {
                ps->unnamed++;
                CHECK(quality_unresolved_mask(st) != 0);
                CHECK_STR_EQ(f[1].name, "[python]+0x7f0012345678");
                CHECK(!f[1].resolved);
                CHECK(store_frame_is_python(f[1].build_id, f[1].module));
        }
        return 0;
}

static void test_python_frames(store *s, store *r) {
        static const struct store_process py = {
                .pid = 500, .start_ns = 55, .comm = "python3", .exe = "/usr/bin/python3.11", .cgroup = "/",
        };
        static const struct store_line run_line[1] = {
                { .function = "Worker.run", .file = "/srv/app/work.py", .line = 41 },
        };
        static const struct store_line module_line[1] = {
                { .function = "<module>", .file = "/srv/app/main.py", .line = 3 },
        };
        static const struct store_frame named[3] = {
                { .module = "/usr/bin/python3.11", .build_id = "aa11", .address = 0x1000, .function = "main" },
                { .module = "/srv/app/main.py", .build_id = STORE_PYTHON_BUILD_ID_PREFIX "0123456789abcdef",
                  .address = 3, .function = "<module>", .lines = module_line, .n_lines = 1 },
                { .module = "/srv/app/work.py", .build_id = STORE_PYTHON_BUILD_ID_PREFIX "fedcba9876543210",
                  .address = 41, .function = "Worker.run", .lines = run_line, .n_lines = 1 },
        };
        static const struct store_frame unnamed[2] = {
                { .module = "/usr/bin/python3.11", .build_id = "aa11", .address = 0x1000, .function = "main" },
                { .module = STORE_PYTHON_MODULE, .address = 0x7f0012345678 },
        };
        struct python_seen seen = {};

        CHECK_INT_EQ(store_drain_begin(s, T0 + 1000 * SEC, T0 + 1010 * SEC), 0);
        add(s, &py, 500, 0, named, 3, 0, 9);
        add(s, &py, 500, 0, unnamed, 2, 0, 1);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        CHECK_INT_EQ(store_query_stacks(r, &(struct store_query) { .kind = 0, .from_ns = T0 + 1000 * SEC,
                                                                   .to_ns = T0 + 1010 * SEC },
                                        python_check, &seen, NULL, NULL), 0);
        CHECK_INT_EQ(seen.named, 1);
        CHECK_INT_EQ(seen.unnamed, 1);
}

/* The timeline (issue 44): a drain's samples with their times, and a cpu
 * window answered by each sample's own time, with the query's filters and
 * groups, where the timeline reaches back to the window's start. */
static void test_timeline_window(store *s, store *r) {
        const uint64_t d0 = T0 + 2000 * SEC, ms = 1000000;
        /* adds: 0 alpha S1 tid 100 (3 samples), 1 beta S2 tid 200 (2) */
        const struct store_timed t[5] = {
                { d0 + 1000 * ms, 0 }, { d0 + 1200 * ms, 1 }, { d0 + 1500 * ms, 0 }, { d0 + 4000 * ms, 0 },
                { d0 + 7000 * ms, 1 },
        };
        struct store_query q = { .kind = 0, .from_ns = d0 + 1100 * ms, .to_ns = d0 + 4500 * ms, .timeline = true };
        bool covers = false;

        CHECK_INT_EQ(store_drain_begin(s, d0, d0 + 10 * SEC), 0);
        add(s, &alpha, 100, 0, s1, 2, 0, 3);
        add(s, &beta, 200, 0, s2, 2, S2_END, 2);
        CHECK_INT_EQ(store_drain_timeline(s, (const struct store_timed[]) { { d0, 2 } }, 1), -EINVAL);
        CHECK_INT_EQ(store_drain_timeline(s, t, 5), 0);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);

        /* the timeline starts at its first sample: a window from then on */
        CHECK_INT_EQ(store_query_timeline_covers(r, &q, &covers), 0);
        CHECK(covers);
        CHECK_INT_EQ(store_query_timeline_covers(r, &(struct store_query) { .kind = 0, .from_ns = d0,
                                                                            .to_ns = d0 + SEC }, &covers), 0);
        CHECK(!covers);
        CHECK_INT_EQ(store_query_timeline_covers(r, &(struct store_query) { .kind = 1, .from_ns = d0 + 2 * SEC,
                                                                            .to_ns = d0 + 3 * SEC }, &covers), 0);
        CHECK(!covers);
        CHECK_INT_EQ(store_query_timeline_covers(r, &(struct store_query) { .kind = 0, .drain_id = 1 }, &covers), 0);
        CHECK(!covers);

        /* 1.1-4.5 s: alpha at 1.5 and 4.0, beta at 1.2 */
        CHECK_STR_EQ(query(r, &q, 3, 2), "|main;work;helper 2 0\n|main;app+0x3000 1 6\n");
        q.pid = 100;
        CHECK_STR_EQ(query(r, &q, 2, 1), "|main;work;helper 2 0\n");
        q.pid = 0;
        q.tid = 200;
        CHECK_STR_EQ(query(r, &q, 1, 1), "|main;app+0x3000 1 6\n");
        q.tid = 0;
        q.group = STORE_GROUP_PROCESS;
        CHECK_STR_EQ(query(r, &q, 3, 2), "alpha-100|main;work;helper 2 0\nbeta-200|main;app+0x3000 1 6\n");
        q.group = STORE_GROUP_NONE;
        /* to the nanosecond: a window ending just before the sample at 4.0 s */
        q.to_ns = d0 + 4000 * ms - 1;
        CHECK_STR_EQ(query(r, &q, 2, 2), "|main;work;helper 1 0\n|main;app+0x3000 1 6\n");
        /* the same window by drains: the whole drain */
        q.timeline = false;
        CHECK_STR_EQ(query(r, &q, 5, 2), "|main;work;helper 3 0\n|main;app+0x3000 2 6\n");
}

/* A capture's raise in the middle of a window (issue 44): three drains of
 * one CPU running alpha 70% and beta 30%, the middle one sampled at
 * 499 Hz, the others at the base 49 Hz. Counted at the base rate the
 * window keeps 70/30 and its total is the time's 30 s x 49 Hz; the series
 * does not jump during the raise; a drain stored without a rate counts at
 * the base; unweighted (base_hz 0) the raise's samples dominate. */
static void test_raised_drain_weighted(store *s, store *r) {
        const uint64_t d0 = T0 + 3000 * SEC, ms = 1000000;
        const unsigned hz[3] = { 49, 499, 0 }; /* 0: no rate stored, read as the base */
        const uint64_t a[3] = { 343, 3493, 343 }, b[3] = { 147, 1497, 147 };
        struct store_query q = { .kind = 0, .from_ns = d0, .to_ns = d0 + 30 * SEC, .base_hz = 49 };
        struct store_timed t[20];
        struct drain_sums d = {};
        int64_t raised = 0;

        for (unsigned i = 0; i < 3; i++) {
                CHECK_INT_EQ(store_drain_begin(s, d0 + i * 10 * SEC, d0 + (i + 1) * 10 * SEC), 0);
                if (hz[i])
                        CHECK_INT_EQ(store_drain_rate(s, hz[i]), 0);
                add(s, &alpha, 100, 0, s1, 2, 0, a[i]);
                add(s, &beta, 200, 0, s2, 2, S2_END, b[i]);
                if (i == 1) {
                        /* 20 of the raised samples timed in its first second:
                         * 14 alpha, 6 beta */
                        for (unsigned k = 0; k < 20; k++)
                                t[k] = (struct store_timed) { d0 + 10 * SEC + k * 50 * ms, k < 14 ? 0 : 1 };
                        CHECK_INT_EQ(store_drain_timeline(s, t, 20), 0);
                }
                CHECK_INT_EQ(store_drain_commit(s, i == 1 ? &raised : NULL, NULL, NULL), 0);
        }
        CHECK_INT_EQ(store_drain_rate(s, 499), -EBADF); /* only inside a drain */

        /* 343 + 3493 x 49/499 (343.0) + 343; 147 x 2 + 1497 x 49/499 (147.0) */
        CHECK_STR_EQ(query(r, &q, 1470, 2), "|main;work;helper 1029 0\n|main;app+0x3000 441 6\n");
        q.base_hz = 0;
        CHECK_STR_EQ(query(r, &q, 5970, 2), "|main;work;helper 4179 0\n|main;app+0x3000 1791 6\n");
        q.base_hz = 49;
        /* the raised drain alone, by id */
        q.drain_id = raised;
        CHECK_STR_EQ(query(r, &q, 490, 2), "|main;work;helper 343 0\n|main;app+0x3000 147 6\n");
        q.drain_id = 0;
        /* per thread: the entries' path of the sums */
        q.tid = 100;
        CHECK_STR_EQ(query(r, &q, 1029, 1), "|main;work;helper 1029 0\n");
        q.tid = 0;

        /* per drain: 490 each, the raise included */
        CHECK_INT_EQ(store_query_drains(r, &q, drain_value, &d), 0);
        CHECK_INT_EQ(d.n, 3);
        CHECK_INT_EQ(d.value[0], 490);
        CHECK_INT_EQ(d.value[1], 490);
        CHECK_INT_EQ(d.value[2], 490);
        CHECK_INT_EQ(d.complete[1], 343);

        /* the timeline's first second of the raise: 14 and 6 samples at
         * 499 Hz are 1.37 and 0.59 at 49 Hz */
        q = (struct store_query) { .kind = 0, .from_ns = d0 + 10 * SEC, .to_ns = d0 + 11 * SEC, .timeline = true,
                                   .base_hz = 49 };
        CHECK_STR_EQ(query(r, &q, 2, 2), "|main;work;helper 1 0\n|main;app+0x3000 1 6\n");

        /* a timeline answer of that second sends the samples as taken,
         * each entry with its drain's rate, for profctl to weigh */
        static struct answer timed;
        struct timed_set set;
        uint64_t at_499 = 0;

        CHECK_INT_EQ(timed_set_init(&set, 0), 0);
        q.timeline = false;
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &timed), 0);
        CHECK_INT_EQ(set.samples, 20);
        for (size_t i = 0; i < set.n_entries; i++)
                if (set.entries[i].hz == 499)
                        at_499 += set.entries[i].n;
        CHECK_INT_EQ(at_499, 20);
        timed_set_done(&set);
}

/* A timeline answer's samples (profctl heatmap), on test_timeline_window's
 * drain: each sample of the window that passes the filters, by its time
 * and stack, then the stacks in the order of their ids (a query's rows'
 * order); the cap keeps the first samples and counts the rest. */
static void test_timeline_timed(store *r) {
        const uint64_t d0 = T0 + 2000 * SEC, ms = 1000000, d0_ms = d0 / ms;
        struct store_query q = { .kind = 0, .from_ns = d0 + 1100 * ms, .to_ns = d0 + 4500 * ms };
        static struct answer a;
        struct timed_set set;
        uint64_t oldest = 0;

        CHECK_INT_EQ(store_timeline_oldest(r, &oldest), 0);
        CHECK_INT_EQ(oldest, d0 + 1000 * ms);

        /* beta at 1.2 s (stack index 1), alpha at 1.5 s and 4.0 s (0: its
         * stack's id is the smaller) */
        memset(&a, 0, sizeof(a));
        CHECK_INT_EQ(timed_set_init(&set, 0), 0);
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), 0);
        CHECK_STR_EQ(a.text, "|main;work;helper 2 0\n|main;app+0x3000 1 6\n");
        CHECK_INT_EQ(set.samples, 3);
        CHECK_INT_EQ(set.omitted, 0);
        CHECK_INT_EQ(set.n_entries, 3);
        CHECK_INT_EQ(set.entries[0].t_ms, d0_ms + 1200);
        CHECK_INT_EQ(set.entries[0].stack, 1);
        CHECK_INT_EQ(set.entries[0].hz, 0);
        CHECK_INT_EQ(set.entries[1].t_ms, d0_ms + 1500);
        CHECK_INT_EQ(set.entries[1].stack, 0);
        CHECK_INT_EQ(set.entries[2].t_ms, d0_ms + 4000);
        timed_set_done(&set);

        /* the process filters, as a query applies them */
        memset(&a, 0, sizeof(a));
        q.pid = 100;
        CHECK_INT_EQ(timed_set_init(&set, 0), 0);
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), 0);
        CHECK_STR_EQ(a.text, "|main;work;helper 2 0\n");
        CHECK_INT_EQ(set.n_entries, 2);
        timed_set_done(&set);
        memset(&a, 0, sizeof(a));
        q.pid = 0;
        q.only_uid = true;
        q.uid = 4242; /* no process of the store ran with it */
        CHECK_INT_EQ(timed_set_init(&set, 0), 0);
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), 0);
        CHECK_STR_EQ(a.text, "");
        CHECK_INT_EQ(set.samples, 0);
        timed_set_done(&set);
        q.only_uid = false;

        /* a cap of 2: the third sample is counted, with its time */
        memset(&a, 0, sizeof(a));
        CHECK_INT_EQ(timed_set_init(&set, 2), 0);
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), 0);
        CHECK_STR_EQ(a.text, "|main;work;helper 1 0\n|main;app+0x3000 1 6\n");
        CHECK_INT_EQ(set.samples, 2);
        CHECK_INT_EQ(set.omitted, 1);
        CHECK_INT_EQ(set.omitted_from_ns, d0 + 4000 * ms);
        timed_set_done(&set);

        /* grouped, or not cpu: not a timeline answer */
        CHECK_INT_EQ(timed_set_init(&set, 0), 0);
        q.group = STORE_GROUP_PROCESS;
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), -EINVAL);
        q.group = STORE_GROUP_NONE;
        q.kind = 1;
        CHECK_INT_EQ(store_query_timed(r, &q, &set, collect, &a), -EINVAL);
        timed_set_done(&set);
}

int main(void) {
        char dir[] = "/tmp/test-store-XXXXXX";
        _cleanup_free_ char *path = NULL, *cmd = NULL;
        store *s = NULL, *r = NULL;
        int64_t id1 = 0, id2 = 0;

        CHECK(mkdtemp(dir) != NULL);
        CHECK(asprintf(&path, "%s/store.db", dir) > 0);
        CHECK_INT_EQ(store_open(path, &s), 0);
        if (!s)
                TESTS_DONE();
        write_drains(s, &id1, &id2);
        CHECK_INT_EQ(store_open_reader(path, &r), 0);
        if (r) {
                test_stacks_summed_per_stack_and_group(r);
                test_filters(r);
                test_frames(r);
                test_forget_query_caches(r);
                test_drains_drops_and_stats(r, id1, id2);
                test_abort(s, r);
                test_id_caches_bounded(s, r);
                test_wal_bounded(s, path);
                test_python_frames(s, r);
                test_timeline_window(s, r);
                test_timeline_timed(r);
                test_raised_drain_weighted(s, r);
                test_stack_of_the_old_form_found_again(s, r, path);
                /* a reader cannot write, whatever it asks */
                CHECK(store_drain_begin(r, T0, T0 + SEC) < 0);
        }
        store_close(r);
        store_close(s);
        CHECK(asprintf(&cmd, "rm -rf %s", dir) > 0);
        CHECK_INT_EQ(system(cmd), 0);
        TESTS_DONE();
}
