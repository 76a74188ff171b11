/* Strict settings parser: an unknown key or a bad value is an error naming
 * where it is, never silently ignored. */
#include "conf.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "chbatch.h"
#include "config.h"
#include "duration.h"
#include "macro.h"
#include "helpers.h"
#include "log.h"

static char **dirs_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
        return NULL;
}

/* Whether one word of a list setting is good, or why not (-EINVAL, with
 * *ret_error set). */
static int dir_check(const char *d, char **ret_error) {
        if (d[0] != '/')
                return format_error(ret_error, "debug_dirs must be absolute directories separated by "
                                               "spaces, not \"%s\"", d);
        return 0;
}

static int capture_check(const char *d, char **ret_error) {
        struct capture_cond c;
        const char *err;
        int r;

        r = capture_cond_parse(d, &c, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return format_error(ret_error, "capture_on: \"%s\": %s", d, err);
        capture_cond_done(&c);
        if (c.kind == CAPTURE_MANUAL)
                return format_error(ret_error, "capture_on: \"manual\" is for profctl capture start, not a setting");
        return 0;
}

/* Splits a space-separated list, each word checked; "" is none. */
static int list_parse(const char *value, int (*check)(const char *d, char **ret_error), char ***ret,
                      char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        char **v = calloc(1, sizeof(char *)), *save = NULL;
        size_t n = 0;

        if (!copy || !v) {
                free(v);
                return -ENOMEM;
        }
        for (char *d = strtok_r(copy, " \t", &save); d; d = strtok_r(NULL, " \t", &save)) {
                char **nv;

                int r = check(d, ret_error);

                if (r < 0) {
                        dirs_free(v);
                        return r;
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

int conf_init(struct conf *c) {
        char host[256] = "";

        /* the machine's name labels its data in ClickHouse unless set */
        if (gethostname(host, sizeof(host) - 1) < 0 || !chbatch_host_name_valid(host))
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
                .offcpu_sample_ns = CONF_OFFCPU_SAMPLE_AUTO,
                .socket_mode = 0660,
                .socket_group = strdup("profd"),
                .max_clients = CONF_DEFAULT_MAX_CLIENTS,
                .client_timeout_ns = CONF_DEFAULT_CLIENT_TIMEOUT_NS,
                .symbol_cache_bytes = (uint64_t) CONF_DEFAULT_SYMBOL_CACHE_MIB << 20,
                .retention_raw_ns = CONF_DEFAULT_RETENTION_RAW_NS,
                .retention_1m_ns = CONF_DEFAULT_RETENTION_1M_NS,
                .retention_ns = CONF_DEFAULT_RETENTION_NS,
                .max_store_size = CONF_DEFAULT_MAX_STORE_SIZE,
                .retention_fold_ppm = CONF_DEFAULT_RETENTION_FOLD_PPM,
                .timeline_retention_ns = CONF_DEFAULT_TIMELINE_RETENTION_NS,
                .timeline_max_size = CONF_DEFAULT_TIMELINE_MAX_SIZE,
                .timeline = true,
                .kernel_stack_memo = true,
                .capture_before_ns = CONF_DEFAULT_CAPTURE_BEFORE_NS,
                .capture_duration_ns = CONF_DEFAULT_CAPTURE_DURATION_NS,
                .capture_cooldown_ns = CONF_DEFAULT_CAPTURE_COOLDOWN_NS,
                .capture_max_pinned = CONF_DEFAULT_CAPTURE_MAX_PINNED,
                .capture_frequency_hz = CONF_DEFAULT_CAPTURE_FREQUENCY_HZ,
                .timeline_offcpu_min_ns = CONF_DEFAULT_TIMELINE_OFFCPU_MIN_NS,
                .timeline_offcpu_rate = CONF_DEFAULT_TIMELINE_OFFCPU_RATE,
                .dwarf_min_samples = CONF_DEFAULT_DWARF_MIN_SAMPLES,
                .kernel_memory = CONF_DEFAULT_KERNEL_MEMORY,
                .unwind_memory = CONF_DEFAULT_UNWIND_MEMORY,
                .host_name = strdup(host),
                .clickhouse_timeout_ns = CONF_DEFAULT_CLICKHOUSE_TIMEOUT_NS,
        };
        (void) list_parse(CONF_DEFAULT_DEBUG_DIRS, dir_check, &c->debug_dirs, NULL);
        (void) list_parse("", capture_check, &c->capture_on, NULL);
        if (!c->socket_path || !c->store_path || !c->socket_group || !c->debug_dirs || !c->capture_on ||
            !c->host_name) {
                conf_done(c);
                return -ENOMEM;
        }
        return 0;
}


#define STR_(x) #x
#define STR(x) STR_(x)
#define FIELD(f) offsetof(struct conf, f)

/* The kinds are one setting kept in three adjacent bools. */
_Static_assert(offsetof(struct conf, kind_wakeup) == offsetof(struct conf, kind_cpu) + 2 * sizeof(bool),
               "kinds: kind_cpu, kind_offcpu, kind_wakeup must be adjacent");

/* offcpu_min and offcpu_max: blocks between them are attributed to stacks. */
static int check_offcpu_order(const struct conf *c, char **ret_error) {
        if (c->offcpu_min_ns > c->offcpu_max_ns)
                return format_error(ret_error, "offcpu_min is larger than offcpu_max");
        return 0;
}

/* offcpu_sample: none (0), auto, or at least a millisecond (BPF draws in us). */
static int check_offcpu_sample(const struct conf *c, char **ret_error) {
        if (c->offcpu_sample_ns != 0 && c->offcpu_sample_ns < CONF_MIN_OFFCPU_SAMPLE_NS)
                return format_error(ret_error, "offcpu_sample must be none or at least 1ms");
        return 0;
}

/* Retention levels below a minute: nothing would ever reach a coarser one. */
#define RETENTION_MIN_NS (60 * NSEC_PER_SEC)
#define RETENTION_MUST_BE "a duration of at least 1m (e.g. \"24h\", \"14d\")"

const struct conf_setting conf_settings[] = {
        { .key = "socket", .type = CONF_PATH, .offset = FIELD(socket_path), .short_option = 's',
          .help_arg = "PATH", .help = "query socket (default " PROFD_DEFAULT_SOCKET ")" },
        { .key = "socket_mode", .type = CONF_MODE, .offset = FIELD(socket_mode),
          .must_be = "an octal mode such as 0660",
          .help_arg = "MODE", .help = "permissions of the socket (default 0660)" },
        { .key = "socket_group", .type = CONF_GROUP, .offset = FIELD(socket_group),
          .help_arg = "GROUP", .help = "its group, whose members may query (default profd)" },
        { .key = "admin_group", .type = CONF_GROUP, .offset = FIELD(admin_group),
          .help_arg = "GROUP", .help = "members see every process, like root (default none)" },
        { .key = "store", .type = CONF_PATH, .offset = FIELD(store_path), .short_option = 'd',
          .help_arg = "PATH", .help = "SQLite store (default " PROFD_DEFAULT_STORE ")" },
        { .key = "frequency", .type = CONF_UINT, .offset = FIELD(frequency_hz), .apply = CONF_APPLY_FREQUENCY,
          .min = 1, .max = CONF_MAX_FREQUENCY_HZ, .unit = " Hz", .short_option = 'F',
          .must_be = "a whole number of Hz from 1 to " STR(CONF_MAX_FREQUENCY_HZ),
          .help_arg = "HZ",
          .help = "samples per second per CPU, 1-" STR(CONF_MAX_FREQUENCY_HZ) " (default "
                  STR(CONF_DEFAULT_FREQUENCY_HZ) ")" },
        { .key = "interval", .type = CONF_DURATION, .offset = FIELD(interval_ns), .apply = CONF_APPLY_INTERVAL,
          .min = CONF_MIN_INTERVAL_NS, .max = CONF_MAX_INTERVAL_NS, .short_option = 'i',
          .must_be = "a duration from 100ms to 1h (e.g. \"10s\")",
          .help_arg = "DURATION", .help = "how often kernel maps are drained, 100ms-1h (default 10s)" },
        { .key = "kinds", .type = CONF_KINDS, .offset = FIELD(kind_cpu), .short_option = 'k',
          .help_arg = "LIST", .help = "what to collect: cpu, offcpu, wakeup (default all three)" },
        { .key = "offcpu_min", .type = CONF_DURATION, .offset = FIELD(offcpu_min_ns), .apply = CONF_APPLY_OFFCPU,
          .check = check_offcpu_order, .must_be = "a duration (e.g. \"1ms\", \"500us\")",
          .help_arg = "DURATION", .help = "shortest block attributed to a stack (default 1ms)" },
        { .key = "offcpu_max", .type = CONF_DURATION, .offset = FIELD(offcpu_max_ns), .apply = CONF_APPLY_OFFCPU,
          .has_none = true, .none_value = UINT64_MAX, .check = check_offcpu_order,
          .must_be = "a duration (e.g. \"1ms\", \"500us\") or \"none\"",
          .help_arg = "DURATION", .help = "longest block attributed, or none (default none)" },
        { .key = "offcpu_sample", .type = CONF_DURATION, .offset = FIELD(offcpu_sample_ns),
          .apply = CONF_APPLY_OFFCPU, .has_none = true, .none_value = 0, .check = check_offcpu_sample,
          .has_auto = true, .auto_value = CONF_OFFCPU_SAMPLE_AUTO, .max = CONF_MAX_OFFCPU_SAMPLE_NS,
          .must_be = "a duration from 1ms to 1h (e.g. \"20ms\"), \"auto\" or \"none\"",
          .help_arg = "DURATION",
          .help = "walk blocks shorter than it by a draw, each walked one counted as\n"
                  "DURATION (an unbiased estimate); auto: the on-CPU sampling period\n"
                  "(1/frequency); none walks every block (default none)" },
        /* read at start: fixed in the BPF programs at load */
        { .key = "offcpu_preempted_stacks", .type = CONF_BOOL, .offset = FIELD(offcpu_preempted_stacks),
          .help_arg = "", .help = "walk preempted waits' (state R) stacks like other blocks' (default\n"
                                  "off: their time is kept per thread as one [preempted] frame)",
          .help_negated = "keep preempted waits per thread as [preempted], without stacks" },
        { .key = "offcpu_self_stacks", .type = CONF_BOOL, .offset = FIELD(offcpu_self_stacks),
          .help_arg = "", .help = "walk the stacks of profd's own threads' blocks and of their wakers\n"
                                  "(default off: their time is kept per thread as one [unwalked] frame)",
          .help_negated = "keep profd's own blocks per thread as [unwalked], without stacks" },
        { .key = "kernel_stack_memo", .type = CONF_BOOL, .offset = FIELD(kernel_stack_memo),
          .help_arg = "", .help = "take the off-CPU kernel stacks a walk gave before from a memo, by\n"
                                  "the words of the stack that decide the walk (default on)",
          .help_negated = "walk every off-CPU kernel stack" },
        { .key = "kernel_stack_memo_verify", .type = CONF_BOOL, .offset = FIELD(kernel_stack_memo_verify),
          .help_arg = "", .help = "walk the memo's hits too, compare, keep the walk and count those that\n"
                                  "differ (status offcpu.kernel_stack_memo.mismatches; default off)",
          .help_negated = "trust the memo's hits" },
        { .key = "max_clients", .type = CONF_UINT, .offset = FIELD(max_clients), .apply = CONF_APPLY_CLIENTS,
          .min = 1, .max = 65536,
          .help_arg = "N", .help = "clients connected at once (default " STR(CONF_DEFAULT_MAX_CLIENTS) ")" },
        { .key = "client_timeout", .type = CONF_DURATION, .offset = FIELD(client_timeout_ns),
          .apply = CONF_APPLY_CLIENTS, .min = CONF_MIN_INTERVAL_NS,
          .must_be = "a duration of at least 100ms",
          .help_arg = "DURATION", .help = "disconnect a silent client after this (default 30s)" },
        { .key = "retention_raw", .type = CONF_DURATION, .offset = FIELD(retention_raw_ns),
          .apply = CONF_APPLY_WRITER, .min = RETENTION_MIN_NS, .must_be = RETENTION_MUST_BE,
          .help_arg = "DURATION", .help = "keep drains as drained this long (default 24h)" },
        { .key = "retention_1m", .type = CONF_DURATION, .offset = FIELD(retention_1m_ns),
          .apply = CONF_APPLY_WRITER, .min = RETENTION_MIN_NS, .must_be = RETENTION_MUST_BE,
          .help_arg = "DURATION", .help = "then 1-minute buckets until this age (default 7d)" },
        { .key = "retention", .type = CONF_DURATION, .offset = FIELD(retention_ns),
          .apply = CONF_APPLY_WRITER, .min = RETENTION_MIN_NS, .must_be = RETENTION_MUST_BE,
          .help_arg = "DURATION", .help = "then 10-minute buckets until this age (default 14d)" },
        { .key = "retention_fold", .type = CONF_SHARE, .offset = FIELD(retention_fold_ppm),
          .apply = CONF_APPLY_WRITER, .min = 1, .max = CONF_MAX_RETENTION_FOLD_PPM, .has_none = true, .none_value = 0,
          .must_be = "a share from 0.0001% to 10% (e.g. \"0.05%\") or \"none\"",
          .help_arg = "SHARE", .help = "merged buckets fold frames below this share of a bucket into [folded]\n"
                                       "(default 0.05%; none keeps every stack whole)" },
        { .key = "max_store_size", .type = CONF_SIZE, .offset = FIELD(max_store_size), .apply = CONF_APPLY_WRITER,
          .min = CONF_MIN_MAX_STORE_SIZE, .has_none = true, .none_value = 0,
          .must_be = "a size of at least 1M (bytes, or with a K, M, G or T suffix) or \"none\"",
          .help_arg = "SIZE", .help = "above this, old drains are merged early, then the oldest data\n"
                                      "goes (default 1G; none)" },
        { .key = "timeline_retention", .type = CONF_DURATION, .offset = FIELD(timeline_retention_ns),
          .apply = CONF_APPLY_WRITER, .min = RETENTION_MIN_NS, .must_be = RETENTION_MUST_BE,
          .help_arg = "DURATION", .help = "keep each on-CPU sample's time this long (default 1h)" },
        { .key = "timeline_max_size", .type = CONF_SIZE, .offset = FIELD(timeline_max_size),
          .apply = CONF_APPLY_WRITER, .min = CONF_MIN_MAX_STORE_SIZE, .has_none = true, .none_value = 0,
          .must_be = "a size of at least 1M (bytes, or with a K, M, G or T suffix) or \"none\"",
          .help_arg = "SIZE", .help = "the timeline's oldest blocks go first above this (default 256M; none)" },
        /* read at start: off, the BPF programs log no block and time no
         * sample, and the off-CPU log's kernel memory is not allocated */
        { .key = "timeline", .type = CONF_BOOL, .offset = FIELD(timeline),
          .help_arg = "", .help = "keep each sample's and off-CPU block's time (default on)",
          .help_negated = "store the aggregates only: no heatmap, windows by drains" },
        /* captures (issue 44): read at start */
        { .key = "capture_on", .type = CONF_CAPTURES, .offset = FIELD(capture_on),
          .help_arg = "\"COND...\"",
          .help = "capture when a condition rises, e.g. \"psi:cpu>50 cpu:pid=42>90\"\n(default none)" },
        { .key = "capture_before", .type = CONF_DURATION, .offset = FIELD(capture_before_ns),
          .max = 24 * 3600 * NSEC_PER_SEC, .must_be = "a duration of at most 1d (e.g. \"5m\")",
          .help_arg = "DURATION", .help = "a capture pins this much before its trigger (default 5m)" },
        { .key = "capture_duration", .type = CONF_DURATION, .offset = FIELD(capture_duration_ns),
          .min = NSEC_PER_SEC, .max = 3600 * NSEC_PER_SEC, .must_be = "a duration from 1s to 1h (e.g. \"30s\")",
          .help_arg = "DURATION", .help = "and this much after it (default 30s)" },
        { .key = "capture_cooldown", .type = CONF_DURATION, .offset = FIELD(capture_cooldown_ns),
          .must_be = "a duration (e.g. \"10m\")",
          .help_arg = "DURATION", .help = "at most one capture per this long (default 10m)" },
        { .key = "capture_max_pinned", .type = CONF_SIZE, .offset = FIELD(capture_max_pinned),
          .min = CONF_MIN_MAX_STORE_SIZE, .must_be = "a size of at least 1M (bytes, or with a K, M, G or T suffix)",
          .help_arg = "SIZE", .help = "bytes every capture's pins hold at most (default 256M)" },
        { .key = "capture_frequency", .type = CONF_UINT, .offset = FIELD(capture_frequency_hz),
          .min = 0, .max = CONF_MAX_FREQUENCY_HZ, .unit = " Hz",
          .must_be = "a whole number of Hz from 0 to " STR(CONF_MAX_FREQUENCY_HZ),
          .help_arg = "HZ", .help = "on-CPU samples per second while a capture lasts; 0: not raised\n(default "
                                    STR(CONF_DEFAULT_CAPTURE_FREQUENCY_HZ) ")" },
        { .key = "timeline_offcpu_min", .type = CONF_DURATION, .offset = FIELD(timeline_offcpu_min_ns),
          .apply = CONF_APPLY_OFFCPU, .must_be = "a duration (e.g. \"1ms\", \"500us\")",
          .help_arg = "DURATION", .help = "shortest off-CPU block kept with its start and end (default 1ms)" },
        { .key = "timeline_offcpu_rate", .type = CONF_UINT, .offset = FIELD(timeline_offcpu_rate),
          .min = 0, .max = CONF_MAX_TIMELINE_OFFCPU_RATE,
          .must_be = "a whole number from 0 to " STR(CONF_MAX_TIMELINE_OFFCPU_RATE),
          .help_arg = "N", .help = "off-CPU blocks kept with their times per CPU and second, 0-"
                                   STR(CONF_MAX_TIMELINE_OFFCPU_RATE) " (default "
                                   STR(CONF_DEFAULT_TIMELINE_OFFCPU_RATE) "; 0: none)" },
        { .key = "symbol_cache", .type = CONF_COUNT, .offset = FIELD(symbol_cache_bytes), .apply = CONF_APPLY_WRITER,
          .min = 1, .max = 1 << 20, .shift = 20, .unit = " MiB",
          .help_arg = "MIB", .help = "memory for symbols and debug info (default " STR(CONF_DEFAULT_SYMBOL_CACHE_MIB) ")" },
        { .key = "dwarf_min_samples", .type = CONF_UINT, .offset = FIELD(dwarf_min_samples),
          .apply = CONF_APPLY_WRITER, .min = 0, .max = CONF_MAX_DWARF_MIN_SAMPLES,
          .must_be = "a whole number from 0 to " STR(CONF_MAX_DWARF_MIN_SAMPLES),
          .help_arg = "N", .help = "samples in a file before its debug info (source lines,\n"
                                   "inlined calls) is read; 0: at its first (default "
                                   STR(CONF_DEFAULT_DWARF_MIN_SAMPLES) ")" },
        { .key = "debug_dirs", .type = CONF_DIRS, .offset = FIELD(debug_dirs), .apply = CONF_APPLY_WRITER,
          .help_arg = "\"DIR...\"",
          .help = "where separate debug files are looked for\n(default " CONF_DEFAULT_DEBUG_DIRS ")" },
        { .key = "debuginfod_urls", .type = CONF_URLS, .offset = FIELD(debuginfod_urls),
          .must_be = "http:// or https:// URLs separated by spaces",
          .help_arg = "\"URL...\"", .help = "debuginfod servers for debug files found nowhere" },
        { .key = "debuginfod_cache", .type = CONF_PATH, .offset = FIELD(debuginfod_cache),
          .help_arg = "DIR", .help = "their cache (default: libdebuginfod's)" },
        /* Advanced: kernel map sizes, to bound memory or to test a full map.
         * The kernel rounds hash maps up to powers of two internally. */
        { .key = "max_keys", .type = CONF_COUNT, .offset = FIELD(max_keys), .min = 1, .max = 1 << 24,
          .help_arg = "N", .help = "advanced: kernel aggregation map entries (default: sized\n"
                                   "from frequency, CPUs and interval)" },
        { .key = "max_stacks", .type = CONF_COUNT, .offset = FIELD(max_stacks), .min = 1, .max = 1 << 20,
          .help_arg = "N", .help = "advanced: kernel stack map entries (default: likewise)" },
        { .key = "kernel_memory", .type = CONF_SIZE, .offset = FIELD(kernel_memory),
          .min = CONF_MIN_KERNEL_MEMORY, .max = CONF_MAX_KERNEL_MEMORY,
          .must_be = "a size from 1M to 4G (bytes, or with a K, M or G suffix)",
          .help_arg = "SIZE", .help = "kernel memory for the sample and stack maps, at most\n"
                                      "(default 64M; a 2-CPU host takes about 11M)" },
        { .key = "unwind_memory", .type = CONF_SIZE, .offset = FIELD(unwind_memory),
          .min = CONF_MIN_UNWIND_MEMORY, .max = CONF_MAX_UNWIND_MEMORY,
          .must_be = "a size from 64K to 4G (bytes, or with a K, M or G suffix)",
          .help_arg = "SIZE", .help = "kernel memory for unwind tables (default 24M)" },
        { .key = "clickhouse_url", .type = CONF_URL, .offset = FIELD(clickhouse_url),
          .must_be = "an http:// or https:// URL without spaces or credentials (those go in "
                     "clickhouse_credentials)",
          .help_arg = "URL", .help = "export every drain to ClickHouse's HTTP interface, e.g.\n"
                                     "http://127.0.0.1:8123/ (default: no export; the user and\n"
                                     "password go in the clickhouse_credentials file)" },
        { .key = "host_name", .type = CONF_HOST_NAME, .offset = FIELD(host_name),
          .must_be = "1 to 255 letters, digits, '.', '-', '_' or ':'",
          .help_arg = "NAME", .help = "this host's name in ClickHouse (default: the host name)" },
        /* a path, harmless in ps, but the file is the only place credentials go */
        { .key = "clickhouse_credentials", .type = CONF_PATH, .offset = FIELD(clickhouse_credentials),
          .empty_unsets = true, .file_only = true },
        { .key = "clickhouse_timeout", .type = CONF_DURATION, .offset = FIELD(clickhouse_timeout_ns),
          .min = CONF_MIN_INTERVAL_NS, .max = CONF_MAX_INTERVAL_NS,
          .must_be = "a duration from 100ms to 1h (e.g. \"30s\")",
          .help_arg = "DURATION", .help = "give up one request after this (default 30s)" },
};
const size_t conf_n_settings = ELEMENTSOF(conf_settings);

const struct conf_setting *conf_setting_find(const char *key) {
        for (size_t i = 0; i < conf_n_settings; i++)
                if (streq(conf_settings[i].key, key))
                        return &conf_settings[i];
        return NULL;
}

#define FIELD_PTR(type, s, c) ((type *) ((char *) (c) + (s)->offset))
#define FIELD_CPTR(type, s, c) ((type const *) ((const char *) (c) + (s)->offset))

static bool type_is_string(enum conf_type t) {
        return t == CONF_PATH || t == CONF_GROUP || t == CONF_URLS || t == CONF_URL || t == CONF_HOST_NAME;
}

static bool type_is_list(enum conf_type t) {
        return t == CONF_DIRS || t == CONF_CAPTURES;
}

/* "on" / "off" and the usual spellings of each, as a bool. */
static int parse_bool(const char *v, bool *ret) {
        static const char *const yes[] = { "on", "yes", "true", "1" }, *const no[] = { "off", "no", "false", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (streq(v, yes[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(v, no[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static bool type_is_u64(enum conf_type t) {
        return t == CONF_COUNT || t == CONF_DURATION || t == CONF_SIZE;
}

void conf_done(struct conf *c) {
        for (size_t i = 0; i < conf_n_settings; i++) {
                const struct conf_setting *s = &conf_settings[i];

                if (type_is_string(s->type)) {
                        char **p = FIELD_PTR(char *, s, c);
                        free(*p);
                        *p = NULL;
                } else if (type_is_list(s->type))
                        *FIELD_PTR(char **, s, c) = dirs_free(*FIELD_PTR(char **, s, c));
        }
}

/* Replaces a string field; value NULL stores NULL. */
static int set_string(char **field, const char *value) {
        char *v = NULL;

        if (value && !(v = strdup(value)))
                return -ENOMEM;
        free(*field);
        *field = v;
        return 0;
}

static int must_be(const struct conf_setting *s, const char *value, char **ret_error) {
        if (s->must_be)
                return format_error(ret_error, "%s must be %s, not \"%s\"", s->key, s->must_be, value);
        return format_error(ret_error, "%s must be a whole number from %" PRIu64 " to %" PRIu64 ", not \"%s\"",
                            s->key, s->min, s->max, value);
}

static bool is_http_url(const char *v) {
        return strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0;
}

/* A group name as getent would accept it, or "" for none. */
static int set_group(const struct conf_setting *s, char **field, const char *value, char **ret_error) {
        for (const char *p = value; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '-' || *p == '.'))
                        return format_error(ret_error, "%s: \"%s\" is not a group name", s->key, value);
        return set_string(field, value[0] ? value : NULL);
}

/* "cpu,offcpu,wakeup": the kinds to collect, at least one. */
static int set_kinds(bool kinds[3], const char *value, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        bool cpu = false, offcpu = false, wakeup = false;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        /* serve-only: no BPF, only queries of the store (tests with known
         * content, a store copied off a host after an incident) */
        if (streq(value, "none")) {
                kinds[0] = kinds[1] = kinds[2] = false;
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
        kinds[0] = cpu;
        kinds[1] = offcpu;
        kinds[2] = wakeup;
        return 0;
}

/* A percentage with at most 4 decimals ("0.05%", "1%") as millionths. */
static int parse_share_ppm(const char *value, uint64_t *ret) {
        uint64_t v = 0;
        const char *p = value;
        unsigned decimals = 0;

        if (!(*p >= '0' && *p <= '9'))
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                v = v * 10 + (uint64_t) (*p - '0');
                if (v > 100)
                        return -ERANGE;
        }
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        if (++decimals > 4)
                                return -EINVAL;
                        v = v * 10 + (uint64_t) (*p - '0');
                }
        if (p[0] != '%' || p[1] != '\0' || (p[-1] == '.'))
                return -EINVAL;
        for (; decimals < 4; decimals++)
                v *= 10;
        *ret = v;
        return 0;
}

/* Numbers, durations, sizes and shares: parsed, then checked against [min, max]. */
static int set_number(const struct conf_setting *s, struct conf *c, const char *value, char **ret_error) {
        uint64_t v, max = s->max ? s->max : UINT64_MAX;
        int r;

        if (s->has_none && streq(value, "none"))
                v = s->none_value;
        else if (s->has_auto && streq(value, "auto"))
                v = s->auto_value;
        else {
                switch (s->type) {
                case CONF_MODE: {
                        char *end;

                        errno = 0;
                        v = strtoul(value, &end, 8);
                        r = value[0] < '0' || value[0] > '7' || *end != '\0' || errno != 0 ? -EINVAL : 0;
                        max = 0777;
                        break;
                }
                case CONF_UINT:
                case CONF_COUNT:
                        r = parse_uint_strict(value, max, &v);
                        break;
                case CONF_DURATION:
                        r = parse_duration_ns(value, &v);
                        break;
                case CONF_SHARE:
                        r = parse_share_ppm(value, &v);
                        break;
                default:
                        r = parse_size(value, &v);
                        break;
                }
                if (r < 0 || v < s->min || v > max)
                        return must_be(s, value, ret_error);
        }
        if (s->type == CONF_MODE || s->type == CONF_UINT || s->type == CONF_SHARE)
                *FIELD_PTR(unsigned, s, c) = (unsigned) v;
        else
                *FIELD_PTR(uint64_t, s, c) = v << s->shift;
        return 0;
}

int conf_setting_set(struct conf *c, const struct conf_setting *s, const char *value, char **ret_error) {
        char **str = FIELD_PTR(char *, s, c);
        int r;

        switch (s->type) {
        case CONF_PATH:
                if (s->empty_unsets && value[0] == '\0')
                        r = set_string(str, NULL);
                else if (value[0] != '/')
                        return format_error(ret_error, "%s must be an absolute path, not \"%s\"", s->key, value);
                else
                        r = set_string(str, value);
                break;
        case CONF_GROUP:
                r = set_group(s, str, value, ret_error);
                break;
        case CONF_URLS:
                /* space-separated http(s) URLs, as $DEBUGINFOD_URLS */
                if (value[0] && !is_http_url(value))
                        return must_be(s, value, ret_error);
                r = set_string(str, value[0] ? value : NULL);
                break;
        case CONF_URL:
                /* one URL; "" turns off what it is for */
                if (value[0] && (!is_http_url(value) || strpbrk(value, " \t@")))
                        return must_be(s, value, ret_error);
                r = set_string(str, value[0] ? value : NULL);
                break;
        case CONF_HOST_NAME:
                if (!chbatch_host_name_valid(value))
                        return must_be(s, value, ret_error);
                r = set_string(str, value);
                break;
        case CONF_DIRS:
        case CONF_CAPTURES: {
                char **v;

                r = list_parse(value, s->type == CONF_DIRS ? dir_check : capture_check, &v, ret_error);
                if (r >= 0) {
                        dirs_free(*FIELD_PTR(char **, s, c));
                        *FIELD_PTR(char **, s, c) = v;
                }
                break;
        }
        case CONF_KINDS:
                r = set_kinds(FIELD_PTR(bool, s, c), value, ret_error);
                break;
        case CONF_BOOL:
                r = parse_bool(value, FIELD_PTR(bool, s, c));
                if (r < 0)
                        return format_error(ret_error, "%s must be on or off, not \"%s\"", s->key, value);
                break;
        default:
                r = set_number(s, c, value, ret_error);
                break;
        }
        if (r < 0)
                return r;
        return s->check ? s->check(c, ret_error) : 0;
}

int conf_set(struct conf *c, const char *key, const char *value, char **ret_error) {
        const struct conf_setting *s = conf_setting_find(key);

        return s ? conf_setting_set(c, s, value, ret_error) : -ENOENT;
}

static bool str_eq(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static bool dirs_eq(char *const *a, char *const *b) {
        size_t i;

        for (i = 0; a && b && a[i] && b[i]; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return (!a || !a[i]) && (!b || !b[i]);
}

bool conf_setting_equal(const struct conf_setting *s, const struct conf *a, const struct conf *b) {
        if (type_is_string(s->type))
                return str_eq(*FIELD_CPTR(char *, s, a), *FIELD_CPTR(char *, s, b));
        if (type_is_list(s->type))
                return dirs_eq(*FIELD_CPTR(char **, s, a), *FIELD_CPTR(char **, s, b));
        if (s->type == CONF_KINDS)
                return memcmp(FIELD_CPTR(bool, s, a), FIELD_CPTR(bool, s, b), 3 * sizeof(bool)) == 0;
        if (s->type == CONF_BOOL)
                return *FIELD_CPTR(bool, s, a) == *FIELD_CPTR(bool, s, b);
        if (type_is_u64(s->type))
                return *FIELD_CPTR(uint64_t, s, a) == *FIELD_CPTR(uint64_t, s, b);
        return *FIELD_CPTR(unsigned, s, a) == *FIELD_CPTR(unsigned, s, b);
}

/* Exchanges s's values between a and b (ownership of strings included). */
static void setting_swap(const struct conf_setting *s, struct conf *a, struct conf *b) {
        size_t n = type_is_string(s->type) ? sizeof(char *)
                   : type_is_list(s->type) ? sizeof(char **)
                   : s->type == CONF_KINDS ? 3 * sizeof(bool)
                   : s->type == CONF_BOOL  ? sizeof(bool)
                   : type_is_u64(s->type)  ? sizeof(uint64_t)
                                           : sizeof(unsigned);
        char t[sizeof(uint64_t)];

        memcpy(t, FIELD_PTR(char, s, a), n);
        memcpy(FIELD_PTR(char, s, a), FIELD_PTR(char, s, b), n);
        memcpy(FIELD_PTR(char, s, b), t, n);
}

const char *conf_setting_format(const struct conf_setting *s, const struct conf *c, char *buf, size_t size) {
        uint64_t v;

        buf[0] = '\0';
        if (type_is_string(s->type)) {
                const char *str = *FIELD_CPTR(char *, s, c);
                snprintf(buf, size, "%s", str ? str : "none");
        } else if (type_is_list(s->type)) {
                char *const *d = *FIELD_CPTR(char **, s, c);
                size_t n = 0;

                for (size_t i = 0; d && d[i] && n < size; i++)
                        n += snprintf(buf + n, size - n, "%s%s", i ? " " : "", d[i]);
                if (!d || !d[0])
                        snprintf(buf, size, "none");
        } else if (s->type == CONF_KINDS) {
                const bool *k = FIELD_CPTR(bool, s, c);
                snprintf(buf, size, "%s%s%s%s", k[0] ? "cpu" : "", k[1] ? (k[0] ? ",offcpu" : "offcpu") : "",
                         k[2] ? (k[0] || k[1] ? ",wakeup" : "wakeup") : "", !k[0] && !k[1] && !k[2] ? "none" : "");
        } else if (s->type == CONF_BOOL)
                snprintf(buf, size, "%s", *FIELD_CPTR(bool, s, c) ? "on" : "off");
        else if (s->type == CONF_MODE)
                snprintf(buf, size, "%04o", *FIELD_CPTR(unsigned, s, c));
        else if (s->type == CONF_UINT)
                snprintf(buf, size, "%u", *FIELD_CPTR(unsigned, s, c));
        else if (s->type == CONF_SHARE) {
                unsigned ppm = *FIELD_CPTR(unsigned, s, c);
                int n;

                if (s->has_none && ppm == s->none_value)
                        snprintf(buf, size, "none");
                else {
                        /* 500 -> "0.0500" -> "0.05%"; 10000 -> "1%" */
                        n = snprintf(buf, size, "%u.%04u", ppm / 10000, ppm % 10000);
                        while (n > 0 && (size_t) n < size && buf[n - 1] == '0')
                                n--;
                        if (n > 0 && (size_t) n < size && buf[n - 1] == '.')
                                n--;
                        if (n >= 0 && (size_t) n < size)
                                snprintf(buf + n, size - (size_t) n, "%%");
                }
        }
        else {
                v = *FIELD_CPTR(uint64_t, s, c);
                if (s->has_none && v == s->none_value)
                        snprintf(buf, size, "none");
                else if (s->has_auto && v == s->auto_value)
                        snprintf(buf, size, "auto");
                else if (s->type == CONF_DURATION)
                        format_duration(buf, size, v);
                else
                        snprintf(buf, size, "%" PRIu64, v >> s->shift);
        }
        return buf;
}

/* Option names, "offcpu-min" for offcpu_min, and "no-timeline" for a
 * CONF_BOOL's other option, built on first use. */
static char option_names[ELEMENTSOF(conf_settings)][32];
static char negated_names[ELEMENTSOF(conf_settings)][36];

const char *conf_setting_option(const struct conf_setting *s) {
        char *name = option_names[s - conf_settings];

        if (name[0] == '\0') {
                snprintf(name, sizeof(option_names[0]), "%s", s->key);
                for (char *k = name; *k; k++)
                        if (*k == '_')
                                *k = '-';
        }
        return name;
}

static const char *negated_option(const struct conf_setting *s) {
        char *name = negated_names[s - conf_settings];

        if (name[0] == '\0')
                snprintf(name, sizeof(negated_names[0]), "no-%s", conf_setting_option(s));
        return name;
}

size_t conf_options(struct option *options, char *shorts, size_t shorts_size) {
        size_t n = 0, len = strlen(shorts);

        for (size_t i = 0; i < conf_n_settings; i++) {
                const struct conf_setting *s = &conf_settings[i];

                if (s->file_only)
                        continue;
                if (s->type == CONF_BOOL) {
                        /* --timeline, --no-timeline: no argument to forget */
                        options[n++] = (struct option) { conf_setting_option(s), no_argument, NULL,
                                                         CONF_OPTION_FIRST + (int) i };
                        options[n++] = (struct option) { negated_option(s), no_argument, NULL,
                                                         CONF_OPTION_NEGATED + (int) i };
                        continue;
                }
                options[n++] = (struct option) { conf_setting_option(s), required_argument, NULL,
                                                 s->short_option ? s->short_option : CONF_OPTION_FIRST + (int) i };
                if (s->short_option && len + 3 <= shorts_size) {
                        shorts[len++] = s->short_option;
                        shorts[len++] = ':';
                        shorts[len] = '\0';
                }
        }
        return n;
}

const struct conf_setting *conf_setting_of_option(int val) {
        if (val >= CONF_OPTION_FIRST && (size_t) (val - CONF_OPTION_FIRST) < conf_n_settings)
                return &conf_settings[val - CONF_OPTION_FIRST];
        if (val >= CONF_OPTION_NEGATED && (size_t) (val - CONF_OPTION_NEGATED) < conf_n_settings &&
            conf_settings[val - CONF_OPTION_NEGATED].type == CONF_BOOL)
                return &conf_settings[val - CONF_OPTION_NEGATED];
        for (size_t i = 0; val > 0 && i < conf_n_settings; i++)
                if (conf_settings[i].short_option == val)
                        return &conf_settings[i];
        return NULL;
}

const char *conf_option_value(int val, const char *optarg) {
        const struct conf_setting *s = conf_setting_of_option(val);

        if (!s || s->type != CONF_BOOL)
                return optarg;
        return val >= CONF_OPTION_NEGATED ? "off" : "on";
}

/* --help's columns: the option, then its text from column 26. */
#define HELP_COLUMN 26

/* One --help line: head, then text from HELP_COLUMN ('\n' continues it). */
static void help_line(FILE *f, const char *head, int n, const char *text) {
        fprintf(f, "%s%*s", head, n + 2 <= HELP_COLUMN ? HELP_COLUMN - n : 2, "");
        for (const char *p = text; *p; p++) {
                fputc(*p, f);
                if (*p == '\n')
                        fprintf(f, "%*s", HELP_COLUMN, "");
        }
        fputc('\n', f);
}

void conf_print_help(FILE *f) {
        for (size_t i = 0; i < conf_n_settings; i++) {
                const struct conf_setting *s = &conf_settings[i];
                char head[80];
                int n;

                if (s->file_only || !s->help)
                        continue;
                if (s->type == CONF_BOOL) {
                        n = snprintf(head, sizeof(head), "      --%s", conf_setting_option(s));
                        help_line(f, head, n, s->help);
                        n = snprintf(head, sizeof(head), "      --%s", negated_option(s));
                        help_line(f, head, n, s->help_negated ? s->help_negated : "");
                        continue;
                }
                if (s->short_option)
                        n = snprintf(head, sizeof(head), "  -%c, --%s %s", s->short_option, conf_setting_option(s),
                                     s->help_arg);
                else
                        n = snprintf(head, sizeof(head), "      --%s %s", conf_setting_option(s), s->help_arg);
                help_line(f, head, n, s->help);
        }
}

/* Appends ", what" to a reload's summary. */
static void summary_add(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
static void summary_add(char *buf, size_t size, const char *fmt, ...) {
        size_t n = strlen(buf);
        va_list ap;

        if (n + 3 >= size)
                return;
        if (n > 0) {
                strcpy(buf + n, ", ");
                n += 2;
        }
        va_start(ap, fmt);
        vsnprintf(buf + n, size - n, fmt, ap);
        va_end(ap);
}

void conf_reload_diff(struct conf *next, struct conf *running, unsigned skip, conf_apply_fn apply,
                      void *userdata, struct conf_reload *ret) {
        unsigned changed = 0;

        *ret = (struct conf_reload) {};
        for (size_t i = 0; i < conf_n_settings; i++) {
                const struct conf_setting *s = &conf_settings[i];

                if (conf_setting_equal(s, next, running))
                        continue;
                if (s->apply == CONF_APPLY_RESTART) {
                        log_warning("Setting %s changed; it needs a restart of profd to take effect, "
                                    "keeping the running value.", s->key);
                        setting_swap(s, next, running);
                        ret->n_restart++;
                } else if (skip & (1u << s->apply))
                        setting_swap(s, next, running);
                else
                        changed |= 1u << s->apply;
        }
        for (unsigned a = CONF_APPLY_RESTART + 1; a < _CONF_APPLY_MAX; a++) {
                bool failed;

                if (!(changed & (1u << a)))
                        continue;
                failed = apply && apply(a, next, running, userdata) < 0;
                for (size_t i = 0; i < conf_n_settings; i++) {
                        const struct conf_setting *s = &conf_settings[i];
                        char o[256], n[256];

                        if (s->apply != a || conf_setting_equal(s, next, running))
                                continue;
                        if (failed) {
                                setting_swap(s, next, running);
                                continue;
                        }
                        summary_add(ret->summary, sizeof(ret->summary), "%s %s -> %s%s", s->key,
                                    conf_setting_format(s, running, o, sizeof(o)),
                                    conf_setting_format(s, next, n, sizeof(n)), s->unit ? s->unit : "");
                }
                if (!failed)
                        ret->applied |= 1u << a;
        }
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

        for (size_t i = 0; i < conf_n_settings; i++)
                n += strlen(conf_settings[i].key) + 2;
        s = malloc(n);
        if (!s)
                return NULL;
        s[0] = '\0';
        for (size_t i = 0; i < conf_n_settings; i++) {
                if (i > 0)
                        strcat(s, ", ");
                strcat(s, conf_settings[i].key);
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
