/* profd: command line, settings, and the run of the manager. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "conf.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "helpers.h"
#include "privacy.h"

static void help(void) {
        printf("Usage: profd [OPTION...]\n"
               "Always-on system profiler: samples on-CPU stacks of every process with BPF,\n"
               "stores them symbolized in SQLite, and answers profctl on a Unix socket.\n"
               "Runs in the foreground until SIGTERM or SIGINT, then stores what it holds;\n"
               "SIGHUP reads the settings again.\n"
               "\n"
               "  -c, --config FILE       settings file (default " CONF_DEFAULT_PATH ", if present)\n"
               "  -s, --socket PATH       query socket (default " PROFD_DEFAULT_SOCKET ")\n"
               "  -d, --store PATH        SQLite store (default " PROFD_DEFAULT_STORE ")\n"
               "  -F, --frequency HZ      samples per second per CPU, 1-%d (default %d)\n"
               "  -i, --interval DURATION how often kernel maps are drained, 100ms-1h (default 10s)\n"
               "  -k, --kinds LIST        what to collect: cpu, offcpu, wakeup (default all three)\n"
               "      --offcpu-min DURATION  shortest block attributed to a stack (default 1ms)\n"
               "      --offcpu-max DURATION  longest block attributed, or none (default none)\n"
               "      --max-clients N     clients connected at once (default %d)\n"
               "      --client-timeout DURATION  disconnect a silent client after this (default 30s)\n"
               "      --symbol-cache MIB  memory for symbols and debug info (default 256)\n"
               "      --debug-dirs \"DIR...\"  where separate debug files are looked for\n"
               "                          (default " CONF_DEFAULT_DEBUG_DIRS ")\n"
               "      --debuginfod-urls \"URL...\"  debuginfod servers for debug files found nowhere\n"
               "      --debuginfod-cache DIR  their cache (default: libdebuginfod's)\n"
               "      --socket-mode MODE  permissions of the socket (default 0660)\n"
               "      --socket-group GROUP  its group, whose members may query (default profd)\n"
               "      --admin-group GROUP  members see every process, like root (default none)\n"
               "      --retention-raw DURATION  keep drains as drained this long (default 24h)\n"
               "      --retention-1m DURATION   then 1-minute buckets until this age (default 7d)\n"
               "      --retention DURATION      then 10-minute buckets until this age (default 14d)\n"
               "      --max-store-size SIZE  oldest data goes first above this (default 1G; none)\n"
               "      --clickhouse-url URL  export every drain to ClickHouse's HTTP interface, e.g.\n"
               "                          http://127.0.0.1:8123/ (default: no export; the user and\n"
               "                          password go in the clickhouse_credentials file)\n"
               "      --host-name NAME    this host's name in ClickHouse (default: the host name)\n"
               "      --clickhouse-timeout DURATION  give up one request after this (default 30s)\n"
               "      --max-keys N        advanced: kernel aggregation map entries (default: sized\n"
               "                          from frequency, CPUs and interval)\n"
               "      --max-stacks N      advanced: kernel stack map entries (default: likewise)\n"
               "      --kernel-memory SIZE  kernel memory for the sample and stack maps, at most\n"
               "                          (default 64M; a 2-CPU host takes about 11M)\n"
               "      --unwind-memory SIZE  kernel memory for unwind tables (default 24M)\n"
               "  -v, --verbose           log debug messages\n"
               "  -h, --help              show this help\n"
               "      --version           show the version\n"
               "\n"
               "Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYSLOG, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,\n"
               "CAP_CHECKPOINT_RESTORE and CAP_CHOWN (see profd(8)).\n"
               "Query it with profctl(1), e.g.: profctl query --since 10m --folded\n",
               CONF_MAX_FREQUENCY_HZ, CONF_DEFAULT_FREQUENCY_HZ, CONF_DEFAULT_MAX_CLIENTS);
}

/* The settings key of a command-line option: --offcpu-min -> offcpu_min. */
static void option_to_key(const char *option, char *key, size_t size) {
        snprintf(key, size, "%s", option);
        for (char *k = key; *k; k++)
                if (*k == '-')
                        *k = '_';
}

/* Where the settings come from, kept for SIGHUP: the file, then the
 * command-line options, which still override it after a reload. */
struct settings_source {
        const char *config_path; /* NULL: CONF_DEFAULT_PATH, if present */
        const char *const *cli_options, *const *cli_values;
        size_t n_cli;
};

/* Fills *ret from the defaults, the file and the command line. On a bad
 * setting returns -EINVAL with *ret_error naming it (file:line:key, or the
 * option), and *ret_usage set when the command line is to blame; other
 * errors (unreadable file, -ENOMEM) come with *ret_error too. */
static int settings_load(const struct settings_source *src, struct conf *ret, char **ret_error, bool *ret_usage) {
        const char *path = src->config_path ? src->config_path : CONF_DEFAULT_PATH;
        _cleanup_free_ char *text = NULL;
        struct conf conf;
        int r;

        *ret_usage = false;
        if (conf_init(&conf) < 0)
                return -ENOMEM;
        r = read_full_file(path, &text);
        if (r < 0 && (src->config_path || r != -ENOENT)) {
                (void) format_error(ret_error, "Failed to read configuration %s: %s", path, strerror(-r));
                goto fail;
        }
        if (r >= 0) {
                r = conf_parse_text(&conf, path, text, ret_error);
                if (r < 0)
                        goto fail;
        }
        for (size_t i = 0; i < src->n_cli; i++) {
                _cleanup_free_ char *error = NULL;
                char key[32];

                option_to_key(src->cli_options[i], key, sizeof(key));
                r = conf_set(&conf, key, src->cli_values[i], &error);
                if (r < 0) {
                        *ret_usage = true;
                        (void) format_error(ret_error, "--%s: %s", src->cli_options[i], error ? error : strerror(-r));
                        goto fail;
                }
        }
        r = conf_check(&conf, ret_error);
        if (r < 0)
                goto fail;
        *ret = conf;
        return 0;
fail:
        conf_done(&conf);
        return r;
}

static int settings_reload(struct conf *ret, char **ret_error, void *userdata) {
        bool usage;
        return settings_load(userdata, ret, ret_error, &usage);
}

int main(int argc, char *argv[]) {
        /* Options that set a setting carry ARG_SETTING (or a short name) and
         * are applied, by their long name, after the configuration file. */
        enum { ARG_VERSION = 0x100, ARG_SETTING, ARG_TEST_CLOCK_RATE, ARG_TEST_CLOCK_START_AGO };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "socket", required_argument, NULL, 's' },
                { "store", required_argument, NULL, 'd' },
                { "frequency", required_argument, NULL, 'F' },
                { "interval", required_argument, NULL, 'i' },
                { "kinds", required_argument, NULL, 'k' },
                { "offcpu-min", required_argument, NULL, ARG_SETTING },
                { "offcpu-max", required_argument, NULL, ARG_SETTING },
                { "max-clients", required_argument, NULL, ARG_SETTING },
                { "client-timeout", required_argument, NULL, ARG_SETTING },
                { "symbol-cache", required_argument, NULL, ARG_SETTING },
                { "max-keys", required_argument, NULL, ARG_SETTING },
                { "max-stacks", required_argument, NULL, ARG_SETTING },
                { "kernel-memory", required_argument, NULL, ARG_SETTING },
                { "unwind-memory", required_argument, NULL, ARG_SETTING },
                { "debug-dirs", required_argument, NULL, ARG_SETTING },
                { "debuginfod-urls", required_argument, NULL, ARG_SETTING },
                { "debuginfod-cache", required_argument, NULL, ARG_SETTING },
                { "socket-mode", required_argument, NULL, ARG_SETTING },
                { "socket-group", required_argument, NULL, ARG_SETTING },
                { "admin-group", required_argument, NULL, ARG_SETTING },
                { "retention-raw", required_argument, NULL, ARG_SETTING },
                { "retention-1m", required_argument, NULL, ARG_SETTING },
                { "retention", required_argument, NULL, ARG_SETTING },
                { "max-store-size", required_argument, NULL, ARG_SETTING },
                { "clickhouse-url", required_argument, NULL, ARG_SETTING },
                { "host-name", required_argument, NULL, ARG_SETTING },
                { "clickhouse-timeout", required_argument, NULL, ARG_SETTING },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                /* tests only, not in --help: see manager_config.test_clock_rate */
                { "test-clock-rate", required_argument, NULL, ARG_TEST_CLOCK_RATE },
                { "test-clock-start-ago", required_argument, NULL, ARG_TEST_CLOCK_START_AGO },
                {}
        };
        /* command-line settings are applied after the file, so keep them */
        const char *cli_options[ELEMENTSOF(options)], *cli_values[ELEMENTSOF(options)];
        size_t n_cli = 0;
        const char *config_path = NULL;
        uint64_t test_clock_rate = 0, test_clock_start_ago_s = 0;
        struct settings_source source;
        struct conf conf;
        manager *m = NULL;
        int c, r, index;

        /* Whatever profd writes is private unless it says otherwise (the
         * socket gets socket_mode): the store holds every process's stacks
         * and commands, and the launcher's umask (022 from a shell) must not
         * decide who reads them. Explicit modes follow on every creation. */
        umask(0077);

        while ((c = getopt_long(argc, argv, "c:s:d:F:i:k:vh", options, &index)) >= 0) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 's':
                case 'd':
                case 'F':
                case 'i':
                case 'k':
                case ARG_SETTING:
                        if (c != ARG_SETTING)
                                for (index = 0; options[index].val != c; index++)
                                        ;
                        if (n_cli == ELEMENTSOF(cli_options)) {
                                fprintf(stderr, "profd: too many options\n");
                                return 2;
                        }
                        cli_options[n_cli] = options[index].name;
                        cli_values[n_cli++] = optarg;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("profd %s\n", PROFD_VERSION);
                        return 0;
                case ARG_TEST_CLOCK_RATE:
                case ARG_TEST_CLOCK_START_AGO:
                        if (parse_uint_strict(optarg, c == ARG_TEST_CLOCK_RATE ? 1000000 : 100ULL * 365 * 86400,
                                              c == ARG_TEST_CLOCK_RATE ? &test_clock_rate
                                                                       : &test_clock_start_ago_s) < 0) {
                                fprintf(stderr, "profd: --%s: '%s' is not a whole number in range\n",
                                        options[index].name, optarg);
                                return 2;
                        }
                        break;
                default:
                        fprintf(stderr, "Try 'profd --help'.\n");
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "profd: unexpected argument '%s'\nTry 'profd --help'.\n", argv[optind]);
                return 2;
        }

        source = (struct settings_source) {
                .config_path = config_path,
                .cli_options = cli_options,
                .cli_values = cli_values,
                .n_cli = n_cli,
        };
        {
                _cleanup_free_ char *error = NULL;
                bool usage;

                r = settings_load(&source, &conf, &error, &usage);
                if (r < 0 && usage) {
                        fprintf(stderr, "profd: %s\nTry 'profd --help'.\n", error ? error : strerror(-r));
                        return 2;
                }
                if (r < 0) {
                        log_error("%s", error ? error : "Out of memory.");
                        return 1;
                }
        }

        /* The socket's directory must let clients reach the socket: made
         * first, 0755. The store's own directory is private (0750: its
         * group may list it) unless it is the socket's too; the ones above
         * it are the system's. */
        r = privacy_make_parents(conf.socket_path);
        if (r >= 0) {
                _cleanup_free_ char *store_dir = strdup(conf.store_path), *socket_dir = strdup(conf.socket_path);
                struct stat a, b;
                bool shared;

                if (!store_dir || !socket_dir) {
                        r = log_oom();
                        goto finish;
                }
                shared = stat(dirname(store_dir), &a) >= 0 && stat(dirname(socket_dir), &b) >= 0 &&
                         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
                r = privacy_make_dir(store_dir, PRIVACY_DIR_MODE, shared);
                if (r < 0)
                        log_error_errno(r, "Failed to prepare the directory of the store %s: %m", conf.store_path);
        }
        if (r >= 0 && conf.debuginfod_urls && conf.debuginfod_cache)
                r = privacy_make_dir(conf.debuginfod_cache, PRIVACY_DIR_MODE, false);
        if (r < 0)
                goto finish;

        r = manager_new(&(struct manager_config) {
                                .socket_path = conf.socket_path,
                                .store_path = conf.store_path,
                                .frequency_hz = conf.frequency_hz,
                                .interval_ns = conf.interval_ns,
                                .cpu = conf.kind_cpu,
                                .offcpu = conf.kind_offcpu,
                                .wakeup = conf.kind_wakeup,
                                .offcpu_min_ns = conf.offcpu_min_ns,
                                .offcpu_max_ns = conf.offcpu_max_ns,
                                .max_keys = conf.max_keys,
                                .max_stacks = conf.max_stacks,
                                .kernel_memory = conf.kernel_memory,
                                .unwind_memory = conf.unwind_memory,
                                .socket_mode = conf.socket_mode,
                                .socket_group = conf.socket_group,
                                .admin_group = conf.admin_group,
                                .max_clients = conf.max_clients,
                                .client_timeout_ns = conf.client_timeout_ns,
                                .symbol_cache_bytes = conf.symbol_cache_bytes,
                                .debuginfod_urls = conf.debuginfod_urls,
                                .debuginfod_cache = conf.debuginfod_cache,
                                .conf = &conf,
                                .reload = settings_reload,
                                .reload_userdata = &source,
                                .test_clock_rate = test_clock_rate,
                                .test_clock_start_ago_s = test_clock_start_ago_s,
                        },
                        &m);
        if (r < 0)
                goto finish;
        r = manager_run(m);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
finish:
        manager_free(m);
        conf_done(&conf);
        return r < 0 ? 1 : 0;
}
