/* The packed form of a block of samples: the samples of one process and
 * kind in one drain, or in a span of drains, as one blob of fixed-width
 * fields, for a compact store (issue 14). Pure logic, no SQLite: the store writes blocks, queries and
 * retention read them, tests feed it arrays.
 *
 * A block keeps, per field (stack id, tid, state, peer tid, cgroup id,
 * value), the smallest value of the block (its base) and the width in
 * bytes (0-8) of the largest offset from it; a seventh field, the span
 * offset, says which drain of the block's span an entry belongs to (the
 * drain of the block's key plus the offset; base always 0, width 0 in a
 * block of one drain); entry i is then
 * sample_block_entry_width() bytes at offset i times that, each field
 * little-endian. Fixed widths per block, not varints, so that plain SQL
 * (substr over hex()) can read a block too (docs/schema.md). */
#pragma once

#include <stddef.h>
#include <stdint.h>

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

/* A block: bases and widths as the row's columns keep them, the entries as
 * its blob. `widths` packs the seven field widths, 4 bits each, the stack's
 * in the lowest bits, the span offset's in bits 24-27. */
struct sample_block {
        uint64_t base[_SAMPLE_FIELD_MAX];
        uint32_t widths;
        size_t n;
        uint8_t *data;  /* n * entry width bytes; malloc'd by sample_block_pack */
        size_t size;
        /* set by sample_block_check: where each field is in an entry */
        uint8_t width[_SAMPLE_FIELD_MAX], offset[_SAMPLE_FIELD_MAX];
        size_t entry_size;
};

/* Sorts entries (by stack, tid, state, peer, cgroup, span) and packs them into
 * *ret (its data malloc'd; free with free(ret->data)). n may be 0 (data
 * NULL). Returns 0 or -ENOMEM. */
int sample_block_pack(struct sample_entry *entries, size_t n, struct sample_block *ret);

/* Sorts entries as sample_block_pack does and sums the values of those
 * equal in every other field (span included) into one (retention's merges). Returns the
 * number of entries left, at the start of the array. */
size_t sample_entries_combine(struct sample_entry *entries, size_t n);

/* Bytes per entry of a block with these widths. */
size_t sample_block_entry_width(uint32_t widths);

/* Checks that a block read back from the store is whole: size is n entries
 * of its widths, each width at most 8; and sets where its fields are.
 * Returns 0 or -EBADMSG. */
int sample_block_check(struct sample_block *b);

/* Entry i (< b->n) of a checked block. */
void sample_block_get(const struct sample_block *b, size_t i, struct sample_entry *ret);

/* Field f of entry i (< b->n) of a checked block: what a query that needs
 * only stacks and values reads, without decoding the rest. */
static inline uint64_t sample_block_field(const struct sample_block *b, size_t i, int f) {
        const uint8_t *p = b->data + i * b->entry_size + b->offset[f];
        uint64_t v = 0;

        for (unsigned k = 0; k < b->width[f]; k++)
                v |= (uint64_t) p[k] << (8 * k);
        return b->base[f] + v;
}
