/* Specification of the duration strings profctl and profd accept and print. */
#include <errno.h>
#include <stdint.h>

#include "duration.h"
#include "macro.h"
#include "tests.h"

/* parse_duration_ns() with the output preset to a marker, so a test can tell
 * that a failed parse left it alone. */
static int parse(const char *s, uint64_t *ret_ns) {
        *ret_ns = UINT64_C(0xdeadbeef);
        return parse_duration_ns(s, ret_ns);
}

static void test_accepts_each_unit(void) {
        uint64_t ns;

        CHECK_INT_EQ(parse("7ns", &ns), 0);
        CHECK_INT_EQ(ns, 7);
        CHECK_INT_EQ(parse("7us", &ns), 0);
        CHECK_INT_EQ(ns, 7000);
        CHECK_INT_EQ(parse("500ms", &ns), 0);
        CHECK_INT_EQ(ns, 500000000);
        CHECK_INT_EQ(parse("2s", &ns), 0);
        CHECK_INT_EQ(ns, 2000000000);
        CHECK_INT_EQ(parse("10m", &ns), 0);
        CHECK_INT_EQ(ns, 600000000000LL);
        CHECK_INT_EQ(parse("1h", &ns), 0);
        CHECK_INT_EQ(ns, 3600000000000LL);
        CHECK_INT_EQ(parse("1d", &ns), 0);
        CHECK_INT_EQ(ns, 86400000000000LL);
}

static void test_bare_number_is_seconds(void) {
        uint64_t ns;

        CHECK_INT_EQ(parse("30", &ns), 0);
        CHECK_INT_EQ(ns, 30000000000LL);
        CHECK_INT_EQ(parse("0", &ns), 0);
        CHECK_INT_EQ(ns, 0);
        CHECK_INT_EQ(parse("0s", &ns), 0);
        CHECK_INT_EQ(ns, 0);
        /* only a lone number: in "1h30" the unit of 30 is a guess */
        CHECK_INT_EQ(parse("1h30", &ns), -EINVAL);
}

static void test_combines_parts(void) {
        uint64_t ns;

        CHECK_INT_EQ(parse("1h30m", &ns), 0);
        CHECK_INT_EQ(ns, 5400000000000LL);
        CHECK_INT_EQ(parse("1h 30m", &ns), 0);
        CHECK_INT_EQ(ns, 5400000000000LL);
        CHECK_INT_EQ(parse("1m30s500ms", &ns), 0);
        CHECK_INT_EQ(ns, 90500000000LL);
        /* "ms" is milliseconds, not minutes followed by seconds */
        CHECK_INT_EQ(parse("1m1ms", &ns), 0);
        CHECK_INT_EQ(ns, 60001000000LL);
        CHECK_INT_EQ(parse("0010s", &ns), 0);
        CHECK_INT_EQ(ns, 10000000000LL);
}

static void test_rejects_malformed(void) {
        static const char *const bad[] = {
                "", " ", "m", "ms", "-5m", "+5m", "10x", "10M", "10 m",
                "10m garbage", "1.5h", "1e3s", "5m ", " 5m", "1h  30m",
                "1h,30m", "30 ", "10mss", "0x10s", "1h\n",
        };
        uint64_t ns;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = parse(bad[i], &ns);
                if (r != -EINVAL) {
                        fprintf(stderr, "parse_duration_ns(\"%s\") == %d, expected -EINVAL\n",
                                bad[i], r);
                        tests_failed++;
                }
                /* a failed parse leaves the output alone */
                CHECK_INT_EQ(ns, 0xdeadbeef);
        }
        CHECK_INT_EQ(parse_duration_ns(NULL, &ns), -EINVAL);
}

static void test_overflow_is_erange(void) {
        uint64_t ns;

        /* UINT64_MAX ns is about 584 years */
        CHECK_INT_EQ(parse("18446744073709551615ns", &ns), 0);
        CHECK(ns == UINT64_MAX);
        CHECK_INT_EQ(parse("18446744073709551616ns", &ns), -ERANGE);
        CHECK_INT_EQ(parse("18446744073709551615ns 1ns", &ns), -ERANGE);
        CHECK_INT_EQ(parse("213503d", &ns), 0);
        CHECK_INT_EQ(parse("213504d", &ns), -ERANGE);
        CHECK_INT_EQ(parse("99999999999999999999", &ns), -ERANGE);
        /* malformed wins over too large: the string is wrong, not the size */
        CHECK_INT_EQ(parse("99999999999999999999x", &ns), -EINVAL);
}

static void test_formats_largest_whole_units(void) {
        char buf[64];

        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 0), "0s");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 5400 * NSEC_PER_SEC), "1h30m");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 250 * NSEC_PER_MSEC), "250ms");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 10 * NSEC_PER_SEC), "10s");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 90061 * NSEC_PER_SEC), "1d1h1m1s");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 1500 * NSEC_PER_MSEC), "1s500ms");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 1001), "1us1ns");
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 3 * 86400 * NSEC_PER_SEC), "3d");
}

static void test_format_truncates_safely(void) {
        char buf[5];

        /* "1h30m" needs 6 bytes: a part that does not fit is left out whole,
         * never cut to a number without its unit ("1h30") */
        CHECK_STR_EQ(format_duration(buf, sizeof(buf), 5400 * NSEC_PER_SEC), "1h");
        CHECK_STR_EQ(format_duration(buf, 1, 5400 * NSEC_PER_SEC), "");
}

static void test_format_parses_back(void) {
        static const uint64_t values[] = {
                1, 999, 1000, 60 * NSEC_PER_SEC + 1, 5400 * NSEC_PER_SEC,
                123456789012345ULL, UINT64_MAX,
        };
        char buf[64];

        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                uint64_t ns = 0;
                CHECK_INT_EQ(parse_duration_ns(format_duration(buf, sizeof(buf), values[i]), &ns), 0);
                CHECK(ns == values[i]);
        }
}

int main(void) {
        test_accepts_each_unit();
        test_bare_number_is_seconds();
        test_combines_parts();
        test_rejects_malformed();
        test_overflow_is_erange();
        test_formats_largest_whole_units();
        test_format_truncates_safely();
        test_format_parses_back();
        TESTS_DONE();
}
