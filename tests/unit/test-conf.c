/* Settings parser: every key is accepted with a good value and sets its
 * field; unknown keys, bad values and settings that disagree are errors
 * naming file, line and key. */
#include <errno.h>
#include <stdlib.h>

#include "conf.h"
#include "macro.h"
#include "tests.h"

/* Parses text as file "f.conf" into fresh defaults; returns the error
 * message (caller frees) or NULL when it parsed. */
static char *parse(struct conf *c, const char *text) {
        char *error = NULL;
        int r;

        CHECK(conf_init(c) == 0);
        r = conf_parse_text(c, "f.conf", text, &error);
        if (r >= 0)
                r = conf_check(c, &error);
        if (r >= 0) {
                CHECK(!error);
                return NULL;
        }
        CHECK_INT_EQ(r, -EINVAL);
        CHECK(error != NULL);
        return error ? error : strdup("(no message)");
}

static void test_every_key_sets_its_field(void) {
        struct conf c;
        char *e = parse(&c,
                        "# comment\n"
                        "socket = /run/x/p.sock\n"
                        "socket_mode = 0640\n"
                        "socket_group = wheel\n"
                        "admin_group = adm\n"
                        "store = /var/tmp/p.db\n"
                        "frequency = 99\n"
                        "interval = 5s\n"
                        "kinds = cpu,wakeup\n"
                        "offcpu_min = 2ms\n"
                        "offcpu_max = 10s\n"
                        "max_clients = 7\n"
                        "client_timeout = 1m\n"
                        "retention_raw = 6h\n"
                        "retention_1m = 2d\n"
                        "retention = 30d\n"
                        "max_store_size = 512M\n"
                        "symbol_cache = 64\n"
                        "debug_dirs = /usr/lib/debug /opt/debug\n"
                        "debuginfod_urls = https://debuginfod.debian.net\n"
                        "debuginfod_cache = /var/cache/dbg\n"
                        "max_keys = 1000\n"
                        "kernel_memory = 20M\n"
                        "  max_stacks=2000  \n");
        CHECK(!e);
        CHECK_STR_EQ(c.socket_path, "/run/x/p.sock");
        CHECK_INT_EQ(c.socket_mode, 0640);
        CHECK_STR_EQ(c.socket_group, "wheel");
        CHECK_STR_EQ(c.admin_group, "adm");
        CHECK_STR_EQ(c.store_path, "/var/tmp/p.db");
        CHECK_INT_EQ(c.frequency_hz, 99);
        CHECK_INT_EQ(c.interval_ns, 5 * NSEC_PER_SEC);
        CHECK(c.kind_cpu && !c.kind_offcpu && c.kind_wakeup);
        CHECK_INT_EQ(c.offcpu_min_ns, 2000000);
        CHECK_INT_EQ(c.offcpu_max_ns, 10 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.max_clients, 7);
        CHECK_INT_EQ(c.client_timeout_ns, 60 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_raw_ns, 6 * 3600 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_1m_ns, 2 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_ns, 30 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.max_store_size, 512ULL << 20);
        CHECK_INT_EQ(c.symbol_cache_bytes, 64ULL << 20);
        CHECK(c.debug_dirs && c.debug_dirs[0] && c.debug_dirs[1] && !c.debug_dirs[2]);
        CHECK_STR_EQ(c.debug_dirs[0], "/usr/lib/debug");
        CHECK_STR_EQ(c.debug_dirs[1], "/opt/debug");
        CHECK_STR_EQ(c.debuginfod_urls, "https://debuginfod.debian.net");
        CHECK_STR_EQ(c.debuginfod_cache, "/var/cache/dbg");
        CHECK_INT_EQ(c.max_keys, 1000);
        CHECK_INT_EQ(c.max_stacks, 2000);
        CHECK_INT_EQ(c.kernel_memory, 20ULL << 20);
        conf_done(&c);
}

static void test_every_listed_key_is_known(void) {
        /* conf_keys is what the error message and the man page list */
        size_t n = 0;

        for (size_t i = 0; conf_keys[i]; i++, n++) {
                struct conf c;
                char *error = NULL;
                int r;

                CHECK(conf_init(&c) == 0);
                /* an empty value is wrong or "none" for most keys; never unknown */
                r = conf_set(&c, conf_keys[i], "", &error);
                if (r == -ENOENT)
                        fprintf(stderr, "conf_keys lists '%s', conf_set does not know it\n", conf_keys[i]);
                CHECK(r != -ENOENT);
                free(error);
                conf_done(&c);
        }
        CHECK_INT_EQ(n, 28);
}

static void test_defaults(void) {
        struct conf c;

        CHECK(conf_init(&c) == 0);
        CHECK_INT_EQ(c.retention_raw_ns, 24 * 3600 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_1m_ns, 7 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_ns, 14 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.max_store_size, 1ULL << 30);
        CHECK_INT_EQ(c.unwind_memory, 24ULL << 20);
        CHECK_INT_EQ(c.kernel_memory, 64ULL << 20);
        CHECK(c.debug_dirs && c.debug_dirs[0] && !c.debug_dirs[1]);
        CHECK_STR_EQ(c.debug_dirs[0], "/usr/lib/debug");
        CHECK(conf_check(&c, NULL) == 0);
        conf_done(&c);
}

struct bad {
        const char *text;
        const char *message; /* exactly, or the start of it when it ends in '*' */
};

static void test_bad_files_name_file_line_and_key(void) {
        static const struct bad cases[] = {
                { "frequency = 49\nfrobnicate = 1\n", "f.conf:2: unknown key 'frobnicate' (known: socket, *" },
                { "\n\nfrequency = fast\n", "f.conf:3: key 'frequency': frequency must be a whole number of Hz from 1 to 10000, not \"fast\"" },
                { "frequency = 49x\n", "f.conf:1: key 'frequency': *" },
                { "frequency = -5\n", "f.conf:1: key 'frequency': *" },
                { "interval = 10ms\n", "f.conf:1: key 'interval': interval must be a duration from 100ms to 1h *" },
                { "retention = 1 week\n", "f.conf:1: key 'retention': retention must be a duration of at least 1m (e.g. \"24h\", \"14d\"), not \"1 week\"" },
                { "retention_raw = 30s\n", "f.conf:1: key 'retention_raw': *" },
                { "max_store_size = 10X\n", "f.conf:1: key 'max_store_size': max_store_size must be a size of at least 1M *" },
                { "max_store_size = 100K\n", "f.conf:1: key 'max_store_size': *" },
                { "max_store_size = -1G\n", "f.conf:1: key 'max_store_size': *" },
                { "debug_dirs = usr/lib/debug\n", "f.conf:1: key 'debug_dirs': debug_dirs must be absolute directories *" },
                { "socket_mode = 0999\n", "f.conf:1: key 'socket_mode': *" },
                { "max_clients = many\n", "f.conf:1: key 'max_clients': *" },
                { "kinds = cpu,gpu\n", "f.conf:1: key 'kinds': unknown kind \"gpu\" *" },
                { "store = relative.db\n", "f.conf:1: key 'store': store must be an absolute path, not \"relative.db\"" },
                { "frequency\n", "f.conf:1: expected \"key = value\", got \"frequency\"" },
                { " = 5\n", "f.conf:1: missing key before '='" },
                { "retention_raw = 8d\n", "retention_raw (8d) is longer than retention_1m (7d)" },
                { "retention = 3d\n", "retention_1m (7d) is longer than retention (3d)" },
                { "clickhouse_url = 127.0.0.1:8123\n", "f.conf:1: key 'clickhouse_url': clickhouse_url must be an http:// or https:// URL *" },
                { "clickhouse_url = http://u:pw@ch:8123/\n", "f.conf:1: key 'clickhouse_url': clickhouse_url must be an http:// or https:// URL without spaces or credentials (those go in clickhouse_credentials), not \"http://u:pw@ch:8123/\"" },
                { "host_name = web 1\n", "f.conf:1: key 'host_name': host_name must be 1 to 255 letters, digits, *" },
                { "host_name = o'brien\n", "f.conf:1: key 'host_name': *" },
                { "clickhouse_credentials = creds.txt\n", "f.conf:1: key 'clickhouse_credentials': clickhouse_credentials must be an absolute path, not \"creds.txt\"" },
                { "clickhouse_timeout = 0s\n", "f.conf:1: key 'clickhouse_timeout': clickhouse_timeout must be a duration from 100ms to 1h *" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct conf c;
                const char *want = cases[i].message;
                size_t n = strlen(want);
                _cleanup_free_ char *e = NULL;

                e = parse(&c, cases[i].text);
                if (!e) {
                        fprintf(stderr, "accepted: %s", cases[i].text);
                        tests_failed++;
                } else if (want[n - 1] == '*' ? strncmp(e, want, n - 1) != 0 : strcmp(e, want) != 0) {
                        fprintf(stderr, "for %s got:  %s\nwant: %s\n", cases[i].text, e, want);
                        tests_failed++;
                }
                conf_done(&c);
        }
}

static void test_clickhouse_settings(void) {
        struct conf c;
        char *e;

        /* off by default; the host's name labels it, and 30 s per request */
        CHECK(conf_init(&c) == 0);
        CHECK(c.clickhouse_url == NULL);
        CHECK(c.host_name && conf_host_name_valid(c.host_name));
        CHECK(c.clickhouse_credentials == NULL);
        CHECK_INT_EQ(c.clickhouse_timeout_ns, 30 * NSEC_PER_SEC);
        conf_done(&c);
        e = parse(&c, "clickhouse_url = http://ch.example:8123/\nhost_name = web-1.dc_2:a\n"
                      "clickhouse_credentials = /etc/profd/clickhouse\nclickhouse_timeout = 5s\n");
        CHECK(e == NULL);
        CHECK_STR_EQ(c.clickhouse_url, "http://ch.example:8123/");
        CHECK_STR_EQ(c.host_name, "web-1.dc_2:a");
        CHECK_STR_EQ(c.clickhouse_credentials, "/etc/profd/clickhouse");
        CHECK_INT_EQ(c.clickhouse_timeout_ns, 5 * NSEC_PER_SEC);
        conf_done(&c);
        free(e);
        /* "" turns the export off again */
        e = parse(&c, "clickhouse_url = http://ch:8123/\nclickhouse_url =\n");
        CHECK(e == NULL && c.clickhouse_url == NULL);
        conf_done(&c);
        free(e);
}

static void test_sizes(void) {
        uint64_t v;

        CHECK(parse_size("1048576", &v) == 0 && v == 1048576);
        CHECK(parse_size("4K", &v) == 0 && v == 4096);
        CHECK(parse_size("100M", &v) == 0 && v == 100ULL << 20);
        CHECK(parse_size("2G", &v) == 0 && v == 2ULL << 30);
        CHECK(parse_size("2GiB", &v) == 0 && v == 2ULL << 30);
        CHECK(parse_size("1T", &v) == 0 && v == 1ULL << 40);
        CHECK(parse_size("", &v) == -EINVAL);
        CHECK(parse_size("G", &v) == -EINVAL);
        CHECK(parse_size("1.5G", &v) == -EINVAL);
        CHECK(parse_size("1g", &v) == -EINVAL);
        CHECK(parse_size(" 1G", &v) == -EINVAL);
        CHECK(parse_size("1GG", &v) == -EINVAL);
        CHECK(parse_size("99999999999999999999", &v) == -ERANGE);
        CHECK(parse_size("99999999999T", &v) == -ERANGE);
}

static void test_none_values(void) {
        struct conf c;
        char *e = parse(&c, "max_store_size = none\noffcpu_max = none\ndebug_dirs =\n");

        CHECK(!e);
        CHECK_INT_EQ(c.max_store_size, 0);
        CHECK(c.offcpu_max_ns == UINT64_MAX);
        CHECK(c.debug_dirs && !c.debug_dirs[0]);
        conf_done(&c);
        free(e);
}

static void test_unwind_memory(void) {
        char *error = NULL;
        struct conf c;

        CHECK(conf_init(&c) == 0);
        CHECK_INT_EQ(conf_set(&c, "unwind_memory", "16M", &error), 0);
        CHECK_INT_EQ(c.unwind_memory, 16ULL << 20);
        CHECK_INT_EQ(conf_set(&c, "unwind_memory", "64K", &error), 0);
        CHECK_INT_EQ(c.unwind_memory, 64ULL << 10);
        /* below libc's table, above what a 32-bit row index reaches */
        CHECK_INT_EQ(conf_set(&c, "unwind_memory", "32K", &error), -EINVAL);
        free(error);
        error = NULL;
        CHECK_INT_EQ(conf_set(&c, "unwind_memory", "5G", &error), -EINVAL);
        free(error);
        CHECK_INT_EQ(c.unwind_memory, 64ULL << 10);
        conf_done(&c);
}

static void test_kernel_memory(void) {
        char *error = NULL;
        struct conf c;

        CHECK(conf_init(&c) == 0);
        CHECK_INT_EQ(conf_set(&c, "kernel_memory", "1G", &error), 0);
        CHECK_INT_EQ(c.kernel_memory, 1ULL << 30);
        CHECK_INT_EQ(conf_set(&c, "kernel_memory", "1M", &error), 0);
        CHECK_INT_EQ(c.kernel_memory, 1ULL << 20);
        /* below the maps' floor, above what profd would ever lock */
        CHECK_INT_EQ(conf_set(&c, "kernel_memory", "512K", &error), -EINVAL);
        CHECK(error && strstr(error, "kernel_memory must be a size from 1M to 4G"));
        free(error);
        error = NULL;
        CHECK_INT_EQ(conf_set(&c, "kernel_memory", "8G", &error), -EINVAL);
        free(error);
        error = NULL;
        CHECK_INT_EQ(conf_set(&c, "kernel_memory", "16Mx", &error), -EINVAL);
        free(error);
        CHECK_INT_EQ(c.kernel_memory, 1ULL << 20);
        conf_done(&c);
}

int main(void) {
        test_kernel_memory();
        test_unwind_memory();
        test_defaults();
        test_every_key_sets_its_field();
        test_every_listed_key_is_known();
        test_bad_files_name_file_line_and_key();
        test_sizes();
        test_clickhouse_settings();
        test_none_values();
        TESTS_DONE();
}
