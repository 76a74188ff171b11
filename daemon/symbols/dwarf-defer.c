/* When a file's DWARF is read: see dwarf-defer.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-defer.h"
#include "macro.h"

/* What one pending frame costs: a hash slot at the map's load factor. */
#define PENDING_ENTRY_BYTES 32

void dwarf_defer_init(struct dwarf_defer *d, uint64_t min) {
        *d = (struct dwarf_defer) { .on = min == 0 };
}

void dwarf_defer_done(struct dwarf_defer *d) {
        hashmap_free(d->pending);
        free(d->module);
        *d = (struct dwarf_defer) {};
}

bool dwarf_defer_note(struct dwarf_defer *d, uint64_t samples, uint64_t min) {
        if (d->on)
                return false;
        d->samples = samples > UINT64_MAX - d->samples ? UINT64_MAX : d->samples + samples;
        if (d->samples < min)
                return false;
        d->on = true;
        return true;
}

int dwarf_defer_pend(struct dwarf_defer *d, uint64_t offset, const char *module) {
        int r;

        if (d->module && strcmp(d->module, module) != 0)
                return -ENOSPC;
        if (!d->pending) {
                d->pending = hashmap_new_u64();
                if (!d->pending)
                        return -ENOMEM;
        }
        if (!d->module) {
                d->module = strdup(module);
                if (!d->module)
                        return -ENOMEM;
        }
        if (hashmap_size(d->pending) >= DWARF_DEFER_PENDING_MAX)
                return hashmap_get(d->pending, UINT64_TO_KEY(offset), NULL) >= 0 ? 0 : -ENOSPC;
        r = hashmap_put(d->pending, UINT64_TO_KEY(offset), (void *) 1);
        if (r == -EEXIST)
                return 0;
        return r < 0 ? r : 1;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

int dwarf_defer_take(struct dwarf_defer *d, uint64_t **ret, char **ret_module) {
        size_t n = dwarf_defer_pending(d), i = 0, state = 0;
        uint64_t *offs;
        const void *k;

        *ret = NULL;
        *ret_module = NULL;
        if (n == 0)
                return 0;
        offs = malloc(n * sizeof(*offs));
        if (!offs)
                return -ENOMEM;
        while (hashmap_iterate(d->pending, &state, &k, NULL))
                offs[i++] = KEY_TO_UINT64(k);
        qsort(offs, n, sizeof(*offs), cmp_u64);
        *ret = offs;
        *ret_module = TAKE_PTR(d->module);
        d->pending = hashmap_free(d->pending);
        return (int) MIN(n, (size_t) INT32_MAX);
}

size_t dwarf_defer_pending(const struct dwarf_defer *d) {
        return d->pending ? hashmap_size(d->pending) : 0;
}

uint64_t dwarf_defer_bytes(const struct dwarf_defer *d) {
        return (uint64_t) dwarf_defer_pending(d) * PENDING_ENTRY_BYTES + (d->module ? strlen(d->module) + 1 : 0);
}
