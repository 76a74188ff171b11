/* The packed form of a block of samples: the samples of one process and
 * kind in one drain, or in a span of drains, as one blob of fixed-width
 * fields, for a compact store (issue 14). Pure logic, no SQLite: the store
 * writes blocks, queries and retention read them, tests feed it arrays.
 *
 * A block keeps, per field (stack id, tid, state, peer tid, cgroup id,
 * value), the smallest value of the block (its base) and the width in bits
 * (0-64) of the largest offset from it; a seventh field, the span offset,
 * says which drain of the block's span an entry belongs to (the drain of
 * the block's key plus the offset; base always 0, width 0 in a block of
 * one drain). Entry i starts at bit i times the sum of the widths, its
 * fields in that order, each little-endian from its first bit (bit k of
 * the blob is bit k % 8 of byte k / 8). Fixed widths per block, not
 * varints, so that plain SQL (substr over hex()) can read a block too
 * (docs/schema.md).
 *
 * Blocks written before schema 10 count their widths in whole bytes (4
 * bits each in `widths`, no SAMPLE_WIDTHS_BITS): the same layout with
 * every width a multiple of 8, read by the same code. */
#pragma once

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One aggregated sample as the store keeps it inside a block; the process
 * and kind are the block's, the drain the block's key plus span. */
struct sample_entry {
        int64_t stack_id;
        uint32_t tid;
        uint8_t state;
        uint32_t peer_tid;
        uint64_t cgroup_id;
        uint64_t value;
        uint8_t span;
};

/* The most drains one block spans, as offsets 0 .. SAMPLE_SPAN_MAX - 1 from
 * its key: a query selects the offsets it wants with a 64-bit mask. */
#define SAMPLE_SPAN_MAX 62

enum {
        SAMPLE_FIELD_STACK,
        SAMPLE_FIELD_TID,
        SAMPLE_FIELD_STATE,
        SAMPLE_FIELD_PEER,
        SAMPLE_FIELD_CGROUP,
        SAMPLE_FIELD_VALUE,
        SAMPLE_FIELD_SPAN,      /* the fields before it have a *_base column; its base is 0 */
        _SAMPLE_FIELD_MAX,
};

/* `widths` of a block whose widths are in bits: the seven field widths, 7
 * bits each (0-64), the stack's in the lowest bits, the span offset's in
 * bits 42-48, and this flag. Without it (schema 8 and 9 blocks), 4 bits
 * each in bytes (0-8), the span offset's in bits 24-27. */
#define SAMPLE_WIDTHS_BITS (UINT64_C(1) << 49)

/* A block: bases and widths as the row's columns keep them, the entries as
 * its blob. */
struct sample_block {
        uint64_t base[_SAMPLE_FIELD_MAX];
        uint64_t widths;
        size_t n;
        uint8_t *data;  /* n * entry bits, rounded up to bytes; allocated by sample_block_pack */
        size_t size;
        /* set by sample_block_check: each field's width and first bit in an
         * entry, in bits, whichever form `widths` has */
        uint8_t width[_SAMPLE_FIELD_MAX];
        uint16_t offset[_SAMPLE_FIELD_MAX];
        uint64_t mask[_SAMPLE_FIELD_MAX];       /* width's low bits set */
        size_t entry_bits;
};

/* Sorts entries (by stack, tid, state, peer, cgroup, span) and packs them into
 * *ret (its data malloc'd; free with free(ret->data)). n may be 0 (data
 * NULL). Returns 0 or -ENOMEM. */
int sample_block_pack(struct sample_entry *entries, size_t n, struct sample_block *ret);

/* Sorts entries as sample_block_pack does and sums the values of those
 * equal in every other field (span included) into one (retention's merges). Returns the
 * number of entries left, at the start of the array. */
size_t sample_entries_combine(struct sample_entry *entries, size_t n);

/* Bits per entry of a block with these widths (either form). */
size_t sample_block_entry_bits(uint64_t widths);

/* Field f's width in bits (either form). */
unsigned sample_block_width(uint64_t widths, int f);

/* Checks that a block read back from the store is whole: size is n entries
 * of its widths rounded up to bytes, each width at most 64 bits, the span
 * offset's at most 8; and sets where its fields are. Returns 0 or
 * -EBADMSG. */
int sample_block_check(struct sample_block *b);

/* Entry i (< b->n) of a checked block. */
void sample_block_get(const struct sample_block *b, size_t i, struct sample_entry *ret);

/* Field f of a checked block's entry that starts at bit `entry` (entry i
 * starts at i * b->entry_bits): what a loop over the entries reads. */
static inline uint64_t sample_block_field_at(const struct sample_block *b, size_t entry, int f) {
        unsigned w = b->width[f], s;
        size_t bit, at;
        uint64_t v = 0;

        if (w == 0)
                return b->base[f];
        bit = entry + b->offset[f];
        at = bit >> 3;
        s = bit & 7;
        if (__builtin_expect(at + 8 <= b->size, 1)) {
                memcpy(&v, b->data + at, sizeof(v));    /* one load */
                v = le64toh(v) >> s;
                if (__builtin_expect(s + w > 64, 0))    /* the field's last bits are in a ninth byte */
                        v |= (uint64_t) b->data[at + 8] << (64 - s);
        } else {
                /* within the blob's last 8 bytes, so no ninth byte */
                for (size_t k = at; k < b->size; k++)
                        v |= (uint64_t) b->data[k] << (8 * (k - at));
                v >>= s;
        }
        return b->base[f] + (v & b->mask[f]);
}

/* Field f of entry i (< b->n) of a checked block: what a query that needs
 * only stacks and values reads, without decoding the rest. */
static inline uint64_t sample_block_field(const struct sample_block *b, size_t i, int f) {
        return sample_block_field_at(b, i * b->entry_bits, f);
}
