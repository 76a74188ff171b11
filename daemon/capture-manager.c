/* The capture manager (see capture-manager.h). */
#include "capture-manager.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture-event.h"
#include "helpers.h"
#include "log.h"
#include "protocol.h"

/* Conditions are read once a second: a CPU share is over the last
 * second (capture.h), and PSI's shortest average is 10 s. */
#define POLL_NS NSEC_PER_SEC
/* Triggers requests may arm: a watched file read each second costs
 * microseconds; 64 bounds it whatever clients ask, 4 per unprivileged
 * user so one user cannot take them all. */
#define TRIGGERS_FROM_REQUESTS_MAX 64
#define TRIGGERS_PER_USER_MAX 4
/* Captures a list answer shows, newest first: one per cool-down makes
 * this days of captures. */
#define LIST_MAX 100

struct trigger {
        struct trigger *next;
        int64_t id;
        struct capture_cond cond;
        char *text;            /* the condition as capture_cond_format writes it */
        bool from_setting;
        uint32_t uid;          /* who armed it (0: the setting) */
        bool above;            /* capture_edge's state */
        bool primed;           /* cpu: a first reading was taken */
        uint64_t cpu_ns, mono_ns, start_ticks;
        uint64_t fired, refused;
        uint32_t last_centi;
        bool has_last;         /* last_centi was read */
        int last_error;        /* the last read's, 0: fine */
};

/* A capture whose time after the trigger still runs: it is settled
 * (measured, pinned) once that time and the drains covering it are
 * stored. */
struct active {
        struct active *next;
        int64_t id;
        uint64_t from_ns, to_ns, estimate;
};

struct capture_manager {
        sd_event_source *timer;
        store *store;
        const struct conf *conf;
        bool collecting;
        bool oom_watched;
        capture_clock_fn now;
        void *now_userdata;
        struct capture_gate gate;
        struct trigger *triggers;
        int64_t next_trigger_id;
        struct active *active;
        uint64_t failed, read_errors;
        long ticks_per_s;
        char *cgroup2;         /* where cgroup2 is mounted: found at the first cpu:cgroup= read */
        capture_raise_fn raise;
        void *raise_userdata;
        struct capture_raise plan; /* how a capture raises the sampler (capture_frequency) */
};

static uint64_t mono_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static struct trigger *trigger_free(struct trigger *t) {
        if (!t)
                return NULL;
        capture_cond_done(&t->cond);
        free(t->text);
        free(t);
        return NULL;
}

/* A trigger for condition text (checked by the caller's parse). */
static int trigger_new(capture_manager *cm, const char *text, bool from_setting, uint32_t uid,
                       struct trigger **ret, char **ret_error) {
        struct trigger *t = calloc(1, sizeof(*t));
        const char *err;
        char buf[CAPTURE_CGROUP_MAX + 64];
        int r;

        if (!t)
                return -ENOMEM;
        r = capture_cond_parse(text, &t->cond, &err);
        if (r < 0) {
                free(t);
                return r == -EINVAL ? format_error(ret_error, "bad capture condition '%s': %s", text, err) : r;
        }
        capture_cond_format(&t->cond, buf, sizeof(buf));
        t->text = strdup(buf);
        if (!t->text) {
                trigger_free(t);
                return -ENOMEM;
        }
        t->id = ++cm->next_trigger_id;
        t->from_setting = from_setting;
        t->uid = uid;
        *ret = t;
        return 0;
}

/* Reads a condition's value now, in hundredths of a percent. Returns 0
 * and the value, -EAGAIN when a CPU share needs a second reading, or a
 * negative errno (-ENOENT, -ESRCH: the process or cgroup is gone). */
static int trigger_read(capture_manager *cm, struct trigger *t, uint32_t *ret_centi) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        uint64_t cpu_ns, start = 0, mono;
        int r;

        switch (t->cond.kind) {
        case CAPTURE_PSI: {
                static const char *const files[_CAPTURE_PSI_RESOURCE_MAX] = {
                        "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io",
                };
                struct psi_reading psi;

                r = read_full_file(files[t->cond.resource], &text);
                if (r < 0)
                        return r;
                r = psi_parse(text, strlen(text), &psi);
                if (r < 0)
                        return r;
                return psi_value(&psi, &t->cond, ret_centi);
        }
        case CAPTURE_CPU_PID:
                if (asprintf(&path, "/proc/%" PRIu32 "/stat", t->cond.pid) < 0)
                        return -ENOMEM;
                r = read_full_file(path, &text);
                if (r < 0)
                        return r == -ENOENT ? -ESRCH : r;
                r = capture_parse_stat(text, strlen(text), (uint64_t) cm->ticks_per_s, &cpu_ns, &start);
                break;
        case CAPTURE_CPU_CGROUP:
                if (!cm->cgroup2) {
                        r = read_full_file("/proc/self/mounts", &text);
                        if (r < 0)
                                return r;
                        r = capture_cgroup2_mount(text, strlen(text), &cm->cgroup2);
                        if (r < 0)
                                return r;
                        free(text);
                        text = NULL;
                }
                if (asprintf(&path, "%s%s/cpu.stat", cm->cgroup2, streq(t->cond.cgroup, "/") ? "" : t->cond.cgroup) < 0)
                        return -ENOMEM;
                r = read_full_file(path, &text);
                if (r < 0)
                        return r;
                r = capture_parse_cpu_stat(text, strlen(text), &cpu_ns);
                break;
        default:
                return -EOPNOTSUPP;
        }
        if (r < 0)
                return r;
        mono = mono_now();
        /* a first reading, or a pid reused since the last */
        if (!t->primed || start != t->start_ticks) {
                t->primed = true;
                t->cpu_ns = cpu_ns;
                t->mono_ns = mono;
                t->start_ticks = start;
                return -EAGAIN;
        }
        *ret_centi = capture_cpu_centi(t->cpu_ns, cpu_ns, mono - t->mono_ns);
        t->cpu_ns = cpu_ns;
        t->mono_ns = mono;
        return 0;
}

json_t *capture_json(const struct store_capture *c) {
        return json_pack("{s:I, s:s, s:s, s:I, s:o, s:I, s:I, s:I, s:I, s:s, s:I}",
                         "id", (json_int_t) c->id,
                         "cause", c->cause,
                         "origin", c->origin,
                         "uid", (json_int_t) c->uid,
                         "value_percent", c->has_value ? json_real(c->value_centi / 100.0) : json_null(),
                         "trigger_ns", (json_int_t) c->trigger_ns,
                         "from_ns", (json_int_t) c->from_ns,
                         "to_ns", (json_int_t) MIN(c->to_ns, (uint64_t) INT64_MAX),
                         "pinned_bytes", (json_int_t) MIN(c->pinned_bytes, (uint64_t) INT64_MAX),
                         "state", store_capture_state_name(c->state),
                         /* the on-CPU rate while it lasted; 0: unknown or none */
                         "frequency_hz", (json_int_t) c->frequency_hz);
}

static void timer_arm(capture_manager *cm);

/* Begins a capture now, if the gate grants it. Returns 0 and its row
 * (cause borrowed) in *ret, -EBUSY with the gate's verdict in *ret_verdict
 * (counted), or a negative errno (the store's: counted as failed). */
static int capture_begin(capture_manager *cm, const char *cause, const char *origin, uint32_t uid, bool has_value,
                         uint32_t value_centi, struct store_capture *ret, enum capture_verdict *ret_verdict) {
        uint64_t now = cm->now(cm->now_userdata), from, to, seen = 0, estimate;
        struct store_capture c;
        struct active *a;
        int r;

        capture_range(now, cm->conf->capture_before_ns, cm->conf->capture_duration_ns, &from, &to);
        /* what the store holds of the minutes before, at that rate over
         * the whole range, its raised part as many times more as the rate
         * is raised (the timeline grows with it; the aggregates less) */
        r = store_capture_bytes(cm->store, from, now, &seen);
        if (r < 0)
                log_warning_errno(r, "Failed to measure the store for a capture, estimating 0 bytes: %m");
        estimate = capture_estimate_bytes(seen, now - from, cm->conf->capture_before_ns,
                                          cm->conf->kind_cpu && cm->conf->frequency_hz > 0
                                                  ? cm->conf->capture_duration_ns / cm->conf->frequency_hz * cm->plan.hz
                                                  : cm->conf->capture_duration_ns);
        *ret_verdict = capture_gate_ask(&cm->gate, now, estimate);
        if (*ret_verdict != CAPTURE_GRANTED) {
                log_info("Capture on %s not started: %s (%" PRIu64 " refused so far for this reason).", cause,
                         capture_verdict_name(*ret_verdict), cm->gate.refused[*ret_verdict]);
                return -EBUSY;
        }
        a = calloc(1, sizeof(*a));
        if (!a) {
                capture_gate_unpin(&cm->gate, estimate);
                return -ENOMEM;
        }
        c = (struct store_capture) {
                .cause = cause, .origin = origin, .uid = uid, .has_value = has_value, .value_centi = value_centi,
                .trigger_ns = now, .from_ns = from, .to_ns = to, .pinned_bytes = estimate,
                .state = STORE_CAPTURE_ACTIVE,
                .frequency_hz = cm->conf->kind_cpu && cm->collecting ? cm->plan.hz : 0,
        };
        r = store_capture_add(cm->store, &c, &c.id);
        if (r < 0) {
                free(a);
                capture_gate_unpin(&cm->gate, estimate);
                cm->failed++;
                return log_warning_errno(r, "Failed to record a capture on %s: %m", cause);
        }
        *a = (struct active) { .id = c.id, .from_ns = from, .to_ns = to, .estimate = estimate, .next = cm->active };
        cm->active = a;
        log_notice("Capture %" PRId64 " on %s (%s, uid %" PRIu32 "): pinning %" PRIu64 " s before and %" PRIu64
                   " s after, about %" PRIu64 " bytes.", c.id, cause, origin, uid,
                   (uint64_t) (cm->conf->capture_before_ns / NSEC_PER_SEC),
                   (uint64_t) (cm->conf->capture_duration_ns / NSEC_PER_SEC), estimate);
        *ret = c;
        timer_arm(cm);
        if (cm->raise && c.frequency_hz > cm->conf->frequency_hz)
                cm->raise(&cm->plan, cm->conf->capture_duration_ns, cm->raise_userdata);
        return 0;
}

void capture_manager_set_raise(capture_manager *cm, capture_raise_fn fn, void *userdata) {
        cm->raise = fn;
        cm->raise_userdata = userdata;
}

/* Settles the captures whose time is over and stored: their pins
 * measured, the gate's estimate replaced by the measure. The drains that
 * cover the end are stored within two intervals of it. */
static void captures_settle(capture_manager *cm, uint64_t now) {
        for (struct active **p = &cm->active; *p;) {
                struct active *a = *p;
                uint64_t bytes = a->estimate;
                int r;

                if (now < a->to_ns || now - a->to_ns < 2 * cm->conf->interval_ns) {
                        p = &a->next;
                        continue;
                }
                r = store_capture_bytes(cm->store, a->from_ns, a->to_ns, &bytes);
                if (r >= 0)
                        r = store_capture_set(cm->store, a->id, STORE_CAPTURE_PINNED, bytes);
                if (r == -ENOENT)
                        bytes = 0; /* gone from the store meanwhile: nothing pinned */
                else if (r < 0) {
                        log_warning_errno(r, "Failed to settle capture %" PRId64 ", trying again: %m", a->id);
                        p = &a->next;
                        continue;
                }
                capture_gate_unpin(&cm->gate, a->estimate);
                cm->gate.pinned_bytes += bytes;
                log_info("Capture %" PRId64 " ended: %" PRIu64 " bytes pinned.", a->id, bytes);
                *p = a->next;
                free(a);
        }
}

static void trigger_poll(capture_manager *cm, struct trigger **p) {
        struct trigger *t = *p;
        struct store_capture c;
        enum capture_verdict v;
        uint32_t centi = 0;
        int r;

        if (t->cond.kind == CAPTURE_OOM)
                return; /* fired by capture_manager_oom, not read */
        r = trigger_read(cm, t, &centi);
        if (r == -EAGAIN)
                return;
        if (r < 0) {
                /* a process gone ends a trigger a request armed for it; the
                 * setting's stay (the file may come back: a cgroup
                 * restarted) */
                if (r == -ESRCH && !t->from_setting) {
                        log_info("Capture trigger %" PRId64 " (%s) ends: the process is gone.", t->id, t->text);
                        *p = t->next;
                        trigger_free(t);
                        return;
                }
                if (r != t->last_error)
                        log_warning_errno(r, "Failed to read the value of capture condition %s, ignoring: %m",
                                          t->text);
                t->last_error = r;
                t->primed = false;
                t->above = false;
                cm->read_errors++;
                return;
        }
        t->last_error = 0;
        t->last_centi = centi;
        t->has_last = true;
        if (!capture_edge(&t->above, centi, t->cond.above_centi))
                return;
        r = capture_begin(cm, t->text, t->from_setting ? "setting" : "request", t->uid, true, centi, &c, &v);
        if (r == -EBUSY)
                t->refused++;
        else if (r >= 0)
                t->fired++;
}

void capture_manager_oom(capture_manager *cm, uint32_t pid, const char *comm) {
        struct trigger *first = NULL;
        struct store_capture c;
        enum capture_verdict v;
        int r;

        for (struct trigger *t = cm->triggers; t; t = t->next)
                if (t->cond.kind == CAPTURE_OOM && (!first || t->from_setting))
                        first = t;
        log_info("The kernel chose process %" PRIu32 " (%s) as an OOM victim%s.", pid, comm,
                 first ? ": a capture on oom" : "");
        if (!first)
                return;
        r = capture_begin(cm, first->text, first->from_setting ? "setting" : "request", first->uid, false, 0, &c, &v);
        if (r == -EBUSY)
                first->refused++;
        else if (r >= 0)
                first->fired++;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        capture_manager *cm = userdata;

        for (struct trigger **p = &cm->triggers; *p;) {
                struct trigger *t = *p;

                trigger_poll(cm, p);
                if (*p == t)
                        p = &t->next;
        }
        captures_settle(cm, cm->now(cm->now_userdata));
        timer_arm(cm);
        return 0;
}

/* The timer runs while something is read or a capture is active. */
static void timer_arm(capture_manager *cm) {
        bool want = cm->active;

        for (struct trigger *t = cm->triggers; t && !want; t = t->next)
                want = t->cond.kind != CAPTURE_OOM;

        if (!want) {
                (void) sd_event_source_set_enabled(cm->timer, SD_EVENT_OFF);
                return;
        }
        if (sd_event_source_get_enabled(cm->timer, NULL) > 0)
                return;
        (void) sd_event_source_set_time_relative(cm->timer, POLL_NS / NSEC_PER_USEC);
        (void) sd_event_source_set_enabled(cm->timer, SD_EVENT_ONESHOT);
}

int capture_manager_new(sd_event *event, store *s, const struct conf *conf, bool collecting, bool oom_watched,
                        capture_clock_fn now, void *now_userdata, capture_manager **ret) {
        _cleanup_(capture_manager_freep) capture_manager *cm = NULL;
        struct store_capture_totals tot;
        int64_t settled;
        int r;

        cm = calloc(1, sizeof(*cm));
        if (!cm)
                return log_oom();
        cm->store = s;
        cm->conf = conf;
        cm->collecting = collecting;
        capture_raise_plan(conf->frequency_hz, conf->capture_frequency_hz, conf->interval_ns, CONF_MIN_INTERVAL_NS,
                           &cm->plan);
        if (conf->kind_cpu && conf->capture_frequency_hz > conf->frequency_hz && cm->plan.hz < conf->capture_frequency_hz)
                log_notice("Captures raise the sampling rate to %u Hz, not capture_frequency's %u Hz: the kernel "
                           "maps are sized for frequency x interval, and drains cannot come more often than every "
                           "%" PRIu64 " ms.", cm->plan.hz, conf->capture_frequency_hz,
                           (uint64_t) (cm->plan.interval_ns / NSEC_PER_MSEC));
        cm->oom_watched = oom_watched;
        cm->now = now;
        cm->now_userdata = now_userdata;
        cm->ticks_per_s = sysconf(_SC_CLK_TCK);
        if (cm->ticks_per_s <= 0)
                cm->ticks_per_s = 100;
        cm->gate = (struct capture_gate) { .cooldown_ns = conf->capture_cooldown_ns,
                                           .budget_bytes = conf->capture_max_pinned };

        /* the pins of the last run count against the budget, and its last
         * capture against the cool-down; a capture a stop cut short keeps
         * the range it was given */
        /* serve-only changes nothing in the store it is given */
        settled = collecting ? store_capture_settle(s) : 0;
        if (settled < 0)
                return log_error_errno((int) settled, "Failed to settle the captures of the last run: %m");
        r = store_capture_totals(s, &tot);
        if (r < 0)
                return log_error_errno(r, "Failed to read the captures: %m");
        cm->gate.pinned_bytes = tot.pinned_bytes;
        cm->gate.last_ns = tot.last_trigger_ns;
        cm->gate.any = tot.last_trigger_ns > 0;

        r = sd_event_add_time_relative(event, &cm->timer, CLOCK_MONOTONIC, POLL_NS / NSEC_PER_USEC, 0, on_timer, cm);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the capture timer: %m");
        (void) sd_event_source_set_enabled(cm->timer, SD_EVENT_OFF);

        for (size_t i = 0; collecting && conf->capture_on && conf->capture_on[i]; i++) {
                _cleanup_free_ char *err = NULL;
                struct trigger *t;

                r = trigger_new(cm, conf->capture_on[i], true, 0, &t, &err);
                if (r < 0)
                        return r == -ENOMEM ? log_oom() : log_error_errno(r, "capture_on: %s", err);
                /* a capture that could never fire is not kept quiet */
                if (t->cond.kind == CAPTURE_OOM && !oom_watched) {
                        trigger_free(t);
                        return log_error_errno(-EOPNOTSUPP,
                                               "capture_on: oom needs the kernel's oom/mark_victim tracepoint, "
                                               "which could not be attached (see above).");
                }
                t->next = cm->triggers;
                cm->triggers = t;
                log_info("Capturing when %s.", t->text);
        }
        if (!collecting && conf->capture_on && conf->capture_on[0])
                log_notice("Serve-only (--kinds none): capture_on is not watched, nothing is collected to capture.");
        timer_arm(cm);
        *ret = TAKE_PTR(cm);
        return 0;
}

capture_manager *capture_manager_free(capture_manager *cm) {
        if (!cm)
                return NULL;
        sd_event_source_disable_unref(cm->timer);
        while (cm->triggers) {
                struct trigger *t = cm->triggers;
                cm->triggers = t->next;
                trigger_free(t);
        }
        while (cm->active) {
                struct active *a = cm->active;
                cm->active = a->next;
                free(a);
        }
        free(cm->cgroup2);
        free(cm);
        return NULL;
}

static json_t *trigger_json(const struct trigger *t) {
        return json_pack("{s:I, s:s, s:s, s:I, s:o, s:I, s:I, s:o}",
                         "id", (json_int_t) t->id,
                         "condition", t->text,
                         "origin", t->from_setting ? "setting" : "request",
                         "uid", (json_int_t) t->uid,
                         "value_percent", t->has_last ? json_real(t->last_centi / 100.0) : json_null(),
                         "fired", (json_int_t) t->fired,
                         "refused", (json_int_t) t->refused,
                         "error", t->last_error ? json_string(strerror(-t->last_error)) : json_null());
}

static json_t *answer_new(const char *action) {
        return json_pack("{s:s, s:s}", PROTO_KEY_TYPE, PROTO_TYPE_CAPTURE, PROTO_KEY_ACTION, action);
}

static int start(capture_manager *cm, const char *condition, bool privileged, uint32_t uid, json_t **ret_answer,
                 char **ret_error) {
        _cleanup_(json_decrefp) json_t *answer = NULL;
        struct capture_cond cond = {};
        uint32_t owner = UINT32_MAX;
        const char *err;
        size_t n_all = 0, n_user = 0;
        struct trigger *t;
        int r;

        if (!cm->collecting)
                return format_error(ret_error, "profd runs with --kinds none (serve-only): it collects nothing, so "
                                               "there is nothing to capture");
        r = capture_cond_parse(condition, &cond, &err);
        if (r < 0)
                return r == -EINVAL ? format_error(ret_error, "bad capture condition '%s': %s", condition, err) : r;
        if (cond.kind == CAPTURE_CPU_PID) {
                char path[32];
                struct stat st;

                snprintf(path, sizeof(path), "/proc/%" PRIu32, cond.pid);
                if (stat(path, &st) == 0)
                        owner = (uint32_t) st.st_uid;
                else if (privileged) {
                        capture_cond_done(&cond);
                        return format_error(ret_error, "cpu:pid=%" PRIu32 ": no such process", cond.pid);
                }
        }
        r = capture_may_start(&cond, privileged, uid, owner, &err);
        if (r < 0) {
                capture_cond_done(&cond);
                r = format_error(ret_error, "%s", err);
                return r == -EINVAL ? -EPERM : r;
        }
        if (cond.kind == CAPTURE_OOM && !cm->oom_watched) {
                capture_cond_done(&cond);
                r = format_error(ret_error, "oom: the kernel's oom/mark_victim tracepoint could not be attached "
                                            "(profd's log says why); use psi:memory.full>N for memory pressure");
                return r == -EINVAL ? -EOPNOTSUPP : r;
        }
        answer = answer_new(PROTO_CAPTURE_START);
        if (!answer) {
                capture_cond_done(&cond);
                return -ENOMEM;
        }
        if (cond.kind == CAPTURE_MANUAL) {
                struct store_capture c;
                enum capture_verdict v;

                capture_cond_done(&cond);
                r = capture_begin(cm, "manual", "request", uid, false, 0, &c, &v);
                if (r == -EBUSY) {
                        if (v == CAPTURE_COOLING) {
                                uint64_t now = cm->now(cm->now_userdata);
                                uint64_t ago = now > cm->gate.last_ns ? now - cm->gate.last_ns : 0;

                                r = format_error(ret_error, "not started: the last capture began %" PRIu64
                                                 " s ago, within the cool-down of %" PRIu64 " s (capture_cooldown)",
                                                 (uint64_t) (ago / NSEC_PER_SEC),
                                                 (uint64_t) (cm->conf->capture_cooldown_ns / NSEC_PER_SEC));
                        } else
                                r = format_error(ret_error, "not started: its pins would pass capture_max_pinned (%"
                                                 PRIu64 " bytes, %" PRIu64 " pinned now); unpin a capture first",
                                                 cm->gate.budget_bytes, cm->gate.pinned_bytes);
                        return r == -EINVAL ? -EBUSY : r;
                }
                if (r < 0)
                        return r;
                if (json_object_set_new(answer, "capture", capture_json(&c)) < 0)
                        return -ENOMEM;
                *ret_answer = TAKE_PTR(answer);
                return 0;
        }
        for (t = cm->triggers; t; t = t->next)
                if (!t->from_setting) {
                        n_all++;
                        n_user += t->uid == uid;
                }
        capture_cond_done(&cond);
        if (n_all >= TRIGGERS_FROM_REQUESTS_MAX || (!privileged && n_user >= TRIGGERS_PER_USER_MAX)) {
                r = format_error(ret_error, "too many capture triggers armed (%zu, %zu of them yours); stop one "
                                            "with profctl capture stop ID", n_all, n_user);
                return r == -EINVAL ? -EBUSY : r;
        }
        r = trigger_new(cm, condition, false, uid, &t, ret_error);
        if (r < 0)
                return r;
        t->next = cm->triggers;
        cm->triggers = t;
        log_info("Capture trigger %" PRId64 " armed by uid %" PRIu32 ": %s.", t->id, uid, t->text);
        timer_arm(cm);
        if (json_object_set_new(answer, "trigger", trigger_json(t)) < 0)
                return -ENOMEM;
        *ret_answer = TAKE_PTR(answer);
        return 0;
}

/* What a caller of list sees: every capture and trigger when privileged,
 * else only those it armed, as the events of a series or timeline answer
 * (capture_event_visible): a cause names another user's process. */
struct list_ctx {
        json_t *captures;
        bool privileged;
        uint32_t uid;
};

static int list_one(const struct store_capture *c, void *userdata) {
        struct list_ctx *l = userdata;

        if (!capture_event_visible(c->uid, l->privileged, l->uid))
                return 0;
        return json_array_append_new(l->captures, capture_json(c)) < 0 ? -ENOMEM : 0;
}

static int list(capture_manager *cm, bool privileged, uint32_t uid, json_t **ret_answer) {
        _cleanup_(json_decrefp) json_t *answer = answer_new(PROTO_CAPTURE_LIST);
        json_t *captures = json_array(), *triggers = json_array();
        int r;

        if (!answer || !captures || !triggers || json_object_set_new(answer, "captures", captures) < 0 ||
            json_object_set_new(answer, "triggers", triggers) < 0)
                return -ENOMEM;
        r = store_capture_list(cm->store, LIST_MAX, list_one,
                               &(struct list_ctx) { .captures = captures, .privileged = privileged, .uid = uid });
        if (r < 0)
                return r;
        for (struct trigger *t = cm->triggers; t; t = t->next)
                if (capture_event_visible(t->uid, privileged, uid) &&
                    json_array_append_new(triggers, trigger_json(t)) < 0)
                        return -ENOMEM;
        *ret_answer = TAKE_PTR(answer);
        return 0;
}

static int unpin(capture_manager *cm, int64_t id, bool privileged, uint32_t uid, json_t **ret_answer,
                 char **ret_error) {
        _cleanup_(json_decrefp) json_t *answer = answer_new(PROTO_CAPTURE_UNPIN);
        _cleanup_free_ char *cause = NULL;
        struct store_capture c;
        int r;

        if (!answer)
                return -ENOMEM;
        if (!cm->collecting) {
                r = format_error(ret_error, "profd runs with --kinds none (serve-only): it changes nothing in the "
                                            "store it was given, pins included");
                return r == -EINVAL ? -EOPNOTSUPP : r;
        }
        r = store_capture_get(cm->store, id, &c, &cause);
        if (r == -ENOENT) {
                r = format_error(ret_error, "no capture %" PRId64 " (profctl capture list shows them)", id);
                return r == -EINVAL ? -ENOENT : r;
        }
        if (r < 0)
                return r;
        if (!privileged && c.uid != uid) {
                r = format_error(ret_error, "capture %" PRId64 " is not yours: only root, the admin group and who "
                                            "started it may unpin it", id);
                return r == -EINVAL ? -EPERM : r;
        }
        if (c.state == STORE_CAPTURE_UNPINNED) {
                r = format_error(ret_error, "capture %" PRId64 " is unpinned already", id);
                return r == -EINVAL ? -ENOENT : r;
        }
        r = store_capture_set(cm->store, id, STORE_CAPTURE_UNPINNED, c.pinned_bytes);
        if (r < 0)
                return r;
        /* an active one gives back its estimate, which is what the gate holds */
        for (struct active **p = &cm->active; *p; p = &(*p)->next)
                if ((*p)->id == id) {
                        struct active *a = *p;

                        c.pinned_bytes = a->estimate;
                        *p = a->next;
                        free(a);
                        break;
                }
        capture_gate_unpin(&cm->gate, c.pinned_bytes);
        log_notice("Capture %" PRId64 " unpinned by uid %" PRIu32 ": %" PRIu64 " bytes back to retention.", id, uid,
                   c.pinned_bytes);
        c.state = STORE_CAPTURE_UNPINNED;
        if (json_object_set_new(answer, "capture", capture_json(&c)) < 0)
                return -ENOMEM;
        *ret_answer = TAKE_PTR(answer);
        return 0;
}

static int stop(capture_manager *cm, int64_t id, bool privileged, uint32_t uid, json_t **ret_answer,
                char **ret_error) {
        _cleanup_(json_decrefp) json_t *answer = answer_new(PROTO_CAPTURE_STOP);
        int r;

        if (!answer)
                return -ENOMEM;
        for (struct trigger **p = &cm->triggers; *p; p = &(*p)->next) {
                struct trigger *t = *p;

                if (t->id != id)
                        continue;
                if (t->from_setting)
                        r = format_error(ret_error, "trigger %" PRId64 " comes from capture_on: change the setting "
                                                    "and restart profd to stop it", id);
                else if (!privileged && t->uid != uid)
                        r = format_error(ret_error, "trigger %" PRId64 " is not yours", id);
                else {
                        if (json_object_set_new(answer, "trigger", trigger_json(t)) < 0)
                                return -ENOMEM;
                        log_info("Capture trigger %" PRId64 " (%s) stopped by uid %" PRIu32 ".", id, t->text, uid);
                        *p = t->next;
                        trigger_free(t);
                        timer_arm(cm);
                        *ret_answer = TAKE_PTR(answer);
                        return 0;
                }
                return r == -EINVAL ? -EPERM : r;
        }
        r = format_error(ret_error, "no capture trigger %" PRId64 " (profctl capture list shows them)", id);
        return r == -EINVAL ? -ENOENT : r;
}

int capture_manager_request(capture_manager *cm, const struct capture_request *req, bool privileged, uint32_t uid,
                            json_t **ret_answer, char **ret_error) {
        *ret_answer = NULL;
        *ret_error = NULL;
        switch (req->action) {
        case CAPTURE_ACTION_START:
                return start(cm, req->condition, privileged, uid, ret_answer, ret_error);
        case CAPTURE_ACTION_LIST:
                return list(cm, privileged, uid, ret_answer);
        case CAPTURE_ACTION_UNPIN:
                return unpin(cm, req->id, privileged, uid, ret_answer, ret_error);
        case CAPTURE_ACTION_STOP:
                return stop(cm, req->id, privileged, uid, ret_answer, ret_error);
        }
        return -EINVAL;
}

static int last_one(const struct store_capture *c, void *userdata) {
        struct capture_status *s = userdata;
        char *cause = strdup(c->cause);

        if (!cause || s->n_last >= CAPTURE_STATUS_LAST) {
                free(cause);
                return cause ? 0 : -ENOMEM;
        }
        s->last[s->n_last] = *c;
        s->last[s->n_last].cause = cause;
        s->last[s->n_last].origin = streq(c->origin, "setting") ? "setting" : "request";
        s->n_last++;
        return 0;
}

int capture_manager_get_status(capture_manager *cm, struct capture_status *ret) {
        int r;

        *ret = (struct capture_status) {
                .running = true,
                .budget_bytes = cm->gate.budget_bytes,
                .cooldown_ns = cm->gate.cooldown_ns,
                .before_ns = cm->conf->capture_before_ns,
                .duration_ns = cm->conf->capture_duration_ns,
                .gate_pinned_bytes = cm->gate.pinned_bytes,
                .failed = cm->failed,
                .read_errors = cm->read_errors,
        };
        memcpy(ret->refused, cm->gate.refused, sizeof(ret->refused));
        for (struct trigger *t = cm->triggers; t; t = t->next)
                ret->triggers++;
        r = store_capture_totals(cm->store, &ret->totals);
        if (r < 0)
                return r;
        return store_capture_list(cm->store, CAPTURE_STATUS_LAST, last_one, ret);
}

void capture_status_keep_visible(struct capture_status *s, bool privileged, uint32_t uid) {
        size_t out = 0;

        for (size_t i = 0; i < s->n_last; i++) {
                if (capture_event_visible(s->last[i].uid, privileged, uid))
                        s->last[out++] = s->last[i];
                else
                        free((char *) s->last[i].cause);
        }
        s->n_last = out;
}

void capture_status_done(struct capture_status *s) {
        for (size_t i = 0; i < s->n_last; i++)
                free((char *) s->last[i].cause);
        s->n_last = 0;
}
