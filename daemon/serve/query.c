/* Query and series answers on worker threads, streamed to clients with
 * backpressure.
 *
 * A job is one request of one client. A worker runs answer_request() on its
 * own read-only connection; every answer line goes into the job's buffer.
 * When the buffer holds QUERY_BUFFER_BYTES the worker waits until the event
 * loop has handed it to the client, which the loop does only while the
 * client's own unsent output is under QUERY_BUFFER_BYTES too. So for one
 * answer profd holds at most about three buffers (the job's, the client's,
 * one line), and a client that stops reading stops its query, not the
 * daemon.
 *
 * A client that stops reading must not hold a worker from the others
 * either: a worker that found no room for QUERY_PARK_MS parks its job
 * (it keeps its connection and the job's place in its SQL, so the answer
 * waits in SQLite) and gives up its place among the QUERY_WORKERS that
 * make answers at once; if no idle worker is left for the next job, a
 * spare thread with its own connection is started for it. A parked job
 * whose client read again waits for a place before any new job. So at most
 * QUERY_WORKERS answers are made at once, every client has at most one job
 * (its next requests wait for its answer), and threads beyond
 * QUERY_WORKERS exist only for parked jobs (at most one per connected
 * client) and end with them. The threads, the places, parking and
 * cancelling are the work queue's (daemon/workqueue.c); this file makes
 * the answers and moves them to clients. The loop thread alone touches
 * clients; workers touch only their connection and, under the pool's
 * lock, their job's buffer. */
#include "query.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heap.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "store.h"
#include "workqueue.h"

/* The loop is woken when a job's buffer reaches this much (or the job ends):
 * a wake-up per line would cost more than the line. */
#define QUERY_NOTIFY_BYTES (64u * 1024)
/* After an answer this large the worker trims the heap (malloc_trim): a few
 * milliseconds, worth it only after a large working set. */
#define QUERY_TRIM_BYTES (4u * 1024 * 1024)
/* A worker no job used for this long gives back what it keeps between
 * queries: the locations it loaded (up to about 10 MiB each; measured on
 * a build host's store, one `profctl query --since 1h` left 14 MiB on its
 * worker, so two queries doubled profd's resident memory) and SQLite's
 * pages. Queries a few seconds apart, as an incident's or `profctl top`'s,
 * keep them. */
#define QUERY_IDLE_MS (30 * 1000)
/* How long a worker waits for room before it parks its job: a client that
 * reads takes its next MiB within this even when a hundred clients share
 * two CPUs; one that has not, is not reading, and others' queries should
 * not wait for it. Not shorter: every parked job is a thread whose read
 * snapshot keeps the WAL from being checkpointed, and a spare starts with
 * an empty location cache (with 100 ms, test_load's hundred clients left
 * profd in a WAL checkpoint for over 30 s at exit). */
#define QUERY_PARK_MS 1000

typedef struct query_job query_job;
typedef struct query_worker query_worker;

struct query_job {
        workqueue_item item;    /* in the pool's queue; cancelled: workqueue_cancel */
        query_pool *pool;
        query_job *prev, *next; /* pool->jobs: loop thread only */
        struct request req;     /* owned copy */
        struct answer_caller caller;
        uint64_t now_ns;
        uint64_t default_step_ns; /* series without a step: the drain interval */
        unsigned base_hz;         /* cpu values' rate (answer_context) */
        bool timeline_off;        /* the setting timeline is off (answer_context) */
        server_client *client;  /* loop thread only; NULL once the client left */
        bool done;              /* loop thread only: the worker completed it */
        query_worker *worker;   /* worker thread only: the worker making it */

        /* under pool->lock */
        char *buf;              /* answer lines not yet handed to the client */
        size_t len, cap;
        uint64_t made;          /* bytes of answer made so far */
        int result;
};

/* A worker thread's own state: made before a resident thread starts, or
 * by a spare on its thread (query_thread_init). */
struct query_worker {
        store *store;                 /* its read-only connection */
        struct stackline_buf scratch; /* the line being written */
};

struct query_pool {
        workqueue *queue;        /* threads, places, parking, cancel; wakes the loop */
        char *store_path;        /* for spare workers' connections */

        pthread_mutex_t lock;    /* the jobs' buffers */
        pthread_cond_t room;     /* a buffer was taken, or a job cancelled */

        query_job *jobs;         /* loop thread: every job not yet finished */
};

static char *strdup_or_null(const char *s, bool *failed) {
        char *c;

        if (!s)
                return NULL;
        c = strdup(s);
        if (!c)
                *failed = true;
        return c;
}

/* A request outlives the server's parse buffer: every string of struct
 * query_request is copied (request_done frees them). */
static int request_copy(const struct request *from, struct request *to) {
        const struct query_request *q = &from->query;
        bool failed = false;

        *to = *from;
        to->query.comm = strdup_or_null(q->comm, &failed);
        to->query.exe = strdup_or_null(q->exe, &failed);
        to->query.cgroup = strdup_or_null(q->cgroup, &failed);
        to->query.unit = strdup_or_null(q->unit, &failed);
        to->query.container = strdup_or_null(q->container, &failed);
        if (failed) {
                request_done(to);
                return -ENOMEM;
        }
        return 0;
}

static void job_free(query_job *j) {
        if (!j)
                return;
        request_done(&j->req);
        free(j->buf);
        free(j);
}

static bool job_has_room(query_job *j) {
        return j->len < QUERY_BUFFER_BYTES || workqueue_item_cancelled(&j->item);
}

/* Worker side, under the lock: waits until the job's buffer has room; a
 * client that does not make room within QUERY_PARK_MS gets its job parked
 * (see the top of this file). Returns with the lock held. */
static void job_wait_room(query_job *j) {
        query_pool *p = j->pool;

        if (job_has_room(j))
                return;
        struct timespec until = monotonic_deadline_ms(QUERY_PARK_MS);
        while (!job_has_room(j))
                if (pthread_cond_timedwait(&p->room, &p->lock, &until) == ETIMEDOUT)
                        break;
        if (job_has_room(j))
                return;
        /* parked: its place goes to the next job (a spare thread starts if
         * none is idle), then back among them, before any new job, once
         * the client read; a cancelled job takes its place at once */
        pthread_mutex_unlock(&p->lock);
        workqueue_park(p->queue, &j->item);
        pthread_mutex_lock(&p->lock);
        while (!job_has_room(j))
                pthread_cond_wait(&p->room, &p->lock);
        pthread_mutex_unlock(&p->lock);
        workqueue_unpark(p->queue, &j->item);
        pthread_mutex_lock(&p->lock);
}

/* Worker side: answer text (whole lines) into the job's buffer, waiting
 * for room. */
static int job_append(query_job *j, const char *s, size_t n) {
        query_pool *p = j->pool;
        bool wake = false;
        int r = 0;

        pthread_mutex_lock(&p->lock);
        job_wait_room(j);
        if (workqueue_item_cancelled(&j->item))
                r = -ECANCELED;
        else {
                if (j->len + n > j->cap) {
                        size_t cap = MAX(MIN(QUERY_BUFFER_BYTES, MAX(j->cap * 2, 4096u)), j->len + n);
                        char *b = realloc(j->buf, cap);
                        if (!b)
                                r = -ENOMEM;
                        else {
                                j->buf = b;
                                j->cap = cap;
                        }
                }
                if (r >= 0) {
                        memcpy(j->buf + j->len, s, n);
                        j->made += n;
                        wake = j->len < QUERY_NOTIFY_BYTES && j->len + n >= QUERY_NOTIFY_BYTES;
                        j->len += n;
                }
        }
        pthread_mutex_unlock(&p->lock);
        if (wake)
                workqueue_wake(p->queue);
        return r;
}

/* answer.c's lines other than stacks: few per answer */
static int job_emit(json_t *line, void *userdata) {
        query_job *j = userdata;
        char *s;
        int r;

        if (!line)
                return -ENOMEM;
        s = json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(line);
        if (!s)
                return -ENOMEM;
        r = job_append(j, s, strlen(s));
        if (r >= 0)
                r = job_append(j, "\n", 1);
        free(s);
        return r;
}

/* Stack lines, most of an answer: written as text by common/protocol.c into the
 * worker's scratch buffer, then appended. */
static int job_emit_stack(const struct store_stack_out *stack, const struct stack_style *style, void *userdata) {
        query_job *j = userdata;
        struct stackline_buf *b = &j->worker->scratch;
        int r;

        b->len = 0;
        r = stackline_append(b, stack, style);
        if (r < 0)
                return r;
        return job_append(j, b->data, b->len);
}

/* A timeline's "samples" lines, already text */
static int job_emit_text(const char *text, size_t n, void *userdata) {
        return job_append(userdata, text, n);
}

/* The queue's ops->run, on a worker thread: the answer, into the job's
 * buffer; then the job goes back to the loop. */
static void query_run(workqueue_item *item, void *thread_data, void *userdata) {
        query_job *j = container_of(item, query_job, item);
        query_pool *p = userdata;
        int r = workqueue_item_cancelled(item) ? -ECANCELED : 0;

        j->worker = thread_data;
        if (r >= 0) {
                struct answer_context ctx = {
                        .store = j->worker->store,
                        .now_ns = j->now_ns,
                        .default_step_ns = j->default_step_ns,
                        .base_hz = j->base_hz,
                        .timeline_off = j->timeline_off,
                        .caller = j->caller,
                        .emit = job_emit,
                        .emit_stack = job_emit_stack,
                        .emit_text = job_emit_text,
                        .userdata = j,
                };
                r = answer_request(&ctx, &j->req);
        }
        /* a large answer's working set (its stacks' sums, frames,
         * locations beyond the cache) is freed now; give the pages
         * back, so what profd holds after it does not depend on the
         * largest answer it ever gave */
        if (j->made >= QUERY_TRIM_BYTES)
                heap_trim();
        j->worker = NULL;
        pthread_mutex_lock(&p->lock);
        j->result = r;
        pthread_mutex_unlock(&p->lock);
        workqueue_complete(p->queue, item);
}

static query_worker *query_worker_free(query_worker *w) {
        if (w) {
                store_close(w->store);
                stackline_buf_done(&w->scratch);
                free(w);
        }
        return NULL;
}

/* A worker's state with its own reader connection. Returns 0 or a
 * negative errno, logged. */
static int query_worker_new(const char *store_path, query_worker **ret) {
        _cleanup_free_ query_worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return log_oom();
        r = store_open_reader(store_path, &w->store);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* ops->thread_init: a spare opens its own connection, off the loop */
static int query_thread_init(void *userdata, void **ret_thread_data) {
        query_pool *p = userdata;
        query_worker *w = NULL;
        int r;

        r = query_worker_new(p->store_path, &w);
        if (r < 0)
                return log_warning_errno(r, "Failed to open a spare query worker's connection, ignoring "
                                         "(queries wait for the other workers): %m");
        *ret_thread_data = w;
        return 0;
}

static void query_thread_done(void *thread_data) {
        query_worker_free(thread_data);
}

/* ops->interrupt: the running SQL of a cancelled job stops soon */
static void query_interrupt(workqueue_item *item, void *thread_data) {
        query_worker *w = thread_data;
        store_interrupt(w->store);
}

/* ops->idle: see QUERY_IDLE_MS */
static void query_idle(void *thread_data, void *userdata) {
        query_worker *w = thread_data;

        if (!w)
                return;
        store_forget_query_caches(w->store);
        stackline_buf_done(&w->scratch);
        heap_trim();
}

static const struct workqueue_ops query_ops = {
        .run = query_run,
        .thread_init = query_thread_init,
        .thread_done = query_thread_done,
        .interrupt = query_interrupt,
        .idle = query_idle,
        .idle_ms = QUERY_IDLE_MS,
};

void query_pool_get_stats(query_pool *p, struct query_pool_stats *ret) {
        struct workqueue_stats ws;

        workqueue_get_stats(p->queue, &ws);
        *ret = (struct query_pool_stats) {
                .threads = ws.threads,
                .running = ws.running,
                .parked = ws.parked,
                .queued = ws.queued,
                .parks = ws.parks,
        };
}

/* Loop side: stop a job whose client left (or at exit). */
static void job_cancel(query_job *j) {
        query_pool *p = j->pool;

        /* the flag first, then the wake-up under the lock job_wait_room
         * holds while it checks the flag: no wake-up is lost */
        workqueue_cancel(p->queue, &j->item);
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->room);
        pthread_mutex_unlock(&p->lock);
}

static void job_unlink(query_job *j) {
        query_pool *p = j->pool;

        if (j->prev)
                j->prev->next = j->next;
        else
                p->jobs = j->next;
        if (j->next)
                j->next->prev = j->prev;
}

static void on_client_writable(server_client *c, void *userdata) {
        query_job *j = userdata;
        /* the client took some: feed it from the loop's next iteration, not
         * from inside the server's io callback */
        workqueue_wake(j->pool->queue);
}

static void on_client_gone(server_client *c, void *userdata) {
        query_job *j = userdata;

        j->client = NULL;
        job_cancel(j);
}

/* Hands what the job made to its client, as far as the client keeps up,
 * and finishes the job once all of it is handed over. */
static void job_pump(query_job *j) {
        query_pool *p = j->pool;
        server_client *c = j->client;
        char *data = NULL;
        size_t n = 0;
        bool finished;
        int result;

        pthread_mutex_lock(&p->lock);
        if (c && j->len > 0 && server_client_unsent(c) < QUERY_BUFFER_BYTES) {
                data = TAKE_PTR(j->buf);
                n = j->len;
                j->len = j->cap = 0;
                pthread_cond_broadcast(&p->room);
        }
        finished = j->done && (j->len == 0 || !c);
        result = j->result;
        pthread_mutex_unlock(&p->lock);

        if (data) {
                /* may close the client (it left): on_client_gone clears j->client */
                (void) server_client_send_raw(c, data, n);
                free(data);
                c = j->client;
        }
        if (!finished)
                return;
        job_unlink(j);
        job_free(j);
        if (!c)
                return;
        server_client_set_hooks(c, NULL, NULL, NULL);
        if (result < 0 && result != -ECANCELED) {
                _cleanup_free_ char *msg = NULL;

                log_warning_errno(result, "Query failed: %m");
                if (asprintf(&msg, "request failed: %s", strerror(-result)) < 0)
                        msg = NULL;
                (void) server_client_send_error(c, msg ? msg : "request failed");
        }
        /* its next requests, and closing it if it is done (may free c) */
        server_client_resume(c);
}

/* The loop was woken: jobs completed, new output, or a client read. */
static void on_wake(workqueue *wq, void *userdata) {
        query_pool *p = userdata;
        workqueue_item *item;

        while ((item = workqueue_pop_done(wq)))
                container_of(item, query_job, item)->done = true;
        for (query_job *j = p->jobs, *next; j; j = next) {
                next = j->next;
                job_pump(j);
        }
}

int query_pool_submit(query_pool *p, server_client *c, const struct request *req, const struct answer_caller *caller,
                      uint64_t now_ns, uint64_t default_step_ns, unsigned base_hz,
                      bool timeline_off) {
        query_job *j;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        r = request_copy(req, &j->req);
        if (r < 0) {
                free(j);
                return r;
        }
        j->pool = p;
        j->caller = *caller;
        j->now_ns = now_ns;
        j->default_step_ns = default_step_ns;
        j->base_hz = base_hz;
        j->timeline_off = timeline_off;
        j->client = c;
        j->next = p->jobs;
        if (p->jobs)
                p->jobs->prev = j;
        p->jobs = j;
        server_client_set_hooks(c, on_client_writable, on_client_gone, j);
        workqueue_submit(p->queue, &j->item);
        return SERVER_DEFERRED;
}

int query_pool_new(sd_event *event, const char *store_path, query_pool **ret) {
        _cleanup_(query_pool_freep) query_pool *p = calloc(1, sizeof(*p));
        pthread_condattr_t monotonic;
        int r;

        if (!p)
                return log_oom();
        pthread_mutex_init(&p->lock, NULL);
        /* job_wait_room's deadline is on the monotonic clock */
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_cond_init(&p->room, &monotonic);
        pthread_condattr_destroy(&monotonic);
        p->store_path = strdup(store_path);
        if (!p->store_path)
                return log_oom();
        r = workqueue_new("profd-query", &query_ops, p, QUERY_WORKERS, &p->queue);
        if (r < 0)
                return r;
        r = workqueue_attach(p->queue, event, on_wake, p);
        if (r < 0)
                return r;
        /* the resident workers' connections open here, so a store they
         * cannot read stops profd at start */
        for (unsigned i = 0; i < QUERY_WORKERS; i++) {
                query_worker *w = NULL;

                r = query_worker_new(store_path, &w);
                if (r < 0)
                        return r;
                r = workqueue_start_thread(p->queue, w);
                if (r < 0) {
                        query_worker_free(w);
                        return r;
                }
        }
        *ret = TAKE_PTR(p);
        return 0;
}

query_pool *query_pool_free(query_pool *p) {
        if (!p)
                return NULL;
        /* running SQL is interrupted, parked jobs stop waiting */
        for (query_job *j = p->jobs; j; j = j->next)
                job_cancel(j);
        if (p->queue)
                workqueue_stop(p->queue, false);
        while (p->jobs) {
                query_job *j = p->jobs;
                if (j->client)
                        server_client_set_hooks(j->client, NULL, NULL, NULL);
                job_unlink(j);
                job_free(j);
        }
        p->queue = workqueue_free(p->queue);
        free(p->store_path);
        pthread_cond_destroy(&p->room);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}
