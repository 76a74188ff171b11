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
#include "schema.h"
#include "tests.h"

static unsigned width_of(const struct sample_block *b, int f) {
        return sample_block_width(b->widths, f);
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
        /* bases are the minima; widths the bits of max - min */
        CHECK(b.widths & SAMPLE_WIDTHS_BITS);
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_STACK], 5);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_STACK), 17);  /* 69995 */
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_TID], 4200);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_TID), 7);     /* 100 */
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_STATE), 2);   /* 3 - 1 */
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_PEER), 7);    /* 77 */
        CHECK_INT_EQ(b.base[SAMPLE_FIELD_CGROUP], 9001);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_CGROUP), 0);  /* one cgroup: no bits */
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_VALUE), 64);
        CHECK_INT_EQ(sample_block_entry_bits(b.widths), 17 + 7 + 2 + 7 + 0 + 64);
        /* 4 entries of 97 bits: 388 bits, 49 bytes; the values start at
         * bit 33 of an entry, so they straddle nine bytes */
        CHECK_INT_EQ(b.size, 49);

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
        /* 18 bits of stack, 6 of tid, 3 of state, 2 of peer, no cgroup bits, 40-bit values */
        CHECK_INT_EQ(sample_block_entry_bits(b.widths), 18 + 6 + 3 + 2 + 0 + 40);
        CHECK_INT_EQ(b.size, (N * 69 + 7) / 8);
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
        b.widths = 1u << 28;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* an eighth field */

        /* widths in bits: 2 entries of 9 bits take 3 bytes */
        b.widths = SAMPLE_WIDTHS_BITS | 9;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG);
        b.size = 3;
        CHECK_INT_EQ(sample_block_check(&b), 0);
        CHECK_INT_EQ(b.entry_bits, 9);
        b.widths = SAMPLE_WIDTHS_BITS | 65;
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* a field of 65 bits */
        b.widths = SAMPLE_WIDTHS_BITS | 9 | (UINT64_C(1) << 50);
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* bits past the flag */
        b.widths = SAMPLE_WIDTHS_BITS | (UINT64_C(9) << (7 * SAMPLE_FIELD_SPAN));
        CHECK_INT_EQ(sample_block_check(&b), -EBADMSG); /* a span offset of 9 bits */
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
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_SPAN), 5);    /* 29 */
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
        b.widths |= UINT64_C(8) << (7 * SAMPLE_FIELD_SPAN);
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
        sqlite3_stmt *st, *ins = NULL;
        size_t got = 0;

        CHECK_INT_EQ(sqlite3_open(":memory:", &d.handle), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_exec(d.handle,
                                  "CREATE TABLE sample_blocks (drain_id INTEGER, kind INTEGER, process_id INTEGER, "
                                  "n INTEGER, widths INTEGER, stack_base INTEGER, tid_base INTEGER, state_base INTEGER, "
                                  "peer_base INTEGER, cgroup_base INTEGER, value_base INTEGER, entries BLOB, "
                                  "PRIMARY KEY (drain_id, kind, process_id)) WITHOUT ROWID",
                                  NULL, NULL, NULL), SQLITE_OK);
        /* one statement for both: the second block, which has no blob,
         * must not find the first one's still bound */
        CHECK_INT_EQ(sample_blocks_insert(&d, &ins, 1, 0, 1, e, ELEMENTSOF(e), NULL, NULL), 0);
        CHECK_INT_EQ(sample_blocks_insert(&d, &ins, 1, 0, 2, &one, 1, NULL, NULL), 0);
        sqlite3_finalize(ins);
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

/* Two entries in schema 9's form, widths in whole bytes: stack 2 bytes,
 * tid 1, value 3, span offset 1; the rest their base. */
static const uint8_t byte_form_data[] = {
        0x34, 0x12, 0x07, 0x01, 0x00, 0x00, 0x1d,       /* stack +0x1234, tid +7, value +1, span 29 */
        0xff, 0xff, 0x00, 0xff, 0xff, 0xff, 0x00,       /* stack +0xffff, tid +0, value +0xffffff, span 0 */
};
#define BYTE_FORM_WIDTHS (2 | 1 << 4 | 3 << 20 | 1 << 24)

/* A block written before schema 10, its widths in whole bytes (4 bits
 * each), reads as it always did: the same layout, every width a multiple
 * of 8 bits. */
static void test_byte_widths_read_as_before(void) {
        struct sample_block b = {
                .widths = BYTE_FORM_WIDTHS, .n = 2, .data = (uint8_t *) byte_form_data, .size = sizeof(byte_form_data),
                .base = { [SAMPLE_FIELD_STACK] = 10, [SAMPLE_FIELD_TID] = 100, [SAMPLE_FIELD_STATE] = 2,
                          [SAMPLE_FIELD_CGROUP] = 1ULL << 40, [SAMPLE_FIELD_VALUE] = 5 },
        };
        struct sample_entry g;

        CHECK_INT_EQ(sample_block_check(&b), 0);
        CHECK_INT_EQ(b.entry_bits, 56);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_STACK), 16);
        CHECK_INT_EQ(width_of(&b, SAMPLE_FIELD_SPAN), 8);
        sample_block_get(&b, 0, &g);
        CHECK_INT_EQ(g.stack_id, 10 + 0x1234);
        CHECK_INT_EQ(g.tid, 107);
        CHECK_INT_EQ(g.state, 2);
        CHECK_INT_EQ(g.peer_tid, 0);
        CHECK(g.cgroup_id == 1ULL << 40);
        CHECK_INT_EQ(g.value, 6);
        CHECK_INT_EQ(g.span, 29);
        sample_block_get(&b, 1, &g);
        CHECK_INT_EQ(g.stack_id, 10 + 0xffff);
        CHECK_INT_EQ(g.tid, 100);
        CHECK_INT_EQ(g.value, 5 + 0xffffff);
        CHECK_INT_EQ(g.span, 0);
        CHECK_INT_EQ(sample_block_field(&b, 1, SAMPLE_FIELD_VALUE), 5 + 0xffffff);
}

static uint64_t xorshift(uint64_t *x) {
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        return *x;
}

static uint64_t fingerprint(const uint64_t v[9]) {
        uint64_t h = 1469598103934665603ULL;

        for (int c = 0; c < 9; c++)
                for (int k = 0; k < 8; k++)
                        h = (h ^ ((v[c] >> (8 * k)) & 0xff)) * 1099511628211ULL;
        return h;
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The samples view (schema/0010) decodes what profd's C reads, in both
 * forms of widths: blocks of random entries whose fields take every width
 * from 0 to 64 bits, at every bit position, with bases near 2^63. */
static void test_view_decodes_both_forms(void) {
        enum { BLOCKS = 40, MAX_N = 60 };
        struct db d = { .path = ":memory:", .who = "" };
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        struct sample_entry e[MAX_N];
        static uint64_t want[BLOCKS * MAX_N + 2], got[BLOCKS * MAX_N + 2];
        sqlite3_stmt *st, *blocks, *ins = NULL;
        size_t rows = 0, entries = 0;

        CHECK_INT_EQ(sqlite3_open(":memory:", &d.handle), SQLITE_OK);
        for (unsigned v = 0; v < schema_version; v++)
                CHECK_INT_EQ(sqlite3_exec(d.handle, schema_migrations[v], NULL, NULL, NULL), SQLITE_OK);
        for (int k = 0; k < BLOCKS; k++) {
                size_t n = 1 + xorshift(&x) % MAX_N;

                for (size_t i = 0; i < n; i++) {
                        /* a random width per field and block, from 0 to 64 bits */
                        uint64_t r[_SAMPLE_FIELD_MAX];

                        for (int f = 0; f < _SAMPLE_FIELD_MAX; f++) {
                                unsigned w = (unsigned) ((k * 7 + f * 13) % 65);
                                r[f] = w == 64 ? xorshift(&x) : xorshift(&x) & ((UINT64_C(1) << w) - 1);
                        }
                        e[i] = (struct sample_entry) {
                                .stack_id = (int64_t) (r[0] >> 1), .tid = (uint32_t) r[1], .state = (uint8_t) r[2],
                                .peer_tid = (uint32_t) r[3], .cgroup_id = r[4], .value = r[5],
                                .span = (uint8_t) (r[6] % SAMPLE_SPAN_MAX),
                        };
                }
                CHECK_INT_EQ(sample_blocks_insert(&d, &ins, 1000, k % 3, k + 1, e, n, NULL, NULL), 0);
        }
        sqlite3_finalize(ins);
        /* and one block in schema 9's form */
        CHECK_INT_EQ(sqlite3_prepare_v2(d.handle,
                                        "INSERT INTO sample_blocks (drain_id, kind, process_id, n, widths, stack_base, tid_base, "
                                        "state_base, peer_base, cgroup_base, value_base, entries) "
                                        "VALUES (1000, 1, 999, 2, ?1, 10, 100, 2, 0, ?2, 5, ?3)", -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_int64(st, 1, BYTE_FORM_WIDTHS);
        sqlite3_bind_int64(st, 2, 1LL << 40);
        sqlite3_bind_blob(st, 3, byte_form_data, sizeof(byte_form_data), SQLITE_STATIC);
        CHECK_INT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);

        /* every entry C reads is one row of the view, and nothing else:
         * both sides' rows as fingerprints, sorted */
        CHECK_INT_EQ(sqlite3_prepare_v2(d.handle, "SELECT drain_id, kind, process_id, " SAMPLE_BLOCK_COLUMNS
                                        " FROM sample_blocks b", -1, &blocks, NULL), SQLITE_OK);
        while (sqlite3_step(blocks) == SQLITE_ROW) {
                struct sample_block b;

                CHECK_INT_EQ(sample_block_from_row(blocks, 3, &b), 0);
                for (size_t i = 0; i < b.n && entries < ELEMENTSOF(want); i++) {
                        struct sample_entry g;

                        sample_block_get(&b, i, &g);
                        want[entries++] = fingerprint((uint64_t[]) {
                                (uint64_t) sqlite3_column_int64(blocks, 0) + g.span,
                                (uint64_t) sqlite3_column_int64(blocks, 1), (uint64_t) sqlite3_column_int64(blocks, 2),
                                (uint64_t) g.stack_id, g.tid, g.state, g.peer_tid, g.cgroup_id, g.value });
                }
        }
        sqlite3_finalize(blocks);
        CHECK_INT_EQ(sqlite3_prepare_v2(d.handle, "SELECT drain_id, kind, process_id, stack_id, tid, state, peer_tid, "
                                        "cgroup_id, value FROM samples", -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW && rows < ELEMENTSOF(got)) {
                uint64_t v[9];

                for (int c = 0; c < 9; c++) {
                        CHECK_INT_EQ(sqlite3_column_type(st, c), SQLITE_INTEGER);
                        v[c] = (uint64_t) sqlite3_column_int64(st, c);
                }
                got[rows++] = fingerprint(v);
        }
        sqlite3_finalize(st);
        CHECK_INT_EQ(rows, entries);
        CHECK(entries > BLOCKS * 10);
        qsort(want, entries, sizeof(want[0]), u64_cmp);
        qsort(got, rows, sizeof(got[0]), u64_cmp);
        CHECK(memcmp(want, got, entries * sizeof(want[0])) == 0);
        sqlite3_close(d.handle);
}

int main(void) {
        test_combine_sums_equal_keys_only();
        test_stored_block_reads_back_through_both_column_sets();
        test_round_trip_sorted_and_sized_by_range();
        test_many_random_entries_come_back();
        test_empty_block_and_bad_sizes();
        test_span_offsets();
        test_byte_widths_read_as_before();
        test_view_decodes_both_forms();
        TESTS_DONE();
}
