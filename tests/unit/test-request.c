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

static void test_bad_requests_name_the_problem(void) {
        static const struct {
                const char *line, *message;
        } cases[] = {
                { "", "malformed JSON" },
                { "{\"op\":\"query\"} trailing", "malformed JSON" },
                { "\"status\"", "must be a JSON object" },
                { "{}", "missing field 'op'" },
                { "{\"op\":7}", "'op' must be a string" },
                { "{\"op\":\"drop_tables\"}", "unknown op 'drop_tables'" },
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

int main(void) {
        test_query_fields_are_applied();
        test_query_defaults();
        test_offcpu_kinds_and_states();
        test_bad_requests_name_the_problem();
        test_oversized_request();
        test_conf_file_and_overrides();
        TESTS_DONE();
}
