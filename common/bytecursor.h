/* A bounded reader of untrusted bytes: DWARF line programs, CFI, and
 * whatever else profd reads from files and processes it did not write.
 *
 * One overflow rule for every reader: a value is read whole or not at all.
 * Reading past the end, a LEB128 of more than 10 bytes, or one whose value
 * does not fit in 64 bits (a ULEB128 with a one bit at 2^64 or above, an
 * SLEB128 whose bits from 2^63 up are not all copies of its sign) marks the
 * cursor bad. Ten bytes hold every 64-bit value, padding included (0x80
 * 0x80 ... 0x00, as linkers write fixed-width LEB128), and libdw reads no
 * more: a longer one would be read one way here and another there. A bad
 * cursor stays bad, reads 0 and moves no further, so a caller may read a
 * whole record and check `bad` once. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes a LEB128 may take (see above). */
#define BYTECURSOR_LEB128_MAX 10

struct bytecursor {
        const uint8_t *p, *end;
        bool bad;
};

static inline struct bytecursor bytecursor_make(const void *data, size_t size) {
        const uint8_t *p = data;

        return (struct bytecursor) { .p = p, .end = p + size };
}

/* Bytes left to read (0 once bad). */
static inline size_t bytecursor_left(const struct bytecursor *c) {
        return c->bad ? 0 : (size_t) (c->end - c->p);
}

/* The readers are inline: the CFI and line-table parsers read millions of
 * values a large file, and a call per value made the table builder a
 * fifth slower. */
static inline uint64_t bytecursor_fail_(struct bytecursor *c) {
        c->bad = true;
        return 0;
}

static inline uint64_t bytecursor_uleb(struct bytecursor *c) {
        uint64_t v = 0;

        if (c->bad)
                return 0;
        for (unsigned shift = 0; c->p < c->end; shift += 7) {
                uint8_t b = *c->p++, payload = b & 0x7f;

                if (shift >= 7 * BYTECURSOR_LEB128_MAX)
                        return bytecursor_fail_(c);
                /* bits of this byte that land at 2^64 and above */
                if (shift > 57 && (payload >> (64 - shift)))
                        return bytecursor_fail_(c);
                v |= (uint64_t) payload << shift;
                if (!(b & 0x80))
                        return v;
        }
        return bytecursor_fail_(c);
}

static inline int64_t bytecursor_sleb(struct bytecursor *c) {
        /* Bits from 2^63 up must all equal the sign, which only the last
         * byte tells: note whether a one and a zero were seen up there. */
        bool high_ones = false, high_zeros = false;
        uint64_t v = 0;

        if (c->bad)
                return 0;
        for (unsigned shift = 0; c->p < c->end; shift += 7) {
                uint8_t b = *c->p++, payload = b & 0x7f;

                if (shift >= 7 * BYTECURSOR_LEB128_MAX)
                        return (int64_t) bytecursor_fail_(c);
                v |= (uint64_t) payload << shift;
                for (unsigned bit = 0; bit < 7; bit++) {
                        if (shift + bit < 63)
                                continue;
                        if (payload & (1u << bit))
                                high_ones = true;
                        else
                                high_zeros = true;
                }
                if (!(b & 0x80)) {
                        bool negative = payload & 0x40;

                        if (negative ? high_zeros : high_ones)
                                return (int64_t) bytecursor_fail_(c);
                        if (negative && shift + 7 < 64)
                                v |= ~UINT64_C(0) << (shift + 7);
                        return (int64_t) v;
                }
        }
        return (int64_t) bytecursor_fail_(c);
}

/* n bytes (0 to 8), little-endian. */
static inline uint64_t bytecursor_fixed_le(struct bytecursor *c, size_t n) {
        uint64_t v = 0;

        if (c->bad || n > 8 || (size_t) (c->end - c->p) < n)
                return bytecursor_fail_(c);
        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) c->p[i] << (8 * i);
        c->p += n;
        return v;
}

/* Moves past n bytes; false (and bad) when fewer are left. */
static inline bool bytecursor_skip(struct bytecursor *c, size_t n) {
        if (c->bad || (size_t) (c->end - c->p) < n) {
                bytecursor_fail_(c);
                return false;
        }
        c->p += n;
        return true;
}
