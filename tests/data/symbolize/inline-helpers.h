/* Small helpers for inline.c that GCC inlines at -O2: each call site leaves
 * a DW_TAG_inlined_subroutine whose call_file is inline.c while the code
 * comes from this header, so file:line must change between frames. */
#pragma once

#include <stddef.h>
#include <stdint.h>

static inline uint32_t helper_rotate(uint32_t x, unsigned k) {
        k &= 31;
        return k ? (x << k) | (x >> (32 - k)) : x;
}

static inline uint32_t helper_mix(uint32_t h, uint32_t v) {
        h ^= v * 0xcc9e2d51u;
        h = helper_rotate(h, 13);
        return h * 5 + 0xe6546b64u;
}

static inline uint32_t helper_hash_bytes(const unsigned char *p, size_t n) {
        uint32_t h = 0x9747b28cu;

        for (size_t i = 0; i < n; i++)
                h = helper_mix(h, p[i]);
        return h ^ (uint32_t) n;
}

static inline int helper_clamp(int v, int lo, int hi) {
        return v < lo ? lo : v > hi ? hi : v;
}
