/* libFuzzer target: the bounded byte reader every parser of untrusted
 * bytes goes through. A value read is checked against a reference decoder
 * of arbitrary width (bytes kept as a bit string), so the one overflow rule
 * holds exactly: accepted when the value fits in ten bytes, refused when it
 * does not. */
#include "bytecursor.h"
#include "fuzz.h"

/* The LEB128 at p, up to end: its bytes' count (0: not terminated), and
 * whether the value fits an unsigned or a signed 64-bit integer. */
static size_t reference(const uint8_t *p, const uint8_t *end, bool *fits_u, bool *fits_s, uint64_t *low) {
        bool ones = false, zeros = false, high_u = false;
        size_t n = 0;

        *low = 0;
        for (unsigned shift = 0; p + n < end; shift += 7) {
                uint8_t b = p[n++];

                for (unsigned bit = 0; bit < 7; bit++) {
                        unsigned pos = shift + bit;
                        bool one = b & (1u << bit);

                        if (pos < 64 && one)
                                *low |= UINT64_C(1) << pos;
                        if (pos >= 64 && one)
                                high_u = true;
                        if (pos >= 63)
                                *(one ? &ones : &zeros) = true;
                }
                if (!(b & 0x80)) {
                        bool negative = b & 0x40, short_enough = n <= BYTECURSOR_LEB128_MAX;

                        *fits_u = short_enough && !high_u;
                        *fits_s = short_enough && (negative ? !zeros : !ones);
                        if (negative && shift + 7 < 64)
                                *low |= ~UINT64_C(0) << (shift + 7);
                        return n;
                }
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct bytecursor u = bytecursor_make(data, size), s = u;

        while (!u.bad && bytecursor_left(&u)) {
                const uint8_t *at = u.p;
                bool fits_u = false, fits_s = false;
                uint64_t low, v;
                size_t n = reference(at, u.end, &fits_u, &fits_s, &low);

                v = bytecursor_uleb(&u);
                if (n && fits_u) {
                        FUZZ_CHECK(!u.bad && u.p == at + n);
                        /* the unsigned value is the low bits before sign extension */
                        FUZZ_CHECK(v == (n * 7 < 64 ? low & ((UINT64_C(1) << (n * 7)) - 1) : low));
                } else {
                        FUZZ_CHECK(u.bad && v == 0);
                }
        }
        while (!s.bad && bytecursor_left(&s)) {
                const uint8_t *at = s.p;
                bool fits_u = false, fits_s = false;
                uint64_t low;
                size_t n = reference(at, s.end, &fits_u, &fits_s, &low);
                int64_t v = bytecursor_sleb(&s);

                if (n && fits_s)
                        FUZZ_CHECK(!s.bad && s.p == at + n && (uint64_t) v == low);
                else
                        FUZZ_CHECK(s.bad && v == 0);
        }
        /* fixed reads: never past the end, and little-endian */
        {
                struct bytecursor f = bytecursor_make(data, size);
                size_t width = size ? data[0] % 10 : 0;
                uint64_t v = bytecursor_fixed_le(&f, width);

                if (width <= 8 && width <= size) {
                        FUZZ_CHECK(!f.bad && f.p == data + width);
                        for (size_t i = 0; i < width; i++)
                                FUZZ_CHECK(((v >> (8 * i)) & 0xff) == data[i]);
                } else {
                        FUZZ_CHECK(f.bad && v == 0);
                }
        }
        return 0;
}
