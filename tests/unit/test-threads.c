/* Thread names for --root thread: read from /proc/PID/task/TID/comm (a fake
 * proc root here), stored per process and thread (the latest name wins),
 * and grouped by in queries, with the process's comm standing in for a
 * thread whose name was never read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "macro.h"
#include "proctable.h"
#include "retention.h"
#include "store.h"
#include "tests.h"

static void write_file(const char *dir, const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL;
        FILE *f;

        CHECK(asprintf(&path, "%s/%s", dir, rel) > 0);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static void test_thread_comm_from_proc(void) {
        char root[] = "/tmp/profd-threads-XXXXXX", comm[16];
        _cleanup_free_ char *d = NULL;

        CHECK(mkdtemp(root) != NULL);
        CHECK(asprintf(&d, "%s/42/task/43", root) > 0);
        {
                _cleanup_free_ char *cmd = NULL;
                CHECK(asprintf(&cmd, "mkdir -p %s", d) > 0);
                CHECK_INT_EQ(system(cmd), 0);
        }
        write_file(root, "42/task/43/comm", "worker-io\n");
        CHECK_INT_EQ(proc_thread_comm(root, 42, 43, comm), 0);
        CHECK_STR_EQ(comm, "worker-io");
        /* the kernel keeps 15 characters; a longer file is cut there */
        write_file(root, "42/task/43/comm", "a-name-of-twenty-chars\n");
        CHECK_INT_EQ(proc_thread_comm(root, 42, 43, comm), 0);
        CHECK_STR_EQ(comm, "a-name-of-twent");
        /* an ended thread, or one of another process */
        CHECK_INT_EQ(proc_thread_comm(root, 42, 44, comm), -ENOENT);
        CHECK_INT_EQ(proc_thread_comm(root, 41, 43, comm), -ENOENT);
        {
                _cleanup_free_ char *cmd = NULL;
                CHECK(asprintf(&cmd, "rm -rf %s", root) > 0);
                CHECK_INT_EQ(system(cmd), 0);
        }
}

struct groups {
        char names[8][32];
        uint64_t values[8];
        size_t n;
};

static int collect(const struct store_stack_out *st, void *userdata) {
        struct groups *g = userdata;

        CHECK(st->group != NULL);
        if (g->n > 0 && strcmp(g->names[g->n - 1], st->group) == 0) {
                g->values[g->n - 1] += st->value;
                return 0;
        }
        if (g->n == ELEMENTSOF(g->names))
                return -E2BIG;
        snprintf(g->names[g->n], sizeof(g->names[0]), "%s", st->group);
        g->values[g->n++] = st->value;
        return 0;
}

static void test_store_groups_by_thread_name(void) {
        char dir[] = "/tmp/profd-threads-XXXXXX";
        _cleanup_free_ char *path = NULL;
        struct store_frame f = { .module = "/bin/x", .address = 16, .function = "main" };
        struct store_process p = { .pid = 5, .start_ns = 1, .comm = "server" };
        struct store_process q = { .pid = 9, .start_ns = 1, .comm = "other" };
        struct groups g = {};
        store *s;

        CHECK(mkdtemp(dir) != NULL);
        CHECK(asprintf(&path, "%s/t.db", dir) > 0);
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK_INT_EQ(store_drain_begin(s, 1, 2), 0);
        /* two threads named "io" (a pool: one root), one "parser" that is
         * renamed in the next drain, one whose name was never read */
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &p, .tid = 6, .thread_comm = "io",
                                                                 .frames = &f, .n_frames = 1, .value = 3 }), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &p, .tid = 7, .thread_comm = "io",
                                                                 .frames = &f, .n_frames = 1, .value = 4 }), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &p, .tid = 8, .thread_comm = "parser",
                                                                 .frames = &f, .n_frames = 1, .value = 5 }), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &q, .tid = 10,
                                                                 .frames = &f, .n_frames = 1, .value = 2 }), 0);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        CHECK_INT_EQ(store_drain_begin(s, 2, 3), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &p, .tid = 8, .thread_comm = "parse-2",
                                                                 .frames = &f, .n_frames = 1, .value = 1 }), 0);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);

        CHECK_INT_EQ(store_query_stacks(s, &(struct store_query) { .kind = 0, .from_ns = 0, .to_ns = 10,
                                                                   .group = STORE_GROUP_THREAD },
                                        collect, &g, NULL, NULL), 0);
        /* ordered by name; the renamed thread's samples all under its latest name */
        CHECK_INT_EQ(g.n, 3);
        CHECK_STR_EQ(g.names[0], "io");
        CHECK_INT_EQ(g.values[0], 7);
        CHECK_STR_EQ(g.names[1], "other");
        CHECK_INT_EQ(g.values[1], 2);
        CHECK_STR_EQ(g.names[2], "parse-2");
        CHECK_INT_EQ(g.values[2], 6);
        store_close(s);

        /* after a restart (empty caches) the stored names still answer */
        memset(&g, 0, sizeof(g));
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK_INT_EQ(store_query_stacks(s, &(struct store_query) { .kind = 0, .from_ns = 0, .to_ns = 10,
                                                                   .group = STORE_GROUP_THREAD, .pid = 5 },
                                        collect, &g, NULL, NULL), 0);
        CHECK_INT_EQ(g.n, 2);
        CHECK_STR_EQ(g.names[0], "io");
        CHECK_STR_EQ(g.names[1], "parse-2");
        store_close(s);

        /* retention deletes the names with their processes */
        {
                retention *r = NULL;
                sqlite3 *db = NULL;
                sqlite3_stmt *st = NULL;
                bool forget = false;
                int k, steps = 0;

                CHECK_INT_EQ(retention_open(path, &(struct retention_settings) { .raw_ns = 1, .m1_ns = 2, .all_ns = 3 },
                                            &r), 0);
                while ((k = retention_step(r, 1000000000000000000ULL, &forget)) > 0 && steps < 1000)
                        steps++;
                CHECK_INT_EQ(k, 0);
                retention_close(r);
                CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
                CHECK_INT_EQ(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM processes), "
                                                    "(SELECT count(*) FROM threads)", -1, &st, NULL), SQLITE_OK);
                CHECK_INT_EQ(sqlite3_step(st), SQLITE_ROW);
                CHECK_INT_EQ(sqlite3_column_int64(st, 0), 0);
                CHECK_INT_EQ(sqlite3_column_int64(st, 1), 0);
                sqlite3_finalize(st);
                sqlite3_close(db);
        }
        {
                _cleanup_free_ char *cmd = NULL;
                CHECK(asprintf(&cmd, "rm -rf %s", dir) > 0);
                CHECK_INT_EQ(system(cmd), 0);
        }
}

int main(void) {
        test_thread_comm_from_proc();
        test_store_groups_by_thread_name();
        return tests_failed ? 1 : 0;
}
