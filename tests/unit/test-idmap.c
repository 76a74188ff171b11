/* The writer's id map keeps every pair findable through growth, tells
 * pairs that share a member apart, and is empty after a clear. */
#include <errno.h>

#include "idmap.h"
#include "tests.h"

static void test_pairs_found_through_growth(void) {
        idmap *m = idmap_new();
        const uint64_t n = 20000;
        int64_t id;

        CHECK(m);
        if (!m)
                return;
        CHECK_INT_EQ(idmap_get(m, 1, 2, &id), -ENOENT); /* empty: no slots yet */
        /* locations: the same address in two mappings, two addresses in one */
        for (uint64_t i = 1; i <= n; i++) {
                CHECK_INT_EQ(idmap_put(m, i % 7, 0xffffffff81000000ULL + i, (int64_t) i), 0);
                CHECK_INT_EQ(idmap_put(m, i % 7 + 7, 0xffffffff81000000ULL + i, -(int64_t) i), 0);
        }
        CHECK_INT_EQ(idmap_size(m), 2 * n);
        CHECK_INT_EQ(idmap_put(m, 1, 0xffffffff81000001ULL, 99), -EEXIST);
        for (uint64_t i = 1; i <= n; i++) {
                CHECK_INT_EQ(idmap_get(m, i % 7, 0xffffffff81000000ULL + i, &id), 0);
                CHECK_INT_EQ(id, (int64_t) i);
                CHECK_INT_EQ(idmap_get(m, i % 7 + 7, 0xffffffff81000000ULL + i, &id), 0);
                CHECK_INT_EQ(id, -(int64_t) i);
        }
        /* the members swapped are another pair */
        CHECK_INT_EQ(idmap_get(m, 0xffffffff81000001ULL, 1, &id), -ENOENT);
        CHECK_INT_EQ(idmap_get(m, 1, 0xffffffff81000000ULL, &id), -ENOENT);

        idmap_clear(m);
        CHECK_INT_EQ(idmap_size(m), 0);
        CHECK_INT_EQ(idmap_get(m, 1, 0xffffffff81000001ULL, &id), -ENOENT);
        CHECK_INT_EQ(idmap_put(m, 1, 0xffffffff81000001ULL, 5), 0);
        CHECK_INT_EQ(idmap_get(m, 1, 0xffffffff81000001ULL, &id), 0);
        CHECK_INT_EQ(id, 5);
        idmap_free(m);
        CHECK(idmap_free(NULL) == NULL);
        CHECK_INT_EQ(idmap_size(NULL), 0);
}

int main(void) {
        test_pairs_found_through_growth();
        TESTS_DONE();
}
