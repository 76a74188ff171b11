/* The off-CPU log's drain (daemon/collect/blocklog.c): each logged block
 * is named by the entry of its key among the drained counts, with its end
 * and duration; a block whose key is not there is counted, not lost. */
#include <stdio.h>
#include <string.h>

#include "collect/blocklog.h"
#include "tests.h"

static struct profd_sample_key key(uint32_t tid, uint8_t state, uint64_t stack) {
        struct profd_sample_key k;

        memset(&k, 0, sizeof(k)); /* padding too: keys are compared whole */
        k.kind = PROFD_KIND_OFFCPU;
        k.tgid = 100;
        k.tid = tid;
        k.state = state;
        k.user_stack = stack;
        k.kernel_stack = PROFD_STACK_NONE;
        return k;
}

static void test_blocks_named_by_their_keys(void) {
        const struct profd_sample_key keys[4] = {
                key(101, 2, 7), key(100, 2, 7), key(101, 3, 7), key(101, 2, 8),
        };
        struct profd_block_slot logged[5];
        struct drain_block out[5];
        uint32_t order[4];
        uint64_t unmatched = 0, unmatched_ns = 0;
        size_t n;

        memset(logged, 0, sizeof(logged));
        logged[0].key = keys[2], logged[0].end_ns = 5000000000, logged[0].duration_ns = 200000000;
        logged[1].key = keys[0], logged[1].end_ns = 5100000000, logged[1].duration_ns = 1000000;
        logged[2].key = key(999, 2, 7), logged[2].end_ns = 5200000000, logged[2].duration_ns = 3000000;
        logged[3].key = keys[2], logged[3].end_ns = 5300000000, logged[3].duration_ns = 2000000;
        logged[4].key = keys[3], logged[4].end_ns = 5400000000, logged[4].duration_ns = 4000000;

        n = blocklog_match(keys, 4, logged, 5, order, out, &unmatched, &unmatched_ns);
        CHECK_INT_EQ(n, 4);
        CHECK_INT_EQ(unmatched, 1);
        CHECK_INT_EQ(unmatched_ns, 3000000);
        /* in the log's order, each with its own end, duration and entry */
        CHECK_INT_EQ(out[0].entry, 2);
        CHECK_INT_EQ(out[0].end_mono_ns, 5000000000);
        CHECK_INT_EQ(out[0].duration_ns, 200000000);
        CHECK_INT_EQ(out[1].entry, 0);
        CHECK_INT_EQ(out[2].entry, 2);
        CHECK_INT_EQ(out[2].duration_ns, 2000000);
        CHECK_INT_EQ(out[3].entry, 3);
        CHECK_INT_EQ(out[3].end_mono_ns, 5400000000);
}

static void test_nothing_logged(void) {
        const struct profd_sample_key keys[1] = { key(1, 2, 3) };
        uint64_t unmatched = 0, unmatched_ns = 0;
        uint32_t order[1];

        CHECK_INT_EQ(blocklog_match(keys, 1, NULL, 0, order, NULL, &unmatched, &unmatched_ns), 0);
        CHECK_INT_EQ(unmatched + unmatched_ns, 0);
}

static void test_no_keys_every_block_unmatched(void) {
        struct profd_block_slot logged[2];
        struct drain_block out[2];
        uint64_t unmatched = 0, unmatched_ns = 0;
        uint32_t order[1];

        memset(logged, 0, sizeof(logged));
        logged[0].key = key(1, 2, 3), logged[0].duration_ns = 10;
        logged[1].key = key(1, 2, 4), logged[1].duration_ns = 20;
        CHECK_INT_EQ(blocklog_match(NULL, 0, logged, 2, order, out, &unmatched, &unmatched_ns), 0);
        CHECK_INT_EQ(unmatched, 2);
        CHECK_INT_EQ(unmatched_ns, 30);
}

int main(void) {
        test_blocks_named_by_their_keys();
        test_nothing_logged();
        test_no_keys_every_block_unmatched();
        if (tests_failed)
                return 1;
        printf("blocklog: ok\n");
        return 0;
}
