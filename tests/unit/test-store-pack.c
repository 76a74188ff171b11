/* Blocks of samples (daemon/store/sample-pack.h): every entry comes back
 * exactly, in (stack, tid, state, peer, cgroup) order, each field as wide
 * as its range in the block needs; a blob of the wrong size is refused.
 * Stored in SQLite (sample-blocks.h), a block reads back the same through
 * all its columns and, for stacks and values, through the fewer columns
 * queries of stacks select. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sample-blocks.h"
#include "sample-pack.h"
#include "tests.h"

static unsigned width_of(const struct sample_block *b, int f) {
        return (b->widths >> (4 * f)) & 0xf;
}

static void test_round_trip_sorted_and_sized_by_range(void) {
        struct sample_entry e[] = {
                { .stack_id = 70000, .tid = 4242, .state = 2, .cgroup_id = 9001, .value = 1000000000ULL },
                { .stack_id = 5, .tid = 4242, .state = 1, .cgroup_id = 9001, .value = 3 },
                { .stack_id = 5, .tid = 4200, .state = 1, .cgroup_id = 9001, .value = UINT64_MAX },
                { .stack_id = 300, .tid = 4300, .state = 3, .peer_tid = 77, .cgroup_id = 9001, .value = 0 },
        };
        struct sample_block b;
        struct sample_entry got;

        CHECK_INT_EQ(sample_block_pack(e, ELEMENTSOF(e), &b), 0);
        CHECK_INT_EQ(b.n, 4);
        CHECK_INT_EQ(sample_block_check(&b), 0);
        /* bases are the minima; widths the bytes of max - min */
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_STACK], 5);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_STACK), 3);   /* 69995 */
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_TID], 4200);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_TID), 1);     /* 100 */
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_STATE), 1);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_PEER), 1);
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_CGROUP], 9001);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_CGROUP), 0);  /* one cgroup: no bytes */
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_VALUE), 8);
        CHECK_INT_EQ(sample_block_entry_width(b.widths), 3 + 1 + 1 + 1 + 0 + 8);
        CHECK_INT_EQ(b.size, 4 * 14);

        sample_block_get(&b, 0, &got);
        CHECK_INT_EQ(got.stack_id, 5);
        CHECK_INT_EQ(got.tid, 4200);
        CHECK(got.value == UINT64_MAX);
        sample_block_get(&b, 1, &got);
        CHECK_INT_EQ(got.stack_id, 5);
        CHECK_INT_EQ(got.tid, 4242);
        CHECK_INT_EQ(got.state, 1);
        CHECK_INT_EQ(got.value, 3);
        CHECK_INT_EQ(got.cgroup_id, 9001);
        sample_block_get(&b, 2, &got);
        CHECK_INT_EQ(got.stack_id, 300);
        CHECK_INT_EQ(got.peer_tid, 77);
        CHECK_INT_EQ(got.state, 3);
        CHECK_INT_EQ(got.value, 0);
        sample_block_get(&b, 3, &got);
        CHECK_INT_EQ(got.stack_id, 70000);
        CHECK_INT_EQ(got.peer_tid, 0);
        CHECK_INT_EQ(got.value, 1000000000);
        free(b.data);
}

static void test_many_random_entries_come_back(void) {
        enum { N = 5000 };
        struct sample_entry *e = calloc(N, sizeof(*e)), *copy = calloc(N, sizeof(*e));
        struct sample_block b;
        uint64_t x = 88172645463325252ULL, sum = 0, sum_back = 0;

        CHECK(e && copy);
        for (size_t i = 0; i < N; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                e[i] = (struct sample_entry) {
                        .stack_id = (int64_t) (x % 200000), .tid = (uint32_t) (1000 + (x >> 20) % 64),
                        .state = (uint8_t) ((x >> 30) % 7), .peer_tid = (uint32_t) ((x >> 33) % 3),
                        .cgroup_id = 1ULL << 40, .value = x >> 24,
                };
                sum += e[i].value;
        }
        memcpy(copy, e, N * sizeof(*e));
        CHECK_INT_EQ(sample_block_pack(e, N, &b), 0);
        for (size_t i = 0; i < N; i++) {
                struct sample_entry g;

                sample_block_get(&b, i, &g);
                /* pack sorted e in place: entry i is e[i] */
                CHECK(memcmp(&g, &e[i], sizeof(g)) == 0 || (g.stack_id == e[i].stack_id && g.tid == e[i].tid &&
                      g.state == e[i].state && g.peer_tid == e[i].peer_tid && g.cgroup_id == e[i].cgroup_id &&
                      g.value == e[i].value));
                if (i > 0) {
                        struct sample_entry prev;
                        sample_block_get(&b, i - 1, &prev);
                        CHECK(prev.stack_id <= g.stack_id);
                }
                sum_back += g.value;
        }
        CHECK(sum == sum_back);
        /* 18 bits of stack, 1 byte tid, state, peer, no cgroup bytes, 40-bit values */
        CHECK_INT_EQ(sample_block_entry_width(b.widths), 3 + 1 + 1 + 1 + 0 + 5);
        free(b.data);
        free(e);
        free(copy);
}

static void test_empty_block_and_bad_sizes(void) {
        struct sample_block b;
        struct sample_entry one = { .stack_id = 1, .value = 1 };

        CHECK_INT_EQ(sample_block_pack(NULL, 0, &b), 0);
        CHECK_INT_EQ(b.n, 0);
        CHECK(b.data == NULL);
        CHECK_INT_EQ(sample_block_check(&b), 0);

        CHECK_INT_EQ(sample_block_pack(&one, 1, &b), 0);
        /* a single entry: every field is its base, no bytes at all */
        CHECK_INT_EQ(b.size, 0);
        CHECK_INT_EQ(sample_block_check(&b), 0);
        b.n = 2;
        b.widths = 1;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* 2 entries of 1 byte, 0 bytes */
        b.size = 2;
        CHECK_INT_EQ(sample_block_check(&b), 0);
        b.widths = 9;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* a field of 9 bytes */
        free(b.data);
}

/* The span offset: its own field, base 0 whatever the smallest offset
 * (offsets are from the block's key, which the row keeps), one byte at
 * most; entries of one key in different drains stay apart. */
static void test_span_offsets(void) {
        struct sample_entry e[] = {
                { .stack_id = 7, .tid = 1, .value = 3, .span = 29 },
                { .stack_id = 7, .tid = 1, .value = 4, .span = 5 },
                { .stack_id = 7, .tid = 1, .value = 1, .span = 5 },
                { .stack_id = 2, .tid = 1, .value = 2, .span = 12 },
        };
        struct sample_entry got;
        struct sample_block b;
        size_t n;

        CHECK_INT_EQ(sample_block_pack(e, ELEMENTSOF(e), &b), 0);
        CHECK_INT_EQ((b.widths >> 24) & 15, 1);
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_SPAN], 0);
        CHECK_INT_EQ(sample_block_check(&b), 0);
        sample_block_get(&b, 0, &got);
        CHECK_INT_EQ(got.stack_id, 2);
        CHECK_INT_EQ(got.span, 12);
        sample_block_get(&b, 1, &got);
        CHECK_INT_EQ(got.span, 5);
        sample_block_get(&b, 3, &got);
        CHECK_INT_EQ(got.span, 29);
        CHECK_INT_EQ(got.value, 3);
        CHECK_INT_EQ(sample_block_field(&b, 3, SAMPLE_FIELD_SPAN), 29);
        /* a span offset wider than a byte is damage */
        b.widths |= 2u << 24;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG);
        free(b.data);

        /* only the same drain's equal entries combine */
        n = sample_entries_combine(e, ELEMENTSOF(e));
        CHECK_INT_EQ(n, 3);
        CHECK_INT_EQ(e[1].span, 5);
        CHECK_INT_EQ(e[1].value, 5);

        /* all in one drain (offset 5): still base 0, so the offset is kept */
        struct sample_entry one[] = { { .stack_id = 1, .value = 1, .span = 5 }, { .stack_id = 2, .value = 1, .span = 5 } };
        CHECK_INT_EQ(sample_block_pack(one, 2, &b), 0);
        sample_block_get(&b, 1, &got);
        CHECK_INT_EQ(got.span, 5);
        free(b.data);
}

static void test_combine_sums_equal_keys_only(void) {
        struct sample_entry e[] = {
                { .stack_id = 9, .tid = 1, .state = 2, .value = 10 },
                { .stack_id = 3, .tid = 1, .value = 1 },
                { .stack_id = 9, .tid = 1, .state = 2, .value = 5 },
                { .stack_id = 9, .tid = 1, .state = 3, .value = 7 },   /* another state */
                { .stack_id = 9, .tid = 1, .state = 2, .peer_tid = 4, .value = 2 }, /* another peer */
                { .stack_id = 3, .tid = 1, .value = 1 },
        };
        size_t n = sample_entries_combine(e, ELEMENTSOF(e));

        CHECK_INT_EQ(n, 4);
        CHECK_INT_EQ(e[0].stack_id, 3);
        CHECK_INT_EQ(e[0].value, 2);
        CHECK_INT_EQ(e[1].stack_id, 9);
        CHECK_INT_EQ(e[1].state, 2);
        CHECK_INT_EQ(e[1].peer_tid, 0);
        CHECK_INT_EQ(e[1].value, 15);
        CHECK_INT_EQ(e[2].peer_tid, 4);
        CHECK_INT_EQ(e[2].value, 2);
        CHECK_INT_EQ(e[3].state, 3);
        CHECK_INT_EQ(e[3].value, 7);
}

static void test_stored_block_reads_back_through_both_column_sets(void) {
        struct sample_entry e[] = {
                { .stack_id = 70000, .tid = 12, .state = 1, .peer_tid = 9, .cgroup_id = 1ULL << 33, .value = 5 },
                { .stack_id = 3, .tid = 4000, .state = 2, .peer_tid = 0, .cgroup_id = 7, .value = 1ULL << 41 },
                { .stack_id = 3, .tid = 11, .state = 0, .peer_tid = 0, .cgroup_id = 7, .value = 2 },
        };
        struct sample_entry one = { .stack_id = 44, .tid = 8, .value = 9 }; /* every field its base: no blob */
        struct db d = { .path = ":memory:", .who = "" };
        sqlite3_stmt *st;
        size_t got = 0;

        CHECK_INT_EQ(sqlite3_open(":memory:", &d.handle), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_exec(d.handle,
                                  "CREATE TABLE sample_blocks (drain_id INTEGER, kind INTEGER, process_id INTEGER, "
                                  "n INTEGER, widths INTEGER, stack_base INTEGER, tid_base INTEGER, state_base INTEGER, "
                                  "peer_base INTEGER, cgroup_base INTEGER, value_base INTEGER, entries BLOB, "
                                  "PRIMARY KEY (drain_id, kind, process_id)) WITHOUT ROWID",
                                  NULL, NULL, NULL), SQLITE_OK);
        CHECK_INT_EQ(sample_blocks_insert(&d, 1, 0, 1, e, ELEMENTSOF(e), NULL, NULL), 0);
        CHECK_INT_EQ(sample_blocks_insert(&d, 1, 0, 2, &one, 1, NULL, NULL), 0);
        CHECK_INT_EQ(sqlite3_prepare_v2(d.handle, "SELECT " SAMPLE_BLOCK_COLUMNS ", " SAMPLE_BLOCK_COLUMNS_STACKS
                                        " FROM sample_blocks b ORDER BY process_id", -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
                struct sample_block all, few;

                CHECK_INT_EQ(sample_block_from_row(st, 0, &all), 0);
                CHECK_INT_EQ(sample_block_from_row_stacks(st, SAMPLE_BLOCK_N_COLUMNS, &few), 0);
                CHECK_INT_EQ(few.n, all.n);
                for (size_t i = 0; i < all.n; i++) {
                        CHECK_INT_EQ(sample_block_field(&few, i, SAMPLE_FIELD_STACK),
                                     sample_block_field(&all, i, SAMPLE_FIELD_STACK));
                        CHECK_INT_EQ(sample_block_field(&few, i, SAMPLE_FIELD_VALUE),
                                     sample_block_field(&all, i, SAMPLE_FIELD_VALUE));
                }
                if (got == 0) {
                        struct sample_entry g;

                        /* sorted by stack: 3 (tid 11 before 4000), 3, 70000 */
                        CHECK_INT_EQ(all.n, 3);
                        sample_block_get(&all, 1, &g);
                        CHECK_INT_EQ(g.tid, 4000);
                        CHECK_INT_EQ(g.cgroup_id, 7);
                        CHECK_INT_EQ(g.value, 1ULL << 41);
                        CHECK_INT_EQ(sample_block_field(&few, 2, SAMPLE_FIELD_STACK), 70000);
                        CHECK_INT_EQ(sample_block_field(&few, 2, SAMPLE_FIELD_VALUE), 5);
                } else {
                        CHECK_INT_EQ(all.n, 1);
                        CHECK_INT_EQ(few.size, 0);
                        CHECK_INT_EQ(sample_block_field(&few, 0, SAMPLE_FIELD_STACK), 44);
                        CHECK_INT_EQ(sample_block_field(&few, 0, SAMPLE_FIELD_VALUE), 9);
                }
                got++;
        }
        CHECK_INT_EQ(got, 2);
        sqlite3_finalize(st);
        sqlite3_close(d.handle);
}

int main(void) {
        test_combine_sums_equal_keys_only();
        test_stored_block_reads_back_through_both_column_sets();
        test_round_trip_sorted_and_sized_by_range();
        test_many_random_entries_come_back();
        test_empty_block_and_bad_sizes();
        test_span_offsets();
        TESTS_DONE();
}
