/* retain_store: runs profd's retention on a copy of a store, as if its
 * raw window had been RAW seconds at the end of its last drain, so that
 * everything older is merged into 1-minute buckets: what the 1-minute
 * tier of that store would cost, with short-lived processes grouped
 * (daemon/store/process-groups.h) or, with --no-groups, each kept by pid
 * as before issue 43. --fold PPM folds rare stacks as merges do at
 * `retention_fold` (millionths: 500 is profd's default 0.05%; 0, the
 * default here, keeps every stack). --m1 SECONDS also merges what is older
 * than that into 10-minute buckets (by default nothing is). --after
 * SECONDS runs it that long after the last drain, so that the newest
 * drains are old enough too. The timeline is kept as long as the raw window (at
 * the defaults it is kept less long). Prints one JSON object: the store's bytes in use
 * (pages less the free list) before and after, and retention's totals.
 *
 *   cp profd.db /tmp/a.db; retain_store [--no-groups] [--raw SECONDS] [--m1 SECONDS] [--fold PPM] [--after SECONDS] /tmp/a.db
 *
 * It changes the store it is given: run it on a copy. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "retention.h"
#include "store.h"

static int64_t one(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        int64_t v = -1;

        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                return -1;
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

static int64_t used(sqlite3 *db) {
        return (one(db, "PRAGMA page_count") - one(db, "PRAGMA freelist_count")) * one(db, "PRAGMA page_size");
}

int main(int argc, char *argv[]) {
        struct retention_settings set = { .m1_ns = 7 * 86400 * NSEC_PER_SEC, .all_ns = 14 * 86400 * NSEC_PER_SEC };
        uint64_t raw_s = 60, m1_s = 0, after_s = 0, now;
        struct retention_totals t;
        const char *path = NULL;
        retention *r = NULL;
        store *s = NULL;
        sqlite3 *db = NULL;
        int64_t before, procs_before, blocks_before, stacks_before, locations_before;
        unsigned steps = 0;
        bool forget;
        int k;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--no-groups"))
                        set.no_groups = true;
                else if (streq(argv[i], "--raw") && i + 1 < argc)
                        raw_s = strtoull(argv[++i], NULL, 10);
                else if (streq(argv[i], "--m1") && i + 1 < argc)
                        m1_s = strtoull(argv[++i], NULL, 10);
                else if (streq(argv[i], "--after") && i + 1 < argc)
                        after_s = strtoull(argv[++i], NULL, 10);
                else if (streq(argv[i], "--fold") && i + 1 < argc)
                        set.fold_ppm = (uint32_t) strtoul(argv[++i], NULL, 10);
                else if (!path && argv[i][0] != '-')
                        path = argv[i];
                else {
                        fprintf(stderr, "usage: retain_store [--no-groups] [--raw SECONDS] [--m1 SECONDS] [--fold PPM] [--after SECONDS] STORE\n");
                        return 2;
                }
        }
        if (!path || raw_s < 60 || (m1_s && m1_s < raw_s)) {
                fprintf(stderr, "usage: retain_store [--no-groups] [--raw SECONDS >= 60] [--m1 SECONDS >= raw] "
                                "[--fold PPM] [--after SECONDS] STORE\n");
                return 2;
        }
        set.raw_ns = raw_s * NSEC_PER_SEC;
        if (m1_s)
                set.m1_ns = m1_s * NSEC_PER_SEC;
        /* the timeline no longer than the raw window, as at the defaults
         * (1 h against 24 h): a merge groups no process a timeline names */
        set.timeline_ns = set.raw_ns;
        /* opened (and so checkpointed and migrated) as profd opens it */
        if (store_open(path, &s) < 0)
                return 1;
        if (sqlite3_open(path, &db) != SQLITE_OK)
                return 1;
        now = (uint64_t) one(db, "SELECT max(end_ns) FROM drains") + after_s * NSEC_PER_SEC;
        before = used(db);
        procs_before = one(db, "SELECT count(*) FROM processes");
        blocks_before = one(db, "SELECT count(*) FROM sample_blocks");
        stacks_before = one(db, "SELECT count(*) FROM stacks");
        locations_before = one(db, "SELECT count(*) FROM locations");
        if (retention_open(path, &set, &r) < 0)
                return 1;
        while ((k = retention_step(r, now, &forget)) > 0)
                steps++;
        if (k < 0)
                return 1;
        retention_get_totals(r, &t);
        printf("{\"groups\": %s, \"raw_s\": %" PRIu64 ", \"m1_s\": %" PRIu64 ", \"fold_ppm\": %u, \"steps\": %u, "
               "\"bytes_before\": %" PRId64 ", \"bytes_after\": %" PRId64 ", \"processes_before\": %" PRId64
               ", \"processes_after\": %" PRId64 ", \"blocks_before\": %" PRId64 ", \"blocks_after\": %" PRId64
               ", \"stacks_before\": %" PRId64 ", \"stacks_after\": %" PRId64 ", \"locations_before\": %" PRId64
               ", \"locations_after\": %" PRId64 ", \"merged_drains\": %" PRIu64 ", \"grouped_processes\": %" PRIu64
               ", \"deleted_processes\": %" PRIu64 ", \"folded_stacks\": %" PRIu64 ", \"deleted_stacks\": %" PRIu64
               ", \"raw_drains_left\": %" PRId64 ", \"minute_rows\": %" PRId64 ", \"ten_minute_rows\": %" PRId64 "}\n",
               set.no_groups ? "false" : "true", raw_s, m1_s, set.fold_ppm, steps, before, used(db), procs_before,
               one(db, "SELECT count(*) FROM processes"), blocks_before, one(db, "SELECT count(*) FROM sample_blocks"),
               stacks_before, one(db, "SELECT count(*) FROM stacks"), locations_before,
               one(db, "SELECT count(*) FROM locations"), t.merged_drains, t.grouped_processes, t.deleted_processes,
               t.folded_stacks, t.deleted_stacks, one(db, "SELECT count(*) FROM drains WHERE resolution_ns = 0"),
               one(db, "SELECT count(*) FROM drains WHERE resolution_ns = 60000000000"),
               one(db, "SELECT count(*) FROM drains WHERE resolution_ns = 600000000000"));
        retention_close(r);
        sqlite3_close(db);
        store_close(s);
        return 0;
}
