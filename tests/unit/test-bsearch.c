/* The binary-search helper against a linear scan, on every key around every element, with duplicates and empty arrays. */
#include <stdint.h>
#include <stdlib.h>

#include "bsearch.h"
#include "tests.h"

struct range {
        uint64_t start;
        uint64_t end;
};

static size_t linear_upper(const uint64_t *a, size_t n, uint64_t key) {
        size_t i = 0;

        while (i < n && a[i] <= key)
                i++;
        return i;
}

static size_t linear_lower(const uint64_t *a, size_t n, uint64_t key) {
        size_t i = 0;

        while (i < n && a[i] < key)
                i++;
        return i;
}

static void test_bounds_match_linear_scan(void) {
        /* duplicates, a gap, and values at both ends of the key range */
        static const uint64_t sorted[] = { 0, 3, 3, 3, 7, 10, 10, 20, 21, UINT64_MAX };

        for (size_t n = 0; n <= sizeof(sorted) / sizeof(sorted[0]); n++)
                for (uint64_t key = 0; key <= 23; key++) {
                        CHECK_INT_EQ(UPPER_BOUND(sorted, n, key), linear_upper(sorted, n, key));
                        CHECK_INT_EQ(LOWER_BOUND(sorted, n, key), linear_lower(sorted, n, key));
                }
        CHECK_INT_EQ(UPPER_BOUND(sorted, 10, UINT64_MAX), 10);
        CHECK_INT_EQ(LOWER_BOUND(sorted, 10, UINT64_MAX), 9);
}

static void test_upper_bound_finds_containing_range(void) {
        static const struct range ranges[] = { { 10, 20 }, { 20, 25 }, { 40, 50 } };
        size_t i;

        CHECK_INT_EQ(UPPER_BOUND_BY(ranges, 3, start, 9), 0);
        CHECK_INT_EQ(UPPER_BOUND_BY(ranges, 3, start, 10), 1);
        CHECK_INT_EQ(UPPER_BOUND_BY(ranges, 3, start, 19), 1);
        CHECK_INT_EQ(UPPER_BOUND_BY(ranges, 3, start, 20), 2);
        CHECK_INT_EQ(UPPER_BOUND_BY(ranges, 3, start, 39), 2); /* in the gap: [1] is last, 39 >= its end */
        i = UPPER_BOUND_BY(ranges, 3, start, 45);
        CHECK_INT_EQ(i, 3);
        CHECK(45 < ranges[i - 1].end);
        CHECK_INT_EQ(LOWER_BOUND_BY(ranges, 3, start, 20), 1);
        CHECK_INT_EQ(LOWER_BOUND_BY(ranges, 3, start, 21), 2);
        CHECK_INT_EQ(LOWER_BOUND_BY(ranges, 3, start, 51), 3);
}

static void test_partition_point_on_predicate(void) {
        /* true for a prefix: the elements below 5 */
        static const int values[] = { 1, 2, 4, 5, 8, 9 };

        CHECK_INT_EQ(PARTITION_POINT(values, 6, v, *v < 5), 3);
        CHECK_INT_EQ(PARTITION_POINT(values, 6, v, *v < 100), 6);
        CHECK_INT_EQ(PARTITION_POINT(values, 6, v, *v < 0), 0);
        CHECK_INT_EQ(PARTITION_POINT(values, 0, v, *v < 5), 0);
}

static void test_large_random_array(void) {
        enum { N = 4099 };
        uint64_t *a = malloc(N * sizeof(*a));
        uint64_t v = 0;

        CHECK(a);
        if (!a)
                return;
        srandom(17);
        for (size_t i = 0; i < N; i++) {
                v += (uint64_t) (random() % 4); /* runs of duplicates */
                a[i] = v;
        }
        for (uint64_t key = 0; key <= v + 1; key++) {
                CHECK_INT_EQ(UPPER_BOUND(a, N, key), linear_upper(a, N, key));
                CHECK_INT_EQ(LOWER_BOUND(a, N, key), linear_lower(a, N, key));
        }
        free(a);
}

int main(void) {
        test_bounds_match_linear_scan();
        test_upper_bound_finds_containing_range();
        test_partition_point_on_predicate();
        test_large_random_array();
        TESTS_DONE();
}
