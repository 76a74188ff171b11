/* The bounded byte reader (bytecursor.h). */
#include "bytecursor.h"

static uint64_t fail(struct bytecursor *c) {
        c->bad = true;
        return 0;
}

uint64_t bytecursor_uleb(struct bytecursor *c) {
        uint64_t v = 0;

        if (c->bad)
                return 0;
        for (unsigned shift = 0; c->p < c->end; shift += 7) {
                uint8_t b = *c->p++, payload = b & 0x7f;

                if (shift >= 7 * BYTECURSOR_LEB128_MAX)
                        return fail(c);
                /* bits of this byte that land at 2^64 and above */
                if (shift > 57 && (payload >> (64 - shift)))
                        return fail(c);
                v |= (uint64_t) payload << shift;
                if (!(b & 0x80))
                        return v;
        }
        return fail(c);
}

int64_t bytecursor_sleb(struct bytecursor *c) {
        /* Bits from 2^63 up must all equal the sign, which only the last
         * byte tells: note whether a one and a zero were seen up there. */
        bool high_ones = false, high_zeros = false;
        uint64_t v = 0;

        if (c->bad)
                return 0;
        for (unsigned shift = 0; c->p < c->end; shift += 7) {
                uint8_t b = *c->p++, payload = b & 0x7f;

                if (shift >= 7 * BYTECURSOR_LEB128_MAX)
                        return (int64_t) fail(c);
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
                                return (int64_t) fail(c);
                        if (negative && shift + 7 < 64)
                                v |= ~UINT64_C(0) << (shift + 7);
                        return (int64_t) v;
                }
        }
        return (int64_t) fail(c);
}

uint64_t bytecursor_fixed_le(struct bytecursor *c, size_t n) {
        uint64_t v = 0;

        if (c->bad || n > 8 || (size_t) (c->end - c->p) < n)
                return fail(c);
        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) c->p[i] << (8 * i);
        c->p += n;
        return v;
}

bool bytecursor_skip(struct bytecursor *c, size_t n) {
        if (c->bad || (size_t) (c->end - c->p) < n) {
                fail(c);
                return false;
        }
        c->p += n;
        return true;
}
