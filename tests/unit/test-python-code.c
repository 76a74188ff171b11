/* The code-object reader on a synthetic memory image laid out as CPython
 * 3.11 and 3.12 lay out code objects, strings and bytes: names, lines, and
 * one distinct reason for each way the memory can be wrong. */
#include <errno.h>
#include <stdlib.h>

#include "python-code.h"
#include "tests.h"

#define BASE 0x10000u
#define CODE_TYPE 0x777000u

struct image {
        uint8_t bytes[8192];
        size_t used;
        uint64_t unreadable;   /* one address whose reads fail */
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct image *m = userdata;

        if (addr < BASE || addr - BASE > sizeof m->bytes || size > sizeof m->bytes - (addr - BASE))
                return -EFAULT;
        if (m->unreadable && addr == m->unreadable)
                return -EIO;
        memcpy(buf, m->bytes + (addr - BASE), size);
        return 0;
}

static uint64_t image_alloc(struct image *m, size_t size) {
        uint64_t addr = BASE + m->used;

        m->used += (size + 15) & ~(size_t) 15;
        return addr;
}

static void put(struct image *m, uint64_t addr, unsigned n, uint64_t v) {
        for (unsigned i = 0; i < n; i++)
                m->bytes[addr - BASE + i] = (uint8_t) (v >> (8 * i));
}

/* A compact str: kind 1 and all below 0x80 is ASCII. */
static uint64_t image_string(struct image *m, const struct python_layout *l, const uint32_t *cps, size_t n,
                             unsigned kind, bool ascii) {
        uint32_t data = ascii ? l->unicode_ascii_data : l->unicode_compact_data;
        uint64_t a = image_alloc(m, data + n * kind + 4);

        put(m, a, 8, 1);
        put(m, a + l->unicode_length, 8, n);
        put(m, a + l->unicode_state, 4, kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0));
        for (size_t i = 0; i < n; i++)
                put(m, a + data + i * kind, kind, cps[i]);
        return a;
}

static uint64_t image_ascii(struct image *m, const struct python_layout *l, const char *s) {
        uint32_t cps[256];
        size_t n = strlen(s);

        for (size_t i = 0; i < n; i++)
                cps[i] = (uint8_t) s[i];
        return image_string(m, l, cps, n, 1, true);
}

static uint64_t image_bytes(struct image *m, const struct python_layout *l, const uint8_t *b, size_t n) {
        uint64_t a = image_alloc(m, l->bytes_data + n + 1);

        put(m, a + l->bytes_size, 8, n);
        memcpy(m->bytes + (a - BASE) + l->bytes_data, b, n);
        return a;
}

/* def f(): lines 10 (2 units), 11 (3 units), no location (1 unit), 14 (1 unit). */
static const uint8_t linetable[] = { 0x81, 0x00, 0xda, 0x00, 0x05, 0xf8, 0xe8, 0x06 };

static uint64_t image_code(struct image *m, const struct python_layout *l, uint64_t qualname,
                           uint64_t filename, uint64_t table) {
        uint64_t a = image_alloc(m, l->code_adaptive + 16);

        put(m, a + l->object_type, 8, CODE_TYPE);
        put(m, a + l->code_firstlineno, 4, 10);
        put(m, a + l->code_qualname, 8, qualname);
        put(m, a + l->code_name, 8, qualname);
        put(m, a + l->code_filename, 8, filename);
        put(m, a + l->code_linetable, 8, table);
        return a;
}

static void test_names_and_lines(uint32_t version) {
        static struct image m;
        struct python_layout l;
        struct python_code code = {};
        enum python_code_reason reason = 99;
        /* "Größe.ß" in Latin-1, "π_λ" in UCS-2, an emoji in UCS-4. */
        static const uint32_t latin[] = { 'G', 'r', 0xf6, 0xdf, 'e', '.', 0xdf };
        static const uint32_t ucs2[] = { 0x3c0, '_', 0x3bb };
        static const uint32_t ucs4[] = { '/', 0x1f40d, '.', 'p', 'y' };
        int32_t line = 0;
        uint64_t at;

        memset(&m, 0, sizeof m);
        CHECK_INT_EQ(python_layout_get(version, NULL, 0, &l), 0);
        at = image_code(&m, &l, image_ascii(&m, &l, "Outer.method.<locals>.inner"),
                        image_ascii(&m, &l, "/srv/app/fixture.py"), image_bytes(&m, &l, linetable, sizeof linetable));
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), 0);
        CHECK_INT_EQ(reason, PYTHON_CODE_OK);
        CHECK_STR_EQ(code.qualname, "Outer.method.<locals>.inner");
        CHECK_STR_EQ(code.filename, "/srv/app/fixture.py");
        CHECK_INT_EQ(code.firstlineno, 10);
        CHECK_INT_EQ(code.linetable_reason, PYTHON_CODE_OK);
        CHECK_INT_EQ(python_code_line(&code, 1, &line, &reason), 0);
        CHECK_INT_EQ(line, 10);
        CHECK_INT_EQ(python_code_line(&code, 4, &line, &reason), 0);
        CHECK_INT_EQ(line, 11);
        CHECK_INT_EQ(python_code_line(&code, 5, &line, &reason), -ENOENT);
        CHECK_INT_EQ(reason, PYTHON_CODE_NO_LINE);
        CHECK_INT_EQ(python_code_line(&code, 6, &line, &reason), 0);
        CHECK_INT_EQ(line, 14);
        CHECK_INT_EQ(python_code_line(&code, 7, &line, &reason), -ENOENT);
        CHECK_INT_EQ(reason, PYTHON_CODE_OFFSET_PAST_TABLE);
        python_code_done(&code);

        /* Compact strings that are not ASCII, each kind. */
        at = image_code(&m, &l, image_string(&m, &l, latin, 7, 1, false), image_string(&m, &l, ucs4, 5, 4, false),
                        image_bytes(&m, &l, linetable, sizeof linetable));
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, 0, at, &code, &reason), 0);
        CHECK_STR_EQ(code.qualname, "Gr\xc3\xb6\xc3\x9f" "e.\xc3\x9f");
        CHECK_STR_EQ(code.filename, "/\xf0\x9f\x90\x8d.py");
        python_code_done(&code);
        at = image_code(&m, &l, image_string(&m, &l, ucs2, 3, 2, false), image_ascii(&m, &l, "x.py"),
                        image_bytes(&m, &l, linetable, sizeof linetable));
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, 0, at, &code, &reason), 0);
        CHECK_STR_EQ(code.qualname, "\xcf\x80_\xce\xbb");
        python_code_done(&code);
}

/* Each way the memory can be wrong, and the reason it is counted under. */
static void test_reasons(void) {
        static struct image m;
        struct python_layout l;
        struct python_code code = {};
        enum python_code_reason reason;
        uint64_t name, file, table, at, s;
        static const uint32_t surrogate[] = { 'a', 0xd800 };
        int32_t line;

        memset(&m, 0, sizeof m);
        CHECK_INT_EQ(python_layout_get(0x030b0000, NULL, 0, &l), 0);
        name = image_ascii(&m, &l, "f");
        file = image_ascii(&m, &l, "f.py");
        table = image_bytes(&m, &l, linetable, sizeof linetable);

        /* Outside the image; a type that is not PyCode_Type. */
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, 0x10, &code, &reason), -EIO);
        CHECK_INT_EQ(reason, PYTHON_CODE_READ_CODE);
        at = image_code(&m, &l, name, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE + 8, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_NOT_CODE);

        /* A name pointer into nowhere. */
        at = image_code(&m, &l, 0xdead0000, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EIO);
        CHECK_INT_EQ(reason, PYTHON_CODE_READ_STRING);

        /* Not compact; too long; a kind of 3; ASCII with a byte >= 0x80; a
         * lone surrogate; an embedded NUL. */
        s = image_ascii(&m, &l, "g");
        put(&m, s + l.unicode_state, 4, 1u << 2);
        at = image_code(&m, &l, s, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_NOT_COMPACT);
        s = image_ascii(&m, &l, "g");
        put(&m, s + l.unicode_length, 8, PYTHON_STRING_MAX + 1);
        at = image_code(&m, &l, name, s, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_TOO_LONG);
        put(&m, s + l.unicode_length, 8, (uint64_t) -1);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_TOO_LONG);
        s = image_ascii(&m, &l, "g");
        put(&m, s + l.unicode_state, 4, 3u << 2 | 1u << 5);
        at = image_code(&m, &l, s, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_BAD);
        s = image_ascii(&m, &l, "g\xe9");
        at = image_code(&m, &l, s, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_BAD);
        at = image_code(&m, &l, image_string(&m, &l, surrogate, 2, 2, false), file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_BAD);
        s = image_ascii(&m, &l, "ab");
        put(&m, s + l.unicode_ascii_data, 1, 0);
        at = image_code(&m, &l, s, file, table);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, PYTHON_CODE_STRING_BAD);

        /* A line table that cannot be read, or too big: names still come,
         * lines say why not. */
        at = image_code(&m, &l, name, file, 0xbad000);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), 0);
        CHECK_STR_EQ(code.qualname, "f");
        CHECK_INT_EQ(code.linetable_reason, PYTHON_CODE_READ_LINETABLE);
        CHECK_INT_EQ(python_code_line(&code, 0, &line, &reason), -ENOENT);
        CHECK_INT_EQ(reason, PYTHON_CODE_READ_LINETABLE);
        python_code_done(&code);
        s = image_bytes(&m, &l, linetable, sizeof linetable);
        put(&m, s + l.bytes_size, 8, PYTHON_LINETABLE_MAX + 1);
        at = image_code(&m, &l, name, file, s);
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), 0);
        CHECK_INT_EQ(code.linetable_reason, PYTHON_CODE_LINETABLE_TOO_BIG);
        python_code_done(&code);
        /* A malformed table. */
        static const uint8_t bad[] = { 0x81, 0x00, 0x05 };
        at = image_code(&m, &l, name, file, image_bytes(&m, &l, bad, sizeof bad));
        CHECK_INT_EQ(python_code_read(&l, image_read, &m, CODE_TYPE, at, &code, &reason), 0);
        CHECK_INT_EQ(python_code_line(&code, 1, &line, &reason), 0);
        CHECK_INT_EQ(python_code_line(&code, 2, &line, &reason), -ENOENT);
        CHECK_INT_EQ(reason, PYTHON_CODE_LINETABLE_BAD);
        python_code_done(&code);

        for (int i = 0; i < _PYTHON_CODE_REASON_MAX; i++)
                CHECK(strcmp(python_code_reason_name(i), "unknown") != 0);
}

int main(void) {
        test_names_and_lines(0x030b0000);
        test_names_and_lines(0x030c0000);
        test_reasons();
        TESTS_DONE();
}
