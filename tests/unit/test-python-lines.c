/* The CPython location-table decoder against CPython's own answers
 * (co_positions of real code objects, tests/data/python/linetables-*.txt)
 * and against malformed tables. */
#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "python-lines.h"
#include "tests.h"

static size_t hex_decode(const char *hex, uint8_t *out, size_t max) {
        size_t n = 0;

        for (; hex[0] && hex[1] && n < max; hex += 2) {
                unsigned v;

                if (sscanf(hex, "%2x", &v) != 1)
                        break;
                out[n++] = (uint8_t) v;
        }
        return n;
}

/* Every code unit of every code object of one fixture file gets the line
 * co_positions gave it; and the file's tables use every form. */
static void test_fixture(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        static char code_line[65536], lines_line[65536];
        unsigned forms[_PYTHON_LINE_FORM_MAX] = {}, codes = 0;

        CHECK(f);
        if (!f)
                return;
        while (fgets(code_line, sizeof code_line, f)) {
                char name[256], hex[32768];
                uint8_t table[16384];
                int firstlineno;
                size_t size;
                char *p, *end;
                struct python_lines it;
                struct python_line_entry e;

                if (code_line[0] == '#')
                        continue;
                CHECK(sscanf(code_line, "code %255s %d %32767s", name, &firstlineno, hex) == 3);
                CHECK(fgets(lines_line, sizeof lines_line, f) != NULL);
                CHECK(strncmp(lines_line, "lines", 5) == 0);
                size = hex_decode(hex, table, sizeof table);
                codes++;

                p = lines_line + 5;
                for (uint32_t unit = 0;; unit++) {
                        long want = strtol(p, &end, 10);
                        int32_t got = 0;
                        int r;

                        if (end == p)
                                break;
                        p = end;
                        r = python_lines_find(table, size, firstlineno, unit, &got);
                        if (want < 0)
                                CHECK_INT_EQ(r, -ENODATA);
                        else {
                                CHECK_INT_EQ(r, 0);
                                if (r == 0 && got != want)
                                        fprintf(stderr, "%s: %s unit %u\n", path, name, unit);
                                CHECK_INT_EQ(got, want);
                        }
                }
                python_lines_init(&it, table, size, firstlineno);
                int r;
                while ((r = python_lines_next(&it, &e)) > 0)
                        forms[e.form]++;
                CHECK_INT_EQ(r, 0);
        }
        CHECK(codes >= 10);
        for (int i = 0; i < _PYTHON_LINE_FORM_MAX; i++) {
                if (!forms[i])
                        fprintf(stderr, "%s: no %s entry\n", path, python_line_form_name(i));
                CHECK(forms[i] > 0);
        }
}

static void test_past_the_end(void) {
        /* One short entry of 2 units on the first line. */
        static const uint8_t t[] = { 0x81, 0x00 };
        int32_t line = 0;

        CHECK_INT_EQ(python_lines_find(t, sizeof t, 7, 1, &line), 0);
        CHECK_INT_EQ(line, 7);
        CHECK_INT_EQ(python_lines_find(t, sizeof t, 7, 2, &line), -ENOENT);
        CHECK_INT_EQ(python_lines_find(t, 0, 7, 0, &line), -ENOENT);
}

static void test_no_column_deltas(void) {
        /* Code 13 (no columns): +3 lines for one unit, then -2 (svarint 5). */
        static const uint8_t t[] = { 0xe8, 0x06, 0xe8, 0x05 };
        int32_t line = 0;

        CHECK_INT_EQ(python_lines_find(t, sizeof t, 10, 0, &line), 0);
        CHECK_INT_EQ(line, 13);
        CHECK_INT_EQ(python_lines_find(t, sizeof t, 10, 1, &line), 0);
        CHECK_INT_EQ(line, 11);
}

static void test_malformed(void) {
        int32_t line = 0;
        /* No marker bit where an entry starts. */
        static const uint8_t unmarked[] = { 0x01, 0x00 };
        /* A long entry cut in its varints. */
        static const uint8_t truncated[] = { 0xf0, 0x42 };
        /* A varint of seven continued bytes: wider than 32 bits. */
        static const uint8_t wide[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01 };
        /* A column byte with bit 7 set. */
        static const uint8_t column[] = { 0x80, 0x80 };
        /* Lines past INT32_MAX: firstlineno near it, +2^31 - 1; below 0. */
        static const uint8_t huge[] = { 0xe8, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0x80, 0x00 };

        CHECK_INT_EQ(python_lines_find(unmarked, sizeof unmarked, 1, 0, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(truncated, sizeof truncated, 1, 0, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(wide, sizeof wide, 1, 0, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(column, sizeof column, 1, 0, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(huge, sizeof huge, INT32_MAX - 5, 1, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(column + 1, 0, -3, 0, &line), -ENOENT);
        static const uint8_t below[] = { 0x80, 0x00 };
        CHECK_INT_EQ(python_lines_find(below, sizeof below, -1, 0, &line), -EBADMSG);
        CHECK_INT_EQ(python_lines_find(below, sizeof below, 0, 0, &line), 0);
        CHECK_INT_EQ(line, 0);
}

int main(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                test_fixture(argv[i]);
        test_past_the_end();
        test_no_column_deltas();
        test_malformed();
        TESTS_DONE();
}
