/* profd's event loop and the drain: kernel maps -> symbolized stacks ->
 * one store transaction. Requests are answered between drains. */
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
#include "symbolizer.h"

/* Names of the drop reasons, as stored and shown by `profctl status`. */
static const char *const drop_reason_names[PROFD_COUNTER__MAX] = {
        [PROFD_DROP_MAP_FULL] = "map_full",
        [PROFD_DROP_USER_STACK_ERROR] = "user_stack_error",
        [PROFD_DROP_KERNEL_STACK_ERROR] = "kernel_stack_error",
        [PROFD_DROP_STACK_MAP_FULL] = "stack_map_full",
        [PROFD_DROP_RINGBUF_FULL] = "ringbuf_full",
        [PROFD_DROP_TASK_STORAGE] = "task_storage_full",
};
#define DROP_PROCESS_VANISHED "process_vanished"
#define DROP_STORE_WRITE_FAILED "store_write_failed"

struct manager {
        char *socket_path;
        char *store_path;
        struct collector_config collect;

        sd_event *event;
        sd_event_source *drain_timer;
        sd_event_source *events_io;
        sd_event_source *sigterm, *sigint;
        symbolizer *sym;
        proctable *procs;
        collector *coll;
        store *store;
        server *server;

        uint64_t started_ns;          /* CLOCK_REALTIME at start */
        uint64_t last_drain_end_ns;   /* CLOCK_REALTIME: the next drain's bucket starts here */
        uint64_t vanished_stored;     /* proctable_vanished() already written as drops */
        uint64_t failed_drains;       /* drains lost to store errors, not yet written as drops */
        uint64_t pending_drops[PROFD_COUNTER__MAX]; /* drop counts of those drains */
        uint64_t samples_seen, idle_samples;
        uint64_t offcpu_filtered, offcpu_filtered_ns; /* blocks outside [min, max] */

        struct store_frame *frames;   /* scratch for one sample's frames */
        size_t frames_cap;
};

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static void on_process_event(const struct profd_event *e, void *userdata) {
        manager *m = userdata;
        int r;

        r = proctable_learn(m->procs, e->tgid, e->start_ns, e->comm, e->type == PROFD_EVENT_EXEC);
        if (r < 0)
                log_warning_errno(r, "Failed to record process %" PRIu32 ", ignoring: %m", e->tgid);
}

static const char *path_or(const char *p, const char *fallback) {
        return p ? p : fallback;
}

/* A user frame: the mapping it falls in, the file offset, the symbol. */
static struct store_frame user_frame(const struct proc *p, uint64_t ip) {
        const struct proc_mapping *map = p ? proc_find_mapping(p, ip) : NULL;

        if (!map)
                return (struct store_frame) { .module = "[unknown]", .address = ip };
        uint64_t off = ip - map->start + map->offset;
        return (struct store_frame) {
                .module = path_or(map->path, "[anon]"),
                .build_id = map->file ? sym_file_build_id(map->file) : NULL,
                .address = off,
                .function = map->file ? sym_file_lookup(map->file, off) : NULL,
        };
}

static struct store_frame kernel_frame(manager *m, uint64_t ip) {
        const char *module = NULL;
        const char *fn = symbolizer_lookup_kernel(m->sym, ip, &module);

        return (struct store_frame) {
                .module = module ? module : "[kernel.kallsyms]",
                .address = ip,
                .function = fn,
                .kernel = true,
        };
}

static const struct stack_trace *lookup_stack(hashmap *stacks, uint64_t id) {
        void *v;
        if (id == PROFD_STACK_NONE || id == PROFD_STACK_LOST || !stacks || hashmap_get(stacks, UINT64_TO_KEY(id), &v) < 0)
                return NULL;
        return v;
}

/* Builds the frames of one drained key, root first. Every return address
 * but the innermost frame's is looked up minus one, so it falls inside the
 * call instruction rather than possibly after the end of the function. */
static int build_frames(manager *m, const struct drain_batch *b, const struct profd_sample_key *key,
                        const struct proc *p, size_t *ret_n) {
        const struct stack_trace *ks = lookup_stack(b->frames, key->kernel_stack);
        const struct stack_trace *us = lookup_stack(b->frames, key->user_stack);
        size_t nk = ks ? ks->n : 0, nu = us ? us->n : 0, n = 0, need = nk + nu + 2;
        static const struct store_frame lost_user = { .module = "[lost]", .function = "[lost]" };
        static const struct store_frame lost_kernel = { .module = "[lost]", .function = "[lost]", .kernel = true };

        if (need > m->frames_cap) {
                struct store_frame *f = realloc(m->frames, need * sizeof(*f));
                if (!f)
                        return -ENOMEM;
                m->frames = f;
                m->frames_cap = need;
        }
        /* user frames, outermost first */
        if (key->user_stack != PROFD_STACK_NONE && !us)
                m->frames[n++] = lost_user;
        for (size_t i = nu; i-- > 0;) {
                bool innermost = i == 0 && nk == 0 && key->kernel_stack == PROFD_STACK_NONE;
                m->frames[n++] = user_frame(p, us->ips[i] - (innermost ? 0 : 1));
        }
        if (key->kernel_stack != PROFD_STACK_NONE && !ks)
                m->frames[n++] = lost_kernel;
        for (size_t i = nk; i-- > 0;)
                m->frames[n++] = kernel_frame(m, ks->ips[i] - (i == 0 ? 0 : 1));
        *ret_n = n;
        return 0;
}

static int write_drain(manager *m, const struct drain_batch *b, uint64_t start_ns, uint64_t end_ns,
                       int64_t *ret_id, uint64_t *ret_samples, uint64_t *ret_keys) {
        uint64_t vanished = proctable_vanished(m->procs);
        int r;

        r = store_drain_begin(m->store, start_ns, end_ns);
        for (size_t i = 0; r >= 0 && i < b->n_entries; i++) {
                const struct profd_sample_key *key = &b->entries[i].key;
                const struct proc *p = proctable_get(m->procs, key->tgid, key->start_ns);
                struct store_process sp = {
                        .pid = key->tgid,
                        .start_ns = key->start_ns,
                        /* pid 0: an interrupt woke a thread while the CPU idled */
                        .comm = p ? p->comm : key->tgid == 0 ? "swapper" : "",
                        .exe = p ? p->exe : NULL,
                        .cgroup = p ? p->cgroup : NULL,
                        .uid = p ? p->uid : 0,
                        .have_uid = p && p->have_uid,
                };
                size_t n;

                r = build_frames(m, b, key, p, &n);
                if (r < 0)
                        break;
                r = store_drain_add(m->store, &(struct store_sample) {
                        .process = &sp,
                        .tid = key->tid,
                        .cgroup_id = key->cgroup_id,
                        .kind = key->kind,
                        .state = key->state,
                        .peer_tid = key->peer_tid,
                        .frames = m->frames,
                        .n_frames = n,
                        .value = b->entries[i].value,
                });
        }
        /* drops of drains that could not be stored are kept for this one */
        for (int i = 0; r >= 0 && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        r = store_drain_drop(m->store, drop_reason_names[i], m->pending_drops[i] + b->counters[i]);
        if (r >= 0)
                r = store_drain_drop(m->store, DROP_PROCESS_VANISHED, vanished - m->vanished_stored);
        if (r >= 0)
                r = store_drain_drop(m->store, DROP_STORE_WRITE_FAILED, m->failed_drains);
        if (r >= 0)
                r = store_drain_commit(m->store, ret_id, ret_samples, ret_keys);
        if (r < 0) {
                store_drain_abort(m->store);
                for (int i = 0; i < PROFD_COUNTER__MAX; i++)
                        m->pending_drops[i] += b->counters[i];
                return r;
        }
        m->vanished_stored = vanished;
        m->failed_drains = 0;
        memset(m->pending_drops, 0, sizeof(m->pending_drops));
        return 0;
}

/* One drain: learn pending processes, take a generation out of the kernel,
 * symbolize it, store it in one transaction, forget exited processes. */
static int manager_drain(manager *m, int64_t *ret_id, uint64_t *ret_samples, uint64_t *ret_keys) {
        struct drain_batch b = {};
        uint64_t start_ns = m->last_drain_end_ns, end_ns;
        int r;

        /* processes announced before the flip must be known to symbolize */
        (void) collector_poll_events(m->coll);
        r = collector_drain(m->coll, &b);
        if (r < 0)
                return r;
        end_ns = now_ns(CLOCK_REALTIME);
        m->last_drain_end_ns = end_ns;
        m->samples_seen += b.counters[PROFD_CNT_SAMPLES];
        m->idle_samples += b.counters[PROFD_CNT_IDLE];
        m->offcpu_filtered += b.counters[PROFD_CNT_OFFCPU_FILTERED];
        m->offcpu_filtered_ns += b.counters[PROFD_CNT_OFFCPU_FILTERED_NS];

        r = write_drain(m, &b, start_ns, end_ns, ret_id, ret_samples, ret_keys);
        if (r < 0) {
                m->failed_drains++;
                log_error_errno(r, "Failed to store a drain of %zu keys (lost; %" PRIu64 " drains lost so far): %m",
                                b.n_entries, m->failed_drains);
        } else
                log_debug("Drained %zu keys.", b.n_entries);
        drain_batch_done(&b);
        proctable_prune(m->procs);
        return r;
}

static int on_drain_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        int r;

        (void) manager_drain(m, NULL, NULL, NULL);
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
        (void) manager_drain(m, NULL, NULL, NULL);
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
        struct store_stats st;
        json_t *drops, *o;
        int r;

        r = store_get_stats(m->store, &st);
        if (r < 0)
                return r;
        drops = json_object();
        for (int i = 0; drops && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        /* not yet in the store: drops of drains it could not take */
                        json_object_set_new(drops, drop_reason_names[i], json_integer((json_int_t) m->pending_drops[i]));
        if (drops) {
                json_object_set_new(drops, DROP_PROCESS_VANISHED, json_integer(0));
                json_object_set_new(drops, DROP_STORE_WRITE_FAILED, json_integer((json_int_t) m->failed_drains));
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
                json_object_set_new(o, "processes_tracked", json_integer((json_int_t) proctable_size(m->procs)));
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
        int64_t id = 0;
        uint64_t samples = 0, keys = 0;
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
                r = manager_drain(m, &id, &samples, &keys);
                if (r < 0)
                        return r;
                return server_client_send(c, json_pack("{s:s, s:I, s:I, s:I}", "type", "flushed", "drain_id",
                                                       (json_int_t) id, "samples", (json_int_t) samples,
                                                       "keys", (json_int_t) keys));
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

        r = symbolizer_new(&m->sym);
        if (r < 0) {
                log_oom();
                goto fail;
        }
        r = symbolizer_load_kallsyms(m->sym, "/proc/kallsyms");
        if (r < 0)
                log_warning_errno(r, "Cannot read kernel symbols from /proc/kallsyms, kernel frames stay "
                                     "unresolved: %m");
        r = proctable_new(m->sym, "/proc", &m->procs);
        if (r < 0) {
                log_oom();
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
        sd_event_source_disable_unref(m->drain_timer);
        sd_event_source_disable_unref(m->events_io);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        collector_free(m->coll);
        proctable_free(m->procs);
        symbolizer_free(m->sym);
        store_close(m->store);
        sd_event_unref(m->event);
        free(m->frames);
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
