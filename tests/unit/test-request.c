/* Request validation: accepted requests carry exactly what was asked;
 * every kind of bad request is refused with a message naming the problem.
 * Also the daemon's settings parser, which follows the same rules. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "conf.h"
#include "request.h"
#include "tests.h"

static int parse(const char *line, struct request *r, char **err) {
        return request_parse(line, strlen(line), r, err);
}

static void test_query_fields_are_applied(void) {
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"pid\":4242,\"comm\":\"nginx\",\"since\":\"1h30m\",\"until\":\"5m\","
                           "\"kind\":\"cpu\"}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_QUERY);
        CHECK_INT_EQ(r.query.pid, 4242);
        CHECK_STR_EQ(r.query.comm, "nginx");
        CHECK_INT_EQ(r.query.since_ns, 5400ULL * 1000000000ULL);
        CHECK_INT_EQ(r.query.until_ns, 300ULL * 1000000000ULL);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_CPU);
        request_done(&r);
}

static void test_offcpu_kinds_and_states(void) {
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"kind\":\"offcpu\",\"state\":\"S,D,R\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_OFFCPU);
        CHECK_INT_EQ(r.query.state_mask, (1u << PROFD_STATE_SLEEPING) | (1u << PROFD_STATE_DISK) |
                                                 (1u << PROFD_STATE_RUNNING));
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"kind\":\"wakeup\",\"state\":\"I\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_WAKEUP);
        CHECK_INT_EQ(r.query.state_mask, 1u << PROFD_STATE_IDLE);
        request_done(&r);
}

static void test_query_defaults(void) {
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"query\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.since_ns, 600ULL * 1000000000ULL);
        CHECK_INT_EQ(r.query.until_ns, 0);
        CHECK_INT_EQ(r.query.pid, 0);
        CHECK(r.query.comm == NULL);
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"status\"}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_STATUS);
        CHECK_INT_EQ(parse("{\"op\":\"flush\"}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_FLUSH);
}

#define NS 1000000000ULL
/* 2026-11-21T05:00:00Z */
#define T0 (1795237200ULL * NS)

static void test_new_filters_are_applied(void) {
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"tid\":77,\"comm\":\"ngx-*\",\"exe\":\"/usr/sbin/nginx\","
                           "\"uid\":0,\"cgroup\":\"/system.slice/nginx.service/\",\"unit\":\"nginx.service\","
                           "\"container\":\"4F5a1C\",\"group\":\"unit\",\"raw_names\":true}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_QUERY);
        CHECK_INT_EQ(r.query.tid, 77);
        CHECK_STR_EQ(r.query.comm, "ngx-*");
        CHECK_STR_EQ(r.query.exe, "/usr/sbin/nginx");
        CHECK(r.query.have_uid);
        CHECK_INT_EQ(r.query.uid, 0);
        /* a trailing slash names the same cgroup */
        CHECK_STR_EQ(r.query.cgroup, "/system.slice/nginx.service");
        CHECK_STR_EQ(r.query.unit, "nginx.service");
        /* container ids are lowercase in cgroup paths */
        CHECK_STR_EQ(r.query.container, "4f5a1c");
        CHECK_INT_EQ(r.query.group, STORE_GROUP_UNIT);
        CHECK(r.query.raw_names);
        CHECK(!r.query.last);
        request_done(&r);

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"group\":\"thread\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.group, STORE_GROUP_THREAD);
        request_done(&r);

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"cgroup\":\"/\",\"group\":\"process\",\"comm\":\"[a-z]*worker-thread-?\","
                           "\"exe\":\"*/python3*\",\"unit\":\"*.scope\"}", &r, &err), 0);
        CHECK_STR_EQ(r.query.cgroup, "/");
        CHECK_INT_EQ(r.query.group, STORE_GROUP_PROCESS);
        /* a glob may be longer than the names it matches */
        CHECK_STR_EQ(r.query.comm, "[a-z]*worker-thread-?");
        CHECK(!r.query.have_uid);
        CHECK(!r.query.folded);
        request_done(&r);

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"format\":\"folded\",\"lines\":true}", &r, &err), 0);
        CHECK(r.query.folded);
        CHECK(r.query.lines);
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"format\":\"frames\"}", &r, &err), 0);
        CHECK(!r.query.folded);
        request_done(&r);

        CHECK_INT_EQ(parse("{\"op\":\"query\",\"last\":true,\"pid\":3}", &r, &err), 0);
        CHECK(r.query.last);
        CHECK_INT_EQ(r.query.pid, 3);
        request_done(&r);

        CHECK(request_is_glob("a*"));
        CHECK(request_is_glob("a?"));
        CHECK(request_is_glob("[ab]"));
        CHECK(!request_is_glob("nginx.service"));
}

static void test_series_request(void) {
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"series\",\"step\":\"1s\",\"kind\":\"offcpu\",\"unit\":\"a.service\"}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_SERIES);
        CHECK_INT_EQ(r.query.step_ns, NS);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_OFFCPU);
        CHECK_STR_EQ(r.query.unit, "a.service");
        request_done(&r);
        /* no step: the daemon's drain interval */
        CHECK_INT_EQ(parse("{\"op\":\"series\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.step_ns, 0);
        request_done(&r);
}

/* A timeline request: the filters and window of a query (kind cpu or
 * offcpu), format, lines, raw_names and max_samples; nothing that needs
 * drains. */
static void test_timeline_request(void) {
        static const struct {
                const char *line, *message;
        } bad[] = {
                { "{\"op\":\"timeline\",\"kind\":\"wakeup\"}", "kind 'wakeup': a timeline answer carries on-CPU samples "
                                                            "(kind cpu) and off-CPU blocks (kind offcpu); wakeups do not" },
                { "{\"op\":\"timeline\",\"state\":\"D\"}", "field 'state' applies to kinds offcpu and wakeup" },
                { "{\"op\":\"timeline\",\"last\":true}", "field 'last' (the most recent drain) applies to query" },
                { "{\"op\":\"timeline\",\"by_drains\":true}", "field 'by_drains' applies to query" },
                { "{\"op\":\"timeline\",\"group\":\"process\"}", "unknown field 'group' in timeline request" },
                { "{\"op\":\"timeline\",\"step\":\"1s\"}", "unknown field 'step' in timeline request" },
                { "{\"op\":\"timeline\",\"max_samples\":0}", "'max_samples': 0 is not a sample count from 1 to 1000000" },
                { "{\"op\":\"timeline\",\"max_samples\":1000001}", "is not a sample count" },
                { "{\"op\":\"timeline\",\"max_samples\":\"5\"}", "'max_samples' must be an integer" },
                { "{\"op\":\"query\",\"max_samples\":5}", "unknown field 'max_samples' in query request" },
                { "{\"op\":\"timeline\",\"since\":\"1m\",\"until\":\"2m\"}", "empty window" },
        };
        struct request r;
        char *err = NULL;

        CHECK_INT_EQ(parse("{\"op\":\"timeline\",\"from\":\"2026-12-02T10:00:00.25Z\",\"to\":\"2026-12-02T10:00:03Z\","
                           "\"pid\":42,\"comm\":\"bursts\",\"format\":\"folded\",\"max_samples\":7}", &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_TIMELINE);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_CPU);
        CHECK(r.query.have_from && r.query.from.absolute);
        CHECK_INT_EQ(r.query.from.ns, 1796205600250000000ULL);
        CHECK_INT_EQ(r.query.to.ns, 1796205603000000000ULL);
        CHECK_INT_EQ(r.query.pid, 42);
        CHECK_STR_EQ(r.query.comm, "bursts");
        CHECK(r.query.folded);
        CHECK_INT_EQ(r.query.max_samples, 7);
        CHECK(!r.query.have_since);
        request_done(&r);
        /* defaults: the whole cap, since 10m not given (so clipped to
         * what the timeline holds) */
        CHECK_INT_EQ(parse("{\"op\":\"timeline\"}", &r, &err), 0);
        CHECK_INT_EQ(r.query.max_samples, 0);
        CHECK(!r.query.have_since);
        request_done(&r);
        /* off-CPU blocks, with the task-state filter (per block) */
        CHECK_INT_EQ(parse("{\"op\":\"timeline\",\"kind\":\"offcpu\",\"state\":\"S,D\",\"max_samples\":9}", &r,
                           &err), 0);
        CHECK_INT_EQ(r.query.kind, PROFD_KIND_OFFCPU);
        CHECK(r.query.state_mask != 0);
        CHECK_INT_EQ(r.query.max_samples, 9);
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"timeline\",\"since\":\"30s\"}", &r, &err), 0);
        CHECK(r.query.have_since);
        request_done(&r);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int ret = parse(bad[i].line, &r, &err);

                CHECK_INT_EQ(ret, -EINVAL);
                if (!err || !strstr(err, bad[i].message)) {
                        fprintf(stderr, "request %s: error \"%s\" lacks \"%s\"\n", bad[i].line,
                                err ? err : "(none)", bad[i].message);
                        tests_failed++;
                }
                free(err);
                err = NULL;
        }
}

static void test_windows(void) {
        uint64_t from, to;
        struct request r;
        char *err = NULL;

        /* durations: relative to now */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"since\":\"1h\",\"until\":\"10m\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        CHECK_INT_EQ(from, T0 - 3600 * NS);
        CHECK_INT_EQ(to, T0 - 600 * NS);
        request_done(&r);
        /* default: the last 10 minutes */
        CHECK_INT_EQ(parse("{\"op\":\"query\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        CHECK_INT_EQ(from, T0 - 600 * NS);
        CHECK_INT_EQ(to, T0);
        request_done(&r);
        /* RFC 3339 with an offset and a fraction, to a duration */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2026-11-21T05:30:00.25+01:00\",\"to\":\"1m\"}",
                           &r, &err), 0);
        CHECK(r.query.have_from && r.query.from.absolute);
        CHECK(r.query.have_to && !r.query.to.absolute);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        CHECK_INT_EQ(from, T0 - 1800 * NS + 250000000);
        CHECK_INT_EQ(to, T0 - 60 * NS);
        request_done(&r);
        /* a duration "from" with "until" */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2h\",\"until\":\"1h\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        CHECK_INT_EQ(from, T0 - 7200 * NS);
        CHECK_INT_EQ(to, T0 - 3600 * NS);
        request_done(&r);
        /* an end in the future is fine */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"since\":\"1m\",\"to\":\"2026-11-22T00:00:00Z\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        request_done(&r);

        /* windows with a time of day are checked against now */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2026-11-21T06:00:00Z\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), -EINVAL);
        CHECK(err && strstr(err, "'from'") && strstr(err, "future"));
        free(err), err = NULL;
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2026-11-21T04:00:00Z\",\"to\":\"2026-11-21T03:00:00Z\"}",
                           &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), -EINVAL);
        CHECK(err && strstr(err, "empty window") && strstr(err, "2026-11-21T03:00:00Z"));
        free(err), err = NULL;
        request_done(&r);
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2026-11-21T04:00:00Z\",\"until\":\"2h\"}", &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), -EINVAL);
        CHECK(err && strstr(err, "'until'"));
        free(err), err = NULL;
        request_done(&r);
        /* a one-instant window is not empty: drains overlapping it count */
        CHECK_INT_EQ(parse("{\"op\":\"query\",\"from\":\"2026-11-21T04:00:00Z\",\"to\":\"2026-11-21T04:00:00Z\"}",
                           &r, &err), 0);
        CHECK_INT_EQ(request_window(&r.query, T0, &from, &to, &err), 0);
        CHECK_INT_EQ(from, to);
        request_done(&r);
}

static void test_bad_new_fields_name_the_problem(void) {
        static const struct {
                const char *line, *message;
        } cases[] = {
                { "{\"op\":\"query\",\"tid\":0}", "'tid': 0 is not a thread id" },
                { "{\"op\":\"query\",\"tid\":-3}", "'tid': -3 is not a thread id" },
                { "{\"op\":\"query\",\"tid\":\"3\"}", "'tid' must be an integer" },
                { "{\"op\":\"query\",\"tid\":2147483648}", "is not a thread id" },
                { "{\"op\":\"query\",\"uid\":-1}", "'uid': -1 is not a user id" },
                { "{\"op\":\"query\",\"uid\":4294967295}", "'uid': 4294967295 is not a user id" },
                { "{\"op\":\"query\",\"uid\":1.0}", "'uid' must be an integer" },
                { "{\"op\":\"query\",\"comm\":\"a-name-longer-than-15\"}", "longer than 15" },
                { "{\"op\":\"query\",\"comm\":\"a\\u0000b\"}", "malformed JSON" }, /* jansson refuses NUL in strings */
                { "{\"op\":\"query\",\"exe\":\"\"}", "'exe' is empty" },
                { "{\"op\":\"query\",\"exe\":\"nginx\"}", "'exe': \"nginx\" is not an absolute path" },
                { "{\"op\":\"query\",\"exe\":5}", "'exe' must be a string" },
                { "{\"op\":\"query\",\"cgroup\":\"system.slice\"}", "'cgroup': \"system.slice\" is not a cgroup v2 path" },
                { "{\"op\":\"query\",\"cgroup\":\"*nginx*\"}", "'cgroup'" },
                { "{\"op\":\"query\",\"cgroup\":\"\"}", "'cgroup' is empty" },
                { "{\"op\":\"query\",\"unit\":\"nginx\"}", "'unit': \"nginx\" is not a unit" },
                { "{\"op\":\"query\",\"unit\":\"system.slice\"}", "'unit'" },
                { "{\"op\":\"query\",\"unit\":\"/system.slice/a.service\"}", "'unit'" },
                { "{\"op\":\"query\",\"container\":\"abc\"}", "'container': \"abc\" is not a container id" },
                { "{\"op\":\"query\",\"container\":\"abcg\"}", "'container'" },
                { "{\"op\":\"query\",\"container\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\"}",
                  "'container'" },
                { "{\"op\":\"query\",\"container\":12345}", "'container' must be a string" },
                { "{\"op\":\"query\",\"from\":\"2026-11-21\"}", "'from': \"2026-11-21\" is neither an RFC 3339 time" },
                { "{\"op\":\"query\",\"from\":\"2026-02-30T00:00:00Z\"}", "'from'" },
                { "{\"op\":\"query\",\"from\":\"1969-12-31T23:59:59Z\"}", "'from'" },
                { "{\"op\":\"query\",\"to\":\"-5m\"}", "'to'" },
                { "{\"op\":\"query\",\"to\":1700000000}", "'to' must be a string" },
                { "{\"op\":\"query\",\"since\":\"1h\",\"from\":\"2h\"}", "'since' and 'from'" },
                { "{\"op\":\"query\",\"until\":\"1m\",\"to\":\"2m\"}", "'until' and 'to'" },
                { "{\"op\":\"query\",\"from\":\"1m\",\"to\":\"5m\"}", "empty window: 'to' must be more recent than 'from'" },
                { "{\"op\":\"query\",\"last\":true,\"since\":\"1h\"}", "'last'" },
                { "{\"op\":\"query\",\"last\":true,\"until\":\"1m\"}", "with 'until'" },
                { "{\"op\":\"query\",\"last\":true,\"from\":\"2026-11-21T04:00:00Z\"}", "with 'from'" },
                { "{\"op\":\"query\",\"last\":true,\"to\":\"1m\"}", "with 'to'" },
                { "{\"op\":\"query\",\"last\":1}", "'last' must be true or false" },
                { "{\"op\":\"query\",\"group\":\"task\"}", "'group': \"task\" is not a grouping (expected \"process\", \"unit\" or \"thread\")" },
                { "{\"op\":\"query\",\"group\":true}", "'group' must be a string" },
                { "{\"op\":\"query\",\"step\":\"1s\"}", "unknown field 'step' in query request" },
                { "{\"op\":\"series\",\"group\":\"unit\"}", "unknown field 'group' in series request" },
                { "{\"op\":\"series\",\"raw_names\":true}", "unknown field 'raw_names' in series request" },
                { "{\"op\":\"series\",\"format\":\"folded\"}", "unknown field 'format' in series request" },
                { "{\"op\":\"query\",\"format\":\"svg\"}", "'format' must be \"frames\" or \"folded\"" },
                { "{\"op\":\"query\",\"format\":1}", "'format' must be" },
                { "{\"op\":\"query\",\"lines\":true}", "'lines' applies to \"format\":\"folded\"" },
                { "{\"op\":\"query\",\"format\":\"folded\",\"lines\":\"yes\"}", "'lines' must be true or false" },
                { "{\"op\":\"series\",\"step\":\"500us\"}", "'step': \"500us\" is shorter than 1ms" },
                { "{\"op\":\"series\",\"step\":\"0\"}", "'step'" },
                { "{\"op\":\"series\",\"step\":1}", "'step' must be a duration string" },
                { "{\"op\":\"series\",\"pidd\":1}", "unknown field 'pidd' in series request" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct request r;
                char *err = NULL;
                int ret = parse(cases[i].line, &r, &err);

                CHECK_INT_EQ(ret, -EINVAL);
                if (!err || !strstr(err, cases[i].message)) {
                        fprintf(stderr, "request %s: error \"%s\" lacks \"%s\"\n", cases[i].line,
                                err ? err : "(none)", cases[i].message);
                        tests_failed++;
                }
                free(err);
        }
}

static void test_bad_requests_name_the_problem(void) {
        static const struct {
                const char *line, *message;
        } cases[] = {
                { "", "malformed JSON" },
                { "{\"op\":\"query\"} trailing", "malformed JSON" },
                { "\"status\"", "must be a JSON object" },
                { "{}", "missing field 'op'" },
                { "{\"op\":7}", "'op' must be a string" },
                { "{\"op\":\"drop_tables\"}", "unknown op 'drop_tables' (expected status, flush, query, series, timeline or capture)" },
                { "{\"op\":\"query\",\"pid\":0}", "'pid': 0 is not a process id" },
                { "{\"op\":\"query\",\"pid\":4294967296}", "is not a process id" },
                { "{\"op\":\"query\",\"pid\":1.5}", "'pid' must be an integer" },
                { "{\"op\":\"query\",\"comm\":\"\"}", "'comm' is empty" },
                { "{\"op\":\"query\",\"comm\":[\"x\"]}", "'comm' must be a string" },
                { "{\"op\":\"query\",\"since\":10}", "'since' must be a duration string" },
                { "{\"op\":\"query\",\"since\":\"99999999999999d\"}", "too large" },
                { "{\"op\":\"query\",\"since\":\"1m\",\"until\":\"1m\"}", "empty window" },
                { "{\"op\":\"query\",\"until\":\"20m\"}", "default since: 10m" },
                { "{\"op\":\"query\",\"kind\":\"gpu\"}", "unknown kind 'gpu'" },
                { "{\"op\":\"query\",\"kind\":\"offcpu\",\"state\":\"S,X\"}", "not a list of task states" },
                { "{\"op\":\"query\",\"kind\":\"offcpu\",\"state\":\"S,\"}", "not a list of task states" },
                { "{\"op\":\"query\",\"kind\":\"offcpu\",\"state\":\"SD\"}", "not a list of task states" },
                { "{\"op\":\"query\",\"state\":\"S\"}", "applies to kinds offcpu and wakeup" },
                { "{\"op\":\"query\",\"kind\":\"wakeup\",\"state\":[\"S\"]}", "'state' must be a string" },
                { "{\"op\":\"query\",\"comm\":\"x\",\"comm\":\"y\"}", "malformed JSON" },
                { "{\"op\":\"flush\",\"now\":true}", "unknown field 'now' in flush request" },
                { "{\"op\":\"query\",\"pid\":1; DROP TABLE samples}", "malformed JSON" },
                { "{\"op\":\"capture\"}", "capture needs 'action'" },
                { "{\"op\":\"capture\",\"action\":\"begin\"}", "unknown capture action 'begin'" },
                { "{\"op\":\"capture\",\"action\":\"start\"}", "capture start needs 'condition'" },
                { "{\"op\":\"capture\",\"action\":\"start\",\"condition\":\"disk:sda>5\"}",
                  "bad capture condition 'disk:sda>5': unknown capture condition" },
                { "{\"op\":\"capture\",\"action\":\"start\",\"condition\":\"cpu:pid=12>abc\"}",
                  "the threshold is a percentage of one CPU" },
                { "{\"op\":\"capture\",\"action\":\"list\",\"id\":3}", "unknown field 'id' in capture list request" },
                { "{\"op\":\"capture\",\"action\":\"unpin\"}", "capture unpin needs 'id'" },
                { "{\"op\":\"capture\",\"action\":\"unpin\",\"id\":0}", "a positive integer" },
                { "{\"op\":\"capture\",\"action\":\"stop\",\"id\":\"2\"}", "a positive integer" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct request r;
                char *err = NULL;
                int ret = parse(cases[i].line, &r, &err);

                CHECK_INT_EQ(ret, -EINVAL);
                if (!err || !strstr(err, cases[i].message)) {
                        fprintf(stderr, "request %s: error \"%s\" lacks \"%s\"\n", cases[i].line,
                                err ? err : "(none)", cases[i].message);
                        tests_failed++;
                }
                free(err);
        }
}

static void test_oversized_request(void) {
        size_t n = REQUEST_MAX_BYTES + 10;
        char *big = malloc(n);
        struct request r;
        char *err = NULL;

        memset(big, ' ', n);
        CHECK_INT_EQ(request_parse(big, n, &r, &err), -EINVAL);
        CHECK(err && strstr(err, "larger than"));
        free(err);
        free(big);
}

static void test_conf_file_and_overrides(void) {
        struct conf c;
        char *err = NULL;

        CHECK_INT_EQ(conf_init(&c), 0);
        CHECK_INT_EQ(c.frequency_hz, 49);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "# comment\n\n  frequency = 99 \nstore=/srv/p.db\ninterval = 2s\n", &err), 0);
        CHECK_INT_EQ(c.frequency_hz, 99);
        CHECK_STR_EQ(c.store_path, "/srv/p.db");
        CHECK_INT_EQ(c.interval_ns, 2000000000ULL);
        CHECK_INT_EQ(conf_set(&c, "frequency", "199", &err), 0);
        CHECK_INT_EQ(c.frequency_hz, 199);

        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "frequency = 49\nfrequnecy = 3\n", &err), -EINVAL);
        CHECK(err && strstr(err, "t.conf:2") && strstr(err, "unknown key 'frequnecy'"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "frequency = 12abc\n", &err), -EINVAL);
        CHECK(err && strstr(err, "t.conf:1") && strstr(err, "frequency"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "interval = 10ms\n", &err), -EINVAL);
        CHECK(err && strstr(err, "interval"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "socket = relative.sock\n", &err), -EINVAL);
        CHECK(err && strstr(err, "absolute"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "just words\n", &err), -EINVAL);
        CHECK(err && strstr(err, "key = value"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "kinds = offcpu,wakeup\noffcpu_min = 250us\noffcpu_max = 10s\n", &err), 0);
        CHECK(!c.kind_cpu && c.kind_offcpu && c.kind_wakeup);
        CHECK_INT_EQ(c.offcpu_min_ns, 250000);
        CHECK_INT_EQ(c.offcpu_max_ns, 10000000000ULL);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "offcpu_max = none\n", &err), 0);
        CHECK(c.offcpu_max_ns == UINT64_MAX);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "kinds = cpu,gpu\n", &err), -EINVAL);
        CHECK(err && strstr(err, "unknown kind \"gpu\""));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "kinds = ,\n", &err), -EINVAL);
        CHECK(err && strstr(err, "at least one"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "socket_mode = 0600\nsocket_group = adm\nadmin_group = wheel\n"
                                               "max_clients = 8\nclient_timeout = 2s\nmax_keys = 64\nmax_stacks = 32\n", &err), 0);
        CHECK_INT_EQ(c.socket_mode, 0600);
        CHECK_STR_EQ(c.socket_group, "adm");
        CHECK_STR_EQ(c.admin_group, "wheel");
        CHECK_INT_EQ(c.max_clients, 8);
        CHECK_INT_EQ(c.client_timeout_ns, 2000000000ULL);
        CHECK_INT_EQ(c.max_keys, 64);
        CHECK_INT_EQ(c.max_stacks, 32);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "debuginfod_urls = https://debuginfod.debian.net http://10.0.0.1:8002\n"
                                               "debuginfod_cache = /var/cache/profd/debuginfod\n", &err), 0);
        CHECK_STR_EQ(c.debuginfod_urls, "https://debuginfod.debian.net http://10.0.0.1:8002");
        CHECK_STR_EQ(c.debuginfod_cache, "/var/cache/profd/debuginfod");
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "debuginfod_urls = ftp://x\n", &err), -EINVAL);
        CHECK(err && strstr(err, "debuginfod_urls"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "symbol_cache = 64\n", &err), 0);
        CHECK_INT_EQ(c.symbol_cache_bytes, 64ULL << 20);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "admin_group =\n", &err), 0);
        CHECK(c.admin_group == NULL);
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "socket_mode = 0999\n", &err), -EINVAL);
        CHECK(err && strstr(err, "octal"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "socket_group = wheel;rm\n", &err), -EINVAL);
        CHECK(err && strstr(err, "not a group name"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "max_clients = 0\n", &err), -EINVAL);
        CHECK(err && strstr(err, "max_clients"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "client_timeout = 1ms\n", &err), -EINVAL);
        CHECK(err && strstr(err, "client_timeout"));
        free(err), err = NULL;
        CHECK_INT_EQ(conf_parse_text(&c, "t.conf", "offcpu_max = 1ms\noffcpu_min = 2ms\n", &err), -EINVAL);
        CHECK(err && strstr(err, "larger than offcpu_max"));
        free(err), err = NULL;
        conf_done(&c);
}

static void test_capture_requests(void) {
        struct request r;
        char *err = NULL;
        static const char start[] = "{\"op\":\"capture\",\"action\":\"start\",\"condition\":\"cpu:pid=42>80\"}";
        static const char unpin[] = "{\"op\":\"capture\",\"action\":\"unpin\",\"id\":7}";

        CHECK_INT_EQ(request_parse(start, strlen(start), &r, &err), 0);
        CHECK_INT_EQ(r.op, REQUEST_CAPTURE);
        CHECK_INT_EQ(r.capture.action, CAPTURE_ACTION_START);
        CHECK_STR_EQ(r.capture.condition, "cpu:pid=42>80");
        request_done(&r);
        CHECK_INT_EQ(request_parse(unpin, strlen(unpin), &r, &err), 0);
        CHECK_INT_EQ(r.capture.action, CAPTURE_ACTION_UNPIN);
        CHECK_INT_EQ(r.capture.id, 7);
        CHECK(r.capture.condition == NULL);
        request_done(&r);
}

int main(void) {
        test_capture_requests();
        test_query_fields_are_applied();
        test_query_defaults();
        test_offcpu_kinds_and_states();
        test_bad_requests_name_the_problem();
        test_new_filters_are_applied();
        test_series_request();
        test_timeline_request();
        test_windows();
        test_bad_new_fields_name_the_problem();
        test_oversized_request();
        test_conf_file_and_overrides();
        TESTS_DONE();
}
