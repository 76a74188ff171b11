/* Unsigned LEB128 varints as the timeline blobs pack them
 * (timeline-pack.c, offtime-pack.c): 7 bits a byte, least significant
 * first, the high bit set on every byte but the last, the shortest form
 * only. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing output buffer; a failed growth sticks (oom), checked once at
 * the end. Start zeroed; data is malloc'd. */
struct varint_out {
        uint8_t *data;
        size_t size, cap;
        bool oom;
};

void varint_put(struct varint_out *o, uint64_t v);

/* Reads one varint at *p (< end) and moves *p past it: -EBADMSG when
 * truncated, longer than 64 bits, or not in its shortest form, so that
 * one blob has one encoding. */
int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *ret);
