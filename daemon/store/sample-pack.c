/* Packs and unpacks blocks of samples (sample-pack.h): fixed-width fields
 * per block, sized in bits by the block's own range of each field. */
#include "sample-pack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned sample_block_width(uint64_t widths, int f) {
        if (widths & SAMPLE_WIDTHS_BITS)
                return (unsigned) (widths >> (7 * f)) & 0x7f;
        return 8 * ((unsigned) (widths >> (4 * f)) & 0xf);
}

size_t sample_block_entry_bits(uint64_t widths) {
        size_t w = 0;

        for (int f = 0; f < _SAMPLE_FIELD_MAX; f++)
                w += sample_block_width(widths, f);
        return w;
}

static uint64_t entry_field(const struct sample_entry *e, int f) {
        switch (f) {
        case SAMPLE_FIELD_STACK:
                return (uint64_t) e->stack_id;
        case SAMPLE_FIELD_TID:
                return e->tid;
        case SAMPLE_FIELD_STATE:
                return e->state;
        case SAMPLE_FIELD_PEER:
                return e->peer_tid;
        case SAMPLE_FIELD_CGROUP:
                return e->cgroup_id;
        case SAMPLE_FIELD_SPAN:
                return e->span;
        default:
                return e->value;
        }
}

static int entry_cmp(const void *a, const void *b) {
        const struct sample_entry *x = a, *y = b;

        /* stacks first: a query sums per stack, and neighbours compress */
        for (int f = 0; f < SAMPLE_FIELD_VALUE; f++) {
                uint64_t u = entry_field(x, f), v = entry_field(y, f);
                if (u != v)
                        return u < v ? -1 : 1;
        }
        return x->span < y->span ? -1 : x->span > y->span;
}

size_t sample_entries_combine(struct sample_entry *entries, size_t n) {
        size_t out = 0;

        if (n > 1)
                qsort(entries, n, sizeof(*entries), entry_cmp);
        for (size_t i = 0; i < n; i++) {
                if (out > 0 && entry_cmp(&entries[out - 1], &entries[i]) == 0)
                        entries[out - 1].value += entries[i].value;
                else
                        entries[out++] = entries[i];
        }
        return out;
}

/* Bits needed for v: 0 for 0. */
static unsigned bits_for(uint64_t v) {
        return v ? 64 - (unsigned) __builtin_clzll(v) : 0;
}

/* Writes the w low bits of v at bit `bit` of a zeroed buffer. */
static void put_bits(uint8_t *data, size_t bit, unsigned w, uint64_t v) {
        while (w > 0) {
                unsigned s = bit & 7, take = 8 - s < w ? 8 - s : w;

                data[bit >> 3] |= (uint8_t) ((v & ((1u << take) - 1)) << s);
                v >>= take;
                bit += take;
                w -= take;
        }
}

int sample_block_pack(struct sample_entry *entries, size_t n, struct sample_block *ret) {
        int r;

        struct sample_block b = { .n = n, .widths = SAMPLE_WIDTHS_BITS };
        uint64_t max[_SAMPLE_FIELD_MAX] = {};
        size_t bit = 0;

        if (n > 1)
                qsort(entries, n, sizeof(*entries), entry_cmp);
        for (int f = 0; f < _SAMPLE_FIELD_MAX; f++) {
                b.base[f] = n ? entry_field(&entries[0], f) : 0;
                max[f] = b.base[f];
                for (size_t i = 1; i < n; i++) {
                        uint64_t v = entry_field(&entries[i], f);
                        if (v < b.base[f])
                                b.base[f] = v;
                        if (v > max[f])
                                max[f] = v;
                }
                /* offsets from the block's key, which the row keeps */
                if (f == SAMPLE_FIELD_SPAN)
                        b.base[f] = 0;
                b.widths |= (uint64_t) bits_for(max[f] - b.base[f]) << (7 * f);
        }
        b.size = (n * sample_block_entry_bits(b.widths) + 7) / 8;
        if (b.size > 0) {
                b.data = calloc(1, b.size);
                if (!b.data)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                for (int f = 0; f < _SAMPLE_FIELD_MAX; f++) {
                        unsigned w = sample_block_width(b.widths, f);

                        put_bits(b.data, bit, w, entry_field(&entries[i], f) - b.base[f]);
                        bit += w;
                }
        r = sample_block_check(&b);
        if (r < 0) {
                free(b.data);
                return r;
        }
        *ret = b;
        return 0;
}

int sample_block_check(struct sample_block *b) {
        size_t at = 0;

        if (b->widths & SAMPLE_WIDTHS_BITS ? b->widths >> (7 * _SAMPLE_FIELD_MAX) != 1 : b->widths >> (4 * _SAMPLE_FIELD_MAX) != 0)
                return -EBADMSG;
        for (int f = 0; f < _SAMPLE_FIELD_MAX; f++) {
                unsigned w = sample_block_width(b->widths, f);

                if (w > 64)
                        return -EBADMSG;
                b->width[f] = (uint8_t) w;
                b->offset[f] = (uint16_t) at;
                b->mask[f] = w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
                at += w;
        }
        /* span offsets are below SAMPLE_SPAN_MAX: one byte at most */
        if (b->width[SAMPLE_FIELD_SPAN] > 8)
                return -EBADMSG;
        b->entry_bits = at;
        /* n fits the blob's bits: no overflow, as at <= 7 * 64 */
        if (b->n > SIZE_MAX / 512 || b->size != (b->n * at + 7) / 8)
                return -EBADMSG;
        return 0;
}

void sample_block_get(const struct sample_block *b, size_t i, struct sample_entry *ret) {
        uint64_t v[_SAMPLE_FIELD_MAX];
        size_t at = i * b->entry_bits;

        for (int f = 0; f < _SAMPLE_FIELD_MAX; f++)
                v[f] = sample_block_field_at(b, at, f);
        *ret = (struct sample_entry) {
                .stack_id = (int64_t) v[SAMPLE_FIELD_STACK],
                .tid = (uint32_t) v[SAMPLE_FIELD_TID],
                .state = (uint8_t) v[SAMPLE_FIELD_STATE],
                .peer_tid = (uint32_t) v[SAMPLE_FIELD_PEER],
                .cgroup_id = v[SAMPLE_FIELD_CGROUP],
                .value = v[SAMPLE_FIELD_VALUE],
                .span = (uint8_t) v[SAMPLE_FIELD_SPAN],
        };
}
