/* A queue of jobs worked on threads off the event loop, with completion
 * back to the loop through an eventfd: the writer (one thread, every job in
 * order) and the query workers (a few at once, jobs cancelled when their
 * client leaves, and "parked" jobs that give up their place to others while
 * they wait for something slow, such as a client that does not read).
 *
 * Jobs embed a struct workqueue_item. At most max_running items run at
 * once. A running item may park (workqueue_park): it stays on its thread
 * but no longer counts among the max_running, and if no idle thread is
 * left for the next queued item the queue starts a spare thread, which
 * makes its own per-thread state (ops->thread_init). A parked item that
 * wants to go on waits for a place (workqueue_unpark), ahead of queued
 * items. Spare threads end once they are no longer needed; every thread
 * is joined by workqueue_free, or earlier by workqueue_submit once it ended.
 *
 * Locking: the queue has one lock of its own; no callback is called with
 * it held except ops->interrupt. Loop side: submit, cancel, pop_done,
 * attach, stop, free. Worker side: complete, park, unpark. Any thread:
 * wake, stopping, get_stats, item_cancelled. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <systemd/sd-event.h>

typedef struct workqueue workqueue;
typedef struct workqueue_item workqueue_item;
struct workqueue_thread;

/* Embedded in the caller's job; zero it before workqueue_submit. The
 * fields are the queue's. */
struct workqueue_item {
        workqueue_item *next;            /* in the queue, or in the done list */
        struct workqueue_thread *thread; /* running on it (under the lock); NULL otherwise */
        bool cancelled;                  /* atomic: workqueue_cancel */
        uint64_t due_ns;                 /* CLOCK_MONOTONIC; 0: now (workqueue_submit_within) */
};

struct workqueue_ops {
        /* On a worker thread: does the item's work. It owns the item from
         * here: it either hands it back to the loop with workqueue_complete
         * (at any point; then it must not touch it any more) or frees it.
         * thread_data: the thread's own state (workqueue_start_thread, or
         * thread_init for a spare). */
        void (*run)(workqueue_item *item, void *thread_data, void *userdata);
        /* On a spare thread, before it takes an item: makes its
         * thread_data (opens a connection). A negative errno ends the
         * thread (the caller's to log). NULL: thread_data is NULL. */
        int (*thread_init)(void *userdata, void **ret_thread_data);
        /* On every thread, as it ends: frees its thread_data. May be NULL. */
        void (*thread_done)(void *thread_data);
        /* From workqueue_cancel, on the loop, with the queue's lock held,
         * for an item that is running: makes it stop soon (interrupts its
         * SQL). Must not block. May be NULL. */
        void (*interrupt)(workqueue_item *item, void *thread_data);
        /* From workqueue_free, for items still queued (never run) or
         * completed but not popped. NULL: the caller owns them elsewhere. */
        void (*release)(workqueue_item *item);
        /* On a thread that ran an item and then waited idle_ms without
         * taking another: gives back what its thread_data keeps for the
         * next items (caches), once per such wait, without the queue's
         * lock. An item queued meanwhile waits until it returns. NULL (or
         * idle_ms 0): threads keep what they hold. */
        void (*idle)(void *thread_data, void *userdata);
        unsigned idle_ms;
};

/* What the threads do now. */
struct workqueue_stats {
        unsigned threads; /* threads alive: started ones plus spares for parked items */
        unsigned running; /* items running and not parked (at most max_running) */
        unsigned parked;  /* items parked */
        unsigned queued;  /* items waiting for a thread */
        unsigned resuming; /* parked items waiting for a place back (workqueue_unpark) */
        uint64_t parks;   /* times an item was parked since the queue started */
};

/* A queue with no thread yet (workqueue_start_thread starts them). name:
 * the threads' name (at most 15 characters). Returns 0 or a negative
 * errno, logged. */
int workqueue_new(const char *name, const struct workqueue_ops *ops, void *userdata, unsigned max_running,
                  workqueue **ret);
/* Stops the queue if workqueue_stop was not called (without finishing
 * the queued items), waits for and joins every thread, releases what is
 * left (ops->release). NULL is fine. */
workqueue *workqueue_free(workqueue *wq);

/* Starts a thread with its thread_data (made by the caller, so a failure
 * to make it is the caller's to report at start). On failure thread_data
 * is the caller's again. Returns 0 or a negative errno, logged. */
int workqueue_start_thread(workqueue *wq, void *thread_data);

/* Queues item (zeroed) after the others. Starts a spare thread when every
 * thread is busy with a parked item. Cannot fail: without a spare the item
 * waits for a thread to be free. */
void workqueue_submit(workqueue *wq, workqueue_item *item);
/* Queues item (zeroed) after the others, to be taken within ms: a thread
 * waiting for work is not woken for it before then, unless an item
 * submitted with workqueue_submit is queued behind it (order is kept),
 * an item before it is taken (it goes with that one's batch: every item
 * queued when a thread takes one is taken before the thread waits again)
 * or the queue stops. Items that are not urgent, coming at hundreds a
 * second, are then taken a batch per wake-up rather than one: the profd
 * writer's process records on a host that starts 70 processes a second. */
void workqueue_submit_within(workqueue *wq, workqueue_item *item, unsigned ms);

/* Marks item cancelled (workqueue_item_cancelled) and, if it is running,
 * interrupts it (ops->interrupt); a parked item waiting for a place stops
 * waiting. A queued item still goes to ops->run, which sees it cancelled.
 * Harmless for an item completed but not yet popped. */
void workqueue_cancel(workqueue *wq, workqueue_item *item);
bool workqueue_item_cancelled(const workqueue_item *item);

/* Worker side: hands the item back to the loop (workqueue_pop_done) and
 * wakes the loop. */
void workqueue_complete(workqueue *wq, workqueue_item *item);
/* Any thread: wakes the loop without a completion (new partial output). */
void workqueue_wake(workqueue *wq);

/* Readable when the loop was woken (completions, workqueue_wake). */
int workqueue_fd(const workqueue *wq);
/* Resets the eventfd and returns the oldest completed item, or NULL. */
workqueue_item *workqueue_pop_done(workqueue *wq);

typedef void (*workqueue_wake_fn)(workqueue *wq, void *userdata);
/* Watches the eventfd on event: fn runs on the loop whenever the loop was
 * woken (it pops the completed items). Returns 0 or a negative errno,
 * logged. */
int workqueue_attach(workqueue *wq, sd_event *event, workqueue_wake_fn fn, void *userdata);

/* Worker side, for the item this thread runs: gives up its place among
 * the max_running (a spare thread starts if a queued item needs it). */
void workqueue_park(workqueue *wq, workqueue_item *item);
/* Worker side, after workqueue_park: waits for a place, ahead of queued
 * items; returns at once for a cancelled item or a queue stopping without
 * finishing. */
void workqueue_unpark(workqueue *wq, workqueue_item *item);

/* Stops taking new work and waits for every thread to end. finish: the
 * threads first run every queued item (the writer: every drain is
 * stored); else they end after the item they run (cancel them first). */
void workqueue_stop(workqueue *wq, bool finish);
/* True once workqueue_stop was called: long work yields. */
bool workqueue_stopping(workqueue *wq);

/* The time ms milliseconds from now on the monotonic clock: a deadline
 * for pthread_cond_timedwait on a condition variable set to that clock,
 * as the queue's own (ops.idle_ms) and its users'. */
struct timespec monotonic_deadline_ms(unsigned ms);

/* A consistent snapshot of the counts; cannot fail. */
void workqueue_get_stats(workqueue *wq, struct workqueue_stats *ret);
