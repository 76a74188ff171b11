/* A work queue on threads, completions back to sd-event through an eventfd,
 * with cancel, parking and drain at shutdown (workqueue.h). */
#include "workqueue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

struct workqueue_thread {
        workqueue *wq;
        pthread_t id;
        void *data;       /* ops->run's thread_data */
        bool spare;       /* started by the queue: makes its data with ops->thread_init */
        bool ran;         /* ran an item since it last called ops->idle */
        struct workqueue_thread *next; /* in wq->ended once it decided to end */
};

struct workqueue {
        char name[16];
        struct workqueue_ops ops;
        void *userdata;
        unsigned max_running;
        int efd;                        /* eventfd: the loop has something to do */
        sd_event_source *source;        /* workqueue_attach */
        workqueue_wake_fn wake_fn;
        void *wake_userdata;

        pthread_mutex_t lock;           /* guards everything below */
        pthread_cond_t work;            /* an item was queued, a place was freed, or the queue stops */
        pthread_cond_t slot;            /* a place among max_running was given up, or a cancel */
        pthread_cond_t gone;            /* a thread ended */
        workqueue_item *head, *tail;    /* queued */
        unsigned queued_now;            /* of them, those due now (due_ns 0) */
        workqueue_item *done, *done_tail; /* completed, for the loop */
        struct workqueue_stats stats;
        unsigned idle;                  /* threads waiting for an item */
        bool batch;                     /* an item was taken and others wait behind it: they are due too */
        bool stopping, finish;
        struct workqueue_thread *ended; /* threads to join */
};

/* Under the lock: the queue stops, and this thread has nothing more to do. */
static bool stop_now(const workqueue *wq) {
        return wq->stopping && (!wq->finish || !wq->head);
}

/* Under the lock: a queued item that no thread will take (every thread
 * runs or parks an item, yet fewer than max_running run) needs a spare. */
static bool need_spare(const workqueue *wq) {
        return wq->head && !wq->stopping && wq->idle == 0 && wq->stats.resuming == 0 &&
               wq->stats.threads - wq->stats.parked < wq->max_running;
}

/* Under the lock: a place among the max_running was given up; parked
 * items waiting for one go first, then queued ones. */
static void slot_freed(workqueue *wq) {
        pthread_cond_broadcast(&wq->slot);
        pthread_cond_broadcast(&wq->work);
}

struct timespec monotonic_deadline_ms(unsigned ms) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += ms / 1000;
        t.tv_nsec += (long) (ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

static uint64_t monotonic_ns(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * UINT64_C(1000000000) + (uint64_t) t.tv_nsec;
}

/* Under the lock: the queue's head is due (workqueue_submit_within): its
 * time has come, an item due now waits behind it, it waited behind an
 * item taken (the batch goes on until the queue is empty: else each item
 * of a stream, due a few milliseconds after the one before, took a
 * wake-up of its own), or the queue stops. */
static bool head_due(const workqueue *wq) {
        return wq->head->due_ns == 0 || wq->queued_now > 0 || wq->batch || wq->stopping ||
               monotonic_ns() >= wq->head->due_ns;
}

/* Under the lock: an item is queued that a thread may take now. */
static bool item_ready(const workqueue *wq) {
        return wq->head && wq->stats.running < wq->max_running && wq->stats.resuming == 0 && head_due(wq);
}

/* Under the lock: this thread takes the next item, if it may. NULL when
 * the queue stops, or with *ret_idle set when a thread that ran an item
 * waited ops.idle_ms for the next (ops.idle is due). */
static workqueue_item *take_item(workqueue *wq, struct workqueue_thread *t, bool *ret_idle) {
        bool timed = t->ran && wq->ops.idle && wq->ops.idle_ms > 0;
        uint64_t idle_at = timed ? monotonic_ns() + (uint64_t) wq->ops.idle_ms * 1000000U : 0;
        workqueue_item *item;

        *ret_idle = false;
        wq->idle++;
        while (!stop_now(wq) && !item_ready(wq)) {
                uint64_t wake_at = idle_at;
                struct timespec until;

                /* a head not yet due is waited for: nobody signals it */
                if (wq->head && !head_due(wq) && (wake_at == 0 || wq->head->due_ns < wake_at))
                        wake_at = wq->head->due_ns;
                if (wake_at == 0) {
                        pthread_cond_wait(&wq->work, &wq->lock);
                        continue;
                }
                until = (struct timespec) { .tv_sec = (time_t) (wake_at / 1000000000U),
                                            .tv_nsec = (long) (wake_at % 1000000000U) };
                if (pthread_cond_timedwait(&wq->work, &wq->lock, &until) == ETIMEDOUT && timed && !stop_now(wq) &&
                    !item_ready(wq) && monotonic_ns() >= idle_at) {
                        wq->idle--;
                        t->ran = false;
                        *ret_idle = true;
                        return NULL;
                }
        }
        wq->idle--;
        if (stop_now(wq))
                return NULL;
        item = wq->head;
        wq->head = item->next;
        if (!wq->head)
                wq->tail = NULL;
        wq->batch = wq->head != NULL;
        if (item->due_ns == 0)
                wq->queued_now--;
        item->next = NULL;
        item->thread = t;
        wq->stats.queued--;
        wq->stats.running++;
        t->ran = true;
        return item;
}

static void *thread_main(void *userdata) {
        struct workqueue_thread *t = userdata;
        workqueue *wq = t->wq;
        int r = 0;

        (void) pthread_setname_np(pthread_self(), wq->name);
        /* a spare makes its state (a connection) off the loop and the lock */
        if (t->spare && wq->ops.thread_init)
                r = wq->ops.thread_init(wq->userdata, &t->data);

        pthread_mutex_lock(&wq->lock);
        while (r >= 0) {
                bool idle;
                workqueue_item *item = take_item(wq, t, &idle);

                if (idle) {
                        pthread_mutex_unlock(&wq->lock);
                        wq->ops.idle(t->data, wq->userdata);
                        pthread_mutex_lock(&wq->lock);
                        continue;
                }
                if (!item)
                        break;
                pthread_mutex_unlock(&wq->lock);
                wq->ops.run(item, t->data, wq->userdata); /* item may be gone now */
                pthread_mutex_lock(&wq->lock);
                wq->stats.running--;
                slot_freed(wq);
                /* a spare is no longer needed once the threads not parked
                 * outnumber the places */
                if (stop_now(wq) || wq->stats.threads - wq->stats.parked > wq->max_running)
                        break;
        }
        wq->stats.threads--;
        t->next = wq->ended;
        wq->ended = t;
        pthread_cond_broadcast(&wq->gone);
        pthread_mutex_unlock(&wq->lock);
        /* wq outlives this: workqueue_free joins the thread first */
        if (wq->ops.thread_done && r >= 0)
                wq->ops.thread_done(t->data);
        return NULL;
}

/* Starts a thread the caller counted in stats.threads already; on failure
 * it is uncounted here. */
static int thread_start(workqueue *wq, void *data, bool spare) {
        struct workqueue_thread *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                r = log_oom();
        else {
                *t = (struct workqueue_thread) { .wq = wq, .data = data, .spare = spare };
                r = -pthread_create(&t->id, NULL, thread_main, t);
                if (r < 0)
                        log_warning_errno(r, "Failed to start a %s thread: %m", wq->name);
        }
        if (r < 0) {
                free(t);
                pthread_mutex_lock(&wq->lock);
                wq->stats.threads--;
                pthread_cond_broadcast(&wq->gone);
                pthread_mutex_unlock(&wq->lock);
        }
        return r;
}

/* Joins the threads that ended. They ended under the lock; what is left is
 * their thread_done, so this waits a moment at most. */
static void reap(workqueue *wq) {
        struct workqueue_thread *t;

        pthread_mutex_lock(&wq->lock);
        t = TAKE_PTR(wq->ended);
        pthread_mutex_unlock(&wq->lock);
        while (t) {
                struct workqueue_thread *next = t->next;
                pthread_join(t->id, NULL);
                free(t);
                t = next;
        }
}

int workqueue_new(const char *name, const struct workqueue_ops *ops, void *userdata, unsigned max_running,
                  workqueue **ret) {
        _cleanup_free_ workqueue *wq = calloc(1, sizeof(*wq));
        pthread_condattr_t monotonic;

        if (!wq)
                return log_oom();
        snprintf(wq->name, sizeof(wq->name), "%s", name);
        wq->ops = *ops;
        wq->userdata = userdata;
        wq->max_running = MAX(max_running, 1u);
        wq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wq->efd < 0)
                return log_error_errno(negative_errno(), "Failed to create an eventfd for %s: %m", name);
        pthread_mutex_init(&wq->lock, NULL);
        /* timed waits (ops.idle_ms) count on the monotonic clock */
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_cond_init(&wq->work, &monotonic);
        pthread_condattr_destroy(&monotonic);
        pthread_cond_init(&wq->slot, NULL);
        pthread_cond_init(&wq->gone, NULL);
        *ret = TAKE_PTR(wq);
        return 0;
}

int workqueue_start_thread(workqueue *wq, void *thread_data) {
        pthread_mutex_lock(&wq->lock);
        wq->stats.threads++;
        pthread_mutex_unlock(&wq->lock);
        return thread_start(wq, thread_data, false);
}

static void submit(workqueue *wq, workqueue_item *item, uint64_t due_ns) {
        bool spare, was_empty;

        reap(wq);
        pthread_mutex_lock(&wq->lock);
        item->next = NULL;
        item->thread = NULL;
        item->due_ns = due_ns;
        was_empty = !wq->head;
        if (wq->tail)
                wq->tail->next = item;
        else
                wq->head = item;
        wq->tail = item;
        wq->stats.queued++;
        if (due_ns == 0)
                wq->queued_now++;
        /* an item for later wakes a waiting thread only to set its
         * deadline: once per batch, when it is the first queued */
        if (due_ns == 0 || was_empty)
                pthread_cond_signal(&wq->work);
        spare = need_spare(wq);
        /* counted before it starts, so nothing starts a second one for it */
        if (spare)
                wq->stats.threads++;
        pthread_mutex_unlock(&wq->lock);
        /* every thread runs a parked item: this one gets a thread of its own */
        if (spare)
                (void) thread_start(wq, NULL, true);
}

void workqueue_submit(workqueue *wq, workqueue_item *item) {
        submit(wq, item, 0);
}

void workqueue_submit_within(workqueue *wq, workqueue_item *item, unsigned ms) {
        submit(wq, item, monotonic_ns() + (uint64_t) ms * 1000000U);
}

void workqueue_cancel(workqueue *wq, workqueue_item *item) {
        pthread_mutex_lock(&wq->lock);
        __atomic_store_n(&item->cancelled, true, __ATOMIC_RELAXED);
        if (item->thread && wq->ops.interrupt)
                wq->ops.interrupt(item, item->thread->data);
        pthread_cond_broadcast(&wq->slot);
        pthread_mutex_unlock(&wq->lock);
}

bool workqueue_item_cancelled(const workqueue_item *item) {
        return __atomic_load_n(&item->cancelled, __ATOMIC_RELAXED);
}

void workqueue_wake(workqueue *wq) {
        uint64_t one = 1;
        /* EAGAIN only when the counter is full: the loop is woken anyway */
        (void) !write(wq->efd, &one, sizeof(one));
}

void workqueue_complete(workqueue *wq, workqueue_item *item) {
        pthread_mutex_lock(&wq->lock);
        item->thread = NULL;
        item->next = NULL;
        if (wq->done_tail)
                wq->done_tail->next = item;
        else
                wq->done = item;
        wq->done_tail = item;
        pthread_mutex_unlock(&wq->lock);
        workqueue_wake(wq);
}

int workqueue_fd(const workqueue *wq) {
        return wq->efd;
}

workqueue_item *workqueue_pop_done(workqueue *wq) {
        workqueue_item *item;
        uint64_t n;

        /* reset; completions are counted by the list. EAGAIN: already reset */
        if (read(wq->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                log_debug_errno(errno, "Failed to reset the eventfd of %s, ignoring: %m", wq->name);
        pthread_mutex_lock(&wq->lock);
        item = wq->done;
        if (item) {
                wq->done = item->next;
                if (!wq->done)
                        wq->done_tail = NULL;
                item->next = NULL;
        }
        pthread_mutex_unlock(&wq->lock);
        return item;
}

static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        workqueue *wq = userdata;
        uint64_t n;

        (void) !read(wq->efd, &n, sizeof(n));
        wq->wake_fn(wq, wq->wake_userdata);
        return 0;
}

int workqueue_attach(workqueue *wq, sd_event *event, workqueue_wake_fn fn, void *userdata) {
        int r;

        wq->wake_fn = fn;
        wq->wake_userdata = userdata;
        r = sd_event_add_io(event, &wq->source, wq->efd, EPOLLIN, on_wake, wq);
        if (r < 0)
                return log_error_errno(r, "Failed to watch %s: %m", wq->name);
        return 0;
}

void workqueue_park(workqueue *wq, workqueue_item *item) {
        bool spare;

        pthread_mutex_lock(&wq->lock);
        wq->stats.running--;
        wq->stats.parked++;
        wq->stats.parks++;
        slot_freed(wq);
        spare = need_spare(wq);
        if (spare)
                wq->stats.threads++;
        pthread_mutex_unlock(&wq->lock);
        if (spare)
                (void) thread_start(wq, NULL, true);
}

void workqueue_unpark(workqueue *wq, workqueue_item *item) {
        pthread_mutex_lock(&wq->lock);
        /* back among the running before any queued item; a cancelled item
         * ends at once, so it takes its place without waiting */
        wq->stats.resuming++;
        while (wq->stats.running >= wq->max_running && !workqueue_item_cancelled(item) &&
               !(wq->stopping && !wq->finish))
                pthread_cond_wait(&wq->slot, &wq->lock);
        wq->stats.resuming--;
        wq->stats.parked--;
        wq->stats.running++;
        if (wq->stats.resuming == 0)
                pthread_cond_broadcast(&wq->work);
        pthread_mutex_unlock(&wq->lock);
}

void workqueue_stop(workqueue *wq, bool finish) {
        pthread_mutex_lock(&wq->lock);
        if (!wq->stopping) {
                wq->stopping = true;
                wq->finish = finish;
        }
        pthread_cond_broadcast(&wq->work);
        pthread_cond_broadcast(&wq->slot);
        while (wq->stats.threads > 0)
                pthread_cond_wait(&wq->gone, &wq->lock);
        pthread_mutex_unlock(&wq->lock);
        reap(wq);
}

bool workqueue_stopping(workqueue *wq) {
        bool stopping;

        pthread_mutex_lock(&wq->lock);
        stopping = wq->stopping;
        pthread_mutex_unlock(&wq->lock);
        return stopping;
}

void workqueue_get_stats(workqueue *wq, struct workqueue_stats *ret) {
        pthread_mutex_lock(&wq->lock);
        *ret = wq->stats;
        pthread_mutex_unlock(&wq->lock);
}

static void release_list(workqueue *wq, workqueue_item *item) {
        while (item) {
                workqueue_item *next = item->next;
                if (wq->ops.release)
                        wq->ops.release(item);
                item = next;
        }
}

workqueue *workqueue_free(workqueue *wq) {
        if (!wq)
                return NULL;
        workqueue_stop(wq, false);
        release_list(wq, TAKE_PTR(wq->head));
        release_list(wq, TAKE_PTR(wq->done));
        sd_event_source_disable_unref(wq->source);
        safe_close(wq->efd);
        pthread_cond_destroy(&wq->gone);
        pthread_cond_destroy(&wq->slot);
        pthread_cond_destroy(&wq->work);
        pthread_mutex_destroy(&wq->lock);
        free(wq);
        return NULL;
}
