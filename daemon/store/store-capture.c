/* Captures' rows (schema 12): the events and pins of daemon/capture-manager.c,
 * on store_open's connection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "helpers.h"
#include "store-private.h"
#include "store.h"

static const char *const state_names[_STORE_CAPTURE_STATE_MAX] = {
        [STORE_CAPTURE_ACTIVE] = "active",
        [STORE_CAPTURE_PINNED] = "pinned",
        [STORE_CAPTURE_UNPINNED] = "unpinned",
};

const char *store_capture_state_name(enum store_capture_state s) {
        return (unsigned) s < _STORE_CAPTURE_STATE_MAX ? state_names[s] : "unknown";
}

static enum store_capture_state state_parse(const char *s) {
        for (unsigned i = 0; i < _STORE_CAPTURE_STATE_MAX; i++)
                if (s && streq(s, state_names[i]))
                        return (enum store_capture_state) i;
        return STORE_CAPTURE_PINNED; /* the CHECK allows no other: keep it pinned, the safe side */
}

int store_capture_add(store *s, const struct store_capture *c, int64_t *ret_id) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->d.handle,
                                "INSERT INTO captures (cause, origin, uid, value_centi, trigger_ns, from_ns, to_ns, "
                                "pinned_bytes, state, frequency_hz) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing a capture");
        sqlite3_bind_text(st, 1, c->cause, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c->origin, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, c->uid);
        if (c->has_value)
                sqlite3_bind_int64(st, 4, c->value_centi);
        sqlite3_bind_int64(st, 5, (int64_t) c->trigger_ns);
        sqlite3_bind_int64(st, 6, (int64_t) c->from_ns);
        sqlite3_bind_int64(st, 7, (int64_t) MIN(c->to_ns, (uint64_t) INT64_MAX));
        sqlite3_bind_int64(st, 8, (int64_t) MIN(c->pinned_bytes, (uint64_t) INT64_MAX));
        sqlite3_bind_text(st, 9, store_capture_state_name(c->state), -1, SQLITE_STATIC);
        if (c->frequency_hz > 0)
                sqlite3_bind_int64(st, 10, c->frequency_hz);
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return db_fail(&s->d, rc, "recording a capture");
        *ret_id = sqlite3_last_insert_rowid(s->d.handle);
        return 0;
}

int store_capture_set(store *s, int64_t id, enum store_capture_state state, uint64_t pinned_bytes) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->d.handle, "UPDATE captures SET state = ?2, pinned_bytes = ?3 WHERE id = ?1", -1,
                                &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing a capture's update");
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, store_capture_state_name(state), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) MIN(pinned_bytes, (uint64_t) INT64_MAX));
        rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return db_fail(&s->d, rc, "updating a capture");
        return sqlite3_changes(s->d.handle) > 0 ? 0 : -ENOENT;
}

#define CAPTURE_COLUMNS "id, cause, origin, uid, value_centi, trigger_ns, from_ns, to_ns, pinned_bytes, state, " \
                        "coalesce(frequency_hz, 0)"

static void capture_from_row(sqlite3_stmt *st, struct store_capture *c) {
        *c = (struct store_capture) {
                .id = sqlite3_column_int64(st, 0),
                .cause = (const char *) sqlite3_column_text(st, 1),
                .origin = (const char *) sqlite3_column_text(st, 2),
                .uid = (uint32_t) sqlite3_column_int64(st, 3),
                .has_value = sqlite3_column_type(st, 4) != SQLITE_NULL,
                .value_centi = (uint32_t) sqlite3_column_int64(st, 4),
                .trigger_ns = (uint64_t) sqlite3_column_int64(st, 5),
                .from_ns = (uint64_t) sqlite3_column_int64(st, 6),
                .to_ns = (uint64_t) sqlite3_column_int64(st, 7),
                .pinned_bytes = (uint64_t) sqlite3_column_int64(st, 8),
                .state = state_parse((const char *) sqlite3_column_text(st, 9)),
                .frequency_hz = (unsigned) sqlite3_column_int64(st, 10),
        };
        if (!c->cause)
                c->cause = "";
        if (!c->origin)
                c->origin = "";
}

int store_capture_get(store *s, int64_t id, struct store_capture *ret, char **ret_cause) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r;

        r = db_prepare(&s->d, "SELECT " CAPTURE_COLUMNS " FROM captures WHERE id = ?1", &id, 1, &st);
        if (r < 0)
                return r;
        r = sqlite3_step(st);
        if (r == SQLITE_DONE)
                return -ENOENT;
        if (r != SQLITE_ROW)
                return db_fail(&s->d, r, "reading a capture");
        capture_from_row(st, ret);
        *ret_cause = strdup(ret->cause);
        if (!*ret_cause)
                return -ENOMEM;
        ret->cause = *ret_cause;
        ret->origin = streq(ret->origin, "setting") ? "setting" : "request";
        return 0;
}

int store_capture_list(store *s, size_t limit, store_capture_fn fn, void *userdata) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int64_t lim = limit ? (int64_t) limit : -1;
        int r;

        r = db_prepare(&s->d, "SELECT " CAPTURE_COLUMNS " FROM captures ORDER BY id DESC LIMIT ?1", &lim, 1, &st);
        if (r < 0)
                return r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_capture c;

                capture_from_row(st, &c);
                r = fn(&c, userdata);
                if (r < 0)
                        return r;
        }
        return r == SQLITE_DONE ? 0 : db_fail(&s->d, r, "listing captures");
}

int store_capture_window(store *s, uint64_t from_ns, uint64_t to_ns, bool only_uid, uint32_t uid, size_t limit,
                         store_capture_fn fn, void *userdata, uint64_t *ret_omitted) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int64_t args[4] = { (int64_t) MIN(from_ns, (uint64_t) INT64_MAX), (int64_t) MIN(to_ns, (uint64_t) INT64_MAX),
                            only_uid, uid };
        uint64_t n = 0;
        int r;

        /* the table holds one row per cool-down at most: no index needed */
        r = db_prepare(&s->d,
                       "SELECT " CAPTURE_COLUMNS " FROM captures WHERE to_ns >= ?1 AND from_ns <= ?2 "
                       "AND (?3 = 0 OR uid = ?4) ORDER BY trigger_ns, id",
                       args, 4, &st);
        if (r < 0)
                return r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_capture c;

                if (n++ >= limit)
                        continue;
                capture_from_row(st, &c);
                r = fn(&c, userdata);
                if (r < 0)
                        return r;
        }
        if (r != SQLITE_DONE)
                return db_fail(&s->d, r, "reading the captures of a window");
        *ret_omitted = n > limit ? n - limit : 0;
        return 0;
}

int store_capture_bytes(store *s, uint64_t from_ns, uint64_t to_ns, uint64_t *ret) {
        int64_t args[2] = { (int64_t) MIN(from_ns, (uint64_t) INT64_MAX), (int64_t) MIN(to_ns, (uint64_t) INT64_MAX) };
        int64_t blocks, timeline;
        int r;

        /* the same overlap as retention.c's DRAIN_PINNED */
        r = db_query_i64(&s->d,
                         "SELECT coalesce(sum(length(b.entries)), 0) FROM drains d JOIN sample_blocks b "
                         "ON b.drain_id = d.id WHERE d.end_ns >= ?1 AND d.start_ns <= ?2",
                         args, 2, 0, &blocks);
        if (r < 0)
                return r;
        r = db_query_i64(&s->d,
                         "SELECT coalesce(sum(length(t.data)), 0) FROM drains d JOIN timeline_blocks t "
                         "ON t.drain_id = d.id WHERE d.end_ns >= ?1 AND d.start_ns <= ?2",
                         args, 2, 0, &timeline);
        if (r < 0)
                return r;
        *ret = (uint64_t) blocks + (uint64_t) timeline;
        return 0;
}

int store_capture_totals(store *s, struct store_capture_totals *ret) {
        int64_t count, pinning, bytes, last;
        int r;

        if ((r = db_query_i64(&s->d, "SELECT count(*) FROM captures", NULL, 0, 0, &count)) < 0 ||
            (r = db_query_i64(&s->d, "SELECT count(*) FROM captures WHERE state <> 'unpinned'", NULL, 0, 0,
                              &pinning)) < 0 ||
            (r = db_query_i64(&s->d, "SELECT coalesce(sum(pinned_bytes), 0) FROM captures WHERE state <> 'unpinned'",
                              NULL, 0, 0, &bytes)) < 0 ||
            (r = db_query_i64(&s->d, "SELECT coalesce(max(trigger_ns), 0) FROM captures", NULL, 0, 0, &last)) < 0)
                return r;
        *ret = (struct store_capture_totals) {
                .count = (uint64_t) count,
                .pinning = (uint64_t) pinning,
                .pinned_bytes = (uint64_t) bytes,
                .last_trigger_ns = (uint64_t) last,
        };
        return 0;
}

int64_t store_capture_settle(store *s) {
        return db_run(&s->d, "UPDATE captures SET state = 'pinned' WHERE state = 'active'", NULL, 0);
}
