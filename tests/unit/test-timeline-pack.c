/* The timeline's packed block (daemon/store/timeline-pack.c): a round trip
 * keeps every sample's time and key, and every malformed block is refused. */
#include <errno.h>
#include <stdlib.h>

#include "store/timeline-pack.h"
#include "tests.h"

static void test_round_trip_keeps_every_time_and_key(void) {
        /* unsorted keys and samples, a key unused, two samples at one time */
        const struct timeline_key keys[4] = {
                { 900, 70, 4001 }, { 12, 5000, 12 }, { 12, 40, 13 }, { 900, 70, 4000 },
        };
        const struct timeline_sample samples[6] = {
                { 20408, 0 }, { 0, 1 }, { 10204, 3 }, { 10204, 1 }, { 9999999, 0 }, { 30612, 0 },
        };
        struct timeline_block b = {};
        uint8_t *data = NULL;
        size_t size = 0;
        uint64_t prev = 0;

        CHECK_INT_EQ(timeline_pack(keys, 4, samples, 6, &data, &size), 0);
        CHECK_INT_EQ(timeline_unpack(data, size, &b), 0);
        CHECK_INT_EQ(b.n_keys, 4);
        CHECK_INT_EQ(b.n_samples, 6);
        CHECK_INT_EQ(b.span_us, 9999999);
        /* keys sorted by (process, stack, tid) */
        CHECK(b.keys[0].process_id == 12 && b.keys[0].stack_id == 40 && b.keys[0].tid == 13);
        CHECK(b.keys[1].process_id == 12 && b.keys[1].stack_id == 5000 && b.keys[1].tid == 12);
        CHECK(b.keys[2].process_id == 900 && b.keys[2].tid == 4000);
        CHECK(b.keys[3].process_id == 900 && b.keys[3].tid == 4001);
        /* each sample unpacked is one packed, its key the same key */
        for (size_t i = 0; i < b.n_samples; i++) {
                const struct timeline_key *k = &b.keys[b.samples[i].key];
                size_t found = 0;

                CHECK(b.samples[i].time_us >= prev);
                prev = b.samples[i].time_us;
                for (size_t j = 0; j < 6; j++) {
                        const struct timeline_key *w = &keys[samples[j].key];
                        if (samples[j].time_us == b.samples[i].time_us && w->process_id == k->process_id &&
                            w->stack_id == k->stack_id && w->tid == k->tid)
                                found++;
                }
                CHECK_INT_EQ(found, 1);
        }
        timeline_block_done(&b);
        free(data);
}

static void test_empty_block(void) {
        struct timeline_block b = {};
        uint8_t *data = NULL;
        size_t size = 0;

        CHECK_INT_EQ(timeline_pack(NULL, 0, NULL, 0, &data, &size), 0);
        CHECK_INT_EQ(size, 3);
        CHECK_INT_EQ(timeline_unpack(data, size, &b), 0);
        CHECK_INT_EQ(b.n_keys + b.n_samples + b.span_us, 0);
        timeline_block_done(&b);
        free(data);
}

static void test_pack_refuses_what_it_cannot_say(void) {
        const struct timeline_key keys[1] = { { 1, 2, 3 } }, negative[1] = { { -1, 2, 3 } };
        const struct timeline_sample out_of_range[1] = { { 5, 1 } };
        uint8_t *data = NULL;
        size_t size = 0;

        CHECK_INT_EQ(timeline_pack(keys, 1, out_of_range, 1, &data, &size), -EINVAL);
        CHECK_INT_EQ(timeline_pack(negative, 1, NULL, 0, &data, &size), -EINVAL);
        CHECK(data == NULL);
}

static int unpack(const uint8_t *d, size_t n) {
        struct timeline_block b = {};
        int r = timeline_unpack(d, n, &b);

        timeline_block_done(&b);
        return r;
}

static void test_unpack_refuses_hostile_blocks(void) {
        /* a valid one: 1 key (7, 9, 11), 2 samples at 3 and 5 */
        const uint8_t ok[] = { 1, 2, 5, 7, 9, 11, 3, 0, 2, 0 };
        uint8_t d[32];

        CHECK_INT_EQ(unpack(ok, sizeof(ok)), 0);
        /* every truncation */
        for (size_t n = 0; n < sizeof(ok); n++)
                CHECK_INT_EQ(unpack(ok, n), -EBADMSG);
        /* a byte left over */
        memcpy(d, ok, sizeof(ok));
        d[sizeof(ok)] = 0;
        CHECK_INT_EQ(unpack(d, sizeof(ok) + 1), -EBADMSG);
        /* key index out of range */
        memcpy(d, ok, sizeof(ok));
        d[9] = 1;
        CHECK_INT_EQ(unpack(d, sizeof(ok)), -EBADMSG);
        /* a time past the block's end (span 5, deltas 3 + 3) */
        memcpy(d, ok, sizeof(ok));
        d[8] = 3;
        CHECK_INT_EQ(unpack(d, sizeof(ok)), -EBADMSG);
        /* the last time short of the span (3 + 1 < 5) */
        d[8] = 1;
        CHECK_INT_EQ(unpack(d, sizeof(ok)), -EBADMSG);
        /* a span with no samples */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0, 0, 1 }, 3), -EBADMSG);
        /* samples with no keys */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0, 1, 0, 0, 0 }, 5), -EBADMSG);
        /* counts the bytes cannot hold: no allocation of 2^63 keys */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0 }, 11),
                     -EBADMSG);
        CHECK_INT_EQ(unpack((const uint8_t[]) { 1, 0x80, 0x80, 0x04, 0, 7, 9, 11 }, 8), -EBADMSG);
        /* overlong varints: a trailing zero byte, and more than 64 bits */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0x80, 0x00, 0, 0 }, 4), -EBADMSG);
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0 },
                            12),
                     -EBADMSG);
        CHECK_INT_EQ(unpack((const uint8_t[]) { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
                            11),
                     -EBADMSG);
        /* a tid past 32 bits */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 1, 0, 0, 7, 9, 0x80, 0x80, 0x80, 0x80, 0x10 }, 10), -EBADMSG);
        /* a process id past INT64_MAX, and one that wraps by its delta */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 1, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
                                                1, 1 },
                            15),
                     -EBADMSG);
        CHECK_INT_EQ(unpack((const uint8_t[]) { 2, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 1,
                                                1, 1, 1 },
                            17),
                     -EBADMSG);
        /* a stack id that wraps by its delta within one process */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 2, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1,
                                                0, 1, 1 },
                            17),
                     -EBADMSG);
        /* a time delta that would wrap 64 bits */
        CHECK_INT_EQ(unpack((const uint8_t[]) { 1, 2, 5, 7, 9, 11, 3, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                0xff, 0xff, 0x01, 0 },
                            19),
                     -EBADMSG);
}

/* What a drain's timeline costs: 49 Hz on 2 CPUs for 10 s, 980 samples of
 * 30 threads in a few processes, each sample its own stack (the leaf is
 * in the key): about 2 bytes of time and 2 of key index a sample, plus
 * the keys. */
static void test_bytes_per_sample(void) {
        enum { N = 980 };
        struct timeline_key *keys = calloc(N, sizeof(*keys));
        struct timeline_sample *samples = calloc(N, sizeof(*samples));
        uint8_t *data = NULL;
        size_t size = 0, n_keys = 0;
        unsigned seed = 1;

        for (size_t i = 0; i < N; i++) {
                seed = seed * 1103515245 + 12345;
                /* a third of the samples repeat a key (a thread in the same place) */
                if (n_keys > 0 && seed % 3 == 0)
                        samples[i].key = (uint32_t) ((seed >> 8) % n_keys);
                else {
                        keys[n_keys] = (struct timeline_key) { 1000 + (seed >> 4) % 5, 150000 + (seed >> 6) % 20000,
                                                                (uint32_t) (40000 + (seed >> 10) % 30) };
                        samples[i].key = (uint32_t) n_keys++;
                }
                samples[i].time_us = i / 2 * 20408 + (i % 2) * (seed >> 12) % 20408;
        }
        CHECK_INT_EQ(timeline_pack(keys, n_keys, samples, N, &data, &size), 0);
        fprintf(stderr, "timeline: %zu samples, %zu keys: %zu bytes, %.2f bytes a sample\n", (size_t) N, n_keys,
                size, (double) size / N);
        CHECK(size < 10 * N);
        free(data);
        free(keys);
        free(samples);
}

int main(void) {
        test_round_trip_keeps_every_time_and_key();
        test_empty_block();
        test_pack_refuses_what_it_cannot_say();
        test_unpack_refuses_hostile_blocks();
        test_bytes_per_sample();
        if (tests_failed)
                return 1;
        printf("timeline-pack: ok\n");
        return 0;
}
