/* Unit test of a heatmap's samples counted at the base rate
 * (client/heatmap-weight.c, issue 44): a raise's samples weigh base /
 * raised rate each, summed one by one as the daemon sums them; a range's
 * rows are apportioned as a query's (ties to the earlier row), and the
 * cells add up to the weighted total rounded, not ten times the base. */
#include <errno.h>
#include <stdlib.h>

#include "heatmap-weight.h"
#include "macro.h"
#include "rate-weight.h"
#include "tests.h"

#define S(x) ((uint64_t) (x) * NSEC_PER_SEC)
#define MS(x) ((uint64_t) (x) * NSEC_PER_MSEC)

static void test_weight_is_per_sample(void) {
        /* the base rate and a drain without one count as taken */
        CHECK_INT_EQ(heatmap_weight_fixed(7, 0, 49), 7 * RATE_WEIGHT_ONE);
        CHECK_INT_EQ(heatmap_weight_fixed(7, 49, 49), 7 * RATE_WEIGHT_ONE);
        CHECK_INT_EQ(heatmap_weight_fixed(7, 499, 0), 7 * RATE_WEIGHT_ONE);
        /* ten samples at 499 Hz: ten times one's weight, as the daemon adds
         * a window's samples, which is not ten samples' weight rounded
         * once; a range that rounded once would differ from the query */
        CHECK_INT_EQ(heatmap_weight_fixed(10, 499, 49), 10 * rate_weight_fixed(1, 499, 49));
        CHECK(heatmap_weight_fixed(10, 499, 49) != rate_weight_fixed(10, 499, 49));
        CHECK_INT_EQ(heatmap_weight_fixed(UINT64_MAX / 2, 10, 49), UINT64_MAX);
}

/* A second of one CPU busy at 499 Hz counts as the base rate's 49, not 499;
 * the cells of 20 ms (about 10 raised samples, 0.98 of a base one) are 0
 * or 1 and add up to 49. */
static void test_cells_of_a_raise(void) {
        struct heatmap h;

        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1002), 50, false), 0);
        for (unsigned i = 0; i < 499; i++)
                heatmap_add(&h, S(1000) + i * (NSEC_PER_SEC / 499), heatmap_weight_fixed(1, 499, 49));
        /* and a second at the base rate, exact */
        for (unsigned i = 0; i < 49; i++)
                heatmap_add(&h, S(1001) + i * (NSEC_PER_SEC / 49), heatmap_weight_fixed(1, 0, 49));
        CHECK_INT_EQ(heatmap_weigh_cells(&h), 0);
        CHECK_INT_EQ(h.total, 98);
        CHECK_INT_EQ(h.max, 1);
        uint64_t first = 0, second = 0;
        for (unsigned r = 0; r < 50; r++) {
                first += heatmap_cell(&h, 0, r);
                second += heatmap_cell(&h, 1, r);
        }
        CHECK_INT_EQ(first, 49);
        CHECK_INT_EQ(second, 49);
        heatmap_done(&h);

        /* nothing added: nothing to apportion */
        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1001), 50, false), 0);
        CHECK_INT_EQ(heatmap_weigh_cells(&h), 0);
        CHECK_INT_EQ(h.total, 0);
        heatmap_done(&h);
}

/* A range: only the samples in [from, to), per row, apportioned as a
 * query apportions its rows (rate_weight_apportion of the same sums). */
static void test_range(void) {
        struct heatmap_sample s[64];
        uint64_t got[8], fixed[8] = {}, want[8];
        size_t n = 0;

        /* six rows of one raised sample each: 0.59 samples in all, which
         * round to 1, given to the earliest of the tied rows */
        for (uint32_t row = 0; row < 6; row++)
                s[n++] = (struct heatmap_sample) { .t_ns = S(1) + MS(500), .row = row, .hz = 499,
                                                   .weight = heatmap_weight_fixed(1, 499, 49) };
        CHECK_INT_EQ(heatmap_range_weigh(s, n, 8, S(1), S(2), got), 0);
        CHECK_INT_EQ(got[0], 1);
        for (size_t i = 1; i < 8; i++)
                CHECK_INT_EQ(got[i], 0);
        /* three of them: 0.29, none */
        CHECK_INT_EQ(heatmap_range_weigh(s, 3, 8, S(1), S(2), got), 0);
        CHECK_INT_EQ(got[0] + got[1] + got[2], 0);

        /* the edges: from is in, to is not; a span (blocked time) is not a
         * cpu sample */
        n = 0;
        s[n++] = (struct heatmap_sample) { .t_ns = S(1), .row = 6, .weight = RATE_WEIGHT_ONE };
        s[n++] = (struct heatmap_sample) { .t_ns = S(2), .row = 6, .weight = RATE_WEIGHT_ONE };
        s[n++] = (struct heatmap_sample) { .t_ns = S(1), .span_ns = 5, .row = 6, .weight = RATE_WEIGHT_ONE };
        for (unsigned i = 0; i < 25; i++) /* 2.45 base samples on row 7 */
                s[n++] = (struct heatmap_sample) { .t_ns = S(1) + MS(i), .row = 7, .hz = 499,
                                                   .weight = heatmap_weight_fixed(1, 499, 49) };
        CHECK_INT_EQ(heatmap_range_weigh(s, n, 8, S(1), S(2), got), 0);
        CHECK_INT_EQ(got[6], 1);
        fixed[6] = RATE_WEIGHT_ONE;
        fixed[7] = 25 * rate_weight_fixed(1, 499, 49);
        CHECK_INT_EQ(rate_weight_apportion(fixed, 8, want), 0);
        CHECK_INT_EQ(got[7], want[7]);
        CHECK_INT_EQ(got[7], 2);

        /* a row out of range is refused */
        s[0].row = 8;
        CHECK_INT_EQ(heatmap_range_weigh(s, n, 8, S(1), S(2), got), -EINVAL);
}

int main(void) {
        test_weight_is_per_sample();
        test_cells_of_a_raise();
        test_range();
        TESTS_DONE();
}
