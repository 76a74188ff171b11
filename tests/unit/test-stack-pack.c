/* Stacks' frames as the store keeps them (daemon/store/stack-pack.c): a
 * round trip keeps every id in order, blobs written before schema 15 read
 * the same, the forms are told apart by the last byte, consecutive new
 * locations take a byte each, and malformed blobs are refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/stack-pack.h"
#include "tests.h"

/* Packs ids, unpacks them, checks they came back; returns the blob's size. */
static size_t round_trip(const int64_t *ids, size_t n) {
        struct varint_out o = {};
        int64_t *buf = NULL;
        size_t cap = 0, got = 99, size;

        CHECK_INT_EQ(stack_pack(ids, n, &o), 0);
        CHECK(o.size >= 1 && o.data[o.size - 1] == STACK_PACK_MARK);
        CHECK_INT_EQ(stack_unpack(o.data, o.size, &buf, &cap, &got), 0);
        CHECK_INT_EQ(got, n);
        for (size_t i = 0; i < n && i < got; i++)
                CHECK_INT_EQ(buf[i], ids[i]);
        size = o.size;
        free(o.data);
        free(buf);
        return size;
}

static void test_round_trip_keeps_every_id_in_order(void) {
        /* up, down, equal neighbours (recursion), the largest id, varint
         * boundaries of the differences */
        const int64_t ids[] = { 1, 2, 3, 200, 63, 64, 65, 128, 8192, 8192, 1, INT64_MAX, 1, 1LL << 35, 7 };

        round_trip(ids, sizeof(ids) / sizeof(ids[0]));
        for (size_t n = 0; n <= 3; n++)
                round_trip(ids, n);
        /* no frames: one byte, the mark */
        CHECK_INT_EQ(round_trip(NULL, 0), 1);
}

static void test_new_locations_take_a_byte_each(void) {
        /* a new stack: the shared root frames with small ids, then 16
         * locations made for it, consecutive ids in the hundred thousands */
        int64_t ids[20] = { 3, 5, 9, 12 };

        for (int i = 4; i < 20; i++)
                ids[i] = 250000 + i;
        /* 4 small ids (1 byte each), the jump (3 bytes), 15 steps of one
         * (1 byte each), the mark: 23 bytes; as 64-bit integers 160 */
        CHECK_INT_EQ(round_trip(ids, 20), 4 + 3 + 15 + 1);
}

static void test_blobs_before_schema_15_read_the_same(void) {
        const int64_t ids[] = { 1, 300, 70000, 1LL << 40, 5 };
        int64_t *buf = NULL;
        size_t cap = 0, n = 99;

        /* little-endian 64-bit ids: what schema 14 wrote */
        CHECK_INT_EQ(stack_unpack(ids, sizeof(ids), &buf, &cap, &n), 0);
        CHECK_INT_EQ(n, 5);
        for (size_t i = 0; i < 5 && i < n; i++)
                CHECK_INT_EQ(buf[i], ids[i]);
        /* an id whose low byte is 1 (the mark) last: its last byte is still 0 */
        CHECK_INT_EQ(stack_unpack((int64_t[]) { 257, 1 }, 16, &buf, &cap, &n), 0);
        CHECK(n == 2 && buf[0] == 257 && buf[1] == 1);
        /* the empty blob: no frames */
        CHECK_INT_EQ(stack_unpack("", 0, &buf, &cap, &n), 0);
        CHECK_INT_EQ(n, 0);
        free(buf);
}

static void test_malformed_blobs_are_refused(void) {
        int64_t *buf = NULL;
        size_t cap = 0, n = 0;
        struct varint_out o = {};
        const int64_t zero[] = { 5, 0 };
        static const uint8_t truncated[] = { 0x85, STACK_PACK_MARK };     /* a varint's continuation, then the mark */
        static const uint8_t overlong[] = { 0x82, 0x00, STACK_PACK_MARK }; /* 2 in two bytes */
        static const uint8_t below_one[] = { 0x01, STACK_PACK_MARK };      /* zigzag 1 = -1: id -1 */
        static const uint8_t other_mark[] = { 0x02, 0x07 };
        static const uint8_t short_old[] = { 1, 0, 0, 0, 0, 0, 0 };        /* 7 bytes ending in 0 */

        CHECK_INT_EQ(stack_unpack(truncated, sizeof(truncated), &buf, &cap, &n), -EBADMSG);
        CHECK_INT_EQ(stack_unpack(overlong, sizeof(overlong), &buf, &cap, &n), -EBADMSG);
        CHECK_INT_EQ(stack_unpack(below_one, sizeof(below_one), &buf, &cap, &n), -EBADMSG);
        CHECK_INT_EQ(stack_unpack(other_mark, sizeof(other_mark), &buf, &cap, &n), -EBADMSG);
        CHECK_INT_EQ(stack_unpack(short_old, sizeof(short_old), &buf, &cap, &n), -EBADMSG);
        /* an old blob naming id 0 */
        CHECK_INT_EQ(stack_unpack(zero, sizeof(zero), &buf, &cap, &n), -EBADMSG);
        /* ids below 1 are not packed */
        CHECK_INT_EQ(stack_pack(zero, 2, &o), -EINVAL);
        CHECK_INT_EQ(stack_pack((int64_t[]) { -3 }, 1, &o), -EINVAL);
        free(o.data);
        free(buf);
}

int main(void) {
        test_round_trip_keeps_every_id_in_order();
        test_new_locations_take_a_byte_each();
        test_blobs_before_schema_15_read_the_same();
        test_malformed_blobs_are_refused();
        if (tests_failed)
                return 1;
        printf("stack-pack: ok\n");
        return 0;
}
