/* Drains as ClickHouse INSERT bodies (daemon/export/chbatch.c): fields
 * escaped as TabSeparated wants, rows in the column order of the INSERT
 * statements, stacks and frames named by content with ids that never
 * change (they are part of the schema: the expected values below were
 * computed independently, in Python, from the definition in chbatch.h),
 * sent once per day and again after a failed batch; schema version 2's
 * stack ends, unresolved reasons and drop rows. Also how the export reads
 * ClickHouse's errors (daemon/export/exporter.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "chbatch.h"
#include "exporter.h"
#include "tests.h"

#define S 1000000000ULL
/* 2025-11-24 16:00:00 UTC */
#define DAY1 (1764000000ULL * S)

static const struct store_frame_out frame_main = {
        .name = "main", .raw_name = "main", .module = "/usr/bin/app", .build_id = "3f9a",
        .address = 0x1234, .line = 42, .has_address = true, .resolved = true,
};
static const struct store_frame_out frame_kernel = {
        .name = "do_syscall_64", .raw_name = "do_syscall_64", .module = "[kernel.kallsyms]",
        .address = 0xffffffff81000000ULL, .has_address = true, .kernel = true, .resolved = true,
};

static int count_lines(const char *s, size_t len) {
        int n = 0;
        for (size_t i = 0; i < len; i++)
                n += s[i] == '\n';
        return n;
}

static void test_escaping(void) {
        struct chbuf b = {};

        CHECK_INT_EQ(chbuf_escaped(&b, "a\tb\nc\\d\re\bf\fg"), 0);
        CHECK_STR_EQ(b.data, "a\\tb\\nc\\\\d\\re\\bf\\fg");
        b.len = 0;
        CHECK_INT_EQ(chbuf_escaped(&b, NULL), 0);
        CHECK_INT_EQ(b.len, 0);
        CHECK_INT_EQ(chbuf_escaped(&b, "plain 'quoted' ü"), 0);
        CHECK_STR_EQ(b.data, "plain 'quoted' ü");
        free(b.data);
}

static void test_ids_are_fixed_by_content(void) {
        struct store_frame_out f = frame_main;
        uint64_t ids[2];

        /* the definition's values, computed outside this code */
        CHECK_INT_EQ(chbatch_frame_id(&frame_main), (long long) 0xabd1ef66fcce2f90ULL);
        CHECK_INT_EQ(chbatch_frame_id(&frame_kernel), (long long) 0xf6d2191f470bdf0eULL);
        ids[0] = chbatch_frame_id(&frame_main);
        ids[1] = chbatch_frame_id(&frame_kernel);
        CHECK_INT_EQ(chbatch_stack_id(ids, 2, 0), (long long) 0xbff609ec45934f1cULL);
        /* the end is part of the stack (as in the store): version 2 */
        CHECK_INT_EQ(chbatch_stack_id(ids, 2, PROFD_END_DEPTH), (long long) 0x4b36b56f9b286be6ULL);
        CHECK_INT_EQ(chbatch_stack_id(ids, 2, STORE_END_UNKNOWN), (long long) 0x63c038bb98bb237dULL);
        CHECK_INT_EQ(chbatch_user_end(STORE_END_UNKNOWN), CHBATCH_END_UNKNOWN);
        CHECK_INT_EQ(chbatch_user_end(STORE_END_LOST), STORE_END_LOST);
        CHECK_INT_EQ(chbatch_user_end(0), 0);
        CHECK_INT_EQ(chbatch_user_end(1000), CHBATCH_END_UNKNOWN);
        /* an unresolved frame's reason counts when known; unknown (0) keeps
         * the id version 1 gave it */
        {
                struct store_frame_out u = {
                        .name = "app+0x99", .raw_name = "", .module = "/usr/bin/app", .build_id = "3f9a",
                        .address = 0x99, .has_address = true, .unresolved = STORE_UNRESOLVED_NO_FILE,
                };
                uint64_t uid;

                CHECK_INT_EQ(chbatch_frame_id(&u), (long long) 0x857839ad0998e0e2ULL);
                uid = chbatch_frame_id(&u);
                CHECK_INT_EQ(chbatch_stack_id(&uid, 1, PROFD_END_UNSUPPORTED), (long long) 0x534f53a6864941d3ULL);
                u.unresolved = STORE_UNRESOLVED_NONE;
                CHECK_INT_EQ(chbatch_frame_id(&u), (long long) 0x585bb4c73c82b342ULL);
        }

        /* every field counts */
        f.line = 43;
        CHECK(chbatch_frame_id(&f) != chbatch_frame_id(&frame_main));
        f = frame_main;
        f.inlined = true;
        CHECK(chbatch_frame_id(&f) != chbatch_frame_id(&frame_main));
        f = frame_main;
        f.build_id = NULL;
        CHECK(chbatch_frame_id(&f) != chbatch_frame_id(&frame_main));
        /* and where one string ends: ("mai", "nmain") is not ("main", "main") */
        f = frame_main;
        f.name = "mai";
        f.raw_name = "nmain";
        CHECK(chbatch_frame_id(&f) != chbatch_frame_id(&frame_main));
        /* NULL is stored as '', so it names the same frame */
        f = frame_main;
        f.file = "";
        CHECK_INT_EQ(chbatch_frame_id(&f), chbatch_frame_id(&frame_main));
        /* order of frames matters, and so does the count */
        {
                uint64_t rev[2] = { ids[1], ids[0] };
                CHECK(chbatch_stack_id(rev, 2, 0) != chbatch_stack_id(ids, 2, 0));
                CHECK(chbatch_stack_id(ids, 1, 0) != chbatch_stack_id(ids, 2, 0));
        }
}

static void test_days(void) {
        char d[11];

        chbatch_day(0, d);
        CHECK_STR_EQ(d, "1970-01-01");
        chbatch_day(DAY1, d);
        CHECK_STR_EQ(d, "2025-11-24");
        chbatch_day((1764028800ULL - 1) * S + S - 1, d); /* the last ns of that day */
        CHECK_STR_EQ(d, "2025-11-24");
        chbatch_day(1764028800ULL * S, d);
        CHECK_STR_EQ(d, "2025-11-25");
}

static struct store_outbox_sample sample(int64_t stack_id, const struct store_frame_out *frames, size_t n,
                                         uint64_t value) {
        return (struct store_outbox_sample) {
                .pid = 1234, .process_start_ns = 5678, .comm = "app\tx", .exe = "/usr/bin/app", .cgroup = "/a.slice",
                .unit = NULL, .container = NULL, .have_uid = true, .uid = 1000, .tid = 1235, .cgroup_id = 77,
                .kind = 1, .state = 3, .peer_tid = 0, .stack_id = stack_id, .frames = frames, .n_frames = n,
                .value = value,
        };
}

static void test_batches(void) {
        struct store_frame_out two[2] = { frame_main, frame_kernel };
        struct store_frame_out unresolved = {
                .name = "app+0x99", .raw_name = "", .module = "/usr/bin/app", .build_id = "3f9a",
                .address = 0x99, .has_address = true, .unresolved = STORE_UNRESOLVED_NO_FILE,
        };
        struct store_outbox_sample a = sample(7, two, 2, 100), b = sample(7, two, 2, 5), c = sample(9, two, 1, 1),
                                   d = sample(10, &unresolved, 1, 3);
        char expected[512];
        chbatch *batch;

        d.user_end = PROFD_END_UNSUPPORTED;
        CHECK_INT_EQ(chbatch_new(&batch), 0);
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drop(batch, "map_full", 1), -EINVAL); /* no drain yet */
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 10 * S, DAY1), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_add(batch, &b), 0); /* same stack: no new stack or frame */
        CHECK_INT_EQ(chbatch_add(batch, &c), 0); /* another stack, of a frame already there */
        CHECK_INT_EQ(chbatch_drains(batch), 1);
        CHECK_INT_EQ(chbatch_samples(batch).rows, 3);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 2);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 2);
        CHECK_INT_EQ(count_lines(chbatch_samples(batch).data, chbatch_samples(batch).len), 3);
        /* the first sample row, field by field in the INSERT's column order */
        snprintf(expected, sizeof(expected),
                 "web-1\t%llu\t%llu\t1764000000\t2025-11-24\t1234\t5678\tapp\\tx\t/usr/bin/app\t1000\t/a.slice\t\t\t"
                 "1235\t77\t1\t3\t0\t%llu\t100\n",
                 (unsigned long long) (DAY1 - 10 * S), (unsigned long long) DAY1, 0xbff609ec45934f1cULL);
        CHECK(strncmp(chbatch_samples(batch).data, expected, strlen(expected)) == 0);
        /* user_end last: 0, complete */
        snprintf(expected, sizeof(expected), "2025-11-24\t%llu\t[%llu,%llu]\t0\n", 0xbff609ec45934f1cULL,
                 0xabd1ef66fcce2f90ULL, 0xf6d2191f470bdf0eULL);
        CHECK(strncmp(chbatch_stacks(batch).data, expected, strlen(expected)) == 0);
        /* unresolved last: 0, a frame with a name */
        snprintf(expected, sizeof(expected),
                 "2025-11-24\t%llu\tmain\tmain\t/usr/bin/app\t3f9a\t\t4660\t42\t1\t0\t1\t0\t0\t0\n",
                 0xabd1ef66fcce2f90ULL);
        CHECK(strncmp(chbatch_frames(batch).data, expected, strlen(expected)) == 0);
        CHECK(strstr(chbatch_insert_stacks, "(day, id, frames, user_end)") != NULL);
        CHECK(strstr(chbatch_insert_frames, "inlined, jit, unresolved)") != NULL);

        /* a truncated stack of an unresolved frame: its end and its reason */
        CHECK_INT_EQ(chbatch_add(batch, &d), 0);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 3);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 3);
        snprintf(expected, sizeof(expected), "2025-11-24\t%llu\t[%llu]\t4\n", 0x534f53a6864941d3ULL,
                 0x857839ad0998e0e2ULL);
        CHECK(strstr(chbatch_stacks(batch).data, expected) != NULL);
        snprintf(expected, sizeof(expected),
                 "2025-11-24\t%llu\tapp+0x99\t\t/usr/bin/app\t3f9a\t\t153\t0\t1\t0\t0\t0\t0\t2\n",
                 0x857839ad0998e0e2ULL);
        CHECK(strstr(chbatch_frames(batch).data, expected) != NULL);

        /* drop counters of the drain: the drain's columns, reason, count;
         * a count of 0 is no row */
        CHECK_INT_EQ(chbatch_drop(batch, "map_full", 12), 0);
        CHECK_INT_EQ(chbatch_drop(batch, "ringbuf_full", 0), 0);
        CHECK_INT_EQ(chbatch_drop(batch, "stack\tmap", 3), 0);
        CHECK_INT_EQ(chbatch_drops(batch).rows, 2);
        snprintf(expected, sizeof(expected), "web-1\t%llu\t%llu\t1764000000\t2025-11-24\tmap_full\t12\n"
                 "web-1\t%llu\t%llu\t1764000000\t2025-11-24\tstack\\tmap\t3\n",
                 (unsigned long long) (DAY1 - 10 * S), (unsigned long long) DAY1,
                 (unsigned long long) (DAY1 - 10 * S), (unsigned long long) DAY1);
        CHECK_STR_EQ(chbatch_drops(batch).data, expected);
        CHECK(strstr(chbatch_insert_drops, "profd.drops (host, drain_start, drain_end, time, day, reason, value)") !=
              NULL);
        CHECK(strstr(chbatch_insert_samples, "(host, drain_start, drain_end, time, day, pid, process_start, comm, exe, "
                                             "uid, cgroup, unit, container, tid, cgroup_id, kind, state, peer_tid, "
                                             "stack, value)") != NULL);

        /* a drain of another day cannot join the batch: one partition per batch */
        CHECK_INT_EQ(chbatch_drain(batch, DAY1, DAY1 + 86400 * S), -EXDEV);

        /* not committed (the insert failed): the retry sends them again */
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drops(batch).rows, 0); /* a new batch starts without the last one's */
        CHECK_INT_EQ(chbatch_drain(batch, DAY1, DAY1 + S), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 1);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 2);
        /* two drains' drops in one body, each with its own columns */
        CHECK_INT_EQ(chbatch_drop(batch, "map_full", 1), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 + S / 2, DAY1 + 2 * S / 2 + S), 0);
        CHECK_INT_EQ(chbatch_drop(batch, "map_full", 2), 0);
        CHECK_INT_EQ(chbatch_drops(batch).rows, 2);
        CHECK(strstr(chbatch_drops(batch).data, "\t1764000001\t2025-11-24\tmap_full\t1\n") != NULL);
        CHECK(strstr(chbatch_drops(batch).data, "\t1764000002\t2025-11-24\tmap_full\t2\n") != NULL);
        CHECK_INT_EQ(chbatch_commit(batch), 0);

        /* stored: the same day does not get them again, even from another store id */
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 + S, DAY1 + 2 * S), 0);
        a.stack_id = 8;
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_samples(batch).rows, 1);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 0);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 0);
        CHECK_INT_EQ(chbatch_commit(batch), 0);

        /* the next day's partitions need their own copies */
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 + 86400 * S, DAY1 + 86401 * S), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 1);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 2);
        CHECK(strncmp(chbatch_stacks(batch).data, "2025-11-25\t", 11) == 0);

        /* forgotten (ClickHouse lost data): sent again */
        CHECK_INT_EQ(chbatch_commit(batch), 0);
        chbatch_forget(batch);
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 + 86401 * S, DAY1 + 86402 * S), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_stacks(batch).rows, 1);
        chbatch_free(batch);
}

/* The timeline (version 3): a row per sample with its own time, the
 * process columns and stack of the drain's sample row it is one of; a
 * tick naming no row of the drain is refused, not sent with a stack
 * ClickHouse lacks; each drain names its own rows. */
static void test_timeline(void) {
        struct store_frame_out two[2] = { frame_main, frame_kernel };
        struct store_outbox_sample a = sample(7, two, 2, 2), c = sample(9, two, 1, 1);
        struct store_outbox_tick t1 = { .time_ns = DAY1 - 9 * S + 123456000, .process_id = 3, .stack_id = 7, .tid = 1235 },
                                 t2 = { .time_ns = DAY1 - 2 * S, .process_id = 4, .stack_id = 9, .tid = 99 };
        char expected[512];
        chbatch *batch;

        a.process_id = 3;
        a.kind = c.kind = 0;
        c.process_id = 4;
        c.pid = 4321;
        c.have_uid = false;
        c.unit = "web.service";
        CHECK_INT_EQ(chbatch_new(&batch), 0);
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t1), -EINVAL); /* no drain yet */
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 10 * S, DAY1), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t1), -ENOENT); /* its sample row is not there yet */
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_add(batch, &c), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t1), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t2), 0);
        t2.stack_id = 8; /* no row of the drain has it */
        CHECK_INT_EQ(chbatch_tick(batch, &t2), -ENOENT);
        CHECK_INT_EQ(chbatch_timeline(batch).rows, 2);
        CHECK_INT_EQ(count_lines(chbatch_timeline(batch).data, chbatch_timeline(batch).len), 2);
        snprintf(expected, sizeof(expected),
                 "web-1\t%llu\t%llu\t2025-11-24\t%llu\t1763999991\t1234\t5678\tapp\\tx\t/usr/bin/app\t1000\t"
                 "/a.slice\t\t\t1235\t%llu\t0\t0\n"
                 "web-1\t%llu\t%llu\t2025-11-24\t%llu\t1763999998\t4321\t5678\tapp\\tx\t/usr/bin/app\t-1\t"
                 "/a.slice\tweb.service\t\t99\t%llu\t0\t0\n",
                 (unsigned long long) (DAY1 - 10 * S), (unsigned long long) DAY1, (unsigned long long) t1.time_ns,
                 0xbff609ec45934f1cULL, (unsigned long long) (DAY1 - 10 * S), (unsigned long long) DAY1,
                 (unsigned long long) t2.time_ns, (unsigned long long) chbatch_stack_id((uint64_t[]) {
                         chbatch_frame_id(&frame_main) }, 1, 0));
        CHECK_STR_EQ(chbatch_timeline(batch).data, expected);
        CHECK(strstr(chbatch_insert_timeline, "profd.timeline (host, drain_start, drain_end, day, t, time, pid, "
                                              "process_start, comm, exe, uid, cgroup, unit, container, tid, stack, "
                                              "frequency_hz, base_hz)") != NULL);

        /* the next drain names its own rows: the last one's are gone */
        t2.stack_id = 9;
        CHECK_INT_EQ(chbatch_drain(batch, DAY1, DAY1 + S), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t2), -ENOENT);
        CHECK_INT_EQ(chbatch_timeline(batch).rows, 2);
        chbatch_free(batch);
}

/* Version 5 (issue 44): a raised drain's timeline rows carry its rate and
 * the base its samples rows were weighted to; a drain at the base, or of
 * an unknown rate (before schema 14), carries 0 and 0, as every row
 * exported before; the next drain starts at the base again. */
static void test_timeline_rows_carry_a_raise(void) {
        struct store_frame_out one[1] = { frame_main };
        struct store_outbox_sample a = sample(7, one, 1, 3);
        struct store_outbox_tick t = { .time_ns = DAY1 - 9 * S, .process_id = 3, .stack_id = 7, .tid = 5 };
        struct chbatch_body body;
        chbatch *batch;

        a.process_id = 3;
        a.kind = 0;
        CHECK_INT_EQ(chbatch_new(&batch), 0);
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drain_rate(batch, 499, 49), -EINVAL); /* no drain yet */
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 10 * S, DAY1 - 9 * S), 0);
        CHECK_INT_EQ(chbatch_drain_rate(batch, 499, 49), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t), 0);
        t.time_ns += S;
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 9 * S, DAY1 - 8 * S), 0); /* no rate said: the base */
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t), 0);
        t.time_ns += S;
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 8 * S, DAY1 - 7 * S), 0);
        CHECK_INT_EQ(chbatch_drain_rate(batch, 49, 49), 0); /* at the base */
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 7 * S, DAY1 - 6 * S), 0);
        CHECK_INT_EQ(chbatch_drain_rate(batch, 0, 49), 0); /* unknown rate */
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 6 * S, DAY1 - 5 * S), 0);
        CHECK_INT_EQ(chbatch_drain_rate(batch, 499, 0), 0); /* no cpu base: not weighted */
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_tick(batch, &t), 0);
        body = chbatch_timeline(batch);
        CHECK_INT_EQ(body.rows, 5);
        CHECK_INT_EQ(count_lines(body.data, body.len), 5);
        /* the last two columns of each row, in order */
        {
                const char *want[] = { "\t499\t49\n", "\t0\t0\n", "\t0\t0\n", "\t0\t0\n", "\t0\t0\n" };
                const char *p = body.data;

                for (size_t i = 0; i < 5; i++) {
                        const char *nl = memchr(p, '\n', body.len - (size_t) (p - body.data));

                        CHECK(nl != NULL);
                        CHECK(nl + 1 - p > (ptrdiff_t) strlen(want[i]));
                        CHECK(strncmp(nl + 1 - strlen(want[i]), want[i], strlen(want[i])) == 0);
                        p = nl + 1;
                }
        }
        /* a new batch starts without the last one's rows */
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_timeline(batch).rows, 0);
        CHECK_INT_EQ(chbatch_timeline(batch).len, 0);
        chbatch_free(batch);
}

/* A CPython frame goes to ClickHouse as every frame does: qualname,
 * module and file the .py file, its "python-" build_id (what tells fleet
 * answers it is Python: common/protocol.h), address and line the line.
 * Version 2's columns carry it whole; nothing new in the schema. */
static void test_python_frames_are_exported_whole(void) {
        const struct store_frame_out py[2] = {
                frame_main,
                { .name = "Worker.run", .raw_name = "Worker.run", .module = "/srv/app/work.py",
                  .build_id = "python-fedcba9876543210", .file = "/srv/app/work.py", .address = 41, .line = 41,
                  .has_address = true, .resolved = true },
        };
        struct store_outbox_sample a = sample(11, py, 2, 9);
        char expected[512];
        chbatch *batch;

        CHECK_INT_EQ(chbatch_new(&batch), 0);
        CHECK_INT_EQ(chbatch_begin(batch, "web-1"), 0);
        CHECK_INT_EQ(chbatch_drain(batch, DAY1 - 10 * S, DAY1), 0);
        CHECK_INT_EQ(chbatch_add(batch, &a), 0);
        CHECK_INT_EQ(chbatch_frames(batch).rows, 2);
        snprintf(expected, sizeof(expected),
                 "2025-11-24\t%llu\tWorker.run\tWorker.run\t/srv/app/work.py\tpython-fedcba9876543210\t"
                 "/srv/app/work.py\t41\t41\t1\t0\t1\t0\t0\t0\n",
                 (unsigned long long) chbatch_frame_id(&py[1]));
        CHECK(strstr(chbatch_frames(batch).data, expected) != NULL);
        chbatch_free(batch);
}

static void test_clickhouse_errors(void) {
        CHECK_INT_EQ(exporter_clickhouse_code("Code: 193, e.displayText() = DB::Exception: Wrong password for user x"),
                     193);
        CHECK_INT_EQ(exporter_clickhouse_code("Code: 60, e.displayText() = DB::Exception: Table profd.x doesn't exist"),
                     60);
        CHECK_INT_EQ(exporter_clickhouse_code("Bad gateway"), -1);
        CHECK_INT_EQ(exporter_clickhouse_code(NULL), -1);
        CHECK_INT_EQ(exporter_classify(401, 193), EXPORTER_ERROR_AUTH);
        CHECK_INT_EQ(exporter_classify(500, 164), EXPORTER_ERROR_AUTH); /* readonly user */
        CHECK_INT_EQ(exporter_classify(404, 60), EXPORTER_ERROR_SCHEMA);
        CHECK_INT_EQ(exporter_classify(500, 81), EXPORTER_ERROR_SCHEMA);
        CHECK_INT_EQ(exporter_classify(500, 279), EXPORTER_ERROR_CONNECT); /* a shard down */
        CHECK_INT_EQ(exporter_classify(500, 159), EXPORTER_ERROR_TIMEOUT);
        CHECK_INT_EQ(exporter_classify(403, -1), EXPORTER_ERROR_AUTH);
        CHECK_INT_EQ(exporter_classify(502, -1), EXPORTER_ERROR_HTTP);
        CHECK_INT_EQ(exporter_classify(500, 241), EXPORTER_ERROR_HTTP); /* memory limit: another refusal */
}

int main(void) {
        test_escaping();
        test_ids_are_fixed_by_content();
        test_days();
        test_batches();
        test_timeline();
        test_timeline_rows_carry_a_raise();
        test_python_frames_are_exported_whole();
        test_clickhouse_errors();
        TESTS_DONE();
}
