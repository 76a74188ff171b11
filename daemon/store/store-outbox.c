/* The store as the export's outbox (daemon/export/exporter.c, schema/0005):
 * a cursor per target, the drains after it, and each drain's samples with
 * their frames as a query answers them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "timeline-pack.h"
#include "store-private.h"

/* Runs sql with its parameters bound: ?1 the text when not NULL, then the
 * next one (if sql has it) arg. Returns the first column of its row in
 * *ret, or dflt when there is no row or it is NULL. */
static int outbox_i64(store *s, const char *sql, const char *text, int64_t arg, int64_t dflt, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->d.handle, sql, -1, &st, NULL);

        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing an outbox statement");
        if (text)
                sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        if (sqlite3_bind_parameter_count(st) > (text ? 1 : 0))
                sqlite3_bind_int64(st, text ? 2 : 1, arg);
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int64(st, 0) : dflt;
        sqlite3_finalize(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(&s->d, rc, "outbox statement");
}

int store_outbox_cursor(store *s, const char *target, int64_t *ret_drain_id, uint64_t *ret_lost) {
        int64_t id, lost, max_id, ignored;
        int r;

        if ((r = outbox_i64(s, "SELECT drain_id FROM export_cursors WHERE target = ?1", target, 0, -1, &id)) < 0)
                return r;
        /* a new target: nothing sent yet (written once, not at every look) */
        if (id < 0 && ((r = outbox_i64(s, "INSERT INTO export_cursors (target, drain_id) VALUES (?1, 0)", target, 0,
                                       0, &ignored)) < 0 ||
                       (r = outbox_i64(s, "SELECT drain_id FROM export_cursors WHERE target = ?1", target, 0, 0,
                                       &id)) < 0))
                return r;
        if ((r = outbox_i64(s, "SELECT lost_drains FROM export_cursors WHERE target = ?1", target, 0, 0, &lost)) < 0 ||
            (r = outbox_i64(s, "SELECT max(id) FROM drains", NULL, 0, 0, &max_id)) < 0)
                return r;
        /* ids start over only in a table retention emptied (everything older
         * than `retention`): what is there now was never sent */
        if (id > max_id && max_id > 0) {
                log_info("Store %s: export cursor %" PRId64 " is past the newest drain %" PRId64
                         " (the store was emptied since); exporting from its oldest drain.", s->path, id, max_id);
                r = store_outbox_ack(s, target, 0);
                if (r < 0)
                        return r;
                id = 0;
        }
        *ret_drain_id = id;
        *ret_lost = (uint64_t) lost;
        return 0;
}

int store_outbox_ack(store *s, const char *target, int64_t drain_id) {
        int64_t ignored;
        return outbox_i64(s, "UPDATE export_cursors SET drain_id = ?2 WHERE target = ?1", target, drain_id, 0, &ignored);
}

int store_outbox_pending(store *s, int64_t after_id, size_t max, struct store_outbox_drain *ret, size_t *ret_n,
                         uint64_t *ret_backlog, uint64_t *ret_oldest_end_ns) {
        sqlite3_stmt *st = NULL;
        size_t n = 0;
        int rc, r = 0;

        /* one read transaction: the list and the counts agree */
        if ((r = db_exec(&s->d, "BEGIN")) < 0)
                return r;
        rc = sqlite3_prepare_v2(s->d.handle, "SELECT id, start_ns, end_ns, coalesce(frequency_hz, 0) FROM drains "
                                       "WHERE id > ?1 AND resolution_ns = 0 "
                                       "ORDER BY id LIMIT ?2", -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = db_fail(&s->d, rc, "outbox lookup");
                goto out;
        }
        sqlite3_bind_int64(st, 1, after_id);
        sqlite3_bind_int64(st, 2, (int64_t) max);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < max)
                ret[n++] = (struct store_outbox_drain) {
                        .id = sqlite3_column_int64(st, 0),
                        .start_ns = (uint64_t) sqlite3_column_int64(st, 1),
                        .end_ns = (uint64_t) sqlite3_column_int64(st, 2),
                        .frequency_hz = (unsigned) sqlite3_column_int64(st, 3),
                };
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
                r = db_fail(&s->d, rc, "outbox lookup");
                goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
        if (ret_backlog) {
                int64_t v;
                r = outbox_i64(s, "SELECT count(*) FROM drains WHERE id > ?1 AND resolution_ns = 0", NULL, after_id, 0,
                               &v);
                if (r < 0)
                        goto out;
                *ret_backlog = (uint64_t) v;
        }
        if (ret_oldest_end_ns) {
                int64_t v;
                r = outbox_i64(s, "SELECT min(end_ns) FROM drains WHERE id > ?1 AND resolution_ns = 0", NULL, after_id,
                               0, &v);
                if (r < 0)
                        goto out;
                *ret_oldest_end_ns = (uint64_t) v;
        }
        *ret_n = n;
out:
        sqlite3_finalize(st);
        (void) db_exec(&s->d, "COMMIT");
        return r;
}

/* The process and kind of an outbox row: columns 0-9 of both queries
 * below (p.pid ... p.container, kind, p.id). */
#define OUTBOX_PROCESS_COLUMNS 10
static struct store_outbox_sample outbox_process_columns(sqlite3_stmt *st) {
        return (struct store_outbox_sample) {
                .process_id = sqlite3_column_int64(st, 9),
                .pid = (uint32_t) sqlite3_column_int64(st, 0),
                .process_start_ns = (uint64_t) sqlite3_column_int64(st, 1),
                .comm = (const char *) sqlite3_column_text(st, 2),
                .exe = (const char *) sqlite3_column_text(st, 3),
                .have_uid = sqlite3_column_type(st, 4) != SQLITE_NULL,
                .uid = (uint32_t) sqlite3_column_int64(st, 4),
                .cgroup = (const char *) sqlite3_column_text(st, 5),
                .unit = (const char *) sqlite3_column_text(st, 6),
                .container = (const char *) sqlite3_column_text(st, 7),
                .kind = sqlite3_column_int(st, 8),
        };
}

/* The frames of a sample's stack, reused from sample to sample. */
struct outbox_frames {
        hashmap *cache; /* the store's location cache */
        struct store_frame_out *out;
        size_t cap;
};

/* Gives smp, with its stack's frames, to fn. */
static int outbox_send(store *s, struct store_outbox_sample *smp, struct outbox_frames *sb,
                       store_outbox_sample_fn fn, void *userdata) {
        int r = store_stack_frames(s, smp->stack_id, sb->cache, &sb->out, &sb->cap, &smp->n_frames, &smp->user_end);

        if (r < 0)
                return r;
        smp->frames = sb->out;
        return fn(smp, userdata);
}

int store_outbox_samples(store *s, int64_t drain_id, store_outbox_sample_fn fn, void *userdata,
                         uint64_t *ret_damaged) {
        struct outbox_frames sb = {};
        sqlite3_stmt *st = NULL;
        int64_t raw = 0;
        bool v7;
        int rc, r;

        /* one read transaction: retention may merge or delete the drain
         * meanwhile, this sees it whole or not at all */
        if ((r = db_exec(&s->d, "BEGIN")) < 0)
                return r;
        r = outbox_i64(s, "SELECT count(*) FROM drains WHERE id = ?1 AND resolution_ns = 0", NULL, drain_id, 0, &raw);
        if (r < 0)
                goto out;
        if (raw == 0) {
                r = -ENOENT;
                goto out;
        }
        sb.cache = store_query_location_cache(s);
        if (!sb.cache) {
                r = -ENOMEM;
                goto out;
        }
        /* the blocks holding the drain: its own, or its span's (schema 9),
         * whose entries of other drains are skipped */
        rc = sqlite3_prepare_v2(s->d.handle, "SELECT p.pid, p.start_ns, p.comm, p.exe, p.uid, p.cgroup, p.unit, p.container, "
                                       "b.kind, p.id, " SAMPLE_BLOCK_COLUMNS ", ?1 - b.drain_id "
                                       "FROM sample_blocks b JOIN processes p ON p.id = b.process_id "
                                       "WHERE b.drain_id = (SELECT coalesce(span, id) FROM drains WHERE id = ?1)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK) {
                r = db_fail(&s->d, rc, "outbox samples");
                goto out;
        }
        sqlite3_bind_int64(st, 1, drain_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t span = sqlite3_column_int64(st, OUTBOX_PROCESS_COLUMNS + SAMPLE_BLOCK_N_COLUMNS);
                struct sample_block b;

                if (sample_block_from_row(st, OUTBOX_PROCESS_COLUMNS, &b) < 0) {
                        /* unreadable: skipped, as queries do, rather than
                         * holding the export at this drain until retention
                         * drops the block */
                        log_error("Store %s: a block of samples of drain %" PRId64 " is damaged: its entries are "
                                  "not exported (damaged_blocks in the export's status).", s->path, drain_id);
                        if (ret_damaged)
                                (*ret_damaged)++;
                        continue;
                }
                for (size_t i = 0; i < b.n; i++) {
                        struct store_outbox_sample smp = outbox_process_columns(st);
                        struct sample_entry e;

                        sample_block_get(&b, i, &e);
                        if (e.span != span)
                                continue;
                        smp.tid = e.tid;
                        smp.cgroup_id = e.cgroup_id;
                        smp.state = e.state;
                        smp.peer_tid = e.peer_tid;
                        smp.stack_id = e.stack_id;
                        smp.value = e.value;
                        r = outbox_send(s, &smp, &sb, fn, userdata);
                        if (r < 0)
                                goto out;
                }
        }
        if (rc != SQLITE_DONE) {
                r = db_fail(&s->d, rc, "outbox samples");
                goto out;
        }
        /* a drain schema 8's conversion has not reached yet is still all in
         * samples_v7 (a conversion step moves whole drains, and this read
         * transaction sees it before or after, never half): sent from
         * there, so the export neither waits for it nor misses it */
        r = store_v7_present(s, &v7);
        if (r < 0 || !v7)
                goto out;
        sqlite3_finalize(st);
        rc = sqlite3_prepare_v2(s->d.handle, "SELECT p.pid, p.start_ns, p.comm, p.exe, p.uid, p.cgroup, p.unit, p.container, "
                                       "s.kind, p.id, s.tid, s.cgroup_id, s.state, s.peer_tid, s.stack_id, s.value "
                                       "FROM samples_v7 s JOIN processes p ON p.id = s.process_id WHERE s.drain_id = ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK) {
                st = NULL;
                r = db_fail(&s->d, rc, "outbox samples");
                goto out;
        }
        sqlite3_bind_int64(st, 1, drain_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_outbox_sample smp = outbox_process_columns(st);

                smp.tid = (uint32_t) sqlite3_column_int64(st, 10);
                smp.cgroup_id = (uint64_t) sqlite3_column_int64(st, 11);
                smp.state = (uint8_t) sqlite3_column_int(st, 12);
                smp.peer_tid = (uint32_t) sqlite3_column_int64(st, 13);
                smp.stack_id = sqlite3_column_int64(st, 14);
                smp.value = (uint64_t) sqlite3_column_int64(st, 15);
                r = outbox_send(s, &smp, &sb, fn, userdata);
                if (r < 0)
                        goto out;
        }
        if (rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "outbox samples");
out:
        free(sb.out);
        sqlite3_finalize(st);
        store_query_location_cache_done(s, sb.cache);
        (void) db_exec(&s->d, "COMMIT");
        return r;
}

int store_outbox_timeline(store *s, int64_t drain_id, store_outbox_tick_fn fn, void *userdata,
                          uint64_t *ret_damaged) {
        _cleanup_(timeline_block_done) struct timeline_block b = {};
        sqlite3_stmt *st = NULL;
        uint64_t start_ns;
        int rc, r;

        if ((r = db_exec(&s->d, "BEGIN")) < 0)
                return r;
        rc = sqlite3_prepare_v2(s->d.handle, "SELECT start_ns, data FROM timeline_blocks WHERE drain_id = ?1", -1, &st,
                                NULL);
        if (rc != SQLITE_OK) {
                r = db_fail(&s->d, rc, "outbox timeline");
                goto out;
        }
        sqlite3_bind_int64(st, 1, drain_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                goto out; /* none */
        if (rc != SQLITE_ROW) {
                r = db_fail(&s->d, rc, "outbox timeline");
                goto out;
        }
        start_ns = (uint64_t) sqlite3_column_int64(st, 0);
        r = timeline_unpack(sqlite3_column_blob(st, 1), (size_t) sqlite3_column_bytes(st, 1), &b);
        if (r == -EBADMSG) {
                log_error("Store %s: the timeline of drain %" PRId64 " is damaged: its samples' times are not "
                          "exported (damaged_blocks in the export's status).", s->path, drain_id);
                if (ret_damaged)
                        (*ret_damaged)++;
                r = 0;
                goto out;
        }
        if (r < 0)
                goto out;
        for (size_t i = 0; i < b.n_samples; i++) {
                const struct timeline_key *k = &b.keys[b.samples[i].key];
                struct store_outbox_tick t = {
                        .time_ns = start_ns + b.samples[i].time_us * NSEC_PER_USEC,
                        .process_id = k->process_id,
                        .stack_id = k->stack_id,
                        .tid = k->tid,
                };

                r = fn(&t, userdata);
                if (r < 0)
                        goto out;
        }
out:
        sqlite3_finalize(st);
        (void) db_exec(&s->d, "COMMIT");
        return r;
}

int store_outbox_drops(store *s, int64_t drain_id, store_drop_fn fn, void *userdata) {
        struct store_query q = { .drain_id = drain_id };

        /* one drain's rows, no window: the query above's first form */
        if (drain_id <= 0)
                return -EINVAL;
        return store_query_drops(s, &q, fn, userdata);
}
