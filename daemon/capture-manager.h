/* The capture manager (issue 44): watches the conditions of capture_on
 * and of `profctl capture start` once a second on the event loop, and
 * when one rises (or by hand) records a capture whose row in the store
 * pins the drains and timeline from capture_before before the trigger to
 * capture_duration after it (retention.c honours it). At most one capture
 * per capture_cooldown, within capture_max_pinned bytes: what the gate of
 * capture-util.h refuses is counted. The decisions are capture-util's; this
 * reads /proc, /sys/fs/cgroup and the store, and acts. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "capture-util.h"
#include "conf.h"
#include "macro.h"
#include "request.h"
#include "store.h"

typedef struct capture_manager capture_manager;

/* profd's wall clock, the one drains are stamped with (a test's faster one). */
typedef uint64_t (*capture_clock_fn)(void *userdata);

/* Starts watching conf->capture_on on event, recording into s (the
 * manager's connection, kept by the caller). collecting: profd stores
 * drains (not serve-only), so a capture has something to pin;
 * oom_watched: the collector announces OOM victims (capture_manager_oom),
 * without which an "oom" condition is refused. Returns 0 or a negative
 * errno, logged. */
int capture_manager_new(sd_event *event, store *s, const struct conf *conf, bool collecting, bool oom_watched,
                        capture_clock_fn now, void *now_userdata, capture_manager **ret);
capture_manager *capture_manager_free(capture_manager *cm);
DEFINE_TRIVIAL_CLEANUP_FUNC(capture_manager *, capture_manager_free)

/* Called when a capture begins (with capture_frequency above frequency):
 * the sampler is to run at plan->hz, drained every plan->interval_ns,
 * for duration_ns from now (a later capture's call extends it). */
typedef void (*capture_raise_fn)(const struct capture_raise *plan, uint64_t duration_ns, void *userdata);
void capture_manager_set_raise(capture_manager *cm, capture_raise_fn fn, void *userdata);

/* Answers a capture request of a client (privileged: root or the admin
 * group; uid: its user). Returns 0 and the answer object in *ret_answer,
 * or a negative errno: -EINVAL, -EPERM, -ENOENT, -EBUSY (the gate refused)
 * and -EOPNOTSUPP with *ret_error (malloc'd) saying why, for the client;
 * others (-ENOMEM, the store's) are internal errors. */
int capture_manager_request(capture_manager *cm, const struct capture_request *req, bool privileged, uint32_t uid,
                            json_t **ret_answer, char **ret_error);

/* The kernel chose an OOM victim (process pid, comm): the "oom" triggers
 * fire, one capture for all of them. */
void capture_manager_oom(capture_manager *cm, uint32_t pid, const char *comm);

/* How many captures status lists. */
#define CAPTURE_STATUS_LAST 5

struct capture_status {
        bool running;                  /* a capture manager exists */
        struct store_capture_totals totals;
        uint64_t budget_bytes, cooldown_ns, before_ns, duration_ns;
        uint64_t gate_pinned_bytes;    /* what the gate counts: estimates of active captures, measures of the rest */
        uint64_t refused[_CAPTURE_VERDICT_MAX]; /* since start: cooling_down, over_budget */
        uint64_t failed;               /* since start: could not be recorded (the store failed) */
        uint64_t triggers;             /* conditions watched now */
        uint64_t read_errors;          /* since start: a watched file could not be read or parsed */
        struct store_capture last[CAPTURE_STATUS_LAST]; /* newest first; causes owned */
        size_t n_last;
};

/* Fills *ret (the store's part read now). Returns 0 or a negative errno;
 * capture_status_done frees it either way. */
int capture_manager_get_status(capture_manager *cm, struct capture_status *ret);
void capture_status_done(struct capture_status *s);
/* Keeps in s->last only the captures a caller may see
 * (capture_event_visible, as `capture list` does): a cause names another
 * user's process. The counts stay whole: they name nobody. */
void capture_status_keep_visible(struct capture_status *s, bool privileged, uint32_t uid);

/* A capture as an answer's and status's object. NULL when out of memory. */
json_t *capture_json(const struct store_capture *c);
