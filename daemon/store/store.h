/* The SQLite store: schema migration, one write transaction per drain, and
 * the read side of queries and status. Schema: the schema/ migrations, docs/schema.md.
 *
 * Its files call only down, in this order (bottom first; none calls a
 * file beside or above it):
 *   db.c            SQLite helpers every connection shares (retention's too)
 *   sample-pack.c   a block of samples packed and read; sample-blocks.c, its rows
 *   store.c         the connection: opens the file (private, WAL), migrates
 *                   it or checks its version, closes it; the integrity check
 *   store-write.c   the write path and its state (statements, id caches, the
 *                   drain being written), store_open's connection only
 *   store-query.c   the read path and its state (statements, location cache)
 *   store-migrate.c schema 8's conversion of schema 7's samples, in steps
 *   store-outbox.c  the export's outbox, read through store-query.c
 *   store-conn.c    the connections handed out (store_open, store_open_reader,
 *                   store_open_outbox) put together from store.c's connection
 *                   and the write and read state; store_close takes them apart
 *   retention.c     retention's own connection, on db.c and sample-blocks.c
 * What each offers those above it is in store-private.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "protocol.h"

typedef struct store store;

/* One level of what debug info says is at an address. */
struct store_line {
        const char *function;     /* demangled */
        const char *raw_function; /* as in the symbol table; NULL: same as function */
        const char *file;         /* NULL: unknown */
        unsigned line;            /* 0: unknown */
        bool inlined;
};

/* enum store_unresolved, STORE_END_* and enum store_group, what queries
 * answer with, are the protocol's: common/protocol.h. */

/* A frame to store. Strings are borrowed for the duration of the call. */
struct store_frame {
        const char *module;   /* file path, "[kernel.kallsyms]", "[vdso]", "[unknown]", "[lost]" */
        const char *build_id; /* hex, or NULL */
        uint64_t address;     /* file offset (user) or address (kernel) */
        const char *function; /* the function the code belongs to, demangled; NULL: unresolved */
        const char *raw_function; /* as in the symbol table; NULL: same as function */
        const struct store_line *lines; /* inline chain, innermost first, the last being
                                         * `function` itself; NULL when there is no debug info */
        size_t n_lines;
        bool kernel;
        enum store_unresolved unresolved; /* user frames without function: why (NONE: not known) */
};

struct store_process {
        uint32_t pid;
        uint64_t start_ns;
        const char *comm;
        const char *exe;    /* may be NULL */
        const char *cgroup; /* may be NULL */
        uint32_t uid;
        bool have_uid;
};

struct store_sample {
        const struct store_process *process;
        uint32_t tid;
        const char *thread_comm;          /* the thread's name; NULL: unknown (it ended) */
        uint64_t cgroup_id;
        int kind;
        int state;
        uint32_t peer_tid;                /* wakeup: the woken thread */
        const struct store_frame *frames; /* root first */
        size_t n_frames;
        int user_end;                     /* STORE_END_* or enum profd_stack_end; 0: complete */
        uint64_t value;
};

/* Opens (creating if needed) and migrates the store. Returns 0, or a negative
 * errno with the reason logged: -EPROTO when the file is not a store this
 * profd can use (not a database, a header or schema SQLite cannot read, or
 * written by a newer schema). Pages are not checked here, so opening takes
 * the same time whatever the store's size: store_check_start does that. */
int store_open(const char *path, store **ret);
store *store_close(store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(store *, store_close)

/* Gives back the pages SQLite caches for this connection (up to 512 KiB
 * for the drain connection, SQLite's 2 MiB default for readers): for a
 * connection used in bursts, such as the writer's once a drain, which
 * reads them again from the kernel's page cache next time. */
void store_release_memory(store *s);

/* A reader's part of store_release_memory and more: also frees the
 * locations it kept from one query to the next (up to about 10 MiB), for
 * a reader that no query used for a while. The next query loads what it
 * needs again. */
void store_forget_query_caches(store *s);
/* How many locations a reader keeps between queries now. */
size_t store_query_cached_locations(const store *s);

/* The store's integrity check (PRAGMA quick_check of every page), run on a
 * thread of its own with its own read-only connection, at low CPU
 * priority, after profd is ready: nothing waits for it. A failure is
 * logged at error level and reported (profctl status); profd keeps
 * collecting and serving what it can read (docs/reliability.md). */
typedef struct store_check store_check;

enum store_check_state {
        STORE_CHECK_RUNNING,
        STORE_CHECK_OK,
        STORE_CHECK_FAILED,
        _STORE_CHECK_STATE_MAX,
};

struct store_check_status {
        enum store_check_state state;
        uint64_t started_ns;  /* CLOCK_REALTIME */
        uint64_t finished_ns; /* 0 while running */
        char message[512];    /* failed: what SQLite found (its first findings) */
};

/* Starts checking the store at path. Returns 0, or a negative errno
 * (logged) when the thread could not start: nothing was checked then. */
int store_check_start(const char *path, store_check **ret);
/* A consistent copy of the check's state; cannot fail. */
void store_check_get(store_check *c, struct store_check_status *ret);
/* "running", "ok", "failed" */
const char *store_check_state_name(enum store_check_state state);
/* Interrupts a check still running and waits for its thread; NULL is fine. */
store_check *store_check_free(store_check *c);
const char *store_path(const store *s);

/* A read-only connection for queries on another thread (daemon/serve/query.c):
 * WAL lets it read while the writer stores drains. The store must exist at
 * the current schema version. Returns 0 or a negative errno, logged. */
int store_open_reader(const char *path, store **ret);
/* A read-write connection for the export thread (daemon/export/): reads
 * drains like a reader and writes only its cursor (export_cursors). Same
 * conditions and errors as store_open_reader. */
int store_open_outbox(const char *path, store **ret);
/* Makes the SQL running on s (in another thread) stop soon with an error.
 * Safe to call from any thread while s is open. */
void store_interrupt(store *s);

/* A drain is written as begin, add..., drop..., commit: one transaction, so a
 * crash leaves either the whole drain or none of it, on store_open's
 * connection (store_drain_begin returns -EBADF on another). Each returns 0
 * or a negative errno (-ENOSPC when the disk is full); after a failure call
 * store_drain_abort. */
int store_drain_begin(store *s, uint64_t start_ns, uint64_t end_ns);
int store_drain_add(store *s, const struct store_sample *sample);
int store_drain_drop(store *s, const char *reason, uint64_t count);
/* The rate (Hz) the drain's cpu samples were taken at, stored with it
 * (drains.frequency_hz, schema 14) for the weighting of answers that span
 * drains of different rates (rate-weight.h); not called or 0: NULL, read
 * as the answer's base rate. */
int store_drain_rate(store *s, unsigned frequency_hz);
/* The drain's timeline (issue 44): when each of its logged on-CPU samples
 * was taken, sample naming the store_drain_add call of this drain (0 the
 * first) whose key it had. Once per drain, after its adds; n == 0 writes
 * nothing. -EINVAL for a sample naming no add. */
struct store_timed {
        uint64_t time_ns;       /* Unix-epoch ns, the clock drains are stamped with */
        uint32_t sample;
};
int store_drain_timeline(store *s, const struct store_timed *t, size_t n);
/* The drain's off-CPU timeline (issue 44): each logged off-CPU block's
 * end, duration and state, sample naming the store_drain_add call (kind
 * offcpu) whose key it had. Once per drain, after its adds; n == 0 writes
 * nothing. -EINVAL for a block naming no add. */
struct store_block {
        uint64_t end_ns;        /* Unix-epoch ns, the clock drains are stamped with */
        uint64_t duration_ns;
        uint32_t sample;
        uint8_t state;          /* enum profd_state, the add's */
};
int store_drain_offtime(store *s, const struct store_block *t, size_t n);
int store_drain_commit(store *s, int64_t *ret_drain_id, uint64_t *ret_samples, uint64_t *ret_keys);
void store_drain_abort(store *s);

/* Whether the user frame at address (a file offset) of the mapping
 * (module, build_id) is stored already, with its function: then
 * store_drain_add keeps that location as it is, and the caller need not
 * symbolize the frame again. Sees this connection's own uncommitted rows.
 * Returns 1, 0 (not stored, or stored without a function), or a negative
 * errno (-EBADF on a connection not of store_open). */
int store_location_resolved(store *s, const char *module, const char *build_id, uint64_t address);

/* Gives a stored location, stored with its function by the symbol alone
 * (the file's DWARF deferred: dwarf_min_samples), the function and inline
 * chain f holds (f->lines, f->n_lines > 0), in the open drain's
 * transaction. Returns 1, 0 when the location is not stored or has its
 * lines already, or a negative errno. */
int store_location_add_lines(store *s, const struct store_frame *f);
/* Counts n locations changed so (the total named STORE_CHANGED_LOCATIONS in
 * retention_totals), which readers' location caches watch. Returns 0 or a
 * negative errno. */
#define STORE_CHANGED_LOCATIONS "lined_locations"
int store_locations_changed(store *s, uint64_t n);

/* Forgets the ids of rows this connection cached (mappings, functions,
 * locations, processes): call after another connection deleted such rows
 * (retention), outside a drain. Nothing to do on a connection not of
 * store_open. */
void store_forget_ids(store *s);

/* A query's filters. Strings are borrowed; NULL (or 0, false) disables a
 * filter. comm, exe and unit are exact, or SQLite GLOB patterns when they
 * contain '*', '?' or '['. Every value is bound as a parameter, never
 * pasted into SQL. */
struct store_query {
        int kind;
        uint64_t from_ns, to_ns; /* Unix-epoch ns, inclusive: drains overlapping it */
        int64_t drain_id;        /* > 0: only this drain (from_ns/to_ns ignored) */
        uint32_t pid;            /* 0: any */
        uint32_t tid;            /* 0: any */
        const char *comm;
        const char *exe;
        bool have_uid;           /* only processes with effective uid `filter_uid` */
        uint32_t filter_uid;
        const char *cgroup;      /* this cgroup v2 path and everything below it (or a glob) */
        const char *unit;
        const char *container;   /* lowercase hex prefix of the container id */
        uint32_t state_mask;     /* bit (1 << enum profd_state) per state; 0: any */
        enum store_group group;
        /* access control: only processes that ran with this effective uid */
        bool only_uid;
        uint32_t uid;
        /* cpu: select samples by their own time (the timeline), not by the
         * drains overlapping the window; set it only where
         * store_query_timeline_covers says so */
        bool timeline;
        /* cpu: the rate (Hz) values are counted at; a drain sampled at
         * another (drains.frequency_hz: a capture's raise, a reload) is
         * weighted by base_hz / its rate (rate-weight.h). 0: each sample
         * counts 1 whatever its rate */
        unsigned base_hz;
};

/* Whether the timeline can answer q (sets *ret): an on-CPU query of a
 * window (not one drain) with no state filter, whose start the timeline
 * still holds (its oldest block started by then: retention deletes the
 * oldest first, so it holds everything after), and with no gap in it
 * (store_timeline_gap). Samples counted untimed
 * (status timeline.untimed) are not in such an answer. Returns 0 or a
 * negative errno. */
int store_query_timeline_covers(store *s, const struct store_query *q, bool *ret);

/* The first drain overlapping (from_ns, to_ns) that stored samples of
 * kind (0 cpu, 1 offcpu) but no timeline row of that kind: drained while
 * the setting timeline was off, or whose row retention took while a
 * capture's pin kept an older one. Such a window cannot be answered
 * from the timeline without a silent hole. Returns 1 with *ret_start_ns
 * and *ret_end_ns the drain's, 0 when there is none, or a negative
 * errno. */
int store_timeline_gap(store *s, int kind, uint64_t from_ns, uint64_t to_ns, uint64_t *ret_start_ns,
                       uint64_t *ret_end_ns);

/* struct store_frame_out and struct store_stack_out, what queries return,
 * are the protocol's frame and stack: common/protocol.h. */

/* Called for every stack matching a query. Returning a negative errno stops
 * the query and is passed on. */
typedef int (*store_stack_fn)(const struct store_stack_out *stack, void *userdata);

/* Runs a query, calling fn for each (group and) stack. Returns 0 with the
 * sum of values and the number of stacks, or a negative errno. */
int store_query_stacks(store *s, const struct store_query *q, store_stack_fn fn, void *userdata,
                       uint64_t *ret_total, uint64_t *ret_stacks);

/* The start of the oldest sample the timeline holds (it holds every one
 * after). Returns 0, -ENOENT when it holds none, or a negative errno. */
int store_timeline_oldest(store *s, uint64_t *ret_ns);

struct timed_set;

/* The on-CPU samples of q's window with their own times (a timeline
 * answer, common/timed-samples.h): every sample the timeline holds in
 * [from_ns, to_ns] that passes q's filters and tid goes into set (which
 * keeps up to its cap and counts the rest; then sorted), then fn is called
 * for each of the set's stacks in index order, value its samples kept. q
 * must be a cpu window without a group; q->timeline is not read (the
 * caller checks store_timeline_oldest). One read transaction. Returns 0,
 * -EINVAL for another query, or a negative errno (fn's included). */
int store_query_timed(store *s, const struct store_query *q, struct timed_set *set, store_stack_fn fn,
                      void *userdata);

/* The start of the oldest block the off-CPU timeline holds (it holds
 * every one after). Returns 0, -ENOENT when it holds none, or a negative
 * errno. */
int store_offtime_oldest(store *s, uint64_t *ret_ns);

struct timed_span_set;

/* The off-CPU blocks of q's window with their own times (a timeline answer
 * of kind offcpu, common/timed-spans.h): every block the off-CPU timeline
 * holds that meets [from_ns, to_ns], clipped to it, whose process passes
 * q's filters and whose thread and state pass tid and state_mask, goes into
 * set (which keeps up to its cap and counts the rest; then sorted), then fn
 * is called for each of the set's stacks in index order, value its ns
 * kept. q must be an offcpu window without a group; the caller checks
 * store_offtime_oldest. One read transaction. Returns 0, -EINVAL for
 * another query, or a negative errno (fn's included). */
int store_query_spans(store *s, const struct store_query *q, struct timed_span_set *set, store_stack_fn fn,
                      void *userdata);

/* Called, in time order, for each drain with matching samples: the drain's
 * bucket, the sum of its matching values, and the part of it whose stacks
 * are complete (user_end 0). */
typedef int (*store_drain_value_fn)(uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete,
                                    void *userdata);

/* The per-drain sums behind a time series. Returns 0 or a negative errno. */
int store_query_drains(store *s, const struct store_query *q, store_drain_value_fn fn, void *userdata);

/* Called for each drop reason counted in the drains a query's window
 * overlaps (or its one drain), with the sum of its counts. */
typedef int (*store_drop_fn)(const char *reason, uint64_t count, void *userdata);

/* The drops (table drops) of the query's window; only the window (or
 * drain) of q is used, not its other filters: drops are host-wide. Returns
 * 0, a negative errno from fn, or one from the store. */
int store_query_drops(store *s, const struct store_query *q, store_drop_fn fn, void *userdata);

/* The most recent drain (largest end time). Returns 0, -ENOENT when the
 * store has none, or a negative errno. */
int store_last_drain(store *s, int64_t *ret_id, uint64_t *ret_start_ns, uint64_t *ret_end_ns);

struct store_drop_total {
        char *reason;
        uint64_t count;
};

struct store_stats {
        uint64_t drains, samples, stacks, processes;
        uint64_t last_drain_ns;
        uint64_t file_bytes; /* database plus write-ahead log */
        /* the timeline (timeline_blocks): its blocks, their blobs' bytes,
         * the samples they time, the oldest one's start (0: none) */
        uint64_t timeline_blocks, timeline_bytes, timeline_samples, timeline_oldest_ns;
        /* the off-CPU timeline (offcpu_timeline, schema 13): its rows, their
         * blobs' bytes, the blocks they hold, the oldest block's start */
        uint64_t offtime_rows, offtime_bytes, offtime_blocks, offtime_oldest_ns;
        struct store_drop_total *drops;
        size_t n_drops;
};

int store_get_stats(store *s, struct store_stats *ret);
void store_stats_done(struct store_stats *st);

/* --- schema 8's conversion of schema 7's samples (store-migrate.c) ---
 * Opening a schema 7 store moves its samples table aside (samples_v7) and
 * converts nothing: queries, series and status read sample_blocks only,
 * and the writer converts samples_v7 a step at a time between drains,
 * newest drains first, each step one transaction of whole drains. */

/* Whether samples_v7 is still there (sets *ret). Returns 0 or a negative
 * errno. */
int store_v7_present(store *s, bool *ret);

struct store_migrate_limits {
        uint64_t max_rows; /* rows per step, by the drains' keys (whole drains, at least one); 0: the default, 8192 */
        bool rollback;     /* tests: roll the step back instead of committing it */
};

/* Converts the newest drains left in samples_v7 to blocks (the step's
 * drains oldest first), deletes their rows and counts their stacks and
 * processes (stack_refs, process_refs), in one transaction; drops samples_v7 with its last rows. lim may be
 * NULL. Returns 1 when it converted something (*ret_rows rows; call again
 * for more), 0 when there is nothing left, or a negative errno (logged;
 * the step was rolled back). */
int store_migrate_step(store *s, const struct store_migrate_limits *lim, uint64_t *ret_rows);

struct store_migration {
        bool active;                /* samples_v7 is still there */
        uint64_t pending_rows;      /* rows left, by the keys of their drains */
        uint64_t pending_drains;
        uint64_t complete_after_ns; /* end of the newest drain left: a window after it is complete */
        uint64_t done_rows, done_drains; /* converted so far (kept in the store) */
};

/* The conversion's progress. Returns 0 or a negative errno. */
int store_migration_get(store *s, struct store_migration *ret);

/* How many drains of q's window (or q's drain) are still in samples_v7,
 * so not in its answer. Returns 0 or a negative errno. */
int store_query_unconverted(store *s, const struct store_query *q, uint64_t *ret);

/* --- the export outbox (schema/0005, docs/clickhouse.md) ---
 * A target's cursor is the last drain it acknowledged; drains as drained
 * (not merged by retention) with a larger id are its backlog, in id order. */

/* The cursor of target (created at 0, nothing sent, when new) and how many
 * drains retention merged or deleted before they were exported. A cursor
 * past every drain id (the table was emptied and ids started over) is set
 * back to 0. Returns 0 or a negative errno. */
int store_outbox_cursor(store *s, const char *target, int64_t *ret_drain_id, uint64_t *ret_lost);
/* Records that target acknowledged everything up to drain_id. Returns 0 or
 * a negative errno. */
int store_outbox_ack(store *s, const char *target, int64_t drain_id);

struct store_outbox_drain {
        int64_t id;
        uint64_t start_ns, end_ns; /* Unix-epoch ns */
        unsigned frequency_hz;     /* its on-CPU rate (schema 14); 0 unknown */
};

/* Up to max drains after after_id, oldest first, in ret (room for max);
 * the whole backlog's size and its oldest end (0 when empty) if asked.
 * Returns 0 or a negative errno. */
int store_outbox_pending(store *s, int64_t after_id, size_t max, struct store_outbox_drain *ret, size_t *ret_n,
                         uint64_t *ret_backlog, uint64_t *ret_oldest_end_ns);

/* A sample row of a drain with its process and its frames, as exported.
 * Strings and frames are valid during the callback only; NULL strings are
 * unknown (NULL in the store). */
struct store_outbox_sample {
        int64_t process_id;        /* the store's processes.id: what a timeline's tick names (below) */
        uint32_t pid;
        uint64_t process_start_ns; /* boot-time ns */
        const char *comm, *exe, *cgroup, *unit, *container;
        bool have_uid;
        uint32_t uid;
        uint32_t tid;
        uint64_t cgroup_id;
        int kind, state;
        uint32_t peer_tid;
        int64_t stack_id; /* the store's id: within one call, the same id is the same frames */
        int user_end;     /* how its user part ended, as store_stack_out's */
        const struct store_frame_out *frames; /* root first, as a query answers the stack */
        size_t n_frames;
        uint64_t value;
};

/* Returning a negative errno stops store_outbox_samples and is passed on. */
typedef int (*store_outbox_sample_fn)(const struct store_outbox_sample *smp, void *userdata);

/* Calls fn for every sample row of drain_id, in one read transaction.
 * A damaged block (its blob does not match its widths) is logged and
 * skipped, and counted in *ret_damaged if not NULL (once per call: a
 * span's block is read for each of its drains): its entries cannot be
 * read, and retention drops it too. Returns 0, -ENOENT when the drain is
 * no longer there as drained (retention merged or deleted it), or a
 * negative errno. */
int store_outbox_samples(store *s, int64_t drain_id, store_outbox_sample_fn fn, void *userdata,
                         uint64_t *ret_damaged);

/* One on-CPU sample of a drain's timeline (schema 11), as exported: when
 * it was taken, and the stored sample row it is one of (the process and
 * stack ids of a store_outbox_sample of the same drain, kind cpu, and its
 * thread). */
struct store_outbox_tick {
        uint64_t time_ns;          /* Unix-epoch ns, to the µs */
        int64_t process_id, stack_id;
        uint32_t tid;
};

/* Returning a negative errno stops store_outbox_timeline and is passed on. */
typedef int (*store_outbox_tick_fn)(const struct store_outbox_tick *t, void *userdata);

/* Calls fn for every sample of drain_id's timeline, in time order, in one
 * read transaction. None when the drain has no timeline (timed samples
 * were off, or timeline_retention took it). A damaged timeline is logged,
 * counted in *ret_damaged if not NULL, and skipped. Returns 0 or a
 * negative errno (fn's included). */
int store_outbox_timeline(store *s, int64_t drain_id, store_outbox_tick_fn fn, void *userdata,
                          uint64_t *ret_damaged);

/* Calls fn for every drop counter (reason, count) of drain_id, as
 * store_query_drops does for a window. Returns 0 or a negative errno
 * (fn's included). */
int store_outbox_drops(store *s, int64_t drain_id, store_drop_fn fn, void *userdata);

/* --- captures (schema 12, store-capture.c) ---
 * A capture's row is its event (cause, who, when) and, until it is
 * unpinned, the pin retention.c honours: see schema/0012-captures.sql.
 * Written on store_open's connection (the manager's): one small row. */

enum store_capture_state {
        STORE_CAPTURE_ACTIVE,   /* its time after the trigger is still running */
        STORE_CAPTURE_PINNED,   /* ended; its range stays pinned */
        STORE_CAPTURE_UNPINNED, /* its data is retention's again */
        _STORE_CAPTURE_STATE_MAX,
};

struct store_capture {
        int64_t id;
        const char *cause;   /* borrowed (a listing's: valid during the callback) */
        const char *origin;  /* "setting" or "request" */
        uint32_t uid;
        bool has_value;
        uint32_t value_centi;
        uint64_t trigger_ns, from_ns, to_ns;
        uint64_t pinned_bytes;
        enum store_capture_state state;
        unsigned frequency_hz; /* the on-CPU rate during it (schema 14); 0: unknown, or no sampler */
};

const char *store_capture_state_name(enum store_capture_state s);

/* Inserts c (its id ignored). Returns 0 and the new id, or a negative errno. */
int store_capture_add(store *s, const struct store_capture *c, int64_t *ret_id);
/* Sets a capture's state and pinned bytes. Returns 0, -ENOENT when there
 * is no such capture, or a negative errno. */
int store_capture_set(store *s, int64_t id, enum store_capture_state state, uint64_t pinned_bytes);
/* The capture id, or -ENOENT. */
int store_capture_get(store *s, int64_t id, struct store_capture *ret, char **ret_cause);

/* Calls fn for the newest captures (at most limit; 0: all), newest first.
 * Returns 0, fn's negative errno, or the store's. */
typedef int (*store_capture_fn)(const struct store_capture *c, void *userdata);
int store_capture_list(store *s, size_t limit, store_capture_fn fn, void *userdata);
/* Calls fn for the captures whose pinned range overlaps [from_ns, to_ns]
 * (a series' or a timeline's window: their events), by trigger time, at
 * most limit of them; with only_uid, only those uid armed. *ret_omitted:
 * how many more there were. Returns 0, fn's negative errno, or the store's. */
int store_capture_window(store *s, uint64_t from_ns, uint64_t to_ns, bool only_uid, uint32_t uid, size_t limit,
                         store_capture_fn fn, void *userdata, uint64_t *ret_omitted);

/* What the drains overlapping [from_ns, to_ns] hold: the bytes of their
 * sample blocks (a span's block counted with its first drain) and of
 * their timeline blocks. What a capture of that range pins. */
int store_capture_bytes(store *s, uint64_t from_ns, uint64_t to_ns, uint64_t *ret);

struct store_capture_totals {
        uint64_t count;        /* every capture recorded */
        uint64_t pinning;      /* not unpinned */
        uint64_t pinned_bytes; /* of those */
        uint64_t last_trigger_ns; /* 0: none */
};
int store_capture_totals(store *s, struct store_capture_totals *ret);
/* At start: a capture left active by a stop before its end is pinned now
 * (its range was set at the trigger). Returns the rows changed or a
 * negative errno. */
int64_t store_capture_settle(store *s);
