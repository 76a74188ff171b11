/* The CPython code-object reader: bounded reads of untrusted process memory into names and lines. */
#include "python-code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytecursor.h"
#include "macro.h"
#include "python-lines.h"

/* The unicode object's state bits, the same from 3.11 to 3.13:
 * interned:2, kind:3, compact:1, ascii:1. */
#define STATE_KIND(s) (((s) >> 2) & 7u)
#define STATE_COMPACT(s) (((s) >> 5) & 1u)
#define STATE_ASCII(s) (((s) >> 6) & 1u)

/* The bytes of a header at `off`, `n` wide, read little-endian. */
static uint64_t field(const uint8_t *buf, uint32_t off, size_t n) {
        struct bytecursor c = bytecursor_make(buf + off, n);

        return bytecursor_fixed_le(&c, n);
}

static size_t utf8_put(char *out, uint32_t cp) {
        if (cp < 0x80) {
                out[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char) (0xc0 | cp >> 6);
                out[1] = (char) (0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char) (0xe0 | cp >> 12);
                out[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char) (0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | cp >> 18);
        out[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char) (0x80 | (cp & 0x3f));
        return 4;
}

/* Code points of `kind` bytes each to UTF-8; a NUL, a surrogate or a
 * value past U+10FFFF is not part of a name. */
static int string_to_utf8(const uint8_t *data, size_t length, unsigned kind, bool ascii, char **ret) {
        _cleanup_free_ char *s = malloc(length * 4 + 1);
        size_t n = 0;

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < length; i++) {
                struct bytecursor c = bytecursor_make(data + i * kind, kind);
                uint32_t cp = (uint32_t) bytecursor_fixed_le(&c, kind);

                if (cp == 0 || (ascii && cp >= 0x80) || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
                        return -EBADMSG;
                n += utf8_put(s + n, cp);
        }
        s[n] = '\0';
        *ret = TAKE_PTR(s);
        return 0;
}

/* The str object at `addr` as UTF-8. Compact strings only: names made by
 * the compiler and the importer always are. */
static int read_string(const struct python_layout *l, python_read_fn read, void *userdata, uint64_t addr,
                       char **ret, enum python_code_reason *ret_reason) {
        uint8_t head[128];
        _cleanup_free_ uint8_t *data = NULL;
        uint64_t length, state;
        unsigned kind;
        bool ascii;
        uint32_t data_off;
        int r;

        _Static_assert(sizeof head >= 72, "the largest compact header (3.11)");
        if (l->unicode_compact_data > sizeof head || l->unicode_state + 4 > sizeof head ||
            l->unicode_length + 8 > sizeof head) {
                *ret_reason = PYTHON_CODE_STRING_BAD;
                return -EBADMSG;
        }
        if (read(userdata, addr, head, l->unicode_compact_data) < 0) {
                *ret_reason = PYTHON_CODE_READ_STRING;
                return -EIO;
        }
        state = field(head, l->unicode_state, 4);
        length = field(head, l->unicode_length, 8);
        kind = STATE_KIND(state);
        ascii = STATE_ASCII(state);
        if (!STATE_COMPACT(state)) {
                *ret_reason = PYTHON_CODE_STRING_NOT_COMPACT;
                return -EBADMSG;
        }
        if (length > PYTHON_STRING_MAX) {      /* also a negative Py_ssize_t */
                *ret_reason = PYTHON_CODE_STRING_TOO_LONG;
                return -EBADMSG;
        }
        if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) {
                *ret_reason = PYTHON_CODE_STRING_BAD;
                return -EBADMSG;
        }
        data_off = ascii ? l->unicode_ascii_data : l->unicode_compact_data;
        data = malloc(length * kind + 1);
        if (!data)
                return -ENOMEM;
        if (length > 0 && read(userdata, addr + data_off, data, length * kind) < 0) {
                *ret_reason = PYTHON_CODE_READ_STRING;
                return -EIO;
        }
        r = string_to_utf8(data, length, kind, ascii, ret);
        if (r == -EBADMSG)
                *ret_reason = PYTHON_CODE_STRING_BAD;
        return r;
}

/* The bytes object at `addr`, its size capped. Returns 0 with *ret_reason
 * saying whether it was read; -ENOMEM. */
static int read_bytes(const struct python_layout *l, python_read_fn read, void *userdata, uint64_t addr,
                      uint8_t **ret, size_t *ret_size, enum python_code_reason *ret_reason) {
        uint8_t head[64];
        uint64_t size;
        _cleanup_free_ uint8_t *data = NULL;

        if (l->bytes_size + 8 > sizeof head) {
                *ret_reason = PYTHON_CODE_LINETABLE_BAD;
                return 0;
        }
        if (read(userdata, addr, head, l->bytes_size + 8) < 0) {
                *ret_reason = PYTHON_CODE_READ_LINETABLE;
                return 0;
        }
        size = field(head, l->bytes_size, 8);
        if (size > PYTHON_LINETABLE_MAX) {     /* also a negative Py_ssize_t */
                *ret_reason = PYTHON_CODE_LINETABLE_TOO_BIG;
                return 0;
        }
        data = malloc(size ? size : 1);
        if (!data)
                return -ENOMEM;
        if (size > 0 && read(userdata, addr + l->bytes_data, data, size) < 0) {
                *ret_reason = PYTHON_CODE_READ_LINETABLE;
                return 0;
        }
        *ret = TAKE_PTR(data);
        *ret_size = size;
        *ret_reason = PYTHON_CODE_OK;
        return 0;
}

/* The bytes of the code object's header that hold every field read. */
static size_t code_header_size(const struct python_layout *l) {
        size_t n = l->object_type + 8;

        n = MAX(n, (size_t) l->code_firstlineno + 4);
        n = MAX(n, (size_t) l->code_filename + 8);
        n = MAX(n, (size_t) l->code_qualname + 8);
        n = MAX(n, (size_t) l->code_linetable + 8);
        return n;
}

#define CODE_HEADER_MAX 1024

int python_code_read(const struct python_layout *layout, python_read_fn read, void *userdata,
                     uint64_t code_type, uint64_t addr, struct python_code *ret,
                     enum python_code_reason *ret_reason) {
        uint8_t head[CODE_HEADER_MAX];
        size_t head_size = code_header_size(layout);
        struct python_code code = {};
        int r;

        if (head_size > sizeof head) {
                *ret_reason = PYTHON_CODE_NOT_CODE;
                return -EBADMSG;
        }
        if (read(userdata, addr, head, head_size) < 0) {
                *ret_reason = PYTHON_CODE_READ_CODE;
                return -EIO;
        }
        if (code_type != 0 && field(head, layout->object_type, 8) != code_type) {
                *ret_reason = PYTHON_CODE_NOT_CODE;
                return -EBADMSG;
        }
        code.firstlineno = (int32_t) field(head, layout->code_firstlineno, 4);
        r = read_string(layout, read, userdata, field(head, layout->code_qualname, 8), &code.qualname, ret_reason);
        if (r >= 0)
                r = read_string(layout, read, userdata, field(head, layout->code_filename, 8), &code.filename,
                                ret_reason);
        if (r >= 0)
                r = read_bytes(layout, read, userdata, field(head, layout->code_linetable, 8), &code.linetable,
                               &code.linetable_size, &code.linetable_reason);
        if (r < 0) {
                python_code_done(&code);
                if (r == -ENOMEM)
                        *ret_reason = PYTHON_CODE_OK;
                return r;
        }
        *ret = code;
        *ret_reason = PYTHON_CODE_OK;
        return 0;
}

int python_code_line(const struct python_code *code, uint32_t offset, int32_t *ret_line,
                     enum python_code_reason *ret_reason) {
        int r;

        if (code->linetable_reason != PYTHON_CODE_OK) {
                *ret_reason = code->linetable_reason;
                return -ENOENT;
        }
        r = python_lines_find(code->linetable, code->linetable_size, code->firstlineno, offset, ret_line);
        *ret_reason = r == 0 ? PYTHON_CODE_OK
                : r == -ENODATA ? PYTHON_CODE_NO_LINE
                : r == -ENOENT ? PYTHON_CODE_OFFSET_PAST_TABLE
                : PYTHON_CODE_LINETABLE_BAD;
        return r == 0 ? 0 : -ENOENT;
}

void python_code_done(struct python_code *code) {
        free(code->qualname);
        free(code->filename);
        free(code->linetable);
        *code = (struct python_code) {};
}

const char *python_code_reason_name(enum python_code_reason reason) {
        static const char *const names[_PYTHON_CODE_REASON_MAX] = {
                [PYTHON_CODE_OK] = "ok",
                [PYTHON_CODE_READ_CODE] = "read-code",
                [PYTHON_CODE_NOT_CODE] = "not-code",
                [PYTHON_CODE_READ_STRING] = "read-string",
                [PYTHON_CODE_STRING_NOT_COMPACT] = "string-not-compact",
                [PYTHON_CODE_STRING_TOO_LONG] = "string-too-long",
                [PYTHON_CODE_STRING_BAD] = "string-bad",
                [PYTHON_CODE_READ_LINETABLE] = "read-linetable",
                [PYTHON_CODE_LINETABLE_TOO_BIG] = "linetable-too-big",
                [PYTHON_CODE_LINETABLE_BAD] = "linetable-bad",
                [PYTHON_CODE_NO_LINE] = "no-line",
                [PYTHON_CODE_OFFSET_PAST_TABLE] = "offset-past-table",
        };

        return (unsigned) reason < _PYTHON_CODE_REASON_MAX ? names[reason] : "unknown";
}
