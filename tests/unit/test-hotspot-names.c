/* The HotSpot name decoder without a JVM: the line table decoder on
 * hand-built byte streams (every encoding case, both UNSIGNED5 formats),
 * the lookup HotSpot's line_number_from_bci does, then a Method named
 * from a memory image built here with JDK 17's offsets (Method →
 * ConstMethod → ConstantPool → Symbols, the holder's name), and that
 * image made hostile one way at a time: each fails with its reason, never
 * a crash, a read outside the image or a wrong name; the key a cache of
 * names checks for reuse. */
#include <errno.h>
#include <stdlib.h>

#include "hotspot-jdk17.h"
#include "hotspot-names.h"
#include "macro.h"
#include "tests.h"

/* ---- the line table decoder ---- */

/* A writer of HotSpot's line table format, for round trips: the cases
 * below are also written out byte by byte, so the decoder is not only
 * checked against this. */
struct writer {
        uint8_t buf[4096];
        size_t n;
        int32_t bci, line;
        enum hotspot_lines_format format;
};

static void put_unsigned5(struct writer *w, uint32_t v) {
        uint32_t excluded = w->format == HOTSPOT_LINES_UNSIGNED5_NO_ZERO ? 1 : 0;
        uint32_t low_codes = 256 - 64 - excluded;

        for (int i = 0;; i++) {
                if (v < low_codes || i == 4) {
                        w->buf[w->n++] = (uint8_t) (v + excluded);
                        return;
                }
                v -= low_codes;
                w->buf[w->n++] = (uint8_t) (excluded + low_codes + v % 64);
                v >>= 6;
        }
}

static void put_pair(struct writer *w, int32_t bci, int32_t line) {
        int32_t db = bci - w->bci, dl = line - w->line;

        w->bci = bci;
        w->line = line;
        if (db == 0 && dl == 0)
                return;
        if (db >= 0 && db < 32 && dl >= 0 && dl < 8 && ((db << 3) | dl) != 0xff) {
                w->buf[w->n++] = (uint8_t) ((db << 3) | dl);
                return;
        }
        w->buf[w->n++] = 0xff;
        put_unsigned5(w, ((uint32_t) db << 1) ^ (uint32_t) (db >> 31));
        put_unsigned5(w, ((uint32_t) dl << 1) ^ (uint32_t) (dl >> 31));
}

static int decode(const uint8_t *buf, size_t size, enum hotspot_lines_format format, uint32_t code_size,
                  struct hotspot_line **lines, size_t *n) {
        size_t used = 0;
        int r;

        *lines = NULL;
        *n = 0;
        r = hotspot_lines_decode(buf, size, format, code_size, lines, n, &used);
        if (r == 0)
                CHECK(used <= size && buf[used - 1] == 0);
        return r;
}

static void test_lines_short_and_escaped(void) {
        /* (0, 10): a line delta of 10 needs the escape: FF, sign-folded 0
         * and 20. (4, 11), (9, 13): one byte each, bci delta << 3 | line
         * delta. (15, 12): a line going back needs the escape: FF 0C 01.
         * (46, 19): bci +31, line +7 would be the byte FF, so escaped:
         * FF 3E 0E. Then the end. */
        static const uint8_t table[] = { 0xff, 0x00, 0x14, 0x21, 0x2a, 0xff, 0x0c, 0x01, 0xff, 0x3e, 0x0e, 0x00 };
        struct hotspot_line *lines;
        size_t n;

        CHECK_INT_EQ(decode(table, sizeof table, HOTSPOT_LINES_UNSIGNED5, 50, &lines, &n), 0);
        CHECK_INT_EQ(n, 5);
        if (n == 5) {
                CHECK_INT_EQ(lines[0].bci, 0);
                CHECK_INT_EQ(lines[0].line, 10);
                CHECK_INT_EQ(lines[1].bci, 4);
                CHECK_INT_EQ(lines[1].line, 11);
                CHECK_INT_EQ(lines[2].bci, 9);
                CHECK_INT_EQ(lines[2].line, 13);
                CHECK_INT_EQ(lines[3].bci, 15);
                CHECK_INT_EQ(lines[3].line, 12);
                CHECK_INT_EQ(lines[4].bci, 46);
                CHECK_INT_EQ(lines[4].line, 19);
        }
        /* Between rows, the row below; on one, that row. */
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 0), 10);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 3), 10);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 4), 11);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 10), 13);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 45), 12);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 49), 19);
        free(lines);

        /* The end marker alone: a table without rows. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0 }, 1, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), 0);
        CHECK_INT_EQ(n, 0);
        CHECK(!lines);
        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, 0), -ENOENT);
}

static void test_lines_multibyte_numbers(void) {
        /* bci +300, line +1000: sign-folded 600 and 2000, two bytes each.
         * JDK 17 (every byte a digit): 600 = 216 + 6·64 → D8 06;
         * 2000 = 208 + 28·64 → D0 1C. Later JDKs add one to every byte
         * and split at 191: 600 → D9 07, 2000 → D1 1D. */
        static const uint8_t jdk17[] = { 0xff, 0xd8, 0x06, 0xd0, 0x1c, 0x00 };
        static const uint8_t jdk21[] = { 0xff, 0xd9, 0x07, 0xd1, 0x1d, 0x00 };
        struct hotspot_line *lines;
        size_t n;

        CHECK_INT_EQ(decode(jdk17, sizeof jdk17, HOTSPOT_LINES_UNSIGNED5, 400, &lines, &n), 0);
        CHECK_INT_EQ(n, 1);
        if (n == 1) {
                CHECK_INT_EQ(lines[0].bci, 300);
                CHECK_INT_EQ(lines[0].line, 1000);
        }
        free(lines);
        CHECK_INT_EQ(decode(jdk21, sizeof jdk21, HOTSPOT_LINES_UNSIGNED5_NO_ZERO, 400, &lines, &n), 0);
        CHECK_INT_EQ(n, 1);
        if (n == 1) {
                CHECK_INT_EQ(lines[0].bci, 300);
                CHECK_INT_EQ(lines[0].line, 1000);
        }
        free(lines);
        /* A 0 byte inside a number is garbage where the format never writes one. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0xff, 0x00, 0x03, 0x00 }, 4, HOTSPOT_LINES_UNSIGNED5_NO_ZERO, 10,
                            &lines, &n), -EBADMSG);
        /* 3 bytes: 200000 (line 100000 folded) = 192 + 0·64 + ...: over a u2 line. */
        {
                struct writer w = { .format = HOTSPOT_LINES_UNSIGNED5 };

                w.buf[w.n++] = 0xff;
                put_unsigned5(&w, 0);
                put_unsigned5(&w, 200000);
                CHECK_INT_EQ(w.n, 5);
                w.buf[w.n++] = 0;
                CHECK_INT_EQ(decode(w.buf, w.n, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -EBADMSG);
        }
        /* Five bytes, the last any byte: 2^31 - 1 as a bci delta leaves the code. */
        {
                struct writer w = { .format = HOTSPOT_LINES_UNSIGNED5 };

                w.buf[w.n++] = 0xff;
                put_unsigned5(&w, UINT32_C(0xfffffffe));
                CHECK_INT_EQ(w.n, 6);
                put_unsigned5(&w, 2);
                w.buf[w.n++] = 0;
                CHECK_INT_EQ(decode(w.buf, w.n, HOTSPOT_LINES_UNSIGNED5, 65535, &lines, &n), -EBADMSG);
        }
}

static void test_lines_round_trip(void) {
        /* A long method's table: lines forward and back, bci steps small
         * and large, in both formats. */
        for (int f = 0; f < 2; f++) {
                struct writer w = { .format = f ? HOTSPOT_LINES_UNSIGNED5_NO_ZERO : HOTSPOT_LINES_UNSIGNED5 };
                struct hotspot_line *lines;
                int32_t bcis[300], lines_in[300];
                size_t n, k = 0;
                uint32_t seed = 12345;

                for (int32_t bci = 0, line = 100; k < ELEMENTSOF(bcis); k++) {
                        seed = seed * 1103515245 + 12345;
                        bci += 1 + (int32_t) ((seed >> 16) % (k % 7 == 0 ? 400 : 20));
                        line += (int32_t) ((seed >> 8) % 40) - 12;
                        if (line < 1)
                                line = 1;
                        bcis[k] = bci;
                        lines_in[k] = line;
                        put_pair(&w, bci, line);
                }
                w.buf[w.n++] = 0;
                CHECK_INT_EQ(decode(w.buf, w.n, w.format, 65535, &lines, &n), 0);
                CHECK_INT_EQ(n, k);
                for (size_t i = 0; i < n && i < k; i++) {
                        CHECK_INT_EQ(lines[i].bci, bcis[i]);
                        CHECK_INT_EQ(lines[i].line, lines_in[i]);
                        CHECK_INT_EQ(hotspot_lines_lookup(lines, n, (uint32_t) bcis[i]), lines_in[i]);
                        if (i + 1 < k && bcis[i + 1] > bcis[i] + 1)
                                CHECK_INT_EQ(hotspot_lines_lookup(lines, n, (uint32_t) bcis[i] + 1), lines_in[i]);
                }
                free(lines);
                /* Cut anywhere before the end marker: more bytes needed. */
                for (size_t cut = 0; cut < w.n; cut++)
                        CHECK_INT_EQ(decode(w.buf, cut, w.format, 65535, &lines, &n), -ENODATA);
        }
}

static void test_lines_hostile(void) {
        struct hotspot_line *lines;
        size_t n;

        /* A bci at or past the code's end. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0x50, 0x00 }, 2, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -EBADMSG);
        CHECK_INT_EQ(decode((const uint8_t[]) { 0x48, 0x00 }, 2, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), 0);
        free(lines);
        /* A bci going below 0: FF, -1 folded (1), line 0. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0xff, 0x01, 0x00, 0x00 }, 4, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n),
                     -EBADMSG);
        /* A line going below 0. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0xff, 0x00, 0x01, 0x00 }, 4, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n),
                     -EBADMSG);
        /* Truncated inside an escape, inside a number, before the end. */
        CHECK_INT_EQ(decode((const uint8_t[]) { 0xff }, 1, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -ENODATA);
        CHECK_INT_EQ(decode((const uint8_t[]) { 0xff, 0xd8 }, 2, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -ENODATA);
        CHECK_INT_EQ(decode((const uint8_t[]) { 0x01, 0x01 }, 2, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -ENODATA);
        /* Rows that never end within the cap: escaped (0, 0) deltas,
         * which HotSpot never writes, one row each. */
        {
                size_t size = 3 * (HOTSPOT_LINES_MAX + 1) + 1;
                uint8_t *buf = calloc(1, size);

                CHECK(buf);
                for (size_t i = 0; buf && i + 3 < size; i += 3)
                        buf[i] = 0xff;
                if (buf)
                        CHECK_INT_EQ(decode(buf, size, HOTSPOT_LINES_UNSIGNED5, 10, &lines, &n), -EBADMSG);
                free(buf);
        }
}

/* ---- a Method in a memory image ---- */

#define IMAGE_BASE UINT64_C(0x100000)
#define IMAGE_SIZE (256u * 1024u)

#define METHOD (IMAGE_BASE + 0x100)
/* Far from the rest: line tables of 64 KiB follow it in the hostile cases. */
#define CONST_METHOD (IMAGE_BASE + 0x20000)
#define POOL (IMAGE_BASE + 0x800)
#define TAGS (IMAGE_BASE + 0xc00)
#define KLASS (IMAGE_BASE + 0x1000)
#define SYMBOLS (IMAGE_BASE + 0x2000)
#define CODE_SIZE 50u

/* Pool slots: Utf8 entries the method uses, a Class entry (tag 7) to point at wrongly. */
enum { I_NAME = 1, I_SIG = 2, I_SOURCE = 3, I_CLASS_REF = 4, I_CLASS_NAME = 5, I_OTHER = 6, POOL_LENGTH = 9 };

struct image {
        uint8_t bytes[IMAGE_SIZE];
        size_t reads;
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct image *m = userdata;

        m->reads++;
        if (addr < IMAGE_BASE || addr - IMAGE_BASE > IMAGE_SIZE || size > IMAGE_SIZE - (addr - IMAGE_BASE))
                return -EFAULT;
        memcpy(buf, m->bytes + (addr - IMAGE_BASE), size);
        return 0;
}

static void put(struct image *m, uint64_t addr, uint64_t v, size_t size) {
        for (size_t i = 0; i < size; i++)
                m->bytes[addr - IMAGE_BASE + i] = (uint8_t) (v >> (8 * i));
}

/* JDK 17's offsets, as test-hotspot-jvm reads them from Debian's JVM. */
static struct hotspot_vmstructs jdk17_vmstructs(void) {
        struct hotspot_vmstructs vs = {
                .version_major = 17,
                HOTSPOT_JDK17_NAME_FIELDS,
        };

        return vs;
}

static uint64_t symbol_at(unsigned i) {
        return SYMBOLS + 0x100 * i;
}

static void put_symbol(struct image *m, unsigned i, const char *s) {
        put(m, symbol_at(i), 1, 4); /* refcount */
        put(m, symbol_at(i) + 4, strlen(s), 2);
        memcpy(m->bytes + (symbol_at(i) + 6 - IMAGE_BASE), s, strlen(s));
}

/* A method `int spin(int)` of com.example.Outer$Inner, in Outer.java,
 * with the line table of test_lines_short_and_escaped. */
static void build(struct image *m) {
        static const uint8_t table[] = { 0xff, 0x00, 0x14, 0x21, 0x2a, 0xff, 0x0c, 0x01, 0xff, 0x3e, 0x0e, 0x00 };
        static const struct { unsigned index, tag; const char *symbol; } slots[] = {
                { I_NAME, 1, "spin" },
                { I_SIG, 1, "(I)I" },
                { I_SOURCE, 1, "Outer.java" },
                { I_CLASS_REF, 7, NULL },
                { I_CLASS_NAME, 1, "com/example/Outer$Inner" },
                { I_OTHER, 1, "java/lang/String" },
        };

        memset(m->bytes, 0, sizeof m->bytes);
        put(m, METHOD + 8, CONST_METHOD, 8);
        put(m, CONST_METHOD + 8, POOL, 8);
        put(m, CONST_METHOD + 28, 0x0001 | 0x0004, 2); /* line table, local variable table */
        put(m, CONST_METHOD + 32, CODE_SIZE, 2);
        put(m, CONST_METHOD + 34, I_NAME, 2);
        put(m, CONST_METHOD + 36, I_SIG, 2);
        memcpy(m->bytes + (CONST_METHOD + 48 + CODE_SIZE - IMAGE_BASE), table, sizeof table);

        put(m, POOL + 8, TAGS, 8);
        put(m, POOL + 24, KLASS, 8);
        put(m, POOL + 54, I_SOURCE, 2);
        put(m, POOL + 60, POOL_LENGTH, 4);
        put(m, TAGS, POOL_LENGTH, 4);
        for (size_t i = 0; i < ELEMENTSOF(slots); i++) {
                put(m, TAGS + 4 + slots[i].index, slots[i].tag, 1);
                if (slots[i].symbol) {
                        put_symbol(m, slots[i].index, slots[i].symbol);
                        put(m, POOL + 72 + 8 * slots[i].index, symbol_at(slots[i].index), 8);
                } else
                        put(m, POOL + 72 + 8 * slots[i].index, KLASS, 8);
        }
        put(m, KLASS + 24, symbol_at(I_CLASS_NAME), 8);
        put(m, KLASS + 232, POOL, 8);
}

static int name(struct image *m, const struct hotspot_vmstructs *vs, uint64_t method, struct hotspot_method *ret,
                enum hotspot_names_reason *reason) {
        int r;

        *reason = _HOTSPOT_NAMES_REASON_MAX;
        *ret = (struct hotspot_method) {};
        r = hotspot_method_read(vs, image_read, m, method, ret, reason);
        CHECK((unsigned) *reason < _HOTSPOT_NAMES_REASON_MAX);
        CHECK(r < 0 || *reason == HOTSPOT_NAMES_OK);
        if (r < 0) {
                CHECK(!ret->function && !ret->class_name);
                CHECK(r == -EIO || r == -EBADMSG || r == -EPROTONOSUPPORT);
        }
        return r;
}

static void test_method_named(struct image *m) {
        struct hotspot_vmstructs vs = jdk17_vmstructs();
        enum hotspot_names_reason reason;
        struct hotspot_method h;

        build(m);
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        CHECK_STR_EQ(h.class_name, "com.example.Outer$Inner");
        CHECK_STR_EQ(h.method_name, "spin");
        CHECK_STR_EQ(h.signature, "(I)I");
        CHECK_STR_EQ(h.source_file, "Outer.java");
        CHECK_INT_EQ(h.code_size, CODE_SIZE);
        CHECK_INT_EQ(h.lines_reason, HOTSPOT_NAMES_OK);
        CHECK_INT_EQ(h.n_lines, 5);
        CHECK_INT_EQ(hotspot_lines_lookup(h.lines, h.n_lines, 10), 13);
        CHECK_INT_EQ(hotspot_lines_lookup(h.lines, h.n_lines, 49), 19);
        hotspot_method_done(&h);
        CHECK(!h.function && !h.lines);

        /* Modified UTF-8 comes out as UTF-8: U+1F600 is two surrogates
         * in the JVM, one 4-byte sequence here; é stays as it is. */
        memset(m->bytes + (symbol_at(I_NAME) - IMAGE_BASE), 0, 0x100);
        put_symbol(m, I_NAME, "caf\xc3\xa9\xed\xa0\xbd\xed\xb8\x80!");
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_STR_EQ(h.method_name, "caf\xc3\xa9\xf0\x9f\x98\x80!");
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.caf\xc3\xa9\xf0\x9f\x98\x80!");
        hotspot_method_done(&h);
        build(m);

        /* No SourceFile attribute: named, without a file. */
        put(m, POOL + 54, 0, 2);
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK(!h.source_file);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        hotspot_method_done(&h);

        /* No line table flag: named, lines absent for that reason. */
        build(m);
        put(m, CONST_METHOD + 28, 0x0004, 2);
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_INT_EQ(h.lines_reason, HOTSPOT_NAMES_NO_LINES);
        CHECK(!h.lines && h.n_lines == 0);
        hotspot_method_done(&h);

        /* Tables that do not say which flag it is: no lines, names still. */
        build(m);
        vs.const_method_has_linenumber_table = HOTSPOT_NO_SLOT;
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_INT_EQ(h.lines_reason, HOTSPOT_NAMES_NO_LINES);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        hotspot_method_done(&h);

        /* Without tags or the holder's pool described, fewer checks, the same name. */
        vs = jdk17_vmstructs();
        vs.constant_pool_tags = HOTSPOT_NO_FIELD;
        vs.instance_klass_constants = HOTSPOT_NO_FIELD;
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        hotspot_method_done(&h);

        /* JDK 11: the length in the high half of a u4. */
        vs = jdk17_vmstructs();
        vs.symbol_length = 0;
        vs.symbol_length_and_refcount = 0;
        vs.symbol_body = 8;
        for (unsigned i = I_NAME; i <= I_OTHER; i++) {
                uint8_t body[64];
                size_t len = m->bytes[symbol_at(i) + 4 - IMAGE_BASE] | m->bytes[symbol_at(i) + 5 - IMAGE_BASE] << 8;

                memcpy(body, m->bytes + (symbol_at(i) + 6 - IMAGE_BASE), len);
                put(m, symbol_at(i), (uint64_t) len << 16 | 3, 4);
                put(m, symbol_at(i) + 4, 0, 4);
                memcpy(m->bytes + (symbol_at(i) + 8 - IMAGE_BASE), body, len);
        }
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        CHECK_STR_EQ(h.signature, "(I)I");
        hotspot_method_done(&h);
}

/* One change to the image (or the layout) that must fail with `want`. */
static void expect_failure(struct image *m, struct hotspot_vmstructs *vs, uint64_t method,
                           enum hotspot_names_reason want, const char *what) {
        enum hotspot_names_reason reason;
        struct hotspot_method h;
        int r;

        r = name(m, vs, method, &h, &reason);
        if (r >= 0 || reason != want)
                fprintf(stderr, "%s: r=%d reason %s, expected %s (named \"%s\")\n", what, r,
                        hotspot_names_reason_name(reason), hotspot_names_reason_name(want), h.function ?: "-");
        CHECK(r < 0);
        CHECK_INT_EQ(reason, want);
        hotspot_method_done(&h);
}

static void test_method_hostile(struct image *m) {
        struct hotspot_vmstructs vs = jdk17_vmstructs();
        enum hotspot_names_reason reason;
        struct hotspot_method h;

        build(m);
        expect_failure(m, &vs, 0, HOTSPOT_NAMES_READ_METHOD, "NULL method");
        expect_failure(m, &vs, IMAGE_BASE + IMAGE_SIZE + 64, HOTSPOT_NAMES_READ_METHOD, "unmapped method");
        put(m, METHOD + 8, 0, 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_METHOD, "NULL ConstMethod");
        build(m);
        put(m, METHOD + 8, UINT64_C(0xdead00000000), 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_METHOD, "ConstMethod in nowhere");

        build(m);
        put(m, CONST_METHOD + 8, 0, 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_POOL, "NULL pool");
        build(m);
        put(m, POOL + 60, 0, 4);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_POOL, "pool of length 0");
        build(m);
        put(m, POOL + 60, 0x7fffffff, 4);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_POOL, "pool of length 2^31");
        build(m);
        put(m, TAGS, POOL_LENGTH + 1, 4);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_POOL, "tags of another length");
        build(m);
        put(m, POOL + 8, UINT64_C(0xdead00000000), 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_POOL, "tags in nowhere");

        /* Indexes outside the pool, 0, or at a slot that is not a Utf8. */
        build(m);
        put(m, CONST_METHOD + 34, POOL_LENGTH, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "name index = pool length");
        put(m, CONST_METHOD + 34, 0xffff, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "name index 65535");
        put(m, CONST_METHOD + 34, 0, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "name index 0");
        put(m, CONST_METHOD + 34, I_CLASS_REF, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "name index at a Class entry");
        build(m);
        put(m, CONST_METHOD + 36, POOL_LENGTH + 3, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "signature index out of range");
        build(m);
        put(m, POOL + 54, 1000, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_INDEX, "source file index out of range");
        /* Without tags described, an index at a Class entry reads the
         * Klass as a Symbol: its bytes are not a name. */
        build(m);
        vs.constant_pool_tags = HOTSPOT_NO_FIELD;
        put(m, CONST_METHOD + 34, I_CLASS_REF, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, "Class entry read as a Symbol");
        vs = jdk17_vmstructs();

        /* The holder: unreadable, or its pool another. */
        build(m);
        put(m, POOL + 24, 0, 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_CLASS, "NULL holder");
        build(m);
        put(m, KLASS + 232, POOL + 0x100, 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_CLASS, "holder with another pool");
        /* A method handle intrinsic's pool is its own, with its holder's
         * source file index (of the holder's pool, not this one): named,
         * the source file from the holder's pool, which names the holder. */
        {
                const uint64_t class_pool = IMAGE_BASE + 0x30000;

                build(m);
                memcpy(m->bytes + (class_pool - IMAGE_BASE), m->bytes + (POOL - IMAGE_BASE), 0x400);
                put(m, KLASS + 232, class_pool, 8);
                put(m, POOL + 54, 1000, 2);
                CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
                CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
                CHECK_STR_EQ(h.source_file, "Outer.java");
                hotspot_method_done(&h);
                /* the holder's pool naming another holder: not one */
                put(m, class_pool + 24, KLASS + 0x100, 8);
                expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_CLASS, "intrinsic's holder's pool of another");
                put(m, KLASS + 232, IMAGE_SIZE + IMAGE_BASE + 0x1000, 8);
                expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_CLASS, "intrinsic's holder's pool unreadable");
        }

        /* Symbols: huge, empty, unreadable, not a name of their kind. */
        build(m);
        put(m, symbol_at(I_NAME) + 4, 0xffff, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, "name of 65535 bytes");
        put(m, symbol_at(I_NAME) + 4, HOTSPOT_NAME_MAX + 1, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, "name one over the cap");
        put(m, symbol_at(I_NAME) + 4, 0, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, "empty name");
        build(m);
        put(m, POOL + 72 + 8 * I_NAME, IMAGE_BASE + IMAGE_SIZE - 7, 8);
        put(m, IMAGE_BASE + IMAGE_SIZE - 3, 4, 2);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_READ_SYMBOL, "name's body past the image");
        put(m, POOL + 72 + 8 * I_NAME, 0, 8);
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, "NULL name");
        {
                static const struct { unsigned index; const char *text; } bad[] = {
                        { I_NAME, "a.b" },
                        { I_NAME, "java/lang" },
                        { I_NAME, "<init2>" },
                        { I_NAME, "x\ty" },
                        { I_NAME, "\xc3" },            /* truncated UTF-8 */
                        { I_NAME, "\xf0\x9f\x98\x80" }, /* 4-byte UTF-8: the JVM writes surrogates */
                        { I_SIG, "I)V" },
                        { I_SIG, "(I)" },
                        { I_SIG, "(I)V)" },
                        { I_CLASS_NAME, "java.lang.String" },
                        { I_CLASS_NAME, "/java/lang" },
                        { I_CLASS_NAME, "java//lang" },
                        { I_CLASS_NAME, "[Ljava/lang/String;" },
                        { I_SOURCE, "a\nb" },
                        { I_NAME, "a\xc0\x80" },              /* modified UTF-8's NUL */
                        { I_NAME, "\xe0\x80\xaf" },          /* an overlong '/' */
                        { I_NAME, "x\xed\xa0\xbd" },         /* a lone high surrogate */
                        { I_NAME, "\xed\xb8\x80y" },         /* a lone low surrogate */
                };

                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        build(m);
                        memset(m->bytes + (symbol_at(bad[i].index) - IMAGE_BASE), 0, 0x100);
                        put_symbol(m, bad[i].index, bad[i].text);
                        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_BAD_SYMBOL, bad[i].text);
                }
        }

        /* The layout lacks what names need. */
        build(m);
        vs.constant_pool_length = HOTSPOT_NO_FIELD;
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_NO_LAYOUT, "no pool length");
        vs = jdk17_vmstructs();
        vs.symbol_length = HOTSPOT_NO_FIELD;
        expect_failure(m, &vs, METHOD, HOTSPOT_NAMES_NO_LAYOUT, "no symbol length");
        vs = jdk17_vmstructs();

        /* Line tables: garbage leaves the names standing, without lines. */
        build(m);
        m->bytes[CONST_METHOD + 48 + CODE_SIZE - IMAGE_BASE] = 0xf8; /* bci +31, twice: past 50 */
        m->bytes[CONST_METHOD + 48 + CODE_SIZE + 1 - IMAGE_BASE] = 0xf8;
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_STR_EQ(h.function, "com.example.Outer$Inner.spin");
        CHECK_INT_EQ(h.lines_reason, HOTSPOT_NAMES_BAD_LINES);
        CHECK(!h.lines);
        hotspot_method_done(&h);
        /* A table that runs to the image's end without its end marker:
         * read a page at a time, the last read fails. */
        build(m);
        put(m, CONST_METHOD + 32, 0xffff, 2);
        memset(m->bytes + (CONST_METHOD + 48 + 0xffff - IMAGE_BASE), 0x01,
               IMAGE_SIZE - (CONST_METHOD + 48 + 0xffff - IMAGE_BASE));
        for (uint64_t a = CONST_METHOD + 48 + 0xffff; a < IMAGE_BASE + IMAGE_SIZE; a += 3)
                m->bytes[a - IMAGE_BASE] = 0x08; /* bci +1, line +0: still inside 65535 bytes */
        m->reads = 0;
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK(h.lines_reason == HOTSPOT_NAMES_READ_LINES || h.lines_reason == HOTSPOT_NAMES_BAD_LINES);
        /* Bounded: names' reads, then a page a time up to the 64 KiB cap. */
        CHECK(m->reads < 64);
        hotspot_method_done(&h);
        /* Escaped (0, 0) rows to the 64 KiB cap: 21,845 rows, no end. */
        build(m);
        memset(m->bytes + (CONST_METHOD + 48 + CODE_SIZE - IMAGE_BASE), 0, HOTSPOT_LINES_BYTES_MAX + 16);
        for (uint64_t a = 0; a < HOTSPOT_LINES_BYTES_MAX + 16; a += 3)
                m->bytes[CONST_METHOD + 48 + CODE_SIZE + a - IMAGE_BASE] = 0xff;
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_INT_EQ(h.lines_reason, HOTSPOT_NAMES_BAD_LINES);
        hotspot_method_done(&h);
}

/* The reuse check: the key read alone is the one read with the names, and
 * changes when the Method* leads to another method. */
static void test_method_key(struct image *m) {
        struct hotspot_vmstructs vs = jdk17_vmstructs();
        struct hotspot_method_key key, again;
        enum hotspot_names_reason reason;
        struct hotspot_method h;

        build(m);
        CHECK_INT_EQ(name(m, &vs, METHOD, &h, &reason), 0);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &key, &reason), 0);
        CHECK(hotspot_method_key_equal(&key, &h.key));
        CHECK_INT_EQ(key.const_method, CONST_METHOD);
        CHECK_INT_EQ(key.pool, POOL);
        CHECK_INT_EQ(key.name_symbol, symbol_at(I_NAME));
        CHECK_INT_EQ(key.code_size, CODE_SIZE);
        hotspot_method_done(&h);

        /* Another method in the same place: another name, another pool, more code. */
        put(m, CONST_METHOD + 34, I_OTHER, 2);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), 0);
        CHECK(!hotspot_method_key_equal(&key, &again));
        build(m);
        put(m, POOL + 72 + 8 * I_SIG, symbol_at(I_OTHER), 8);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), 0);
        CHECK(!hotspot_method_key_equal(&key, &again));
        build(m);
        put(m, CONST_METHOD + 32, CODE_SIZE + 1, 2);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), 0);
        CHECK(!hotspot_method_key_equal(&key, &again));
        build(m);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), 0);
        CHECK(hotspot_method_key_equal(&key, &again));
        /* Freed and garbage: a failure with its reason, not a key. */
        put(m, METHOD + 8, 0, 8);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), -EIO);
        CHECK_INT_EQ(reason, HOTSPOT_NAMES_READ_METHOD);
        build(m);
        put(m, CONST_METHOD + 34, 0xffff, 2);
        CHECK_INT_EQ(hotspot_method_key_read(&vs, image_read, m, METHOD, &again, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, HOTSPOT_NAMES_BAD_INDEX);
}

static void test_symbol_rules(void) {
        static const char *const classes_ok[] = { "A", "java/lang/String", "Outer$Inner", "a/b/C$$Lambda$14+0x0000000800c01000",
                                                  "caf\xc3\xa9/Cr\xc3\xa8me" };
        static const char *const methods_ok[] = { "run", "<init>", "<clinit>", "lambda$main$0", "access$000" };

        for (size_t i = 0; i < ELEMENTSOF(classes_ok); i++)
                CHECK(hotspot_symbol_valid(HOTSPOT_SYMBOL_CLASS, classes_ok[i], strlen(classes_ok[i])));
        for (size_t i = 0; i < ELEMENTSOF(methods_ok); i++)
                CHECK(hotspot_symbol_valid(HOTSPOT_SYMBOL_METHOD, methods_ok[i], strlen(methods_ok[i])));
        CHECK(hotspot_symbol_valid(HOTSPOT_SYMBOL_SIGNATURE, "()V", 3));
        CHECK(hotspot_symbol_valid(HOTSPOT_SYMBOL_SIGNATURE, "([Ljava/lang/String;J)[I", 24));
        CHECK(!hotspot_symbol_valid(HOTSPOT_SYMBOL_METHOD, "<init>", 5)); /* "<init" */
        CHECK(!hotspot_symbol_valid(HOTSPOT_SYMBOL_CLASS, "a\0b", 3));
        CHECK(!hotspot_symbol_valid(HOTSPOT_SYMBOL_CLASS, "", 0));
        CHECK(!hotspot_symbol_valid(HOTSPOT_SYMBOL_CLASS, NULL, 4));
        CHECK(strcmp(hotspot_names_reason_name(HOTSPOT_NAMES_BAD_INDEX), "bad-index") == 0);
        for (unsigned i = 0; i < _HOTSPOT_NAMES_REASON_MAX; i++)
                CHECK(strcmp(hotspot_names_reason_name(i), "unknown") != 0);
        CHECK(strcmp(hotspot_names_reason_name(_HOTSPOT_NAMES_REASON_MAX), "unknown") == 0);
        CHECK_INT_EQ(hotspot_lines_format_of(17), HOTSPOT_LINES_UNSIGNED5);
        CHECK_INT_EQ(hotspot_lines_format_of(21), HOTSPOT_LINES_UNSIGNED5_NO_ZERO);
}

int main(void) {
        struct image *m = calloc(1, sizeof *m);

        if (!m)
                return 1;
        test_lines_short_and_escaped();
        test_lines_multibyte_numbers();
        test_lines_round_trip();
        test_lines_hostile();
        test_symbol_rules();
        test_method_named(m);
        test_method_hostile(m);
        test_method_key(m);
        free(m);
        TESTS_DONE();
}
