/* Open addressing with linear probing and backward-shift deletion: no
 * tombstones, so lookups stay short after many removals (the process table
 * churns). */
#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
        const void *key;
        void *value;
        uint64_t hash; /* 0 marks an empty slot; real hashes are forced non-zero */
};

struct hashmap {
        hashmap_hash_fn hash;
        hashmap_eq_fn eq;
        struct entry *slots;
        size_t n_slots; /* power of two */
        size_t n_items;
};

uint64_t hash_u64(uint64_t v) {
        /* splitmix64 finalizer: cheap and spreads sequential pids well */
        v ^= v >> 30;
        v *= 0xbf58476d1ce4e5b9ULL;
        v ^= v >> 27;
        v *= 0x94d049bb133111ebULL;
        v ^= v >> 31;
        return v;
}

uint64_t hash_bytes(const void *data, size_t n) {
        /* FNV-1a, then mixed: keys are short (paths, build-ids, stacks) */
        const unsigned char *p = data;
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= 0x100000001b3ULL;
        }
        return hash_u64(h);
}

static uint64_t u64_hash(const void *k) {
        return hash_u64(KEY_TO_UINT64(k));
}
static bool u64_eq(const void *a, const void *b) {
        return a == b;
}
static uint64_t string_hash(const void *k) {
        return hash_bytes(k, strlen(k));
}
static bool string_eq(const void *a, const void *b) {
        return strcmp(a, b) == 0;
}

hashmap *hashmap_new(hashmap_hash_fn hash, hashmap_eq_fn eq) {
        hashmap *m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        m->hash = hash;
        m->eq = eq;
        return m;
}

hashmap *hashmap_new_u64(void) {
        return hashmap_new(u64_hash, u64_eq);
}

hashmap *hashmap_new_string(void) {
        return hashmap_new(string_hash, string_eq);
}

hashmap *hashmap_free(hashmap *m) {
        if (m) {
                free(m->slots);
                free(m);
        }
        return NULL;
}

hashmap *hashmap_free_with_keys(hashmap *m) {
        if (m)
                for (size_t i = 0; i < m->n_slots; i++)
                        if (m->slots[i].hash != 0)
                                free((void *) m->slots[i].key);
        return hashmap_free(m);
}

static uint64_t entry_hash(const hashmap *m, const void *key) {
        uint64_t h = m->hash(key);
        return h ? h : 1;
}

static struct entry *find(const hashmap *m, const void *key, uint64_t h) {
        if (m->n_slots == 0)
                return NULL;
        for (size_t i = h & (m->n_slots - 1);; i = (i + 1) & (m->n_slots - 1)) {
                struct entry *e = &m->slots[i];
                if (e->hash == 0)
                        return NULL;
                if (e->hash == h && m->eq(e->key, key))
                        return e;
        }
}

static void insert_slot(struct entry *slots, size_t n_slots, struct entry e) {
        size_t i = e.hash & (n_slots - 1);
        while (slots[i].hash != 0)
                i = (i + 1) & (n_slots - 1);
        slots[i] = e;
}

static int grow(hashmap *m) {
        size_t n = m->n_slots ? m->n_slots * 2 : 16;
        struct entry *slots = calloc(n, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_slots; i++)
                if (m->slots[i].hash != 0)
                        insert_slot(slots, n, m->slots[i]);
        free(m->slots);
        m->slots = slots;
        m->n_slots = n;
        return 0;
}

int hashmap_put(hashmap *m, const void *key, void *value) {
        uint64_t h = entry_hash(m, key);

        if (find(m, key, h))
                return -EEXIST;
        /* keep the load factor at or below 3/4 so probe runs stay short */
        if ((m->n_items + 1) * 4 > m->n_slots * 3) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        insert_slot(m->slots, m->n_slots, (struct entry) { key, value, h });
        m->n_items++;
        return 0;
}

int hashmap_get(const hashmap *m, const void *key, void **ret_value) {
        struct entry *e = find(m, key, entry_hash(m, key));
        if (!e)
                return -ENOENT;
        if (ret_value)
                *ret_value = e->value;
        return 0;
}

void **hashmap_value(hashmap *m, const void *key) {
        struct entry *e = find(m, key, entry_hash(m, key));

        return e ? &e->value : NULL;
}

void *hashmap_remove(hashmap *m, const void *key) {
        struct entry *e = find(m, key, entry_hash(m, key));
        void *value;
        size_t mask, i, j;

        if (!e)
                return NULL;
        value = e->value;
        mask = m->n_slots - 1;
        i = (size_t) (e - m->slots);
        /* backward-shift: move later members of the probe run into the hole */
        for (j = (i + 1) & mask; m->slots[j].hash != 0; j = (j + 1) & mask) {
                size_t home = m->slots[j].hash & mask;
                /* entry j may move to i only if its home is not in (i, j] */
                if (((j - home) & mask) >= ((j - i) & mask)) {
                        m->slots[i] = m->slots[j];
                        i = j;
                }
        }
        m->slots[i] = (struct entry) {};
        m->n_items--;
        return value;
}

size_t hashmap_size(const hashmap *m) {
        return m ? m->n_items : 0;
}

size_t hashmap_bytes(const hashmap *m) {
        return m ? sizeof(*m) + m->n_slots * sizeof(*m->slots) : 0;
}

bool hashmap_iterate(const hashmap *m, size_t *state, const void **ret_key, void **ret_value) {
        for (; *state < m->n_slots; (*state)++) {
                struct entry *e = &m->slots[*state];
                if (e->hash != 0) {
                        if (ret_key)
                                *ret_key = e->key;
                        if (ret_value)
                                *ret_value = e->value;
                        (*state)++;
                        return true;
                }
        }
        return false;
}
