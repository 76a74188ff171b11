/* The export thread: outbox cursor, ClickHouse over HTTP, retries (see
 * exporter.h and docs/clickhouse.md, Exactly once). The thread is a
 * loopthread (loopthread.h): wake-ups arrive on an eventfd, and the next
 * look at the outbox (at once, after a back-off, or the idle check) is a
 * timer set to when it is due. */
#include "exporter.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chbatch.h"
#include "chcapture.h"
#include "clickhouse-schema.h"
#include "conf.h"
#include "credentials.h"
#include "curl-dl.h"
#include "helpers.h"
#include "log.h"
#include "loopthread.h"
#include "macro.h"
#include "rate-weight.h"
#include "store.h"

const char *const exporter_error_names[_EXPORTER_ERROR_MAX] = {
        [EXPORTER_ERROR_CONNECT] = "connect",
        [EXPORTER_ERROR_TIMEOUT] = "timeout",
        [EXPORTER_ERROR_AUTH] = "auth",
        [EXPORTER_ERROR_SCHEMA] = "schema",
        [EXPORTER_ERROR_HTTP] = "http",
        [EXPORTER_ERROR_LOCAL] = "local",
};

/* Drains read from the outbox per look: one batch at most (below). */
#define PENDING_BATCH 64
/* Retry waits double from 1 s to 30 s: a blip costs a second, and a fleet
 * of a thousand hosts knocks on a ClickHouse that is down about 33 times a
 * second, while an outage is caught up at most 30 s after it ends. */
#define BACKOFF_MIN_NS (1ULL * NSEC_PER_SEC)
#define BACKOFF_MAX_NS (30ULL * NSEC_PER_SEC)
/* With nothing to do, the thread looks again this often even without a
 * wake-up: status's backlog stays fresh, and a ClickHouse that was fixed
 * meanwhile (schema created, user allowed) is noticed. */
#define IDLE_CHECK_NS (60ULL * NSEC_PER_SEC)
/* How many of the outbox connection's busy timeouts (5 s each) moving the
 * cursor may wait for the store's writer. */
#define ACK_BUSY_TRIES 12
/* The same error is logged again at most this often while it lasts. */
#define LOG_REPEAT_NS (600ULL * NSEC_PER_SEC)
/* ClickHouse's answers we keep: an error message, a count. */
#define ANSWER_MAX (64 * 1024)

struct exporter {
        char *url, *host_name, *credentials_path, *store_path, *target;
        unsigned base_hz;      /* cpu values are exported at this rate (frequency at start) */
        char *user, *password;
        uint64_t timeout_ns;

        loopthread *thread;
        int wake_fd;           /* eventfd: exporter_wake, from the event loop */
        pthread_mutex_t lock;  /* status */
        bool lock_made;
        /* set before the thread is stopped: a transfer in flight is
         * abandoned (on_progress) and no further look begins */
        atomic_bool stopping;

        /* the thread's own */
        sd_event_source *wake_source, *due_timer;
        uint64_t backoff_ns;   /* the last back-off; 0: the last look succeeded */
        bool backing_off;      /* due_timer is the end of a back-off */
        CURL *curl;
        store *outbox;
        chbatch *batch;
        bool schema_ok;
        bool check_next;       /* the next drain's earlier attempt may have landed: look it up first */
        chcapture_sent *captures_sent; /* the (capture, state) pairs ClickHouse holds, as far as known */
        bool captures_check;   /* an earlier captures insert may have landed: look them up first */
        bool credentials_read;
        uint64_t logged_ns;    /* when last_error was logged */
        char logged[512];

        struct exporter_status status; /* under lock */
};

static uint64_t now_realtime_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static uint64_t now_monotonic_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* --- pure helpers (unit-tested) --------------------------------------------------- */

int exporter_clickhouse_code(const char *body) {
        const char *p = body ? strstr(body, "Code: ") : NULL;
        char *end;
        long v;

        if (!p)
                return -1;
        errno = 0;
        v = strtol(p + 6, &end, 10);
        if (errno != 0 || end == p + 6 || v < 0 || v > 100000)
                return -1;
        return (int) v;
}

enum exporter_error exporter_classify(long http_status, int code) {
        switch (code) {
        case 192: /* UNKNOWN_USER */
        case 193: /* WRONG_PASSWORD */
        case 194: /* REQUIRED_PASSWORD */
        case 516: /* AUTHENTICATION_FAILED (later versions) */
        case 164: /* READONLY: a user that may not insert */
        case 497: /* ACCESS_DENIED */
        case 291: /* DATABASE_ACCESS_DENIED */
                return EXPORTER_ERROR_AUTH;
        case 16:  /* NO_SUCH_COLUMN_IN_TABLE */
        case 47:  /* UNKNOWN_IDENTIFIER */
        case 60:  /* UNKNOWN_TABLE */
        case 81:  /* UNKNOWN_DATABASE */
                return EXPORTER_ERROR_SCHEMA;
        case 159: /* TIMEOUT_EXCEEDED */
        case 209: /* SOCKET_TIMEOUT */
                return EXPORTER_ERROR_TIMEOUT;
        case 210: /* NETWORK_ERROR: a shard behind a Distributed table */
        case 279: /* ALL_CONNECTION_TRIES_FAILED */
                return EXPORTER_ERROR_CONNECT;
        }
        if (http_status == 401 || http_status == 403)
                return EXPORTER_ERROR_AUTH;
        return EXPORTER_ERROR_HTTP;
}

/* --- errors and status --------------------------------------------------------- */

/* Records a failed attempt: counted by kind, shown in status, logged when
 * it is news (another message than the last one logged, or the same one
 * after LOG_REPEAT_NS). Returns -EAGAIN: the caller backs off. */
_printf_(3, 4) static int fail(exporter *e, enum exporter_error kind, const char *fmt, ...) {
        char msg[512];
        uint64_t now = now_monotonic_ns();
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        pthread_mutex_lock(&e->lock);
        e->status.errors[kind]++;
        e->status.last_error_kind = (int) kind;
        snprintf(e->status.last_error, sizeof(e->status.last_error), "%s", msg);
        e->status.last_error_ns = now_realtime_ns();
        e->status.state = "retrying";
        pthread_mutex_unlock(&e->lock);
        /* a fixed password (or a user allowed to insert) in the file is
         * taken at the next attempt, without a restart */
        if (kind == EXPORTER_ERROR_AUTH)
                e->credentials_read = false;
        if (!streq(msg, e->logged) || now - e->logged_ns >= LOG_REPEAT_NS) {
                log_warning("ClickHouse export (%s): %s; profiling goes on locally, retrying.",
                            exporter_error_names[kind], msg);
                snprintf(e->logged, sizeof(e->logged), "%s", msg);
                e->logged_ns = now;
        }
        return -EAGAIN;
}

static void set_state(exporter *e, const char *state) {
        pthread_mutex_lock(&e->lock);
        e->status.state = state;
        pthread_mutex_unlock(&e->lock);
}

/* --- credentials --------------------------------------------------------------- */

/* The credentials file (common/credentials.h, as profctl reads it). It must
 * not be readable by others: it holds a password. */
static int read_credentials(exporter *e) {
        _cleanup_free_ char *text = NULL;
        const char *user, *password;
        unsigned lineno = 0;
        struct stat st;
        int r;

        if (!e->credentials_path) {
                e->credentials_read = true;
                return 0;
        }
        if (stat(e->credentials_path, &st) < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "cannot read the credentials file %s: %s", e->credentials_path,
                            strerror(errno));
        if (st.st_mode & (S_IROTH | S_IWOTH))
                return fail(e, EXPORTER_ERROR_LOCAL, "the credentials file %s can be read or written by others "
                            "(mode %04o); make it 0600", e->credentials_path, (unsigned) (st.st_mode & 07777));
        r = read_full_file(e->credentials_path, &text);
        if (r < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "cannot read the credentials file %s: %s", e->credentials_path,
                            strerror(-r));
        r = credentials_parse(text, &user, &password, &lineno);
        if (r < 0 && lineno == 0) {
                free(e->user);
                e->user = NULL;
                return fail(e, EXPORTER_ERROR_LOCAL, "the credentials file %s has no \"user = NAME\" line",
                            e->credentials_path);
        }
        if (r < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "the credentials file %s, line %u: expected \"user = NAME\" or "
                            "\"password = SECRET\"", e->credentials_path, lineno);
        free(e->user);
        free(e->password);
        e->user = strdup(user);
        e->password = strdup(password);
        if (!e->user || !e->password)
                return -ENOMEM;
        e->credentials_read = true;
        return 0;
}

/* --- HTTP ---------------------------------------------------------------------- */

struct answer {
        struct chbuf body;
};

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
        struct answer *a = userdata;
        size_t len = size * n, keep = a->body.len < ANSWER_MAX ? MIN(len, ANSWER_MAX - a->body.len) : 0;
        char *d;

        if (keep == 0)
                return len;
        d = realloc(a->body.data, a->body.len + keep + 1);
        if (!d)
                return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
        memcpy(d + a->body.len, data, keep);
        a->body.data = d;
        a->body.len += keep;
        d[a->body.len] = '\0';
        return len;
}

/* Stops a transfer in flight when profd stops. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        exporter *e = userdata;
        return atomic_load(&e->stopping) ? 1 : 0;
}

/* Why a request failed, before it is recorded (fail()). */
struct failure {
        enum exporter_error kind;
        char msg[400];
};

/* One request: POST to the URL with params (already URL-encoded, may be
 * ""), body data. On success returns 0 with ClickHouse's answer in
 * *ret_answer (when not NULL). On failure returns -EAGAIN with *ret_failure
 * saying why (doing `what`); -ECANCELED when profd stops; -ENOMEM. */
static int http_post(exporter *e, const char *what, const char *params, const char *data, size_t len,
                     char **ret_answer, struct failure *f) {
        _cleanup_free_ char *url = NULL;
        struct curl_slist *headers = NULL;
        struct answer a = {};
        long status = 0;
        CURLcode cc;
        int r = 0;

        if (asprintf(&url, "%s%s%s", e->url, strchr(e->url, '?') ? "&" : "?", params) < 0)
                return -ENOMEM;
        sym_curl_easy_reset(e->curl);
        /* no "Expect: 100-continue" round trip before a large body */
        headers = sym_curl_slist_append(NULL, "Expect:");
        if (!headers)
                return -ENOMEM;
        sym_curl_easy_setopt(e->curl, CURLOPT_URL, url);
        sym_curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, headers);
        sym_curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
        sym_curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, data);
        sym_curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
        sym_curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
        sym_curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long) (e->timeout_ns / NSEC_PER_MSEC));
        sym_curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long) (e->timeout_ns / NSEC_PER_MSEC));
        sym_curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
        sym_curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &a);
        sym_curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
        sym_curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        sym_curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
        if (e->user) {
                sym_curl_easy_setopt(e->curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                sym_curl_easy_setopt(e->curl, CURLOPT_USERNAME, e->user);
                sym_curl_easy_setopt(e->curl, CURLOPT_PASSWORD, e->password);
        }
        cc = sym_curl_easy_perform(e->curl);
        sym_curl_slist_free_all(headers);
        if (cc == CURLE_OK)
                sym_curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
        if (atomic_load(&e->stopping))
                r = -ECANCELED;
        else if (cc == CURLE_OPERATION_TIMEDOUT) {
                f->kind = EXPORTER_ERROR_TIMEOUT;
                snprintf(f->msg, sizeof(f->msg), "%s: no answer within %" PRIu64 " ms", what,
                         (uint64_t) (e->timeout_ns / NSEC_PER_MSEC));
                r = -EAGAIN;
        } else if (cc != CURLE_OK) {
                f->kind = EXPORTER_ERROR_CONNECT;
                snprintf(f->msg, sizeof(f->msg), "%s: %s", what, sym_curl_easy_strerror(cc));
                r = -EAGAIN;
        } else if (status != 200) {
                const char *msg = a.body.data ? a.body.data : "";

                f->kind = exporter_classify(status, exporter_clickhouse_code(a.body.data));
                snprintf(f->msg, sizeof(f->msg), "%s: HTTP %ld: %.*s", what, status, (int) strcspn(msg, "\n"), msg);
                r = -EAGAIN;
        }
        if (r >= 0 && ret_answer)
                *ret_answer = TAKE_PTR(a.body.data);
        free(a.body.data);
        return r;
}

/* Records f (see fail()). Returns -EAGAIN. */
static int fail_with(exporter *e, const struct failure *f) {
        return fail(e, f->kind, "%s (ClickHouse at %s)", f->msg, e->url);
}

/* The query (a SELECT) in the URL, its answer's first line as a number.
 * Returns 0, or -EAGAIN with *f saying why, or -ECANCELED, -ENOMEM. */
static int query_u64(exporter *e, const char *what, const char *sql, uint64_t *ret, struct failure *f) {
        _cleanup_free_ char *params = NULL, *answer = NULL;
        char *enc = sym_curl_easy_escape(e->curl, sql, 0);
        int r;

        if (!enc)
                return -ENOMEM;
        r = asprintf(&params, "query=%s", enc);
        sym_curl_free(enc);
        if (r < 0)
                return -ENOMEM;
        r = http_post(e, what, params, "", 0, &answer, f);
        if (r < 0)
                return r;
        if (!answer || parse_uint_strict(strtok(answer, "\n") ?: "", UINT64_MAX, ret) < 0) {
                f->kind = EXPORTER_ERROR_HTTP;
                snprintf(f->msg, sizeof(f->msg), "%s: unexpected answer \"%.100s\"", what, answer ? answer : "");
                return -EAGAIN;
        }
        return 0;
}

/* --- the protocol -------------------------------------------------------------- */

static int check_schema(exporter *e) {
        struct failure f;
        uint64_t version;
        int r;

        r = query_u64(e, "reading profd.schema_version", "SELECT max(version) FROM profd.schema_version", &version, &f);
        if (r == -EAGAIN && f.kind == EXPORTER_ERROR_SCHEMA)
                /* say what to do about it */
                return fail(e, EXPORTER_ERROR_SCHEMA, "no profd schema at %s (%s); create it with profctl "
                            "--clickhouse URL init (docs/clickhouse.md)", e->url, f.msg);
        if (r == -EAGAIN)
                return fail_with(e, &f);
        if (r < 0)
                return r;
        /* exactly the version whose columns chbatch writes: an older one
         * lacks them, a newer one may need what this profd cannot write */
        if (version < clickhouse_schema_version)
                return fail(e, EXPORTER_ERROR_SCHEMA, "%s holds profd schema version %" PRIu64 ", this profd "
                            "exports version %u; upgrade it in place with profctl --clickhouse URL init "
                            "(docs/clickhouse.md)", e->url, version, clickhouse_schema_version);
        if (version != clickhouse_schema_version)
                return fail(e, EXPORTER_ERROR_SCHEMA, "%s holds profd schema version %" PRIu64 ", this profd "
                            "exports version %u; use a profd of the same version, or a database made for it",
                            e->url, version, clickhouse_schema_version);
        e->schema_ok = true;
        return 0;
}

/* The sample INSERT's query id: "profd-HOST-" and the first drain's end. */
static void batch_query_id(const exporter *e, const struct store_outbox_drain *first, char *ret, size_t size) {
        snprintf(ret, size, "profd-%s-%" PRIu64, e->host_name, first->end_ns);
}

/* Sets stored[i] for the drains[0..n) whose drain_end `table` holds for
 * this host (`where`: more conditions, "" or " AND ..."). Returns 0, or
 * -EAGAIN (recorded: back off), -ENOMEM, -ECANCELED. */
static int drains_in(exporter *e, const char *table, const char *where, const struct store_outbox_drain *drains,
                     size_t n, bool *stored) {
        _cleanup_free_ char *sql = NULL, *answer = NULL;
        struct chbuf ends = {}, days = {};
        struct failure f;
        int r;

        for (size_t i = 0; i < n; i++) {
                char day[11], num[32];

                chbatch_day(drains[i].end_ns, day);
                snprintf(num, sizeof(num), "%s%" PRIu64, i ? "," : "", drains[i].end_ns);
                if (chbuf_escaped(&ends, num) < 0 ||
                    (!strstr(days.data ? days.data : "", day) &&
                     (chbuf_escaped(&days, days.len ? ",'" : "'") < 0 || chbuf_escaped(&days, day) < 0 ||
                      chbuf_escaped(&days, "'") < 0))) {
                        free(ends.data);
                        free(days.data);
                        return -ENOMEM;
                }
                stored[i] = false;
        }
        /* host names need no quoting (chbatch_host_name_valid) */
        r = asprintf(&sql, "SELECT DISTINCT drain_end FROM %s WHERE day IN (%s) AND host = '%s'%s "
                           "AND drain_end IN (%s)", table, days.data, e->host_name, where, ends.data);
        free(ends.data);
        free(days.data);
        if (r < 0)
                return -ENOMEM;
        /* the list of drains may be long: the query goes in the body */
        r = http_post(e, "looking for drains sent before", "", sql, strlen(sql), &answer, &f);
        if (r == -EAGAIN)
                return fail_with(e, &f);
        if (r < 0)
                return r;
        /* no rows: an empty answer (no body at all) */
        for (char *save = NULL, *line = answer ? strtok_r(answer, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save)) {
                uint64_t end;

                if (parse_uint_strict(line, UINT64_MAX, &end) < 0)
                        return fail(e, EXPORTER_ERROR_HTTP, "looking for drains sent before: unexpected answer "
                                    "\"%.100s\" (ClickHouse at %s)", line, e->url);
                for (size_t i = 0; i < n; i++)
                        if (drains[i].end_ns == end)
                                stored[i] = true;
        }
        return 0;
}

/* Makes sure no earlier insert of this host (its query ids all start
 * "profd-HOST-") is still running at ClickHouse: one could land after a
 * look for what it holds. Returns 0, or -EAGAIN (recorded: back off; one
 * is running, or ClickHouse did not answer), -ENOMEM, -ECANCELED. */
static int no_insert_running(exporter *e) {
        _cleanup_free_ char *sql = NULL;
        struct failure f;
        uint64_t running;
        int r;

        /* host names need no quoting (chbatch_host_name_valid) */
        if (asprintf(&sql, "SELECT count() FROM system.processes WHERE substring(query_id, 1, %zu) = 'profd-%s-'",
                     strlen(e->host_name) + 7, e->host_name) < 0)
                return -ENOMEM;
        r = query_u64(e, "looking for an insert still running", sql, &running, &f);
        if (r == -EAGAIN)
                return fail_with(e, &f);
        if (r < 0)
                return r;
        if (running > 0)
                return fail(e, EXPORTER_ERROR_TIMEOUT, "an earlier insert is still running at %s; waiting for it",
                            e->url);
        return 0;
}

/* Which of drains[0..n) ClickHouse holds already (an earlier attempt
 * stored them, and its answer was lost): stored[i] set for those whose
 * samples are there, drops_stored[i] for those whose drop rows are,
 * timeline_stored[i] for those whose timeline rows are. A batch's drops,
 * its timeline and its samples are each one INSERT of one block into one
 * partition of one shard, so each drain's are there whole or not at all,
 * and the drops and the timeline go first: a drain with samples there has
 * its drops and timeline there (a drain with no drop or timeline row is
 * never found so: sending its nothing again costs nothing).
 * First makes sure no earlier insert of this host is still running, which
 * could land after the look. Returns 0, or -EAGAIN (recorded: back off),
 * -ENOMEM, -ECANCELED. */
static int drains_stored(exporter *e, const struct store_outbox_drain *drains, size_t n, bool *stored,
                         bool *drops_stored, bool *timeline_stored) {
        int r;

        r = no_insert_running(e);
        if (r < 0)
                return r;
        r = drains_in(e, "profd.samples", " AND kind IN (0, 1, 2)", drains, n, stored);
        if (r < 0)
                return r;
        r = drains_in(e, "profd.drops", "", drains, n, drops_stored);
        if (r < 0)
                return r;
        return drains_in(e, "profd.timeline", "", drains, n, timeline_stored);
}

/* Sends one statement's body, if it has rows. */
static int insert(exporter *e, const char *what, const char *statement, struct chbatch_body b, const char *qid) {
        _cleanup_free_ char *params = NULL;
        struct failure f;
        char *enc;
        int r;

        if (b.rows == 0)
                return 0;
        enc = sym_curl_easy_escape(e->curl, statement, 0);
        if (!enc)
                return -ENOMEM;
        /* synchronous: the answer comes once every shard stored its rows;
         * one block: a batch is never split into parts */
        r = asprintf(&params, "query=%s&insert_distributed_sync=1&max_insert_block_size=%zu%s%s", enc,
                     MAX(b.rows, (size_t) 1048576), qid ? "&query_id=" : "", qid ? qid : "");
        sym_curl_free(enc);
        if (r < 0)
                return -ENOMEM;
        r = http_post(e, what, params, b.data, b.len, NULL, &f);
        if (r == -EAGAIN)
                return fail_with(e, &f);
        if (r < 0)
                return r;
        pthread_mutex_lock(&e->lock);
        e->status.bytes_sent += b.len;
        pthread_mutex_unlock(&e->lock);
        return 0;
}

static int add_sample(const struct store_outbox_sample *smp, void *userdata) {
        return chbatch_add(userdata, smp);
}

/* A drain sampled at another rate than the base (a capture's raise): its
 * cpu rows are sent at the base rate, as profd's own answers count them,
 * apportioned over the drain's rows (rate_weight_apportion) so the drain's
 * total is its weighted total rounded. A first pass gathers the rows'
 * weights, the second sends them; a row in another order the second time
 * (retention packed the drain into a span in between) fails the drain,
 * which the next attempt sends whole. Rows weighted to 0 are sent as 0:
 * the timeline's ticks name them. */
struct weigh_ctx {
        chbatch *batch;
        unsigned hz, base_hz;
        struct weigh_row {
                int64_t process_id, stack_id;
                uint32_t tid;
                uint64_t fixed;
        } *rows;
        uint64_t *fixed, *whole;
        size_t n, cap, next;
};

static int weigh_gather(const struct store_outbox_sample *smp, void *userdata) {
        struct weigh_ctx *w = userdata;

        if (smp->kind != 0) /* PROFD_KIND_CPU */
                return 0;
        if (w->n == w->cap) {
                size_t cap = MAX(w->cap * 2, (size_t) 256);
                struct weigh_row *rows = reallocarray(w->rows, cap, sizeof(*rows));

                if (!rows)
                        return -ENOMEM;
                w->rows = rows;
                w->cap = cap;
        }
        w->rows[w->n++] = (struct weigh_row) { smp->process_id, smp->stack_id, smp->tid,
                                               rate_weight_fixed(smp->value, w->hz, w->base_hz) };
        return 0;
}

static int weigh_send(const struct store_outbox_sample *smp, void *userdata) {
        struct weigh_ctx *w = userdata;
        struct store_outbox_sample copy;
        const struct weigh_row *row;

        if (smp->kind != 0)
                return chbatch_add(w->batch, smp);
        row = w->next < w->n ? &w->rows[w->next] : NULL;
        if (!row || row->process_id != smp->process_id || row->stack_id != smp->stack_id || row->tid != smp->tid ||
            row->fixed != rate_weight_fixed(smp->value, w->hz, w->base_hz))
                return -ESTALE;
        copy = *smp;
        copy.value = w->whole[w->next++];
        return chbatch_add(w->batch, &copy);
}

static int add_weighted_samples(exporter *e, const struct store_outbox_drain *d, uint64_t *damaged) {
        struct weigh_ctx w = { .batch = e->batch, .hz = d->frequency_hz, .base_hz = e->base_hz };
        int r;

        r = store_outbox_samples(e->outbox, d->id, weigh_gather, &w, NULL);
        if (r >= 0 && w.n > 0) {
                w.fixed = malloc(w.n * sizeof(*w.fixed));
                w.whole = malloc(w.n * sizeof(*w.whole));
                if (!w.fixed || !w.whole)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < w.n; i++)
                        w.fixed[i] = w.rows[i].fixed;
                if (r >= 0)
                        r = rate_weight_apportion(w.fixed, w.n, w.whole);
        }
        if (r >= 0)
                r = store_outbox_samples(e->outbox, d->id, weigh_send, &w, damaged);
        if (r >= 0 && w.next != w.n)
                r = -ESTALE;
        free(w.rows);
        free(w.fixed);
        free(w.whole);
        return r;
}

static int add_drop(const char *reason, uint64_t count, void *userdata) {
        return chbatch_drop(userdata, reason, count);
}

struct tick_ctx {
        chbatch *batch;
        uint64_t unmatched;
};

static int add_tick(const struct store_outbox_tick *t, void *userdata) {
        struct tick_ctx *c = userdata;
        int r = chbatch_tick(c->batch, t);

        /* a damaged block of samples (skipped) leaves its timeline's
         * samples nothing to name: counted, not sent */
        if (r == -ENOENT) {
                c->unmatched++;
                return 0;
        }
        return r;
}

/* Drains of one batch at most, and bytes of sample rows: a backlog goes
 * in requests of a few MiB (one part per shard each, which ClickHouse
 * merges easily), and a request stays well within the timeout. */
#define BATCH_DRAINS_MAX 64
#define BATCH_BYTES_MAX (8U << 20)
_Static_assert(PENDING_BATCH <= BATCH_DRAINS_MAX, "a look at the outbox is one batch at most");

/* Sends drains[0..k) for some k >= 1 that fits in one batch (one day, the
 * limits above), skipping those ClickHouse holds already, and moves the
 * cursor past them. Returns k, or a negative errno (-EAGAIN: recorded,
 * back off). */
static int export_batch(exporter *e, const struct store_outbox_drain *drains, size_t n) {
        bool stored[PENDING_BATCH] = {}, drops_stored[PENDING_BATCH] = {}, timeline_stored[PENDING_BATCH] = {};
        size_t k = 0, sent = 0, found = 0;
        uint64_t damaged = 0;
        struct tick_ctx ticks = { .batch = e->batch };
        char qid[300], qid_drops[310], qid_timeline[310];
        int r;

        if (e->check_next) {
                r = drains_stored(e, drains, n, stored, drops_stored, timeline_stored);
                if (r < 0)
                        return r;
        }
        r = chbatch_begin(e->batch, e->host_name);
        if (r < 0)
                return r;
        for (; k < n && chbatch_samples(e->batch).len + chbatch_timeline(e->batch).len < BATCH_BYTES_MAX; k++) {
                if (stored[k]) {
                        found++;
                        continue;
                }
                r = chbatch_drain(e->batch, drains[k].start_ns, drains[k].end_ns);
                if (r == -EXDEV) /* another day: the next batch */
                        break;
                if (r >= 0) /* its timeline rows say what its samples' were weighted by */
                        r = chbatch_drain_rate(e->batch, drains[k].frequency_hz, e->base_hz);
                if (r < 0)
                        return r;
                if (e->base_hz > 0 && drains[k].frequency_hz > 0 && drains[k].frequency_hz != e->base_hz)
                        r = add_weighted_samples(e, &drains[k], &damaged);
                else
                        r = store_outbox_samples(e->outbox, drains[k].id, add_sample, e->batch, &damaged);
                if (r == -ENOENT) {
                        /* merged or deleted by retention meanwhile: counted there */
                        log_debug("ClickHouse export: drain %" PRId64 " went to retention before it was sent.",
                                  drains[k].id);
                        continue;
                }
                /* after its samples: a drain retention took has none */
                if (r >= 0 && !drops_stored[k])
                        r = store_outbox_drops(e->outbox, drains[k].id, add_drop, e->batch);
                /* after its samples, which its timeline's name */
                if (r >= 0 && !timeline_stored[k])
                        r = store_outbox_timeline(e->outbox, drains[k].id, add_tick, &ticks, &damaged);
                if (r < 0)
                        return r == -ENOMEM ? r : fail(e, EXPORTER_ERROR_LOCAL, "cannot read drain %" PRId64
                                                       " from %s: %s", drains[k].id, e->store_path, strerror(-r));
                sent++;
        }
        if (k == 0)
                return -EIO; /* cannot happen: the first drain always fits */
        batch_query_id(e, &drains[0], qid, sizeof(qid));
        /* its own id, under the same prefix: drains_stored waits for it too */
        snprintf(qid_drops, sizeof(qid_drops), "%s-drops", qid);
        snprintf(qid_timeline, sizeof(qid_timeline), "%s-timeline", qid);
        /* stacks and frames first: a sample never names a stack ClickHouse
         * lacks; sending them again is harmless */
        if ((r = insert(e, "inserting frames", chbatch_insert_frames, chbatch_frames(e->batch), NULL)) < 0 ||
            (r = insert(e, "inserting stacks", chbatch_insert_stacks, chbatch_stacks(e->batch), NULL)) < 0)
                return r;
        /* from here on a failure may leave drops, timeline or samples
         * stored; samples last (drains_stored) */
        e->check_next = true;
        r = insert(e, "inserting drops", chbatch_insert_drops, chbatch_drops(e->batch), qid_drops);
        if (r >= 0)
                r = insert(e, "inserting the timeline", chbatch_insert_timeline, chbatch_timeline(e->batch),
                           qid_timeline);
        if (r >= 0)
                r = insert(e, "inserting samples", chbatch_insert_samples, chbatch_samples(e->batch), qid);
        if (r < 0)
                return r;
        r = chbatch_commit(e->batch);
        if (r < 0)
                return r;
        /* The batch is in ClickHouse: the cursor must move, also when the
         * store's writer holds its transaction longer than the connection's
         * busy timeout (a first drain symbolizes thousands of addresses
         * inside it: seconds, more under a sanitizer). Tried again while
         * that lasts, within ACK_BUSY_TRIES timeouts and unless stopping:
         * a writer that is busy is no error of the export's. */
        r = store_outbox_ack(e->outbox, e->target, drains[k - 1].id);
        for (unsigned t = 1; r == -EBUSY && t < ACK_BUSY_TRIES && !atomic_load(&e->stopping); t++) {
                log_debug("ClickHouse export: the store is busy; moving the export cursor again (%u).", t);
                r = store_outbox_ack(e->outbox, e->target, drains[k - 1].id);
        }
        if (r < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "cannot move the export cursor in %s: %s", e->store_path,
                            strerror(-r));
        e->check_next = false;
        pthread_mutex_lock(&e->lock);
        e->status.exported_drains += sent;
        e->status.exported_samples += chbatch_samples(e->batch).rows;
        e->status.exported_stacks += chbatch_stacks(e->batch).rows;
        e->status.exported_frames += chbatch_frames(e->batch).rows;
        e->status.exported_timeline += chbatch_timeline(e->batch).rows;
        e->status.timeline_unmatched += ticks.unmatched;
        e->status.already_stored += found;
        e->status.damaged_blocks += damaged;
        e->status.acknowledged_drain_id = drains[k - 1].id;
        e->status.last_success_ns = now_realtime_ns();
        e->status.last_error_kind = -1;
        e->status.backlog_drains -= MIN(e->status.backlog_drains, (uint64_t) k);
        pthread_mutex_unlock(&e->lock);
        return (int) k;
}

/* Capture states one pass sends at most: captures come one per cool-down
 * (10 min by default), so this is days of them in one small insert; a
 * longer backlog goes in the next passes. */
#define CAPTURES_BATCH 256

/* The captures whose current state ClickHouse is not known to hold. */
struct pending_captures {
        const chcapture_sent *sent;
        struct store_capture c[CAPTURES_BATCH]; /* their strings owned (strdup) */
        size_t n;
        uint64_t waiting; /* all of them, also those beyond the batch */
};

static void pending_captures_done(struct pending_captures *p) {
        for (size_t i = 0; i < p->n; i++) {
                free((char *) p->c[i].cause);
                free((char *) p->c[i].origin);
        }
}

static int capture_pending(const struct store_capture *c, void *userdata) {
        struct pending_captures *p = userdata;
        struct store_capture *k;

        if (chcapture_sent_has(p->sent, c->id, c->state))
                return 0;
        p->waiting++;
        if (p->n == CAPTURES_BATCH)
                return 0;
        k = &p->c[p->n++];
        *k = *c;
        k->cause = strdup(c->cause);
        k->origin = strdup(c->origin);
        return k->cause && k->origin ? 0 : -ENOMEM;
}

/* Sends the captures of the store (schema 12) whose current state
 * ClickHouse does not hold (chcapture.h): after a start, or an insert whose
 * answer was lost, it first asks ClickHouse which of their states it holds
 * (by host, id and state, as drains by host and drain_end) and leaves
 * those out. A capture that changed more than once between two passes is
 * sent in its latest state only. Returns 1 when more are waiting, 0 when
 * every capture's state is in ClickHouse, or a negative errno (-EAGAIN:
 * recorded, back off). */
static int export_captures(exporter *e) {
        _cleanup_(pending_captures_done) struct pending_captures p = { .sent = e->captures_sent };
        _cleanup_free_ char *sql = NULL, *answer = NULL, *body = NULL;
        struct chbuf b = {};
        uint64_t found = 0;
        size_t rows = 0, first = SIZE_MAX;
        char qid[320];
        int r;

        r = store_capture_list(e->outbox, 0, capture_pending, &p);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "cannot read the captures from %s: %s", e->store_path,
                            strerror(-r));
        pthread_mutex_lock(&e->lock);
        e->status.captures_backlog = p.waiting;
        pthread_mutex_unlock(&e->lock);
        if (p.n == 0)
                return 0;
        if (e->captures_check) {
                int64_t ids[CAPTURES_BATCH];
                const char *bad;
                struct failure f;

                r = no_insert_running(e);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < p.n; i++)
                        ids[i] = p.c[i].id;
                r = chcapture_lookup_sql(e->host_name, ids, p.n, &sql);
                if (r < 0)
                        return r;
                r = http_post(e, "looking for captures sent before", "", sql, strlen(sql), &answer, &f);
                if (r == -EAGAIN)
                        return fail_with(e, &f);
                if (r < 0)
                        return r;
                r = chcapture_lookup_parse(e->captures_sent, answer, &bad);
                if (r == -EBADMSG)
                        return fail(e, EXPORTER_ERROR_HTTP, "looking for captures sent before: unexpected answer "
                                    "\"%.100s\" (ClickHouse at %s)", bad, e->url);
                if (r < 0)
                        return r;
                e->captures_check = false;
        }
        for (size_t i = 0; i < p.n; i++) {
                if (chcapture_sent_has(e->captures_sent, p.c[i].id, p.c[i].state)) {
                        found++;
                        continue;
                }
                r = chcapture_row(&b, e->host_name, &p.c[i]);
                body = b.data;
                if (r < 0)
                        return r == -ENOMEM ? r : fail(e, EXPORTER_ERROR_LOCAL, "capture %" PRId64 " in %s cannot "
                                                       "be exported (state %d)", p.c[i].id, e->store_path,
                                                       (int) p.c[i].state);
                if (first == SIZE_MAX)
                        first = i;
                rows++;
        }
        if (rows > 0) {
                /* under the host's prefix: no_insert_running waits for it */
                snprintf(qid, sizeof(qid), "profd-%s-captures-%" PRId64 "-%d", e->host_name, p.c[first].id,
                         (int) p.c[first].state);
                /* from here on a failure may leave the rows stored */
                e->captures_check = true;
                r = insert(e, "inserting captures", chcapture_insert,
                           (struct chbatch_body) { .data = b.data, .len = b.len, .rows = rows }, qid);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < p.n; i++) {
                        r = chcapture_sent_add(e->captures_sent, p.c[i].id, p.c[i].state);
                        if (r < 0)
                                return r; /* captures_check stays: the next pass looks them up */
                }
                e->captures_check = false;
        }
        pthread_mutex_lock(&e->lock);
        e->status.exported_captures += rows;
        e->status.captures_already_stored += found;
        e->status.captures_backlog = p.waiting - MIN(p.waiting, (uint64_t) p.n);
        pthread_mutex_unlock(&e->lock);
        return p.waiting > p.n ? 1 : 0;
}

/* One look at the outbox. Returns 1 when there may be more to send, 0 when
 * caught up, or a negative errno (-EAGAIN: recorded, back off). */
static int export_pass(exporter *e) {
        struct store_outbox_drain pending[PENDING_BATCH];
        uint64_t backlog = 0, oldest = 0, lost = 0;
        int64_t cursor;
        size_t n = 0;
        bool failing, more_captures;
        int r;

        if (!e->outbox) {
                r = store_open_outbox(e->store_path, &e->outbox);
                if (r < 0)
                        return fail(e, EXPORTER_ERROR_LOCAL, "cannot open the store %s: %s", e->store_path, strerror(-r));
        }
        r = store_outbox_cursor(e->outbox, e->target, &cursor, &lost);
        if (r >= 0)
                r = store_outbox_pending(e->outbox, cursor, ELEMENTSOF(pending), pending, &n, &backlog, &oldest);
        if (r < 0)
                return fail(e, EXPORTER_ERROR_LOCAL, "cannot read the export backlog in %s: %s", e->store_path,
                            strerror(-r));
        pthread_mutex_lock(&e->lock);
        e->status.backlog_drains = backlog;
        e->status.backlog_oldest_ns = oldest;
        e->status.lost_by_retention = lost;
        e->status.acknowledged_drain_id = cursor;
        failing = e->status.last_error_kind >= 0;
        pthread_mutex_unlock(&e->lock);
        if (!e->credentials_read && (r = read_credentials(e)) < 0)
                return r;
        if (!e->schema_ok && (r = check_schema(e)) < 0)
                return r;
        /* captures first: a few rows at most, and the fleet's series marks
         * them while a backlog of drains is still on its way */
        r = export_captures(e);
        if (r < 0) {
                if (e->status.last_error_kind == EXPORTER_ERROR_SCHEMA)
                        e->schema_ok = false;
                return r;
        }
        more_captures = r > 0;
        if (n == 0 && more_captures)
                return 1;
        if (n == 0) {
                pthread_mutex_lock(&e->lock);
                e->status.state = "caught_up";
                e->status.last_error_kind = -1; /* ClickHouse answered, nothing is waiting */
                pthread_mutex_unlock(&e->lock);
                return 0;
        }
        set_state(e, "sending");
        r = export_batch(e, pending, n);
        if (r < 0) {
                /* an insert refused for the schema: look at it again */
                if (e->status.last_error_kind == EXPORTER_ERROR_SCHEMA)
                        e->schema_ok = false;
                return r;
        }
        if (failing) {
                log_info("ClickHouse export to %s works again; %" PRIu64 " drains to catch up.", e->url,
                         backlog > (uint64_t) r ? backlog - (uint64_t) r : 0);
                e->logged[0] = '\0';
        }
        return 1;
}

/* The backlog as status shows it, read again (while backing off, so
 * status follows the drains being stored). */
static void refresh_backlog(exporter *e) {
        struct store_outbox_drain first;
        uint64_t backlog, oldest, lost;
        int64_t cursor;
        size_t n;

        if (!e->outbox || store_outbox_cursor(e->outbox, e->target, &cursor, &lost) < 0 ||
            store_outbox_pending(e->outbox, cursor, 1, &first, &n, &backlog, &oldest) < 0)
                return;
        pthread_mutex_lock(&e->lock);
        e->status.backlog_drains = backlog;
        e->status.backlog_oldest_ns = oldest;
        e->status.lost_by_retention = lost;
        pthread_mutex_unlock(&e->lock);
}

/* Sets the next look at the outbox ns from now (0: at once). Returns 0 or
 * a negative errno. */
static int due_in(exporter *e, uint64_t ns) {
        int r;

        r = sd_event_source_set_time(e->due_timer, (now_monotonic_ns() + ns) / NSEC_PER_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(e->due_timer, SD_EVENT_ONESHOT);
        return r;
}

/* A look at the outbox is due: one pass, then when the next one is. More
 * to send: at once (a wake-up or stop waiting meanwhile is seen first);
 * caught up: after IDLE_CHECK_NS or a wake-up; failed: after the back-off,
 * doubling from BACKOFF_MIN_NS to BACKOFF_MAX_NS, which wake-ups do not
 * shorten. */
static int on_due(sd_event_source *s, uint64_t usec, void *userdata) {
        exporter *e = userdata;
        uint64_t n;
        int r;

        if (atomic_load(&e->stopping))
                return 0;
        /* the end of a back-off shows the backlog as it is now */
        if (e->backing_off)
                refresh_backlog(e);
        e->backing_off = false;
        /* what the wake-ups so far ask for is looked at now */
        (void) eventfd_read(e->wake_fd, &n);
        r = export_pass(e);
        if (r == -ECANCELED)
                return 0; /* stopping: loopthread_stop ends the loop */
        if (r < 0) {
                if (r != -EAGAIN)
                        (void) fail(e, EXPORTER_ERROR_LOCAL, "%s", strerror(-r));
                e->backoff_ns = e->backoff_ns ? MIN(e->backoff_ns * 2, BACKOFF_MAX_NS) : BACKOFF_MIN_NS;
                e->backing_off = true;
                r = due_in(e, e->backoff_ns);
        } else {
                e->backoff_ns = 0;
                r = due_in(e, r == 0 ? IDLE_CHECK_NS : 0);
        }
        if (r < 0)
                log_error_errno(r, "ClickHouse export: cannot set its timer, export stops: %m");
        return r;
}

/* A drain was stored. While backing off it only updates the backlog
 * (drains stored meanwhile wait for the back-off); otherwise the outbox is
 * looked at now. */
static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        exporter *e = userdata;
        uint64_t n;
        int r;

        /* nothing to read: the pass that began since took this wake-up */
        if (read(fd, &n, sizeof(n)) != sizeof(n))
                return 0;
        if (e->backing_off) {
                refresh_backlog(e);
                return 0;
        }
        r = due_in(e, 0);
        if (r < 0)
                log_error_errno(r, "ClickHouse export: cannot set its timer, export stops: %m");
        return r;
}

static void exporter_done(void *userdata) {
        exporter *e = userdata;

        e->wake_source = sd_event_source_disable_unref(e->wake_source);
        e->due_timer = sd_event_source_disable_unref(e->due_timer);
}

/* On the export thread: its sources, and the first look at once. */
static int exporter_setup(sd_event *event, void *userdata) {
        exporter *e = userdata;
        int r;

        r = sd_event_add_io(event, &e->wake_source, e->wake_fd, EPOLLIN, on_wake, e);
        if (r < 0)
                return r;
        /* accuracy 1 µs: a back-off or idle check is due when it says,
         * not within sd-event's default 250 ms */
        r = sd_event_add_time(event, &e->due_timer, CLOCK_MONOTONIC, 0, 1, on_due, e);
        if (r < 0)
                exporter_done(e); /* no loop runs, so nothing else drops them */
        return r;
}

int exporter_new(const struct conf *cfg, exporter **ret) {
        exporter *e;
        int r;

        if (!chbatch_host_name_valid(cfg->host_name))
                return log_error_errno(-EINVAL, "host_name \"%s\" is not a plain host name.", cfg->host_name);
        /* loaded here, not linked: hosts that export nothing do not map
         * libcurl and its TLS libraries (dynlib.h); before any thread, as
         * curl_global_init is not thread-safe */
        r = curl_dl_open();
        if (r < 0)
                return r;
        e = calloc(1, sizeof(*e));
        if (!e)
                return log_oom();
        e->wake_fd = -1;
        e->url = strdup(cfg->clickhouse_url);
        e->host_name = strdup(cfg->host_name);
        e->base_hz = cfg->kind_cpu ? cfg->frequency_hz : 0;
        e->store_path = strdup(cfg->store_path);
        e->credentials_path = cfg->clickhouse_credentials ? strdup(cfg->clickhouse_credentials) : NULL;
        e->timeout_ns = cfg->clickhouse_timeout_ns;
        e->status.state = "starting";
        e->status.last_error_kind = -1;
        /* at start the first drain after the cursor may have been stored by
         * the previous run, its acknowledgement lost with it */
        e->check_next = true;
        e->captures_check = true;
        if (!e->url || !e->host_name || !e->store_path || (cfg->clickhouse_credentials && !e->credentials_path) ||
            asprintf(&e->target, "%s %s", cfg->host_name, cfg->clickhouse_url) < 0) {
                e->target = NULL;
                exporter_free(e);
                return log_oom();
        }
        pthread_mutex_init(&e->lock, NULL);
        e->lock_made = true;
        e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->wake_fd < 0) {
                r = -errno;
                exporter_free(e);
                return log_error_errno(r, "Failed to create the export thread's eventfd: %m");
        }
        e->curl = sym_curl_easy_init();
        r = e->curl ? chbatch_new(&e->batch) : -ENOMEM;
        if (r >= 0)
                r = chcapture_sent_new(&e->captures_sent);
        if (r < 0) {
                exporter_free(e);
                return log_oom();
        }
        r = loopthread_start("profd-export", exporter_setup, exporter_done, e, &e->thread);
        if (r < 0) {
                exporter_free(e);
                return log_error_errno(r, "Failed to start the export thread: %m");
        }
        log_info("Exporting drains to ClickHouse at %s as host %s.", e->url, e->host_name);
        *ret = e;
        return 0;
}

exporter *exporter_free(exporter *e) {
        if (!e)
                return NULL;
        /* first: a transfer in flight ends at its next progress call */
        atomic_store(&e->stopping, true);
        e->thread = loopthread_stop(e->thread);
        if (e->lock_made)
                pthread_mutex_destroy(&e->lock);
        if (e->wake_fd >= 0)
                close(e->wake_fd);
        if (e->curl)
                sym_curl_easy_cleanup(e->curl);
        chbatch_free(e->batch);
        chcapture_sent_free(e->captures_sent);
        store_close(e->outbox);
        free(e->url);
        free(e->host_name);
        free(e->credentials_path);
        free(e->store_path);
        free(e->target);
        free(e->user);
        if (e->password)
                explicit_bzero(e->password, strlen(e->password));
        free(e->password);
        free(e);
        return NULL;
}

void exporter_wake(exporter *e) {
        uint64_t one = 1;

        /* non-blocking: a count already near its maximum is a wake-up too */
        (void) eventfd_write(e->wake_fd, one);
}

void exporter_get_status(exporter *e, struct exporter_status *ret) {
        pthread_mutex_lock(&e->lock);
        *ret = e->status;
        pthread_mutex_unlock(&e->lock);
}
