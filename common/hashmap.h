/* A small open-addressing hash map from opaque keys to pointers. Keys and
 * values are owned by the caller; the map stores the pointers only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*hashmap_hash_fn)(const void *key);
typedef bool (*hashmap_eq_fn)(const void *a, const void *b);

typedef struct hashmap hashmap;

/* Keys are pointers compared with eq after their hash matched. */
hashmap *hashmap_new(hashmap_hash_fn hash, hashmap_eq_fn eq);
/* Keys are integers stored in the key pointer itself (UINT64_TO_KEY). */
hashmap *hashmap_new_u64(void);
/* Keys are NUL-terminated strings. */
hashmap *hashmap_new_string(void);
hashmap *hashmap_free(hashmap *m);
/* Frees every key (they must come from malloc), then the map. */
hashmap *hashmap_free_with_keys(hashmap *m);

#define UINT64_TO_KEY(u) ((const void *) (uintptr_t) (u))
#define KEY_TO_UINT64(k) ((uint64_t) (uintptr_t) (k))

/* Returns 0, -EEXIST if the key is present (value unchanged), -ENOMEM. */
int hashmap_put(hashmap *m, const void *key, void *value);
/* Returns 0 and sets *ret_value, or -ENOENT. */
int hashmap_get(const hashmap *m, const void *key, void **ret_value);
/* Where key's value is stored, to read or change in place (one lookup
 * instead of a get, a remove and a put); NULL if absent. Valid until the
 * next put or remove. */
void **hashmap_value(hashmap *m, const void *key);
/* Removes the key; returns its value or NULL if absent. */
void *hashmap_remove(hashmap *m, const void *key);
size_t hashmap_size(const hashmap *m);
/* The heap the map itself takes (its slots), without keys and values; 0
 * for NULL. */
size_t hashmap_bytes(const hashmap *m);
/* Iterates all entries: start with *state = 0; returns false when done.
 * The map must not be modified while iterating: collect keys first and
 * remove them afterwards. */
bool hashmap_iterate(const hashmap *m, size_t *state, const void **ret_key, void **ret_value);

uint64_t hash_bytes(const void *data, size_t n);
uint64_t hash_u64(uint64_t v);
