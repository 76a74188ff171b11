/* The sampler's log: region sizes and the drain's sum (daemon/collect/samplelog.c). */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "samplelog.h"

static struct profd_sample_key key(uint32_t tid, uint64_t user_stack, uint64_t leaf) {
        struct profd_sample_key k = { .tgid = tid, .tid = tid, .user_stack = user_stack, .kind = PROFD_KIND_CPU };

        k.leaf_lo = (uint32_t) leaf;
        k.leaf_hi = (uint16_t) (leaf >> 32);
        return k;
}

static void test_slots_hold_a_generation_and_a_late_drain(void) {
        /* 49 Hz x 10 s = 490 samples a generation; half an interval late,
         * 735, and slack; plus the head */
        assert(samplelog_slots(49, 10ull * 1000000000, 1 << 20, 2) == 735 + 16 + 1);
        /* a fraction of a second rounds up: 99 Hz x 1.5 s = 148.5 */
        assert(samplelog_slots(99, 1500ull * 1000000, 1 << 20, 2) == 149 * 3 / 2 + 16 + 1);
        /* never less than the slack and a head */
        assert(samplelog_slots(1, 1, 1 << 20, 2) == 1 + 16 + 1);
}

static void test_slots_within_the_keys_of_the_counts_map(void) {
        /* max_keys = 64 on 2 CPUs: 32 keys a region */
        assert(samplelog_slots(499, 1000000000ull, 64, 2) == 32 + 1);
        /* the defaults on 128 CPUs: 49 x 128 x 10 + 18432 keys, 634 a CPU */
        assert(samplelog_slots(49, 10ull * 1000000000, 49 * 128 * 10 + 18432, 128) == 634 + 1);
        /* fewer keys than CPUs: no log */
        assert(samplelog_slots(49, 10ull * 1000000000, 3, 4) == 0);
}

static void test_sum_counts_each_key_once_per_time_logged(void) {
        struct profd_sample_key k[7] = {
                key(7, 100, 0x1000), key(8, 100, 0x1000), key(7, 100, 0x1000), key(7, 101, 0x1000),
                key(7, 100, 0x1000), key(7, 100, 0x1004), key(8, 100, 0x1000),
        };
        struct profd_sample_key want[4] = { key(7, 100, 0x1000), key(8, 100, 0x1000), key(7, 101, 0x1000),
                                            key(7, 100, 0x1004) };
        uint64_t want_counts[4] = { 3, 2, 1, 1 }, counts[7], total = 0;
        size_t n = samplelog_sum(k, counts, 7);

        assert(n == 4);
        for (size_t i = 0; i < n; i++) {
                total += counts[i];
                /* distinct, in order */
                if (i > 0)
                        assert(memcmp(&k[i - 1], &k[i], sizeof(k[i])) < 0);
        }
        assert(total == 7);
        for (size_t w = 0; w < 4; w++) {
                size_t found = 0;

                for (size_t i = 0; i < n; i++)
                        if (memcmp(&k[i], &want[w], sizeof(k[i])) == 0) {
                                assert(counts[i] == want_counts[w]);
                                found++;
                        }
                assert(found == 1);
        }
}

static void test_sum_of_nothing_and_of_one(void) {
        struct profd_sample_key k = key(1, 2, 3);
        uint64_t c = 99;

        assert(samplelog_sum(&k, &c, 0) == 0);
        assert(c == 99);
        assert(samplelog_sum(&k, &c, 1) == 1);
        assert(c == 1 && k.tid == 1 && PROFD_KEY_LEAF(&k) == 3);
}

int main(void) {
        test_slots_hold_a_generation_and_a_late_drain();
        test_slots_within_the_keys_of_the_counts_map();
        test_sum_counts_each_key_once_per_time_logged();
        test_sum_of_nothing_and_of_one();
        printf("samplelog: ok\n");
        return 0;
}
