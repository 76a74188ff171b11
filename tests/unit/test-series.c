/* Time series from drains: points are epoch-aligned buckets, a drain's value
 * is spread in proportion to overlap, in whole units that add up to the
 * value exactly, buckets come out in order and empty ones are left out. */
#include <errno.h>
#include <stdlib.h>

#include "series.h"
#include "tests.h"

#define S 1000000000ULL

struct got {
        uint64_t t[64], v[64], c[64];
        size_t n;
        int fail_at; /* return -EIO at this point (0: never) */
};

static int collect(uint64_t t_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct got *g = userdata;

        if (g->n > 0 && t_ns <= g->t[g->n - 1]) {
                fprintf(stderr, "point %llu after %llu: not in time order\n", (unsigned long long) t_ns,
                        (unsigned long long) g->t[g->n - 1]);
                tests_failed++;
        }
        if (g->n == 64)
                return -E2BIG;
        g->t[g->n] = t_ns;
        g->c[g->n] = complete;
        g->v[g->n++] = value;
        if (g->fail_at && (int) g->n == g->fail_at)
                return -EIO;
        return 0;
}

static void check_points(const struct got *g, const uint64_t *t, const uint64_t *v, size_t n) {
        CHECK_INT_EQ(g->n, n);
        for (size_t i = 0; i < n && i < g->n; i++) {
                CHECK_INT_EQ(g->t[i], t[i]);
                CHECK_INT_EQ(g->v[i], v[i]);
        }
}

static void test_aligned_drains_are_one_point_each(void) {
        struct got g = {};
        series *s = series_new(10 * S, collect, &g);

        CHECK_INT_EQ(series_add(s, 100 * S, 110 * S, 7, 0), 0);
        CHECK_INT_EQ(series_add(s, 110 * S, 120 * S, 9, 0), 0);
        /* a gap: no point for the empty buckets */
        CHECK_INT_EQ(series_add(s, 150 * S, 160 * S, 1, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        check_points(&g, (uint64_t[]) { 100 * S, 110 * S, 150 * S }, (uint64_t[]) { 7, 9, 1 }, 3);
        CHECK_INT_EQ(series_points(s), 3);
        series_free(s);
}

static void test_smaller_steps_share_by_overlap(void) {
        struct got g = {};
        series *s = series_new(1 * S, collect, &g);

        /* 100 over 10 s: 10 a second */
        CHECK_INT_EQ(series_add(s, 100 * S, 110 * S, 100, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        CHECK_INT_EQ(g.n, 10);
        for (size_t i = 0; i < g.n; i++) {
                CHECK_INT_EQ(g.t[i], (100 + i) * S);
                CHECK_INT_EQ(g.v[i], 10);
        }
        series_free(s);
}

static void test_remainders_go_to_the_largest_fractions(void) {
        struct got g = {};
        series *s = series_new(3 * S, collect, &g);

        /* 7 over [590, 600) with 3 s buckets at 588, 591, 594, 597: overlaps
         * 1, 3, 3, 3 s -> 0.7, 2.1, 2.1, 2.1 -> 0, 2, 2, 2 and the one left
         * to the 0.7 */
        CHECK_INT_EQ(series_add(s, 590 * S, 600 * S, 7, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        check_points(&g, (uint64_t[]) { 588 * S, 591 * S, 594 * S, 597 * S }, (uint64_t[]) { 1, 2, 2, 2 }, 4);
        series_free(s);

        /* ties go to the earlier bucket: 3 over two equal halves */
        g = (struct got) {};
        s = series_new(5 * S, collect, &g);
        CHECK_INT_EQ(series_add(s, 10 * S, 20 * S, 3, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        check_points(&g, (uint64_t[]) { 10 * S, 15 * S }, (uint64_t[]) { 2, 1 }, 2);
        series_free(s);

        /* a value smaller than the number of buckets: zero shares are left out */
        g = (struct got) {};
        s = series_new(1 * S, collect, &g);
        CHECK_INT_EQ(series_add(s, 0, 10 * S, 2, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        CHECK_INT_EQ(g.n, 2);
        CHECK_INT_EQ(g.v[0] + g.v[1], 2);
        series_free(s);
}

static void test_drains_sharing_a_bucket_add_up(void) {
        struct got g = {};
        series *s = series_new(60 * S, collect, &g);
        uint64_t sum = 0;

        /* six 10 s drains in one minute, then one straddling the next minute */
        for (int i = 0; i < 6; i++)
                CHECK_INT_EQ(series_add(s, (60 + 10 * i) * S, (70 + 10 * i) * S, 10, 0), 0);
        CHECK_INT_EQ(series_add(s, 115 * S, 125 * S, 4, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        check_points(&g, (uint64_t[]) { 60 * S, 120 * S }, (uint64_t[]) { 62, 2 }, 2);
        for (size_t i = 0; i < g.n; i++)
                sum += g.v[i];
        CHECK_INT_EQ(sum, 64);
        series_free(s);
}

static void test_odd_intervals(void) {
        struct got g = {};
        series *s = series_new(10 * S, collect, &g);

        /* an empty interval counts where it is */
        CHECK_INT_EQ(series_add(s, 105 * S, 105 * S, 3, 0), 0);
        /* a drain starting before one already added (clock set back) still counts */
        CHECK_INT_EQ(series_add(s, 100 * S, 104 * S, 2, 0), 0);
        CHECK_INT_EQ(series_finish(s), 0);
        check_points(&g, (uint64_t[]) { 100 * S }, (uint64_t[]) { 5 }, 1);
        series_free(s);

        /* too many buckets for one drain */
        g = (struct got) {};
        s = series_new(1000000, collect, &g);
        CHECK_INT_EQ(series_add(s, 0, 3600 * S, 1, 0), -E2BIG);
        series_free(s);
}

/* The complete part is spread like the value, and never exceeds it. */
static void test_complete_part_is_spread_along(void) {
        struct got g = {};
        series *s = series_new(1 * S, collect, &g);

        /* 10 s drain, value 100 of which 30 complete: 10 per second, 3 complete */
        CHECK_INT_EQ(series_add(s, 100 * S, 110 * S, 100, 30), 0);
        /* 3 over 2 buckets, 1 complete: complete + rest each by largest remainder */
        CHECK_INT_EQ(series_add(s, 110 * S, 112 * S, 3, 1), 0);
        CHECK_INT_EQ(series_add(s, 112 * S, 113 * S, 5, 6), -EINVAL);
        CHECK_INT_EQ(series_finish(s), 0);
        CHECK_INT_EQ(g.n, 12);
        uint64_t sum_v = 0, sum_c = 0;
        for (size_t i = 0; i < g.n; i++) {
                CHECK(g.c[i] <= g.v[i]);
                sum_v += g.v[i];
                sum_c += g.c[i];
        }
        CHECK_INT_EQ(g.v[0], 10);
        CHECK_INT_EQ(g.c[0], 3);
        CHECK_INT_EQ(g.c[9], 3);
        /* 110 s: complete 1 (its only unit goes to the earlier bucket), rest 1 */
        CHECK_INT_EQ(g.v[10], 2);
        CHECK_INT_EQ(g.c[10], 1);
        CHECK_INT_EQ(g.v[11], 1);
        CHECK_INT_EQ(g.c[11], 0);
        CHECK_INT_EQ(sum_v, 103);
        CHECK_INT_EQ(sum_c, 31);
        series_free(s);
}

static void test_callback_errors_stop_it(void) {
        struct got g = { .fail_at = 2 };
        series *s = series_new(1 * S, collect, &g);

        CHECK_INT_EQ(series_add(s, 0, 1 * S, 1, 0), 0);
        CHECK_INT_EQ(series_add(s, 1 * S, 2 * S, 1, 0), 0);
        CHECK_INT_EQ(series_add(s, 5 * S, 6 * S, 1, 0), -EIO);
        series_free(s);
        CHECK(series_new(0, collect, &g) == NULL);
}

int main(void) {
        test_aligned_drains_are_one_point_each();
        test_smaller_steps_share_by_overlap();
        test_remainders_go_to_the_largest_fractions();
        test_drains_sharing_a_bucket_add_up();
        test_odd_intervals();
        test_complete_part_is_spread_along();
        test_callback_errors_stop_it();
        TESTS_DONE();
}
