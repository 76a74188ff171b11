/* Stored drains as the bodies of ClickHouse INSERTs (TabSeparated) into the
 * fleet tables of schema/clickhouse/ (version 4; captures: chcapture.h): their sample rows, their
 * drop counters, their timelines (each on-CPU sample's own time, version
 * 3), and the stacks (with how their user part ended) and frames
 * (with why an unresolved one has no name) they use that this host has not
 * sent yet for their day. A batch
 * holds drains of one UTC day only, so its samples are one block of one
 * partition: ClickHouse stores them whole or not at all.
 * Stacks and frames are named by content (64-bit hashes defined here, part
 * of the schema: every host computes the same id for the same frame).
 * Pure: no I/O, no clock; daemon/export/exporter.c sends what it makes,
 * tests/unit/test-chbatch.c checks it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The statements the bodies go with; their column lists fix the order in
 * which chbatch writes each row's fields. */
extern const char chbatch_insert_samples[];
extern const char chbatch_insert_stacks[];
extern const char chbatch_insert_frames[];
extern const char chbatch_insert_drops[];
extern const char chbatch_insert_timeline[];

typedef struct chbatch chbatch;

/* Returns 0 or -ENOMEM. */
int chbatch_new(chbatch **ret);
chbatch *chbatch_free(chbatch *b);

/* Starts a batch of host's drains, dropping what the previous one left.
 * Returns 0 or -ENOMEM. */
int chbatch_begin(chbatch *b, const char *host);

/* A host name as the export labels hosts: 1 to 255 letters, digits, '.',
 * '-', '_' or ':', so it goes unquoted into ClickHouse query ids and SQL
 * literals. host_name is checked with it (conf.c). */
bool chbatch_host_name_valid(const char *s);

/* Adds a drain (its bucket start_ns..end_ns, Unix-epoch ns) to the batch:
 * the samples added next belong to it. A batch's first drain of another
 * UTC day than the stacks and frames sent so far starts that day's set
 * over (each day's partitions are complete on their own). Returns 0,
 * -EXDEV when the drain is of another day than the batch's (send the
 * batch first), or -ENOMEM. */
int chbatch_drain(chbatch *b, uint64_t start_ns, uint64_t end_ns);

/* The current drain's rate and the base its cpu rows are weighted to
 * (issue 44, schema version 5): its timeline rows carry both when they
 * differ (a capture's raise: a sample there counts base_hz / hz), else 0
 * and 0, as after chbatch_drain. Returns 0 or -EINVAL before any drain. */
int chbatch_drain_rate(chbatch *b, unsigned hz, unsigned base_hz);

/* Adds one sample row of the current drain, and its stack and frames
 * unless sent (or added) already for this day. Returns 0 or -ENOMEM. */
int chbatch_add(chbatch *b, const struct store_outbox_sample *smp);

/* Adds one drop counter of the current drain (the store's drops row: a
 * reason and its count; a count of 0 adds nothing). Returns 0, -EINVAL
 * before any drain, or -ENOMEM. */
int chbatch_drop(chbatch *b, const char *reason, uint64_t count);

/* Adds one sample of the current drain's timeline: a row with its time,
 * thread, and the process and stack of the drain's sample row it is one
 * of, which must have been added first (chbatch_add). Returns 0, -EINVAL
 * before any drain, -ENOENT when no sample row of the drain has that
 * process or stack (nothing added: the caller counts it), or -ENOMEM. */
int chbatch_tick(chbatch *b, const struct store_outbox_tick *t);

/* Drains in the batch. */
size_t chbatch_drains(const chbatch *b);

/* The body for one statement and its number of rows (0: nothing to send). */
struct chbatch_body {
        const char *data;
        size_t len;
        size_t rows;
};
struct chbatch_body chbatch_samples(const chbatch *b);
struct chbatch_body chbatch_stacks(const chbatch *b);
struct chbatch_body chbatch_frames(const chbatch *b);
struct chbatch_body chbatch_drops(const chbatch *b);
struct chbatch_body chbatch_timeline(const chbatch *b);

/* The batch's bodies were all stored: its new stacks and frames count as
 * sent for its day (a failed batch's are sent again with the retry).
 * Returns 0 or -ENOMEM. */
int chbatch_commit(chbatch *b);

/* Forgets what was sent (after a restart of ClickHouse lost data, or to
 * send everything again): the next drains send their stacks and frames. */
void chbatch_forget(chbatch *b);

/* The content ids (schema/clickhouse/shard.sql, stacks and frames): a
 * 64-bit FNV-1a over the fields, then the fmix64 finalizer. A frame's
 * unresolved reason counts only when not 0, so every other frame keeps the
 * id version 1 gave it; a stack's end always counts (as exported, below). */
uint64_t chbatch_frame_id(const struct store_frame_out *f);
uint64_t chbatch_stack_id(const uint64_t *frame_ids, size_t n, int user_end);

/* stacks.user_end as exported: the store's end (0 complete, 1-8 truncated,
 * STORE_END_LOST), or CHBATCH_END_UNKNOWN for STORE_END_UNKNOWN and any end
 * that does not fit (what version-1 rows read as, too). */
#define CHBATCH_END_UNKNOWN 255
uint8_t chbatch_user_end(int user_end);

/* Writes the UTC day of ns as "YYYY-MM-DD" into ret (11 bytes). */
void chbatch_day(uint64_t ns, char ret[11]);

/* Appends s to a TabSeparated field with ClickHouse's escapes (backslash,
 * tab, newline, carriage return, backspace, form feed). NULL is "". Exposed
 * for tests. Returns 0 or -ENOMEM. */
struct chbuf {
        char *data;
        size_t len, cap;
};
int chbuf_escaped(struct chbuf *b, const char *s);
/* Appends n bytes of s as they are (separators, numbers). Returns 0 or
 * -ENOMEM. */
int chbuf_append(struct chbuf *b, const char *s, size_t n);
