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
#include "heap.h"
#include "helpers.h"
#include "privacy.h"

static void help(void) {
        printf("Usage: profd [OPTION...]\n"
               "Always-on system profiler: samples on-CPU stacks of every process with BPF,\n"
               "stores them symbolized in SQLite, and answers profctl on a Unix socket.\n"
               "Runs in the foreground until SIGTERM or SIGINT, then stores what it holds;\n"
               "SIGHUP reads the settings again.\n"
               "\n"
               "  -c, --config FILE       settings file (default " CONF_DEFAULT_PATH ", if present)\n");
        /* one line for each setting, from its row in conf.c */
        conf_print_help(stdout);
        printf("  -v, --verbose           log debug messages\n"
               "  -h, --help              show this help\n"
               "      --version           show the version\n"
               "\n"
               "Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYSLOG, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,\n"
               "CAP_CHECKPOINT_RESTORE and CAP_CHOWN (see profd(8)).\n"
               "Query it with profctl(1), e.g.: profctl query --since 10m --folded\n");
}

/* Where the settings come from, kept for SIGHUP: the file, then the
 * command-line options, which still override it after a reload. */
struct settings_source {
        const char *config_path; /* NULL: CONF_DEFAULT_PATH, if present */
        const struct conf_setting *const *cli_settings;
        const char *const *cli_values;
        size_t n_cli;
};

/* Fills *ret from the defaults, the file and the command line. On a bad
 * setting returns -EINVAL with *ret_error naming it (file:line:key, or the
 * option), and *ret_usage set when the command line is to blame; other
 * errors (unreadable file, -ENOMEM) come with *ret_error too. */
static void conf_donep(struct conf **c) {
        if (*c)
                conf_done(*c);
}

static int settings_load(const struct settings_source *src, struct conf *ret, char **ret_error, bool *ret_usage) {
        const char *path = src->config_path ? src->config_path : CONF_DEFAULT_PATH;
        _cleanup_free_ char *text = NULL;
        struct conf conf;
        _cleanup_(conf_donep) struct conf *owned = NULL; /* conf, until it is handed over */
        int r;

        *ret_usage = false;
        if (conf_init(&conf) < 0)
                return -ENOMEM;
        owned = &conf;
        r = read_full_file(path, &text);
        if (r < 0 && (src->config_path || r != -ENOENT)) {
                (void) format_error(ret_error, "Failed to read configuration %s: %s", path, strerror(-r));
                return r;
        }
        if (r >= 0) {
                r = conf_parse_text(&conf, path, text, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < src->n_cli; i++) {
                _cleanup_free_ char *error = NULL;

                r = conf_setting_set(&conf, src->cli_settings[i], src->cli_values[i], &error);
                if (r < 0) {
                        *ret_usage = true;
                        (void) format_error(ret_error, "--%s: %s", conf_setting_option(src->cli_settings[i]),
                                            error ? error : strerror(-r));
                        return r;
                }
        }
        r = conf_check(&conf, ret_error);
        if (r < 0)
                return r;
        *ret = conf;
        owned = NULL;
        return 0;
}

static int settings_reload(struct conf *ret, char **ret_error, void *userdata) {
        bool usage;
        return settings_load(userdata, ret, ret_error, &usage);
}

/* The socket's directory must let clients reach the socket: made first,
 * 0755. The store's own directory is private (0750: its group may list it)
 * unless it is the socket's too; the ones above it are the system's. The
 * debuginfod cache is private. Returns 0 or a negative errno, logged. */
static int prepare_directories(const struct conf *conf) {
        _cleanup_free_ char *store_dir = NULL, *socket_dir = NULL;
        struct stat a, b;
        bool shared;
        int r;

        r = privacy_make_parents(conf->socket_path);
        if (r < 0)
                return r;
        store_dir = strdup(conf->store_path);
        socket_dir = strdup(conf->socket_path);
        if (!store_dir || !socket_dir)
                return log_oom();
        shared = stat(dirname(store_dir), &a) >= 0 && stat(dirname(socket_dir), &b) >= 0 &&
                 a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        r = privacy_make_dir(store_dir, PRIVACY_DIR_MODE, shared);
        if (r < 0)
                return log_error_errno(r, "Failed to prepare the directory of the store %s: %m", conf->store_path);
        if (conf->debuginfod_urls && conf->debuginfod_cache)
                return privacy_make_dir(conf->debuginfod_cache, PRIVACY_DIR_MODE, false);
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(manager *, manager_free);

/* Runs profd with its settings until SIGTERM/SIGINT. Returns 0 or a
 * negative errno, logged. */
static int run(struct conf *conf, struct settings_source *source, uint64_t test_clock_rate,
               uint64_t test_clock_start_ago_s) {
        _cleanup_(manager_freep) manager *m = NULL;
        int r;

        r = prepare_directories(conf);
        if (r < 0)
                return r;
        r = manager_new(&(struct manager_config) {
                                .conf = conf,
                                .reload = settings_reload,
                                .reload_userdata = source,
                                .test_clock_rate = test_clock_rate,
                                .test_clock_start_ago_s = test_clock_start_ago_s,
                        },
                        &m);
        if (r < 0)
                return r;
        r = manager_run(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_TEST_CLOCK_RATE, ARG_TEST_CLOCK_START_AGO };
        static const struct option own_options[] = {
                { "config", required_argument, NULL, 'c' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                /* tests only, not in --help: see manager_config.test_clock_rate */
                { "test-clock-rate", required_argument, NULL, ARG_TEST_CLOCK_RATE },
                { "test-clock-start-ago", required_argument, NULL, ARG_TEST_CLOCK_START_AGO },
        };
        /* profd's own options, then one for each setting (conf_settings[]),
         * which are applied after the configuration file */
        struct option options[ELEMENTSOF(own_options) + CONF_MAX_OPTIONS + 1];
        char shorts[64] = "c:vh";
        /* command-line settings are applied after the file, so keep them */
        const struct conf_setting *cli_settings[ELEMENTSOF(options)];
        const char *cli_values[ELEMENTSOF(options)];
        size_t n_cli = 0, n_options;
        const char *config_path = NULL;
        uint64_t test_clock_rate = 0, test_clock_start_ago_s = 0;
        struct settings_source source;
        struct conf conf;
        int c, r, index;

        memcpy(options, own_options, sizeof(own_options));
        n_options = ELEMENTSOF(own_options);
        n_options += conf_options(options + n_options, shorts, sizeof(shorts));
        options[n_options] = (struct option) {};

        /* Whatever profd writes is private unless it says otherwise (the
         * socket gets socket_mode): the store holds every process's stacks
         * and commands, and the launcher's umask (022 from a shell) must not
         * decide who reads them. Explicit modes follow on every creation. */
        umask(0077);
        heap_setup();

        while ((c = getopt_long(argc, argv, shorts, options, &index)) >= 0) {
                const struct conf_setting *setting = conf_setting_of_option(c);

                if (setting) {
                        if (n_cli == ELEMENTSOF(cli_settings)) {
                                fprintf(stderr, "profd: too many options\n");
                                return 2;
                        }
                        cli_settings[n_cli] = setting;
                        cli_values[n_cli++] = conf_option_value(c, optarg);
                        continue;
                }
                switch (c) {
                case 'c':
                        config_path = optarg;
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
                .cli_settings = cli_settings,
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

        r = run(&conf, &source, test_clock_rate, test_clock_start_ago_s);
        conf_done(&conf);
        return r < 0 ? 1 : 0;
}
