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
 * daemon. The loop thread alone touches clients; workers touch only their
 * connection and, under the pool's lock, their job's buffer and flags. */
#include "query.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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

typedef struct query_job query_job;

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
        int worker;             /* running on workers[worker]; -1: not running */
        uint64_t made;          /* bytes of answer made so far */
        bool done, cancelled;
        int result;
};

struct query_worker {
        query_pool *pool;
        pthread_t thread;
        bool started;
        store *store;
        struct stackline_buf scratch; /* the line being written */
};

struct query_pool {
        sd_event *event;
        sd_event_source *notify_source;
        int notify_fd;           /* eventfd: workers wake the loop */

        pthread_mutex_t lock;
        pthread_cond_t work;     /* a job was queued, or the pool stops */
        pthread_cond_t room;     /* a buffer was taken, or a job cancelled */
        query_job *queue_head, *queue_tail;
        bool stopping;
        struct query_worker workers[QUERY_WORKERS];

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

/* Worker side: answer text (whole lines) into the job's buffer, waiting
 * for room. */
static int job_append(query_job *j, const char *s, size_t n) {
        query_pool *p = j->pool;
        bool wake = false;
        int r = 0;

        pthread_mutex_lock(&p->lock);
        while (j->len >= QUERY_BUFFER_BYTES && !j->cancelled)
                pthread_cond_wait(&p->room, &p->lock);
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
        struct stackline_buf *b = &j->pool->workers[j->worker].scratch;
        int r;

        b->len = 0;
        r = stackline_append(b, stack, style);
        if (r < 0)
                return r;
        return job_append(j, b->data, b->len);
}

static void *worker_main(void *userdata) {
        struct query_worker *w = userdata;
        query_pool *p = w->pool;

        for (;;) {
                query_job *j;
                int r;

                pthread_mutex_lock(&p->lock);
                while (!p->queue_head && !p->stopping)
                        pthread_cond_wait(&p->work, &p->lock);
                if (p->stopping) {
                        pthread_mutex_unlock(&p->lock);
                        break;
                }
                j = p->queue_head;
                p->queue_head = j->queued;
                if (!p->queue_head)
                        p->queue_tail = NULL;
                j->worker = (int) (w - p->workers);
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
                j->worker = -1;
                j->done = true;
                j->result = r;
                pthread_mutex_unlock(&p->lock);
                notify(p);
        }
        return NULL;
}

/* Loop side: stop a job whose client left (or at exit). */
static void job_cancel(query_job *j) {
        query_pool *p = j->pool;

        pthread_mutex_lock(&p->lock);
        j->cancelled = true;
        if (j->worker >= 0)
                store_interrupt(p->workers[j->worker].store);
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
        j->worker = -1;
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
        pthread_cond_signal(&p->work);
        pthread_mutex_unlock(&p->lock);
        return SERVER_DEFERRED;
}

int query_pool_new(sd_event *event, const char *store_path, query_pool **ret) {
        query_pool *p;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return log_oom();
        p->notify_fd = -1;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->work, NULL);
        pthread_cond_init(&p->room, NULL);
        p->event = sd_event_ref(event);
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
        for (unsigned i = 0; i < QUERY_WORKERS; i++) {
                struct query_worker *w = &p->workers[i];

                w->pool = p;
                r = store_open_reader(store_path, &w->store);
                if (r < 0)
                        goto fail;
                r = -pthread_create(&w->thread, NULL, worker_main, w);
                if (r < 0) {
                        log_error_errno(r, "Failed to start a query worker: %m");
                        goto fail;
                }
                w->started = true;
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
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < QUERY_WORKERS; i++) {
                if (p->workers[i].started)
                        pthread_join(p->workers[i].thread, NULL);
                store_close(p->workers[i].store);
                stackline_buf_done(&p->workers[i].scratch);
        }
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
        pthread_cond_destroy(&p->room);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}
