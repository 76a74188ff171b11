/* The query socket: accepts clients on a Unix stream socket, frames their
 * requests by newline, and buffers responses so a slow reader only delays
 * itself. What a request means is the handler's business (manager.c). */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <systemd/sd-event.h>
#include <sys/types.h>

#include "request.h"

typedef struct server server;
typedef struct server_client server_client;

/* Answers one parsed request by calling server_client_send for each response
 * line. A negative return is logged; the client gets an internal error. */
typedef int (*server_request_fn)(server_client *c, const struct request *req, void *userdata);

/* Listens on path (replacing a stale socket file) with the given mode.
 * Returns 0 or a negative errno with the reason logged. */
int server_new(sd_event *event, const char *path, mode_t mode, server_request_fn handler, void *userdata,
               server **ret);
server *server_free(server *s);

/* Queues one JSON object as a response line. Steals a reference to obj.
 * Returns 0 or -ENOMEM. */
int server_client_send(server_client *c, json_t *obj);
/* Queues {"type":"error","error":message}. */
int server_client_send_error(server_client *c, const char *message);

size_t server_n_clients(const server *s);
