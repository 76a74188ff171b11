/* profd: command line, settings, and the run of the manager. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "conf.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "helpers.h"

static void help(void) {
        printf("Usage: profd [OPTION...]\n"
               "Always-on system profiler: samples on-CPU stacks of every process with BPF,\n"
               "stores them symbolized in SQLite, and answers profctl on a Unix socket.\n"
               "Runs in the foreground until SIGTERM or SIGINT, then stores what it holds.\n"
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
               "      --max-keys N        advanced: kernel aggregation map entries (default: sized\n"
               "                          from frequency, CPUs and interval)\n"
               "      --max-stacks N      advanced: kernel stack map entries (default: likewise)\n"
               "  -v, --verbose           log debug messages\n"
               "  -h, --help              show this help\n"
               "      --version           show the version\n"
               "\n"
               "Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH).\n"
               "Query it with profctl(1), e.g.: profctl query --since 10m --folded\n",
               CONF_MAX_FREQUENCY_HZ, CONF_DEFAULT_FREQUENCY_HZ, CONF_DEFAULT_MAX_CLIENTS);
}

/* Creates the parent directories of path that are missing. */
static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        return 0;
}

/* The settings key of a command-line option: --offcpu-min -> offcpu_min. */
static void option_to_key(const char *option, char *key, size_t size) {
        snprintf(key, size, "%s", option);
        for (char *k = key; *k; k++)
                if (*k == '-')
                        *k = '_';
}

int main(int argc, char *argv[]) {
        /* Options that set a setting carry ARG_SETTING (or a short name) and
         * are applied, by their long name, after the configuration file. */
        enum { ARG_VERSION = 0x100, ARG_SETTING };
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
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        /* command-line settings are applied after the file, so keep them */
        const char *cli_options[ELEMENTSOF(options)], *cli_values[ELEMENTSOF(options)];
        size_t n_cli = 0;
        const char *config_path = NULL;
        _cleanup_free_ char *text = NULL;
        struct conf conf;
        manager *m = NULL;
        int c, r, index;

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
                default:
                        fprintf(stderr, "Try 'profd --help'.\n");
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "profd: unexpected argument '%s'\nTry 'profd --help'.\n", argv[optind]);
                return 2;
        }

        if (conf_init(&conf) < 0)
                return log_oom(), 1;

        r = read_full_file(config_path ? config_path : CONF_DEFAULT_PATH, &text);
        if (r < 0 && (config_path || r != -ENOENT)) {
                log_error_errno(r, "Failed to read configuration %s: %m", config_path ? config_path : CONF_DEFAULT_PATH);
                goto finish;
        }
        if (r >= 0) {
                _cleanup_free_ char *error = NULL;
                r = conf_parse_text(&conf, config_path ? config_path : CONF_DEFAULT_PATH, text, &error);
                if (r < 0) {
                        log_error("%s", error ? error : "Out of memory.");
                        goto finish;
                }
        }
        for (size_t i = 0; i < n_cli; i++) {
                _cleanup_free_ char *error = NULL;
                char key[32];

                option_to_key(cli_options[i], key, sizeof(key));
                r = conf_set(&conf, key, cli_values[i], &error);
                if (r < 0) {
                        fprintf(stderr, "profd: --%s: %s\nTry 'profd --help'.\n", cli_options[i],
                                error ? error : strerror(-r));
                        conf_done(&conf);
                        return 2;
                }
        }

        r = mkdir_parents(conf.store_path, 0755);
        if (r >= 0)
                r = mkdir_parents(conf.socket_path, 0755);
        if (r < 0) {
                log_error_errno(r, "Failed to create the directories for %s and %s: %m", conf.store_path,
                                conf.socket_path);
                goto finish;
        }

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
                                .socket_mode = conf.socket_mode,
                                .socket_group = conf.socket_group,
                                .admin_group = conf.admin_group,
                                .max_clients = conf.max_clients,
                                .client_timeout_ns = conf.client_timeout_ns,
                                .symbol_cache_bytes = conf.symbol_cache_bytes,
                                .debuginfod_urls = conf.debuginfod_urls,
                                .debuginfod_cache = conf.debuginfod_cache,
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
