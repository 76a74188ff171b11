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
 * client) and end with them. The loop thread alone touches clients;
 * workers touch only their connection and, under the pool's lock, their
 * job's buffer, the flags and the counts. */
#include "query.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "stackline.h"
#include "store.h"

/* The loop is woken when a job's buffer reaches this much (or the job ends):
 * a wake-up per line would cost more than the line. */
#define QUERY_NOTIFY_BYTES (64u * 1024)
/* After an answer this large the worker trims the heap (malloc_trim): a few
 * milliseconds, worth it only after a large working set. */
#define QUERY_TRIM_BYTES (4u * 1024 * 1024)
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
        query_pool *pool;
        query_job *prev, *next; /* pool->jobs: loop thread only */
        query_job *queued;      /* pool->queue: under the lock */
        struct request req;     /* owned copy */
        struct answer_caller caller;
        uint64_t now_ns;
        uint64_t default_step_ns; /* series without a step: the drain interval */
        server_client *client;  /* loop thread only; NULL once the client left */

        /* under pool->lock */
        char *buf;              /* answer lines not yet handed to the client */
        size_t len, cap;
        query_worker *worker;   /* the worker making it; NULL: not running */
        uint64_t made;          /* bytes of answer made so far */
        bool done, cancelled;
        int result;
};

/* A worker thread; detached: it frees itself when it ends. */
struct query_worker {
        query_pool *pool;
        store *store;                 /* NULL until a spare opened its own */
        struct stackline_buf scratch; /* the line being written */
};

struct query_pool {
        sd_event *event;
        sd_event_source *notify_source;
        int notify_fd;           /* eventfd: workers wake the loop */

        pthread_mutex_t lock;
        pthread_cond_t work;     /* a job was queued, or the pool stops */
        pthread_cond_t room;     /* a buffer was taken, or a job cancelled */
        pthread_cond_t slot;     /* a worker gave up its place (parked, done) */
        pthread_cond_t gone;     /* a worker thread ended */
        query_job *queue_head, *queue_tail;
        bool stopping;
        char *store_path;        /* for spare workers' connections */
        struct query_pool_stats stats; /* threads, running, parked, queued, ... */
        unsigned idle;           /* threads waiting for a job */
        unsigned resuming;       /* parked jobs whose client read, waiting for a place */

        query_job *jobs;         /* loop thread: every job not yet finished */
};

static void notify(query_pool *p) {
        uint64_t one = 1;
        /* EAGAIN only when the counter is full: the loop is woken anyway */
        (void) !write(p->notify_fd, &one, sizeof(one));
}

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

static int worker_start(query_pool *p, store *st);

/* Under the lock: a queued job that no worker will take (every thread is
 * making an answer or parked, yet fewer than QUERY_WORKERS make answers)
 * needs a spare thread. */
static bool need_spare(const query_pool *p) {
        return p->queue_head && !p->stopping && p->idle == 0 && p->resuming == 0 &&
               p->stats.threads - p->stats.parked < QUERY_WORKERS;
}

/* Under the lock: a place among the QUERY_WORKERS was given up; parked
 * jobs waiting for one go first, then new jobs. */
static void slot_freed(query_pool *p) {
        pthread_cond_broadcast(&p->slot);
        pthread_cond_broadcast(&p->work);
}

static struct timespec deadline_after_ms(unsigned ms) {
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

/* Worker side, under the lock: waits until the job's buffer has room; a
 * client that does not make room within QUERY_PARK_MS gets its job parked
 * (see the top of this file). Returns with the lock held. */
static void job_wait_room(query_job *j) {
        query_pool *p = j->pool;
        bool parked = false;

        if (j->len < QUERY_BUFFER_BYTES || j->cancelled)
                return;
        struct timespec until = deadline_after_ms(QUERY_PARK_MS);
        while (j->len >= QUERY_BUFFER_BYTES && !j->cancelled) {
                if (parked) {
                        pthread_cond_wait(&p->room, &p->lock);
                        continue;
                }
                if (pthread_cond_timedwait(&p->room, &p->lock, &until) != ETIMEDOUT)
                        continue;
                if (j->len < QUERY_BUFFER_BYTES || j->cancelled)
                        break;
                parked = true;
                p->stats.running--;
                p->stats.parked++;
                p->stats.parks++;
                slot_freed(p);
                if (need_spare(p)) {
                        /* counted before it starts, so no other worker
                         * starts one more for the same job */
                        p->stats.threads++;
                        pthread_mutex_unlock(&p->lock);
                        (void) worker_start(p, NULL);
                        pthread_mutex_lock(&p->lock);
                }
        }
        if (!parked)
                return;
        /* back among the workers that make answers, before any new job; a
         * cancelled job ends at once, so it takes its place without waiting */
        p->resuming++;
        while (p->stats.running >= QUERY_WORKERS && !j->cancelled)
                pthread_cond_wait(&p->slot, &p->lock);
        p->resuming--;
        p->stats.parked--;
        p->stats.running++;
        if (p->resuming == 0)
                pthread_cond_broadcast(&p->work);
}

/* Worker side: answer text (whole lines) into the job's buffer, waiting
 * for room. */
static int job_append(query_job *j, const char *s, size_t n) {
        query_pool *p = j->pool;
        bool wake = false;
        int r = 0;

        pthread_mutex_lock(&p->lock);
        job_wait_room(j);
        if (j->cancelled)
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
                notify(p);
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

/* Stack lines, most of an answer: written as text by stackline.c into the
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

/* Under the lock: a worker ends when the pool stops, or when it is a spare
 * no longer needed (more threads than QUERY_WORKERS besides the parked). */
static bool worker_should_end(const query_pool *p) {
        return p->stopping || p->stats.threads - p->stats.parked > QUERY_WORKERS;
}

static void *worker_main(void *userdata) {
        query_worker *w = userdata;
        query_pool *p = w->pool;
        int r;

        (void) pthread_setname_np(pthread_self(), "profd-query");

        /* a spare opens its own connection, off the loop and the lock */
        if (!w->store) {
                r = store_open_reader(p->store_path, &w->store);
                if (r < 0)
                        log_warning_errno(r, "Failed to open a spare query worker's connection, ignoring "
                                          "(queries wait for the other workers): %m");
        }

        pthread_mutex_lock(&p->lock);
        for (;;) {
                query_job *j;

                if (!w->store)
                        break;
                p->idle++;
                while (!p->stopping && !(p->queue_head && p->stats.running < QUERY_WORKERS && p->resuming == 0))
                        pthread_cond_wait(&p->work, &p->lock);
                p->idle--;
                if (p->stopping)
                        break;
                j = p->queue_head;
                p->queue_head = j->queued;
                if (!p->queue_head)
                        p->queue_tail = NULL;
                p->stats.queued--;
                p->stats.running++;
                j->worker = w;
                r = j->cancelled ? -ECANCELED : 0;
                pthread_mutex_unlock(&p->lock);

                if (r >= 0) {
                        struct answer_context ctx = {
                                .store = w->store,
                                .now_ns = j->now_ns,
                                .default_step_ns = j->default_step_ns,
                                .caller = j->caller,
                                .emit = job_emit,
                                .emit_stack = job_emit_stack,
                                .userdata = j,
                        };
                        r = answer_request(&ctx, &j->req);
                }
                /* a large answer's working set (its stacks' sums, frames,
                 * locations beyond the cache) is freed now; give the pages
                 * back, so what profd holds after it does not depend on the
                 * largest answer it ever gave */
                if (j->made >= QUERY_TRIM_BYTES)
                        (void) malloc_trim(0);

                pthread_mutex_lock(&p->lock);
                j->worker = NULL;
                j->done = true;
                j->result = r;
                p->stats.running--;
                slot_freed(p);
                notify(p);
                if (worker_should_end(p))
                        break;
        }
        p->stats.threads--;
        pthread_cond_broadcast(&p->gone);
        pthread_mutex_unlock(&p->lock);
        store_close(w->store);
        stackline_buf_done(&w->scratch);
        free(w);
        return NULL;
}

/* Starts a worker thread; st: its connection, or NULL for a spare, which
 * opens its own. The caller counted it in stats.threads already; on
 * failure it is uncounted here (and st closed). Returns 0 or a negative
 * errno, logged. */
static int worker_start(query_pool *p, store *st) {
        pthread_attr_t attr;
        pthread_t thread;
        query_worker *w;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                r = log_oom();
        else {
                w->pool = p;
                w->store = st;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&thread, &attr, worker_main, w);
                pthread_attr_destroy(&attr);
                if (r < 0)
                        log_warning_errno(r, "Failed to start a query worker: %m");
        }
        if (r < 0) {
                store_close(st);
                free(w);
                pthread_mutex_lock(&p->lock);
                p->stats.threads--;
                pthread_cond_broadcast(&p->gone);
                pthread_mutex_unlock(&p->lock);
        }
        return r;
}

void query_pool_get_stats(query_pool *p, struct query_pool_stats *ret) {
        pthread_mutex_lock(&p->lock);
        *ret = p->stats;
        pthread_mutex_unlock(&p->lock);
}

/* Loop side: stop a job whose client left (or at exit). */
static void job_cancel(query_job *j) {
        query_pool *p = j->pool;

        pthread_mutex_lock(&p->lock);
        j->cancelled = true;
        if (j->worker)
                store_interrupt(j->worker->store);
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
        notify(j->pool);
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

static int on_notify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        query_pool *p = userdata;
        uint64_t v;

        (void) !read(p->notify_fd, &v, sizeof(v));
        for (query_job *j = p->jobs, *next; j; j = next) {
                next = j->next;
                job_pump(j);
        }
        return 0;
}

int query_pool_submit(query_pool *p, server_client *c, const struct request *req, const struct answer_caller *caller,
                      uint64_t now_ns, uint64_t default_step_ns) {
        query_job *j;
        bool spare;
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
        j->client = c;
        j->next = p->jobs;
        if (p->jobs)
                p->jobs->prev = j;
        p->jobs = j;
        server_client_set_hooks(c, on_client_writable, on_client_gone, j);

        pthread_mutex_lock(&p->lock);
        if (p->queue_tail)
                p->queue_tail->queued = j;
        else
                p->queue_head = j;
        p->queue_tail = j;
        p->stats.queued++;
        pthread_cond_signal(&p->work);
        spare = need_spare(p);
        if (spare)
                p->stats.threads++;
        pthread_mutex_unlock(&p->lock);
        /* every worker is parked on a client that does not read: this job
         * gets a thread of its own (its connection opens on that thread) */
        if (spare)
                (void) worker_start(p, NULL);
        return SERVER_DEFERRED;
}

int query_pool_new(sd_event *event, const char *store_path, query_pool **ret) {
        pthread_condattr_t monotonic;
        query_pool *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return log_oom();
        p->notify_fd = -1;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->work, NULL);
        /* job_wait_room's deadline is on the monotonic clock */
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_cond_init(&p->room, &monotonic);
        pthread_condattr_destroy(&monotonic);
        pthread_cond_init(&p->slot, NULL);
        pthread_cond_init(&p->gone, NULL);
        p->event = sd_event_ref(event);
        p->store_path = strdup(store_path);
        if (!p->store_path) {
                r = log_oom();
                goto fail;
        }
        p->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->notify_fd < 0) {
                r = log_error_errno(negative_errno(), "Failed to create the query workers' eventfd: %m");
                goto fail;
        }
        r = sd_event_add_io(event, &p->notify_source, p->notify_fd, EPOLLIN, on_notify, p);
        if (r < 0) {
                log_error_errno(r, "Failed to watch the query workers: %m");
                goto fail;
        }
        /* the resident workers' connections open here, so a store they
         * cannot read stops profd at start */
        for (unsigned i = 0; i < QUERY_WORKERS; i++) {
                store *st;

                r = store_open_reader(store_path, &st);
                if (r < 0)
                        goto fail;
                pthread_mutex_lock(&p->lock);
                p->stats.threads++;
                pthread_mutex_unlock(&p->lock);
                r = worker_start(p, st);
                if (r < 0)
                        goto fail;
        }
        *ret = p;
        return 0;
fail:
        query_pool_free(p);
        return r;
}

query_pool *query_pool_free(query_pool *p) {
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_mutex_unlock(&p->lock);
        for (query_job *j = p->jobs; j; j = j->next)
                job_cancel(j);
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->work);
        pthread_cond_broadcast(&p->slot);
        /* the workers are detached: wait until the last one ended */
        while (p->stats.threads > 0)
                pthread_cond_wait(&p->gone, &p->lock);
        pthread_mutex_unlock(&p->lock);
        while (p->jobs) {
                query_job *j = p->jobs;
                if (j->client)
                        server_client_set_hooks(j->client, NULL, NULL, NULL);
                job_unlink(j);
                job_free(j);
        }
        sd_event_source_disable_unref(p->notify_source);
        safe_close(p->notify_fd);
        sd_event_unref(p->event);
        free(p->store_path);
        pthread_cond_destroy(&p->gone);
        pthread_cond_destroy(&p->slot);
        pthread_cond_destroy(&p->room);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}
