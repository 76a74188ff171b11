/* Perf map lines: both formats JITs write parse to exact values; every
 * malformed line is refused rather than half-read. */
#include <errno.h>
#include <stdint.h>

#include "perfmap.h"
#include "tests.h"

static void test_node_bare_hex_with_spaces_in_name(void) {
        struct perfmap_entry e;

        CHECK_INT_EQ(perfmap_parse_line("7f3a1c0040a0 8c LazyCompile:~hot /app/x.js:3\n", &e), 0);
        CHECK_INT_EQ(e.start, 0x7f3a1c0040a0ULL);
        CHECK_INT_EQ(e.size, 0x8c);
        CHECK_STR_EQ(e.name, "LazyCompile:~hot /app/x.js:3");
        perfmap_entry_done(&e);
        CHECK(e.name == NULL);
}

static void test_jvm_prefixed_hex(void) {
        struct perfmap_entry e;

        CHECK_INT_EQ(perfmap_parse_line("0x7f3a1c0040a0 0x8c Interpreter", &e), 0);
        CHECK_INT_EQ(e.start, 0x7f3a1c0040a0ULL);
        CHECK_INT_EQ(e.size, 0x8c);
        CHECK_STR_EQ(e.name, "Interpreter");
        perfmap_entry_done(&e);

        /* upper-case digits and prefix, and a name with a Java signature */
        CHECK_INT_EQ(perfmap_parse_line("0X7F3A1C0040A0 0X1F0 Lcom/example/Foo;::bar(I)V\n", &e), 0);
        CHECK_INT_EQ(e.start, 0x7f3a1c0040a0ULL);
        CHECK_INT_EQ(e.size, 0x1f0);
        CHECK_STR_EQ(e.name, "Lcom/example/Foo;::bar(I)V");
        perfmap_entry_done(&e);
}

static void test_range_up_to_the_top_of_64_bits(void) {
        struct perfmap_entry e;

        /* 16 digits after leading zeros, and an end of exactly UINT64_MAX */
        CHECK_INT_EQ(perfmap_parse_line("0000fffffffffffffff0 f x", &e), 0);
        CHECK_INT_EQ(e.start, 0xfffffffffffffff0ULL);
        CHECK_INT_EQ(e.size, 0xf);
        CHECK_STR_EQ(e.name, "x");
        perfmap_entry_done(&e);
}

static void test_malformed_lines(void) {
        const char *bad[] = {
                "",
                "\n",
                "7f3a1c0040a0",                         /* nothing after start */
                "7f3a1c0040a0 8c",                      /* no name */
                "7f3a1c0040a0 8c ",                     /* empty name */
                "7f3a1c0040a0 8c \n",                   /* empty name before newline */
                "7f3a1c0040a0 8c  two-spaces",          /* another separator */
                "7f3a1c0040a0 8c \tname",
                "7f3a1c0040a0\t8c name",
                " 7f3a1c0040a0 8c name",                /* leading blank */
                "7f3a1c0040g0 8c name",                 /* not hex */
                "7f3a1c0040a0 8z name",
                "-7f3a1c0040a0 8c name",                /* sign */
                "+7f3a1c0040a0 8c name",
                "0x 8c name",                           /* prefix without digits */
                "7f3a1c0040a0 0x name",
                "0x0x10 8c name",
                " 8c name",                             /* empty start */
                "7f3a1c0040a0 0 name",                  /* empty range */
                "7f3a1c0040a0 0x0 name",
                "10000000000000000 8c name",            /* start over 64 bits */
                "7f3a1c0040a0 10000000000000000 name",  /* size over 64 bits */
                "fffffffffffffff0 10 name",             /* end wraps to 0 */
                "ffffffffffffffff ffffffffffffffff name", /* end wraps */
                "7f00 10 a\n7f10 10 b",                 /* two lines */
        };
        struct perfmap_entry e = { .start = 1, .size = 2, .name = NULL };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = perfmap_parse_line(bad[i], &e);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
                CHECK_INT_EQ(r, -EINVAL);
        }
        /* a refused line leaves the output alone */
        CHECK_INT_EQ(e.start, 1);
        CHECK_INT_EQ(e.size, 2);
        CHECK(e.name == NULL);
}

int main(void) {
        test_node_bare_hex_with_spaces_in_name();
        test_jvm_prefixed_hex();
        test_range_up_to_the_top_of_64_bits();
        test_malformed_lines();
        TESTS_DONE();
}
