/* Settings table and parser: every key is accepted with a good value and
 * sets its field, from the file and from its option alike, and a reload
 * applies it or keeps it for a restart as its row says; unknown keys, bad
 * values and settings that disagree are errors naming file, line and key. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "chbatch.h"
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
                        "offcpu_sample = 20ms\n"
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
        CHECK_INT_EQ(c.offcpu_sample_ns, 20 * NSEC_PER_MSEC);
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
        /* the table is what the error message and the man page list */
        size_t n = 0;

        for (size_t i = 0; i < conf_n_settings; i++, n++) {
                struct conf c;
                char *error = NULL;
                int r;

                CHECK(conf_init(&c) == 0);
                /* an empty value is wrong or "none" for most keys; never unknown */
                r = conf_set(&c, conf_settings[i].key, "", &error);
                if (r == -ENOENT)
                        fprintf(stderr, "the table lists '%s', conf_set does not know it\n", conf_settings[i].key);
                CHECK(r != -ENOENT);
                free(error);
                conf_done(&c);
        }
        CHECK_INT_EQ(n, 46);
}

static void test_defaults(void) {
        struct conf c;

        CHECK(conf_init(&c) == 0);
        CHECK_INT_EQ(c.retention_raw_ns, 24 * 3600 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_1m_ns, 7 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.retention_ns, 14 * 86400 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.max_store_size, 1ULL << 30);
        CHECK_INT_EQ(c.retention_fold_ppm, 500);
        CHECK_INT_EQ(c.timeline_retention_ns, 3600 * NSEC_PER_SEC);
        CHECK_INT_EQ(c.timeline_max_size, 256ULL << 20);
        CHECK(c.timeline);
        CHECK(!c.offcpu_preempted_stacks);
        CHECK(!c.offcpu_self_stacks);
        CHECK(c.offcpu_sample_ns == CONF_OFFCPU_SAMPLE_AUTO);
        CHECK_INT_EQ(c.dwarf_min_samples, 20);
        CHECK(c.kernel_stack_memo);
        CHECK(!c.kernel_stack_memo_verify);
        CHECK_INT_EQ(c.timeline_offcpu_min_ns, 1000000);
        CHECK_INT_EQ(c.timeline_offcpu_rate, 200);
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
                { "timeline_retention = 10s\n", "f.conf:1: key 'timeline_retention': *" },
                { "timeline_max_size = 1x\n", "f.conf:1: key 'timeline_max_size': *" },
                { "timeline = maybe\n", "f.conf:1: key 'timeline': timeline must be on or off, not \"maybe\"" },
                { "timeline =\n", "f.conf:1: key 'timeline': timeline must be on or off, not \"\"" },
                { "timeline = On\n", "f.conf:1: key 'timeline': *" },
                { "debug_dirs = usr/lib/debug\n", "f.conf:1: key 'debug_dirs': debug_dirs must be absolute directories *" },
                { "socket_mode = 0999\n", "f.conf:1: key 'socket_mode': *" },
                { "max_clients = many\n", "f.conf:1: key 'max_clients': *" },
                { "kinds = cpu,gpu\n", "f.conf:1: key 'kinds': unknown kind \"gpu\" *" },
                { "capture_on = psi:cpu>50 disk:sda>5\n", "f.conf:1: key 'capture_on': capture_on: \"disk:sda>5\": unknown capture condition*" },
                { "capture_on = cpu:pid=x>5\n", "f.conf:1: key 'capture_on': capture_on: \"cpu:pid=x>5\": cpu: pid= needs a process id*" },
                { "capture_on = manual\n", "f.conf:1: key 'capture_on': capture_on: \"manual\" is for profctl capture start*" },
                { "capture_duration = 0s\n", "f.conf:1: key 'capture_duration': capture_duration must be a duration from 1s to 1h*" },
                { "offcpu_sample = 500us\n", "f.conf:1: key 'offcpu_sample': offcpu_sample must be none or at least 1ms" },
                { "offcpu_sample = 2h\n", "f.conf:1: key 'offcpu_sample': offcpu_sample must be a duration from 1ms to 1h (e.g. \"20ms\"), \"auto\" or \"none\", not \"2h\"" },
                { "offcpu_sample = often\n", "f.conf:1: key 'offcpu_sample': *" },
                { "retention_fold = 0.05\n", "f.conf:1: key 'retention_fold': retention_fold must be a share from 0.0001% to 10% (e.g. \"0.05%\") or \"none\", not \"0.05\"" },
                { "retention_fold = 11%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = 0.00001%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = 0%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = .5%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = 5.%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = 1%%\n", "f.conf:1: key 'retention_fold': *" },
                { "retention_fold = 99999999999999999999%\n", "f.conf:1: key 'retention_fold': *" },
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
        CHECK(c.host_name && chbatch_host_name_valid(c.host_name));
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
        char *e = parse(&c, "max_store_size = none\noffcpu_max = none\noffcpu_sample = none\ndebug_dirs =\n"
                            "retention_fold = none\n");
        char buf[32];

        CHECK(!e);
        CHECK_INT_EQ(c.max_store_size, 0);
        CHECK_INT_EQ(c.retention_fold_ppm, 0);
        CHECK_STR_EQ(conf_setting_format(conf_setting_find("retention_fold"), &c, buf, sizeof(buf)), "none");
        CHECK_INT_EQ(c.offcpu_sample_ns, 0);
        CHECK(c.offcpu_max_ns == UINT64_MAX);
        CHECK(c.debug_dirs && !c.debug_dirs[0]);
        conf_done(&c);
        free(e);
}

/* offcpu_sample = auto: the sampler's period, whole us, within the
 * setting's own range; anything else is what it says. */
/* retention_fold: a percentage with up to 4 decimals, kept in millionths,
 * written back in its shortest form. */
static void test_retention_fold_shares(void) {
        static const struct { const char *value, *shown; unsigned ppm; } cases[] = {
                { "0.05%", "0.05%", 500 }, { "10%", "10%", 100000 }, { "0.0001%", "0.0001%", 1 },
                { "1.25%", "1.25%", 12500 }, { "0.5000%", "0.5%", 5000 }, { "007%", "7%", 70000 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct conf c;
                char *error = NULL, buf[32];

                CHECK(conf_init(&c) == 0);
                CHECK_INT_EQ(conf_set(&c, "retention_fold", cases[i].value, &error), 0);
                CHECK_INT_EQ(c.retention_fold_ppm, cases[i].ppm);
                CHECK_STR_EQ(conf_setting_format(conf_setting_find("retention_fold"), &c, buf, sizeof(buf)),
                             cases[i].shown);
                free(error);
                conf_done(&c);
        }
}

static void test_offcpu_sample_auto(void) {
        struct conf c;
        char buf[64];
        char *e = parse(&c, "offcpu_sample = auto\n");
        const struct conf_setting *s = conf_setting_find("offcpu_sample");

        CHECK(!e);
        CHECK(c.offcpu_sample_ns == CONF_OFFCPU_SAMPLE_AUTO);
        CHECK_STR_EQ(conf_setting_format(s, &c, buf, sizeof(buf)), "auto");
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 49), 20408 * NSEC_PER_USEC);
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 99), 10101 * NSEC_PER_USEC);
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 1), NSEC_PER_SEC);
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 1000), CONF_MIN_OFFCPU_SAMPLE_NS);
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 4999), CONF_MIN_OFFCPU_SAMPLE_NS);
        CHECK_INT_EQ(conf_offcpu_sample_ns(c.offcpu_sample_ns, 0), NSEC_PER_SEC);
        CHECK_INT_EQ(conf_offcpu_sample_ns(0, 49), 0);
        CHECK_INT_EQ(conf_offcpu_sample_ns(40 * NSEC_PER_MSEC, 49), 40 * NSEC_PER_MSEC);
        conf_done(&c);
        free(e);
        /* not a word the other durations take */
        e = parse(&c, "offcpu_min = auto\n");
        CHECK(e);
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

/* One value unlike the default for every setting, and how the reload
 * summary writes it once parsed. */
static const struct { const char *key, *value, *shown; } samples[] = {
        { "socket", "/run/x/p.sock", "/run/x/p.sock" },
        { "socket_mode", "0640", "0640" },
        { "socket_group", "wheel", "wheel" },
        { "admin_group", "adm", "adm" },
        { "store", "/var/tmp/p.db", "/var/tmp/p.db" },
        { "frequency", "99", "99" },
        { "interval", "5s", "5s" },
        { "kinds", "cpu,wakeup", "cpu,wakeup" },
        { "offcpu_min", "2ms", "2ms" },
        { "offcpu_max", "10s", "10s" },
        { "offcpu_sample", "20ms", "20ms" },
        { "offcpu_preempted_stacks", "on", "on" },
        { "offcpu_self_stacks", "on", "on" },
        { "kernel_stack_memo", "off", "off" },
        { "kernel_stack_memo_verify", "on", "on" },
        { "max_clients", "7", "7" },
        { "client_timeout", "1m", "1m" },
        { "retention_raw", "6h", "6h" },
        { "retention_1m", "8d", "8d" },
        { "retention", "30d", "30d" },
        { "retention_fold", "0.5%", "0.5%" },
        { "max_store_size", "512M", "536870912" },
        { "timeline_retention", "6h", "6h" },
        { "timeline_max_size", "64M", "67108864" },
        { "timeline", "off", "off" },
        { "capture_on", "psi:cpu>50  cpu:pid=42>90 oom", "psi:cpu>50 cpu:pid=42>90 oom" },
        { "capture_before", "2m", "2m" },
        { "capture_duration", "1m", "1m" },
        { "capture_cooldown", "15m", "15m" },
        { "capture_max_pinned", "64M", "67108864" },
        { "capture_frequency", "997", "997" },
        { "timeline_offcpu_min", "5ms", "5ms" },
        { "timeline_offcpu_rate", "500", "500" },
        { "symbol_cache", "64", "64" },
        { "dwarf_min_samples", "200", "200" },
        { "debug_dirs", "/usr/lib/debug /opt/debug", "/usr/lib/debug /opt/debug" },
        { "debuginfod_urls", "https://debuginfod.debian.net", "https://debuginfod.debian.net" },
        { "debuginfod_cache", "/var/cache/dbg", "/var/cache/dbg" },
        { "max_keys", "1000", "1000" },
        { "max_stacks", "2000", "2000" },
        { "kernel_memory", "20M", "20971520" },
        { "unwind_memory", "16M", "16777216" },
        { "clickhouse_url", "http://ch:8123/", "http://ch:8123/" },
        { "host_name", "web-1.example", "web-1.example" },
        { "clickhouse_credentials", "/etc/profd/ch", "/etc/profd/ch" },
        { "clickhouse_timeout", "5s", "5s" },
};

static const char *sample_of(const char *key, const char **ret_shown) {
        for (size_t i = 0; i < ELEMENTSOF(samples); i++)
                if (streq(samples[i].key, key)) {
                        *ret_shown = samples[i].shown;
                        return samples[i].value;
                }
        return NULL;
}

/* What the reload asked to re-apply. */
struct applied {
        unsigned calls[_CONF_APPLY_MAX];
        int fail_with; /* returned for every component: < 0 to refuse */
};

static int record_apply(enum conf_apply what, const struct conf *next, const struct conf *running, void *userdata) {
        struct applied *a = userdata;

        a->calls[what]++;
        return a->fail_with;
}

/* Sets s from the command line as profd parses it: the getopt table built
 * from conf_settings[], then the setting its option stands for. */
static int set_from_flag(struct conf *c, const struct conf_setting *s, bool use_short, const char *value) {
        struct option options[CONF_MAX_OPTIONS + 1];
        char shorts[64] = "", flag[64];
        char *argv[] = { (char *) "profd", flag, (char *) value, NULL };
        const struct conf_setting *found;
        char *error = NULL;
        int argc = 3;
        size_t n;
        int opt, r;

        n = conf_options(options, shorts, sizeof(shorts));
        options[n] = (struct option) {};
        /* a switch takes no argument: --timeline, --no-timeline */
        if (s->type == CONF_BOOL) {
                snprintf(flag, sizeof(flag), "--%s%s", streq(value, "off") ? "no-" : "", conf_setting_option(s));
                argv[2] = NULL;
                argc = 2;
        } else if (use_short)
                snprintf(flag, sizeof(flag), "-%c", s->short_option);
        else
                snprintf(flag, sizeof(flag), "--%s", conf_setting_option(s));
        optind = 0; /* getopt starts over */
        opterr = 0;
        opt = getopt_long(argc, argv, shorts, options, NULL);
        found = conf_setting_of_option(opt);
        CHECK(found == s);
        value = conf_option_value(opt, optarg ? optarg : value);
        CHECK_INT_EQ(getopt_long(argc, argv, shorts, options, NULL), -1);
        if (found != s)
                return -ENOENT;
        r = conf_setting_set(c, found, value, &error);
        free(error);
        return r;
}

static void test_every_key_round_trips_through_file_flag_and_reload(void) {
        struct conf defaults;
        size_t n_reloadable = 0, n_restart = 0;

        CHECK(conf_init(&defaults) == 0);
        CHECK_INT_EQ(conf_n_settings, ELEMENTSOF(samples));
        for (size_t i = 0; i < conf_n_settings; i++) {
                const struct conf_setting *s = &conf_settings[i];
                const char *shown = NULL, *value = sample_of(s->key, &shown);
                _cleanup_free_ char *text = NULL, *error = NULL;
                struct conf from_file, from_flag, running;
                struct applied calls = {};
                struct conf_reload res;
                char buf[256];

                if (!value) {
                        fprintf(stderr, "no sample value for setting '%s'\n", s->key);
                        tests_failed++;
                        continue;
                }
                /* the file */
                CHECK(asprintf(&text, "%s = %s\n", s->key, value) > 0);
                CHECK(conf_init(&from_file) == 0);
                CHECK_INT_EQ(conf_parse_text(&from_file, "f.conf", text, &error), 0);
                CHECK_STR_EQ(conf_setting_format(s, &from_file, buf, sizeof(buf)), shown);
                CHECK(!conf_setting_equal(s, &from_file, &defaults));
                /* it sets its own field and no other */
                for (size_t j = 0; j < conf_n_settings; j++)
                        if (j != i && !conf_setting_equal(&conf_settings[j], &from_file, &defaults)) {
                                fprintf(stderr, "setting %s changed %s too\n", s->key, conf_settings[j].key);
                                tests_failed++;
                        }

                /* the flag, long and short; none for what stays in the file */
                CHECK(conf_init(&from_flag) == 0);
                if (s->file_only) {
                        struct option options[CONF_MAX_OPTIONS + 1];
                        char shorts[64] = "";
                        size_t n = conf_options(options, shorts, sizeof(shorts));

                        for (size_t j = 0; j < n; j++)
                                CHECK(!streq(options[j].name, conf_setting_option(s)));
                } else {
                        CHECK_INT_EQ(set_from_flag(&from_flag, s, false, value), 0);
                        CHECK(conf_setting_equal(s, &from_flag, &from_file));
                        if (s->short_option) {
                                conf_done(&from_flag);
                                CHECK(conf_init(&from_flag) == 0);
                                CHECK_INT_EQ(set_from_flag(&from_flag, s, true, value), 0);
                                CHECK(conf_setting_equal(s, &from_flag, &from_file));
                        }
                }

                /* a reload from the defaults to the file's value */
                CHECK(conf_init(&running) == 0);
                conf_reload_diff(&from_file, &running, 0, record_apply, &calls, &res);
                if (s->apply == CONF_APPLY_RESTART) {
                        n_restart++;
                        CHECK_INT_EQ(res.n_restart, 1);
                        CHECK_INT_EQ(res.applied, 0);
                        CHECK_STR_EQ(res.summary, "");
                        /* the running value stays, for status and the next reload */
                        CHECK(conf_setting_equal(s, &from_file, &defaults));
                        for (unsigned a = 0; a < _CONF_APPLY_MAX; a++)
                                CHECK_INT_EQ(calls.calls[a], 0);
                } else {
                        n_reloadable++;
                        CHECK_INT_EQ(res.n_restart, 0);
                        CHECK_INT_EQ(res.applied, 1u << s->apply);
                        CHECK_INT_EQ(calls.calls[s->apply], 1);
                        CHECK(!conf_setting_equal(s, &from_file, &defaults));
                        /* "frequency 49 -> 99 Hz" */
                        {
                                _cleanup_free_ char *want = NULL;
                                CHECK(asprintf(&want, "%s %s -> %s%s", s->key,
                                               conf_setting_format(s, &defaults, buf, sizeof(buf)), shown,
                                               s->unit ? s->unit : "") > 0);
                                CHECK_STR_EQ(res.summary, want);
                        }
                }
                conf_done(&running);
                conf_done(&from_flag);
                conf_done(&from_file);
        }
        /* frequency, interval, offcpu_min/max/sample, max_clients,
         * client_timeout, retention x3, retention_fold, max_store_size,
         * timeline_retention, timeline_max_size, timeline_offcpu_min,
         * symbol_cache, dwarf_min_samples, debug_dirs */
        CHECK_INT_EQ(n_reloadable, 18);
        CHECK_INT_EQ(n_restart, 28);
        conf_done(&defaults);
}

static void test_reload_keeps_what_failed_or_is_skipped(void) {
        struct conf running, next;
        struct applied calls = { .fail_with = -EIO };
        struct conf_reload res;
        char *error = NULL;

        /* a component that refuses keeps its settings' running values */
        CHECK(conf_init(&running) == 0);
        CHECK(conf_init(&next) == 0);
        CHECK_INT_EQ(conf_parse_text(&next, "f.conf", "frequency = 99\nmax_clients = 3\n", &error), 0);
        conf_reload_diff(&next, &running, 0, record_apply, &calls, &res);
        CHECK_INT_EQ(calls.calls[CONF_APPLY_FREQUENCY], 1);
        CHECK_INT_EQ(calls.calls[CONF_APPLY_CLIENTS], 1);
        CHECK_INT_EQ(res.applied, 0);
        CHECK_INT_EQ(next.frequency_hz, CONF_DEFAULT_FREQUENCY_HZ);
        CHECK_INT_EQ(next.max_clients, CONF_DEFAULT_MAX_CLIENTS);
        CHECK_STR_EQ(res.summary, "");
        /* running took the refused values in exchange: the caller frees it */
        conf_done(&next);
        conf_done(&running);

        /* skipped components (serve-only: no collector) keep them silently;
         * the others apply, and a restart-only one is kept */
        calls = (struct applied) {};
        CHECK(conf_init(&running) == 0);
        CHECK(conf_init(&next) == 0);
        CHECK_INT_EQ(conf_parse_text(&next, "f.conf", "frequency = 99\nmax_clients = 3\nkinds = cpu\n", &error), 0);
        conf_reload_diff(&next, &running, 1u << CONF_APPLY_FREQUENCY, record_apply, &calls, &res);
        CHECK_INT_EQ(calls.calls[CONF_APPLY_FREQUENCY], 0);
        CHECK_INT_EQ(res.applied, 1u << CONF_APPLY_CLIENTS);
        CHECK_INT_EQ(res.n_restart, 1);
        CHECK_INT_EQ(next.frequency_hz, CONF_DEFAULT_FREQUENCY_HZ);
        CHECK_INT_EQ(next.max_clients, 3);
        CHECK(next.kind_cpu && next.kind_offcpu && next.kind_wakeup);
        CHECK_STR_EQ(res.summary, "max_clients 256 -> 3");
        conf_done(&next);
        conf_done(&running);
}

/* A switch: on and off in the file (and their usual spellings), --KEY and
 * --no-KEY on the command line, "on"/"off" in a reload's summary. */
static void test_switches(void) {
        static const struct { const char *v; bool want; } spellings[] = {
                { "on", true }, { "yes", true }, { "true", true }, { "1", true },
                { "off", false }, { "no", false }, { "false", false }, { "0", false },
        };
        const struct conf_setting *s = conf_setting_find("timeline");
        struct conf c;
        char buf[16];

        CHECK(s && s->type == CONF_BOOL);
        for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
                _cleanup_free_ char *text = NULL, *error = NULL;

                CHECK(conf_init(&c) == 0);
                c.timeline = !spellings[i].want;
                CHECK(asprintf(&text, "timeline = %s\n", spellings[i].v) > 0);
                CHECK_INT_EQ(conf_parse_text(&c, "f.conf", text, &error), 0);
                CHECK(c.timeline == spellings[i].want);
                CHECK_STR_EQ(conf_setting_format(s, &c, buf, sizeof(buf)), spellings[i].want ? "on" : "off");
                conf_done(&c);
        }
        /* --timeline after the file's off turns it on again */
        CHECK(conf_init(&c) == 0);
        c.timeline = false;
        CHECK_INT_EQ(set_from_flag(&c, s, false, "on"), 0);
        CHECK(c.timeline);
        conf_done(&c);
        /* the options: both take no argument; only a switch (timeline,
         * offcpu_preempted_stacks, offcpu_self_stacks, kernel_stack_memo[_verify])
         * has a --no- */
        {
                struct option options[CONF_MAX_OPTIONS + 1];
                char shorts[64] = "";
                size_t n = conf_options(options, shorts, sizeof(shorts)), found = 0;

                for (size_t j = 0; j < n; j++) {
                        if (streq(options[j].name, "timeline") || streq(options[j].name, "no-timeline")) {
                                CHECK_INT_EQ(options[j].has_arg, no_argument);
                                found++;
                        } else if (streq(options[j].name, "no-offcpu-preempted-stacks") ||
                                   streq(options[j].name, "no-offcpu-self-stacks") ||
                                   streq(options[j].name, "no-kernel-stack-memo") ||
                                   streq(options[j].name, "no-kernel-stack-memo-verify"))
                                CHECK_INT_EQ(options[j].has_arg, no_argument);
                        else
                                CHECK(strncmp(options[j].name, "no-", 3) != 0);
                }
                CHECK_INT_EQ(found, 2);
                CHECK_STR_EQ(conf_option_value(CONF_OPTION_NEGATED + (int) (s - conf_settings), NULL), "off");
                CHECK_STR_EQ(conf_option_value(CONF_OPTION_FIRST + (int) (s - conf_settings), NULL), "on");
                /* any other setting's value is its argument */
                CHECK_STR_EQ(conf_option_value(CONF_OPTION_FIRST, "x"), "x");
        }
}

int main(void) {
        test_kernel_memory();
        test_unwind_memory();
        test_defaults();
        test_every_key_sets_its_field();
        test_every_listed_key_is_known();
        test_switches();
        test_bad_files_name_file_line_and_key();
        test_sizes();
        test_clickhouse_settings();
        test_none_values();
        test_offcpu_sample_auto();
        test_retention_fold_shares();
        test_every_key_round_trips_through_file_flag_and_reload();
        test_reload_keeps_what_failed_or_is_skipped();
        TESTS_DONE();
}
