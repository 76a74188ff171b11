/* Captures as rows of profd.captures (daemon/export/chcapture.c): the
 * columns in the INSERT's order, escaped as TabSeparated wants, "no value"
 * as -1, the day and second of the trigger; which (id, state) pairs count
 * as stored, from ClickHouse's answer or from inserts, and a malformed
 * answer that adds nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chcapture.h"
#include "tests.h"

#define S 1000000000ULL
/* 2025-11-24 16:00:00 UTC */
#define DAY1 (1764000000ULL * S)

static void test_row_in_column_order(void) {
        struct store_capture c = {
                .id = 7, .cause = "cpu:pid=42>80", .origin = "request", .uid = 1000, .has_value = true,
                .value_centi = 9950, .trigger_ns = DAY1 + 5 * S + 123, .from_ns = DAY1 - 295 * S + 123,
                .to_ns = DAY1 + 35 * S + 123, .pinned_bytes = 4096, .state = STORE_CAPTURE_ACTIVE,
        };
        struct chbuf b = {};

        CHECK(strstr(chcapture_insert, "(host, id, state, day, time, trigger_ns, from_ns, to_ns, cause, origin, uid, "
                                       "value_centi, pinned_bytes)") != NULL);
        CHECK_INT_EQ(chcapture_row(&b, "web-1", &c), 0);
        CHECK_STR_EQ(b.data, "web-1\t7\t0\t2025-11-24\t1764000005\t1764000005000000123\t1763999705000000123\t"
                             "1764000035000000123\tcpu:pid=42>80\trequest\t1000\t9950\t4096\n");
        /* ended, no value (manual): -1; a cause with a tab is escaped */
        b.len = 0;
        c.state = STORE_CAPTURE_UNPINNED;
        c.has_value = false;
        c.cause = "cpu:cgroup=/a\tb>5";
        c.origin = "setting";
        c.uid = 0;
        CHECK_INT_EQ(chcapture_row(&b, "web-1", &c), 0);
        CHECK_STR_EQ(b.data, "web-1\t7\t2\t2025-11-24\t1764000005\t1764000005000000123\t1763999705000000123\t"
                             "1764000035000000123\tcpu:cgroup=/a\\tb>5\tsetting\t0\t-1\t4096\n");
        /* rows append */
        CHECK_INT_EQ(chcapture_row(&b, "web-1", &c), 0);
        CHECK_INT_EQ(strlen(b.data), 2 * strlen(strchr(b.data, '\n') + 1));
        /* what cannot be a row */
        c.state = _STORE_CAPTURE_STATE_MAX;
        CHECK_INT_EQ(chcapture_row(&b, "web-1", &c), -EINVAL);
        c.state = STORE_CAPTURE_PINNED;
        c.id = -1;
        CHECK_INT_EQ(chcapture_row(&b, "web-1", &c), -EINVAL);
        free(b.data);
}

static void test_sent_set(void) {
        chcapture_sent *s;

        CHECK_INT_EQ(chcapture_sent_new(&s), 0);
        CHECK(!chcapture_sent_has(s, 1, STORE_CAPTURE_ACTIVE));
        /* out of order, many: kept sorted */
        for (int64_t id = 100; id > 0; id -= 3)
                CHECK_INT_EQ(chcapture_sent_add(s, id, STORE_CAPTURE_ACTIVE), 0);
        CHECK_INT_EQ(chcapture_sent_add(s, 4, STORE_CAPTURE_UNPINNED), 0);
        for (int64_t id = 0; id <= 101; id++) {
                bool in = id >= 1 && id <= 100 && (100 - id) % 3 == 0;

                CHECK_INT_EQ(chcapture_sent_has(s, id, STORE_CAPTURE_ACTIVE), in);
                CHECK(!chcapture_sent_has(s, id, STORE_CAPTURE_PINNED));
                CHECK_INT_EQ(chcapture_sent_has(s, id, STORE_CAPTURE_UNPINNED), id == 4);
        }
        /* each state on its own: sending "pinned" does not make "active" sent */
        CHECK_INT_EQ(chcapture_sent_add(s, 1000, STORE_CAPTURE_PINNED), 0);
        CHECK(!chcapture_sent_has(s, 1000, STORE_CAPTURE_ACTIVE));
        CHECK(chcapture_sent_has(s, 1000, STORE_CAPTURE_PINNED));
        CHECK_INT_EQ(chcapture_sent_add(s, 1000, _STORE_CAPTURE_STATE_MAX), -EINVAL);
        CHECK(!chcapture_sent_has(s, 1000, _STORE_CAPTURE_STATE_MAX));
        chcapture_sent_free(s);
}

static void test_lookup(void) {
        int64_t ids[] = { 3, 12, 40 };
        chcapture_sent *s;
        char *sql = NULL, answer[64];
        const char *bad;

        CHECK_INT_EQ(chcapture_lookup_sql("web-1", ids, 3, &sql), 0);
        CHECK_STR_EQ(sql, "SELECT DISTINCT id, state FROM profd.captures WHERE host = 'web-1' AND id IN (3,12,40)");
        free(sql);
        CHECK_INT_EQ(chcapture_lookup_sql("web-1", ids, 0, &sql), 0);
        CHECK_STR_EQ(sql, "SELECT DISTINCT id, state FROM profd.captures WHERE host = 'web-1' AND id IN (-1)");
        free(sql);

        CHECK_INT_EQ(chcapture_sent_new(&s), 0);
        /* no rows: no body at all */
        CHECK_INT_EQ(chcapture_lookup_parse(s, NULL, &bad), 0);
        strcpy(answer, "12\t0\n12\t1\n40\t2\n");
        CHECK_INT_EQ(chcapture_lookup_parse(s, answer, &bad), 0);
        CHECK(chcapture_sent_has(s, 12, STORE_CAPTURE_ACTIVE));
        CHECK(chcapture_sent_has(s, 12, STORE_CAPTURE_PINNED));
        CHECK(!chcapture_sent_has(s, 12, STORE_CAPTURE_UNPINNED));
        CHECK(chcapture_sent_has(s, 40, STORE_CAPTURE_UNPINNED));
        CHECK(!chcapture_sent_has(s, 3, STORE_CAPTURE_ACTIVE));
        /* a bad line anywhere: an error naming it, and nothing added */
        strcpy(answer, "3\t0\n3\t9\n");
        CHECK_INT_EQ(chcapture_lookup_parse(s, answer, &bad), -EBADMSG);
        CHECK_STR_EQ(bad, "3\t9");
        CHECK(!chcapture_sent_has(s, 3, STORE_CAPTURE_ACTIVE));
        strcpy(answer, "Code: 60, e.displayText() = DB::Exception\n");
        CHECK_INT_EQ(chcapture_lookup_parse(s, answer, &bad), -EBADMSG);
        strcpy(answer, "3\t0x\n");
        CHECK_INT_EQ(chcapture_lookup_parse(s, answer, &bad), -EBADMSG);
        strcpy(answer, "-3\t0\n");
        CHECK_INT_EQ(chcapture_lookup_parse(s, answer, &bad), -EBADMSG);
        CHECK(!chcapture_sent_has(s, 3, STORE_CAPTURE_ACTIVE));
        chcapture_sent_free(s);
}

int main(void) {
        test_row_in_column_order();
        test_sent_set();
        test_lookup();
        TESTS_DONE();
}
