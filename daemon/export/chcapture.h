/* Captures (issue 44) as rows of profd.captures (schema/clickhouse/,
 * version 4): one row per state a capture of the host's store was exported
 * in, each exactly once. What ClickHouse is known to hold is a set of
 * (id, state) pairs: filled by the answer of chcapture_lookup_sql() (after a
 * start, or an insert whose answer was lost) and by inserts that answered
 * 200; a capture whose current state is not in it is sent.
 * Pure: no I/O, no clock; daemon/export/exporter.c sends what it makes,
 * tests/unit/test-chcapture.c checks it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chbatch.h"
#include "store.h"

/* The statement the rows go with; its column list fixes their order. */
extern const char chcapture_insert[];

/* profd.captures.state is enum store_capture_state's value (0 active, 1
 * pinned, 2 unpinned): the largest a capture has is its latest. */
#define CHCAPTURE_STATES _STORE_CAPTURE_STATE_MAX

/* Appends c's row in its current state (TabSeparated, ending in '\n') for
 * host (chbatch_host_name_valid). Returns 0, -EINVAL for a capture whose
 * id or state cannot be a row, or -ENOMEM. */
int chcapture_row(struct chbuf *b, const char *host, const struct store_capture *c);

/* The (id, state) pairs ClickHouse holds for this host, as far as known. */
typedef struct chcapture_sent chcapture_sent;

/* Returns 0 or -ENOMEM. */
int chcapture_sent_new(chcapture_sent **ret);
chcapture_sent *chcapture_sent_free(chcapture_sent *s);
bool chcapture_sent_has(const chcapture_sent *s, int64_t id, enum store_capture_state state);
/* Returns 0, -EINVAL for a state out of range, or -ENOMEM. */
int chcapture_sent_add(chcapture_sent *s, int64_t id, enum store_capture_state state);

/* The query asking which states of the captures ids[0..n) ClickHouse holds
 * for host: its answer is "id \t state" lines (none: an empty body).
 * Returns 0 with a malloc'd string, or -ENOMEM. */
int chcapture_lookup_sql(const char *host, const int64_t *ids, size_t n, char **ret);

/* Adds the pairs of such an answer (modified in place; NULL: no rows) to s.
 * Returns 0, -EBADMSG with *ret_bad pointing at the first line that is not
 * "id \t state" with a state below CHCAPTURE_STATES (nothing is added
 * then), or -ENOMEM. */
int chcapture_lookup_parse(chcapture_sent *s, char *answer, const char **ret_bad);
