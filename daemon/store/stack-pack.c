/* Stacks' frames packed and unpacked (see stack-pack.h). */
#include "stack-pack.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Zigzag: small differences of either sign become small unsigned numbers. */
static uint64_t zigzag(int64_t v) {
        return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static int64_t unzigzag(uint64_t z) {
        return (int64_t) (z >> 1) ^ -(int64_t) (z & 1);
}

int stack_pack(const int64_t *ids, size_t n, struct varint_out *o) {
        int64_t prev = 0;

        for (size_t i = 0; i < n; i++) {
                if (ids[i] < 1)
                        return -EINVAL;
                /* both in [0, 2^63): the difference cannot overflow */
                varint_put(o, zigzag(ids[i] - prev));
                prev = ids[i];
        }
        varint_put(o, STACK_PACK_MARK);
        return o->oom ? -ENOMEM : 0;
}

static int reserve(int64_t **buf, size_t *cap, size_t want) {
        int64_t *nb;
        size_t ncap;

        if (want <= *cap)
                return 0;
        ncap = MAX(want, MAX(*cap * 2, (size_t) 32));
        nb = realloc(*buf, ncap * sizeof(*nb));
        if (!nb)
                return -ENOMEM;
        *buf = nb;
        *cap = ncap;
        return 0;
}

int stack_unpack(const void *blob, size_t size, int64_t **buf, size_t *cap, size_t *ret_n) {
        const uint8_t *p = blob, *end;
        int64_t prev = 0;
        size_t n = 0;
        int r;

        if (size == 0) {
                /* no frames, in the form before schema 15 */
                *ret_n = 0;
                return 0;
        }
        if (p[size - 1] == 0) {
                /* before schema 15: little-endian 64-bit ids */
                if (size % sizeof(int64_t) != 0)
                        return -EBADMSG;
                n = size / sizeof(int64_t);
                r = reserve(buf, cap, n);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        uint64_t v;

                        memcpy(&v, p + i * sizeof(v), sizeof(v));
                        (*buf)[i] = (int64_t) le64toh(v);
                        if ((*buf)[i] < 1)
                                return -EBADMSG;
                }
                *ret_n = n;
                return 0;
        }
        if (p[size - 1] != STACK_PACK_MARK)
                return -EBADMSG;
        end = p + size - 1;
        /* each varint is at least a byte: size - 1 bounds the ids */
        r = reserve(buf, cap, size - 1);
        if (r < 0)
                return r;
        while (p < end) {
                uint64_t z;
                int64_t id;

                r = varint_get(&p, end, &z);
                if (r < 0)
                        return r;
                id = (int64_t) ((uint64_t) prev + (uint64_t) unzigzag(z));
                if (id < 1)
                        return -EBADMSG;
                (*buf)[n++] = prev = id;
        }
        *ret_n = n;
        return 0;
}
