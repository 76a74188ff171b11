/* RFC 3339 parsing: the forms the RFC allows give the same instant as
 * date(1) computes for them; everything else is refused, with -ERANGE only
 * for well-formed times outside what nanoseconds since 1970 hold. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "timestamp.h"
#include "tests.h"

#define S 1000000000ULL

static uint64_t ts(const char *s) {
        uint64_t ns = 0;
        int r = parse_timestamp_ns(s, &ns);
        if (r < 0) {
                fprintf(stderr, "parse_timestamp_ns(\"%s\") = %d\n", s, r);
                tests_failed++;
                return UINT64_MAX;
        }
        return ns;
}

static int ts_err(const char *s) {
        uint64_t ns;
        return parse_timestamp_ns(s, &ns);
}

static void test_valid_forms(void) {
        /* date -u -d 2026-11-21T05:00:00Z +%s: 1795237200 */
        CHECK_INT_EQ(ts("2026-11-21T05:00:00Z"), 1795237200ULL * S);
        CHECK_INT_EQ(ts("1970-01-01T00:00:00Z"), 0);
        CHECK_INT_EQ(ts("1970-01-01t00:00:01z"), 1 * S);
        CHECK_INT_EQ(ts("1970-01-01 00:01:00Z"), 60 * S);
        /* an offset is local time ahead of UTC */
        CHECK_INT_EQ(ts("2026-11-21T06:00:00+01:00"), 1795237200ULL * S);
        CHECK_INT_EQ(ts("2026-11-21T00:30:00-04:30"), 1795237200ULL * S);
        CHECK_INT_EQ(ts("2026-11-21T05:00:00+00:00"), 1795237200ULL * S);
        CHECK_INT_EQ(ts("2026-11-21T05:00:00-00:00"), 1795237200ULL * S);
        /* fractions, from one digit to nanoseconds */
        CHECK_INT_EQ(ts("2026-11-21T05:00:00.5Z"), 1795237200ULL * S + 500000000);
        CHECK_INT_EQ(ts("2026-11-21T05:00:00.000000001Z"), 1795237200ULL * S + 1);
        CHECK_INT_EQ(ts("2026-11-21T05:00:00.123456789+02:00"), (1795237200ULL - 7200) * S + 123456789);
        /* leap years: date -u -d 2024-02-29T12:00:00Z +%s = 1709208000 */
        CHECK_INT_EQ(ts("2024-02-29T12:00:00Z"), 1709208000ULL * S);
        /* 2000 is a leap year (divisible by 400): 951825600 */
        CHECK_INT_EQ(ts("2000-02-29T12:00:00Z"), 951825600ULL * S);
        CHECK_INT_EQ(ts("2262-04-11T00:00:00Z"), 9223286400ULL * S);
}

static void test_malformed_is_einval(void) {
        static const char *const bad[] = {
                "", "2026", "2026-11-21", "2026-11-21T05:00Z", "2026-11-21T05:00:00", /* no zone */
                "2026-11-21T05:00:00Zjunk", "2026-11-21T05:00:00+0100", "2026-11-21T05:00:00+01",
                "2026-1-21T05:00:00Z", "26-11-21T05:00:00Z", "2026-11-21X05:00:00Z", "2026-11-21T5:00:00Z",
                "2026-11-21T05:00:00.Z", "2026-11-21T05:00:00.1234567891Z", "2026-13-01T00:00:00Z",
                "2026-00-01T00:00:00Z", "2026-11-31T00:00:00Z", "2025-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
                "2026-11-00T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T05:60:00Z",
                "2026-11-21T05:00:60Z", "2026-11-21T05:00:00+24:00", "2026-11-21T05:00:00+01:60",
                " 2026-11-21T05:00:00Z", "2026-11-21T05:00:00Z ", "+2026-11-21T05:00:00Z", "10m",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = ts_err(bad[i]);
                if (r != -EINVAL) {
                        fprintf(stderr, "parse_timestamp_ns(\"%s\") = %d, expected -EINVAL\n", bad[i], r);
                        tests_failed++;
                }
        }
}

static void test_out_of_range_is_erange(void) {
        CHECK_INT_EQ(ts_err("1969-12-31T23:59:59Z"), -ERANGE);
        CHECK_INT_EQ(ts_err("1970-01-01T00:30:00+01:00"), -ERANGE);
        CHECK_INT_EQ(ts_err("2263-01-01T00:00:00Z"), -ERANGE);
        CHECK_INT_EQ(ts_err("9999-12-31T23:59:59Z"), -ERANGE);
}

static void test_time_points(void) {
        bool abs = false;
        uint64_t ns = 0;

        CHECK_INT_EQ(parse_time_point("10m", &abs, &ns), 0);
        CHECK(!abs);
        CHECK_INT_EQ(ns, 600 * S);
        CHECK_INT_EQ(parse_time_point("2026-11-21T05:00:00Z", &abs, &ns), 0);
        CHECK(abs);
        CHECK_INT_EQ(ns, 1795237200ULL * S);
        CHECK_INT_EQ(parse_time_point("2026-11-21", &abs, &ns), -EINVAL);
        CHECK_INT_EQ(parse_time_point("yesterday", &abs, &ns), -EINVAL);
        CHECK_INT_EQ(parse_time_point("-5m", &abs, &ns), -EINVAL);
        CHECK_INT_EQ(parse_time_point("", &abs, &ns), -EINVAL);
}

static void test_format_round_trips(void) {
        static const char *const forms[] = {
                "1970-01-01T00:00:00Z", "2026-11-21T05:00:00Z", "2024-02-29T23:59:59.500Z",
                "2026-11-21T05:00:00.250Z", "2026-11-21T05:00:00.000001Z", "2026-11-21T05:00:00.123456789Z",
                "2000-12-31T12:00:00Z",
        };
        char buf[64];

        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
                CHECK_STR_EQ(format_timestamp(buf, sizeof(buf), ts(forms[i])), forms[i]);
        CHECK_STR_EQ(format_timestamp(buf, sizeof(buf), ts("2026-11-21T06:00:00.5+01:00")), "2026-11-21T05:00:00.500Z");
}

int main(void) {
        test_valid_forms();
        test_malformed_is_einval();
        test_out_of_range_is_erange();
        test_time_points();
        test_format_round_trips();
        TESTS_DONE();
}
