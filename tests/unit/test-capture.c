/* Unit test of capture conditions (common/capture.c) and captures'
 * decisions (daemon/capture-util.c): the grammar and its errors, the
 * pressure files as the kernel writes them and as it must not, CPU
 * shares, edges, the cool-down and the budget. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture-util.h"
#include "capture.h"
#include "macro.h"
#include "tests.h"

/* Parses s and writes it back; NULL (and the error in *err) if refused. */
static char *roundtrip(const char *s, const char **err) {
        static char buf[CAPTURE_CGROUP_MAX + 64];
        struct capture_cond c;

        if (capture_cond_parse(s, &c, err) < 0)
                return NULL;
        CHECK(*err == NULL);
        capture_cond_format(&c, buf, sizeof(buf));
        capture_cond_done(&c);
        return buf;
}

static void check_refused(const char *s, const char *message_part) {
        struct capture_cond c;
        const char *err = NULL;

        CHECK_INT_EQ(capture_cond_parse(s, &c, &err), -EINVAL);
        if (!err || !strstr(err, message_part))
                fprintf(stderr, "  for \"%s\": %s\n", s, err ? err : "(no message)");
        CHECK(err && strstr(err, message_part));
}

static void test_grammar(void) {
        const char *err;
        struct capture_cond c;
        char *long_path;

        CHECK_STR_EQ(roundtrip("manual", &err), "manual");
        CHECK_STR_EQ(roundtrip("oom", &err), "oom");
        CHECK_STR_EQ(roundtrip("psi:cpu>50", &err), "psi:cpu.some.avg10>50");
        CHECK_STR_EQ(roundtrip("psi:memory.full>10%", &err), "psi:memory.full.avg10>10");
        CHECK_STR_EQ(roundtrip("psi:io.avg60.full>12.5", &err), "psi:io.full.avg60>12.50");
        CHECK_STR_EQ(roundtrip("psi:io.some.avg300>0.01", &err), "psi:io.some.avg300>0.01");
        CHECK_STR_EQ(roundtrip("psi:cpu>100", &err), "psi:cpu.some.avg10>100");
        CHECK_STR_EQ(roundtrip("cpu:pid=4242>80", &err), "cpu:pid=4242>80");
        CHECK_STR_EQ(roundtrip("cpu:pid=1>250%", &err), "cpu:pid=1>250");
        CHECK_STR_EQ(roundtrip("cpu:cgroup=/system.slice/nginx.service>80", &err),
                     "cpu:cgroup=/system.slice/nginx.service>80");
        CHECK_STR_EQ(roundtrip("cpu:cgroup=/system.slice/>80", &err), "cpu:cgroup=/system.slice>80");
        CHECK_STR_EQ(roundtrip("cpu:cgroup=/>80", &err), "cpu:cgroup=/>80");
        /* a '>' in a cgroup's name: the threshold is after the last one */
        CHECK_STR_EQ(roundtrip("cpu:cgroup=/a>b>80", &err), "cpu:cgroup=/a>b>80");

        CHECK_INT_EQ(capture_cond_parse("psi:memory.full.avg60>12.34", &c, &err), 0);
        CHECK_INT_EQ(c.kind, CAPTURE_PSI);
        CHECK_INT_EQ(c.resource, CAPTURE_PSI_MEMORY);
        CHECK_INT_EQ(c.line, CAPTURE_PSI_FULL);
        CHECK_INT_EQ(c.window, CAPTURE_PSI_AVG60);
        CHECK_INT_EQ(c.above_centi, 1234);
        capture_cond_done(&c);
        CHECK_INT_EQ(capture_cond_parse("cpu:pid=7>1.5", &c, &err), 0);
        CHECK_INT_EQ(c.kind, CAPTURE_CPU_PID);
        CHECK_INT_EQ(c.pid, 7);
        CHECK_INT_EQ(c.above_centi, 150);
        capture_cond_done(&c);

        check_refused("", "psi:..., cpu:..., oom or manual");
        check_refused("disk>5", "unknown capture condition");
        check_refused("OOM", "unknown capture condition");
        check_refused("psi:cpu", "needs a threshold");
        check_refused("psi:disk>5", "cpu, memory or io");
        check_refused("psi:>5", "cpu, memory or io");
        check_refused("psi:memory.most>5", ".some or .full");
        check_refused("psi:memory.>5", ".some or .full");
        check_refused("psi:cpu.full>5", "no system-wide full pressure");
        check_refused("psi:cpu>101", "from 0 to 100");
        check_refused("psi:cpu>-1", "from 0 to 100");
        check_refused("psi:cpu>", "from 0 to 100");
        check_refused("psi:cpu>5.", "from 0 to 100");
        check_refused("psi:cpu>5.123", "from 0 to 100");
        check_refused("psi:cpu>5%%", "from 0 to 100");
        check_refused("psi:cpu>5%x", "from 0 to 100");
        check_refused("psi:cpu>abc", "from 0 to 100");
        check_refused("psi:cpu>99999999999999999999999", "from 0 to 100");
        check_refused("cpu:80", "pid= or cgroup=");
        check_refused("cpu:pid=>80", "needs a process id");
        check_refused("cpu:pid=0>80", "needs a process id");
        check_refused("cpu:pid=12a>80", "needs a process id");
        check_refused("cpu:pid=99999999999>80", "needs a process id");
        check_refused("cpu:pid=5", "needs a threshold");
        check_refused("cpu:pid=5>100001", "percentage of one CPU");
        check_refused("cpu:cgroup=system.slice>80", "absolute path");
        check_refused("cpu:cgroup=/a/../../etc>80", "without . or ..");
        check_refused("cpu:cgroup=/a/./b>80", "without . or ..");
        check_refused("cpu:cgroup=/a//b>80", "absolute path");
        check_refused("cpu:cgroup=/a\nb>80", "absolute path");
        check_refused("cpu:cgroup=>80", "absolute path");
        long_path = malloc(CAPTURE_CGROUP_MAX + 32);
        CHECK(long_path);
        if (long_path) {
                strcpy(long_path, "cpu:cgroup=/");
                memset(long_path + 12, 'a', CAPTURE_CGROUP_MAX);
                strcpy(long_path + 12 + CAPTURE_CGROUP_MAX, ">5");
                check_refused(long_path, "absolute path");
                free(long_path);
        }
}

static void test_psi(void) {
        static const char kernel[] = "some avg10=40.16 avg60=57.03 avg300=45.36 total=16852154790\n"
                                     "full avg10=0.00 avg60=100.00 avg300=0.07 total=0\n";
        struct psi_reading r;
        struct capture_cond c;
        const char *err;
        uint32_t v;

        CHECK_INT_EQ(psi_parse(kernel, strlen(kernel), &r), 0);
        CHECK_INT_EQ(r.avg_centi[CAPTURE_PSI_SOME][CAPTURE_PSI_AVG10], 4016);
        CHECK_INT_EQ(r.avg_centi[CAPTURE_PSI_SOME][CAPTURE_PSI_AVG300], 4536);
        CHECK_INT_EQ(r.avg_centi[CAPTURE_PSI_FULL][CAPTURE_PSI_AVG60], 10000);
        CHECK_INT_EQ(r.total_us[CAPTURE_PSI_SOME], 16852154790ULL);
        CHECK(r.has[CAPTURE_PSI_FULL]);
        CHECK_INT_EQ(capture_cond_parse("psi:memory.full.avg300>0.05", &c, &err), 0);
        CHECK_INT_EQ(psi_value(&r, &c, &v), 0);
        CHECK_INT_EQ(v, 7);
        /* no newline at the end, no full line (older kernels' cpu) */
        CHECK_INT_EQ(psi_parse(kernel, 60, &r), 0);
        CHECK(!r.has[CAPTURE_PSI_FULL]);
        CHECK_INT_EQ(psi_value(&r, &c, &v), -ENODATA);
        c.kind = CAPTURE_OOM;
        CHECK_INT_EQ(psi_value(&r, &c, &v), -EINVAL);

        CHECK_INT_EQ(psi_parse("", 0, &r), -EBADMSG);
        CHECK_INT_EQ(psi_parse("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 47, &r), -EBADMSG);
        {
                static const char *const bad[] = {
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=100.01 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=1000.00 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=0.0 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=0.000 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=.00 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg60=0.00 avg10=0.00 avg300=0.00 total=0\n",
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=\n",
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999\n",
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1 extra\n",
                        "some avg10=0.00 avg60=0.00 avg300=0.00\n",
                        "some avg10=0.00  avg60=0.00 avg300=0.00 total=0\n",
                        "somewhat avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\n",
                };
                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        int ret = psi_parse(bad[i], strlen(bad[i]), &r);
                        if (ret != -EBADMSG)
                                fprintf(stderr, "  accepted: %s", bad[i]);
                        CHECK_INT_EQ(ret, -EBADMSG);
                }
        }
}

static void test_cpu_and_edges(void) {
        bool above = false;

        CHECK_INT_EQ(capture_cpu_centi(0, 500000000, 1000000000), 5000);   /* half a CPU */
        CHECK_INT_EQ(capture_cpu_centi(0, 2000000000, 1000000000), 20000); /* two CPUs */
        CHECK_INT_EQ(capture_cpu_centi(10, 5, 1000000000), 0);             /* a pid reused */
        CHECK_INT_EQ(capture_cpu_centi(0, 5, 0), 0);
        CHECK_INT_EQ(capture_cpu_centi(0, UINT64_MAX, 1), UINT32_MAX);
        CHECK_INT_EQ(capture_cpu_centi(0, UINT64_MAX / 10000, 1), UINT32_MAX);

        CHECK(!capture_edge(&above, 4000, 5000));
        CHECK(capture_edge(&above, 5001, 5000));  /* rises: once */
        CHECK(!capture_edge(&above, 9000, 5000)); /* stays above */
        CHECK(!capture_edge(&above, 5000, 5000)); /* falls to it */
        CHECK(capture_edge(&above, 6000, 5000));  /* rises again */
}

static void test_gate(void) {
        const uint64_t s = 1000000000ULL;
        struct capture_gate g = { .cooldown_ns = 300 * s, .budget_bytes = 100 << 20 };

        CHECK_INT_EQ(capture_gate_ask(&g, 1000 * s, 40 << 20), CAPTURE_GRANTED);
        CHECK_INT_EQ(g.pinned_bytes, 40 << 20);
        /* a second spike within the cool-down */
        CHECK_INT_EQ(capture_gate_ask(&g, 1100 * s, 1), CAPTURE_COOLING);
        CHECK_INT_EQ(capture_gate_ask(&g, 1299 * s, 1), CAPTURE_COOLING);
        CHECK_INT_EQ(capture_gate_ask(&g, 999 * s, 1), CAPTURE_COOLING); /* the clock never goes back; if so, wait */
        CHECK_INT_EQ(g.refused[CAPTURE_COOLING], 3);
        /* after it, but the pins would pass the budget */
        CHECK_INT_EQ(capture_gate_ask(&g, 1300 * s, 61 << 20), CAPTURE_OVER_BUDGET);
        CHECK_INT_EQ(capture_gate_ask(&g, 1300 * s, UINT64_MAX), CAPTURE_OVER_BUDGET);
        CHECK_INT_EQ(g.refused[CAPTURE_OVER_BUDGET], 2);
        CHECK_INT_EQ(capture_gate_ask(&g, 1300 * s, 60 << 20), CAPTURE_GRANTED);
        CHECK_INT_EQ(g.pinned_bytes, 100 << 20);
        /* a pin removed gives its bytes back */
        capture_gate_unpin(&g, 40 << 20);
        CHECK_INT_EQ(g.pinned_bytes, 60 << 20);
        capture_gate_unpin(&g, UINT64_MAX);
        CHECK_INT_EQ(g.pinned_bytes, 0);
        CHECK_INT_EQ(capture_gate_ask(&g, 1700 * s, 100 << 20), CAPTURE_GRANTED);
        CHECK_STR_EQ(capture_verdict_name(CAPTURE_COOLING), "cooling_down");
        CHECK_STR_EQ(capture_verdict_name(_CAPTURE_VERDICT_MAX), "unknown");
}

/* /proc/PID/stat as the kernel writes it: a comm with spaces and
 * parentheses, utime 250 and stime 50 ticks at 100 Hz = 3 s. */
static void test_proc_stat(void) {
        static const char line[] =
                "4242 (my (odd) prog) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 987654 "
                "12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        uint64_t cpu = 0, start = 0;

        CHECK_INT_EQ(capture_parse_stat(line, strlen(line), 100, &cpu, &start), 0);
        CHECK_INT_EQ(cpu, 3000000000ULL);
        CHECK_INT_EQ(start, 987654);
        /* cut before starttime, a letter in utime, no comm, no ticks */
        CHECK_INT_EQ(capture_parse_stat(line, 60, 100, &cpu, &start), -EBADMSG);
        CHECK_INT_EQ(capture_parse_stat("1 (a) R 1 1 1 0 -1 0 0 0 0 0 2x0 50 0 0 20 0 3 0 9 1 1", 52, 100, &cpu, &start),
                     -EBADMSG);
        CHECK_INT_EQ(capture_parse_stat("4242 R 1", 8, 100, &cpu, &start), -EBADMSG);
        CHECK_INT_EQ(capture_parse_stat(line, strlen(line), 0, &cpu, &start), -EINVAL);
}

static void test_cgroup_cpu_stat(void) {
        static const char stat[] = "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n";
        uint64_t cpu = 0;

        CHECK_INT_EQ(capture_parse_cpu_stat(stat, strlen(stat), &cpu), 0);
        CHECK_INT_EQ(cpu, 1500000000ULL);
        CHECK_INT_EQ(capture_parse_cpu_stat("user_usec 1\n", 12, &cpu), -EBADMSG);
        CHECK_INT_EQ(capture_parse_cpu_stat("usage_usec 1x\n", 14, &cpu), -EBADMSG);
}

/* Hybrid hosts mount cgroup2 at /sys/fs/cgroup/unified, under v1's. */
static void test_cgroup2_mount(void) {
        static const char hybrid[] =
                "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
                "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
                "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        static const char escaped[] = "none /mnt/my\\040cg cgroup2 rw 0 0";
        static const char none[] = "proc /proc proc rw 0 0\ncgroup /x cgroup2x rw 0 0\n";
        char *path = NULL;

        CHECK_INT_EQ(capture_cgroup2_mount(hybrid, strlen(hybrid), &path), 0);
        CHECK_STR_EQ(path, "/sys/fs/cgroup/unified");
        free(path);
        CHECK_INT_EQ(capture_cgroup2_mount(escaped, strlen(escaped), &path), 0);
        CHECK_STR_EQ(path, "/mnt/my cg");
        free(path);
        CHECK_INT_EQ(capture_cgroup2_mount(none, strlen(none), &path), -ENOENT);
}

/* Unprivileged users watch their own processes, nothing else. */
static void test_who_may_start(void) {
        struct capture_cond pid = { .kind = CAPTURE_CPU_PID, .pid = 42 }, psi = { .kind = CAPTURE_PSI },
                            manual = { .kind = CAPTURE_MANUAL }, cg = { .kind = CAPTURE_CPU_CGROUP };
        const char *err;

        CHECK_INT_EQ(capture_may_start(&psi, true, 0, UINT32_MAX, &err), 0);
        CHECK_INT_EQ(capture_may_start(&manual, true, 1000, UINT32_MAX, &err), 0);
        CHECK_INT_EQ(capture_may_start(&pid, false, 1000, 1000, &err), 0);
        CHECK(err == NULL);
        CHECK_INT_EQ(capture_may_start(&pid, false, 1000, 0, &err), -EPERM);
        CHECK(err && strstr(err, "not yours"));
        CHECK_INT_EQ(capture_may_start(&pid, false, 1000, UINT32_MAX, &err), -EPERM);
        CHECK_INT_EQ(capture_may_start(&psi, false, 1000, 1000, &err), -EPERM);
        CHECK(err && strstr(err, "admin group"));
        CHECK_INT_EQ(capture_may_start(&manual, false, 1000, 1000, &err), -EPERM);
        CHECK_INT_EQ(capture_may_start(&cg, false, 1000, 1000, &err), -EPERM);
}

static void test_range_and_estimate(void) {
        const uint64_t s = 1000000000ULL;
        uint64_t from, to;

        capture_range(1000 * s, 300 * s, 30 * s, &from, &to);
        CHECK_INT_EQ(from, 700 * s);
        CHECK_INT_EQ(to, 1030 * s);
        capture_range(10 * s, 300 * s, UINT64_MAX, &from, &to);
        CHECK_INT_EQ(from, 0);
        CHECK_INT_EQ(to, UINT64_MAX);
        /* 1 MiB over the last 100 s: 330 s pin 3.3 MiB */
        CHECK_INT_EQ(capture_estimate_bytes(1 << 20, 100 * s, 300 * s, 30 * s), (uint64_t) (3.3 * (1 << 20)));
        CHECK_INT_EQ(capture_estimate_bytes(0, 100 * s, 300 * s, 30 * s), 0);
        CHECK_INT_EQ(capture_estimate_bytes(5, 0, 300 * s, 30 * s), 0);
        CHECK_INT_EQ(capture_estimate_bytes(UINT64_MAX, 1, UINT64_MAX, 1), UINT64_MAX);
}

/* A raise never lets a drain hold more samples than the maps were sized
 * for: drains come as much more often as the rate is higher, down to the
 * shortest interval, where the rate is what that allows. */
static void test_raise_plan(void) {
        const uint64_t ms = 1000000ULL, s = 1000 * ms;
        struct capture_raise p;

        /* 49 -> 499 Hz at 10 s: drains of 981 ms, 489.5 samples a CPU */
        capture_raise_plan(49, 499, 10 * s, 100 * ms, &p);
        CHECK_INT_EQ(p.hz, 499);
        CHECK_INT_EQ(p.interval_ns, 981963927);
        CHECK((uint64_t) p.hz * p.interval_ns <= 49 * 10 * s);
        /* no raise: 0, or not above the base */
        capture_raise_plan(49, 0, 10 * s, 100 * ms, &p);
        CHECK(p.hz == 49 && p.interval_ns == 10 * s);
        capture_raise_plan(499, 97, 10 * s, 100 * ms, &p);
        CHECK(p.hz == 499 && p.interval_ns == 10 * s);
        /* 49 Hz at 1 s allows 490 Hz at 100 ms, not 4999 */
        capture_raise_plan(49, 4999, 1 * s, 100 * ms, &p);
        CHECK_INT_EQ(p.hz, 490);
        CHECK_INT_EQ(p.interval_ns, 100 * ms);
        /* an interval at the minimum already: no room to raise */
        capture_raise_plan(49, 499, 100 * ms, 100 * ms, &p);
        CHECK(p.hz == 49 && p.interval_ns == 100 * ms);
}

int main(void) {
        test_raise_plan();
        test_proc_stat();
        test_cgroup_cpu_stat();
        test_who_may_start();
        test_cgroup2_mount();
        test_range_and_estimate();
        test_grammar();
        test_psi();
        test_cpu_and_edges();
        test_gate();
        TESTS_DONE();
}
