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

#include "answer.h"
#include "capture-manager.h"
#include "collector.h"
#include "config.h"
#include "db.h"
#include "duration.h"
#include "exporter.h"
#include "heap.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"
#include "cgroup.h"
#include "proctable.h"
#include "query.h"
#include "server.h"
#include "status.h"
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

/* The executable ranges the event loop's last snapshot of a process found
 * (proc_maps_signature), so that a load of the unwinder that found the same
 * ones is not read again: one slot per pid modulo the table's size; a pid
 * that lost its slot to another is read again, which costs a read and no
 * answer. Why 1024: the processes a host starts within the unwinder's lag,
 * tens of milliseconds, many times over (24 KiB). */
#define MAPS_SEEN_SLOTS 1024

struct maps_seen {
        uint32_t pid;
        uint64_t start_ns, sig;
};

struct manager {

        sd_event *event;
        sd_event_source *drain_timer;
        sd_event_source *fill_timer;  /* the maps' fill check: drains early (FILL_CHECK_NS) */
        sd_event_source *events_io;
        sd_event_source *events_timer; /* the batch of process events (on_events) */
        uint64_t events_taken_ns;     /* CLOCK_MONOTONIC of the last take of them */
        sd_event_source *unwind_io; /* the unwinder's loaded processes */
        struct maps_seen maps_seen[MAPS_SEEN_SLOTS];
        sd_event_source *writer_io;
        sd_event_source *sigterm, *sigint;
        sd_event_source *sighup;      /* reload the settings */
        /* the running settings (the caller's): read on this thread only, and
         * replaced in place by a reload; the threads get copies */
        struct conf *conf;
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
        capture_manager *captures;    /* captures' triggers and pins (issue 44) */
        unsigned raised_hz;           /* a capture's raised sampling rate now; 0: the base (conf) */
        uint64_t raised_interval_ns;  /* the drain interval while raised */
        uint64_t raised_until_ns;     /* CLOCK_REALTIME (the manager's clock) the raise ends at */
        sd_event_source *restore_timer; /* ends the raise */
        struct flush_waiter *waiters;

        bool serve_only;              /* --kinds none: no BPF, no writer, queries only */
        struct wall_clock clock;      /* CLOCK_REALTIME, or the tests' faster one */
        uint64_t started_ns;          /* CLOCK_REALTIME at start */
        uint64_t last_drain_end_ns;   /* CLOCK_REALTIME: the next drain's bucket starts here */
        uint64_t vanished;            /* processes gone before they could be read */
        snapshot_memo *memo;          /* what the snapshots remember: cgroups, files (this thread's) */
        uint64_t offcpu_filtered, offcpu_filtered_ns; /* blocks outside [min, max] */
        uint64_t offcpu_unsampled, offcpu_unsampled_ns, wakeup_unsampled; /* offcpu_sample's draws */
        uint64_t wakeup_self;         /* wake-ups of profd's threads, not walked (offcpu_self_stacks off) */
        uint64_t kstack_memo_hits, kstack_memo_walks, kstack_memo_mismatches;
        uint64_t user_walks;          /* user stacks walked by BPF since start */
        uint64_t drains_early;        /* drains made before the interval: a map was nearly full */
        uint64_t runtime[STATUS_RUNTIME__MAX]; /* runtime walks' counters since start (status.h) */
        uint64_t hotspot[STATUS_HOTSPOT__MAX]; /* HotSpot's walker's since start (status.h) */
        /* for STATUS= rates: how long each recent drain collected, by the
         * writer's job number (results come back in order, a few at most
         * in flight) */
        uint64_t drain_mono_ns;       /* CLOCK_MONOTONIC of the last drain */
        uint64_t timeline_untimed;    /* on-CPU samples not in the timeline (PROFD_CNT_UNTIMED) */
        /* off-CPU blocks in the timeline, and those not (status.h) */
        uint64_t offtime_logged, offtime_short, offtime_short_ns, offtime_unlogged, offtime_unlogged_ns;
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

static struct maps_seen *maps_seen_slot(manager *m, uint32_t pid) {
        return &m->maps_seen[pid % MAPS_SEEN_SLOTS];
}

static void maps_seen_set(manager *m, uint32_t pid, uint64_t start_ns, uint64_t sig) {
        *maps_seen_slot(m, pid) = (struct maps_seen) { .pid = pid, .start_ns = start_ns, .sig = sig };
}

/* The verifier's instructions for each program, said at start: the same
 * programs took 3-4 times more on one build of a kernel version than on
 * another, and a program over COLLECTOR_VERIFIER_LIMIT is refused, so a
 * program past half of it is warned about while it still loads. */
static void verifier_margin_log(const collector *c) {
        struct collector_verified v[STATUS_VERIFIED_MAX];
        size_t n = collector_verified(c, v, ELEMENTSOF(v));

        for (size_t i = 0; i < n; i++) {
                if (v[i].insns > COLLECTOR_VERIFIER_LIMIT / 2)
                        log_warning("BPF program %s took %" PRIu32 " of the verifier's %u instructions to load: "
                                    "a kernel that verifies it less efficiently may refuse it.",
                                    v[i].name, v[i].insns, COLLECTOR_VERIFIER_LIMIT);
                else
                        log_debug("BPF program %s verified in %" PRIu32 " instructions.", v[i].name, v[i].insns);
        }
}

static void on_process_event(const struct profd_event *e, void *userdata) {
        _cleanup_free_ char *maps = NULL;
        manager *m = userdata;
        struct proc *p;
        bool vanished;
        int r;

        /* A code object a walk met: read at once, here, while the
         * process lives, with what discovery found in its interpreter's
         * file, then cached on the writer's thread. Neither a reload nor
         * a snapshot. */
        if (e->type == PROFD_EVENT_RUNTIME_CODE) {
                struct unwind_runtime_found found;

                /* the slot was emptied since (its file's table evicted):
                 * the frames stay unnamed, counted by the writer */
                if (!m->unwinder || unwinder_runtime(m->unwinder, e->rt_slot, &found) < 0)
                        return;
                r = writer_runtime_code(m->writer, e->tgid, e->start_ns, e->rt.bias, e->rt_id, e->rt.code, &found);
                if (r < 0 && r != -EPROTONOSUPPORT)
                        log_warning_errno(r, "Failed to queue a code object of process %" PRIu32 ", ignoring: %m",
                                          e->tgid);
                return;
        }
        /* captures on oom (issue 44): the victim is named, not read */
        if (e->type == PROFD_EVENT_OOM_VICTIM) {
                capture_manager_oom(m->captures, e->tgid, e->comm);
                return;
        }
        /* A miss (an ip in no mapping the unwinder knows, e.g. a library
         * loaded since) reloads the unwinder's view (its tables are built
         * on its thread); when that finds new mappings, the unwinder says
         * so and learn_loaded reads them. */
        if (e->type == PROFD_EVENT_UNWIND_MISS) {
                unwinder_request(m->unwinder, e->tgid, e->start_ns, e->type, NULL);
                return;
        }
        /* read /proc now, while the process lives; the writer reads the
         * files, and the unwinder publishes the process's tables from the
         * same read of its maps (queued only: unwinder_kick after the
         * batch wakes it) */
        r = proc_snapshot_hinted("/proc", e->tgid, e->start_ns,
                                 &(struct proc_hint) {
                                         .comm = e->comm,
                                         .have_ids = e->ns_pid != 0,
                                         .euid = e->euid,
                                         .ns_pid = e->ns_pid,
                                         .cgroup_id = e->cgroup_id,
                                 },
                                 m->memo, &p, &vanished, m->unwinder ? &maps : NULL);
        unwinder_request(m->unwinder, e->tgid, e->start_ns, e->type, TAKE_PTR(maps));
        if (r >= 0 && !vanished)
                maps_seen_set(m, e->tgid, e->start_ns, proc_maps_signature(p));
        if (r >= 0)
                r = writer_learn(m->writer, p);
        if (r < 0)
                log_warning_errno(r, "Failed to record process %" PRIu32 ", ignoring: %m", e->tgid);
        else if (vanished)
                m->vanished++;
}

/* The unwinder found mappings new to processes announced before: at an
 * exec, the snapshot above may have been read before the dynamic loader
 * mapped the libraries, and a program dlopens more later. Their maps are
 * read again now, while they live (the writer's own re-read at the drain
 * comes too late for a compiler that ran half a second), and merged into
 * what the writer has. */
static void learn_loaded(manager *m) {
        _cleanup_free_ struct unwinder_loaded *l = NULL;
        size_t n;

        if (!m->unwinder)
                return;
        n = unwinder_take_loaded(m->unwinder, &l);
        for (size_t i = 0; i < n; i++) {
                const struct maps_seen *seen = maps_seen_slot(m, l[i].tgid);
                _cleanup_free_ char *maps = TAKE_PTR(l[i].maps);
                struct proc *p;
                int r;

                if (seen->pid == l[i].tgid && seen->start_ns == l[i].start_ns && seen->sig == l[i].maps_sig)
                        continue; /* the last snapshot found these ranges */
                /* the maps as the unwinder read them, not read again */
                r = proc_snapshot_maps("/proc", l[i].tgid, l[i].start_ns, maps, &p);
                if (r == -ESRCH)
                        continue; /* gone: its announcement's snapshot is what there is */
                if (r >= 0) {
                        maps_seen_set(m, l[i].tgid, l[i].start_ns, proc_maps_signature(p));
                        r = writer_learn(m->writer, p);
                }
                if (r < 0)
                        log_warning_errno(r, "Failed to read the mappings of process %" PRIu32 " again, ignoring: %m",
                                          l[i].tgid);
        }
}

static int on_unwind_loaded(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        learn_loaded(userdata);
        return 0;
}

static int manager_take_events(manager *m);
static void events_hold(manager *m);

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
        (void) manager_take_events(m);
        learn_loaded(m);
        r = collector_drain(m->coll, &b);
        if (r < 0)
                return r;
        m->last_drain_end_ns = wall_clock_now(&m->clock);
        /* the timeline's times are CLOCK_MONOTONIC (bpf_ktime_get_ns);
         * the drains are stamped with the wall clock: one offset per drain,
         * so a wall clock set meanwhile moves a drain's timeline as a
         * whole, never reorders it (a test clock's rate is not applied) */
        b.wall_minus_mono_ns = (int64_t) (m->last_drain_end_ns - clock_now_ns(CLOCK_MONOTONIC));
        /* every change of rate flips a drain first (manager_set_rate), so
         * all of this one's samples were taken at the rate set now */
        b.frequency_hz = m->conf->kind_cpu ? collector_frequency(m->coll) : 0;
        m->timeline_untimed += b.counters[PROFD_CNT_UNTIMED];
        m->offtime_logged += b.n_blocks;
        m->offtime_short += b.counters[PROFD_CNT_OFFCPU_SHORT];
        m->offtime_short_ns += b.counters[PROFD_CNT_OFFCPU_SHORT_NS];
        m->offtime_unlogged += b.counters[PROFD_CNT_OFFCPU_UNLOGGED];
        m->offtime_unlogged_ns += b.counters[PROFD_CNT_OFFCPU_UNLOGGED_NS];
        m->offcpu_filtered += b.counters[PROFD_CNT_OFFCPU_FILTERED];
        m->offcpu_filtered_ns += b.counters[PROFD_CNT_OFFCPU_FILTERED_NS];
        m->offcpu_unsampled += b.counters[PROFD_CNT_OFFCPU_UNSAMPLED];
        m->offcpu_unsampled_ns += b.counters[PROFD_CNT_OFFCPU_UNSAMPLED_NS];
        m->wakeup_unsampled += b.counters[PROFD_CNT_WAKEUP_UNSAMPLED];
        m->wakeup_self += b.counters[PROFD_CNT_WAKEUP_SELF];
        m->kstack_memo_hits += b.counters[PROFD_CNT_KSTACK_MEMO_HITS];
        m->kstack_memo_walks += b.counters[PROFD_CNT_KSTACK_MEMO_WALKS];
        m->kstack_memo_mismatches += b.counters[PROFD_CNT_KSTACK_MEMO_MISMATCHES];
        m->user_walks += b.counters[PROFD_CNT_USER_WALKS];
        for (unsigned i = 0; i < STATUS_RUNTIME__MAX; i++)
                m->runtime[i] += b.counters[PROFD_CNT_RT_WALKS + i];
        for (unsigned i = 0; i < STATUS_HOTSPOT__MAX; i++)
                m->hotspot[i] += b.counters[PROFD_HS_WALKS + i];
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
        if (m->conf->kind_cpu)
                snprintf(buf, size, "sampling %u Hz %s%s%s", m->conf->frequency_hz, collector_event_name(m->coll),
                         m->conf->kind_offcpu ? ", offcpu" : "", m->conf->kind_wakeup ? ", wakeup" : "");
        else
                snprintf(buf, size, "collecting%s%s", m->conf->kind_offcpu ? " offcpu" : "",
                         m->conf->kind_wakeup ? (m->conf->kind_offcpu ? ", wakeup" : " wakeup") : "");
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
                /* a table no sample went through for three drains is
                 * cold: one drain without a sample of a library is
                 * common at 49 Hz, three of a program running is not */
                if (m->unwinder)
                        unwinder_note_sampled(m->unwinder, res.sampled, res.n_sampled, 3 * m->conf->interval_ns);
                free(res.sampled);
                res.sampled = NULL;
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

/* The drain interval now: shorter while a capture raises the rate. */
static uint64_t manager_interval_ns(const manager *m) {
        return m->raised_hz > 0 ? m->raised_interval_ns : m->conf->interval_ns;
}

static int on_drain_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        int r;

        (void) manager_drain(m, NULL);
        r = sd_event_source_set_time_relative(s, manager_interval_ns(m) / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm the drain timer: %m");
        return 0;
}

/* How often the maps' fill is checked, and the least time between two
 * drains it makes. A build host's blocks and wake-ups filled the stack
 * maps within some 10 s intervals, new stacks past that kept as [lost]
 * (docs/performance.md); a check is one read of the counters. */
#define FILL_CHECK_NS NSEC_PER_SEC

static void manager_rearm_drains(manager *m);

/* The fill check: when a map of the generation being written is
 * MAPSIZE_FILL_HIGH_PCT full, drains now (at most once per FILL_CHECK_NS)
 * and starts a whole interval from here, so that the stacks and keys still
 * to come find room in an empty generation. Counted (status
 * drains_early). */
static int on_fill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        struct mapsize_fill f;
        int r;

        r = sd_event_source_set_time_relative(s, FILL_CHECK_NS / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Failed to re-arm the fill check: %m");
        /* an event submitted without waking anyone just as the loop went
         * back to watching (events_watch) waits at most until here */
        if (sd_event_source_get_enabled(m->events_io, &r) >= 0 && r == SD_EVENT_ON && manager_take_events(m) > 0)
                events_hold(m);
        if (clock_now_ns(CLOCK_MONOTONIC) - m->drain_mono_ns < FILL_CHECK_NS)
                return 0;
        r = collector_fill(m->coll, &f);
        if (r < 0) {
                log_debug_errno(r, "Failed to read the maps' fill, ignoring: %m");
                return 0;
        }
        if (!mapsize_fill_high(&f))
                return 0;
        if (m->drains_early == 0)
                log_info("A kernel map was %d%% full before the drain interval ended (stack nodes %" PRIu64
                         "/%" PRIu64 ", %" PRIu64 "/%" PRIu64 ", %" PRIu64 "/%" PRIu64 "; keys %" PRIu64 "/%" PRIu64
                         "): drained early, as from now on whenever one is (status: drains_early).",
                         MAPSIZE_FILL_HIGH_PCT, f.nodes[PROFD_CLASS_8], f.nodes_max[PROFD_CLASS_8],
                         f.nodes[PROFD_CLASS_16], f.nodes_max[PROFD_CLASS_16], f.nodes[PROFD_CLASS_32],
                         f.nodes_max[PROFD_CLASS_32], f.keys, f.keys_max);
        if (manager_drain(m, NULL) < 0)
                return 0;
        m->drains_early++;
        manager_rearm_drains(m);
        return 0;
}

/* Process events are taken in batches, at most one every EVENTS_BATCH_NS
 * while they keep coming. Each take that empties the ring buffer makes the
 * next event's program wake this thread (the kernel's irq_work and a
 * wake-up: about 30 us of the program's time here, against 1 us without),
 * and each wake-up of profd's threads is a block profd's own off-CPU
 * programs walk. Taken one by one, a build host's execs woke the event
 * loop, the unwinder for each request and the event loop again for each
 * process it loaded, nearly half of all the kept blocks on the build loop
 * (docs/performance.md). A first event after a quiet spell is taken at
 * once; those within the batch's time of a take wait for its end, as the
 * requests they make, which go to the unwinder together. The price: a
 * process that exits within that time is gone before it is read (counted,
 * process_vanished), and named by its comm alone. On the compile loop,
 * 0, 2, 5 and 10 ms: the threads' wake-ups 396, 316, 232 and 170 a second,
 * the programs 1.39, 1.26, 1.19 and 1.07% of a core, processes vanished
 * 0, 1.5, 3.4 and 7 a second of about 60 execs. */
#define EVENTS_BATCH_NS (5 * NSEC_PER_MSEC)

/* Takes the events queued (on_process_event each) and wakes the unwinder
 * once for the requests they made. Returns how many were taken. */
static int manager_take_events(manager *m) {
        int r = collector_poll_events(m->coll);

        if (r < 0)
                log_warning_errno(r, "Failed to read process events, ignoring: %m");
        unwinder_kick(m->unwinder);
        m->events_taken_ns = clock_now_ns(CLOCK_MONOTONIC);
        return r;
}

/* Stops watching the ring buffer and takes what comes at the next batch's
 * end: meanwhile events are left in it, and their programs wake no one. */
static void events_hold(manager *m) {
        int r;

        collector_events_wake(m->coll, false);
        r = sd_event_source_set_enabled(m->events_io, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_source_set_time(m->events_timer, (m->events_taken_ns + EVENTS_BATCH_NS) / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->events_timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                /* events one by one, as before batches */
                log_warning_errno(r, "Failed to hold process events for a batch, taking them as they come: %m");
                collector_events_wake(m->coll, true);
                (void) sd_event_source_set_enabled(m->events_io, SD_EVENT_ON);
        }
}

/* Watches the ring buffer again after a batch found it empty. The
 * programs wake the loop again first, then what one submitted meanwhile
 * without waking anyone is taken: else it would wait there, and keep the
 * ring buffer from waking anyone for what follows, until a drain or the
 * fill check took it. Events taken then, or no watch, hold again. */
static void events_watch(manager *m) {
        collector_events_wake(m->coll, true);
        /* the second: the timer then goes on taking them */
        if (manager_take_events(m) > 0 || sd_event_source_set_enabled(m->events_io, SD_EVENT_ON) < 0)
                events_hold(m);
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        manager *m = userdata;

        if (clock_now_ns(CLOCK_MONOTONIC) - m->events_taken_ns >= EVENTS_BATCH_NS && manager_take_events(m) <= 0)
                return 0;
        events_hold(m);
        return 0;
}

/* A batch's end: takes what came; while events keep coming, the next batch
 * is taken by the timer again, else the ring buffer is watched again. */
static int on_events_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;

        if (manager_take_events(m) > 0)
                events_hold(m);
        else
                events_watch(m);
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

/* Changes the on-CPU sampler's rate. The samples taken so far at the old
 * rate are drained first, so each drain has one rate (stored with it,
 * drains.frequency_hz, and weighted by answers: rate-weight.h). What the
 * flip cannot separate: each CPU's first sample after the change is still
 * one old period after its previous one (the kernel re-arms the timer
 * with the new period only then). Returns 0 or a negative errno (then the
 * sampler keeps its rate). */
static int manager_set_rate(manager *m, unsigned hz) {
        int r;

        if (!m->coll || collector_frequency(m->coll) == hz)
                return 0;
        r = manager_drain(m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to flip a drain before changing the rate, ignoring: %m");
        return collector_set_frequency(m->coll, hz);
}

/* Drains every interval_ns from now on (the clock's now: see
 * on_capture_raise). */
static void manager_rearm_drains(manager *m) {
        int r;

        r = sd_event_source_set_time(m->drain_timer,
                                     (clock_now_ns(CLOCK_MONOTONIC) + manager_interval_ns(m)) / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->drain_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Failed to re-arm the drain timer: %m");
}

/* The end of a capture's raise: the base rate and interval again, from a
 * drain of their own. A failed ioctl is tried again a second later: the
 * raise must not outlive its bound. */
static int on_restore_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager *m = userdata;
        int r;

        r = manager_set_rate(m, m->conf->frequency_hz);
        if (r < 0) {
                log_error_errno(r, "Failed to sample at %u Hz again after a capture, trying again in 1 s: %m",
                                m->conf->frequency_hz);
                (void) sd_event_source_set_time_relative(s, USEC_PER_SEC);
                return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        log_info("Capture over: sampling at %u Hz again, draining every %" PRIu64 " ms.", m->conf->frequency_hz,
                 (uint64_t) (m->conf->interval_ns / NSEC_PER_MSEC));
        m->raised_hz = 0;
        m->raised_until_ns = 0;
        manager_rearm_drains(m);
        return 0;
}

/* A capture began (capture_manager_set_raise): sample at plan->hz,
 * drained every plan->interval_ns, until duration_ns from now; a capture
 * during another's raise extends it. */
static void on_capture_raise(const struct capture_raise *plan, uint64_t duration_ns, void *userdata) {
        manager *m = userdata;
        uint64_t until;
        int r;

        if (!m->coll || !m->conf->kind_cpu)
                return;
        if (m->raised_hz == 0) {
                r = manager_set_rate(m, plan->hz);
                if (r < 0) {
                        log_warning_errno(r, "Failed to raise the sampling rate to %u Hz for a capture, keeping %u Hz: %m",
                                          plan->hz, collector_frequency(m->coll));
                        return;
                }
                m->raised_hz = plan->hz;
                m->raised_interval_ns = plan->interval_ns;
                manager_rearm_drains(m);
                log_info("Capture: sampling at %u Hz, draining every %" PRIu64 " ms, for %" PRIu64 " s.", plan->hz,
                         (uint64_t) (plan->interval_ns / NSEC_PER_MSEC), (uint64_t) (duration_ns / NSEC_PER_SEC));
        }
        m->raised_until_ns = wall_clock_now(&m->clock) + duration_ns;
        /* from the clock now, not the loop's time of this iteration
         * (sd_event_now, what a relative time counts from): recording the
         * capture may have taken a second on a loaded disk, and the raise
         * would end that much early */
        until = (clock_now_ns(CLOCK_MONOTONIC) + duration_ns) / NSEC_PER_USEC;
        if (!m->restore_timer)
                r = sd_event_add_time(m->event, &m->restore_timer, CLOCK_MONOTONIC, until, 0, on_restore_timer, m);
        else {
                r = sd_event_source_set_time(m->restore_timer, until);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->restore_timer, SD_EVENT_ONESHOT);
        }
        if (r >= 0) {
                (void) sd_event_source_set_priority(m->restore_timer, SD_EVENT_PRIORITY_IMPORTANT);
                return;
        }
        /* without its end the raise would last: take it back now */
        log_error_errno(r, "Failed to arm the end of a capture's raise, sampling at %u Hz again: %m",
                        m->conf->frequency_hz);
        if (manager_set_rate(m, m->conf->frequency_hz) >= 0) {
                m->raised_hz = 0;
                m->raised_until_ns = 0;
                manager_rearm_drains(m);
        }
}

/* Re-applies one component after SIGHUP (conf_reload_diff calls it once
 * for each component with a changed setting). Returns 0, or a negative
 * errno to keep that component's running settings (logged here). */
static int manager_apply(enum conf_apply what, const struct conf *next, const struct conf *running,
                         void *userdata) {
        manager *m = userdata;
        int r;

        switch (what) {
        case CONF_APPLY_FREQUENCY:
                /* while a capture raises the rate, the new base applies
                 * at its end */
                if (!running->kind_cpu || m->raised_hz > 0)
                        return 0;
                r = manager_set_rate(m, next->frequency_hz);
                if (r < 0)
                        return log_error_errno(r, "Failed to sample at %u Hz, keeping %u Hz: %m", next->frequency_hz,
                                               running->frequency_hz);
                return 0;
        case CONF_APPLY_INTERVAL:
                /* while raised, the raise's interval; the new one after */
                if (m->raised_hz > 0)
                        return 0;
                /* from now: the drain in progress keeps what it holds */
                r = sd_event_source_set_time_relative(m->drain_timer, next->interval_ns / NSEC_PER_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->drain_timer, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_error_errno(r, "Failed to re-arm the drain timer: %m");
                return 0;
        case CONF_APPLY_OFFCPU:
                if (m->coll && (running->kind_offcpu || running->kind_wakeup))
                        collector_set_offcpu_thresholds(m->coll, next->offcpu_min_ns, next->offcpu_max_ns,
                                                        next->offcpu_sample_ns, next->timeline_offcpu_min_ns);
                return 0;
        case CONF_APPLY_CLIENTS:
                server_set_limits(m->server, next->max_clients, next->client_timeout_ns / NSEC_PER_USEC);
                return 0;
        case CONF_APPLY_WRITER:
                if (m->writer && writer_configure(m->writer, next) < 0)
                        return log_oom();
                return 0;
        default:
                return -EINVAL;
        }
}

/* SIGHUP: reads the settings again. A bad file is logged and changes
 * nothing; otherwise what can change while running is applied without
 * losing data, and what cannot is kept and logged as needing a restart
 * (conf_reload_diff, row by row of conf_settings[]). */
static int manager_reload(manager *m) {
        _cleanup_free_ char *error = NULL;
        struct conf nc, *old = m->conf;
        struct conf_reload res;
        unsigned skip = 0;
        int r;

        if (!m->reload) {
                log_info("Received SIGHUP, but profd was started without reloadable settings; ignoring.");
                return 0;
        }
        r = m->reload(&nc, &error, m->reload_userdata);
        if (r < 0) {
                log_error("Reloading the configuration failed, keeping the running one: %s",
                          error ? error : strerror(-r));
                return 0;
        }
        /* serve-only: nothing collects or writes, only the client limits apply */
        if (m->serve_only)
                skip = 1u << CONF_APPLY_FREQUENCY | 1u << CONF_APPLY_INTERVAL | 1u << CONF_APPLY_OFFCPU;
        conf_reload_diff(&nc, old, skip, manager_apply, m, &res);
        /* the maps were sized at start from frequency x interval */
        if (m->conf->kind_cpu && (uint64_t) nc.frequency_hz * (nc.interval_ns / NSEC_PER_MSEC) >
                                      (uint64_t) old->frequency_hz * (old->interval_ns / NSEC_PER_MSEC))
                log_notice("The kernel maps were sized at start for fewer samples per interval; if status "
                           "shows map_full drops, restart profd to size them anew.");
        conf_done(old);
        *old = nc;
        log_info("Reloaded the configuration: %s.", res.summary[0] ? res.summary : "nothing changed");
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

/* Reads each part's stats for status_build. Returns 0 or a negative errno;
 * on success the caller frees ret->store with store_stats_done. */
static int manager_get_stats(manager *m, struct status_stats *ret) {
        struct status_stats *s = ret;
        int r;

        *s = (struct status_stats) {
                .conf = m->conf,
                .pid = (uint64_t) getpid(),
                .uptime_s = (wall_clock_now(&m->clock) - m->started_ns) / NSEC_PER_SEC,
                .event = m->coll ? collector_event_name(m->coll) : NULL,
                .sampling_hz = m->coll && m->conf->kind_cpu ? collector_frequency(m->coll) : 0,
                .raised_until_ns = m->raised_hz > 0 ? m->raised_until_ns : 0,
                .interval_now_ns = manager_interval_ns(m),
                .offcpu_filtered = m->offcpu_filtered,
                .offcpu_filtered_ns = m->offcpu_filtered_ns,
                .offcpu_sample_ns = m->coll ? collector_offcpu_sample_ns(m->coll) : 0,
                .offcpu_unsampled = m->offcpu_unsampled,
                .offcpu_unsampled_ns = m->offcpu_unsampled_ns,
                .wakeup_unsampled = m->wakeup_unsampled,
                .wakeup_self = m->wakeup_self,
                .kstack_memo_hits = m->kstack_memo_hits,
                .kstack_memo_walks = m->kstack_memo_walks,
                .kstack_memo_mismatches = m->kstack_memo_mismatches,
                .drains_early = m->drains_early,
                .user_walks = m->user_walks,
                .timeline_untimed = m->timeline_untimed,
                .offtime_logged = m->offtime_logged,
                .offtime_short = m->offtime_short,
                .offtime_short_ns = m->offtime_short_ns,
                .offtime_unlogged = m->offtime_unlogged,
                .offtime_unlogged_ns = m->offtime_unlogged_ns,
                .writer_running = m->writer != NULL,
                .unwinder_running = m->unwinder != NULL,
                .exporter_running = m->exporter != NULL,
                .check_running = m->check != NULL,
        };
        memcpy(s->runtime, m->runtime, sizeof(s->runtime));
        memcpy(s->hotspot, m->hotspot, sizeof(s->hotspot));
        if (m->writer) {
                writer_get_stats(m->writer, &s->writer);
                s->samples_seen = s->writer.samples_seen;
                s->idle_samples = s->writer.idle_samples;
        }
        r = store_get_stats(m->store, &s->store);
        /* the pages the counts read (2-7.5 MiB, store_get_stats) are
         * free now: given back at once, not at the next drain's trim */
        heap_trim();
        if (r < 0)
                return r;
        if (m->unwinder)
                unwinder_get_stats(m->unwinder, &s->unwind);
        if (m->exporter)
                exporter_get_status(m->exporter, &s->export);
        s->clients = server_n_clients(m->server);
        query_pool_get_stats(m->queries, &s->queries);
        if (m->check)
                store_check_get(m->check, &s->check);
        s->migration_read = store_migration_get(m->store, &s->migration) >= 0;
        status_rss_read(&s->rss);
        heap_usage(&s->heap_in_use_bytes, &s->heap_free_bytes);
        s->sqlite_bytes = db_heap_bytes();
        heap_trim_stats(&s->heap_trims, &s->heap_trim_ns);
        snapshot_memo_counts(m->memo, &s->snapshots);
        s->n_verified = collector_verified(m->coll, s->verified, ELEMENTSOF(s->verified));
        return 0;
}

static int send_status(manager *m, server_client *c) {
        const struct client_creds *creds = server_client_creds(c);
        struct status_stats s;
        json_t *o;
        int r;

        r = manager_get_stats(m, &s);
        if (r < 0)
                return r;
        r = capture_manager_get_status(m->captures, &s.captures);
        if (r < 0) {
                capture_status_done(&s.captures);
                store_stats_done(&s.store);
                return r;
        }
        capture_status_keep_visible(&s.captures, creds->privileged, (uint32_t) creds->uid);
        o = status_build(&s);
        capture_status_done(&s.captures);
        store_stats_done(&s.store);
        return server_client_send(c, o);
}

/* Captures: small writes and reads on this thread's connection, answered
 * at once. */
static int send_capture(manager *m, server_client *c, const struct request *req) {
        const struct client_creds *creds = server_client_creds(c);
        _cleanup_free_ char *error = NULL;
        json_t *answer;
        int r;

        r = capture_manager_request(m->captures, &req->capture, creds->privileged, (uint32_t) creds->uid, &answer,
                                    &error);
        if (r < 0 && error)
                return server_client_send_error(c, error);
        if (r < 0)
                return r;
        return server_client_send(c, answer);
}

static uint64_t manager_wall_now(void *userdata) {
        manager *m = userdata;

        return wall_clock_now(&m->clock);
}

/* Queries and series: answer.c makes the lines on a query worker
 * (query.c), which streams them to the client; the loop goes on with
 * drains and other clients meanwhile. */
static int send_answer(manager *m, server_client *c, const struct request *req) {
        const struct client_creds *creds = server_client_creds(c);
        struct answer_caller who = { .privileged = creds->privileged, .uid = creds->uid };

        /* answers count samples at the base rate, whatever a capture
         * raised it to meanwhile: status's frequency_hz, which profctl
         * turns into time and pprof's period */
        return query_pool_submit(m->queries, c, req, &who, wall_clock_now(&m->clock), m->conf->interval_ns,
                                 m->conf->frequency_hz, !m->conf->timeline);
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
        case REQUEST_TIMELINE:
                return send_answer(m, c, req);
        case REQUEST_CAPTURE:
                return send_capture(m, c, req);
        }
        return -EINVAL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(manager *, manager_free);

/* The event loop with its watchdog and the signals profd answers: SIGTERM
 * and SIGINT stop it, SIGHUP reloads. Returns 0 or a negative errno,
 * logged. */
static int manager_setup_loop(manager *m) {
        sigset_t mask;
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");
        /* With WatchdogSec= (WATCHDOG_USEC), the loop itself sends
         * WATCHDOG=1: a loop stuck in one callback stops the pings and
         * systemd restarts profd. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Failed to enable the watchdog: %m");
        if (r > 0)
                log_debug("Watchdog enabled: the event loop pings systemd.");
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m)) < 0)
                return log_error_errno(r, "Failed to watch signals: %m");

        sigemptyset(&mask);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGHUP: %m");
        return 0;
}

/* libdebuginfod reads its settings from the environment; they are set
 * before the writer thread exists (setenv is not thread-safe). Returns 0 or
 * -ENOMEM, logged. */
static int manager_setup_debuginfod(const struct conf *conf) {
        if (!conf->debuginfod_urls)
                return 0;
        if (setenv("DEBUGINFOD_URLS", conf->debuginfod_urls, 1) < 0 ||
            (conf->debuginfod_cache && setenv("DEBUGINFOD_CACHE_PATH", conf->debuginfod_cache, 1) < 0) ||
            /* a slow server delays the drain being written, not queries:
             * still, not for the library's 90 s default */
            setenv("DEBUGINFOD_TIMEOUT", "10", 0) < 0)
                return log_oom();
        log_info("Debug files missing on this host are asked from %s.", conf->debuginfod_urls);
        return 0;
}

/* What profiling adds to a serving profd: the writer (and retention), the
 * export, the BPF collector and unwinder, and the drain timer. Returns 0 or
 * a negative errno, logged. */
static int manager_setup_collect(manager *m) {
        int r;

        r = writer_new(m->conf->store_path, "/proc", m->conf->symbol_cache_bytes, m->conf->debuginfod_urls != NULL,
                       &m->writer);
        if (r < 0)
                return r;
        /* starts retention too */
        r = writer_configure(m->writer, m->conf);
        if (r < 0)
                return log_oom();
        r = sd_event_add_io(m->event, &m->writer_io, writer_fd(m->writer), EPOLLIN, on_writer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the writer: %m");
        if (m->conf->clickhouse_url) {
                r = exporter_new(m->conf, &m->exporter);
                if (r < 0)
                        return r;
        }

        r = collector_new(m->conf, on_process_event, m, &m->coll);
        if (r < 0)
                return r;
        {
                struct kernel_range *own;
                size_t n_own;

                if (collector_own_code(m->coll, &own, &n_own) < 0)
                        return log_oom();
                writer_set_own_code(m->writer, own, n_own);
        }
        verifier_margin_log(m->coll);
#if defined(__x86_64__)
        /* the BPF walker reads x86-64 CFI rules; elsewhere it walks frame pointers */
        r = unwinder_new(collector_unwind_maps(m->coll), "/proc", &m->unwinder);
        if (r < 0)
                return log_error_errno(r, "Failed to start the unwinder: %m");
        r = sd_event_add_io(m->event, &m->unwind_io, unwinder_loaded_fd(m->unwinder), EPOLLIN, on_unwind_loaded, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the unwinder: %m");
#endif
        r = sd_event_add_io(m->event, &m->events_io, collector_events_fd(m->coll), EPOLLIN, on_events, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch process events: %m");
        /* accuracy 1 ms: sd-event's default (250 ms) would hold a batch that long */
        r = sd_event_add_time(m->event, &m->events_timer, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_events_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->events_timer, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the process events' batch timer: %m");
        r = sd_event_add_time_relative(m->event, &m->drain_timer, CLOCK_MONOTONIC, m->conf->interval_ns / NSEC_PER_USEC,
                                       0, on_drain_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the drain timer: %m");
        /* Drains and signals go before client requests: however many clients
         * keep the loop busy, a due drain is the next thing it does. */
        (void) sd_event_source_set_priority(m->drain_timer, SD_EVENT_PRIORITY_IMPORTANT);
        r = sd_event_add_time_relative(m->event, &m->fill_timer, CLOCK_MONOTONIC, FILL_CHECK_NS / NSEC_PER_USEC,
                                       0, on_fill_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the maps' fill check: %m");
        (void) sd_event_source_set_priority(m->fill_timer, SD_EVENT_PRIORITY_IMPORTANT);
        return 0;
}

/* What the snapshots remember, with cgroups under the host's cgroup v2
 * mount (none kept when it has none or it cannot be found). Returns 0 or
 * -ENOMEM. */
static int manager_snapshot_memo(snapshot_memo **ret) {
        _cleanup_free_ char *mountinfo = NULL, *mount = NULL;
        int r;

        r = read_full_file("/proc/self/mountinfo", &mountinfo);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                r = cgroup2_mount_point(mountinfo, &mount);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "No cgroup v2 mount found, new processes' cgroups are read each time: %m");
        *ret = snapshot_memo_new(mount);
        return *ret ? 0 : -ENOMEM;
}

int manager_new(const struct manager_config *cfg, manager **ret) {
        _cleanup_(manager_freep) manager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return log_oom();
        m->conf = cfg->conf;
        m->reload = cfg->reload;
        m->reload_userdata = cfg->reload_userdata;
        wall_clock_init(&m->clock, cfg->test_clock_rate, cfg->test_clock_start_ago_s);
        m->started_ns = m->last_drain_end_ns = wall_clock_now(&m->clock);
        m->serve_only = !m->conf->kind_cpu && !m->conf->kind_offcpu && !m->conf->kind_wakeup;
        r = manager_snapshot_memo(&m->memo);
        if (r < 0)
                return log_oom();

        r = manager_setup_loop(m);
        if (r < 0)
                return r;
        r = store_open(m->conf->store_path, &m->store);
        if (r < 0)
                return r;
        /* after store_open: the workers' read-only connections need the
         * store created and migrated */
        r = query_pool_new(m->event, m->conf->store_path, &m->queries);
        if (r < 0)
                return r;
        r = manager_setup_debuginfod(m->conf);
        if (r < 0)
                return r;
        /* serve-only: the store is only read (and migrated), nothing is
         * loaded into the kernel, and no writer runs (no retention either,
         * so a store copied off a host stays as it came) */
        if (m->serve_only) {
                if (m->conf->clickhouse_url)
                        log_notice("Serve-only (--kinds none): nothing is stored, so nothing is exported to %s.",
                                   m->conf->clickhouse_url);
        } else {
                r = manager_setup_collect(m);
                if (r < 0)
                        return r;
        }
        r = capture_manager_new(m->event, m->store, m->conf, !m->serve_only, collector_watches_oom(m->coll),
                                manager_wall_now, m, &m->captures);
        if (r < 0)
                return r;
        capture_manager_set_raise(m->captures, on_capture_raise, m);
        (void) sd_event_source_set_priority(m->sigterm, SD_EVENT_PRIORITY_IMPORTANT);
        (void) sd_event_source_set_priority(m->sigint, SD_EVENT_PRIORITY_IMPORTANT);

        r = server_new(m->event, m->conf, handle_request, m, &m->server);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
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
        m->captures = capture_manager_free(m->captures);
        m->memo = snapshot_memo_free(m->memo);
        sd_event_source_disable_unref(m->drain_timer);
        sd_event_source_disable_unref(m->fill_timer);
        sd_event_source_disable_unref(m->restore_timer);
        sd_event_source_disable_unref(m->events_io);
        sd_event_source_disable_unref(m->events_timer);
        sd_event_source_disable_unref(m->unwind_io);
        sd_event_source_disable_unref(m->writer_io);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        /* before the collector: it writes into the collector's maps */
        unwinder_free(m->unwinder);
        collector_free(m->coll);
        store_close(m->store);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

int manager_run(manager *m) {
        if (m->serve_only)
                log_info("profd %s: serve-only (--kinds none), collecting nothing; socket %s, store %s.",
                         PROFD_VERSION, server_socket_path(m->server), m->conf->store_path);
        else
                log_info("profd %s: collecting%s%s%s, draining every %" PRIu64 " ms; socket %s, store %s.",
                         PROFD_VERSION, m->conf->kind_cpu ? " cpu" : "", m->conf->kind_offcpu ? " offcpu" : "",
                         m->conf->kind_wakeup ? " wakeup" : "", (uint64_t) (m->conf->interval_ns / NSEC_PER_MSEC),
                         server_socket_path(m->server), m->conf->store_path);
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
                                          (uint64_t) (m->conf->interval_ns / NSEC_PER_MSEC));
        }
        /* the page check of the store reads all of it: after READY, on its
         * own thread, so start-up time does not grow with the store */
        (void) store_check_start(m->conf->store_path, &m->check);
        return sd_event_loop(m->event);
}
