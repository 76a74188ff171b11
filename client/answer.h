/* Requests and their answers as profctl's commands read them: a stream of
 * "stack" lines checked against its "end" line, a whole profile, and the
 * message when nothing matched (docs/protocol.md). Every function that can
 * fail prints its own message and returns a negative errno. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "filters.h"
#include "options.h"
#include "profile.h"
#include "quality.h"

/* What a stream of stack lines is handed to. */
typedef int (*stack_handler)(void *userdata, const json_t *line, const char *raw, size_t raw_len);

/* What an answer's "end" line said, checked against the stacks before it. */
struct answer_end {
        uint64_t stacks, total, from_ns, to_ns;
        struct quality quality;
        bool have_quality;      /* false from a profd before quality reports */
        json_t *by_host;        /* a fleet answer's "quality_by_host" (a reference of its own); NULL: none */
        json_t *line;           /* the "end" line itself */
};

/* Drops the references e holds. */
void answer_end_done(struct answer_end *e);

/* A request {"op": op} with the fields of the filters f (NULL: none) and of
 * the view options v that profd reads (--raw-names, --root; v NULL: none).
 * Returns it, or NULL on -ENOMEM. */
json_t *request_new(const char *op, const struct filters *f, const struct view_options *v);

/* Reads the next response line and checks it is of type expected. */
int read_expected(conn *c, const char *op, const char *expected, json_t **ret_line,
                  const char **ret_raw, size_t *ret_raw_len);

/* One request, one answer line of type expected: sends request to profd
 * on socket and prints its answer as sent (json) or by write_human.
 * Returns profctl's exit status; errors are printed. */
int ask_and_print(const char *socket, const json_t *request, const char *op, const char *expected, bool json,
                  int (*write_human)(FILE *f, const json_t *line));

/* Sends request on c and hands every "stack" line to on_stack, then checks
 * the "end" line against what came before it: a mismatch means stacks were
 * lost on the way and the numbers would be wrong, so it is an error. */
int query_send_and_read(conn *c, const json_t *request, stack_handler on_stack, void *userdata,
                        struct answer_end *ret_end);

/* The sampling period of profd, for pprof's cpu/nanoseconds, when the
 * answer did not carry it. */
int profile_ask_frequency(conn *c, profile *p);

/* Runs request on c and keeps the whole answer. */
int profile_fetch(conn *c, const json_t *request, profile **ret);

/* "no samples match --pid 42 from <time> to <time>" on stderr: an empty
 * answer is not an error, but a person must learn why the output is empty. */
void no_samples_message(const struct filters *f, uint64_t from_ns, uint64_t to_ns, const char *where);

/* The summary line of an answer's quality ("quality: 98.1% complete stacks;
 * ...") on stderr, under what went to standard output. */
void quality_summary_print(const struct quality *q);

/* "note: N drains of this window are still being converted ..." on stderr
 * when the "end" line end says some of the window's drains are not in
 * the answer yet (an older store being converted, docs/protocol.md). */
void unconverted_note(const json_t *end);

/* An "event" line of a series or timeline answer (issue 44): a capture's
 * is appended to kept (an array; the line itself, a reference of its own),
 * an event of a kind this profctl does not know is skipped; *seen counts
 * both. Returns 0, or -EBADMSG (said on stderr) or -ENOMEM. */
int event_line_keep(json_t *kept, const json_t *line, const char *op, uint64_t *seen);
/* Checks the end line's "events" against the event lines seen (a profd
 * that does not send it, or the fleet's answer, is fine when none came).
 * Returns 0 or -EBADMSG, said. */
int events_check_end(const json_t *end, const char *op, uint64_t seen);
