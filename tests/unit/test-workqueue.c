/* The work queue (daemon/workqueue.c): items submitted are run in order by
 * one thread and come back to an sd-event loop through the eventfd; a
 * cancelled item is interrupted while it runs and seen cancelled when it
 * had not started; stopping runs every queued item or none (those are
 * released); a parked item frees its place for the next one on a spare
 * thread and takes it back before queued items. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "tests.h"
#include "workqueue.h"

struct job {
        workqueue_item item;
        unsigned n;
        uint64_t square;      /* what run computed */
        bool saw_cancelled;   /* run found it cancelled at its start */
        bool block;           /* run waits until released (gate) */
        bool park;            /* ... parked meanwhile */
        bool *gate;           /* under lock: run goes on once true */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static workqueue *queue;
static unsigned ran, released, interrupts, thread_inits, thread_dones, started;
static unsigned order[64], n_order; /* completion order, popped on the loop */

static void wait_gate(struct job *j) {
        pthread_mutex_lock(&lock);
        while (!*j->gate && !workqueue_item_cancelled(&j->item))
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
}

static void job_run(workqueue_item *item, void *thread_data, void *userdata) {
        struct job *j = container_of(item, struct job, item);

        j->saw_cancelled = workqueue_item_cancelled(item);
        pthread_mutex_lock(&lock);
        started++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        if (j->block && j->park) {
                workqueue_park(queue, item);
                wait_gate(j);
                workqueue_unpark(queue, item);
        } else if (j->block)
                wait_gate(j);
        j->square = (uint64_t) j->n * j->n;
        pthread_mutex_lock(&lock);
        ran++;
        pthread_mutex_unlock(&lock);
        workqueue_complete(queue, item);
}

static int job_thread_init(void *userdata, void **ret) {
        __atomic_add_fetch(&thread_inits, 1, __ATOMIC_RELAXED);
        *ret = (void *) 2;
        return 0;
}

static void job_thread_done(void *data) {
        __atomic_add_fetch(&thread_dones, 1, __ATOMIC_RELAXED);
}

/* called with the queue's lock: must not block, so it only wakes the gate */
static void job_interrupt(workqueue_item *item, void *thread_data) {
        interrupts++;
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

static void job_release(workqueue_item *item) {
        released++;
}

static const struct workqueue_ops ops = {
        .run = job_run,
        .thread_init = job_thread_init,
        .thread_done = job_thread_done,
        .interrupt = job_interrupt,
        .release = job_release,
};

static void reset(unsigned max_running) {
        ran = released = interrupts = thread_inits = thread_dones = started = n_order = 0;
        CHECK_INT_EQ(workqueue_new("test-wq", &ops, NULL, max_running, &queue), 0);
        CHECK_INT_EQ(workqueue_start_thread(queue, (void *) 1), 0);
}

static void wait_started(unsigned n) {
        pthread_mutex_lock(&lock);
        while (started < n)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
}

static void open_gate(bool *gate) {
        pthread_mutex_lock(&lock);
        *gate = true;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

/* Pops completions until n_order reaches n (the eventfd is polled, as
 * sd-event would). */
static void collect(unsigned n) {
        for (unsigned tries = 0; n_order < n && tries < 10000; tries++) {
                workqueue_item *item = workqueue_pop_done(queue);
                if (item)
                        order[n_order++] = container_of(item, struct job, item)->n;
                else
                        usleep(1000);
        }
}

static void wait_stats(unsigned threads, unsigned parked, unsigned resuming) {
        struct workqueue_stats st;

        for (unsigned tries = 0; tries < 10000; tries++) {
                workqueue_get_stats(queue, &st);
                if (st.threads == threads && st.parked == parked && st.resuming == resuming)
                        return;
                usleep(1000);
        }
        fprintf(stderr, "stats: threads %u parked %u resuming %u, expected %u %u %u\n", st.threads, st.parked,
                st.resuming, threads, parked, resuming);
        tests_failed++;
}

static void on_wake(workqueue *wq, void *userdata) {
        sd_event *e = userdata;
        workqueue_item *item;

        while ((item = workqueue_pop_done(wq)))
                order[n_order++] = container_of(item, struct job, item)->n;
        if (n_order == 40)
                sd_event_exit(e, 0);
}

/* 40 items on one thread, back through sd-event in submission order with
 * their results. */
static void test_submit_and_complete_through_sd_event(void) {
        static struct job jobs[40];
        sd_event *e = NULL;

        reset(1);
        CHECK(sd_event_new(&e) >= 0);
        CHECK_INT_EQ(workqueue_attach(queue, e, on_wake, e), 0);
        for (unsigned i = 0; i < ELEMENTSOF(jobs); i++) {
                jobs[i] = (struct job) { .n = i + 1 };
                workqueue_submit(queue, &jobs[i].item);
        }
        CHECK_INT_EQ(sd_event_loop(e), 0);
        CHECK_INT_EQ(n_order, 40);
        for (unsigned i = 0; i < ELEMENTSOF(jobs); i++) {
                CHECK_INT_EQ(order[i], i + 1);
                CHECK_INT_EQ(jobs[i].square, (uint64_t) (i + 1) * (i + 1));
                CHECK(!jobs[i].saw_cancelled);
        }
        queue = workqueue_free(queue);
        CHECK_INT_EQ(thread_dones, 1); /* the resident thread ended and was joined */
        CHECK_INT_EQ(released, 0);
        sd_event_unref(e);
}

/* A running item is interrupted once and ends; a queued one runs
 * knowing it is cancelled. */
static void test_cancel(void) {
        bool gate = false;
        struct job a = { .n = 1, .block = true, .gate = &gate }, b = { .n = 2 };

        reset(1);
        workqueue_submit(queue, &a.item);
        workqueue_submit(queue, &b.item);
        wait_started(1);
        workqueue_cancel(queue, &b.item); /* queued: no interrupt */
        CHECK_INT_EQ(interrupts, 0);
        workqueue_cancel(queue, &a.item); /* running: interrupted, its gate wait ends */
        CHECK_INT_EQ(interrupts, 1);
        collect(2);
        CHECK_INT_EQ(n_order, 2);
        CHECK_INT_EQ(order[0], 1);
        CHECK_INT_EQ(order[1], 2);
        CHECK(!a.saw_cancelled);
        CHECK(b.saw_cancelled);
        CHECK(!gate); /* a ended on the cancel, not on its gate */
        queue = workqueue_free(queue);
}

/* Opens the gate once the queue is stopping, so the first item is still
 * running when workqueue_stop is called. */
static void *open_when_stopping(void *gate) {
        while (!workqueue_stopping(queue))
                usleep(1000);
        open_gate(gate);
        return NULL;
}

/* Stopping with finish runs all 20 queued items; without, the running one
 * ends and the 19 others are released, never run. */
static void test_stop_finishes_or_releases(void) {
        static struct job jobs[20];
        static bool gate;
        pthread_t opener;

        for (int finish = 1; finish >= 0; finish--) {
                gate = false;
                reset(1);
                for (unsigned i = 0; i < ELEMENTSOF(jobs); i++) {
                        jobs[i] = (struct job) { .n = i, .block = i == 0, .gate = &gate };
                        workqueue_submit(queue, &jobs[i].item);
                }
                wait_started(1);
                CHECK_INT_EQ(pthread_create(&opener, NULL, open_when_stopping, &gate), 0);
                workqueue_stop(queue, finish);
                pthread_join(opener, NULL);
                CHECK(workqueue_stopping(queue));
                CHECK_INT_EQ(ran, finish ? 20 : 1);
                queue = workqueue_free(queue);
                /* the completed ones are released too: nobody popped them */
                CHECK_INT_EQ(released, 20);
        }
}

/* One place: A parks, B gets a spare thread and runs (C waits: the place
 * is B's); A wants its place back while B runs and gets it before C. */
static void test_park_spare_and_resume_first(void) {
        bool gate_a = false, gate_b = false;
        struct job a = { .n = 1, .block = true, .park = true, .gate = &gate_a };
        struct job b = { .n = 2, .block = true, .gate = &gate_b };
        struct job c = { .n = 3 };
        struct workqueue_stats st;

        reset(1);
        workqueue_submit(queue, &a.item);
        wait_stats(1, 1, 0);           /* A parked on the resident thread */
        workqueue_submit(queue, &b.item);
        wait_started(2);               /* B runs on a spare */
        CHECK_INT_EQ(thread_inits, 1);
        workqueue_submit(queue, &c.item); /* no spare for C: one runs, one parked */
        workqueue_get_stats(queue, &st);
        CHECK_INT_EQ(st.threads, 2);
        CHECK_INT_EQ(st.running, 1);
        CHECK_INT_EQ(st.queued, 1);
        CHECK_INT_EQ(st.parks, 1);
        open_gate(&gate_a);
        wait_stats(2, 1, 1);           /* A waits for B's place */
        open_gate(&gate_b);
        collect(3);
        CHECK_INT_EQ(n_order, 3);
        CHECK_INT_EQ(order[0], 2);
        CHECK_INT_EQ(order[1], 1);
        CHECK_INT_EQ(order[2], 3);
        wait_stats(1, 0, 0);           /* the spare is no longer needed */
        CHECK_INT_EQ(thread_inits, 1);
        queue = workqueue_free(queue);
        CHECK_INT_EQ(thread_dones, 2);
}

static unsigned idles;
static void *idle_data;

static void job_idle(void *thread_data, void *userdata) {
        pthread_mutex_lock(&lock);
        idles++;
        idle_data = thread_data;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

/* A counter the queue's threads move, read under the lock. */
static unsigned counted(const unsigned *counter) {
        unsigned n;

        pthread_mutex_lock(&lock);
        n = *counter;
        pthread_mutex_unlock(&lock);
        return n;
}

static unsigned idles_now(void) {
        return counted(&idles);
}

/* Waits up to 5 s for idles to reach n. */
static void wait_idles(unsigned n) {
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        pthread_mutex_lock(&lock);
        while (idles < n)
                if (pthread_cond_timedwait(&changed, &lock, &until) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&lock);
}

/* A thread that ran an item calls ops->idle with its thread_data once it
 * waited idle_ms for the next, once per wait: never before its first
 * item, not again until it ran another; items still run after it. */
static void test_idle_after_work(void) {
        struct workqueue_ops idle_ops = ops;
        struct job a = { .n = 1 }, b = { .n = 2 };

        idle_ops.idle = job_idle;
        idle_ops.idle_ms = 50;
        ran = released = n_order = idles = 0;
        idle_data = NULL;
        CHECK_INT_EQ(workqueue_new("test-wq", &idle_ops, NULL, 1, &queue), 0);
        CHECK_INT_EQ(workqueue_start_thread(queue, (void *) 7), 0);
        usleep(200 * 1000);
        CHECK_INT_EQ(idles_now(), 0); /* nothing ran yet: nothing to give back */
        workqueue_submit(queue, &a.item);
        collect(1);
        wait_idles(1);
        CHECK_INT_EQ(idles_now(), 1);
        CHECK(idle_data == (void *) 7);
        usleep(200 * 1000);
        CHECK_INT_EQ(idles_now(), 1); /* once per wait */
        workqueue_submit(queue, &b.item);
        collect(2);
        CHECK_INT_EQ(n_order, 2);
        CHECK_INT_EQ(b.square, 4);
        wait_idles(2);
        CHECK_INT_EQ(idles_now(), 2);
        queue = workqueue_free(queue);
}

static uint64_t now_ms(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000 + (uint64_t) t.tv_nsec / 1000000;
}

/* Items submitted within a time wait for it, in order, however many come
 * meanwhile; one due now runs them all at once; so does a stop, and an
 * idle wait is not cut short by them. */
static void test_submit_within(void) {
        struct job later[5], now = { .n = 99 }, last = { .n = 7 };
        uint64_t t0;

        reset(1);
        t0 = now_ms();
        for (unsigned i = 0; i < ELEMENTSOF(later); i++) {
                later[i] = (struct job) { .n = i };
                workqueue_submit_within(queue, &later[i].item, 300);
        }
        usleep(100 * 1000);
        CHECK_INT_EQ(counted(&ran), 0);
        collect(ELEMENTSOF(later));
        CHECK_INT_EQ(n_order, ELEMENTSOF(later));
        CHECK(now_ms() - t0 >= 300);
        for (unsigned i = 0; i < ELEMENTSOF(later); i++)
                CHECK_INT_EQ(order[i], i);

        /* an item due now takes the ones before it with it */
        n_order = 0;
        t0 = now_ms();
        for (unsigned i = 0; i < ELEMENTSOF(later); i++)
                workqueue_submit_within(queue, &later[i].item, 60 * 1000);
        usleep(50 * 1000);
        CHECK_INT_EQ(counted(&ran), ELEMENTSOF(later)); /* only the first five */
        workqueue_submit(queue, &now.item);
        collect(ELEMENTSOF(later) + 1);
        CHECK_INT_EQ(n_order, ELEMENTSOF(later) + 1);
        CHECK(now_ms() - t0 < 30 * 1000);
        CHECK_INT_EQ(order[ELEMENTSOF(later)], 99);

        /* a stream: each item queued 100 ms after the one before, to be
         * taken within 300 ms, goes with the first one's batch, not at
         * its own time (one wake-up, not one per item) */
        n_order = 0;
        t0 = now_ms();
        for (unsigned i = 0; i < 3; i++) {
                if (i > 0)
                        usleep(100 * 1000);
                workqueue_submit_within(queue, &later[i].item, 300);
        }
        collect(3);
        CHECK_INT_EQ(n_order, 3);
        /* the first was due at 300 ms, the last at 500 */
        CHECK(now_ms() - t0 >= 300);
        CHECK(now_ms() - t0 < 450);

        /* a stop that finishes runs one still waiting */
        workqueue_submit_within(queue, &last.item, 60 * 1000);
        workqueue_stop(queue, true);
        CHECK_INT_EQ(counted(&ran), 2 * ELEMENTSOF(later) + 2 + 3);
        CHECK_INT_EQ(last.square, 49);
        queue = workqueue_free(queue);
}

int main(void) {
        test_submit_and_complete_through_sd_event();
        test_submit_within();
        test_cancel();
        test_stop_finishes_or_releases();
        test_park_spare_and_resume_first();
        test_idle_after_work();
        TESTS_DONE();
}
