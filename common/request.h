/* Parsing and validation of client requests (one JSON object per line, see
 * docs/protocol.md). Pure: no I/O, so it is unit-tested and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

enum request_op {
        REQUEST_STATUS,
        REQUEST_FLUSH,
        REQUEST_QUERY,
        REQUEST_SERIES,
        REQUEST_TIMELINE, /* on-CPU samples with their own times */
        REQUEST_CAPTURE,
};

/* Largest request line accepted; a query needs a few hundred bytes. */
#define REQUEST_MAX_BYTES (64 * 1024)

/* The longest comm the kernel keeps (TASK_COMM_LEN - 1): a longer name could
 * never match, so it is refused rather than silently matching nothing. */
#define REQUEST_COMM_MAX 15
/* Globs, paths and unit names: PATH_MAX, far beyond any real one. */
#define REQUEST_STRING_MAX 4096
/* A short container id, as docker prints ids in 12, is still unambiguous
 * at 4 hex digits on one host; fewer would match almost anything. */
#define REQUEST_CONTAINER_MIN 4
#define REQUEST_CONTAINER_MAX 64
/* Series steps below a millisecond would spread one drain over millions of
 * points without saying anything more. */
#define REQUEST_STEP_MIN_NS 1000000ULL

/* A point in time as a request gives it: that long before now ("since",
 * "until", a duration "from"/"to"), or an RFC 3339 time. */
struct request_time {
        bool absolute;
        uint64_t ns; /* absolute: Unix-epoch ns; else ns before now */
};

struct query_request {
        int kind;           /* enum profd_kind */
        uint64_t since_ns;  /* window start, this long before now (default 10m) */
        uint64_t until_ns;  /* window end, this long before now */
        bool have_from, have_to;
        bool have_since;    /* "since" was given (a timeline's default start is clipped to what it holds) */
        struct request_time from, to; /* replace since / until when given */
        bool last;          /* only the most recent drain: no window */
        bool by_drains;     /* the window's drains whole, not cpu samples by the timeline */
        uint32_t pid;       /* 0: any */
        uint32_t tid;       /* 0: any */
        char *comm;         /* NULL: any; exact, or a glob when it has * ? [ */
        char *exe;          /* likewise */
        bool have_uid;
        uint32_t uid;
        char *cgroup;       /* cgroup v2 path (no trailing '/'), or a glob */
        char *unit;         /* systemd unit, or a glob */
        char *container;    /* lowercase hex prefix */
        uint32_t state_mask; /* bits 1 << enum profd_state; 0: any */
        bool raw_names;      /* function names as in the symbol table (not demangled) */
        bool folded;         /* "format":"folded": each stack as one folded string, not frames */
        bool lines;          /* folded: "name (file:line)" where debug info placed the frame */
        enum store_group group; /* the store's own enum: a request asks for what the store does */
        uint64_t step_ns;    /* series: bucket width; 0: the drain interval */
        uint64_t max_samples; /* timeline: samples to send at most; 0: TIMED_MAX_SAMPLES */
        bool events;         /* series, timeline: the captures of the window as "event" lines */
};

/* "op":"capture" (issue 44). */
enum capture_action {
        CAPTURE_ACTION_START, /* a capture now ("manual") or a trigger armed */
        CAPTURE_ACTION_LIST,  /* the captures recorded and the triggers armed */
        CAPTURE_ACTION_UNPIN, /* a capture's data back to retention */
        CAPTURE_ACTION_STOP,  /* a trigger a request armed, disarmed */
};

struct capture_request {
        enum capture_action action;
        char *condition;   /* start: checked against common/capture.h's grammar */
        int64_t id;        /* unpin: a capture's id; stop: a trigger's */
};

struct request {
        enum request_op op;
        struct query_request query; /* query, series and timeline */
        struct capture_request capture;
};

/* Parses one request. On failure returns -EINVAL (or -ENOMEM) and, for
 * -EINVAL, *ret_error is a malloc'd sentence naming the problem. */
int request_parse(const char *line, size_t len, struct request *ret, char **ret_error);
void request_done(struct request *r);

/* True when s is a glob pattern (has '*', '?' or '['), matched with SQLite
 * GLOB semantics; otherwise it is matched exactly. */
bool request_is_glob(const char *s);

/* The window [*ret_from_ns, *ret_to_ns] (Unix-epoch ns) of a query without
 * "last", resolved against now_ns. Returns 0, or -EINVAL with *ret_error
 * saying why when it is empty (an absolute time may lie in the future or
 * after the end), -ENOMEM. */
int request_window(const struct query_request *q, uint64_t now_ns, uint64_t *ret_from_ns, uint64_t *ret_to_ns,
                   char **ret_error);
