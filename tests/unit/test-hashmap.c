/* The hash map keeps every key findable through growth and removals
 * (removal shifts probe runs back; a mistake there loses keys). */
#include <errno.h>
#include <stdlib.h>

#include "hashmap.h"
#include "tests.h"

static void test_insert_find_remove_many(void) {
        hashmap *m = hashmap_new_u64();
        const size_t n = 20000;
        void *v;

        for (uint64_t i = 1; i <= n; i++)
                CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(i * 7919), (void *) (uintptr_t) i), 0);
        CHECK_INT_EQ(hashmap_size(m), n);
        CHECK_INT_EQ(hashmap_put(m, UINT64_TO_KEY(7919), NULL), -EEXIST);
        /* remove every third key, then every key must still be where it was */
        for (uint64_t i = 1; i <= n; i += 3)
                CHECK(hashmap_remove(m, UINT64_TO_KEY(i * 7919)) == (void *) (uintptr_t) i);
        for (uint64_t i = 1; i <= n; i++) {
                int r = hashmap_get(m, UINT64_TO_KEY(i * 7919), &v);
                if ((i - 1) % 3 == 0)
                        CHECK_INT_EQ(r, -ENOENT);
                else {
                        CHECK_INT_EQ(r, 0);
                        CHECK(v == (void *) (uintptr_t) i);
                }
        }
        CHECK_INT_EQ(hashmap_size(m), n - (n + 2) / 3);
        CHECK(hashmap_remove(m, UINT64_TO_KEY(12345678)) == NULL);
        hashmap_free(m);
}

static void test_iterate_visits_each_entry_once(void) {
        hashmap *m = hashmap_new_string();
        const char *keys[] = { "alpha", "beta", "gamma", "delta", "epsilon" };
        size_t state = 0, seen = 0, sum = 0;
        const void *k;
        void *v;

        for (size_t i = 0; i < 5; i++)
                CHECK_INT_EQ(hashmap_put(m, keys[i], (void *) (uintptr_t) (1u << i)), 0);
        while (hashmap_iterate(m, &state, &k, &v)) {
                seen++;
                sum += (uintptr_t) v;
        }
        CHECK_INT_EQ(seen, 5);
        CHECK_INT_EQ(sum, 31);
        CHECK_INT_EQ(hashmap_get(m, "gamma", &v), 0);
        CHECK(v == (void *) 4);
        /* a value changed in place, as a get sees it; none for an absent key */
        CHECK(hashmap_value(m, "nope") == NULL);
        CHECK(hashmap_value(m, "gamma") && *hashmap_value(m, "gamma") == (void *) 4);
        *hashmap_value(m, "gamma") = (void *) 40;
        CHECK_INT_EQ(hashmap_get(m, "gamma", &v), 0);
        CHECK(v == (void *) 40);
        CHECK_INT_EQ(hashmap_size(m), 5);
        hashmap_free(m);
}

int main(void) {
        test_insert_find_remove_many();
        test_iterate_visits_each_entry_once();
        TESTS_DONE();
}
