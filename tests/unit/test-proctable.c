/* When the process table forgets a process that exited: not before every
 * drain that may hold its samples has been written, however far the writer
 * lags behind the drains queued to it (a fake proc root here). */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "proctable.h"
#include "tests.h"

#define PID 42
#define START_NS 123450000000ULL /* 12345 clock ticks of 10 ms */

static char root[] = "/tmp/profd-proctable-XXXXXX";

static void set_alive(bool alive) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        FILE *f;

        CHECK(asprintf(&dir, "%s/%d", root, PID) > 0);
        CHECK(asprintf(&path, "%s/stat", dir) > 0);
        if (!alive) {
                CHECK_INT_EQ(unlink(path), 0);
                return;
        }
        (void) mkdir(dir, 0755);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        /* fields 3..21, then starttime (22) in clock ticks */
        fprintf(f, "%d (spin) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
                START_NS / (1000000000ULL / (unsigned long long) (hz > 0 ? hz : 100)));
        fclose(f);
}

static proctable *table_with_process(void) {
        proctable *t = NULL;
        struct proc *p = NULL;
        bool vanished;

        CHECK_INT_EQ(proctable_new(NULL, root, &t), 0);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS, "spin", &p, &vanished), 0);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        return t;
}

/* The writer keeps up: found gone after drain 10 with nothing more queued;
 * drain 11 (the generation being collected then) and drain 12 (one taken
 * out of the kernel but not yet queued, had the manager been between the
 * two) may still hold samples. */
static void test_forgotten_two_drains_after_exit(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        proctable_prune(t, 10, 10);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        set_alive(false);
        proctable_prune(t, 11, 11); /* found gone */
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_prune(t, 12, 12);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_prune(t, 13, 13);
        CHECK(proctable_get(t, PID, START_NS) == NULL);
        CHECK_INT_EQ((int) proctable_size(t), 0);
        proctable_free(t);
}

/* The writer lags: when it finds the process gone after writing drain 3,
 * drains up to 9 are queued already, each with samples of the process. */
static void test_kept_while_the_writer_lags(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        set_alive(false);
        proctable_prune(t, 3, 9);
        for (uint64_t seq = 4; seq <= 10; seq++) {
                proctable_prune(t, seq, 12);
                CHECK(proctable_get(t, PID, START_NS) != NULL);
        }
        proctable_prune(t, 11, 12);
        CHECK(proctable_get(t, PID, START_NS) == NULL);
        proctable_free(t);
}

/* A process alive at every prune stays, whatever the sequence numbers. */
static void test_live_process_kept(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        for (uint64_t seq = 1; seq < 20; seq++)
                proctable_prune(t, seq, seq + 5);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_free(t);
        set_alive(false);
}

int main(void) {
        _cleanup_free_ char *cmd = NULL;

        CHECK(mkdtemp(root) != NULL);
        test_forgotten_two_drains_after_exit();
        test_kept_while_the_writer_lags();
        test_live_process_kept();
        CHECK(asprintf(&cmd, "rm -rf %s", root) > 0);
        CHECK_INT_EQ(system(cmd), 0);
        TESTS_DONE();
}
