/* The connections store.h hands out, the top of the store's files: each
 * is store.c's connection with the state of the paths it serves (the
 * write path's, store-write.c; the read path's, store-query.c), put
 * together here and taken apart by store_close, so that store.c never
 * calls the files above it. */
#include <errno.h>

#include "store-private.h"

int store_open(const char *path, store **ret) {
        _cleanup_(store_closep) store *s = NULL;
        int r;

        r = store_connect(path, STORE_MODE_DRAIN, &s);
        if (r < 0)
                return r;
        /* the drain connection also reads: status, and tests' queries */
        r = store_write_new(s);
        if (r >= 0)
                r = store_read_new(s, false);
        /* statements that cannot be prepared: a schema SQLite cannot read */
        if (r < 0)
                return store_unusable(s, r);
        *ret = TAKE_PTR(s);
        return 0;
}

/* A reader's or the outbox's connection: read state only, its locations
 * kept from one query to the next. */
static int open_secondary(const char *path, enum store_mode mode, store **ret) {
        _cleanup_(store_closep) store *s = NULL;
        int r;

        r = store_connect(path, mode, &s);
        if (r < 0)
                return r;
        r = store_read_new(s, true);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int store_open_reader(const char *path, store **ret) {
        return open_secondary(path, STORE_MODE_READER, ret);
}

int store_open_outbox(const char *path, store **ret) {
        return open_secondary(path, STORE_MODE_OUTBOX, ret);
}

store *store_close(store *s) {
        if (!s)
                return NULL;
        /* their statements first: SQLite closes no connection that still
         * has some */
        store_read_free(s);
        store_write_free(s);
        return store_disconnect(s);
}
