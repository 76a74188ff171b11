/* Prints a store's timeline as the daemon stored it, one sample a line:
 * "time_ns pid tid stack_id", decoded with the daemon's own codec
 * (daemon/store/timeline-pack.c), for tests/e2e/test_timeline.py until the
 * query side reads the timeline. Usage: timeline-dump STORE. Exits 1 on a
 * block that does not decode. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store/timeline-pack.h"

int main(int argc, char **argv) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL, *pid = NULL;
        int rc, bad = 0;

        if (argc != 2) {
                fprintf(stderr, "Usage: timeline-dump STORE\n");
                return 2;
        }
        if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "SELECT drain_id, start_ns, data FROM timeline_blocks ORDER BY start_ns", -1, &st,
                               NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "SELECT pid FROM processes WHERE id = ?1", -1, &pid, NULL) != SQLITE_OK) {
                fprintf(stderr, "%s: %s\n", argv[1], sqlite3_errmsg(db));
                sqlite3_close(db);
                return 1;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t start = sqlite3_column_int64(st, 1);
                struct timeline_block b = {};

                if (timeline_unpack(sqlite3_column_blob(st, 2), (size_t) sqlite3_column_bytes(st, 2), &b) < 0) {
                        fprintf(stderr, "timeline block of drain %" PRId64 " does not decode\n",
                                (int64_t) sqlite3_column_int64(st, 0));
                        bad = 1;
                        continue;
                }
                for (size_t i = 0; i < b.n_samples; i++) {
                        const struct timeline_key *k = &b.keys[b.samples[i].key];
                        int64_t p = -1;

                        sqlite3_bind_int64(pid, 1, k->process_id);
                        if (sqlite3_step(pid) == SQLITE_ROW)
                                p = sqlite3_column_int64(pid, 0);
                        sqlite3_reset(pid);
                        printf("%" PRId64 " %" PRId64 " %" PRIu32 " %" PRId64 "\n",
                               start + (int64_t) b.samples[i].time_us * 1000, p, k->tid, k->stack_id);
                }
                timeline_block_done(&b);
        }
        sqlite3_finalize(pid);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return rc == SQLITE_DONE && !bad ? 0 : 1;
}
