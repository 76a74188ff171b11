/* Open addressing with linear probing over slots that hold their key: a
 * lookup reads one slot (and its neighbours on a collision), nothing
 * else. No removal: the writer's caches are only filled, then cleared. */
#include "idmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hashmap.h"

struct slot {
        uint64_t a, b;
        int64_t id;
        bool used;
};

struct idmap {
        struct slot *slots;
        size_t n_slots; /* 0 or a power of two */
        size_t n_items;
};

idmap *idmap_new(void) {
        return calloc(1, sizeof(idmap));
}

idmap *idmap_free(idmap *m) {
        if (m) {
                free(m->slots);
                free(m);
        }
        return NULL;
}

static size_t slot_of(uint64_t a, uint64_t b, size_t n_slots) {
        return (size_t) hash_u64(hash_u64(a) ^ b) & (n_slots - 1);
}

static struct slot *find(const idmap *m, uint64_t a, uint64_t b) {
        if (m->n_slots == 0)
                return NULL;
        for (size_t i = slot_of(a, b, m->n_slots);; i = (i + 1) & (m->n_slots - 1)) {
                struct slot *s = &m->slots[i];

                if (!s->used || (s->a == a && s->b == b))
                        return s;
        }
}

int idmap_get(const idmap *m, uint64_t a, uint64_t b, int64_t *ret_id) {
        struct slot *s = find(m, a, b);

        if (!s || !s->used)
                return -ENOENT;
        *ret_id = s->id;
        return 0;
}

static int grow(idmap *m) {
        size_t n = m->n_slots ? m->n_slots * 2 : 64;
        struct slot *old = m->slots, *slots = calloc(n, sizeof(*slots));
        size_t n_old = m->n_slots;

        if (!slots)
                return -ENOMEM;
        m->slots = slots;
        m->n_slots = n;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].used)
                        *find(m, old[i].a, old[i].b) = old[i];
        free(old);
        return 0;
}

int idmap_put(idmap *m, uint64_t a, uint64_t b, int64_t id) {
        struct slot *s = find(m, a, b);

        if (s && s->used)
                return -EEXIST;
        /* at most 3/4 full, so that probe runs stay short */
        if ((m->n_items + 1) * 4 > m->n_slots * 3) {
                int r = grow(m);

                if (r < 0)
                        return r;
                s = find(m, a, b);
        }
        *s = (struct slot) { .a = a, .b = b, .id = id, .used = true };
        m->n_items++;
        return 0;
}

void idmap_clear(idmap *m) {
        /* freed, not kept: a cleared cache fills again over drains, and
         * until then its slots would only be resident memory */
        m->slots = (free(m->slots), NULL);
        m->n_slots = m->n_items = 0;
}

size_t idmap_size(const idmap *m) {
        return m ? m->n_items : 0;
}
