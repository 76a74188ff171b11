/* Fleet SQL: string literals that cannot break out of their quotes, globs
 * that match in ClickHouse what they match in profd's store, every filter
 * of a request in the WHERE clause, and TabSeparated answers read back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet-sql.h"
#include "tests.h"

static char *quote(const char *s) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        CHECK_INT_EQ(fleet_sql_quote(f, s), 0);
        fclose(f);
        return text;
}

static void test_quote_escapes_quotes_backslashes_and_control_bytes(void) {
        char *q;

        CHECK_STR_EQ(q = quote("nginx"), "'nginx'");
        free(q);
        CHECK_STR_EQ(q = quote("it's"), "'it\\'s'");
        free(q);
        /* a backslash before the quote must not turn the escape off */
        CHECK_STR_EQ(q = quote("a\\' OR 1=1 --"), "'a\\\\\\' OR 1=1 --'");
        free(q);
        CHECK_STR_EQ(q = quote("tab\there\nnl\x7f"), "'tab\\x09here\\x0Anl\\x7F'");
        free(q);
        /* UTF-8 goes through as it is */
        CHECK_STR_EQ(q = quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
        free(q);
        CHECK_STR_EQ(q = quote(""), "''");
        free(q);
}

static void check_regex(const char *glob, const char *expected) {
        char *re = fleet_glob_to_regex(glob);

        CHECK_STR_EQ(re, expected);
        free(re);
}

static void test_globs_become_anchored_regexes(void) {
        check_regex("nginx", "^(?s)nginx$");
        check_regex("ng*", "^(?s)ng.*$");
        check_regex("a?c", "^(?s)a.c$");
        /* regex characters in a glob stand for themselves */
        check_regex("/usr/bin/python3.11*", "^(?s)/usr/bin/python3\\.11.*$");
        check_regex("a+(b)|c{1}$^\\", "^(?s)a\\+\\(b\\)\\|c\\{1\\}\\$\\^\\\\$");
        /* sets, negated sets, ranges and a ']' that is a member */
        check_regex("[abc]x", "^(?s)[abc]x$");
        check_regex("[^0-9]*", "^(?s)[^0-9].*$");
        check_regex("[]a]", "^(?s)[\\]a]$");
        check_regex("[a-]", "^(?s)[a\\-]$");
        check_regex("[\\[]", "^(?s)[\\\\\\[]$");
        /* unterminated: a literal '[' */
        check_regex("[ab", "^(?s)\\[ab$");
}

static char *sql(int (*fn)(FILE *, const struct query_request *, const struct fleet_scope *),
                 const struct query_request *q, const struct fleet_scope *s) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        CHECK_INT_EQ(fn(f, q, s), 0);
        fclose(f);
        return text;
}

static void test_where_has_every_filter(void) {
        struct query_request q = {
                .kind = 1,
                .pid = 42,
                .tid = 43,
                .comm = (char *) "ng*",
                .exe = (char *) "/usr/sbin/nginx",
                .have_uid = true,
                .uid = 33,
                .cgroup = (char *) "/system.slice/nginx.service",
                .unit = (char *) "nginx.service",
                .container = (char *) "abcd",
                .state_mask = (1u << 1) | (1u << 2),
        };
        struct fleet_scope s = { .host = "web-*", .from_ns = 1000000000000, .to_ns = 1000600000000 };
        char *w = sql(fleet_sql_where, &q, &s);

        /* the drains that overlap the window, read first (PREWHERE) */
        CHECK(strstr(w, " PREWHERE drain_end >= 1000000000000 AND drain_start <= 1000600000000 WHERE kind = 1 "));
        /* the drain's end may lie a day after the window's */
        CHECK(strstr(w, " AND time >= toDateTime(1000) AND time <= toDateTime(87400)"));
        CHECK(strstr(w, " AND day >= '1970-01-01' AND day <= '1970-01-02'"));
        CHECK(strstr(w, " AND match(host, '^(?s)web-.*$')"));
        CHECK(strstr(w, " AND tid = 43"));
        CHECK(strstr(w, " AND state IN (1, 2)"));
        CHECK(strstr(w, " AND pid = 42"));
        CHECK(strstr(w, " AND match(comm, '^(?s)ng.*$')"));
        CHECK(strstr(w, " AND exe != '' AND exe = '/usr/sbin/nginx'"));
        CHECK(strstr(w, " AND uid = 33"));
        CHECK(strstr(w, " AND (cgroup = '/system.slice/nginx.service' OR "
                        "startsWith(cgroup, '/system.slice/nginx.service/'))"));
        CHECK(strstr(w, " AND unit != '' AND unit = 'nginx.service'"));
        CHECK(strstr(w, " AND startsWith(container, 'abcd')"));
        free(w);
}

static void test_where_without_filters_is_kind_and_window(void) {
        struct query_request q = { .kind = 0 };
        struct fleet_scope s = { .from_ns = 1795996800000000000, .to_ns = 1795997400000000000 };
        char *w = sql(fleet_sql_where, &q, &s);

        CHECK_STR_EQ(w, " PREWHERE drain_end >= 1795996800000000000 AND drain_start <= 1795997400000000000 "
                        "WHERE kind = 0 AND time >= toDateTime(1795996800) AND time <= toDateTime(1796083800) "
                        "AND day >= '2026-11-30' AND day <= '2026-12-01'");
        free(w);
}

static void test_quality_queries_are_per_host(void) {
        struct query_request q = { .kind = 1, .pid = 7 };
        struct fleet_scope s = { .host = "web-*", .from_ns = 1795996800000000000, .to_ns = 1795997400000000000 };
        char *t = sql(fleet_sql_stacks_by_host, &q, &s);

        /* the request's samples, summed per group, stack and host */
        CHECK(strstr(t, "SELECT stack, sum(value) AS v, '' AS grp, host FROM profd.samples PREWHERE ") == t);
        CHECK(strstr(t, " WHERE kind = 1 "));
        CHECK(strstr(t, " AND pid = 7"));
        free(t);
        /* drops: the window's drains and the hosts, no other filter */
        t = sql(fleet_sql_drops, &q, &s);
        CHECK_STR_EQ(t, "SELECT host, reason, sum(value) FROM profd.drops WHERE drain_end >= 1795996800000000000 "
                        "AND drain_start <= 1795997400000000000 AND time >= toDateTime(1795996800) AND time <= "
                        "toDateTime(1796083800) AND day >= '2026-11-30' AND day <= '2026-12-01' AND "
                        "match(host, '^(?s)web-.*$') GROUP BY host, reason ORDER BY host, reason "
                        "FORMAT TabSeparated");
        free(t);
        /* captures: their latest state, the window's overlap, the hosts, no other filter (pid = 7 above) */
        t = sql(fleet_sql_captures, &q, &s);
        CHECK_STR_EQ(t, "SELECT host, id, state, cause, trigger_ns, from_ns, to_ns FROM (SELECT host, id, state, "
                        "cause, trigger_ns, from_ns, to_ns FROM profd.captures WHERE from_ns <= 1795997400000000000 "
                        "AND to_ns >= 1795996800000000000 AND match(host, '^(?s)web-.*$') ORDER BY host, id, state "
                        "DESC LIMIT 1 BY host, id) ORDER BY trigger_ns, host, id FORMAT TabSeparated");
        free(t);
        /* a series' drains with their complete part, and their host */
        t = sql(fleet_sql_drains, &q, &s);
        CHECK(strstr(t, "SELECT drain_start, drain_end, sum(value), sumIf(value, stack GLOBAL IN (SELECT id FROM "
                        "profd.stacks WHERE user_end = 0 AND day >= '2026-11-30' AND day <= '2026-12-01')), host "
                        "FROM profd.samples PREWHERE ") == t);
        CHECK(strstr(t, " WHERE kind = 1 "));
        free(t);
        /* stacks with their end, frames with their reason */
        t = sql(fleet_sql_stack_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, frames, user_end FROM profd.stacks WHERE id IN ids") == t);
        CHECK(strstr(t, " LIMIT 1 BY id FORMAT RowBinary"));
        free(t);
        t = sql(fleet_sql_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, name, raw_name, module, build_id, file, line, address, has_address, kernel, "
                        "resolved, inlined, jit, unresolved FROM profd.frames WHERE id IN ids") == t);
        CHECK(strstr(t, " LIMIT 1 BY id FORMAT RowBinary"));
        free(t);
        /* a folded answer: names, with lines file:line, with raw names both names */
        q.folded = true;
        t = sql(fleet_sql_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, name, '', '', '', '', toUInt32(0), toUInt64(0), has_address") == t);
        free(t);
        q.lines = q.raw_names = true;
        t = sql(fleet_sql_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, name, raw_name, '', '', file, line, toUInt64(0), has_address") == t);
        free(t);
        /* the table's rows: names and modules, file:line by line */
        struct fleet_table table = { .by = FLEET_TABLE_BY_FUNCTION };
        q = (struct query_request) { .kind = 1 };
        s.table = &table;
        t = sql(fleet_sql_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, name, '', module, '', '', toUInt32(0), toUInt64(0), has_address") == t);
        free(t);
        table.by = FLEET_TABLE_BY_LINE;
        t = sql(fleet_sql_frames, &q, &s);
        CHECK(strstr(t, "SELECT id, name, '', module, '', file, line, toUInt64(0), has_address") == t);
        free(t);
}

static void test_cgroup_glob_matches_the_subtree(void) {
        struct query_request q = { .cgroup = (char *) "/system.slice/*.service" };
        struct fleet_scope s = {};
        char *w = sql(fleet_sql_where, &q, &s);

        CHECK(strstr(w, " AND (match(cgroup, '^(?s)/system\\\\.slice/.*\\\\.service$') OR "
                        "match(cgroup, '^(?s)/system\\\\.slice/.*\\\\.service/.*$'))"));
        free(w);
}

static void test_stacks_group_by_what_was_asked(void) {
        struct query_request q = {};
        struct fleet_scope s = { .group = FLEET_GROUP_HOST };
        char *t = sql(fleet_sql_stacks_by_host, &q, &s);

        CHECK(strstr(t, "SELECT stack, sum(value) AS v, host AS grp, host FROM profd.samples PREWHERE") == t);
        free(t);
        s.group = FLEET_GROUP_PROCESS;
        t = sql(fleet_sql_stacks_by_host, &q, &s);
        CHECK(strstr(t, "concat(comm, '-', toString(pid)) AS grp"));
        free(t);
        s.group = FLEET_GROUP_UNIT;
        t = sql(fleet_sql_stacks_by_host, &q, &s);
        CHECK(strstr(t, "if(unit = '', '-', unit) AS grp"));
        free(t);
}

static void test_tsv_rows_are_split_and_unescaped(void) {
        char text[] = "1\tmain\\tx\t\\N\n2\ta\\\\b\\'c\\nd\\x41\t\n";
        char *fields[4];
        size_t pos = 0;

        CHECK_INT_EQ(fleet_tsv_row(text, sizeof(text) - 1, &pos, fields, 4), 3);
        CHECK_STR_EQ(fields[0], "1");
        CHECK_STR_EQ(fields[1], "main\tx");
        CHECK_STR_EQ(fields[2], "");
        CHECK_INT_EQ(fleet_tsv_row(text, sizeof(text) - 1, &pos, fields, 4), 3);
        CHECK_STR_EQ(fields[1], "a\\b'c\ndA");
        CHECK_STR_EQ(fields[2], "");
        CHECK_INT_EQ(fleet_tsv_row(text, sizeof(text) - 1, &pos, fields, 4), 0);

        char two[] = "a\tb\tc\n";
        pos = 0;
        CHECK_INT_EQ(fleet_tsv_row(two, sizeof(two) - 1, &pos, fields, 2), -EBADMSG);
        char cut[] = "a\tb";
        pos = 0;
        CHECK_INT_EQ(fleet_tsv_row(cut, sizeof(cut) - 1, &pos, fields, 2), -EBADMSG);
}

static void test_tsv_numbers(void) {
        uint64_t v;

        CHECK_INT_EQ(fleet_tsv_u64("18446744073709551615", &v), 0);
        CHECK(v == UINT64_MAX);
        CHECK_INT_EQ(fleet_tsv_u64("18446744073709551616", &v), -EBADMSG);
        CHECK_INT_EQ(fleet_tsv_u64("-1", &v), -EBADMSG);
        CHECK_INT_EQ(fleet_tsv_u64("12x", &v), -EBADMSG);
        CHECK_INT_EQ(fleet_tsv_u64("", &v), -EBADMSG);

}

static void test_rowbinary_sums_and_frames_are_read_and_cut_rows_refused(void) {
        /* stack 9, value 2^40 + 1, group "", host "web-1"; stack 2^64-1,
         * value 3, group "a b", host "h" */
        const uint8_t sums[] = {
                9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 5, 'w', 'e', 'b', '-', '1',
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 3, 'a', ' ', 'b', 1, 'h',
        };
        /* frame 0x0203: name "main", raw_name "", module "/bin/a", build_id
         * "", file "a.c", line 70000, address 0x1130, has_address, not
         * kernel, resolved, not inlined, not jit, unresolved 2 */
        const uint8_t frame[] = {
                3, 2, 0, 0, 0, 0, 0, 0, 4, 'm', 'a', 'i', 'n', 0, 6, '/', 'b', 'i', 'n', '/', 'a', 0, 3, 'a', '.',
                'c', 0x70, 0x11, 0x01, 0, 0x30, 0x11, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2,
        };
        struct fleet_sum_row row;
        struct fleet_frame_row fr;
        size_t pos = 0;

        CHECK_INT_EQ(fleet_rowbinary_sum(sums, sizeof(sums), &pos, &row), 1);
        CHECK(row.stack_id == 9 && row.value == (1ULL << 40) + 1 && row.group.n == 0);
        CHECK(row.host.n == 5 && memcmp(row.host.s, "web-1", 5) == 0);
        CHECK_INT_EQ(fleet_rowbinary_sum(sums, sizeof(sums), &pos, &row), 1);
        CHECK(row.stack_id == UINT64_MAX && row.value == 3 && row.group.n == 3 && memcmp(row.group.s, "a b", 3) == 0);
        CHECK(row.host.n == 1 && row.host.s[0] == 'h');
        CHECK_INT_EQ(fleet_rowbinary_sum(sums, sizeof(sums), &pos, &row), 0);
        /* cut anywhere: refused, never read past the end */
        for (size_t cut = 1; cut < 23; cut++) {
                pos = 0;
                CHECK_INT_EQ(fleet_rowbinary_sum(sums, cut, &pos, &row), -EBADMSG);
        }

        pos = 0;
        CHECK_INT_EQ(fleet_rowbinary_frame(frame, sizeof(frame), &pos, &fr), 1);
        CHECK(fr.id == 0x0203 && fr.strings[0].n == 4 && memcmp(fr.strings[0].s, "main", 4) == 0);
        CHECK(fr.strings[1].n == 0 && fr.strings[2].n == 6 && memcmp(fr.strings[2].s, "/bin/a", 6) == 0);
        CHECK(fr.strings[3].n == 0 && fr.strings[4].n == 3 && memcmp(fr.strings[4].s, "a.c", 3) == 0);
        CHECK(fr.line == 70000 && fr.address == 0x1130);
        CHECK(fr.flags[0] == 1 && fr.flags[1] == 0 && fr.flags[2] == 1 && fr.flags[3] == 0 && fr.flags[4] == 0 &&
              fr.flags[5] == 2);
        CHECK_INT_EQ(fleet_rowbinary_frame(frame, sizeof(frame), &pos, &fr), 0);
        for (size_t cut = 1; cut < sizeof(frame); cut++) {
                pos = 0;
                CHECK_INT_EQ(fleet_rowbinary_frame(frame, cut, &pos, &fr), -EBADMSG);
        }
}

static void test_rowbinary_stacks_are_read_and_cut_rows_refused(void) {
        /* id 0x0102, frames [5, 2^64-1], user_end 4; then id 7 with no
         * frames, user_end 255 (unknown) */
        const uint8_t data[] = {
                0x02, 0x01, 0, 0, 0, 0, 0, 0, 2,
                5, 0, 0, 0, 0, 0, 0, 0,
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 4,
                7, 0, 0, 0, 0, 0, 0, 0, 0, 255,
        };
        uint64_t id, *frames = NULL;
        size_t n, pos = 0;
        int end = -1;

        CHECK_INT_EQ(fleet_rowbinary_stack(data, sizeof(data), &pos, &id, &frames, &n, &end), 1);
        CHECK(id == 0x0102 && n == 2 && frames[0] == 5 && frames[1] == UINT64_MAX);
        CHECK_INT_EQ(end, 4);
        free(frames);
        CHECK_INT_EQ(fleet_rowbinary_stack(data, sizeof(data), &pos, &id, &frames, &n, &end), 1);
        CHECK(id == 7 && n == 0);
        CHECK_INT_EQ(end, 255);
        free(frames);
        CHECK_INT_EQ(fleet_rowbinary_stack(data, sizeof(data), &pos, &id, &frames, &n, &end), 0);
        /* cut in the middle of the frames, or of the id, or before user_end */
        pos = 0;
        CHECK_INT_EQ(fleet_rowbinary_stack(data, 20, &pos, &id, &frames, &n, &end), -EBADMSG);
        pos = 0;
        CHECK_INT_EQ(fleet_rowbinary_stack(data, 5, &pos, &id, &frames, &n, &end), -EBADMSG);
        pos = 0;
        CHECK_INT_EQ(fleet_rowbinary_stack(data, 25, &pos, &id, &frames, &n, &end), -EBADMSG);
        /* a length that does not fit what is left */
        const uint8_t big[] = { 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03 };
        pos = 0;
        CHECK_INT_EQ(fleet_rowbinary_stack(big, sizeof(big), &pos, &id, &frames, &n, &end), -EBADMSG);
}

static void test_stacks_by_host_are_one_scan_unmerged(void) {
        struct query_request q = { .kind = 2, .pid = 9 };
        struct fleet_scope s = { .host = "db-1", .group = FLEET_GROUP_UNIT, .from_ns = 1000000000000ULL,
                                 .to_ns = 1600000000000ULL };
        char *t = sql(fleet_sql_stacks_by_host, &q, &s);

        CHECK(strstr(t, "SELECT stack, sum(value) AS v, if(unit = '', '-', unit) AS grp, host FROM profd.samples "
                        "PREWHERE ") == t);
        CHECK(strstr(t, " WHERE kind = 2 "));
        CHECK(strstr(t, " AND host = 'db-1'"));
        CHECK(strstr(t, " AND pid = 9"));
        /* each shard's groups as they are: a host is on one shard */
        CHECK(strstr(t, " GROUP BY grp, stack, host SETTINGS distributed_group_by_no_merge = 1 FORMAT RowBinary"));
        free(t);
}

/* A timeline request: the samples of profd.timeline by their own time
 * (the window's ends included, as profd's timeline), no drain, kind or
 * state; the stacks summed per host as a sample count; the samples by
 * millisecond and stack, one row past the cap. */
static void test_timeline_selects_samples_by_their_own_time(void) {
        struct query_request q = { .kind = 0, .pid = 9, .state_mask = 1u << 1, .max_samples = 500 };
        struct fleet_scope s = { .host = "web-*", .timeline = true, .from_ns = 1795996800123000000ULL,
                                 .to_ns = 1795996805000000000ULL };
        char *w = sql(fleet_sql_where, &q, &s);

        CHECK_STR_EQ(w, " PREWHERE t >= 1795996800123000000 AND t <= 1795996805000000000 "
                        "WHERE time >= toDateTime(1795996800) AND time <= toDateTime(1795996805) "
                        "AND day >= '2026-11-30' AND day <= '2026-12-01' AND match(host, '^(?s)web-.*$') "
                        "AND pid = 9");
        free(w);
        w = sql(fleet_sql_stacks_by_host, &q, &s);
        CHECK(strstr(w, "SELECT stack, count() AS v, '' AS grp, host FROM profd.timeline PREWHERE t >= ") == w);
        free(w);
        s.timeline = false; /* the samples query sets it itself */
        w = sql(fleet_sql_timeline_samples, &q, &s);
        CHECK(strstr(w, "SELECT intDiv(t, 1000000) AS ms, stack, frequency_hz, base_hz, count() FROM profd.timeline "
                        "PREWHERE t >= ") == w);
        /* a raise's samples apart, with their rates (version 5) */
        CHECK(strstr(w, " GROUP BY ms, stack, frequency_hz, base_hz ORDER BY ms, stack, frequency_hz, base_hz "
                        "LIMIT 501 FORMAT TabSeparated"));
        free(w);
        q.max_samples = 0;
        w = sql(fleet_sql_timeline_samples, &q, &s);
        CHECK(strstr(w, " LIMIT 1000001 FORMAT TabSeparated"));
        free(w);
}

int main(void) {
        test_quote_escapes_quotes_backslashes_and_control_bytes();
        test_globs_become_anchored_regexes();
        test_where_has_every_filter();
        test_where_without_filters_is_kind_and_window();
        test_cgroup_glob_matches_the_subtree();
        test_quality_queries_are_per_host();
        test_stacks_group_by_what_was_asked();
        test_tsv_rows_are_split_and_unescaped();
        test_tsv_numbers();
        test_rowbinary_stacks_are_read_and_cut_rows_refused();
        test_rowbinary_sums_and_frames_are_read_and_cut_rows_refused();
        test_stacks_by_host_are_one_scan_unmerged();
        test_timeline_selects_samples_by_their_own_time();
        return tests_failed ? 1 : 0;
}
