/* profd's event loop: the generation flip on a timer, process snapshots as
 * processes appear, requests. Symbolizing and storing each drain is the
 * writer thread's work (writer.c), so neither delays the other. */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "proctable.h"
#include "server.h"
#include "store.h"
#include "writer.h"

/* A flush waiting for its drain to be stored. */
struct flush_waiter {
        struct flush_waiter *next;
        uint64_t seq;        /* the writer's drain job */
        uint64_t client_id;  /* the client may have left by then */
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
        collector *coll;
        store *store;                 /* this thread's connection: queries and status */
        writer *writer;               /* symbolizes and stores drains */
        server *server;
        struct flush_waiter *waiters;

        uint64_t started_ns;          /* CLOCK_REALTIME at start */
        uint64_t last_drain_end_ns;   /* CLOCK_REALTIME: the next drain's bucket starts here */
        uint64_t vanished;            /* processes gone before they could be read */
        uint64_t samples_seen, idle_samples;
        uint64_t offcpu_filtered, offcpu_filtered_ns; /* blocks outside [min, max] */
};

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void on_process_event(const struct profd_event *e, void *userdata) {
        manager *m = userdata;
        struct proc *p;
        bool vanished;
        int r;

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

        (void) collector_poll_events(m->coll);
        r = collector_drain(m->coll, &b);
        if (r < 0)
                return r;
        m->last_drain_end_ns = now_ns(CLOCK_REALTIME);
        m->samples_seen += b.counters[PROFD_CNT_SAMPLES];
        m->idle_samples += b.counters[PROFD_CNT_IDLE];
        m->offcpu_filtered += b.counters[PROFD_CNT_OFFCPU_FILTERED];
        m->offcpu_filtered_ns += b.counters[PROFD_CNT_OFFCPU_FILTERED_NS];
        r = writer_drain(m->writer, &b, start_ns, m->last_drain_end_ns, m->vanished, &seq);
        if (r < 0)
                return log_error_errno(r, "Failed to queue a drain: %m");
        if (ret_seq)
                *ret_seq = seq;
        return 0;
}

/* Answers the flushes whose drains the writer finished. */
static int on_writer(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        manager *m = userdata;
        struct writer_result res;

        while (writer_result_pop(m->writer, &res)) {
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
        (void) sd_notify(0, "STOPPING=1");
        /* the writer stores it, and everything queued, before it stops */
        (void) manager_drain(m, NULL);
        return sd_event_exit(m->event, 0);
}

/* The daemon's resident memory, from /proc/self/statm (pages). 0 if unknown. */
static uint64_t self_rss_bytes(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");
        unsigned long size, resident;

        if (!f || fscanf(f, "%lu %lu", &size, &resident) != 2)
                return 0;
        return (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE);
}

static int send_status(manager *m, server_client *c) {
        struct writer_stats ws;
        struct store_stats st;
        json_t *drops, *o;
        int r;

        writer_get_stats(m->writer, &ws);
        r = store_get_stats(m->store, &st);
        if (r < 0)
                return r;
        drops = json_object();
        for (int i = 0; drops && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        /* not yet in the store: drops of drains it could not take */
                        json_object_set_new(drops, drop_reason_names[i], json_integer((json_int_t) ws.pending_drops[i]));
        if (drops) {
                json_object_set_new(drops, DROP_PROCESS_VANISHED, json_integer(0));
                json_object_set_new(drops, DROP_STORE_WRITE_FAILED, json_integer((json_int_t) ws.failed_drains));
                for (size_t i = 0; i < st.n_drops; i++) {
                        json_int_t v = (json_int_t) st.drops[i].count;
                        json_t *cur = json_object_get(drops, st.drops[i].reason);
                        if (cur)
                                v += json_integer_value(cur);
                        json_object_set_new(drops, st.drops[i].reason, json_integer(v));
                }
        }
        o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:s?, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                      "type", "status",
                      "version", PROFD_VERSION,
                      "pid", (json_int_t) getpid(),
                      "uptime_s", (json_int_t) ((now_ns(CLOCK_REALTIME) - m->started_ns) / NSEC_PER_SEC),
                      "frequency_hz", (json_int_t) (m->collect.cpu ? m->collect.frequency_hz : 0),
                      "event", collector_event_name(m->coll),
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
                json_object_set_new(o, "unresolved", json_pack("{s:I, s:I, s:I, s:I}",
                        "no_symbols", (json_int_t) ws.unresolved.no_symbols,
                        "no_file", (json_int_t) ws.unresolved.no_file,
                        "jit_without_map", (json_int_t) ws.unresolved.jit_without_map,
                        "unknown_mapping", (json_int_t) ws.unresolved.unknown_mapping));
                json_object_set_new(o, "jit_map_entries_dropped", json_integer((json_int_t) ws.jit_map_entries_dropped));
                json_object_set_new(o, "clients", json_integer((json_int_t) server_n_clients(m->server)));
                json_object_set_new(o, "rss_bytes", json_integer((json_int_t) self_rss_bytes()));
                json_object_set_new(o, "offcpu", json_pack("{s:I, s:o, s:I, s:I}",
                        "min_ns", (json_int_t) m->collect.offcpu_min_ns,
                        "max_ns", m->collect.offcpu_max_ns == UINT64_MAX ? json_null()
                                                                        : json_integer((json_int_t) m->collect.offcpu_max_ns),
                        "filtered_blocks", (json_int_t) m->offcpu_filtered,
                        "filtered_ns", (json_int_t) m->offcpu_filtered_ns));
        }
        store_stats_done(&st);
        return server_client_send(c, o);
}

struct query_ctx {
        server_client *client;
        bool collapse_kernel;       /* unprivileged caller: kernel frames become one [kernel] */
        bool raw_names;             /* names as in the symbol table, not demangled */
};

static int send_stack(const struct store_frame_out *frames, size_t n, uint64_t value, void *userdata) {
        struct query_ctx *q = userdata;
        json_t *arr = json_array();

        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *f;

                if (q->collapse_kernel && frames[i].kernel) {
                        /* what perf_event_paranoid=2 shows a user of the kernel: that
                         * it was there, no function and no address */
                        if (i > 0 && frames[i - 1].kernel)
                                continue;
                        f = json_pack("{s:s, s:s, s:b, s:b}", "name", "[kernel]", "module", "[kernel]",
                                      "kernel", 1, "resolved", 0);
                } else {
                        const struct store_frame_out *fr = &frames[i];
                        const char *name = q->raw_names && fr->raw_name ? fr->raw_name : fr->name;

                        f = json_pack("{s:s, s:s, s:b, s:b}", "name", name, "module", fr->module,
                                      "kernel", fr->kernel, "resolved", fr->resolved);
                        /* what debug info adds, only when there is some */
                        if (f && fr->file)
                                json_object_set_new(f, "file", json_string(fr->file));
                        if (f && fr->line)
                                json_object_set_new(f, "line", json_integer(fr->line));
                        if (f && fr->inlined)
                                json_object_set_new(f, "inlined", json_true());
                        if (f && fr->raw_name && !streq(fr->raw_name, name))
                                json_object_set_new(f, "raw_name", json_string(fr->raw_name));
                }
                if (!f || json_array_append_new(arr, f) < 0) {
                        json_decref(arr);
                        return -ENOMEM;
                }
        }
        return server_client_send(q->client,
                                  json_pack("{s:s, s:I, s:o}", "type", "stack", "value", (json_int_t) value,
                                            "frames", arr));
}

static int send_query(manager *m, server_client *c, const struct query_request *rq) {
        const struct client_creds *creds = server_client_creds(c);
        uint64_t now = now_ns(CLOCK_REALTIME), total = 0, stacks = 0;
        struct store_query q = {
                .kind = rq->kind,
                .from_ns = rq->since_ns < now ? now - rq->since_ns : 0,
                .to_ns = rq->until_ns < now ? now - rq->until_ns : 0,
                .pid = rq->pid,
                .comm = rq->comm,
                .state_mask = rq->state_mask,
                /* enforced here, not in profctl: a caller that is not root
                 * or an admin sees only processes that ran with its uid */
                .only_uid = !creds->privileged,
                .uid = creds->uid,
        };
        struct query_ctx ctx = { .client = c, .collapse_kernel = !creds->privileged, .raw_names = rq->raw_names };
        int r;

        r = store_query_stacks(m->store, &q, send_stack, &ctx, &total, &stacks);
        if (r < 0)
                return r;
        static const char *const kind_names[] = {
                [PROFD_KIND_CPU] = "cpu", [PROFD_KIND_OFFCPU] = "offcpu", [PROFD_KIND_WAKEUP] = "wakeup",
        };
        return server_client_send(c, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "type", "end",
                                               "kind", kind_names[rq->kind],
                                               "unit", rq->kind == PROFD_KIND_CPU ? "samples" : "ns",
                                               "stacks", (json_int_t) stacks, "total", (json_int_t) total,
                                               "from_ns", (json_int_t) q.from_ns, "to_ns", (json_int_t) q.to_ns));
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
                return send_query(m, c, &req->query);
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
        };
        m->started_ns = m->last_drain_end_ns = now_ns(CLOCK_REALTIME);

        r = sd_event_default(&m->event);
        if (r < 0) {
                log_error_errno(r, "Failed to create the event loop: %m");
                goto fail;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m)) < 0) {
                log_error_errno(r, "Failed to watch signals: %m");
                goto fail;
        }

        r = store_open(m->store_path, &m->store);
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
        r = writer_new(m->store_path, "/proc", cfg->symbol_cache_bytes, cfg->debuginfod_urls != NULL, &m->writer);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(m->event, &m->writer_io, writer_fd(m->writer), EPOLLIN, on_writer, m);
        if (r < 0) {
                log_error_errno(r, "Failed to watch the writer: %m");
                goto fail;
        }

        r = collector_new(&m->collect, on_process_event, m, &m->coll);
        if (r < 0)
                goto fail;
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
        server_free(m->server);
        while (m->waiters) {
                struct flush_waiter *f = m->waiters;
                m->waiters = f->next;
                free(f);
        }
        /* first the writer: it stores every drain still queued, the last
         * interval included, before it stops */
        m->writer = writer_free(m->writer);
        sd_event_source_disable_unref(m->drain_timer);
        sd_event_source_disable_unref(m->events_io);
        sd_event_source_disable_unref(m->writer_io);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        collector_free(m->coll);
        store_close(m->store);
        sd_event_unref(m->event);
        free(m->socket_path);
        free(m->store_path);
        free(m);
        return NULL;
}

int manager_run(manager *m) {
        log_info("profd %s: collecting%s%s%s, draining every %" PRIu64 " ms; socket %s, store %s.",
                 PROFD_VERSION, m->collect.cpu ? " cpu" : "", m->collect.offcpu ? " offcpu" : "",
                 m->collect.wakeup ? " wakeup" : "", (uint64_t) (m->collect.interval_ns / NSEC_PER_MSEC),
                 m->socket_path, m->store_path);
        (void) sd_notify(0, "READY=1");
        return sd_event_loop(m->event);
}
