/* Unix socket server on sd-event: one io source per client, non-blocking
 * reads and writes, per-client input limit. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

/* Beyond this many queued response bytes we stop reading new requests from
 * the client until it has read some: its own backlog, not the daemon's. */
#define CLIENT_OUTPUT_HIGH_WATER (4u * 1024 * 1024)
/* A client that leaves this much unread is disconnected: a response larger
 * than this is streamed only to a client that keeps reading, and one that
 * stops can't make the daemon hold more than this for it. */
#define CLIENT_OUTPUT_LIMIT (64u * 1024 * 1024)

struct server_client {
        server *server;
        server_client *prev, *next;
        int fd;
        sd_event_source *io;
        sd_event_source *idle;  /* closes the client after the idle timeout */
        sd_event_source *more;  /* answers its next buffered request */
        struct client_creds creds;
        char *in;          /* unparsed input */
        size_t in_len;
        char *out;         /* queued output */
        size_t out_len, out_off, out_cap;
        bool closing;      /* close once output is flushed */
        bool dead;         /* close now: it left too much unread */
        bool deferred;     /* waiting for a deferred answer: read no further */
        uint64_t id;
        /* whoever streams a deferred answer (daemon/serve/query.c): told when the
         * client took output, and when it is gone */
        server_client_hook_fn writable_hook, gone_hook;
        void *hook_userdata;
};

struct server {
        sd_event *event;
        int fd;
        char *path;
        sd_event_source *io;
        server_request_fn handler;
        void *userdata;
        server_client *clients;
        size_t n_clients;
        unsigned max_clients;
        uint64_t idle_timeout_usec;
        gid_t admin_gid;
        bool have_admin_gid;
        bool adopted;      /* passed by systemd: its socket unit owns the file */
        uint64_t next_client_id;
};

static void client_free(server_client *c) {
        if (!c)
                return;
        if (c->gone_hook)
                c->gone_hook(c, c->hook_userdata);
        if (c->prev)
                c->prev->next = c->next;
        else
                c->server->clients = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->server->n_clients--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->idle);
        sd_event_source_disable_unref(c->more);
        /* Closing with unread input makes the kernel reset the connection,
         * which can destroy a last error line on its way: say we are done,
         * and discard what the client sent that was not read. */
        (void) shutdown(c->fd, SHUT_WR);
        for (char buf[4096]; recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0;)
                ;
        safe_close(c->fd);
        free(c->in);
        free(c->out);
        free(c);
}

static bool client_has_line(const server_client *c) {
        return c->in_len > 0 && memchr(c->in, '\n', c->in_len);
}

static void client_update_events(server_client *c) {
        uint32_t events = 0;

        /* waiting for a deferred answer: not even a hangup is of interest
         * until it is sent (the answer may still find a half-closed peer) */
        if (c->deferred) {
                /* except to write what a streamed answer has queued so far */
                if (c->out_len > c->out_off) {
                        (void) sd_event_source_set_io_events(c->io, EPOLLOUT);
                        (void) sd_event_source_set_enabled(c->io, SD_EVENT_ON);
                } else
                        (void) sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
                return;
        }
        if (!c->closing && c->out_len - c->out_off < CLIENT_OUTPUT_HIGH_WATER && !client_has_line(c))
                events |= EPOLLIN;
        if (c->out_len > c->out_off)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, events);
        (void) sd_event_source_set_enabled(c->io, SD_EVENT_ON);
}

/* The client made progress (sent or read something): restart its idle timer. */
static void client_touch(server_client *c) {
        if (c->idle) {
                (void) sd_event_source_set_time_relative(c->idle, c->server->idle_timeout_usec);
                (void) sd_event_source_set_enabled(c->idle, SD_EVENT_ONESHOT);
        }
}

/* Writes what the socket takes now. Returns 0, or a negative errno when the
 * client is gone. */
static int client_flush(server_client *c) {
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        return negative_errno();
                }
                c->out_off += n;
                client_touch(c);
        }
        if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        return 0;
}

static int client_append(server_client *c, const char *data, size_t n) {
        if (c->out_off > 0 && c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        if (c->out_len + n > c->out_cap) {
                size_t cap = MAX(c->out_cap * 2, c->out_len + n);
                char *o = realloc(c->out, cap);
                if (!o)
                        return -ENOMEM;
                c->out = o;
                c->out_cap = cap;
        }
        memcpy(c->out + c->out_len, data, n);
        c->out_len += n;
        return 0;
}

int server_client_send(server_client *c, json_t *obj) {
        char *s;
        int r;

        if (!obj)
                return -ENOMEM;
        if (c->dead) {
                json_decref(obj);
                return -ENOBUFS;
        }
        if (c->out_len - c->out_off > CLIENT_OUTPUT_LIMIT) {
                json_decref(obj);
                log_warning("Client pid %d (uid %u) left more than %u MiB of answers unread, disconnecting it.",
                            (int) c->creds.pid, (unsigned) c->creds.uid, CLIENT_OUTPUT_LIMIT >> 20);
                c->dead = true;
                return -ENOBUFS;
        }
        s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(obj);
        if (!s)
                return -ENOMEM;
        r = client_append(c, s, strlen(s));
        free(s);
        if (r >= 0)
                r = client_append(c, "\n", 1);
        /* start pushing now: a long stream should not all sit in memory */
        if (r >= 0 && c->out_len - c->out_off >= 64 * 1024)
                (void) client_flush(c);
        return r;
}

int server_client_send_error(server_client *c, const char *message) {
        return server_client_send(c, json_pack("{s:s, s:s}", "type", "error", "error", message));
}

static void client_handle_line(server_client *c, const char *line, size_t len) {
        _cleanup_free_ char *error = NULL;
        struct request req;
        int r;

        if (len == 0)
                return; /* blank lines are keep-alives, not requests */
        r = request_parse(line, len, &req, &error);
        if (r == -ENOMEM) {
                (void) server_client_send_error(c, "out of memory");
                return;
        }
        if (r < 0) {
                (void) server_client_send_error(c, error);
                return;
        }
        r = c->server->handler(c, &req, c->server->userdata);
        request_done(&req);
        if (r == SERVER_DEFERRED) {
                c->deferred = true;
                return;
        }
        if (r < 0 && !c->dead) {
                _cleanup_free_ char *msg = NULL;
                log_warning_errno(r, "Request failed: %m");
                if (asprintf(&msg, "request failed: %s", strerror(-r)) < 0)
                        msg = NULL;
                (void) server_client_send_error(c, msg ? msg : "request failed");
        }
}

/* Answers the first complete line in the input buffer, if the client may be
 * answered now, and arranges for the next one to be answered in a later
 * loop iteration: one request per iteration, so a due drain never waits for
 * a client's whole backlog of requests. */
static void client_process_lines(server_client *c) {
        char *nl;
        size_t len;

        if (c->deferred || c->dead || c->out_len - c->out_off >= CLIENT_OUTPUT_HIGH_WATER || !client_has_line(c))
                return;
        nl = memchr(c->in, '\n', c->in_len);
        len = nl - c->in;
        client_handle_line(c, c->in, len);
        memmove(c->in, nl + 1, c->in_len - len - 1);
        c->in_len -= len + 1;
        if (c->more && client_has_line(c))
                (void) sd_event_source_set_enabled(c->more, SD_EVENT_ONESHOT);
}

/* Done with a client that stopped sending: all answered and written. */
static bool client_finished(const server_client *c) {
        return c->closing && !c->deferred && c->out_len == c->out_off &&
               (c->in_len == 0 || !memchr(c->in, '\n', c->in_len));
}

/* Reads what is available and answers every complete line. */
static int client_read(server_client *c) {
        /* requests still waiting are answered first: input stays bounded */
        while (!c->closing && !c->deferred && !c->dead && !client_has_line(c)) {
                char buf[16384];
                ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        return negative_errno();
                }
                if (n == 0) {
                        /* the client is done sending; answer what it sent, then close */
                        c->closing = true;
                        return 0;
                }
                client_touch(c);

                char *in = realloc(c->in, c->in_len + n);
                if (!in)
                        return -ENOMEM;
                c->in = in;
                memcpy(c->in + c->in_len, buf, n);
                c->in_len += n;

                if (c->in_len > REQUEST_MAX_BYTES && !client_has_line(c)) {
                        /* no newline within the limit: the rest can't be framed */
                        (void) server_client_send_error(c, "request line longer than 65536 bytes; closing");
                        c->closing = true;
                        return 0;
                }
        }
        return 0;
}

static int client_after_progress(server_client *c, int r) {
        if (r >= 0 && !c->dead)
                r = client_flush(c);
        if (r < 0 || c->dead || client_finished(c)) {
                if (r < 0 && r != -ECONNRESET && r != -EPIPE)
                        log_debug_errno(r, "Client connection failed: %m");
                client_free(c);
                return 0;
        }
        client_update_events(c);
        return 0;
}

static int client_more(sd_event_source *s, void *userdata) {
        server_client *c = userdata;

        client_process_lines(c);
        return client_after_progress(c, 0);
}

static int client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        server_client *c = userdata;
        int r = 0;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
                r = client_read(c);
        if (r >= 0 && !c->dead)
                r = client_flush(c);
        /* a streamed answer may go on now that the client took some */
        if (r >= 0 && !c->dead && c->writable_hook)
                c->writable_hook(c, c->hook_userdata);
        /* it read some: requests left waiting behind its backlog go on */
        if (r >= 0 && !c->dead)
                client_process_lines(c);
        return client_after_progress(c, r);
}

static int client_idle_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        server_client *c = userdata;
        char msg[128];

        /* waiting for its answer (queued behind other queries, or a flush),
         * with nothing unread: it is us it waits for, not idle */
        if (c->deferred && c->out_len == c->out_off) {
                client_touch(c);
                return 0;
        }

        snprintf(msg, sizeof(msg), "no request or read for %" PRIu64 " ms, closing the connection",
                 c->server->idle_timeout_usec / 1000);
        /* a last word if the socket takes it; unread output goes with the client */
        (void) server_client_send_error(c, msg);
        (void) client_flush(c);
        client_free(c);
        return 0;
}

static bool in_groups(gid_t g, const gid_t *groups, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (groups[i] == g)
                        return true;
        return false;
}

/* Reads who is on the other end. Supplementary groups come from
 * SO_PEERGROUPS, so membership of the admin group counts however it was
 * granted. */
static int peer_creds(server *srv, int fd, struct client_creds *ret) {
        struct ucred uc;
        socklen_t len = sizeof(uc);
        _cleanup_free_ gid_t *groups = NULL;
        size_t n_groups = 0;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return negative_errno();
        if (srv->have_admin_gid) {
                socklen_t glen = 64 * sizeof(gid_t);
                for (;;) {
                        gid_t *g = realloc(groups, glen);
                        if (!g)
                                return -ENOMEM;
                        groups = g;
                        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
                                break;
                        if (errno != ERANGE)
                                return negative_errno();
                }
                n_groups = glen / sizeof(gid_t);
        }
        *ret = (struct client_creds) {
                .uid = uc.uid,
                .gid = uc.gid,
                .pid = uc.pid,
                .privileged = uc.uid == 0 || (srv->have_admin_gid && (uc.gid == srv->admin_gid ||
                                                                     in_groups(srv->admin_gid, groups, n_groups))),
        };
        return 0;
}

static void refuse(int fd, const char *why) {
        _cleanup_free_ char *line = NULL;
        json_t *o = json_pack("{s:s, s:s}", "type", "error", "error", why);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

        json_decref(o);
        if (s && asprintf(&line, "%s\n", s) >= 0)
                (void) send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
        free(s);
        close(fd);
}

static int server_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        server *srv = userdata;
        struct client_creds creds;
        server_client *c;
        int cfd, r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        log_warning_errno(negative_errno(), "Failed to accept a client, ignoring: %m");
                return 0;
        }
        if (srv->n_clients >= srv->max_clients) {
                char why[128];
                snprintf(why, sizeof(why), "too many clients: profd serves at most %u at once (max_clients)",
                         srv->max_clients);
                refuse(cfd, why);
                log_debug("Refused a client: %u connected already.", srv->max_clients);
                return 0;
        }
        r = peer_creds(srv, cfd, &creds);
        if (r < 0) {
                log_warning_errno(r, "Failed to read a client's credentials, refusing it: %m");
                refuse(cfd, "cannot read your credentials");
                return 0;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(cfd);
                return log_oom(), 0;
        }
        c->server = srv;
        c->fd = cfd;
        c->creds = creds;
        c->id = ++srv->next_client_id;
        r = sd_event_add_io(srv->event, &c->io, cfd, EPOLLIN, client_io, c);
        if (r >= 0)
                r = sd_event_add_time_relative(srv->event, &c->idle, CLOCK_MONOTONIC, srv->idle_timeout_usec,
                                               0, client_idle_timeout, c);
        if (r >= 0) {
                r = sd_event_add_defer(srv->event, &c->more, client_more, c);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->more, SD_EVENT_OFF);
        }
        if (r < 0) {
                sd_event_source_disable_unref(c->io);
                sd_event_source_disable_unref(c->idle);
                sd_event_source_disable_unref(c->more);
                close(cfd);
                free(c);
                log_warning_errno(r, "Failed to watch a client, ignoring: %m");
                return 0;
        }
        c->next = srv->clients;
        if (srv->clients)
                srv->clients->prev = c;
        srv->clients = c;
        srv->n_clients++;
        return 0;
}

/* Takes the listening socket systemd passed (profd.socket, or
 * systemd-socket-activate), if any: returns its fd, 0 when none was passed
 * (LISTEN_FDS unset or for another process), or a negative errno when what
 * was passed is not one listening Unix stream socket. */
static int passed_socket(void) {
        int n, fd = SD_LISTEN_FDS_START, r;

        /* unsets LISTEN_FDS: helpers profd might start must not take it */
        n = sd_listen_fds(true);
        if (n < 0)
                return log_error_errno(n, "Failed to read the sockets passed by systemd: %m");
        if (n == 0)
                return 0;
        if (n > 1)
                return log_error_errno(EINVAL, "systemd passed %d sockets; profd takes one, its query socket "
                                               "(one ListenStream= in profd.socket).", n);
        r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to check the socket passed by systemd: %m");
        if (r == 0)
                return log_error_errno(EINVAL, "The socket passed by systemd is not a listening Unix stream socket "
                                               "(profd.socket needs ListenStream=/path).");
        /* passed without these; profd's other fds all have them */
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
                return log_error_errno(negative_errno(), "Failed to set up the socket passed by systemd: %m");
        return fd;
}

/* A group name to its gid; -ENOENT when there is no such group. */
static int group_gid(const char *name, gid_t *ret) {
        struct group *g;

        errno = 0;
        g = getgrnam(name);
        if (!g)
                return errno ? negative_errno() : -ENOENT;
        *ret = g->gr_gid;
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(server *, server_free);

/* Takes the socket systemd passed (fd): its path, owner and mode are the
 * socket unit's. profd neither moves, changes nor removes it (the socket
 * must outlive profd's restarts), and the socket settings (socket,
 * socket_mode, socket_group) do not apply. Returns 0 or -ENOMEM, logged. */
static int server_adopt(server *s, int fd) {
        struct sockaddr_un bound = {};
        socklen_t len = sizeof(bound);

        s->fd = fd;
        s->adopted = true;
        if (getsockname(s->fd, (struct sockaddr *) &bound, &len) == 0 && len > offsetof(struct sockaddr_un, sun_path) &&
            bound.sun_path[0])
                s->path = strndup(bound.sun_path, len - offsetof(struct sockaddr_un, sun_path));
        else
                s->path = strdup("(socket passed by systemd)");
        if (!s->path)
                return log_oom();
        log_info("Answering on %s, the socket passed by systemd.", s->path);
        return 0;
}

/* Makes, binds and opens the socket at cfg->socket_path, owned by root and
 * socket_group with socket_mode. Returns 0 or a negative errno, logged. */
static int server_listen(server *s, const struct conf *cfg, const struct sockaddr_un *sa) {
        const char *path = cfg->socket_path;
        gid_t socket_gid = 0;
        struct stat st;

        if (cfg->socket_group && group_gid(cfg->socket_group, &socket_gid) < 0) {
                log_notice("Group '%s' not found: socket %s stays root's (mode %04o), only root can query. "
                           "Create the group to let its members in.",
                           cfg->socket_group, path, (unsigned) cfg->socket_mode);
                socket_gid = 0;
        }

        s->path = strdup(path);
        if (!s->path)
                return log_oom();
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->fd < 0)
                return log_error_errno(negative_errno(), "Failed to create socket: %m");
        /* A socket file left by a previous run would make bind fail. Only a
         * socket is removed, never another kind of file. */
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void) unlink(path);
        if (bind(s->fd, (const struct sockaddr *) sa, sizeof(*sa)) < 0)
                return log_error_errno(negative_errno(), "Failed to bind socket %s: %m", path);
        if (chown(path, 0, socket_gid) < 0)
                return log_error_errno(negative_errno(), "Failed to give socket %s to its group: %m", path);
        if (chmod(path, cfg->socket_mode) < 0)
                return log_error_errno(negative_errno(), "Failed to set the mode of socket %s: %m", path);
        if (listen(s->fd, SOMAXCONN) < 0)
                return log_error_errno(negative_errno(), "Failed to listen on socket %s: %m", path);
        return 0;
}

int server_new(sd_event *event, const struct conf *cfg, server_request_fn handler, void *userdata,
               server **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *path = cfg->socket_path;
        _cleanup_(server_freep) server *s = NULL;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path %s is too long (at most %zu bytes).", path,
                                       sizeof(sa.sun_path) - 1);
        strcpy(sa.sun_path, path);

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->fd = -1;
        s->max_clients = cfg->max_clients;
        s->idle_timeout_usec = cfg->client_timeout_ns / NSEC_PER_USEC;
        if (cfg->admin_group) {
                r = group_gid(cfg->admin_group, &s->admin_gid);
                if (r < 0)
                        log_warning_errno(r, "Admin group '%s' not found (%m): only root sees every process.",
                                          cfg->admin_group);
                s->have_admin_gid = r >= 0;
        }
        s->event = sd_event_ref(event);
        s->handler = handler;
        s->userdata = userdata;

        r = passed_socket();
        if (r < 0)
                return r;
        r = r > 0 ? server_adopt(s, r) : server_listen(s, cfg, &sa);
        if (r < 0)
                return r;
        r = sd_event_add_io(event, &s->io, s->fd, EPOLLIN, server_accept, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch socket %s: %m", s->path);
        *ret = TAKE_PTR(s);
        return 0;
}

server *server_free(server *s) {
        if (!s)
                return NULL;
        while (s->clients)
                client_free(s->clients);
        sd_event_source_disable_unref(s->io);
        if (s->fd >= 0) {
                close(s->fd);
                /* a passed socket stays: systemd queues clients on it while
                 * profd restarts */
                if (s->path && !s->adopted)
                        (void) unlink(s->path);
        }
        free(s->path);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

const struct client_creds *server_client_creds(const server_client *c) {
        return &c->creds;
}

uint64_t server_client_id(const server_client *c) {
        return c->id;
}

server_client *server_find_client(server *s, uint64_t id) {
        for (server_client *c = s->clients; c; c = c->next)
                if (c->id == id)
                        return c;
        return NULL;
}

void server_client_resume(server_client *c) {
        int r;

        c->deferred = false;
        client_process_lines(c); /* requests that arrived while it waited */
        r = c->dead ? -ENOBUFS : 0;
        (void) client_after_progress(c, r);
}

size_t server_n_clients(const server *s) {
        return s->n_clients;
}

bool server_socket_adopted(const server *s) {
        return s->adopted;
}

const char *server_socket_path(const server *s) {
        return s->path;
}

void server_set_limits(server *s, unsigned max_clients, uint64_t idle_timeout_usec) {
        /* clients over a lowered maximum stay; only new ones are refused.
         * Idle timers already running keep their deadline until re-armed by
         * the client's next activity. */
        s->max_clients = max_clients;
        s->idle_timeout_usec = idle_timeout_usec;
}

void server_client_set_hooks(server_client *c, server_client_hook_fn writable, server_client_hook_fn gone,
                             void *userdata) {
        c->writable_hook = writable;
        c->gone_hook = gone;
        c->hook_userdata = userdata;
}

size_t server_client_unsent(const server_client *c) {
        return c->out_len - c->out_off;
}

int server_client_send_raw(server_client *c, const char *data, size_t n) {
        int r;

        if (c->dead)
                return -ENOBUFS;
        r = client_append(c, data, n);
        /* writes what the socket takes, watches for the rest; closes the
         * client (calling its gone hook) when it left */
        (void) client_after_progress(c, r);
        return r;
}
