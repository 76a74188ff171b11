/* /proc parsers: real-world lines parse to the right fields; malformed ones
 * are refused rather than half-read. */
#include <errno.h>
#include <stdlib.h>

#include "procmaps.h"
#include "tests.h"

static void test_maps_line_with_path(void) {
        struct procmap m;

        CHECK_INT_EQ(procmap_parse_line("7f1c2a400000-7f1c2a428000 r-xp 00028000 fe:01 1572915    "
                                        "/usr/lib/x86_64-linux-gnu/libc.so.6\n", &m), 0);
        CHECK_INT_EQ(m.start, 0x7f1c2a400000ULL);
        CHECK_INT_EQ(m.end, 0x7f1c2a428000ULL);
        CHECK_INT_EQ(m.offset, 0x28000);
        CHECK_INT_EQ(m.dev_major, 0xfe);
        CHECK_INT_EQ(m.dev_minor, 1);
        CHECK_INT_EQ(m.inode, 1572915);
        CHECK(m.readable && !m.writable && m.executable && !m.shared);
        CHECK_STR_EQ(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        procmap_done(&m);
}

static void test_maps_line_special_and_anonymous(void) {
        struct procmap m;

        CHECK_INT_EQ(procmap_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", &m), 0);
        CHECK_STR_EQ(m.path, "[vsyscall]");
        CHECK(m.executable && !m.readable);
        procmap_done(&m);
        CHECK_INT_EQ(procmap_parse_line("7ffd1000-7ffd2000 rw-s 00000000 00:00 0", &m), 0);
        CHECK(m.path == NULL && m.shared);
        procmap_done(&m);
        /* a deleted file keeps its suffix; spaces in names are kept */
        CHECK_INT_EQ(procmap_parse_line("400000-401000 r-xp 00000000 08:02 42 /tmp/my prog (deleted)", &m), 0);
        CHECK_STR_EQ(m.path, "/tmp/my prog (deleted)");
        procmap_done(&m);
}

/* Only executable mappings wanted (a new process's snapshot, the
 * unwinder's load): the same fields, the path copied only for them. */
static void test_maps_exec_lines(void) {
        struct procmap m;

        CHECK_INT_EQ(procmap_parse_exec_line("7f1c2a400000-7f1c2a428000 r-xp 00028000 FE:01 1572915    "
                                             "/usr/lib/x86_64-linux-gnu/libc.so.6\n", &m), 1);
        CHECK_INT_EQ(m.start, 0x7f1c2a400000ULL);
        CHECK_INT_EQ(m.end, 0x7f1c2a428000ULL);
        CHECK_INT_EQ(m.offset, 0x28000);
        CHECK_INT_EQ(m.dev_major, 0xfe);
        CHECK_INT_EQ(m.inode, 1572915);
        CHECK_STR_EQ(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        procmap_done(&m);
        CHECK_INT_EQ(procmap_parse_exec_line("7f1c2a428000-7f1c2a5bd000 r--p 001bd000 fe:01 1572915    "
                                             "/usr/lib/x86_64-linux-gnu/libc.so.6", &m), 0);
        CHECK(m.path == NULL && !m.executable);
        CHECK_INT_EQ(m.offset, 0x1bd000);
        CHECK_INT_EQ(procmap_parse_exec_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]",
                                             &m), 1);
        CHECK_STR_EQ(m.path, "[vsyscall]");
        procmap_done(&m);
        CHECK_INT_EQ(procmap_parse_exec_line("7ffd1000-7ffd2000 rw-s 00000000 00:00 0", &m), 0);
        CHECK(m.path == NULL && m.shared);
}

static void test_maps_line_malformed(void) {
        const char *bad[] = {
                "",
                "7f00-7e00 r-xp 00000000 00:00 0",          /* end before start */
                "7f00 r-xp 00000000 00:00 0",               /* no range */
                "7f00-7f10 rxp 00000000 00:00 0",           /* short perms */
                "7f00-7f10 r-xq 00000000 00:00 0",          /* bad sharing flag */
                "7f00-7f10 r-xp 0000zz00 00:00 0",          /* bad offset */
                "7f00-7f10 r-xp 00000000 00-00 0",          /* bad device */
                "7f00-7f10 r-xp 00000000 00:00 x",          /* bad inode */
                "7f00-7f10 r-xp 00000000 00:00 12abc /x",   /* trailing garbage on inode */
                "-7f10 r-xp 00000000 00:00 0",
                "11111111111111111-7f10 r-xp 00000000 00:00 0", /* over 64 bits */
                "7f00-7f10 r-xp 00000000 00:00 0 /a\n7f10-7f20 r-xp 0 00:00 0 /b", /* two lines */
        };
        struct procmap m;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = procmap_parse_line(bad[i], &m);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
                CHECK_INT_EQ(r, -EINVAL);
                CHECK_INT_EQ(procmap_parse_exec_line(bad[i], &m), -EINVAL);
        }
}

static void test_stat_starttime_with_hostile_comm(void) {
        /* comm may hold spaces and ')': the parser must start after the last ')' */
        const char *stat = "4242 (evil) 1 2 3 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 "
                           "987654 12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        uint64_t ticks = 0;

        CHECK_INT_EQ(procstat_parse_starttime(stat, &ticks), 0);
        CHECK_INT_EQ(ticks, 987654);
        CHECK_INT_EQ(procstat_parse_starttime("12 (short) S 1 2", &ticks), -EINVAL);
        CHECK_INT_EQ(procstat_parse_starttime("no parenthesis", &ticks), -EINVAL);
}

static void test_status_uid_and_cgroup(void) {
        uint32_t uid = 0;
        char *cg = NULL;

        CHECK_INT_EQ(procstatus_parse_uid("Name:\tbash\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\n", &uid), 0);
        CHECK_INT_EQ(uid, 1000);
        CHECK_INT_EQ(procstatus_parse_uid("Name:\tbash\n", &uid), -EINVAL);
        /* a setuid program: real uid 1000, effective 0 */
        CHECK_INT_EQ(procstatus_parse_euid("Uid:\t1000\t0\t0\t0\n", &uid), 0);
        CHECK_INT_EQ(uid, 0);
        CHECK_INT_EQ(procstatus_parse_euid("Uid:\t1000\n", &uid), -EINVAL);
        CHECK_INT_EQ(proccgroup_parse_v2("0::/system.slice/nginx.service\n", &cg), 0);
        CHECK_STR_EQ(cg, "/system.slice/nginx.service");
        free(cg);
        CHECK_INT_EQ(proccgroup_parse_v2("1:name=systemd:/user.slice\n", &cg), -ENOENT);
}

/* Two reads of the same ranges agree; a range added, moved, grown or
 * taken away, or the same ranges in another order, do not. */
static void test_ranges_signature(void) {
        uint64_t ab = procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x5000, 0x6000);

        CHECK(ab == procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x5000, 0x6000));
        CHECK(ab != procmap_signature_add(0, 0x1000, 0x2000));
        CHECK(ab != procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x5000, 0x7000));
        CHECK(ab != procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x4000, 0x6000));
        CHECK(ab != procmap_signature_add(procmap_signature_add(0, 0x5000, 0x6000), 0x1000, 0x2000));
        CHECK(procmap_signature_add(0, 0x1000, 0x2000) != 0);
}

int main(void) {
        test_maps_line_with_path();
        test_maps_line_special_and_anonymous();
        test_maps_exec_lines();
        test_maps_line_malformed();
        test_stat_starttime_with_hostile_comm();
        test_status_uid_and_cgroup();
        test_ranges_signature();
        TESTS_DONE();
}
