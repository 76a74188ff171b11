/* profd's event loop: the generation flip on a timer, process snapshots as
 * processes appear, requests. Symbolizing and storing each drain is the
 * writer thread's work (writer.c), so neither delays the other. */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "collector.h"
#include "config.h"
#include "duration.h"
#include "exporter.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"
#include "proctable.h"
#include "query.h"
#include "server.h"
#include "store.h"
#include "unwinder.h"
#include "writer.h"

/* A flush waiting for its drain to be stored. */
struct flush_waiter {
        struct flush_waiter *next;
        uint64_t seq;        /* the writer's drain job */
        uint64_t client_id;  /* the client may have left by then */
};

/* profd's wall clock (drain times, retention, queries' "now"): the real
 * one, or for tests a clock that runs `rate` times as fast from `start_ago`
 * in the past (manager_config.test_clock_*), so days of retention pass in
 * minutes. Given by the caller, never read from the environment. */
struct wall_clock {
        uint64_t rate;                /* <= 1: the real clock */
        uint64_t real0, fake0;
};

struct manager {
        char *socket_path;
        char *store_path;
        struct collector_config collect;

        sd_event *event;
        sd_event_source *drain_timer;
        sd_event_source *events_io;
        sd_event_source *writer_io;
        sd_event_source *sigterm, *sigint;
        sd_event_source *sighup;      /* reload the settings */
        struct conf *conf;            /* the running settings (the caller's) */
        manager_reload_fn reload;
        void *reload_userdata;
        collector *coll;
        unwinder *unwinder;           /* unwind tables for the BPF stack walker */
        store *store;                 /* this thread's connection: queries and status */
        store_check *check;           /* the store's integrity check, after READY; NULL: not started */
        writer *writer;               /* symbolizes and stores drains */
        exporter *exporter;           /* sends stored drains to ClickHouse; NULL: no export */
        server *server;
        query_pool *queries;          /* query and series requests, on worker threads */
        struct flush_waiter *waiters;

        bool serve_only;              /* --kinds none: no BPF, no writer, queries only */
        struct wall_clock clock;      /* CLOCK_REALTIME, or the tests' faster one */
        uint64_t started_ns;          /* CLOCK_REALTIME at start */
        uint64_t last_drain_end_ns;   /* CLOCK_REALTIME: the next drain's bucket starts here */
        uint64_t vanished;            /* processes gone before they could be read */
        uint64_t samples_seen, idle_samples;
        uint64_t offcpu_filtered, offcpu_filtered_ns; /* blocks outside [min, max] */
        uint64_t user_walks;          /* user stacks walked by BPF since start */
        /* for STATUS= rates: how long each recent drain collected, by the
         * writer's job number (results come back in order, a few at most
         * in flight) */
        uint64_t drain_mono_ns;       /* CLOCK_MONOTONIC of the last drain */
        struct { uint64_t seq, span_ns; } drain_spans[8];
        unsigned drain_spans_next;
};

static uint64_t clock_now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static uint64_t wall_clock_now(const struct wall_clock *w) {
        uint64_t t = clock_now_ns(CLOCK_REALTIME);

        if (w->rate > 1)
                t = w->fake0 + (t - w->real0) * w->rate;
        return t;
}

static void wall_clock_init(struct wall_clock *w, uint64_t rate, uint64_t start_ago_s) {
        *w = (struct wall_clock) { .rate = rate };
        if (rate <= 1)
                return;
        w->real0 = clock_now_ns(CLOCK_REALTIME);
        w->fake0 = w->real0 - start_ago_s * NSEC_PER_SEC;
        log_warning("Test clock: time runs %" PRIu64 "x as fast, from %" PRIu64 " s ago.", rate, start_ago_s);
}

static void on_process_event(const struct profd_event *e, void *userdata) {
        manager *m = userdata;
        struct proc *p;
        bool vanished;
        int r;

        /* unwind tables are built on the unwinder's thread */
        unwinder_request(m->unwinder, e->tgid, e->start_ns, e->type);
        /* A miss (an ip in no mapping the unwinder knows, e.g. a library
         * loaded since) concerns the unwinder alone: the writer re-reads a
         * process's maps itself when a frame falls outside them. Another
         * snapshot here would open every mapped file again, and one read
         * while the process is in the middle of an exec would replace a good
         * snapshot with a partial one. */
        if (e->type == PROFD_EVENT_UNWIND_MISS)
                return;
        /* read /proc now, while the process lives; the writer reads the files */
        r = proc_snapshot("/proc", e->tgid, e->start_ns, e->comm, &p, &vanished);
        if (r >= 0)
                r = writer_learn(m->writer, p);
        if (r < 0)
                log_warning_errno(r, "Failed to record process %" PRIu32 ", ignoring: %m", e->tgid);
        else if (vanished)
                m->vanished++;
}

/* One drain: learn the processes announced so far (the writer takes jobs in
 * order, so they are known when it symbolizes), take a generation out of
 * the kernel and hand it to the writer. Returns 0 and the writer's job
 * number, or a negative errno. */
static int manager_drain(manager *m, uint64_t *ret_seq) {
        struct drain_batch b = {};
        uint64_t start_ns = m->last_drain_end_ns, seq;
        int r;

        if (m->serve_only)
                return -EOPNOTSUPP;
        (void) collector_poll_events(m->coll);
        r = collector_drain(m->coll, &b);
        if (r < 0)
                return r;
        m->last_drain_end_ns = wall_clock_now(&m->clock);
        m->samples_seen += b.counters[PROFD_CNT_SAMPLES];
        m->idle_samples += b.counters[PROFD_CNT_IDLE];
        m->offcpu_filtered += b.counters[PROFD_CNT_OFFCPU_FILTERED];
        m->offcpu_filtered_ns += b.counters[PROFD_CNT_OFFCPU_FILTERED_NS];
        m->user_walks += b.counters[PROFD_CNT_USER_WALKS];
        r = writer_drain(m->writer, &b, start_ns, m->last_drain_end_ns, m->vanished, &seq);
        if (r < 0)
                return log_error_errno(r, "Failed to queue a drain: %m");
        {
                uint64_t mono = clock_now_ns(CLOCK_MONOTONIC);
                unsigned i = m->drain_spans_next++ % ELEMENTSOF(m->drain_spans);

                m->drain_spans[i].seq = seq;
                m->drain_spans[i].span_ns = mono - m->drain_mono_ns;
                m->drain_mono_ns = mono;
        }
        if (ret_seq)
                *ret_seq = seq;
        return 0;
}

/* What profd samples, as the STATUS= line says it. */
static void manager_describe(const manager *m, char *buf, size_t size) {
        if (m->serve_only) {
                snprintf(buf, size, "serving queries only (--kinds none)");
                return;
        }
        if (m->collect.cpu)
                snprintf(buf, size, "sampling %u Hz %s%s%s", m->collect.frequency_hz, collector_event_name(m->coll),
                         m->collect.offcpu ? ", offcpu" : "", m->collect.wakeup ? ", wakeup" : "");
        else
                snprintf(buf, size, "collecting%s%s", m->collect.offcpu ? " offcpu" : "",
                         m->collect.wakeup ? (m->collect.offcpu ? ", wakeup" : " wakeup") : "");
}

/* Tells systemd (`systemctl status profd`) what the drain the writer just
 * finished stored, as rates over the time that drain collected: a line
 * that changes every interval shows at a glance that profd is alive and
 * how much it sees. */
static void manager_notify_drain(manager *m, const struct writer_result *res) {
        uint64_t span = 0;
        char what[128], when[32];
        time_t t = time(NULL);
        struct tm tm;

        manager_describe(m, what, sizeof(what));
        if (strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&t, &tm)) == 0)
                when[0] = '\0';
        if (res->error < 0) {
                (void) sd_notifyf(0, "STATUS=%s; last drain could not be stored (%s) at %s", what,
                                  strerror(-res->error), when);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(m->drain_spans); i++)
                if (m->drain_spans[i].seq == res->seq)
                        span = m->drain_spans[i].span_ns;
        if (span == 0) /* not found: more drains in flight than remembered */
                return;
        (void) sd_notifyf(0, "STATUS=%s; %.0f samples/s, %.0f stacks/s stored; last drain %s",
                          what, (double) res->samples * NSEC_PER_SEC / (double) span,
                          (double) res->keys * NSEC_PER_SEC / (double) span, when);
}

/* Answers the flushes whose drains the writer finished. */
static int on_writer(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        manager *m = userdata;
        struct writer_result res;

        while (writer_result_pop(m->writer, &res)) {
                manager_notify_drain(m, &res);
                if (m->exporter && res.error >= 0)
                        exporter_wake(m->exporter);
                for (struct flush_waiter **w = &m->waiters; *w;) {
                        struct flush_waiter *f = *w;
                        server_client *c;

                        if (f->seq != res.seq) {
                                w = &f->next;
                                continue;
                        }
                        *w = f->next;
                        c = server_find_client(m->server, f->client_id);
                        free(f);
                        if (!c)
                                continue;
                        if (res.error < 0) {
                                char msg[256];
                                snprintf(msg, sizeof(msg), "the drain could not be stored: %s", strerror(-res.error));
                                (void) server_client_send_error(c, msg);
                        } else
                                (void) server_client_send(c, json_pack("{s:s, s:I, s:I, s:I}", "type", "flushed",
                                                                       "drain_id", (json_int_t) res.drain_id,
                                                                       "samples", (json_int_t) res.samples,
                                                                       "keys", (json_int_t) res.keys));
                        server_client_resume(c);
                }
        }
        return 0;
}

static int on_drain_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        int r;

        (void) manager_drain(m, NULL);
        r = sd_event_source_set_time_relative(s, m->collect.interval_ns / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm the drain timer: %m");
        return 0;
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        manager *m = userdata;
        int r = collector_poll_events(m->coll);
        if (r < 0)
                log_warning_errno(r, "Failed to read process events, ignoring: %m");
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        manager *m = userdata;

        log_info("Received %s, draining before exit.", strsignal(si->ssi_signo));
        (void) sd_notify(0, "STOPPING=1\nSTATUS=storing the last drain before exit");
        /* the writer stores it, and everything queued, before it stops */
        (void) manager_drain(m, NULL);
        return sd_event_exit(m->event, 0);
}

static struct writer_settings writer_settings_of(const struct conf *c) {
        return (struct writer_settings) {
                .symbol_cache_bytes = c->symbol_cache_bytes,
                .debug_dirs = (const char *const *) c->debug_dirs,
                .retention = {
                        .raw_ns = c->retention_raw_ns,
                        .m1_ns = c->retention_1m_ns,
                        .all_ns = c->retention_ns,
                        .max_bytes = c->max_store_size,
                },
        };
}

static bool str_eq(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static bool dirs_eq(char **a, char **b) {
        size_t i;

        for (i = 0; a && b && a[i] && b[i]; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return (!a || !a[i]) && (!b || !b[i]);
}

/* Appends ", what" to the summary of a reload. */
static void note(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
static void note(char *buf, size_t size, const char *fmt, ...) {
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

/* A setting that only takes effect at start: keeps the running value in
 * nc (so status and the next reload compare with what runs) and says so. */
#define KEEP_RUNNING(nc, old, field, key, differ)                                                       \
        do {                                                                                            \
                if (differ) {                                                                           \
                        log_warning("Setting %s changed; it needs a restart of profd to take effect, "  \
                                    "keeping the running value.", key);                                 \
                        SWAP_VALUES((nc)->field, (old)->field);                                         \
                }                                                                                       \
        } while (0)
#define SWAP_VALUES(a, b)                                                                               \
        do {                                                                                            \
                __typeof__(a) _t = (a);                                                                 \
                (a) = (b);                                                                              \
                (b) = _t;                                                                               \
        } while (0)

/* SIGHUP: reads the settings again. A bad file is logged and changes
 * nothing; otherwise what can change while running is applied without
 * losing data, and what cannot is kept and logged as needing a restart. */
static int manager_reload(manager *m) {
        _cleanup_free_ char *error = NULL;
        struct conf nc, *old = m->conf;
        char summary[1024] = "", a[32], b[32];
        int r;

        if (!m->reload || !old) {
                log_info("Received SIGHUP, but profd was started without reloadable settings; ignoring.");
                return 0;
        }
        r = m->reload(&nc, &error, m->reload_userdata);
        if (r < 0) {
                log_error("Reloading the configuration failed, keeping the running one: %s",
                          error ? error : strerror(-r));
                return 0;
        }

        KEEP_RUNNING(&nc, old, socket_path, "socket", !str_eq(nc.socket_path, old->socket_path));
        KEEP_RUNNING(&nc, old, store_path, "store", !str_eq(nc.store_path, old->store_path));
        if (nc.kind_cpu != old->kind_cpu || nc.kind_offcpu != old->kind_offcpu || nc.kind_wakeup != old->kind_wakeup) {
                log_warning("Setting kinds changed; it needs a restart of profd to take effect, keeping the running value.");
                nc.kind_cpu = old->kind_cpu;
                nc.kind_offcpu = old->kind_offcpu;
                nc.kind_wakeup = old->kind_wakeup;
        }
        KEEP_RUNNING(&nc, old, socket_mode, "socket_mode", nc.socket_mode != old->socket_mode);
        KEEP_RUNNING(&nc, old, socket_group, "socket_group", !str_eq(nc.socket_group, old->socket_group));
        KEEP_RUNNING(&nc, old, admin_group, "admin_group", !str_eq(nc.admin_group, old->admin_group));
        KEEP_RUNNING(&nc, old, debuginfod_urls, "debuginfod_urls", !str_eq(nc.debuginfod_urls, old->debuginfod_urls));
        KEEP_RUNNING(&nc, old, debuginfod_cache, "debuginfod_cache",
                     !str_eq(nc.debuginfod_cache, old->debuginfod_cache));
        KEEP_RUNNING(&nc, old, max_keys, "max_keys", nc.max_keys != old->max_keys);
        KEEP_RUNNING(&nc, old, max_stacks, "max_stacks", nc.max_stacks != old->max_stacks);
        KEEP_RUNNING(&nc, old, kernel_memory, "kernel_memory", nc.kernel_memory != old->kernel_memory);
        KEEP_RUNNING(&nc, old, unwind_memory, "unwind_memory", nc.unwind_memory != old->unwind_memory);
        KEEP_RUNNING(&nc, old, clickhouse_url, "clickhouse_url", !str_eq(nc.clickhouse_url, old->clickhouse_url));
        KEEP_RUNNING(&nc, old, host_name, "host_name", !str_eq(nc.host_name, old->host_name));
        KEEP_RUNNING(&nc, old, clickhouse_credentials, "clickhouse_credentials",
                     !str_eq(nc.clickhouse_credentials, old->clickhouse_credentials));
        KEEP_RUNNING(&nc, old, clickhouse_timeout_ns, "clickhouse_timeout",
                     nc.clickhouse_timeout_ns != old->clickhouse_timeout_ns);
        if (m->serve_only) {
                /* nothing collects or writes: only the client limits apply */
                nc.frequency_hz = old->frequency_hz;
                nc.interval_ns = old->interval_ns;
                nc.offcpu_min_ns = old->offcpu_min_ns;
                nc.offcpu_max_ns = old->offcpu_max_ns;
        }

        if (nc.frequency_hz != old->frequency_hz) {
                r = m->collect.cpu ? collector_set_frequency(m->coll, nc.frequency_hz) : 0;
                if (r < 0) {
                        log_error_errno(r, "Failed to sample at %u Hz, keeping %u Hz: %m", nc.frequency_hz,
                                        old->frequency_hz);
                        nc.frequency_hz = old->frequency_hz;
                } else {
                        note(summary, sizeof(summary), "frequency %u -> %u Hz", old->frequency_hz, nc.frequency_hz);
                        m->collect.frequency_hz = nc.frequency_hz;
                }
        }
        if (nc.interval_ns != old->interval_ns) {
                note(summary, sizeof(summary), "interval %s -> %s", format_duration(a, sizeof(a), old->interval_ns),
                     format_duration(b, sizeof(b), nc.interval_ns));
                m->collect.interval_ns = nc.interval_ns;
                /* from now: the drain in progress keeps what it holds */
                r = sd_event_source_set_time_relative(m->drain_timer, nc.interval_ns / NSEC_PER_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->drain_timer, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_error_errno(r, "Failed to re-arm the drain timer: %m");
        }
        /* the maps were sized at start from frequency x interval */
        if (m->collect.cpu && (uint64_t) nc.frequency_hz * (nc.interval_ns / NSEC_PER_MSEC) >
                                      (uint64_t) old->frequency_hz * (old->interval_ns / NSEC_PER_MSEC))
                log_notice("The kernel maps were sized at start for fewer samples per interval; if status "
                           "shows map_full drops, restart profd to size them anew.");
        if (nc.offcpu_min_ns != old->offcpu_min_ns || nc.offcpu_max_ns != old->offcpu_max_ns) {
                if (m->coll && (m->collect.offcpu || m->collect.wakeup))
                        collector_set_offcpu_thresholds(m->coll, nc.offcpu_min_ns, nc.offcpu_max_ns);
                m->collect.offcpu_min_ns = nc.offcpu_min_ns;
                m->collect.offcpu_max_ns = nc.offcpu_max_ns;
                note(summary, sizeof(summary), "offcpu_min %s, offcpu_max %s",
                     format_duration(a, sizeof(a), nc.offcpu_min_ns),
                     nc.offcpu_max_ns == UINT64_MAX ? "none" : format_duration(b, sizeof(b), nc.offcpu_max_ns));
        }
        if (nc.max_clients != old->max_clients || nc.client_timeout_ns != old->client_timeout_ns) {
                server_set_limits(m->server, nc.max_clients, nc.client_timeout_ns / NSEC_PER_USEC);
                note(summary, sizeof(summary), "max_clients %u, client_timeout %s", nc.max_clients,
                     format_duration(a, sizeof(a), nc.client_timeout_ns));
        }
        if (nc.retention_raw_ns != old->retention_raw_ns || nc.retention_1m_ns != old->retention_1m_ns ||
            nc.retention_ns != old->retention_ns)
                note(summary, sizeof(summary), "retention raw %s, 1m %s, all %s",
                     format_duration(a, sizeof(a), nc.retention_raw_ns), format_duration(b, sizeof(b), nc.retention_1m_ns),
                     format_duration((char[32]) {}, 32, nc.retention_ns));
        if (nc.max_store_size != old->max_store_size)
                note(summary, sizeof(summary), "max_store_size %" PRIu64 " -> %" PRIu64, old->max_store_size,
                     nc.max_store_size);
        if (nc.symbol_cache_bytes != old->symbol_cache_bytes)
                note(summary, sizeof(summary), "symbol_cache %" PRIu64 " -> %" PRIu64 " MiB",
                     old->symbol_cache_bytes >> 20, nc.symbol_cache_bytes >> 20);
        if (!dirs_eq(nc.debug_dirs, old->debug_dirs))
                note(summary, sizeof(summary), "debug_dirs (for files read from now on)");
        if (m->writer) {
                struct writer_settings ws = writer_settings_of(&nc);
                r = writer_configure(m->writer, &ws);
                if (r < 0) {
                        conf_done(&nc);
                        return log_oom();
                }
        }

        conf_done(old);
        *old = nc;
        log_info("Reloaded the configuration: %s.", summary[0] ? summary : "nothing changed");
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        int r;

        /* `systemctl reload profd` (ExecReload= sends SIGHUP) shows the unit
         * reloading until READY=1; MONOTONIC_USEC is what newer systemd
         * matches the reload by */
        (void) sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, (uint64_t) (clock_now_ns(CLOCK_MONOTONIC) / NSEC_PER_USEC));
        r = manager_reload(userdata);
        (void) sd_notify(0, "READY=1");
        return r;
}

/* The daemon's resident memory, from /proc/self/statm (pages). 0 if unknown. */
static uint64_t self_rss_bytes(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");
        unsigned long size, resident;

        if (!f || fscanf(f, "%lu %lu", &size, &resident) != 2)
                return 0;
        return (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

/* The settings that can change on a reload, and what retention did: so a
 * reload, and every setting, can be checked from profctl status. */
static void status_add_settings(manager *m, json_t *o, const struct writer_stats *ws) {
        const struct conf *c = m->conf;
        json_t *dirs = json_array();

        for (size_t i = 0; dirs && c->debug_dirs && c->debug_dirs[i]; i++)
                json_array_append_new(dirs, json_string(c->debug_dirs[i]));
        json_object_set_new(o, "max_clients", json_integer(c->max_clients));
        json_object_set_new(o, "client_timeout_ms", json_integer((json_int_t) (c->client_timeout_ns / NSEC_PER_MSEC)));
        json_object_set_new(o, "symbol_cache_limit_bytes", json_integer((json_int_t) c->symbol_cache_bytes));
        json_object_set_new(o, "debug_dirs", dirs);
        json_object_set_new(o, "retention", json_pack("{s:b, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                "active", ws->retention_on,
                "raw_s", (json_int_t) (c->retention_raw_ns / NSEC_PER_SEC),
                "minute_s", (json_int_t) (c->retention_1m_ns / NSEC_PER_SEC),
                "all_s", (json_int_t) (c->retention_ns / NSEC_PER_SEC),
                "max_store_size", c->max_store_size ? json_integer((json_int_t) c->max_store_size) : json_null(),
                "merged_drains", (json_int_t) ws->retention.merged_drains,
                "deleted_drains", (json_int_t) ws->retention.deleted_drains,
                "deleted_for_size", (json_int_t) ws->retention.deleted_for_size,
                "deleted_stacks", (json_int_t) ws->retention.deleted_stacks,
                "deleted_processes", (json_int_t) ws->retention.deleted_processes,
                "deleted_locations", (json_int_t) ws->retention.deleted_locations,
                "vacuumed_bytes", (json_int_t) ws->retention.vacuumed_bytes));
}

/* Adds n to the count of a stored reason: a drop, or a truncation (by its
 * name without TRUNCATED_PREFIX). */
static void status_count_add(json_t *drops, json_t *truncated, const char *reason, uint64_t n) {
        bool is_trunc = strncmp(reason, TRUNCATED_PREFIX, strlen(TRUNCATED_PREFIX)) == 0;
        json_t *to = is_trunc ? truncated : drops, *cur;
        const char *key = is_trunc ? reason + strlen(TRUNCATED_PREFIX) : reason;

        cur = json_object_get(to, key);
        json_object_set_new(to, key, json_integer((json_int_t) n + (cur ? json_integer_value(cur) : 0)));
}

/* What the unwinder holds and did: tables, kernel memory, failures. */
static json_t *status_unwind(manager *m) {
        struct unwinder_stats us = {};
        json_t *fail = json_object(), *o;

        if (m->unwinder)
                unwinder_get_stats(m->unwinder, &us);
        for (int i = 0; fail && i < UNWINDER_FAIL__MAX; i++)
                json_object_set_new(fail, unwinder_failure_names[i], json_integer((json_int_t) us.failures[i]));
        o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                      "active", m->unwinder != NULL,
                      "processes", (json_int_t) us.processes,
                      "files", (json_int_t) us.files,
                      "files_unused", (json_int_t) us.files_unused,
                      "rows_used", (json_int_t) us.rows_used,
                      "rows_capacity", (json_int_t) us.rows_capacity,
                      "mappings_used", (json_int_t) us.mappings_used,
                      "mappings_capacity", (json_int_t) us.mappings_capacity,
                      "kernel_bytes", (json_int_t) us.kernel_bytes,
                      "mapped_bytes", (json_int_t) us.mapped_bytes,
                      "tables_built", (json_int_t) us.tables_built,
                      "build_ms", (json_int_t) (us.build_ns / NSEC_PER_MSEC),
                      "tables_evicted", (json_int_t) us.tables_evicted,
                      "loads", (json_int_t) us.requests,
                      "misses", (json_int_t) us.misses,
                      "user_walks", (json_int_t) m->user_walks,
                      "failures", fail);
        return o;
}

/* The ClickHouse export: where to, how far behind, and what went wrong
 * (docs/clickhouse.md, Status). */
static json_t *status_export(manager *m) {
        struct exporter_status es;
        json_t *errors = json_object();

        exporter_get_status(m->exporter, &es);
        for (int i = 0; errors && i < _EXPORTER_ERROR_MAX; i++)
                json_object_set_new(errors, exporter_error_names[i], json_integer((json_int_t) es.errors[i]));
        return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}",
                         "url", m->conf->clickhouse_url,
                         "host", m->conf->host_name,
                         "state", es.state,
                         "acknowledged_drain_id", (json_int_t) es.acknowledged_drain_id,
                         "backlog_drains", (json_int_t) es.backlog_drains,
                         "backlog_oldest_ns", es.backlog_oldest_ns ? json_integer((json_int_t) es.backlog_oldest_ns)
                                                                   : json_null(),
                         "last_success_ns", es.last_success_ns ? json_integer((json_int_t) es.last_success_ns)
                                                               : json_null(),
                         "exported_drains", (json_int_t) es.exported_drains,
                         "exported_samples", (json_int_t) es.exported_samples,
                         "exported_stacks", (json_int_t) es.exported_stacks,
                         "exported_frames", (json_int_t) es.exported_frames,
                         "bytes_sent", (json_int_t) es.bytes_sent,
                         "already_stored", (json_int_t) es.already_stored,
                         "lost_by_retention", (json_int_t) es.lost_by_retention,
                         "errors", errors ? errors : json_null(),
                         "error", es.last_error_kind >= 0 ? json_string(exporter_error_names[es.last_error_kind])
                                                          : json_null(),
                         "last_error", es.last_error[0] ? json_string(es.last_error) : json_null(),
                         "last_error_ns", es.last_error_ns ? json_integer((json_int_t) es.last_error_ns) : json_null());
}

/* The query workers (docs/protocol.md, status): answers being made, parked
 * on clients that do not read, and requests waiting for a worker. */
static json_t *status_queries(manager *m) {
        struct query_pool_stats qs;

        query_pool_get_stats(m->queries, &qs);
        return json_pack("{s:I, s:I, s:I, s:I, s:I}",
                         "workers", (json_int_t) qs.threads,
                         "running", (json_int_t) qs.running,
                         "parked", (json_int_t) qs.parked,
                         "queued", (json_int_t) qs.queued,
                         "parked_total", (json_int_t) qs.parks);
}

/* The store's integrity check (docs/protocol.md, status); NULL when it
 * could not start (logged then). */
static json_t *status_store_check(manager *m) {
        struct store_check_status cs;

        if (!m->check)
                return json_null();
        store_check_get(m->check, &cs);
        return json_pack("{s:s, s:I, s:o, s:o}",
                         "state", store_check_state_name(cs.state),
                         "started_ns", (json_int_t) cs.started_ns,
                         "finished_ns", cs.finished_ns ? json_integer((json_int_t) cs.finished_ns) : json_null(),
                         "message", cs.state == STORE_CHECK_FAILED ? json_string(cs.message) : json_null());
}

static int send_status(manager *m, server_client *c) {
        struct writer_stats ws = {};
        struct store_stats st;
        json_t *drops, *truncated, *o;
        int r;

        if (m->writer)
                writer_get_stats(m->writer, &ws);
        r = store_get_stats(m->store, &st);
        if (r < 0)
                return r;
        drops = json_object();
        truncated = json_object();
        for (int i = 0; drops && truncated && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        /* not yet in the store: drops of drains it could not take */
                        status_count_add(drops, truncated, drop_reason_names[i], ws.pending_drops[i]);
        if (drops && truncated) {
                json_object_set_new(drops, DROP_PROCESS_VANISHED, json_integer(0));
                json_object_set_new(drops, DROP_STORE_WRITE_FAILED, json_integer((json_int_t) ws.failed_drains));
                for (size_t i = 0; i < st.n_drops; i++)
                        status_count_add(drops, truncated, st.drops[i].reason, st.drops[i].count);
        }
        o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:s?, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                      "type", "status",
                      "version", PROFD_VERSION,
                      "pid", (json_int_t) getpid(),
                      "uptime_s", (json_int_t) ((wall_clock_now(&m->clock) - m->started_ns) / NSEC_PER_SEC),
                      "frequency_hz", (json_int_t) (m->collect.cpu ? m->collect.frequency_hz : 0),
                      "event", m->coll ? collector_event_name(m->coll) : NULL,
                      "interval_ms", (json_int_t) (m->collect.interval_ns / NSEC_PER_MSEC),
                      "store_path", m->store_path,
                      "store_bytes", (json_int_t) st.file_bytes,
                      "drains", (json_int_t) st.drains,
                      "last_drain_ns", (json_int_t) st.last_drain_ns,
                      "samples", (json_int_t) st.samples,
                      "stacks", (json_int_t) st.stacks,
                      "processes", (json_int_t) st.processes,
                      "samples_seen", (json_int_t) m->samples_seen,
                      "idle_samples", (json_int_t) m->idle_samples,
                      "drops", drops);
        if (o) {
                json_t *kinds = json_array();
                if (m->collect.cpu)
                        json_array_append_new(kinds, json_string("cpu"));
                if (m->collect.offcpu)
                        json_array_append_new(kinds, json_string("offcpu"));
                if (m->collect.wakeup)
                        json_array_append_new(kinds, json_string("wakeup"));
                json_object_set_new(o, "kinds", kinds);
                json_object_set_new(o, "processes_tracked", json_integer((json_int_t) ws.processes_tracked));
                json_object_set_new(o, "symbol_cache_bytes", json_integer((json_int_t) ws.symbol_cache_bytes));
                json_object_set_new(o, "symbol_mapped_bytes", json_integer((json_int_t) ws.symbol_mapped_bytes));
                json_object_set_new(o, "symbol_peak_bytes", json_integer((json_int_t) ws.symbol_peak_bytes));
                json_object_set_new(o, "unresolved", json_pack("{s:I, s:I, s:I, s:I}",
                        "no_symbols", (json_int_t) ws.unresolved.no_symbols,
                        "no_file", (json_int_t) ws.unresolved.no_file,
                        "jit_without_map", (json_int_t) ws.unresolved.jit_without_map,
                        "unknown_mapping", (json_int_t) ws.unresolved.unknown_mapping));
                json_object_set_new(o, "truncated", truncated ? truncated : json_object());
                truncated = NULL;
                json_object_set_new(o, "unwind", status_unwind(m));
                json_object_set_new(o, "jit_map_entries_dropped", json_integer((json_int_t) ws.jit_map_entries_dropped));
                json_object_set_new(o, "clients", json_integer((json_int_t) server_n_clients(m->server)));
                json_object_set_new(o, "queries", status_queries(m));
                json_object_set_new(o, "store_check", status_store_check(m));
                json_object_set_new(o, "rss_bytes", json_integer((json_int_t) self_rss_bytes()));
                json_object_set_new(o, "offcpu", json_pack("{s:I, s:o, s:I, s:I}",
                        "min_ns", (json_int_t) m->collect.offcpu_min_ns,
                        "max_ns", m->collect.offcpu_max_ns == UINT64_MAX ? json_null()
                                                                        : json_integer((json_int_t) m->collect.offcpu_max_ns),
                        "filtered_blocks", (json_int_t) m->offcpu_filtered,
                        "filtered_ns", (json_int_t) m->offcpu_filtered_ns));
                if (m->conf)
                        status_add_settings(m, o, &ws);
                if (m->exporter)
                        json_object_set_new(o, "export", status_export(m));
        }
        json_decref(truncated); /* NULL once o took it */
        store_stats_done(&st);
        return server_client_send(c, o);
}

/* Queries and series: answer.c makes the lines on a query worker
 * (query.c), which streams them to the client; the loop goes on with
 * drains and other clients meanwhile. */
static int send_answer(manager *m, server_client *c, const struct request *req) {
        const struct client_creds *creds = server_client_creds(c);
        struct answer_caller who = { .privileged = creds->privileged, .uid = creds->uid };

        return query_pool_submit(m->queries, c, req, &who, wall_clock_now(&m->clock), m->collect.interval_ns);
}

static int handle_request(server_client *c, const struct request *req, void *userdata) {
        manager *m = userdata;
        struct flush_waiter *f;
        int r;

        switch (req->op) {
        case REQUEST_STATUS:
                return send_status(m, c);
        case REQUEST_FLUSH:
                /* a drain costs the whole machine's profiling a transaction:
                 * only for those who may see everything */
                if (!server_client_creds(c)->privileged)
                        return server_client_send_error(c, "flush is for root and members of the admin group; "
                                                           "data is drained every interval anyway");
                if (m->serve_only)
                        return server_client_send_error(c, "nothing to flush: profd runs with --kinds none "
                                                           "(serve-only), it collects nothing and only answers "
                                                           "queries of its store");
                f = calloc(1, sizeof(*f));
                if (!f)
                        return -ENOMEM;
                r = manager_drain(m, &f->seq);
                if (r < 0) {
                        free(f);
                        return r;
                }
                /* answered by on_writer once the drain is stored */
                f->client_id = server_client_id(c);
                f->next = m->waiters;
                m->waiters = f;
                return SERVER_DEFERRED;
        case REQUEST_QUERY:
        case REQUEST_SERIES:
                return send_answer(m, c, req);
        }
        return -EINVAL;
}

int manager_new(const struct manager_config *cfg, manager **ret) {
        sigset_t mask;
        manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return log_oom();
        m->socket_path = strdup(cfg->socket_path);
        m->store_path = strdup(cfg->store_path);
        if (!m->socket_path || !m->store_path) {
                r = log_oom();
                goto fail;
        }
        m->collect = (struct collector_config) {
                .frequency_hz = cfg->frequency_hz,
                .interval_ns = cfg->interval_ns,
                .cpu = cfg->cpu,
                .offcpu = cfg->offcpu,
                .wakeup = cfg->wakeup,
                .offcpu_min_ns = cfg->offcpu_min_ns,
                .offcpu_max_ns = cfg->offcpu_max_ns,
                .max_keys = cfg->max_keys,
                .max_stacks = cfg->max_stacks,
                .kernel_memory = cfg->kernel_memory,
                .unwind_memory = cfg->unwind_memory,
        };
        m->conf = cfg->conf;
        m->reload = cfg->reload;
        m->reload_userdata = cfg->reload_userdata;
        wall_clock_init(&m->clock, cfg->test_clock_rate, cfg->test_clock_start_ago_s);
        m->started_ns = m->last_drain_end_ns = wall_clock_now(&m->clock);
        m->serve_only = !cfg->cpu && !cfg->offcpu && !cfg->wakeup;

        r = sd_event_default(&m->event);
        if (r < 0) {
                log_error_errno(r, "Failed to create the event loop: %m");
                goto fail;
        }
        /* With WatchdogSec= (WATCHDOG_USEC), the loop itself sends
         * WATCHDOG=1: a loop stuck in one callback stops the pings and
         * systemd restarts profd. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0) {
                log_error_errno(r, "Failed to enable the watchdog: %m");
                goto fail;
        }
        if (r > 0)
                log_debug("Watchdog enabled: the event loop pings systemd.");
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m)) < 0) {
                log_error_errno(r, "Failed to watch signals: %m");
                goto fail;
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_sighup, m);
        if (r < 0) {
                log_error_errno(r, "Failed to watch SIGHUP: %m");
                goto fail;
        }

        r = store_open(m->store_path, &m->store);
        if (r < 0)
                goto fail;
        /* after store_open: the workers' read-only connections need the
         * store created and migrated */
        r = query_pool_new(m->event, m->store_path, &m->queries);
        if (r < 0)
                goto fail;
        /* libdebuginfod reads its settings from the environment; set them
         * before the writer thread exists (setenv is not thread-safe) */
        if (cfg->debuginfod_urls) {
                if (setenv("DEBUGINFOD_URLS", cfg->debuginfod_urls, 1) < 0 ||
                    (cfg->debuginfod_cache && setenv("DEBUGINFOD_CACHE_PATH", cfg->debuginfod_cache, 1) < 0) ||
                    /* a slow server delays the drain being written, not
                     * queries: still, not for the library's 90 s default */
                    setenv("DEBUGINFOD_TIMEOUT", "10", 0) < 0) {
                        r = log_oom();
                        goto fail;
                }
                log_info("Debug files missing on this host are asked from %s.", cfg->debuginfod_urls);
        }
        /* serve-only: the store is only read (and migrated), nothing is
         * loaded into the kernel, and no writer runs (no retention either,
         * so a store copied off a host stays as it came) */
        if (m->serve_only) {
                if (m->conf && m->conf->clickhouse_url)
                        log_notice("Serve-only (--kinds none): nothing is stored, so nothing is exported to %s.",
                                   m->conf->clickhouse_url);
                goto listen;
        }
        r = writer_new(m->store_path, "/proc", cfg->symbol_cache_bytes, cfg->debuginfod_urls != NULL, &m->writer);
        if (r < 0)
                goto fail;
        if (m->conf) {
                /* starts retention too; without settings, it does not run */
                struct writer_settings ws = writer_settings_of(m->conf);
                r = writer_configure(m->writer, &ws);
                if (r < 0) {
                        r = log_oom();
                        goto fail;
                }
        }
        r = sd_event_add_io(m->event, &m->writer_io, writer_fd(m->writer), EPOLLIN, on_writer, m);
        if (r < 0) {
                log_error_errno(r, "Failed to watch the writer: %m");
                goto fail;
        }
        if (m->conf && m->conf->clickhouse_url) {
                r = exporter_new(&(struct exporter_config) {
                                         .url = m->conf->clickhouse_url,
                                         .host_name = m->conf->host_name,
                                         .credentials_path = m->conf->clickhouse_credentials,
                                         .store_path = m->store_path,
                                         .timeout_ns = m->conf->clickhouse_timeout_ns,
                                 },
                                 &m->exporter);
                if (r < 0)
                        goto fail;
        }

        r = collector_new(&m->collect, on_process_event, m, &m->coll);
        if (r < 0)
                goto fail;
#if defined(__x86_64__)
        /* the BPF walker reads x86-64 CFI rules; elsewhere it walks frame pointers */
        r = unwinder_new(collector_unwind_maps(m->coll), "/proc", &m->unwinder);
        if (r < 0) {
                log_error_errno(r, "Failed to start the unwinder: %m");
                goto fail;
        }
#endif
        r = sd_event_add_io(m->event, &m->events_io, collector_events_fd(m->coll), EPOLLIN, on_events, m);
        if (r < 0) {
                log_error_errno(r, "Failed to watch process events: %m");
                goto fail;
        }
        r = sd_event_add_time_relative(m->event, &m->drain_timer, CLOCK_MONOTONIC, m->collect.interval_ns / NSEC_PER_USEC,
                                       0, on_drain_timer, m);
        if (r < 0) {
                log_error_errno(r, "Failed to arm the drain timer: %m");
                goto fail;
        }
        /* Drains and signals go before client requests: however many clients
         * keep the loop busy, a due drain is the next thing it does. */
        (void) sd_event_source_set_priority(m->drain_timer, SD_EVENT_PRIORITY_IMPORTANT);
listen:
        (void) sd_event_source_set_priority(m->sigterm, SD_EVENT_PRIORITY_IMPORTANT);
        (void) sd_event_source_set_priority(m->sigint, SD_EVENT_PRIORITY_IMPORTANT);

        r = server_new(m->event,
                       &(struct server_config) {
                               .path = m->socket_path,
                               .mode = cfg->socket_mode,
                               .group = cfg->socket_group,
                               .admin_group = cfg->admin_group,
                               .max_clients = cfg->max_clients,
                               .idle_timeout_usec = cfg->client_timeout_ns / NSEC_PER_USEC,
                       },
                       handle_request, m, &m->server);
        if (r < 0)
                goto fail;

        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

manager *manager_free(manager *m) {
        if (!m)
                return NULL;
        /* first: a check of a large store still running ends at once */
        m->check = store_check_free(m->check);
        server_free(m->server);
        /* after the server: its clients are gone, their queries cancelled */
        m->queries = query_pool_free(m->queries);
        while (m->waiters) {
                struct flush_waiter *f = m->waiters;
                m->waiters = f->next;
                free(f);
        }
        /* the export first: a request in flight is abandoned, its drain
         * sent (or found stored) at the next start */
        m->exporter = exporter_free(m->exporter);
        /* then the writer: it stores every drain still queued, the last
         * interval included, before it stops */
        m->writer = writer_free(m->writer);
        sd_event_source_disable_unref(m->drain_timer);
        sd_event_source_disable_unref(m->events_io);
        sd_event_source_disable_unref(m->writer_io);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        /* before the collector: it writes into the collector's maps */
        unwinder_free(m->unwinder);
        collector_free(m->coll);
        store_close(m->store);
        sd_event_unref(m->event);
        free(m->socket_path);
        free(m->store_path);
        free(m);
        return NULL;
}

int manager_run(manager *m) {
        if (m->serve_only)
                log_info("profd %s: serve-only (--kinds none), collecting nothing; socket %s, store %s.",
                         PROFD_VERSION, server_socket_path(m->server), m->store_path);
        else
                log_info("profd %s: collecting%s%s%s, draining every %" PRIu64 " ms; socket %s, store %s.",
                         PROFD_VERSION, m->collect.cpu ? " cpu" : "", m->collect.offcpu ? " offcpu" : "",
                         m->collect.wakeup ? " wakeup" : "", (uint64_t) (m->collect.interval_ns / NSEC_PER_MSEC),
                         server_socket_path(m->server), m->store_path);
        /* manager_new returned: programs attached, store open, socket
         * listening. Units ordered after profd can query it now. */
        {
                char what[128];

                manager_describe(m, what, sizeof(what));
                m->drain_mono_ns = clock_now_ns(CLOCK_MONOTONIC);
                if (m->serve_only)
                        (void) sd_notifyf(0, "READY=1\nSTATUS=%s", what);
                else
                        (void) sd_notifyf(0, "READY=1\nSTATUS=%s; first drain in %" PRIu64 " ms", what,
                                          (uint64_t) (m->collect.interval_ns / NSEC_PER_MSEC));
        }
        /* the page check of the store reads all of it: after READY, on its
         * own thread, so start-up time does not grow with the store */
        (void) store_check_start(m->store_path, &m->check);
        return sd_event_loop(m->event);
}
