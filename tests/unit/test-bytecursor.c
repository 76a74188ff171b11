/* The bounded byte reader: LEB128 at and past 64 bits, padding, truncation,
 * and a bad cursor staying bad. */
#include "bytecursor.h"
#include "tests.h"

#define CURSOR(...) ({ static const uint8_t _b[] = { __VA_ARGS__ }; bytecursor_make(_b, sizeof(_b)); })

static void test_uleb(void) {
        struct bytecursor c;

        c = CURSOR(0x02);
        CHECK_INT_EQ(bytecursor_uleb(&c), 2);
        CHECK(!c.bad && bytecursor_left(&c) == 0);
        c = CURSOR(0xe5, 0x8e, 0x26);
        CHECK(bytecursor_uleb(&c) == 624485 && !c.bad);
        /* padded to five bytes, as linkers do */
        c = CURSOR(0x80, 0x80, 0x80, 0x80, 0x00);
        CHECK(bytecursor_uleb(&c) == 0 && !c.bad);
        /* UINT64_MAX: nine bytes of 0xff then 0x01 */
        c = CURSOR(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
        CHECK(bytecursor_uleb(&c) == UINT64_MAX && !c.bad);
        /* 2^64: one bit too many */
        c = CURSOR(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02);
        CHECK(bytecursor_uleb(&c) == 0 && c.bad);
        /* a one far past 64 bits after zero padding */
        c = CURSOR(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
        bytecursor_uleb(&c);
        CHECK(c.bad);
        /* zero padding up to ten bytes is fine, an eleventh byte is not,
         * zero or not: libdw reads no more than ten */
        c = CURSOR(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00);
        CHECK(bytecursor_uleb(&c) == 1 && !c.bad);
        c = CURSOR(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00);
        CHECK(bytecursor_uleb(&c) == 0 && c.bad);
        /* truncated */
        c = CURSOR(0x80, 0x80);
        CHECK(bytecursor_uleb(&c) == 0 && c.bad);
}

static void test_sleb(void) {
        struct bytecursor c;

        c = CURSOR(0x7f);
        CHECK_INT_EQ(bytecursor_sleb(&c), -1);
        c = CURSOR(0x80, 0x7f);
        CHECK_INT_EQ(bytecursor_sleb(&c), -128);
        c = CURSOR(0x3f);
        CHECK_INT_EQ(bytecursor_sleb(&c), 63);
        /* padded -1, to ten bytes and past */
        c = CURSOR(0xff, 0xff, 0x7f);
        CHECK(bytecursor_sleb(&c) == -1 && !c.bad);
        c = CURSOR(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f);
        CHECK(bytecursor_sleb(&c) == -1 && !c.bad);
        c = CURSOR(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f);
        bytecursor_sleb(&c);
        CHECK(c.bad);
        /* INT64_MIN: 0x80 x9 then 0x7f */
        c = CURSOR(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f);
        CHECK(bytecursor_sleb(&c) == INT64_MIN && !c.bad);
        /* INT64_MAX: 0xff x9 then 0x00 */
        c = CURSOR(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00);
        CHECK(bytecursor_sleb(&c) == INT64_MAX && !c.bad);
        /* 2^63 does not fit: bit 63 set, sign positive */
        c = CURSOR(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
        bytecursor_sleb(&c);
        CHECK(c.bad);
        /* -2^63 - 1 does not fit */
        c = CURSOR(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7e);
        bytecursor_sleb(&c);
        CHECK(c.bad);
        c = CURSOR(0xff);
        bytecursor_sleb(&c);
        CHECK(c.bad);
}

static void test_fixed_and_sticky(void) {
        struct bytecursor c = CURSOR(0x01, 0x02, 0x03, 0x04, 0x05);

        CHECK(bytecursor_fixed_le(&c, 2) == 0x0201);
        CHECK(bytecursor_skip(&c, 1));
        CHECK(bytecursor_fixed_le(&c, 4) == 0 && c.bad);
        /* bad stays bad: nothing more is read, even what would fit */
        CHECK(bytecursor_fixed_le(&c, 1) == 0 && c.bad);
        CHECK(bytecursor_uleb(&c) == 0 && bytecursor_left(&c) == 0);
        CHECK(!bytecursor_skip(&c, 0));

        c = CURSOR(0x01, 0x02);
        CHECK(bytecursor_fixed_le(&c, 9) == 0 && c.bad);
        c = CURSOR(0x01, 0x02);
        CHECK(bytecursor_fixed_le(&c, 0) == 0 && !c.bad && bytecursor_left(&c) == 2);
}

int main(void) {
        test_uleb();
        test_sleb();
        test_fixed_and_sticky();
        TESTS_DONE();
}
