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

uint64_t bytecursor_uleb(struct bytecursor *c);
int64_t bytecursor_sleb(struct bytecursor *c);
/* n bytes (0 to 8), little-endian. */
uint64_t bytecursor_fixed_le(struct bytecursor *c, size_t n);
/* Moves past n bytes; false (and bad) when fewer are left. */
bool bytecursor_skip(struct bytecursor *c, size_t n);
