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
        const struct profd_sample_key k[7] = {
                key(7, 100, 0x1000), key(8, 100, 0x1000), key(7, 100, 0x1000), key(7, 101, 0x1000),
                key(7, 100, 0x1000), key(7, 100, 0x1004), key(8, 100, 0x1000),
        };
        struct profd_sample_key want[4] = { key(7, 100, 0x1000), key(8, 100, 0x1000), key(7, 101, 0x1000),
                                            key(7, 100, 0x1004) };
        struct profd_sample_key out[7];
        uint64_t want_counts[4] = { 3, 2, 1, 1 }, counts[7], total = 0;
        uint32_t order[7], index[7];
        size_t n = samplelog_sum(k, 7, order, out, counts, index);

        assert(n == 4);
        for (size_t i = 0; i < n; i++) {
                total += counts[i];
                /* distinct, in order */
                if (i > 0)
                        assert(memcmp(&out[i - 1], &out[i], sizeof(out[i])) < 0);
        }
        assert(total == 7);
        for (size_t w = 0; w < 4; w++) {
                size_t found = 0;

                for (size_t i = 0; i < n; i++)
                        if (memcmp(&out[i], &want[w], sizeof(out[i])) == 0) {
                                assert(counts[i] == want_counts[w]);
                                found++;
                        }
                assert(found == 1);
        }
}

/* The timeline's need: each logged sample names its key among the sum's,
 * so a sample's time and its key travel apart and meet again. */
static void test_sum_gives_each_logged_sample_its_key(void) {
        const struct profd_sample_key k[6] = {
                key(9, 5, 0x20), key(3, 5, 0x20), key(9, 5, 0x20), key(9, 6, 0x20), key(3, 5, 0x20), key(1, 1, 1),
        };
        struct profd_sample_key out[6];
        uint64_t counts[6], per_index[6] = { 0 };
        uint32_t order[6], index[6];
        size_t n = samplelog_sum(k, 6, order, out, counts, index);

        assert(n == 4);
        for (size_t i = 0; i < 6; i++) {
                assert(index[i] < n);
                assert(memcmp(&out[index[i]], &k[i], sizeof(k[i])) == 0);
                per_index[index[i]]++;
        }
        /* the counts are the permutation's fibres */
        for (size_t i = 0; i < n; i++)
                assert(per_index[i] == counts[i]);
        /* same key, same index; samples 0 and 2 are one key */
        assert(index[0] == index[2] && index[1] == index[4] && index[0] != index[3]);
        /* no index wanted: the same sum */
        assert(samplelog_sum(k, 6, order, out, counts, NULL) == 4);
}

static void test_sum_of_nothing_and_of_one(void) {
        struct profd_sample_key k = key(1, 2, 3), out = {};
        uint64_t c = 99;
        uint32_t order[1], index[1] = { 77 };

        assert(samplelog_sum(&k, 0, order, &out, &c, index) == 0);
        assert(c == 99 && index[0] == 77);
        assert(samplelog_sum(&k, 1, order, &out, &c, index) == 1);
        assert(c == 1 && out.tid == 1 && PROFD_KEY_LEAF(&out) == 3 && index[0] == 0);
}

int main(void) {
        test_slots_hold_a_generation_and_a_late_drain();
        test_slots_within_the_keys_of_the_counts_map();
        test_sum_counts_each_key_once_per_time_logged();
        test_sum_gives_each_logged_sample_its_key();
        test_sum_of_nothing_and_of_one();
        printf("samplelog: ok\n");
        return 0;
}
