/* Tests of the eviction policy for tables of live processes: the least
 * recently sampled give their rows first, a table sampled within the hot
 * window or pinned never does, no more is evicted than the one window of
 * rows needs, and nothing at all when evicting cannot make room. */
#include <errno.h>
#include <stdbool.h>

#include "macro.h"
#include "table-lru.h"
#include "tests.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(rangealloc *, rangealloc_free);

#define GRACE 2000         /* ns */
#define HOT 10000          /* ns: the hot window */
#define NOW 1000000        /* ns */
#define COLD(age) (NOW - HOT - (age)) /* sampled longer ago than the window */

/* An allocator of capacity rows holding tables of the given sizes, one
 * after the other from row 0; t[i].off and slots set. */
static rangealloc *layout(uint32_t capacity, struct table_lru_entry *t, const uint32_t *sizes, size_t n) {
        rangealloc *a = rangealloc_new(capacity, GRACE);

        CHECK(a);
        for (size_t i = 0; i < n; i++) {
                t[i].slots = sizes[i];
                CHECK_INT_EQ(rangealloc_alloc(a, sizes[i], &t[i].off), 0);
        }
        return a;
}

static void test_bad_and_impossible_requests(void) {
        struct table_lru_entry t[2] = { { .sampled_ns = COLD(0) }, { .sampled_ns = COLD(0) } };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(100, t, (uint32_t[]) { 50, 50 }, 2);
        bool evict[2] = { true, true };
        uint32_t off = 7;

        CHECK_INT_EQ(table_lru_choose(a, 0, t, 2, NOW, HOT, evict, &off), -EINVAL);
        /* larger than the whole budget: nothing, however cold */
        CHECK_INT_EQ(table_lru_choose(a, 101, t, 2, NOW, HOT, evict, &off), 0);
        CHECK(!evict[0] && !evict[1]);
        CHECK_INT_EQ(off, 7);
        /* exactly the budget: both go */
        CHECK_INT_EQ(table_lru_choose(a, 100, t, 2, NOW, HOT, evict, &off), 1);
        CHECK(evict[0] && evict[1]);
        CHECK_INT_EQ(off, 0);
}

static void test_free_rows_evict_nothing(void) {
        struct table_lru_entry t[1] = { { .sampled_ns = 0 } };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(100, t, (uint32_t[]) { 60 }, 1);
        bool evict[1] = { true };
        uint32_t off;

        CHECK_INT_EQ(table_lru_choose(a, 40, t, 1, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0]);
        CHECK_INT_EQ(off, 60);
}

static void test_least_recently_sampled_first(void) {
        /* three tables of 30 and 10 free rows: 40 rows need one table */
        struct table_lru_entry t[3] = {
                { .sampled_ns = COLD(10) }, { .sampled_ns = COLD(500) }, { .sampled_ns = COLD(20) },
        };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(100, t, (uint32_t[]) { 30, 30, 30 }, 3);
        bool evict[3];
        uint32_t off;

        /* the middle one was sampled least recently; free rows after the
         * last are not next to it, so 30 rows, not 40 */
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0] && evict[1] && !evict[2]);
        CHECK_INT_EQ(off, 30);
        /* 40 rows: the last table and the free rows after it make room,
         * but the two oldest (the middle and the last) must be offered
         * before a window exists: only the last one goes */
        CHECK_INT_EQ(table_lru_choose(a, 40, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0] && !evict[1] && evict[2]);
        CHECK_INT_EQ(off, 60);
        /* 60 rows: the two least recently sampled, adjacent */
        CHECK_INT_EQ(table_lru_choose(a, 60, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0] && evict[1] && evict[2]);
        CHECK_INT_EQ(off, 30);
        /* never sampled is colder than any time */
        t[0].sampled_ns = 0;
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(evict[0] && !evict[1] && !evict[2]);
        CHECK_INT_EQ(off, 0);
}

static void test_equal_times_fewest_rows(void) {
        /* equally cold tables: the one window with the fewest rows */
        struct table_lru_entry t[3] = {
                { .sampled_ns = COLD(0) }, { .sampled_ns = COLD(0) }, { .sampled_ns = COLD(0) },
        };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(100, t, (uint32_t[]) { 50, 20, 30 }, 3);
        bool evict[3];
        uint32_t off;

        CHECK_INT_EQ(table_lru_choose(a, 20, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0] && evict[1] && !evict[2]);
        CHECK_INT_EQ(off, 50);
}

static void test_hot_and_pinned_never_evicted(void) {
        struct table_lru_entry t[3] = {
                { .sampled_ns = COLD(0) }, { .sampled_ns = NOW - 1 }, { .sampled_ns = COLD(100) },
        };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(90, t, (uint32_t[]) { 30, 30, 30 }, 3);
        bool evict[3];
        uint32_t off;

        /* the oldest is pinned: the next oldest cold one goes */
        t[2].pinned = true;
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(evict[0] && !evict[1] && !evict[2]);
        /* 60 contiguous rows would cross the hot one or the pinned one */
        CHECK_INT_EQ(table_lru_choose(a, 60, t, 3, NOW, HOT, evict, &off), 0);
        CHECK(!evict[0] && !evict[1] && !evict[2]);
        /* sampled exactly a window ago: cold again */
        t[1].sampled_ns = NOW - HOT;
        CHECK_INT_EQ(table_lru_choose(a, 60, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(evict[0] && evict[1] && !evict[2]);
        /* a time after now (the clock went back): hot */
        t[0].sampled_ns = NOW + 1;
        t[1].sampled_ns = NOW + 1;
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW, HOT, evict, &off), 0);
        CHECK(!evict[0] && !evict[1] && !evict[2]);
}

static void test_no_table_and_rows_in_grace(void) {
        /* an entry without rows is no candidate; rows still in their
         * grace are neither free nor evictable */
        struct table_lru_entry t[3] = { { .sampled_ns = 0 }, { .sampled_ns = 0 }, { .sampled_ns = 0 } };
        _cleanup_(rangealloc_freep) rangealloc *a = layout(60, t, (uint32_t[]) { 30, 30, 0 }, 2);
        bool evict[3];
        uint32_t off;

        t[2] = (struct table_lru_entry) { .off = 0, .slots = 0, .sampled_ns = 0 };
        rangealloc_release(a, t[0].off, 30, NOW - 1);
        t[0].slots = 0; /* evicted a moment ago: its rows in grace */
        CHECK_INT_EQ(table_lru_choose(a, 60, t, 3, NOW, HOT, evict, &off), 0);
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW, HOT, evict, &off), 1);
        CHECK(!evict[0] && evict[1] && !evict[2]);
        CHECK_INT_EQ(off, 30);
        /* once the grace is over the rows are free: nothing to evict */
        rangealloc_reclaim(a, NOW - 1 + GRACE);
        CHECK_INT_EQ(table_lru_choose(a, 30, t, 3, NOW + GRACE, HOT, evict, &off), 1);
        CHECK(!evict[0] && !evict[1] && !evict[2]);
        CHECK_INT_EQ(off, 0);
}

static void test_no_tables(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(10, GRACE);
        uint32_t off, x;

        CHECK_INT_EQ(rangealloc_alloc(a, 10, &x), 0);
        CHECK_INT_EQ(table_lru_choose(a, 5, NULL, 0, NOW, HOT, NULL, &off), 0);
}

int main(void) {
        test_bad_and_impossible_requests();
        test_free_rows_evict_nothing();
        test_least_recently_sampled_first();
        test_equal_times_fewest_rows();
        test_hot_and_pinned_never_evicted();
        test_no_table_and_rows_in_grace();
        test_no_tables();
        TESTS_DONE();
}
