/* The samples of a timeline answer: the set keeps samples by (millisecond,
 * stack) up to its cap and counts the rest; "samples" lines written by the
 * encoder read back through the decoder to the same entries; the decoder
 * refuses every malformed line with a reason. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "timed-samples.h"
#include "tests.h"

#define MS NSEC_PER_MSEC

static void test_set_groups_by_millisecond_and_stack(void) {
        struct timed_set s;

        CHECK_INT_EQ(timed_set_init(&s, 0), 0);
        CHECK_INT_EQ(s.max_samples, TIMED_MAX_SAMPLES);
        /* out of order, as two drains' blocks may be; 1000.4 and 1000.9
         * ms are the same millisecond */
        CHECK_INT_EQ(timed_set_add(&s, 2000 * MS + 5, 77, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 400000, 42, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 900000, 42, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 100000, 77, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1001 * MS, 42, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS, 42, 0), 0);
        CHECK_INT_EQ(timed_set_finish(&s), 0);
        CHECK_INT_EQ(s.samples, 6);
        CHECK_INT_EQ(s.omitted, 0);
        CHECK_INT_EQ(s.n_stacks, 2);
        /* indexes in the order of the stacks' ids, a query's rows' order:
         * 42 then 77 */
        CHECK_INT_EQ(s.stack_ids[0], 42);
        CHECK_INT_EQ(s.stack_ids[1], 77);
        CHECK_INT_EQ(s.stack_values[0], 4);
        CHECK_INT_EQ(s.stack_values[1], 2);
        CHECK_INT_EQ(s.n_entries, 4);
        /* (1000, 0)x3 (1000, 1) (1001, 0) (2000, 1) */
        CHECK_INT_EQ(s.entries[0].t_ms, 1000);
        CHECK_INT_EQ(s.entries[0].stack, 0);
        CHECK_INT_EQ(s.entries[0].n, 3);
        CHECK_INT_EQ(s.entries[1].t_ms, 1000);
        CHECK_INT_EQ(s.entries[1].stack, 1);
        CHECK_INT_EQ(s.entries[1].n, 1);
        CHECK_INT_EQ(s.entries[2].t_ms, 1001);
        CHECK_INT_EQ(s.entries[3].t_ms, 2000);
        timed_set_done(&s);
}

static void test_set_counts_what_the_cap_leaves_out(void) {
        struct timed_set s;

        CHECK_INT_EQ(timed_set_init(&s, 3), 0);
        for (uint64_t i = 0; i < 10; i++)
                CHECK_INT_EQ(timed_set_add(&s, (100 - i) * MS, 1, 0), 0);
        CHECK_INT_EQ(timed_set_finish(&s), 0);
        CHECK_INT_EQ(s.samples, 3);
        CHECK_INT_EQ(s.omitted, 7);
        /* the earliest left out: the last added, 91 ms */
        CHECK_INT_EQ(s.omitted_from_ns, 91 * MS);
        CHECK_INT_EQ(s.stack_values[0], 3);
        timed_set_done(&s);
}

struct collected {
        struct timed_entry e[2 * TIMED_LINE_ENTRIES];
        size_t n;
};

/* field by field: the struct has padding */
static bool entries_equal(const struct timed_entry *a, const struct timed_entry *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (a[i].t_ms != b[i].t_ms || a[i].stack != b[i].stack || a[i].n != b[i].n || a[i].hz != b[i].hz)
                        return false;
        return true;
}

static int collect(const struct timed_entry *e, void *userdata) {
        struct collected *c = userdata;

        c->e[c->n++] = *e;
        return 0;
}

static int parse_text(const char *text, size_t len, uint64_t n_stacks, struct collected *c, const char **err) {
        json_error_t jerr;
        json_t *line = json_loadb(text, len, 0, &jerr);
        int r;

        if (!line)
                return -EBADMSG;
        r = timed_line_parse(line, n_stacks, collect, c, err);
        json_decref(line);
        return r;
}

static void test_line_round_trip(void) {
        static struct timed_entry e[TIMED_LINE_ENTRIES];
        struct stackline_buf b = {};
        static struct collected c;
        const char *err;

        for (size_t i = 0; i < TIMED_LINE_ENTRIES; i++)
                e[i] = (struct timed_entry) { .t_ms = 1796205600000ULL + i / 3, .stack = (uint32_t) (i % 5),
                                              .n = (uint32_t) (i % 7 + 1) };
        CHECK_INT_EQ(timed_line_append(&b, e, TIMED_LINE_ENTRIES), 0);
        CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
        CHECK(b.len < 16 * TIMED_LINE_ENTRIES); /* compact: ~15 bytes an entry at most */
        c.n = 0;
        CHECK_INT_EQ(parse_text(b.data, b.len, 5, &c, &err), 0);
        CHECK_INT_EQ(c.n, TIMED_LINE_ENTRIES);
        CHECK(entries_equal(c.e, e, TIMED_LINE_ENTRIES));

        /* the exact text of a small line */
        b.len = 0;
        CHECK_INT_EQ(timed_line_append(&b, (struct timed_entry[]) { { 1000, 2, 5, 0 }, { 1003, 0, 1, 0 } }, 2), 0);
        CHECK(b.len == strlen("{\"type\":\"samples\",\"t0_ms\":1000,\"dt_ms\":[0,3],\"stack\":[2,0],\"n\":[5,1]}\n") &&
              memcmp(b.data, "{\"type\":\"samples\",\"t0_ms\":1000,\"dt_ms\":[0,3],\"stack\":[2,0],\"n\":[5,1]}\n", b.len) == 0);

        /* refused: none, too many, out of order; b keeps what it had */
        size_t len = b.len;
        CHECK_INT_EQ(timed_line_append(&b, e, 0), -EINVAL);
        CHECK_INT_EQ(timed_line_append(&b, e, TIMED_LINE_ENTRIES + 1), -EINVAL);
        CHECK_INT_EQ(timed_line_append(&b, (struct timed_entry[]) { { 5, 0, 1, 0 }, { 4, 0, 1, 0 } }, 2), -EINVAL);
        CHECK_INT_EQ(b.len, len);
        stackline_buf_done(&b);
}

/* A capture's raised rate (issue 44): its samples are entries of their
 * own, and only a line holding one carries the rates, under a type an
 * older profctl refuses. */
static void test_rated_entries_keep_their_rate(void) {
        struct stackline_buf b = {};
        static struct collected c;
        struct timed_set s;
        const char *err;

        CHECK_INT_EQ(timed_set_init(&s, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS, 5, 0), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 1, 5, 499), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 2, 5, 499), 0);
        CHECK_INT_EQ(timed_set_add(&s, 1000 * MS + 3, 5, 0), 0);
        CHECK_INT_EQ(timed_set_finish(&s), 0);
        CHECK_INT_EQ(s.n_entries, 2);
        CHECK_INT_EQ(s.entries[0].hz, 0);
        CHECK_INT_EQ(s.entries[0].n, 2);
        CHECK_INT_EQ(s.entries[1].hz, 499);
        CHECK_INT_EQ(s.entries[1].n, 2);
        CHECK_INT_EQ(s.stack_values[0], 4); /* as taken */

        CHECK_INT_EQ(timed_line_append(&b, s.entries, 1), 0);
        /* b is not NUL-terminated */
        CHECK(memmem(b.data, b.len, "\"type\":\"samples\"", strlen("\"type\":\"samples\"")) &&
              !memmem(b.data, b.len, "\"hz\"", 4));
        b.len = 0;
        CHECK_INT_EQ(timed_line_append(&b, s.entries, 2), 0);
        CHECK(b.len == strlen("{\"type\":\"rated_samples\",\"t0_ms\":1000,\"dt_ms\":[0,0],\"stack\":[0,0],\"n\":[2,2],"
                              "\"hz\":[0,499]}\n") &&
              memcmp(b.data, "{\"type\":\"rated_samples\",\"t0_ms\":1000,\"dt_ms\":[0,0],\"stack\":[0,0],\"n\":[2,2],"
                             "\"hz\":[0,499]}\n", b.len) == 0);
        c.n = 0;
        CHECK_INT_EQ(parse_text(b.data, b.len, 1, &c, &err), 0);
        CHECK_INT_EQ(c.n, 2);
        CHECK(entries_equal(c.e, s.entries, 2));
        /* a rated line without its rates is refused */
        CHECK_INT_EQ(parse_text("{\"type\":\"rated_samples\",\"t0_ms\":5,\"dt_ms\":[0],\"stack\":[0],\"n\":[1]}", 66, 1,
                                &c, &err), -EBADMSG);
        CHECK(err && strstr(err, "\"hz\""));
        stackline_buf_done(&b);
        timed_set_done(&s);
}

static void test_parse_refuses_malformed_lines(void) {
        static const struct {
                const char *line, *message;
        } bad[] = {
                { "{\"type\":\"samples\",\"dt_ms\":[0],\"stack\":[0],\"n\":[1]}", "\"t0_ms\" is not" },
                { "{\"type\":\"samples\",\"t0_ms\":-1,\"dt_ms\":[0],\"stack\":[0],\"n\":[1]}", "\"t0_ms\" is not" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[0,1],\"stack\":[0],\"n\":[1]}", "not arrays of one length" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[],\"stack\":[],\"n\":[]}", "not arrays of one length" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":0,\"stack\":[0],\"n\":[1]}", "not arrays of one length" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[0],\"stack\":[\"0\"],\"n\":[1]}", "not unsigned integers" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[-1],\"stack\":[0],\"n\":[1]}", "not unsigned integers" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[0],\"stack\":[3],\"n\":[1]}", "names a stack no" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[0],\"stack\":[0],\"n\":[0]}", "counts 0 samples" },
                { "{\"type\":\"samples\",\"t0_ms\":5,\"dt_ms\":[2,1],\"stack\":[0,0],\"n\":[1,1]}", "go back" },
                { "{\"type\":\"samples\",\"t0_ms\":18446744073709,\"dt_ms\":[9000000],\"stack\":[0],\"n\":[1]}", "overflow" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                static struct collected c;
                const char *err = NULL;

                c.n = 0;
                CHECK_INT_EQ(parse_text(bad[i].line, strlen(bad[i].line), 3, &c, &err), -EBADMSG);
                if (!err || !strstr(err, bad[i].message)) {
                        fprintf(stderr, "line %s: error \"%s\" lacks \"%s\"\n", bad[i].line, err ? err : "(none)",
                                bad[i].message);
                        tests_failed++;
                }
        }
}

int main(void) {
        test_set_groups_by_millisecond_and_stack();
        test_set_counts_what_the_cap_leaves_out();
        test_line_round_trip();
        test_rated_entries_keep_their_rate();
        test_parse_refuses_malformed_lines();
        TESTS_DONE();
}
