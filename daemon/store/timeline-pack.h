/* The packed form of a drain's timeline (issue 44): when each logged
 * on-CPU sample was taken, and which of the drain's stored samples (process,
 * stack, thread) it was. Pure logic, no SQLite: the writer packs a block
 * per drain, queries and tests unpack it, the fuzzer feeds it hostile bytes.
 *
 * A block is a sequence of unsigned LEB128 varints (7 bits a byte, least
 * significant first, the high bit set on every byte but the last; the
 * shortest form only):
 *   n_keys n_samples span_us
 *   n_keys times:    process_delta stack tid
 *   n_samples times: time_delta key
 * Keys are sorted by (process id, stack id, tid); process_delta is the
 * process id less the previous key's (the first: less 0); stack is the
 * stack id less the previous key's when the process is the same, else the
 * stack id itself. Samples are sorted by (time, key); time_delta is the
 * time in µs since the block's start (its row's start_ns) less the
 * previous sample's, key an index into the keys. Every time is at most
 * span_us. Varints, not sample-pack.c's fixed widths: times and key
 * indexes are small and uneven, and no SQL reads a timeline but ours. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Which stored sample a timeline's sample is: the row (drain, process,
 * kind cpu) of sample_blocks and, in its block, the entry of this stack
 * and thread. */
struct timeline_key {
        int64_t process_id;     /* processes.id, >= 0 */
        int64_t stack_id;       /* stacks.id, >= 0 */
        uint32_t tid;
};

struct timeline_sample {
        uint64_t time_us;       /* since the block's start */
        uint32_t key;           /* index into the block's keys */
};

/* A block unpacked: keys and samples in the block's order (above). */
struct timeline_block {
        struct timeline_key *keys;
        size_t n_keys;
        struct timeline_sample *samples;
        size_t n_samples;
        uint64_t span_us;       /* the last sample's time (0 with none) */
};

/* Packs keys and samples (neither changed; keys need not be sorted nor
 * all used) into *ret_data (malloc'd, *ret_size bytes). Returns 0,
 * -EINVAL for a sample whose key is out of range or a negative id, or
 * -ENOMEM. */
int timeline_pack(const struct timeline_key *keys, size_t n_keys, const struct timeline_sample *samples,
                  size_t n_samples, uint8_t **ret_data, size_t *ret_size);

/* Unpacks a block read from the store, trusting nothing: a varint longer
 * than its shortest form or than 64 bits, a count the bytes left cannot
 * hold, an id past INT64_MAX or a tid past UINT32_MAX, a key index out of
 * range, a time past span_us or one that wraps, a last time that is not
 * span_us, bytes left over at the end: each is -EBADMSG. Else 0 and *ret
 * (free with timeline_block_done), or -ENOMEM. */
int timeline_unpack(const uint8_t *data, size_t size, struct timeline_block *ret);

void timeline_block_done(struct timeline_block *b);
