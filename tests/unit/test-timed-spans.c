/* The off-CPU blocks of a timeline answer: the set keeps blocks up to its
 * cap and counts the rest (blocks and ns); "spans" lines written by the
 * encoder read back through the decoder to the same spans; the decoder
 * refuses every malformed line with a reason. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "timed-spans.h"
#include "tests.h"

#define MS NSEC_PER_MSEC

static void test_set_sorts_and_sums(void) {
        struct timed_span_set s;

        CHECK_INT_EQ(timed_span_set_init(&s, 0), 0);
        CHECK_INT_EQ(s.max_spans, TIMED_MAX_SPANS);
        /* out of order, as two drains' rows may be; a start's sub-µs part
         * is dropped, its ns kept whole */
        CHECK_INT_EQ(timed_span_set_add(&s, 2000 * MS + 1500, 200 * MS, 77), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 1000 * MS, 5 * MS + 3, 42), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 1000 * MS, 1 * MS, 77), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 1500 * MS, 0, 42), 0); /* nothing: ignored */
        timed_span_set_finish(&s);
        CHECK_INT_EQ(s.n_spans, 3);
        CHECK_INT_EQ(s.ns, 206 * MS + 3);
        CHECK_INT_EQ(s.omitted, 0);
        CHECK_INT_EQ(s.stacks.n_stacks, 2);
        /* indexes in order of first sight: 77 then 42 */
        CHECK_INT_EQ(s.stacks.stack_ids[0], 77);
        CHECK_INT_EQ(s.stacks.stack_values[0], 201 * MS);
        CHECK_INT_EQ(s.stacks.stack_values[1], 5 * MS + 3);
        /* (1000 ms, stack 0) (1000 ms, stack 1) (2000.001 ms, stack 0) */
        CHECK_INT_EQ(s.spans[0].start_us, 1000000);
        CHECK_INT_EQ(s.spans[0].stack, 0);
        CHECK_INT_EQ(s.spans[1].stack, 1);
        CHECK_INT_EQ(s.spans[1].ns, 5 * MS + 3);
        CHECK_INT_EQ(s.spans[2].start_us, 2000001);
        timed_span_set_done(&s);
}

static void test_set_counts_what_the_cap_leaves_out(void) {
        struct timed_span_set s;

        CHECK_INT_EQ(timed_span_set_init(&s, 2), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 10 * MS, 1 * MS, 1), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 20 * MS, 2 * MS, 1), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 95 * MS, 3 * MS, 2), 0);
        CHECK_INT_EQ(timed_span_set_add(&s, 91 * MS, 4 * MS, 1), 0);
        timed_span_set_finish(&s);
        CHECK_INT_EQ(s.n_spans, 2);
        CHECK_INT_EQ(s.ns, 3 * MS);
        CHECK_INT_EQ(s.omitted, 2);
        CHECK_INT_EQ(s.omitted_ns, 7 * MS);
        CHECK_INT_EQ(s.omitted_from_ns, 91 * MS);
        /* a stack only omitted blocks had is not in the answer */
        CHECK_INT_EQ(s.stacks.n_stacks, 1);
        timed_span_set_done(&s);
}

struct collected {
        struct timed_span e[2 * TIMED_LINE_ENTRIES];
        size_t n;
};

static int collect(const struct timed_span *e, void *userdata) {
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
        r = timed_spans_line_parse(line, n_stacks, collect, c, err);
        json_decref(line);
        return r;
}

static void test_line_round_trip(void) {
        static struct timed_span e[TIMED_LINE_ENTRIES];
        struct stackline_buf b = {};
        static struct collected c;
        const char *err;

        memset(e, 0, sizeof(e)); /* padding too: compared with memcmp */
        for (size_t i = 0; i < TIMED_LINE_ENTRIES; i++) {
                e[i].start_us = 1796205600000000ULL + i * 1500;
                e[i].ns = 1000000 + i * 7919;
                e[i].stack = (uint32_t) (i % 5);
        }
        CHECK_INT_EQ(timed_spans_line_append(&b, e, TIMED_LINE_ENTRIES), 0);
        CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
        CHECK(b.len < 20 * TIMED_LINE_ENTRIES); /* compact: ~20 bytes a block at most */
        c.n = 0;
        memset(c.e, 0, sizeof(c.e));
        CHECK_INT_EQ(parse_text(b.data, b.len, 5, &c, &err), 0);
        CHECK_INT_EQ(c.n, TIMED_LINE_ENTRIES);
        CHECK(memcmp(c.e, e, sizeof(e)) == 0);

        /* the exact text of a small line */
        b.len = 0;
        CHECK_INT_EQ(timed_spans_line_append(&b, (struct timed_span[]) { { 1000, 200000000, 2 }, { 1003, 7, 0 } }, 2),
                     0);
        static const char small[] =
                "{\"type\":\"spans\",\"t0_us\":1000,\"dt_us\":[0,3],\"ns\":[200000000,7],\"stack\":[2,0]}\n";
        CHECK(b.len == strlen(small) && memcmp(b.data, small, b.len) == 0);

        /* refused: none, too many, out of order, 0 ns; b keeps what it had */
        size_t len = b.len;
        CHECK_INT_EQ(timed_spans_line_append(&b, e, 0), -EINVAL);
        CHECK_INT_EQ(timed_spans_line_append(&b, e, TIMED_LINE_ENTRIES + 1), -EINVAL);
        CHECK_INT_EQ(timed_spans_line_append(&b, (struct timed_span[]) { { 5, 1, 0 }, { 4, 1, 0 } }, 2), -EINVAL);
        CHECK_INT_EQ(timed_spans_line_append(&b, (struct timed_span[]) { { 5, 0, 0 } }, 1), -EINVAL);
        CHECK_INT_EQ(b.len, len);
        stackline_buf_done(&b);
}

static void test_parse_refuses_malformed_lines(void) {
        static const struct {
                const char *line, *message;
        } bad[] = {
                { "{\"type\":\"spans\",\"dt_us\":[0],\"ns\":[1],\"stack\":[0]}", "\"t0_us\" is not" },
                { "{\"type\":\"spans\",\"t0_us\":-1,\"dt_us\":[0],\"ns\":[1],\"stack\":[0]}", "\"t0_us\" is not" },
                { "{\"type\":\"spans\",\"t0_us\":1.5,\"dt_us\":[0],\"ns\":[1],\"stack\":[0]}", "\"t0_us\" is not" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0,1],\"ns\":[1],\"stack\":[0]}", "not arrays of one length" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[],\"ns\":[],\"stack\":[]}", "not arrays of one length" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0],\"ns\":[1]}", "not arrays of one length" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":0,\"ns\":[1],\"stack\":[0]}", "not arrays of one length" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0],\"ns\":[1],\"stack\":[\"0\"]}", "three unsigned integers" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0],\"ns\":[-1],\"stack\":[0]}", "three unsigned integers" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[-1],\"ns\":[1],\"stack\":[0]}", "three unsigned integers" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0],\"ns\":[1],\"stack\":[3]}", "names a stack no" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[0],\"ns\":[0],\"stack\":[0]}", "block of 0 ns" },
                { "{\"type\":\"spans\",\"t0_us\":5,\"dt_us\":[2,1],\"ns\":[1,1],\"stack\":[0,0]}", "go back" },
                { "{\"type\":\"spans\",\"t0_us\":18446744073709551,\"dt_us\":[1],\"ns\":[1],\"stack\":[0]}", "overflows" },
                { "{\"type\":\"spans\",\"t0_us\":18446744073709551,\"dt_us\":[0],\"ns\":[9000000000],\"stack\":[0]}",
                  "overflows" },
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
        test_set_sorts_and_sums();
        test_set_counts_what_the_cap_leaves_out();
        test_line_round_trip();
        test_parse_refuses_malformed_lines();
        TESTS_DONE();
}
