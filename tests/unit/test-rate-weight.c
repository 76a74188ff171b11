/* Samples taken at a raised rate counted at the base rate
 * (common/rate-weight.c): the split of a workload over a window
 * that spans a raise is the split of its samples' time, rounding is to
 * the nearest, and an answer's rows add up to its rounded total. */
#include "rate-weight.h"
#include "tests.h"

static void test_same_rate_is_exact(void) {
        CHECK_INT_EQ(rate_weight(12345, 49, 49), 12345);
        /* a drain stored before its rate was (NULL, 0) counts at the base */
        CHECK_INT_EQ(rate_weight(12345, 0, 49), 12345);
        CHECK_INT_EQ(rate_weight(7, 499, 0), 7);
        CHECK_INT_EQ(rate_weight_round(0), 0);
        CHECK_INT_EQ(rate_weight_fixed(3, 49, 49), 3 * RATE_WEIGHT_ONE);
}

static void test_raised_samples_count_at_the_base_rate(void) {
        /* 30 s of one busy CPU at 499 Hz is 30 s at 49 Hz */
        CHECK_INT_EQ(rate_weight(499 * 30, 499, 49), 49 * 30);
        /* 10 samples at 499 Hz are 0.98 samples at 49 Hz: rounds to 1 */
        CHECK_INT_EQ(rate_weight(10, 499, 49), 1);
        /* 15 are 1.47: 1; 16 are 1.57: 2 */
        CHECK_INT_EQ(rate_weight(15, 499, 49), 1);
        CHECK_INT_EQ(rate_weight(16, 499, 49), 2);
        /* a lowered rate weighs more: 3 samples at 10 Hz are 14.7 at 49 Hz */
        CHECK_INT_EQ(rate_weight(3, 10, 49), 15);
}

static void test_half_rounds_up(void) {
        /* 1 sample at 98 Hz is exactly half a sample at 49 Hz */
        CHECK_INT_EQ(rate_weight_fixed(1, 98, 49), RATE_WEIGHT_ONE / 2);
        CHECK_INT_EQ(rate_weight(3, 98, 49), 2);
        CHECK_INT_EQ(rate_weight(5, 98, 49), 3);
}

static void test_apportion_keeps_the_total(void) {
        /* 100 stacks of one raised sample each: 0.098 base samples each,
         * 9.8 in all: ten of them get one, the first ones on the tie */
        uint64_t fixed[100], whole[100], sum = 0;

        for (size_t i = 0; i < 100; i++)
                fixed[i] = rate_weight_fixed(1, 499, 49);
        CHECK_INT_EQ(rate_weight_apportion(fixed, 100, whole), 0);
        for (size_t i = 0; i < 100; i++) {
                CHECK_INT_EQ(whole[i], i < 10);
                sum += whole[i];
        }
        CHECK_INT_EQ(sum, 10);
        /* rounded each, none would count (0.098 rounds to 0) */
        CHECK_INT_EQ(rate_weight(1, 499, 49), 0);

        /* the largest fractions get what is left: 2.3 + 1.6 + 0.7 + 0.4 = 5 */
        {
                const uint64_t f[4] = { 23 * RATE_WEIGHT_ONE / 10, 16 * RATE_WEIGHT_ONE / 10, 7 * RATE_WEIGHT_ONE / 10,
                                        4 * RATE_WEIGHT_ONE / 10 };
                uint64_t w[4];

                CHECK_INT_EQ(rate_weight_apportion(f, 4, w), 0);
                CHECK(w[0] == 2 && w[1] == 2 && w[2] == 1 && w[3] == 0);
        }
        /* whole values stay as they are; nothing is nothing */
        {
                const uint64_t f[3] = { 5 * RATE_WEIGHT_ONE, 0, RATE_WEIGHT_ONE };
                uint64_t w[3];

                CHECK_INT_EQ(rate_weight_apportion(f, 3, w), 0);
                CHECK(w[0] == 5 && w[1] == 0 && w[2] == 1);
                CHECK_INT_EQ(rate_weight_apportion(NULL, 0, NULL), 0);
        }
}

static void test_split_over_a_raise_keeps_its_shares(void) {
        /* a 70/30 workload on one CPU, 60 s at 49 Hz with 30 s raised to
         * 499 Hz in the middle: unweighted the raise's samples dominate,
         * weighted each part counts its time */
        const unsigned rate[3] = { 49, 499, 49 };
        const uint64_t seconds[3] = { 15, 30, 15 };
        uint64_t a = 0, b = 0, raw_a = 0, raw_b = 0;

        for (unsigned i = 0; i < 3; i++) {
                uint64_t n = rate[i] * seconds[i];
                uint64_t na = n * 7 / 10, nb = n - na;

                raw_a += na, raw_b += nb;
                a += rate_weight_fixed(na, rate[i], 49);
                b += rate_weight_fixed(nb, rate[i], 49);
        }
        a = rate_weight_round(a);
        b = rate_weight_round(b);
        CHECK_INT_EQ(a + b, 49 * 60);
        /* 70.0% within one sample */
        CHECK(a * 1000 >= (a + b) * 699 && a * 1000 <= (a + b) * 701);
        /* and the weights matter: the raw counts are 10x larger */
        CHECK(raw_a + raw_b > 5 * (a + b));
}

static void test_large_values_do_not_overflow(void) {
        /* 2^40 samples at 999 Hz counted at 1 Hz: the product passes 64 bits */
        uint64_t v = UINT64_C(1) << 40;

        CHECK_INT_EQ(rate_weight(v, 1000, 1), v / 1000 + ((v % 1000) * 2 >= 1000));
        /* a weight that cannot fit saturates instead of wrapping */
        CHECK_INT_EQ(rate_weight_fixed(UINT64_MAX, 1, 1000), UINT64_MAX);
}

static void test_map_finds_each_drain(void) {
        struct rate_map m = {};

        CHECK_INT_EQ(rate_map_hz(&m, 5), 0);
        for (int64_t id = 100; id > 0; id -= 3)
                CHECK_INT_EQ(rate_map_add(&m, id, (unsigned) (400 + id)), 0);
        rate_map_sort(&m);
        CHECK_INT_EQ(rate_map_hz(&m, 100), 500);
        CHECK_INT_EQ(rate_map_hz(&m, 1), 401);
        CHECK_INT_EQ(rate_map_hz(&m, 2), 0);
        CHECK_INT_EQ(rate_map_hz(&m, 101), 0);
        rate_map_done(&m);
        CHECK_INT_EQ(m.n, 0);
}

/* A fleet timeline row's rates in an answer's base (ClickHouse schema
 * version 5): the base is 0; a host of the answer's base keeps its rate;
 * a host of another base has its rate scaled so that a sample keeps its
 * host's weight (49 Hz base, 499 Hz raise: 499 * 99 / 49 = 1008.2 at a
 * 99 Hz base, a weight of 99/1008 = 0.0982 against 49/499 = 0.0982). */
static void test_rebase_keeps_a_hosts_weight(void) {
        CHECK_INT_EQ(rate_weight_rebase_hz(0, 0, 49), 0);         /* a row of version 4 */
        CHECK_INT_EQ(rate_weight_rebase_hz(499, 0, 49), 0);       /* no base: not weighted */
        CHECK_INT_EQ(rate_weight_rebase_hz(49, 49, 49), 0);       /* at the base */
        CHECK_INT_EQ(rate_weight_rebase_hz(499, 49, 0), 0);       /* no answer base */
        CHECK_INT_EQ(rate_weight_rebase_hz(499, 49, 49), 499);
        CHECK_INT_EQ(rate_weight_rebase_hz(499, 49, 99), 1008);
        CHECK_INT_EQ(rate_weight_rebase_hz(98, 49, 99), 198);
        CHECK_INT_EQ(rate_weight_rebase_hz(1, 1000, 2), 1);        /* never below 1 Hz */
        CHECK_INT_EQ(rate_weight_rebase_hz(50, 49, 49), 50);
        CHECK_INT_EQ(rate_weight_rebase_hz(100, 99, 49), 0);      /* 49.49 Hz rounds to the base: the base */
        CHECK_INT_EQ(rate_weight_rebase_hz(UINT64_MAX, 1, 4000000), UINT32_MAX); /* saturates */
}

int main(void) {
        test_same_rate_is_exact();
        test_raised_samples_count_at_the_base_rate();
        test_half_rounds_up();
        test_apportion_keeps_the_total();
        test_split_over_a_raise_keeps_its_shares();
        test_large_values_do_not_overflow();
        test_map_finds_each_drain();
        test_rebase_keeps_a_hosts_weight();
        if (tests_failed)
                return 1;
        printf("rate-weight: ok\n");
        return 0;
}
