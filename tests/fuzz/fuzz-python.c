/* libFuzzer target: what profd will read of a Python process's memory. The
 * first byte picks a layout (3.11, 3.12, or 3.13 described by the input's
 * own _Py_DebugOffsets), the next four a firstlineno and an instruction
 * offset; the rest is a location table to decode and, at once, a memory
 * image whose start is a code object to read with its strings and table.
 * Invariants: no read outside the image, every failure a named reason,
 * names NUL-terminated UTF-8 within the cap, lines consistent between the
 * entry walk and the lookup. */
#include <errno.h>

#include "fuzz.h"
#include "python-code.h"
#include "python-layout.h"
#include "python-lines.h"

#define IMAGE_BASE UINT64_C(0x1000)

struct image {
        const uint8_t *bytes;
        size_t size;
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        const struct image *m = userdata;

        if (addr < IMAGE_BASE || addr - IMAGE_BASE > m->size || size > m->size - (addr - IMAGE_BASE))
                return -EFAULT;
        memcpy(buf, m->bytes + (addr - IMAGE_BASE), size);
        return 0;
}

static void check_lines(const uint8_t *table, size_t size, int32_t firstlineno, uint32_t offset) {
        struct python_lines it;
        struct python_line_entry e;
        int32_t line = 0, found_line = 0;
        int r, found = -ENOENT;
        uint32_t end = 0;

        python_lines_init(&it, table, size, firstlineno);
        while ((r = python_lines_next(&it, &e)) > 0) {
                FUZZ_CHECK(e.start == end && e.end > e.start && e.end - e.start <= 8);
                FUZZ_CHECK((unsigned) e.form < _PYTHON_LINE_FORM_MAX);
                FUZZ_CHECK((e.line == -1) == (e.form == PYTHON_LINE_NONE));
                end = e.end;
                if (found == -ENOENT && offset >= e.start && offset < e.end) {
                        found = e.line < 0 ? -ENODATA : 0;
                        found_line = e.line;
                }
        }
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r < 0 && found == -ENOENT)
                found = -EBADMSG;
        r = python_lines_find(table, size, firstlineno, offset, &line);
        FUZZ_CHECK(r == found);
        FUZZ_CHECK(r != 0 || line == found_line);
}

static void check_name(const char *s) {
        size_t n = strlen(s);

        FUZZ_CHECK(n <= 4 * PYTHON_STRING_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint32_t versions[] = { 0x030b00f0, 0x030c00f0, 0x030d00f0 };
        struct python_layout layout;
        struct python_code code = {};
        enum python_code_reason reason = _PYTHON_CODE_REASON_MAX;
        struct image m;
        int32_t firstlineno, line;
        uint32_t offset, version;
        int r;

        if (size < 5)
                return 0;
        version = versions[data[0] % 3];
        firstlineno = (int32_t) (data[1] | data[2] << 8) - 1000;
        offset = data[3] | (uint32_t) data[4] << 8;
        data += 5;
        size -= 5;
        check_lines(data, size, firstlineno, offset);

        /* 3.13 takes its layout from the image's head, as from _PyRuntime. */
        r = python_layout_get(version, data, size, &layout);
        if (r < 0) {
                FUZZ_CHECK(r == -ENODATA || r == -EBADMSG || r == -EPROTONOSUPPORT);
                if (python_layout_get(0x030b00f0, NULL, 0, &layout) < 0)
                        abort();
        }
        m = (struct image) { data, size };
        r = python_code_read(&layout, image_read, &m, 0, IMAGE_BASE, &code, &reason);
        FUZZ_CHECK((unsigned) reason < _PYTHON_CODE_REASON_MAX);
        FUZZ_CHECK(strcmp(python_code_reason_name(reason), "unknown") != 0);
        if (r < 0) {
                FUZZ_CHECK(r == -EIO || r == -EBADMSG);
                FUZZ_CHECK(reason != PYTHON_CODE_OK);
                return 0;
        }
        FUZZ_CHECK(reason == PYTHON_CODE_OK);
        check_name(code.qualname);
        check_name(code.filename);
        FUZZ_CHECK(code.linetable_size <= PYTHON_LINETABLE_MAX);
        r = python_code_line(&code, offset, &line, &reason);
        FUZZ_CHECK(r == 0 ? reason == PYTHON_CODE_OK : reason != PYTHON_CODE_OK);
        python_code_done(&code);
        return 0;
}
