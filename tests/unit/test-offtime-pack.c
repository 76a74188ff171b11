/* The off-CPU timeline's packed blob (daemon/store/offtime-pack.c): a round
 * trip keeps every block's start, duration and key, every malformed blob
 * is refused, and a window counts the part of a block inside it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/offtime-pack.h"
#include "tests.h"

static void test_round_trip_keeps_every_block(void) {
        /* unsorted keys and blocks, a key unused, two blocks at one start,
         * two keys differing only by state */
        const struct offtime_key keys[5] = {
                { 900, 70, 4001, 2 }, { 12, 5000, 12, 3 }, { 12, 40, 13, 2 }, { 900, 70, 4000, 2 },
                { 900, 70, 4001, 3 },
        };
        const struct offtime_block blocks[6] = {
                { 20408, 200000, 0 }, { 0, 1000, 1 }, { 10204, 5, 4 }, { 10204, 3000000000ULL, 1 },
                { 9999999, 0, 0 }, { 30612, 1, 0 },
        };
        struct offtime_set b = {};
        uint8_t *data = NULL;
        size_t size = 0;
        uint64_t prev = 0;

        CHECK_INT_EQ(offtime_pack(keys, 5, blocks, 6, &data, &size), 0);
        CHECK_INT_EQ(offtime_unpack(data, size, &b), 0);
        CHECK_INT_EQ(b.n_keys, 5);
        CHECK_INT_EQ(b.n_blocks, 6);
        CHECK_INT_EQ(b.span_us, 9999999);
        /* keys sorted by (process, stack, tid, state) */
        CHECK(b.keys[0].process_id == 12 && b.keys[0].stack_id == 40 && b.keys[0].tid == 13);
        CHECK(b.keys[1].process_id == 12 && b.keys[1].stack_id == 5000 && b.keys[1].state == 3);
        CHECK(b.keys[2].process_id == 900 && b.keys[2].tid == 4000);
        CHECK(b.keys[3].tid == 4001 && b.keys[3].state == 2);
        CHECK(b.keys[4].tid == 4001 && b.keys[4].state == 3);
        for (size_t i = 0; i < b.n_blocks; i++) {
                const struct offtime_key *k = &b.keys[b.blocks[i].key];
                size_t found = 0;

                CHECK(b.blocks[i].start_us >= prev);
                prev = b.blocks[i].start_us;
                for (size_t j = 0; j < 6; j++) {
                        const struct offtime_key *w = &keys[blocks[j].key];
                        if (blocks[j].start_us == b.blocks[i].start_us &&
                            blocks[j].duration_us == b.blocks[i].duration_us && w->process_id == k->process_id &&
                            w->stack_id == k->stack_id && w->tid == k->tid && w->state == k->state)
                                found++;
                }
                CHECK_INT_EQ(found, 1);
        }
        offtime_set_done(&b);
        free(data);
}

static void test_empty_blob(void) {
        struct offtime_set b = {};
        uint8_t *data = NULL;
        size_t size = 0;

        CHECK_INT_EQ(offtime_pack(NULL, 0, NULL, 0, &data, &size), 0);
        CHECK_INT_EQ(size, 3);
        CHECK_INT_EQ(offtime_unpack(data, size, &b), 0);
        CHECK_INT_EQ(b.n_keys + b.n_blocks + b.span_us, 0);
        offtime_set_done(&b);
        free(data);
}

static void test_pack_refuses_what_it_cannot_say(void) {
        const struct offtime_key keys[1] = { { 1, 2, 3, 2 } }, negative[1] = { { 1, -2, 3, 2 } };
        const struct offtime_block out_of_range[1] = { { 5, 1, 1 } }, wraps[1] = { { 5, UINT64_MAX - 2, 0 } };
        uint8_t *data = NULL;
        size_t size = 0;

        CHECK_INT_EQ(offtime_pack(keys, 1, out_of_range, 1, &data, &size), -EINVAL);
        CHECK_INT_EQ(offtime_pack(keys, 1, wraps, 1, &data, &size), -EINVAL);
        CHECK_INT_EQ(offtime_pack(negative, 1, NULL, 0, &data, &size), -EINVAL);
        CHECK(data == NULL);
}

static int unpack(const uint8_t *d, size_t n) {
        struct offtime_set b = {};
        int r = offtime_unpack(d, n, &b);

        offtime_set_done(&b);
        return r;
}

static void test_unpack_refuses_malformed_blobs(void) {
        /* 1 key (1, 2, tid 3, state 2), 1 block at 5 for 7 µs: valid */
        const uint8_t good[] = { 1, 1, 5, 1, 2, 3, 2, 5, 7, 0 };
        const uint8_t key_out_of_range[] = { 1, 1, 5, 1, 2, 3, 2, 5, 7, 1 };
        const uint8_t start_past_span[] = { 1, 1, 4, 1, 2, 3, 2, 5, 7, 0 };
        const uint8_t last_not_span[] = { 1, 1, 6, 1, 2, 3, 2, 5, 7, 0 };
        const uint8_t state_too_big[] = { 1, 1, 5, 1, 2, 3, 0x80, 0x02, 5, 7, 0 };
        const uint8_t overlong[] = { 1, 1, 5, 1, 2, 3, 2, 0x85, 0x00, 7, 0 };
        const uint8_t trailing[] = { 1, 1, 5, 1, 2, 3, 2, 5, 7, 0, 0 };
        const uint8_t truncated[] = { 1, 1, 5, 1, 2, 3, 2, 5, 7 };
        const uint8_t lying_count[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0 };
        const uint8_t blocks_without_keys[] = { 0, 1, 0, 0, 0, 0 };
        const uint8_t wraps[] = { 1, 1, 5, 1, 2, 3, 2, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0 };

        CHECK_INT_EQ(unpack(good, sizeof(good)), 0);
        CHECK_INT_EQ(unpack(key_out_of_range, sizeof(key_out_of_range)), -EBADMSG);
        CHECK_INT_EQ(unpack(start_past_span, sizeof(start_past_span)), -EBADMSG);
        CHECK_INT_EQ(unpack(last_not_span, sizeof(last_not_span)), -EBADMSG);
        CHECK_INT_EQ(unpack(state_too_big, sizeof(state_too_big)), -EBADMSG);
        CHECK_INT_EQ(unpack(overlong, sizeof(overlong)), -EBADMSG);
        CHECK_INT_EQ(unpack(trailing, sizeof(trailing)), -EBADMSG);
        CHECK_INT_EQ(unpack(truncated, sizeof(truncated)), -EBADMSG);
        CHECK_INT_EQ(unpack(lying_count, sizeof(lying_count)), -EBADMSG);
        CHECK_INT_EQ(unpack(blocks_without_keys, sizeof(blocks_without_keys)), -EBADMSG);
        CHECK_INT_EQ(unpack(wraps, sizeof(wraps)), -EBADMSG);
        CHECK_INT_EQ(unpack(NULL, 0), -EBADMSG);
}

static void test_window_counts_the_part_inside(void) {
        uint64_t at = 0;

        /* a block of 200 ms from t = 1 s */
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 0, UINT64_MAX, &at), 200000000);
        CHECK_INT_EQ(at, 1000000000);
        /* a window over its second half, its last ns included */
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 1100000000, 1199999999, &at), 100000000);
        CHECK_INT_EQ(at, 1100000000);
        /* a window inside it */
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 1050000000, 1059999999, &at), 10000000);
        /* windows before and after it, touching its edges */
        at = 7;
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 0, 999999999, &at), 0);
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 1200000000, 1300000000, &at), 0);
        CHECK_INT_EQ(at, 7);
        /* a window's first ns is the block's last */
        CHECK_INT_EQ(offtime_clip(1000000000, 200000000, 1199999999, 1300000000, &at), 1);
        /* an empty block counts nothing */
        CHECK_INT_EQ(offtime_clip(5, 0, 0, 10, &at), 0);
}

int main(void) {
        test_round_trip_keeps_every_block();
        test_empty_blob();
        test_pack_refuses_what_it_cannot_say();
        test_unpack_refuses_malformed_blobs();
        test_window_counts_the_part_inside();
        if (tests_failed)
                return 1;
        printf("offtime-pack: ok\n");
        return 0;
}
