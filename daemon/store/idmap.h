/* A map from a pair of 64-bit integers to a row id, keys stored in the
 * slots: the drain writer's cache of location and process ids. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The writer looks one up per frame of every key it stores (a build host's
 * drains: hundreds of thousands a drain). In a map of string keys each
 * lookup formatted the key, hashed it and compared it with a string of its
 * own in the heap, a cache miss more than the slot's (docs/performance.md,
 * "The daemon on a build host"). */
typedef struct idmap idmap;

/* An empty map; NULL without memory. */
idmap *idmap_new(void);
idmap *idmap_free(idmap *m);

/* Returns 0 and sets *ret_id, or -ENOENT. */
int idmap_get(const idmap *m, uint64_t a, uint64_t b, int64_t *ret_id);
/* Returns 0, -EEXIST if (a, b) is present (its id unchanged), -ENOMEM. */
int idmap_put(idmap *m, uint64_t a, uint64_t b, int64_t id);
/* Empties the map and frees its slots. */
void idmap_clear(idmap *m);
size_t idmap_size(const idmap *m);
