/* Blocks of samples in SQLite (sample-blocks.h): one row per (drain, kind,
 * process), the packing in sample-pack.c. */
#include "sample-blocks.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"

/* The block whose n, widths and bases are read; its blob at column col. */
static int block_finish(sqlite3_stmt *st, int col, int64_t n, struct sample_block *b) {
        b->n = (size_t) n;
        b->data = (uint8_t *) sqlite3_column_blob(st, col);
        b->size = (size_t) sqlite3_column_bytes(st, col);
        if (n < 0 || sample_block_check(b) < 0)
                return -EBADMSG;
        return 0;
}

int sample_block_from_row(sqlite3_stmt *st, int col, struct sample_block *ret) {
        int64_t n = sqlite3_column_int64(st, col);
        struct sample_block b = { .widths = (uint64_t) sqlite3_column_int64(st, col + 1) };

        for (int f = 0; f < SAMPLE_FIELD_SPAN; f++)
                b.base[f] = (uint64_t) sqlite3_column_int64(st, col + 2 + f);
        if (block_finish(st, col + 2 + SAMPLE_FIELD_SPAN, n, &b) < 0)
                return -EBADMSG;
        *ret = b;
        return 0;
}

int sample_block_from_row_stacks(sqlite3_stmt *st, int col, struct sample_block *ret) {
        int64_t n = sqlite3_column_int64(st, col);
        struct sample_block b = { .widths = (uint64_t) sqlite3_column_int64(st, col + 1) };

        b.base[SAMPLE_FIELD_STACK] = (uint64_t) sqlite3_column_int64(st, col + 2);
        b.base[SAMPLE_FIELD_VALUE] = (uint64_t) sqlite3_column_int64(st, col + 3);
        if (block_finish(st, col + 4, n, &b) < 0)
                return -EBADMSG;
        *ret = b;
        return 0;
}

int stack_refs_add(hashmap *refs, int64_t stack, int64_t delta) {
        void *v = NULL;
        int64_t n = 0;

        if (hashmap_get(refs, UINT64_TO_KEY(stack), &v) >= 0) {
                n = (int64_t) (intptr_t) v;
                hashmap_remove(refs, UINT64_TO_KEY(stack));
        }
        return hashmap_put(refs, UINT64_TO_KEY(stack), (void *) (intptr_t) (n + delta));
}

int stack_refs_add_block(hashmap *refs, const struct sample_block *b, int64_t delta) {
        int64_t prev = -1;

        /* entries are sorted by stack: a stack's entries are neighbours */
        for (size_t i = 0; i < b->n; i++) {
                struct sample_entry e;
                int r;

                sample_block_get(b, i, &e);
                if (e.stack_id == prev)
                        continue;
                prev = e.stack_id;
                r = stack_refs_add(refs, e.stack_id, delta);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sample_blocks_insert(const struct db *d, sqlite3_stmt **st, int64_t drain, int kind, int64_t process,
                         struct sample_entry *e, size_t n, hashmap *refs, hashmap *process_refs) {
        struct sample_block b;
        int rc, r;

        if (n == 0)
                return 0;
        r = sample_block_pack(e, n, &b);
        if (r < 0)
                return r;
        if (!*st) {
                rc = sqlite3_prepare_v3(d->handle, SAMPLE_BLOCKS_INSERT_SQL, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
                if (rc != SQLITE_OK) {
                        free(b.data);
                        return db_fail(d, rc, "preparing a block insert");
                }
        }
        sqlite3_bind_int64(*st, 1, drain);
        sqlite3_bind_int(*st, 2, kind);
        sqlite3_bind_int64(*st, 3, process);
        sqlite3_bind_int64(*st, 4, (int64_t) b.n);
        sqlite3_bind_int64(*st, 5, b.widths);
        for (int f = 0; f < SAMPLE_FIELD_SPAN; f++)
                sqlite3_bind_int64(*st, 6 + f, (int64_t) b.base[f]);
        if (b.size > 0)
                sqlite3_bind_blob(*st, 12, b.data, (int) b.size, free);
        else
                free(b.data);
        b.data = NULL;
        /* reset and its bindings cleared, which frees the packed entries */
        r = db_step(d, *st, NULL, "block insert");
        if (r < 0)
                return r;
        if (process_refs) {
                r = stack_refs_add(process_refs, process, 1);
                if (r < 0)
                        return r;
        }
        if (!refs)
                return 0;
        /* the entries were sorted by pack: count each stack once */
        for (size_t i = 0; i < n; i++)
                if (i == 0 || e[i].stack_id != e[i - 1].stack_id) {
                        r = stack_refs_add(refs, e[i].stack_id, 1);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* refs_apply's statements for one kind of count. */
struct refs_sql {
        const char *upsert, *candidate;
};

static int refs_apply(const struct db *d, const struct refs_sql *sql, hashmap *refs, bool gc_candidates) {
        _cleanup_stmt_ sqlite3_stmt *up = NULL, *gc = NULL;
        size_t state = 0;
        const void *k;
        void *v;
        int rc;

        while (hashmap_iterate(refs, &state, &k, &v)) {
                int64_t delta = (int64_t) (intptr_t) v;

                if (delta == 0)
                        continue;
                /* prepared at the first count that changes: retention
                 * applies the counts of each process in turn, and most
                 * change none */
                if (!up) {
                        rc = sqlite3_prepare_v2(d->handle, sql->upsert, -1, &up, NULL);
                        if (rc == SQLITE_OK && gc_candidates)
                                rc = sqlite3_prepare_v2(d->handle, sql->candidate, -1, &gc, NULL);
                        if (rc != SQLITE_OK)
                                return db_fail(d, rc, "preparing block counts");
                }
                sqlite3_bind_int64(up, 1, (int64_t) KEY_TO_UINT64(k));
                sqlite3_bind_int64(up, 2, delta);
                rc = sqlite3_step(up);
                sqlite3_reset(up);
                if (rc != SQLITE_DONE)
                        return db_fail(d, rc, "block count update");
                if (gc && delta < 0) {
                        sqlite3_bind_int64(gc, 1, (int64_t) KEY_TO_UINT64(k));
                        rc = sqlite3_step(gc);
                        sqlite3_reset(gc);
                        if (rc != SQLITE_DONE)
                                return db_fail(d, rc, "removal candidate");
                }
        }
        return 0;
}

int stack_refs_apply(const struct db *d, hashmap *refs, bool gc_candidates) {
        static const struct refs_sql sql = {
                "INSERT INTO stack_refs (stack_id, blocks) VALUES (?1, ?2) "
                "ON CONFLICT (stack_id) DO UPDATE SET blocks = blocks + excluded.blocks",
                "INSERT OR IGNORE INTO temp.gc_stacks SELECT ?1 "
                "WHERE (SELECT blocks FROM stack_refs WHERE stack_id = ?1) <= 0",
        };
        return refs_apply(d, &sql, refs, gc_candidates);
}

int process_refs_apply(const struct db *d, hashmap *refs, bool gc_candidates) {
        static const struct refs_sql sql = {
                "INSERT INTO process_refs (process_id, blocks) VALUES (?1, ?2) "
                "ON CONFLICT (process_id) DO UPDATE SET blocks = blocks + excluded.blocks",
                "INSERT OR IGNORE INTO temp.gc_processes SELECT ?1 "
                "WHERE (SELECT blocks FROM process_refs WHERE process_id = ?1) <= 0",
        };
        return refs_apply(d, &sql, refs, gc_candidates);
}
