/* Strict settings parser: an unknown key or a bad value is an error naming
 * where it is, never silently ignored. */
#include "conf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "duration.h"
#include "macro.h"
#include "helpers.h"

const char *const conf_keys[] = {
        "socket", "socket_mode", "socket_group", "admin_group", "store", "frequency", "interval", "kinds",
        "offcpu_min", "offcpu_max", "max_clients", "client_timeout", "retention_raw", "retention_1m",
        "retention", "max_store_size", "symbol_cache", "debug_dirs", "debuginfod_urls", "debuginfod_cache",
        "max_keys", "max_stacks", "kernel_memory", "unwind_memory", "clickhouse_url", "host_name", "clickhouse_credentials", "clickhouse_timeout",
        NULL,
};

static char **dirs_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
        return NULL;
}

/* Splits a space-separated list of absolute directories; "" is none. */
static int dirs_parse(const char *value, char ***ret, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        char **v = calloc(1, sizeof(char *)), *save = NULL;
        size_t n = 0;

        if (!copy || !v) {
                free(v);
                return -ENOMEM;
        }
        for (char *d = strtok_r(copy, " \t", &save); d; d = strtok_r(NULL, " \t", &save)) {
                char **nv;

                if (d[0] != '/') {
                        dirs_free(v);
                        return format_error(ret_error, "debug_dirs must be absolute directories separated by "
                                                       "spaces, not \"%s\"", d);
                }
                nv = realloc(v, (n + 2) * sizeof(char *));
                if (!nv) {
                        dirs_free(v);
                        return -ENOMEM;
                }
                v = nv;
                v[n] = strdup(d);
                v[++n] = NULL;
                if (!v[n - 1]) {
                        dirs_free(v);
                        return -ENOMEM;
                }
        }
        *ret = v;
        return 0;
}

bool conf_host_name_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 255)
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") == n;
}

int conf_init(struct conf *c) {
        char host[256] = "";

        /* the machine's name labels its data in ClickHouse unless set */
        if (gethostname(host, sizeof(host) - 1) < 0 || !conf_host_name_valid(host))
                snprintf(host, sizeof(host), "localhost");
        *c = (struct conf) {
                .socket_path = strdup(PROFD_DEFAULT_SOCKET),
                .store_path = strdup(PROFD_DEFAULT_STORE),
                .frequency_hz = CONF_DEFAULT_FREQUENCY_HZ,
                .interval_ns = CONF_DEFAULT_INTERVAL_NS,
                .kind_cpu = true,
                .kind_offcpu = true,
                .kind_wakeup = true,
                .offcpu_min_ns = CONF_DEFAULT_OFFCPU_MIN_NS,
                .offcpu_max_ns = UINT64_MAX,
                .socket_mode = 0660,
                .socket_group = strdup("profd"),
                .max_clients = CONF_DEFAULT_MAX_CLIENTS,
                .client_timeout_ns = CONF_DEFAULT_CLIENT_TIMEOUT_NS,
                .symbol_cache_bytes = (uint64_t) CONF_DEFAULT_SYMBOL_CACHE_MIB << 20,
                .retention_raw_ns = CONF_DEFAULT_RETENTION_RAW_NS,
                .retention_1m_ns = CONF_DEFAULT_RETENTION_1M_NS,
                .retention_ns = CONF_DEFAULT_RETENTION_NS,
                .max_store_size = CONF_DEFAULT_MAX_STORE_SIZE,
                .kernel_memory = CONF_DEFAULT_KERNEL_MEMORY,
                .unwind_memory = CONF_DEFAULT_UNWIND_MEMORY,
                .host_name = strdup(host),
                .clickhouse_timeout_ns = CONF_DEFAULT_CLICKHOUSE_TIMEOUT_NS,
        };
        (void) dirs_parse(CONF_DEFAULT_DEBUG_DIRS, &c->debug_dirs, NULL);
        if (!c->socket_path || !c->store_path || !c->socket_group || !c->debug_dirs || !c->host_name) {
                conf_done(c);
                return -ENOMEM;
        }
        return 0;
}

void conf_done(struct conf *c) {
        free(c->socket_path);
        free(c->store_path);
        free(c->socket_group);
        free(c->admin_group);
        free(c->debuginfod_urls);
        free(c->debuginfod_cache);
        c->debuginfod_urls = c->debuginfod_cache = NULL;
        c->debug_dirs = dirs_free(c->debug_dirs);
        free(c->clickhouse_url);
        free(c->host_name);
        free(c->clickhouse_credentials);
        c->clickhouse_url = c->host_name = c->clickhouse_credentials = NULL;
        c->socket_path = c->store_path = c->socket_group = c->admin_group = NULL;
}

/* A group name as getent would accept it, or "" for none. */
static int set_group(char **field, const char *key, const char *value, char **ret_error) {
        char *g;

        for (const char *p = value; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '-' || *p == '.'))
                        return format_error(ret_error, "%s: \"%s\" is not a group name", key, value);
        if (value[0] == '\0') {
                free(*field);
                *field = NULL;
                return 0;
        }
        g = strdup(value);
        if (!g)
                return -ENOMEM;
        free(*field);
        *field = g;
        return 0;
}

static int set_count(uint64_t *field, const char *key, const char *value, uint64_t min, uint64_t max,
                     char **ret_error) {
        uint64_t v;

        if (parse_uint_strict(value, max, &v) < 0 || v < min)
                return format_error(ret_error, "%s must be a whole number from %" PRIu64 " to %" PRIu64 ", not \"%s\"",
                                    key, min, max, value);
        *field = v;
        return 0;
}

static int set_path(char **field, const char *key, const char *value, char **ret_error) {
        char *p;

        if (value[0] != '/')
                return format_error(ret_error, "%s must be an absolute path, not \"%s\"", key, value);
        p = strdup(value);
        if (!p)
                return -ENOMEM;
        free(*field);
        *field = p;
        return 0;
}

/* "cpu,offcpu,wakeup": the kinds to collect, at least one. */
static int set_kinds(struct conf *c, const char *value, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        bool cpu = false, offcpu = false, wakeup = false;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        /* serve-only: no BPF, only queries of the store (tests with known
         * content, a store copied off a host after an incident) */
        if (streq(value, "none")) {
                c->kind_cpu = c->kind_offcpu = c->kind_wakeup = false;
                return 0;
        }
        for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
                if (streq(k, "cpu"))
                        cpu = true;
                else if (streq(k, "offcpu"))
                        offcpu = true;
                else if (streq(k, "wakeup"))
                        wakeup = true;
                else
                        return format_error(ret_error, "unknown kind \"%s\" in kinds (known: cpu, offcpu, wakeup)", k);
        }
        if (!cpu && !offcpu && !wakeup)
                return format_error(ret_error, "kinds must name at least one of cpu, offcpu, wakeup (or be \"none\")");
        c->kind_cpu = cpu;
        c->kind_offcpu = offcpu;
        c->kind_wakeup = wakeup;
        return 0;
}

int conf_set(struct conf *c, const char *key, const char *value, char **ret_error) {
        if (streq(key, "socket"))
                return set_path(&c->socket_path, key, value, ret_error);
        if (streq(key, "store"))
                return set_path(&c->store_path, key, value, ret_error);
        if (streq(key, "frequency")) {
                uint64_t v;

                if (parse_uint_strict(value, CONF_MAX_FREQUENCY_HZ, &v) < 0 || v == 0)
                        return format_error(ret_error, "frequency must be a whole number of Hz from 1 to %d, not \"%s\"",
                                            CONF_MAX_FREQUENCY_HZ, value);
                c->frequency_hz = v;
                return 0;
        }
        if (streq(key, "interval")) {
                uint64_t ns;

                if (parse_duration_ns(value, &ns) < 0 || ns < CONF_MIN_INTERVAL_NS || ns > CONF_MAX_INTERVAL_NS)
                        return format_error(ret_error, "interval must be a duration from 100ms to 1h (e.g. \"10s\"), not \"%s\"",
                                    value);
                c->interval_ns = ns;
                return 0;
        }
        if (streq(key, "kinds"))
                return set_kinds(c, value, ret_error);
        if (streq(key, "socket_mode")) {
                char *end;
                unsigned long mode;

                errno = 0;
                mode = strtoul(value, &end, 8);
                if (value[0] < '0' || value[0] > '7' || *end != '\0' || errno != 0 || mode > 0777)
                        return format_error(ret_error, "socket_mode must be an octal mode such as 0660, not \"%s\"", value);
                c->socket_mode = mode;
                return 0;
        }
        if (streq(key, "socket_group"))
                return set_group(&c->socket_group, key, value, ret_error);
        if (streq(key, "admin_group"))
                return set_group(&c->admin_group, key, value, ret_error);
        if (streq(key, "max_clients")) {
                uint64_t v = 0;
                int r = set_count(&v, key, value, 1, 65536, ret_error);
                if (r >= 0)
                        c->max_clients = v;
                return r;
        }
        if (streq(key, "client_timeout")) {
                uint64_t ns;

                if (parse_duration_ns(value, &ns) < 0 || ns < CONF_MIN_INTERVAL_NS)
                        return format_error(ret_error, "client_timeout must be a duration of at least 100ms, not \"%s\"", value);
                c->client_timeout_ns = ns;
                return 0;
        }
        if (streq(key, "debuginfod_urls")) {
                char *u;

                /* space-separated http(s) URLs, as $DEBUGINFOD_URLS */
                if (value[0] && strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
                        return format_error(ret_error, "debuginfod_urls must be http:// or https:// URLs separated "
                                                       "by spaces, not \"%s\"", value);
                u = value[0] ? strdup(value) : NULL;
                if (value[0] && !u)
                        return -ENOMEM;
                free(c->debuginfod_urls);
                c->debuginfod_urls = u;
                return 0;
        }
        if (streq(key, "clickhouse_url")) {
                char *u;

                /* ClickHouse's HTTP interface; "" turns the export off */
                if (value[0] && ((strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0) ||
                                 strpbrk(value, " \t@")))
                        return format_error(ret_error, "clickhouse_url must be an http:// or https:// URL without "
                                                       "spaces or credentials (those go in clickhouse_credentials), "
                                                       "not \"%s\"", value);
                u = value[0] ? strdup(value) : NULL;
                if (value[0] && !u)
                        return -ENOMEM;
                free(c->clickhouse_url);
                c->clickhouse_url = u;
                return 0;
        }
        if (streq(key, "host_name")) {
                char *h;

                if (!conf_host_name_valid(value))
                        return format_error(ret_error, "host_name must be 1 to 255 letters, digits, '.', '-', '_' "
                                                       "or ':', not \"%s\"", value);
                h = strdup(value);
                if (!h)
                        return -ENOMEM;
                free(c->host_name);
                c->host_name = h;
                return 0;
        }
        if (streq(key, "clickhouse_credentials")) {
                if (value[0] == '\0') {
                        free(c->clickhouse_credentials);
                        c->clickhouse_credentials = NULL;
                        return 0;
                }
                return set_path(&c->clickhouse_credentials, key, value, ret_error);
        }
        if (streq(key, "clickhouse_timeout")) {
                uint64_t ns;

                if (parse_duration_ns(value, &ns) < 0 || ns < CONF_MIN_INTERVAL_NS || ns > CONF_MAX_INTERVAL_NS)
                        return format_error(ret_error, "clickhouse_timeout must be a duration from 100ms to 1h "
                                                       "(e.g. \"30s\"), not \"%s\"", value);
                c->clickhouse_timeout_ns = ns;
                return 0;
        }
        if (streq(key, "debuginfod_cache"))
                return set_path(&c->debuginfod_cache, key, value, ret_error);
        if (streq(key, "symbol_cache")) {
                uint64_t mib = 0;
                int r = set_count(&mib, key, value, 1, 1 << 20, ret_error);
                if (r >= 0)
                        c->symbol_cache_bytes = mib << 20;
                return r;
        }
        /* Advanced: kernel map sizes, to bound memory or to test a full map.
         * The kernel rounds hash maps up to powers of two internally. */
        if (streq(key, "max_keys"))
                return set_count(&c->max_keys, key, value, 1, 1 << 24, ret_error);
        if (streq(key, "max_stacks"))
                return set_count(&c->max_stacks, key, value, 1, 1 << 20, ret_error);
        if (streq(key, "kernel_memory")) {
                uint64_t v;

                if (parse_size(value, &v) < 0 || v < CONF_MIN_KERNEL_MEMORY || v > CONF_MAX_KERNEL_MEMORY)
                        return format_error(ret_error, "kernel_memory must be a size from 1M to 4G (bytes, or with "
                                                       "a K, M or G suffix), not \"%s\"", value);
                c->kernel_memory = v;
                return 0;
        }
        if (streq(key, "unwind_memory")) {
                uint64_t v;

                if (parse_size(value, &v) < 0 || v < CONF_MIN_UNWIND_MEMORY || v > CONF_MAX_UNWIND_MEMORY)
                        return format_error(ret_error, "unwind_memory must be a size from 64K to 4G (bytes, or with "
                                                       "a K, M or G suffix), not \"%s\"", value);
                c->unwind_memory = v;
                return 0;
        }
        if (streq(key, "retention_raw") || streq(key, "retention_1m") || streq(key, "retention")) {
                uint64_t *field = streq(key, "retention_raw") ? &c->retention_raw_ns
                                  : streq(key, "retention_1m") ? &c->retention_1m_ns : &c->retention_ns;
                uint64_t ns;

                /* under a minute nothing would ever reach a coarser level */
                if (parse_duration_ns(value, &ns) < 0 || ns < 60 * NSEC_PER_SEC)
                        return format_error(ret_error, "%s must be a duration of at least 1m (e.g. \"24h\", \"14d\"), "
                                                       "not \"%s\"", key, value);
                *field = ns;
                return 0;
        }
        if (streq(key, "max_store_size")) {
                uint64_t v;

                if (streq(value, "none")) {
                        c->max_store_size = 0;
                        return 0;
                }
                if (parse_size(value, &v) < 0 || v < CONF_MIN_MAX_STORE_SIZE)
                        return format_error(ret_error, "max_store_size must be a size of at least 1M (bytes, or "
                                                       "with a K, M, G or T suffix) or \"none\", not \"%s\"", value);
                c->max_store_size = v;
                return 0;
        }
        if (streq(key, "debug_dirs")) {
                char **v;
                int r = dirs_parse(value, &v, ret_error);

                if (r < 0)
                        return r;
                dirs_free(c->debug_dirs);
                c->debug_dirs = v;
                return 0;
        }
        if (streq(key, "offcpu_min") || streq(key, "offcpu_max")) {
                bool is_max = streq(key, "offcpu_max");
                uint64_t ns;

                if (is_max && streq(value, "none")) {
                        c->offcpu_max_ns = UINT64_MAX;
                        return 0;
                }
                if (parse_duration_ns(value, &ns) < 0)
                        return format_error(ret_error, "%s must be a duration (e.g. \"1ms\", \"500us\")%s, not \"%s\"",
                                            key, is_max ? " or \"none\"" : "", value);
                if (is_max)
                        c->offcpu_max_ns = ns;
                else
                        c->offcpu_min_ns = ns;
                if (c->offcpu_min_ns > c->offcpu_max_ns)
                        return format_error(ret_error, "offcpu_min is larger than offcpu_max");
                return 0;
        }
        return -ENOENT;
}

int parse_size(const char *s, uint64_t *ret) {
        static const char units[] = "KMGT";
        const char *u;
        char *end;
        uint64_t v, mult = 1;

        if (!s || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0)
                return -ERANGE;
        if (*end != '\0') {
                u = strchr(units, *end);
                /* "1G", "1GB", "1GiB" all mean 2^30 */
                if (!u || !(end[1] == '\0' || streq(end + 1, "B") || streq(end + 1, "iB")))
                        return -EINVAL;
                mult = 1ULL << (10 * (u - units + 1));
        }
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

int conf_check(const struct conf *c, char **ret_error) {
        char a[32], b[32];

        if (c->retention_raw_ns > c->retention_1m_ns)
                return format_error(ret_error, "retention_raw (%s) is longer than retention_1m (%s)",
                                    format_duration(a, sizeof(a), c->retention_raw_ns),
                                    format_duration(b, sizeof(b), c->retention_1m_ns));
        if (c->retention_1m_ns > c->retention_ns)
                return format_error(ret_error, "retention_1m (%s) is longer than retention (%s)",
                                    format_duration(a, sizeof(a), c->retention_1m_ns),
                                    format_duration(b, sizeof(b), c->retention_ns));
        return 0;
}

/* "socket, socket_mode, ...": for the error about an unknown key. */
static char *known_keys(void) {
        size_t n = 1;
        char *s;

        for (size_t i = 0; conf_keys[i]; i++)
                n += strlen(conf_keys[i]) + 2;
        s = malloc(n);
        if (!s)
                return NULL;
        s[0] = '\0';
        for (size_t i = 0; conf_keys[i]; i++) {
                if (i > 0)
                        strcat(s, ", ");
                strcat(s, conf_keys[i]);
        }
        return s;
}

static char *strip(char *s) {
        char *e;

        s += strspn(s, " \t");
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

int conf_parse_text(struct conf *c, const char *name, const char *text, char **ret_error) {
        _cleanup_free_ char *copy = strdup(text);
        unsigned lineno = 0;
        char *line, *next;

        if (!copy)
                return -ENOMEM;
        for (line = copy; line; line = next) {
                _cleanup_free_ char *why = NULL;
                char *eq, *key, *value;
                int r;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                line = strip(line);
                if (line[0] == '\0' || line[0] == '#')
                        continue;
                eq = strchr(line, '=');
                if (!eq)
                        return format_error(ret_error, "%s:%u: expected \"key = value\", got \"%s\"", name, lineno, line);
                *eq = '\0';
                key = strip(line);
                value = strip(eq + 1);
                if (key[0] == '\0')
                        return format_error(ret_error, "%s:%u: missing key before '='", name, lineno);
                r = conf_set(c, key, value, &why);
                if (r == -ENOENT) {
                        _cleanup_free_ char *known = known_keys();
                        if (!known)
                                return -ENOMEM;
                        return format_error(ret_error, "%s:%u: unknown key '%s' (known: %s)", name, lineno, key, known);
                }
                if (r == -EINVAL)
                        return format_error(ret_error, "%s:%u: key '%s': %s", name, lineno, key, why);
                if (r < 0)
                        return r;
        }
        return 0;
}
