/* profd's settings: compiled-in defaults, then the configuration file, then
 * the command line, each overriding the one before. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 49 Hz: a prime, so sampling does not run in lockstep with periodic work
 * (timers at 10, 50, 100 Hz), and low enough to cost well under 1% CPU. */
#define CONF_DEFAULT_FREQUENCY_HZ 49
/* 10 s: recent data is queryable quickly, and each drain is large enough that
 * its fixed cost (flip, transaction) stays negligible. */
#define CONF_DEFAULT_INTERVAL_NS (10ULL * 1000000000ULL)
/* The kernel's default perf_event_max_sample_rate is far above this; more
 * than 10 kHz per CPU is a benchmark, not continuous profiling. */
#define CONF_MAX_FREQUENCY_HZ 10000
#define CONF_MIN_INTERVAL_NS (100ULL * 1000000ULL)
#define CONF_MAX_INTERVAL_NS (3600ULL * 1000000000ULL)
/* offcpu_sample: BPF draws in microseconds, up to the setting (32 bits) */
#define CONF_MIN_OFFCPU_SAMPLE_NS (1000ULL * 1000ULL)
#define CONF_MAX_OFFCPU_SAMPLE_NS (3600ULL * 1000000000ULL)
/* offcpu_sample = auto: the on-CPU sampler's period (conf_offcpu_sample_ns) */
#define CONF_OFFCPU_SAMPLE_AUTO UINT64_MAX
#define CONF_DEFAULT_PATH "/etc/profd/profd.conf"
/* Clients at once: far more than people and scripts on one host use, few
 * enough that their buffers stay a small share of the daemon's memory. */
#define CONF_DEFAULT_MAX_CLIENTS 256
/* A client that sends nothing for this long is disconnected: long enough for
 * a person typing into socat, short enough that idle connections don't pile
 * up toward max_clients. */
#define CONF_DEFAULT_CLIENT_TIMEOUT_NS (30ULL * 1000000000ULL)
/* 5 MiB of symbols and debug info in the heap (issue 14: the whole daemon
 * within 30 MiB, on a host running builds too: docs/performance.md,
 * "Symbol tables in half the memory, and a 5 MiB cache"; with 8 the
 * cache stayed at 7.4 MiB there, well above what the symbol tables of the
 * files mapped need since they are packed): DWARF sections are mapped,
 * not counted; over budget the DWARF of the least recently used files is
 * closed first (their resolved frames are in the store), then the files no
 * tracked process maps go. */
#define CONF_DEFAULT_SYMBOL_CACHE_MIB 5
/* 1 ms: blocks shorter than this are counted (number and total time, in
 * profctl status) but not attributed to stacks. Walking a kernel stack costs
 * about a microsecond; at 1 ms that is at most 0.1% of the time measured,
 * while the many sub-millisecond switches of a busy host stay cheap. */
#define CONF_DEFAULT_OFFCPU_MIN_NS (1000ULL * 1000ULL)
/* Raw drains (one per interval) for a day: "what happened during the
 * incident this morning" keeps its 10 s resolution. */
#define CONF_DEFAULT_RETENTION_RAW_NS (24ULL * 3600ULL * 1000000000ULL)
/* Then 1-minute buckets for a week: a deploy compared with last week's. */
#define CONF_DEFAULT_RETENTION_1M_NS (7ULL * 24ULL * 3600ULL * 1000000000ULL)
/* Then 10-minute buckets until two weeks, then nothing: long enough for a
 * weekly pattern, short enough that the file stays small. */
#define CONF_DEFAULT_RETENTION_NS (14ULL * 24ULL * 3600ULL * 1000000000ULL)
/* 1 GiB: two weeks of a busy host at the default resolution levels stay well
 * below it. A build host's raw window outgrows it (about 110 MiB an hour):
 * then the oldest raw drains are merged, and folded, ahead of their age
 * before anything is deleted (retention.c step_size). */
#define CONF_DEFAULT_MAX_STORE_SIZE (1ULL << 30)
/* Merged buckets keep a stack's frames down to the node that holds 0.05%
 * of its bucket (issue 43): a flame graph 2,000 pixels wide shows nothing
 * narrower. A build host's hour of stacks and locations took 1.23 MiB
 * so instead of 47.4 (docs/performance.md, "What the merged tiers would
 * keep with their rare stacks folded"). */
#define CONF_DEFAULT_RETENTION_FOLD_PPM 500
/* A share's most: folding more than a tenth away answers nothing. */
#define CONF_MAX_RETENTION_FOLD_PPM 100000
/* The timeline (every on-CPU sample's time, issue 44) for an hour: "what
 * ran during those 3 seconds" is asked soon after the incident, and an
 * hour of a busy 64-CPU host at 49 Hz is about 11 M samples, 50-90 MB. */
#define CONF_DEFAULT_TIMELINE_RETENTION_NS (3600ULL * 1000000000ULL)
/* 256 MiB: the hour above of a busy 64-CPU host, a quarter of the default
 * max_store_size, so that the aggregates keep the rest. */
#define CONF_DEFAULT_TIMELINE_MAX_SIZE (256ULL << 20)
/* Captures (issue 44). The minutes before a trigger, 5: a stall's cause
 * (a deploy, a cron job, memory filling) usually starts within minutes,
 * and 5 minutes of a busy 64-CPU host's timeline is about 5-8 MB. */
#define CONF_DEFAULT_CAPTURE_BEFORE_NS (300ULL * 1000000000ULL)
/* 30 s after the trigger: the incident's own seconds and its end. */
#define CONF_DEFAULT_CAPTURE_DURATION_NS (30ULL * 1000000000ULL)
/* One capture per 10 minutes: longer than one capture's range, so a
 * flapping condition pins one incident, not a stream of overlapping ones. */
#define CONF_DEFAULT_CAPTURE_COOLDOWN_NS (600ULL * 1000000000ULL)
/* 499 Hz while a capture lasts: about ten times the default rate (a
 * prime too), so a 300 ms stall holds some 150 samples of one CPU rather
 * than 15, for capture_duration only: drains come ten times as often
 * meanwhile (capture_raise_plan), so the kernel maps sized for 49 Hz hold
 * them. */
#define CONF_DEFAULT_CAPTURE_FREQUENCY_HZ 499
/* 256 MiB pinned at most, every capture together: as much again as the
 * timeline's default bound, a quarter of the store's default maximum. */
#define CONF_DEFAULT_CAPTURE_MAX_PINNED (256ULL << 20)
/* The off-CPU timeline logs blocks of 1 ms or more, as offcpu_min keeps
 * them: below it, the many sub-millisecond switches of a busy host would
 * fill the log for blocks whose time a heatmap's 20 ms cells cannot show. */
#define CONF_DEFAULT_TIMELINE_OFFCPU_MIN_NS (1000ULL * 1000ULL)
/* 200 logged blocks a second per CPU: a thread pool of a few dozen
 * threads each blocking every 100-200 ms, on every CPU. 64 bytes each, both
 * generations of a 10 s drain: 390 KiB of kernel memory per CPU (25 MiB
 * on 64 CPUs). More blocks are counted (status offcpu_unlogged) and stay
 * in the aggregates. */
#define CONF_DEFAULT_TIMELINE_OFFCPU_RATE 200
#define CONF_MAX_TIMELINE_OFFCPU_RATE 100000
/* Samples of keys with frames in a file before profd reads its DWARF
 * (dwarf_min_samples; daemon/symbols/dwarf-defer.h). */
#define CONF_DEFAULT_DWARF_MIN_SAMPLES 20
#define CONF_MAX_DWARF_MIN_SAMPLES 1000000
/* Below this the schema, indexes and one drain of a busy host do not fit. */
#define CONF_MIN_MAX_STORE_SIZE (1ULL << 20)
/* At most 64 MiB for the kernel's sample and stack maps, both generations:
 * they are sized from the sampling rate (frequency x CPUs x interval) and
 * stop growing here, from about 100 CPUs at the defaults; a 2-CPU host
 * takes 11 MiB. 256 CPUs at 49 Hz make 125 k samples a drain, of which a
 * few tens of thousands of keys and stacks are distinct on a busy host: 64
 * MiB holds 60 k keys and 110 k stack nodes a generation. */
#define CONF_DEFAULT_KERNEL_MEMORY (64ULL << 20)
/* Below this the floor of the maps (mapsize.c) does not fit */
#define CONF_MIN_KERNEL_MEMORY (1ULL << 20)
#define CONF_MAX_KERNEL_MEMORY (4ULL << 30)
/* 24 MiB of unwind rows in the kernel (3 Mi rows of 8 bytes), allocated
 * at start. A plain Debian host's processes map 51 files of 318 k rows in
 * all (libc 23 k, libcrypto 70 k), but a developer's host running clang
 * (libLLVM: 950 k rows) and ClickHouse (373 k) needed 2.0 M rows (15.4 MiB)
 * for its 95 processes: at 8 MiB perl's and xz's libraries found no room
 * and their stacks fell back to frame pointers. 24 MiB holds that half as
 * much again, so the tables of exited processes stay cached for the next
 * ones, and keeps all of profd's kernel maps under 40 MiB on a small host
 * (docs/performance.md, "Kernel memory"). */
#define CONF_DEFAULT_UNWIND_MEMORY (24ULL << 20)
/* Below this not even libc's table fits; above, the kernel's array index
 * (32 bits of 8-byte rows) would not reach. */
#define CONF_MIN_UNWIND_MEMORY (64ULL << 10)
#define CONF_MAX_UNWIND_MEMORY (4ULL << 30)
/* 30 s for one request to ClickHouse: a drain's insert takes milliseconds
 * to a loaded server's second or two; a stall this long is given up and
 * retried (the retry first asks whether the insert landed). */
#define CONF_DEFAULT_CLICKHOUSE_TIMEOUT_NS (30ULL * 1000000000ULL)
/* Where distributions install separate debug files (-dbg, -dbgsym). */
#define CONF_DEFAULT_DEBUG_DIRS "/usr/lib/debug"

struct conf {
        char *socket_path;
        char *store_path;
        unsigned frequency_hz;
        uint64_t interval_ns;
        bool kind_cpu, kind_offcpu, kind_wakeup;
        uint64_t offcpu_min_ns;
        uint64_t offcpu_max_ns; /* UINT64_MAX: no maximum */
        uint64_t offcpu_sample_ns; /* blocks shorter are walked by a draw; 0: all walked */
        unsigned socket_mode;
        char *socket_group;     /* owner group of the socket; NULL: root's */
        char *admin_group;      /* members see everything, like root; NULL: none */
        unsigned max_clients;
        uint64_t client_timeout_ns;
        uint64_t symbol_cache_bytes; /* symbols and debug info kept in memory */
        unsigned dwarf_min_samples; /* a file's DWARF is read once its frames had this many; 0: at once */
        char *debuginfod_urls;  /* servers asked for missing debug files; NULL: none */
        char *debuginfod_cache; /* their cache directory; NULL: libdebuginfod's default */
        uint64_t max_keys;      /* kernel map sizes; 0: sized from the machine */
        uint64_t max_stacks;
        uint64_t kernel_memory; /* bytes the sample and stack maps may lock (both generations) */
        uint64_t unwind_memory; /* bytes of unwind rows in the kernel */
        /* retention: raw drains, then 1-minute buckets, then 10-minute
         * buckets, each kept until the data is this old */
        uint64_t retention_raw_ns, retention_1m_ns, retention_ns;
        uint64_t max_store_size;  /* bytes of the store file; 0: no maximum */
        unsigned retention_fold_ppm; /* merges fold below this share of a bucket, millionths; 0: none */
        /* the timeline's own retention: its blocks go after this age, or
         * the oldest first above this many bytes (0: no maximum) */
        uint64_t timeline_retention_ns, timeline_max_size;
        /* the timeline at all (issue 44): false stores no sample's or
         * block's time, only the aggregates (docs/architecture.md, "The
         * timeline turned off") */
        bool timeline;
        /* preempted waits (state R) walked like other blocks; false (the
         * default): counted per thread as one [preempted] frame (read at
         * start: it is fixed in the BPF programs at load) */
        bool offcpu_preempted_stacks;
        /* profd's own threads' blocks walked like others', and the wakers
         * of them; false (the default): the blocks counted per thread as
         * one [unwalked] frame, the wake-ups only counted (read at start) */
        bool offcpu_self_stacks;
        /* the off-CPU kernel stacks through the memo (bpf/kstack-memo.bpf.h;
         * default on), and its hits walked too and compared (verify; off).
         * Read at start: fixed in the BPF programs at load */
        bool kernel_stack_memo, kernel_stack_memo_verify;
        /* the off-CPU timeline: blocks logged with their start and end
         * from this length, at most this many per CPU and second (0: none) */
        uint64_t timeline_offcpu_min_ns;
        unsigned timeline_offcpu_rate;
        char **debug_dirs;        /* NULL-terminated; separate debug files are looked for there */
        /* captures (issue 44, daemon/capture-manager.c) */
        char **capture_on;        /* NULL-terminated conditions (common/capture.h) watched from the start */
        uint64_t capture_before_ns, capture_duration_ns, capture_cooldown_ns;
        uint64_t capture_max_pinned; /* bytes every capture's pins hold together */
        unsigned capture_frequency_hz; /* the on-CPU rate while a capture lasts; 0: not raised */
        /* the ClickHouse export (docs/clickhouse.md) */
        char *clickhouse_url;     /* NULL: no export */
        char *host_name;          /* the host's label there; default: the machine's host name */
        char *clickhouse_credentials; /* a file with the user and password; NULL: ClickHouse's default user */
        uint64_t clickhouse_timeout_ns;
};

/* What re-applies a setting changed on SIGHUP. */
enum conf_apply {
        CONF_APPLY_RESTART,   /* read once at start: a change needs a restart of profd */
        CONF_APPLY_FREQUENCY, /* the perf events' sampling frequency */
        CONF_APPLY_INTERVAL,  /* the drain timer, from the next drain */
        CONF_APPLY_OFFCPU,    /* the off-CPU thresholds the BPF programs read */
        CONF_APPLY_CLIENTS,   /* the server's client limits */
        CONF_APPLY_WRITER,    /* symbol cache, debug directories, retention (writer_configure) */
        _CONF_APPLY_MAX,
};

/* How a value is written and where it is kept. */
enum conf_type {
        CONF_PATH,      /* char *: an absolute path */
        CONF_GROUP,     /* char *: a group name; "": none (NULL) */
        CONF_URLS,      /* char *: http(s) URLs separated by spaces; "": none */
        CONF_URL,       /* char *: one http(s) URL without credentials; "": none */
        CONF_HOST_NAME, /* char *: see chbatch_host_name_valid */
        CONF_DIRS,      /* char **, NULL-terminated: absolute directories separated by spaces */
        CONF_CAPTURES,  /* char **, NULL-terminated: capture conditions separated by spaces; "": none */
        CONF_KINDS,     /* bool kind_cpu, kind_offcpu, kind_wakeup: "cpu,offcpu,wakeup" or "none" */
        CONF_BOOL,      /* bool: "on" or "off" ("yes"/"no", "true"/"false", "1"/"0" too); options
                         * --key and --no-key */
        CONF_MODE,      /* unsigned: an octal file mode */
        CONF_UINT,      /* unsigned: a whole number in [min, max] */
        CONF_SHARE,     /* unsigned millionths: a percentage, "0.05%" (at most 4 decimals), in [min, max] */
        CONF_COUNT,     /* uint64_t: a whole number in [min, max], stored << shift */
        CONF_DURATION,  /* uint64_t ns: "10s", "1ms", in [min, max] */
        CONF_SIZE,      /* uint64_t bytes: "64M", in [min, max] */
};

/* One setting: everything profd knows about it, in one row of
 * conf_settings[]. The file parser, the command-line options, --help, the
 * man-page check (docs/man/check_man.py reads the .key lines) and SIGHUP's
 * diff all go through this table. */
struct conf_setting {
        const char *key;         /* in the file; the option is --key with '-' for '_' */
        enum conf_type type;
        size_t offset;           /* of its field in struct conf */
        enum conf_apply apply;   /* on SIGHUP; CONF_APPLY_RESTART: kept until a restart */
        uint64_t min, max;       /* numbers, durations, sizes: the range accepted (max 0: none) */
        unsigned shift;          /* CONF_COUNT: stored as value << shift (MiB -> bytes) */
        bool has_none;           /* "none" is accepted and stored as none_value */
        uint64_t none_value;
        bool has_auto;           /* "auto" is accepted and stored as auto_value */
        uint64_t auto_value;
        bool empty_unsets;       /* CONF_PATH: "" stores NULL */
        /* a bad value: "KEY must be MUST_BE, not \"VALUE\""; NULL: from min and max */
        const char *must_be;
        /* after it is set: what it must agree with (e.g. offcpu_min <= offcpu_max);
         * returns 0 or -EINVAL with *ret_error set */
        int (*check)(const struct conf *c, char **ret_error);
        const char *unit;        /* after the values in the reload summary: " Hz" */
        char short_option;       /* 0: only the long one */
        bool file_only;          /* no command-line option (a secret's path stays out of ps) */
        const char *help_arg;    /* --help: "--key HELP_ARG  HELP"; '\n' in help continues */
        const char *help;        /* NULL: not in --help */
        const char *help_negated; /* CONF_BOOL: --help's text for --no-KEY */
};

/* Every setting, in the order profd.conf(5) documents them. */
extern const struct conf_setting conf_settings[];
extern const size_t conf_n_settings;

/* The setting named key, or NULL. */
const struct conf_setting *conf_setting_find(const char *key);

/* Fills defaults. Returns 0 or -ENOMEM. */
int conf_init(struct conf *c);
void conf_done(struct conf *c);

/* Applies "key = value" lines from text ('#' starts a comment line). On a bad
 * line returns -EINVAL and *ret_error names the file (name), line and key.
 * Returns 0, -EINVAL or -ENOMEM. */
int conf_parse_text(struct conf *c, const char *name, const char *text, char **ret_error);

/* Sets one setting from a string as the file or command line gives it.
 * Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value (with
 * *ret_error saying why), -ENOMEM. */
int conf_set(struct conf *c, const char *key, const char *value, char **ret_error);

/* conf_set for a setting already looked up. Returns 0, -EINVAL with
 * *ret_error, or -ENOMEM. */
int conf_setting_set(struct conf *c, const struct conf_setting *s, const char *value, char **ret_error);

/* Whether a and b hold the same value of s. */
bool conf_setting_equal(const struct conf_setting *s, const struct conf *a, const struct conf *b);

/* What offcpu_sample is at an on-CPU rate of frequency_hz: the setting's
 * duration, 0 for none, and for auto the sampler's period (1e9 /
 * frequency_hz, whole microseconds, at least CONF_MIN_OFFCPU_SAMPLE_NS),
 * so that off-CPU time is walked as often as on-CPU time is sampled.
 * Inline: the collector below the top stage resolves it too. */
static inline uint64_t conf_offcpu_sample_ns(uint64_t setting, unsigned frequency_hz) {
        uint64_t period;

        if (setting != CONF_OFFCPU_SAMPLE_AUTO)
                return setting;
        /* BPF draws in whole microseconds */
        period = 1000000000ULL / (frequency_hz ? frequency_hz : 1) / 1000 * 1000;
        return period < CONF_MIN_OFFCPU_SAMPLE_NS ? CONF_MIN_OFFCPU_SAMPLE_NS
                : period > CONF_MAX_OFFCPU_SAMPLE_NS ? CONF_MAX_OFFCPU_SAMPLE_NS : period;
}

/* Writes s's value in c as the reload summary shows it ("10s", "none",
 * "/a /b"). Returns buf. */
const char *conf_setting_format(const struct conf_setting *s, const struct conf *c, char *buf, size_t size);

/* The command line: getopt_long's val for a setting without a short option
 * is CONF_OPTION_FIRST + its row; a CONF_BOOL's --no-KEY is
 * CONF_OPTION_NEGATED + its row. */
#define CONF_OPTION_FIRST 0x1000
#define CONF_OPTION_NEGATED 0x2000
/* The most long options conf_options writes: --KEY, and --no-KEY for a
 * CONF_BOOL. */
#define CONF_MAX_OPTIONS (2 * conf_n_settings)
struct option;
/* Writes the settings' long options (at most CONF_MAX_OPTIONS) to options
 * and appends their short ones ("s:d:...") to shorts. The names are built
 * once, in static storage. Returns the number written. */
size_t conf_options(struct option *options, char *shorts, size_t shorts_size);
/* The setting getopt_long's val stands for, or NULL. */
const struct conf_setting *conf_setting_of_option(int val);
/* The value an option gives its setting: optarg, or "on" / "off" for a
 * CONF_BOOL's --KEY / --no-KEY (which take no argument). */
const char *conf_option_value(int val, const char *optarg);
/* "offcpu-min" for offcpu_min: valid as long as the program runs. */
const char *conf_setting_option(const struct conf_setting *s);
/* Prints --help's lines for the settings that have an option. */
void conf_print_help(FILE *f);

/* Re-applies one component with the new settings (next); running holds the
 * values it runs with. Returns 0, or a negative errno to keep the running
 * values of that component's settings (the callee logs why). */
typedef int (*conf_apply_fn)(enum conf_apply what, const struct conf *next, const struct conf *running,
                             void *userdata);

struct conf_reload {
        unsigned applied;    /* bits (1 << enum conf_apply) of the components re-applied */
        unsigned n_restart;  /* changed settings that need a restart: logged, running value kept */
        char summary[1024];  /* "frequency 29 -> 197 Hz, interval 10s -> 5s", or "" */
};

/* SIGHUP's diff, row by row: a setting that changed and needs a restart is
 * logged and keeps its running value in next (so status and the next
 * reload see what runs); one whose component is in skip (bits 1 << enum
 * conf_apply) keeps it silently; every other component with a change is
 * applied once, and if that fails its settings keep their running values.
 * running may have values swapped in from next (the caller frees it and
 * keeps next). Fills *ret. */
void conf_reload_diff(struct conf *next, struct conf *running, unsigned skip, conf_apply_fn apply,
                      void *userdata, struct conf_reload *ret);

/* Checks what no single key can: settings that must agree with each other
 * (retention levels in order). Call after the file and the command line were
 * applied. Returns 0, or -EINVAL with *ret_error saying why, or -ENOMEM. */
int conf_check(const struct conf *c, char **ret_error);

/* Parses "512K", "100M", "1G", "2T" or a plain number of bytes (powers of
 * 1024). Returns 0, -EINVAL or -ERANGE. */
int parse_size(const char *s, uint64_t *ret);
