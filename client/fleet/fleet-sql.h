/* The ClickHouse side of a fleet query, as text: a profd request (the same
 * struct query_request profd parses, common/request.h) becomes the SQL
 * that lets ClickHouse filter and sum, and ClickHouse's TabSeparated answers
 * become fields again. Pure: no I/O, unit-tested (tests/unit/test-fleet-sql.c).
 *
 * ClickHouse 18.16 (Debian's) has no query parameters over HTTP, so every
 * value is written into the SQL as a literal: numbers by printf, strings
 * through fleet_sql_quote() only. The table layout is docs/clickhouse.md's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "request.h"

/* What the stacks of an answer are grouped by: profd's groups and the
 * fleet's own, one root frame per host. */
enum fleet_group {
        FLEET_GROUP_NONE,
        FLEET_GROUP_PROCESS, /* "comm-pid", as profd */
        FLEET_GROUP_UNIT,    /* the unit, "-" for none, as profd */
        FLEET_GROUP_HOST,    /* the host name */
};

/* How profctl's table view (client/render.h) names and orders its rows. */
enum fleet_table_by {
        FLEET_TABLE_BY_FUNCTION,
        FLEET_TABLE_BY_LINE,
        FLEET_TABLE_BY_MODULE,
};

struct fleet_table {
        enum fleet_table_by by;
        bool children; /* ordered by total, not self */
        bool lines;    /* functions named "name (file:line)" (as by line) */
        uint64_t limit; /* rows at most, 0: all */
};

/* What a fleet query selects on top of profd's request. */
struct fleet_scope {
        const char *host;        /* a host name or glob; NULL: every host */
        enum fleet_group group;
        uint64_t from_ns, to_ns; /* the window, resolved as profd does (request_window) */
        const struct fleet_table *table; /* answered as the table's rows (fleet-answer.c); NULL: as stacks */
        bool timeline;           /* the samples of profd.timeline whose own time is in the window, not the
                                  * sample rows of the drains that overlap it (a "timeline" request) */
};

/* Writes s as a ClickHouse string literal: quoted, with backslash, quote
 * and control bytes escaped (\\, \', \xHH); other bytes, UTF-8 included,
 * as they are. Returns 0 or -EIO when the stream failed. */
int fleet_sql_quote(FILE *f, const char *s);

/* The RE2 regular expression that matches what the SQLite GLOB pattern
 * `glob` matches (profd's store matches globs with SQLite): '*' any text,
 * '?' one character, "[...]" a set ("[^...]" its complement, "a-z" ranges,
 * ']' first is literal); everything else literally. Anchored at both ends.
 * An unterminated '[' is a literal '[' here (SQLite would match nothing).
 * Returns a malloc'd string or NULL on out of memory. */
char *fleet_glob_to_regex(const char *glob);

/* The PREWHERE and WHERE clauses (with " PREWHERE") of the samples a
 * request selects: of profd.samples, the rows of the drains that overlap
 * the window; with s->timeline, of profd.timeline, the samples whose own
 * time is in it (from and to included, as profd's timeline; kind cpu
 * only, and no state: the caller refuses those). Returns 0 or -EIO. */
int fleet_sql_where(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The query whose rows are (stack_id, value, group, host) in RowBinary
 * (fleet_rowbinary_sum() reads them; group '' without grouping): the
 * request's samples summed per group, stack and host, in no order (a
 * (group, stack, host) may come as more than one row to add up): the
 * answer's stacks are their sums, and each host's quality report is made
 * of its own rows, from one scan of the samples, so the two agree even
 * while hosts insert. Returns 0 or -EIO. */
int fleet_sql_stacks_by_host(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The query whose rows are "ms \t stack_id \t frequency_hz \t base_hz \t
 * samples": the samples of profd.timeline in the window (s->timeline) by
 * millisecond (Unix-epoch ms), stack and rates (a capture's raise apart,
 * version 5; 0 and 0 at the base), summed over the hosts, in that order, at most
 * q->max_samples + 1 rows (TIMED_MAX_SAMPLES + 1 for 0): one row more than
 * the answer's cap can use, so where the cap cuts is known. Returns 0 or
 * -EIO. */
int fleet_sql_timeline_samples(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The query whose rows are "start_ns \t end_ns \t value \t complete \t
 * host": one per drain (of each host) with matching samples, in order of
 * start, then end, with the part of the value whose stacks are complete
 * (user_end 0): what series.c spreads over time. Returns 0 or -EIO. */
int fleet_sql_drains(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The query whose rows are "host \t reason \t count": the drop counters
 * of every drain that overlaps the window, of the scope's hosts (host-wide:
 * the request's other filters do not apply), hosts in order. Returns 0 or
 * -EIO. */
int fleet_sql_drops(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The query whose rows are "host \t id \t state \t cause \t trigger_ns \t
 * from_ns \t to_ns": the captures (profd.captures, version 4) of the
 * scope's hosts whose pinned range overlaps the window, each once in its
 * latest state (FSC_STATE), in order of trigger, host and id: the events
 * of a series or timeline answer, as profd's (common/capture-event.h).
 * Returns 0 or -EIO. */
int fleet_sql_captures(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The id lists of the two queries below are not in their SQL: they go
 * along as ClickHouse "external data", a temporary table of this name with
 * one UInt64 column "id" (ClickHouse 18.16 parsed a literal IN list of 6,000
 * ids in 0.6 s, the same ids as a table in 0.01 s; a Distributed table
 * passes the table on to the shards). */
#define FLEET_SQL_IDS_TABLE "ids"
#define FLEET_SQL_IDS_STRUCTURE "id UInt64"

/* The query whose rows are a stack id, its frame ids (root first) and its
 * user_end, in RowBinary (fleet_rowbinary_stack() reads them), of the stacks whose ids
 * are in the ids table, sent on the days of scope's window. Returns 0 or
 * -EIO. */
int fleet_sql_stack_frames(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* The next row of fleet_sql_stack_frames()'s answer at data[*pos]: returns
 * 1 with the id, a malloc'd array of frame ids and the user_end byte
 * (schema/clickhouse/shard.sql: 255 unknown), 0 at the end, -EBADMSG for a
 * cut or malformed row, -ENOMEM. */
int fleet_rowbinary_stack(const uint8_t *data, size_t len, size_t *pos, uint64_t *ret_id, uint64_t **ret_frames,
                          size_t *ret_n, int *ret_user_end);

/* A string of a RowBinary row: in the answer's body, not NUL-terminated. */
struct fleet_string {
        const char *s;
        size_t n;
};

struct fleet_sum_row {
        uint64_t stack_id, value;
        struct fleet_string group, host;
};

/* The next row of fleet_sql_stacks_by_host()'s answer at data[*pos]:
 * returns 1, 0 at the end, -EBADMSG for a cut or malformed row. */
int fleet_rowbinary_sum(const uint8_t *data, size_t len, size_t *pos, struct fleet_sum_row *ret);

struct fleet_frame_row {
        uint64_t id;
        struct fleet_string strings[5]; /* name, raw_name, module, build_id, file */
        uint32_t line;
        uint64_t address;
        uint8_t flags[6];               /* has_address, kernel, resolved, inlined, jit, unresolved */
};

/* The next row of fleet_sql_frames()'s answer at data[*pos]: returns 1, 0
 * at the end, -EBADMSG for a cut or malformed row. */
int fleet_rowbinary_frame(const uint8_t *data, size_t len, size_t *pos, struct fleet_frame_row *ret);

/* The query whose rows are one frame each, (id, name, raw_name, module,
 * build_id, file, line, address, has_address, kernel, resolved, inlined,
 * jit, unresolved) in RowBinary (fleet_rowbinary_frame() reads them), of
 * the frames whose ids are in the ids table. For a folded request q, or an answer
 * made as the table's rows (s->table), only what those show and what the
 * quality report needs: the other fields come as '' and 0. Returns 0 or
 * -EIO. */
int fleet_sql_frames(FILE *f, const struct query_request *q, const struct fleet_scope *s);

/* One row of TabSeparated output, split in place: the line is cut at its
 * tabs and each field unescaped (\t \n \\ \' \0 \b \f \r \xHH; "\N", NULL,
 * becomes ""). *pos is where the row starts and is moved past its newline.
 * Returns the number of fields (at most max) stored in fields[], 0 at the
 * end of the text, -EBADMSG for a row with more than max fields or an
 * unterminated last row. */
int fleet_tsv_row(char *text, size_t len, size_t *pos, char **fields, size_t max);

/* A number field of TabSeparated output. Returns 0 or -EBADMSG. */
int fleet_tsv_u64(const char *field, uint64_t *ret);

