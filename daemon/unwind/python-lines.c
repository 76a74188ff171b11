/* Decoder of CPython 3.11+ location tables, on the bounded byte cursor. */
#include "python-lines.h"

#include <errno.h>

/* An entry's first byte: 1, a 4-bit code, then (length - 1) in 3 bits. */
#define ENTRY_MARK 0x80u

/* CPython's varints are not LEB128: six bits a byte, least significant
 * first, and bit 6 (0x40) says another byte follows; bit 7 stays clear
 * so that an entry's first byte can be told from them. The cursor's
 * overflow rule, for 32 bits (CPython reads them into an int): a value
 * read whole or not at all, and a value wider than 32 bits marks the
 * cursor bad, as does a byte with bit 7 set (the next entry's start). */
static uint32_t lines_varint(struct bytecursor *c) {
        uint64_t value = 0;

        for (unsigned shift = 0;; shift += 6) {
                uint8_t b = (uint8_t) bytecursor_fixed_le(c, 1);

                if (c->bad)
                        return 0;
                if (b & ENTRY_MARK || (shift >= 32 && (b & 0x3f)) || shift > 60) {
                        c->bad = true;
                        return 0;
                }
                value |= (uint64_t) (b & 0x3f) << shift;
                if (!(b & 0x40))
                        break;
        }
        if (value > UINT32_MAX) {
                c->bad = true;
                return 0;
        }
        return (uint32_t) value;
}

/* Zig-zag of its own: the low bit is the sign, the rest the magnitude. */
static int64_t lines_svarint(struct bytecursor *c) {
        uint32_t u = lines_varint(c);

        return u & 1 ? -(int64_t) (u >> 1) : (int64_t) (u >> 1);
}

/* The column bytes of short and one-line entries: plain bytes below 0x80. */
static void lines_skip_plain(struct bytecursor *c, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (bytecursor_fixed_le(c, 1) & ENTRY_MARK)
                        c->bad = true;
}

void python_lines_init(struct python_lines *it, const void *table, size_t size, int32_t firstlineno) {
        *it = (struct python_lines) {
                .c = bytecursor_make(table, size),
                .line = firstlineno,
        };
}

int python_lines_next(struct python_lines *it, struct python_line_entry *ret) {
        struct bytecursor *c = &it->c;
        uint8_t first;
        unsigned code;
        int64_t delta = 0;

        if (c->bad)
                return -EBADMSG;
        if (bytecursor_left(c) == 0)
                return 0;
        first = (uint8_t) bytecursor_fixed_le(c, 1);
        if (!(first & ENTRY_MARK))
                return -EBADMSG;
        code = (first >> 3) & 0xf;
        ret->start = it->next_start;
        ret->end = it->next_start + (first & 7) + 1;
        if (code <= 9) {
                ret->form = PYTHON_LINE_SHORT;
                lines_skip_plain(c, 1);
        } else if (code <= 12) {
                ret->form = PYTHON_LINE_ONE_LINE;
                delta = code - 10;
                lines_skip_plain(c, 2);
        } else if (code == 13) {
                ret->form = PYTHON_LINE_NO_COLUMN;
                delta = lines_svarint(c);
        } else if (code == 14) {
                ret->form = PYTHON_LINE_LONG;
                delta = lines_svarint(c);
                (void) lines_varint(c);        /* end line - start line */
                (void) lines_varint(c);        /* start column + 1 */
                (void) lines_varint(c);        /* end column + 1 */
        } else
                ret->form = PYTHON_LINE_NONE;  /* the line does not move */
        if (c->bad || ret->end < ret->start)
                return -EBADMSG;
        it->line += delta;
        /* No located instruction is on a negative line (a module's first
         * is on line 0), and -1 stands for "no location". */
        if (it->line < INT32_MIN || it->line > INT32_MAX || (ret->form != PYTHON_LINE_NONE && it->line < 0))
                return -EBADMSG;
        ret->line = ret->form == PYTHON_LINE_NONE ? -1 : (int32_t) it->line;
        it->next_start = ret->end;
        return 1;
}

int python_lines_find(const void *table, size_t size, int32_t firstlineno, uint32_t offset,
                      int32_t *ret_line) {
        struct python_lines it;
        struct python_line_entry e;
        int r;

        python_lines_init(&it, table, size, firstlineno);
        while ((r = python_lines_next(&it, &e)) > 0)
                if (offset >= e.start && offset < e.end) {
                        if (e.line < 0)
                                return -ENODATA;
                        *ret_line = e.line;
                        return 0;
                }
        return r < 0 ? r : -ENOENT;
}

const char *python_line_form_name(enum python_line_form form) {
        static const char *const names[_PYTHON_LINE_FORM_MAX] = {
                [PYTHON_LINE_SHORT] = "short",
                [PYTHON_LINE_ONE_LINE] = "one-line",
                [PYTHON_LINE_NO_COLUMN] = "no-column",
                [PYTHON_LINE_LONG] = "long",
                [PYTHON_LINE_NONE] = "no-location",
        };

        return (unsigned) form < _PYTHON_LINE_FORM_MAX ? names[form] : "unknown";
}
