/* Unix-socket client with a growing line buffer for profd's JSON lines. */
#include "conn.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "fleet.h"
#include "protocol.h"
#include "util.h"

/* Most lines are short status or stack lines; this fits a deep stack of long
 * C++ names without regrowing, and the buffer doubles for anything larger. */
#define CONN_BUFFER_INITIAL (64 * 1024)

struct conn {
        int fd;
        char *path;     /* for messages */
        char *buf;
        size_t size;    /* allocated bytes of buf */
        size_t start;   /* first byte not yet returned as a line */
        size_t end;     /* one past the last byte received */
        size_t scanned; /* buf[start..scanned) is known to hold no newline */
        fleet *fleet;   /* not a socket: requests are answered from ClickHouse (fleet.h) */
};

conn *conn_free(conn *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        fleet_free(c->fleet);
        free(c->path);
        free(c->buf);
        free(c);
        return NULL;
}

int conn_open(const char *path, conn **ret) {
        _cleanup_conn_ conn *c = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = CONN_TIMEOUT_SEC };
        size_t len = strlen(path);
        int r;

        if (len == 0 || len >= sizeof(sa.sun_path))
                return cli_error(-ENAMETOOLONG, "cannot connect to %s: %s", path,
                                 len == 0 ? "empty socket path" : "path too long for a Unix socket");
        memcpy(sa.sun_path, path, len);

        c = calloc(1, sizeof(*c));
        if (!c)
                return cli_error(-ENOMEM, "%m");
        c->fd = -1;
        c->path = strdup(path);
        if (!c->path)
                return cli_error(-ENOMEM, "%m");

        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                return cli_error(negative_errno(), "cannot create a socket: %m");

        /* The send timeout also bounds connect() when profd's listen backlog
         * is full; the receive timeout bounds every wait for an answer. */
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return cli_error(negative_errno(), "cannot set socket timeouts: %m");

        /* A Unix stream connect interrupted by a signal (SIGSTOP/SIGCONT with a
         * timeout set) leaves the socket unconnected, so trying again is
         * correct. */
        do
                r = connect(c->fd, (const struct sockaddr *) &sa,
                            (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + 1));
        while (r < 0 && errno == EINTR);
        if (r < 0) {
                r = negative_errno();
                if (r == -EAGAIN)
                        return cli_error(-ETIMEDOUT, "cannot connect to %s: profd did not accept "
                                         "the connection within %d s", path, CONN_TIMEOUT_SEC);
                if (r == -EACCES || r == -EPERM)
                        return cli_error(r, "cannot connect to %s: %m (profd's socket is usually "
                                         "only open to root)", path);
                return cli_error(r, "cannot connect to %s: %m (is profd running?)", path);
        }

        *ret = TAKE_PTR(c);
        return 0;
}

int conn_open_fleet(fleet *f, conn **ret) {
        _cleanup_conn_ conn *c = calloc(1, sizeof(*c));

        if (!c) {
                fleet_free(f);
                return cli_error(-ENOMEM, "%m");
        }
        c->fd = -1;
        c->fleet = f;
        *ret = TAKE_PTR(c);
        return 0;
}

/* The fleet's whole answer goes into the buffer, read as lines from there. */
static int conn_send_fleet(conn *c, const json_t *request) {
        _cleanup_free_ char *text = NULL;
        struct timespec ts;
        size_t len;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        r = fleet_answer(c->fleet, request, (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec, &text,
                         &len);
        if (r < 0)
                return r;
        if (c->start == c->end) {
                /* nothing left unread: the answer becomes the buffer (tens
                 * of megabytes are not copied) */
                free(c->buf);
                c->buf = TAKE_PTR(text);
                c->size = len;
                c->start = c->scanned = 0;
                c->end = len;
                return 0;
        }
        while (c->end + len > c->size) {
                size_t size = MAX(c->size * 2, c->end + len);
                char *buf = realloc(c->buf, size);

                if (!buf)
                        return cli_error(-ENOMEM, "cannot buffer the fleet's answer: %m");
                c->buf = buf;
                c->size = size;
        }
        memcpy(c->buf + c->end, text, len);
        c->end += len;
        return 0;
}

int conn_send(conn *c, const json_t *request) {
        _cleanup_free_ char *text = NULL;
        size_t len, done = 0;

        if (c->fleet)
                return conn_send_fleet(c, request);

        text = json_dumps(request, JSON_COMPACT);
        if (!text)
                return cli_error(-ENOMEM, "cannot encode the request: %m");
        /* json_dumps escapes control characters, so the only newline is the
         * one that ends the request line; it takes the NUL's place because
         * the buffer is sent by length */
        len = strlen(text);
        text[len++] = '\n';

        while (done < len) {
                /* MSG_NOSIGNAL: a daemon that went away is an error message,
                 * not a silent death by SIGPIPE */
                ssize_t n = send(c->fd, text + done, len - done, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return cli_error(-ETIMEDOUT, "profd at %s did not take the request "
                                                 "within %d s", c->path, CONN_TIMEOUT_SEC);
                        return cli_error(negative_errno(), "cannot send the request to %s: %m", c->path);
                }
                done += (size_t) n;
        }
        return 0;
}

/* Makes room for at least one more byte after c->end: first by moving the
 * unreturned bytes to the front, then by doubling. Lines have no length limit
 * here; their size is up to the daemon (a stack line grows with its depth). */
static int conn_make_room(conn *c) {
        if (c->start > 0) {
                memmove(c->buf, c->buf + c->start, c->end - c->start);
                c->end -= c->start;
                c->scanned -= c->start;
                c->start = 0;
        }
        if (c->end < c->size)
                return 0;

        size_t size = c->size ? c->size * 2 : CONN_BUFFER_INITIAL;
        if (size < c->size)
                return cli_error(-ENOMEM, "response line from profd too long");
        char *buf = realloc(c->buf, size);
        if (!buf)
                return cli_error(-ENOMEM, "cannot buffer a response line from profd: %m");
        c->buf = buf;
        c->size = size;
        return 0;
}

/* Returns the next line, NUL-terminated in place of its newline. */
static int conn_read_line(conn *c, char **ret_line, size_t *ret_len) {
        for (;;) {
                /* Nothing unscanned before the first recv(): buf is still NULL
                 * then, and memchr() on NULL is undefined even for 0 bytes. */
                char *nl = c->end > c->scanned ?
                        memchr(c->buf + c->scanned, '\n', c->end - c->scanned) : NULL;
                ssize_t n;
                int r;

                if (nl) {
                        *nl = '\0';
                        *ret_line = c->buf + c->start;
                        *ret_len = (size_t) (nl - (c->buf + c->start));
                        c->start = c->scanned = (size_t) (nl - c->buf) + 1;
                        return 0;
                }
                c->scanned = c->end;
                /* a fleet's answer is all there: no more lines */
                if (c->fleet)
                        return cli_error(-ECONNRESET, "the fleet's answer ended early");

                r = conn_make_room(c);
                if (r < 0)
                        return r;
                n = recv(c->fd, c->buf + c->end, c->size - c->end, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return cli_error(-ETIMEDOUT, "profd at %s sent nothing for %d s, "
                                                 "giving up", c->path, CONN_TIMEOUT_SEC);
                        return cli_error(negative_errno(), "cannot read from %s: %m", c->path);
                }
                if (n == 0) {
                        if (c->end > c->start)
                                return cli_error(-ECONNRESET, "profd closed the connection in the "
                                                 "middle of a response line");
                        return cli_error(-ECONNRESET, "profd closed the connection before "
                                         "finishing its answer");
                }
                c->end += (size_t) n;
        }
}

/* A plain folded stack line (stackline_parse_plain_folded) as the object
 * a JSON parser would make of it; NULL for any other line, or when out of
 * memory (the JSON parser then says so). */
static json_t *conn_plain_folded_line(const char *raw, size_t len) {
        _cleanup_json_ json_t *line = NULL;
        const char *text;
        size_t text_len;
        uint64_t value;

        if (!stackline_parse_plain_folded(raw, len, &value, &text, &text_len))
                return NULL;
        line = json_object();
        if (!line || json_object_set_new(line, PROTO_KEY_TYPE, json_string(PROTO_TYPE_STACK)) < 0 ||
            json_object_set_new(line, PROTO_KEY_VALUE, json_integer((json_int_t) value)) < 0 ||
            /* printable ASCII: UTF-8 already */
            json_object_set_new(line, PROTO_KEY_FOLDED, json_stringn_nocheck(text, text_len)) < 0)
                return NULL;
        return TAKE_PTR(line);
}

int conn_read_response(conn *c, json_t **ret_line, const char **ret_type,
                       const char **ret_raw, size_t *ret_raw_len) {
        _cleanup_json_ json_t *line = NULL;
        json_error_t error;
        const char *type;
        char *raw = NULL;
        size_t len = 0;
        int r;

        r = conn_read_line(c, &raw, &len);
        if (r < 0)
                return r;

        line = conn_plain_folded_line(raw, len);
        if (!line)
                line = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &error);
        if (!line)
                return cli_error(-EBADMSG, "profd sent malformed JSON (column %d): %s",
                                 error.column, error.text);
        if (!json_is_object(line))
                return cli_error(-EBADMSG, "profd sent a JSON line that is not an object");
        type = json_string_value(json_object_get(line, "type"));
        if (!type)
                return cli_error(-EBADMSG, "profd sent a line without a string \"type\"");

        if (streq(type, "error")) {
                const char *msg = json_string_value(json_object_get(line, "error"));
                if (!msg)
                        return cli_error(-EBADMSG, "profd sent an 'error' line without a string \"error\"");
                return cli_error(-EREMOTEIO, "%s", msg);
        }

        *ret_type = type;
        *ret_raw = raw;
        *ret_raw_len = len;
        *ret_line = TAKE_PTR(line);
        return 0;
}
