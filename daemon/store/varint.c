/* Unsigned LEB128 varints (see varint.h). */
#include "varint.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"

void varint_put(struct varint_out *o, uint64_t v) {
        if (o->oom)
                return;
        if (o->cap - o->size < 10) {
                size_t cap = MAX(o->cap * 2, (size_t) 64);
                uint8_t *d = realloc(o->data, cap);

                if (!d) {
                        o->oom = true;
                        return;
                }
                o->data = d;
                o->cap = cap;
        }
        while (v >= 0x80) {
                o->data[o->size++] = (uint8_t) (v | 0x80);
                v >>= 7;
        }
        o->data[o->size++] = (uint8_t) v;
}

int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0;; shift += 7) {
                uint8_t b;

                if (*p >= end || shift > 63)
                        return -EBADMSG;
                b = *(*p)++;
                if (shift == 63 && b > 1)
                        return -EBADMSG; /* bits past the 64th */
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        if (b == 0 && shift > 0)
                                return -EBADMSG; /* overlong */
                        *ret = v;
                        return 0;
                }
        }
}
