/* See merge-fold.h. */
#include "merge-fold.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "stack-fold.h"
#include "stack-pack.h"
#include "store-private.h"

/* Kinds folded apart, each against its own total: a (stack, kind) key
 * keeps the kind in its low bits. */
#define KIND_BITS 3
#define FOLD_KEY(stack, kind) ((uint64_t) (stack) << KIND_BITS | (uint64_t) (kind))

/* A stack of the step: where its frames are in the flat array, its end. */
struct item {
        uint64_t key;
        size_t at;
        int user_end; /* STORE_END_UNKNOWN: NULL */
};

/* The folded frame's location id, stored first if create; 0 when it does
 * not exist and create is false. */
static int folded_location(const struct db *d, bool create, int64_t *ret) {
        static const char *const find = "SELECT l.id FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                                        "WHERE m.path = '" FOLDED_NAME "' AND m.build_id = '' AND l.address = 0";
        int64_t id;
        int k;

        k = db_query_i64(d, find, NULL, 0, 0, &id);
        if (k < 0 || id > 0 || !create) {
                *ret = id;
                return k;
        }
        k = db_exec(d, "INSERT OR IGNORE INTO mappings (path, build_id) VALUES ('" FOLDED_NAME "', '');"
                       "INSERT OR IGNORE INTO functions (mapping_id, raw_name, name) SELECT id, '" FOLDED_NAME
                       "', '" FOLDED_NAME "' FROM mappings WHERE path = '" FOLDED_NAME "' AND build_id = '';"
                       "INSERT OR IGNORE INTO locations (mapping_id, address, function_id, kernel) "
                       "SELECT m.id, 0, f.id, 0 FROM mappings m JOIN functions f ON f.mapping_id = m.id "
                       "WHERE m.path = '" FOLDED_NAME "' AND m.build_id = '' AND f.raw_name = '" FOLDED_NAME "';");
        if (k >= 0)
                k = db_query_i64(d, find, NULL, 0, 0, &id);
        if (k >= 0 && id <= 0)
                k = log_error_errno(-EIO, "Store %s: %sthe folded frame could not be stored.", d->path, d->who);
        *ret = id;
        return k;
}

/* Adds the values of the bucket's entries (their drain in bucket) to
 * their (stack, kind) in w, and marks in step those of the step's drains. */
static int weigh(const struct db *d, const char *keys_sql, const hashmap *bucket, const hashmap *step_drains,
                 hashmap *w, hashmap *step) {
        _cleanup_free_ char *sql = NULL;
        sqlite3_stmt *st = NULL;
        int k, rc;

        if (asprintf(&sql, "SELECT b.drain_id, b.kind, " SAMPLE_BLOCK_COLUMNS_STACKS " FROM sample_blocks b "
                           "WHERE b.drain_id IN %s", keys_sql) < 0)
                return -ENOMEM;
        k = db_prepare(d, sql, NULL, 0, &st);
        while (k >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t key = sqlite3_column_int64(st, 0);
                int kind = sqlite3_column_int(st, 1);
                struct sample_block b;

                /* a damaged block is dropped by the merge: it weighs nothing */
                if (kind < 0 || kind >= 1 << KIND_BITS || sample_block_from_row_stacks(st, 2, &b) < 0)
                        continue;
                for (size_t i = 0; i < b.n && k >= 0; i++) {
                        const void *fk;
                        struct sample_entry e;
                        void **v;

                        sample_block_get(&b, i, &e);
                        if (hashmap_get(bucket, UINT64_TO_KEY(key + e.span), NULL) < 0)
                                continue;
                        fk = UINT64_TO_KEY(FOLD_KEY(e.stack_id, kind));
                        v = hashmap_value(w, fk);
                        if (v)
                                *v = (void *) ((uintptr_t) *v + (uintptr_t) e.value);
                        else
                                k = hashmap_put(w, fk, (void *) (uintptr_t) e.value);
                        if (k >= 0 && hashmap_get(step_drains, UINT64_TO_KEY(key + e.span), NULL) >= 0 &&
                            hashmap_put(step, fk, (void *) 1) == -ENOMEM)
                                k = -ENOMEM;
                }
        }
        if (k >= 0 && rc != SQLITE_DONE)
                k = db_fail(d, rc, "weighing the stacks to fold");
        sqlite3_finalize(st);
        return k;
}

/* By kind, then stack: each kind one run. */
static int by_kind(const void *a, const void *b) {
        uint64_t x = ((const struct item *) a)->key, y = ((const struct item *) b)->key;
        uint64_t kx = x & ((1u << KIND_BITS) - 1), ky = y & ((1u << KIND_BITS) - 1);

        if (kx != ky)
                return kx < ky ? -1 : 1;
        return x < y ? -1 : x > y;
}

int merge_fold_plan(const struct db *d, const char *bucket_keys_sql, const hashmap *bucket, const char *step_keys_sql,
                    const hashmap *step_drains, size_t max_stacks, uint32_t share_ppm, hashmap **ret_map,
                    uint64_t *ret_folded, bool *ret_bucket_too_big) {
        _cleanup_free_ struct item *items = NULL;
        _cleanup_free_ struct fold_stack *fs = NULL;
        _cleanup_free_ int64_t *frames = NULL, *buf = NULL, *ids = NULL;
        struct varint_out packed = {};
        sqlite3_stmt *get = NULL, *sel = NULL, *ins = NULL;
        hashmap *w = hashmap_new_u64(), *step = hashmap_new_u64(), *map = NULL;
        size_t n = 0, n_frames = 0, cap = 0, buf_cap = 0, ids_cap = 0, state = 0;
        int64_t folded = 0;
        uint64_t count = 0;
        const void *key;
        void *value;
        int k;

        *ret_map = NULL;
        *ret_folded = 0;
        *ret_bucket_too_big = false;
        if (!w || !step) {
                k = -ENOMEM;
                goto out;
        }
        k = weigh(d, bucket_keys_sql, bucket, step_drains, w, step);
        /* a bucket of too many stacks for their frames' memory: the step's
         * alone (a share of less than the bucket, so it folds less) */
        if (k >= 0 && bucket != step_drains && hashmap_size(w) > max_stacks) {
                hashmap_free(w);
                hashmap_free(step);
                w = hashmap_new_u64(), step = hashmap_new_u64();
                if (!w || !step) {
                        k = -ENOMEM;
                        goto out;
                }
                k = weigh(d, step_keys_sql, step_drains, step_drains, w, step);
                *ret_bucket_too_big = true;
        }
        if (k < 0 || hashmap_size(step) == 0)
                goto out;
        items = calloc(hashmap_size(w), sizeof(*items));
        fs = calloc(hashmap_size(w), sizeof(*fs));
        if (!items || !fs) {
                k = -ENOMEM;
                goto out;
        }
        while (hashmap_iterate(w, &state, &key, &value))
                items[n++].key = KEY_TO_UINT64(key);
        qsort(items, n, sizeof(*items), by_kind);

        /* the frames of each, in one array */
        k = db_prepare(d, "SELECT frames, user_end FROM stacks WHERE id = ?1", NULL, 0, &get);
        for (size_t i = 0; i < n && k >= 0; i++) {
                size_t got = 0;
                int rc;

                sqlite3_reset(get);
                sqlite3_bind_int64(get, 1, (int64_t) (items[i].key >> KIND_BITS));
                rc = sqlite3_step(get);
                if (rc == SQLITE_ROW)
                        k = stack_unpack(sqlite3_column_blob(get, 0), (size_t) sqlite3_column_bytes(get, 0), &buf,
                                         &buf_cap, &got);
                else if (rc != SQLITE_DONE)
                        k = db_fail(d, rc, "reading a stack to fold");
                /* a stack missing or unreadable is kept as it is */
                if (k < 0 || rc != SQLITE_ROW) {
                        items[i].at = SIZE_MAX;
                        k = k == -EBADMSG ? 0 : k;
                        continue;
                }
                if (n_frames + got > cap) {
                        size_t c = MAX(cap * 2, n_frames + got + 1024);
                        int64_t *f = realloc(frames, c * sizeof(*f));

                        if (!f) {
                                k = -ENOMEM;
                                break;
                        }
                        frames = f, cap = c;
                }
                if (got)
                        memcpy(frames + n_frames, buf, got * sizeof(*buf));
                items[i].at = n_frames;
                items[i].user_end = sqlite3_column_type(get, 1) == SQLITE_NULL ? STORE_END_UNKNOWN : sqlite3_column_int(get, 1);
                fs[i].n = got;
                n_frames += got;
        }
        sqlite3_finalize(get);
        if (k < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                void *v = NULL;

                (void) hashmap_get(w, UINT64_TO_KEY(items[i].key), &v);
                fs[i].frames = items[i].at == SIZE_MAX ? NULL : frames + items[i].at;
                fs[i].weight = items[i].at == SIZE_MAX ? 0 : (uint64_t) (uintptr_t) v;
        }
        k = folded_location(d, false, &folded);
        /* one kind at a time, against its own total */
        for (size_t i = 0, j; i < n && k >= 0; i = j) {
                for (j = i; j < n && (items[j].key & ((1u << KIND_BITS) - 1)) == (items[i].key & ((1u << KIND_BITS) - 1));
                     j++)
                        ;
                k = stack_fold(fs + i, j - i, share_ppm, folded > 0 ? folded : -1);
        }
        for (size_t i = 0; i < n && k >= 0; i++) {
                int64_t id = 0;

                /* only the step's: the rest of the bucket is another step's */
                if (!fs[i].frames || fs[i].keep >= fs[i].n ||
                    hashmap_get(step, UINT64_TO_KEY(items[i].key), NULL) < 0)
                        continue;
                if (folded <= 0 && (k = folded_location(d, true, &folded)) < 0)
                        break;
                if (!map && !(map = hashmap_new_u64())) {
                        k = -ENOMEM;
                        break;
                }
                if (!sel) {
                        k = db_prepare(d, STORE_STACK_SELECT_SQL, NULL, 0, &sel);
                        if (k >= 0)
                                k = db_prepare(d, STORE_STACK_INSERT_SQL, NULL, 0, &ins);
                        if (k < 0)
                                break;
                }
                if (fs[i].keep + 1 > ids_cap) {
                        int64_t *p = realloc(ids, (fs[i].keep + 1) * sizeof(*p));

                        if (!p) {
                                k = -ENOMEM;
                                break;
                        }
                        ids = p, ids_cap = fs[i].keep + 1;
                }
                memcpy(ids, fs[i].frames, fs[i].keep * sizeof(*ids));
                ids[fs[i].keep] = folded;
                k = store_stack_id(d, sel, ins, ids, fs[i].keep + 1, items[i].user_end, &packed, &id);
                if (k >= 0)
                        k = hashmap_put(map, UINT64_TO_KEY(items[i].key), (void *) (intptr_t) id);
                count++;
        }
out:
        sqlite3_finalize(sel);
        sqlite3_finalize(ins);
        free(packed.data);
        hashmap_free(w);
        hashmap_free(step);
        if (k < 0) {
                hashmap_free(map);
                return k;
        }
        *ret_map = map;
        *ret_folded = count;
        return 0;
}

int64_t merge_fold_stack(const hashmap *map, int64_t stack, int kind) {
        void *v;

        if (!map || kind < 0 || kind >= 1 << KIND_BITS || hashmap_get(map, UINT64_TO_KEY(FOLD_KEY(stack, kind)), &v) < 0)
                return stack;
        return (int64_t) (intptr_t) v;
}
