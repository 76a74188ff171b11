/* The query socket: accepts clients on a Unix stream socket, frames their
 * requests by newline, and buffers responses so a slow reader only delays
 * itself. What a request means is the handler's business (manager.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include <sys/types.h>

#include "conf.h"
#include "request.h"

typedef struct server server;
typedef struct server_client server_client;

/* Who is asking, from the socket's peer credentials (SO_PEERCRED and
 * SO_PEERGROUPS), taken when the client connected. */
struct client_creds {
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool privileged; /* root or a member of the admin group: sees everything */
};

/* Answers one parsed request by calling server_client_send for each response
 * line. A negative return is logged; the client gets an internal error.
 * SERVER_DEFERRED means the answer comes later: the client's next requests
 * wait (answers stay in order) until server_client_resume(). */
#define SERVER_DEFERRED 1
typedef int (*server_request_fn)(server_client *c, const struct request *req, void *userdata);

/* Answers on the listening Unix stream socket systemd passed (LISTEN_FDS),
 * if there is one, leaving it as it is; otherwise listens on cfg->path
 * (replacing a stale socket file) with the settings' socket_mode and
 * socket_group; admin_group, max_clients and client_timeout apply too. Returns 0
 * or a negative errno with the reason logged. */
int server_new(sd_event *event, const struct conf *cfg, server_request_fn handler, void *userdata,
               server **ret);
server *server_free(server *s);

/* Queues one JSON object as a response line. Steals a reference to obj.
 * Returns 0, -ENOMEM, or -ENOBUFS when the client has left more unread than
 * a client may (it is then disconnected; the caller should stop). */
int server_client_send(server_client *c, json_t *obj);
/* Queues {"type":"error","error":message}. */
int server_client_send_error(server_client *c, const char *message);

const struct client_creds *server_client_creds(const server_client *c);

/* Clients are found again by id, since one may leave while its answer is
 * being prepared: ids are never reused. NULL once the client is gone. */
uint64_t server_client_id(const server_client *c);
server_client *server_find_client(server *s, uint64_t id);
/* After a deferred answer was sent: goes on with the client's requests. */
void server_client_resume(server_client *c);

size_t server_n_clients(const server *s);

/* Was the listening socket passed by systemd (sd_listen_fds)? Then its path,
 * owner and mode are the socket unit's and profd must leave them alone (a
 * reload does not apply socket_mode or socket_group to it). */
bool server_socket_adopted(const server *s);
/* The socket's path: the configured one, or the passed socket's. */
const char *server_socket_path(const server *s);

/* Applies new client limits (a configuration reload). */
void server_set_limits(server *s, unsigned max_clients, uint64_t idle_timeout_usec);

/* Streaming a deferred answer from elsewhere (daemon/serve/query.c). The hooks are
 * called on the loop: writable after the client took output, gone when the
 * client is freed (the streamer must forget it). NULL hooks remove them. */
typedef void (*server_client_hook_fn)(server_client *c, void *userdata);
void server_client_set_hooks(server_client *c, server_client_hook_fn writable, server_client_hook_fn gone,
                             void *userdata);
/* Output queued for the client and not yet taken by it. */
size_t server_client_unsent(const server_client *c);
/* Queues complete answer lines (each ending in a newline) as they are and
 * writes what the socket takes now. The client may be closed by this (it
 * left): its gone hook is called and c must not be used after. Returns 0,
 * -ENOMEM or -ENOBUFS. */
int server_client_send_raw(server_client *c, const char *data, size_t n);
