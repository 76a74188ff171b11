/* The packed form of a drain's off-CPU timeline (issue 44): when each
 * logged off-CPU block began, how long it lasted, and which of the drain's
 * stored off-CPU samples (process, stack, thread, state) it was. Pure
 * logic, no SQLite: the writer packs a block per drain, queries and tests
 * unpack it, the fuzzer feeds it hostile bytes.
 *
 * A blob is a sequence of unsigned LEB128 varints, the shortest form only
 * (as timeline-pack.h):
 *   n_keys n_blocks span_us
 *   n_keys times:   process_delta stack tid state
 *   n_blocks times: start_delta duration key
 * Keys are sorted by (process id, stack id, tid, state), delta-coded as in
 * timeline-pack.h. Blocks are sorted by (start, duration, key); start_delta
 * is the block's start in µs since the row's start_ns less the previous
 * block's start, duration its length in µs, key an index into the keys.
 * span_us is the last block's start. A block's start may lie before its
 * drain's start (a thread blocked for minutes): the row's start_ns is the
 * earliest start, not the drain's. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Which stored off-CPU sample a block is: the row (drain, process, kind
 * offcpu) of sample_blocks and, in it, the entry of this stack, thread and
 * state. */
struct offtime_key {
        int64_t process_id;     /* processes.id, >= 0 */
        int64_t stack_id;       /* stacks.id, >= 0 */
        uint32_t tid;
        uint8_t state;          /* enum profd_state */
};

struct offtime_block {
        uint64_t start_us;      /* since the row's start */
        uint64_t duration_us;
        uint32_t key;           /* index into the keys */
};

/* A blob unpacked: keys and blocks in the blob's order (above). */
struct offtime_set {
        struct offtime_key *keys;
        size_t n_keys;
        struct offtime_block *blocks;
        size_t n_blocks;
        uint64_t span_us;       /* the last block's start (0 with none) */
};

/* Packs keys and blocks (neither changed; keys need not be sorted nor all
 * used) into *ret_data (malloc'd, *ret_size bytes). Returns 0, -EINVAL for
 * a block whose key is out of range, a negative id or a state past 255, or
 * -ENOMEM. */
int offtime_pack(const struct offtime_key *keys, size_t n_keys, const struct offtime_block *blocks,
                 size_t n_blocks, uint8_t **ret_data, size_t *ret_size);

/* Unpacks a blob read from the store, trusting nothing: a varint longer
 * than its shortest form or than 64 bits, a count the bytes left cannot
 * hold, an id past INT64_MAX, a tid past UINT32_MAX, a state past 255, a
 * key index out of range, a start past span_us, a start + duration that
 * wraps, a last start that is not span_us, bytes left over: each is
 * -EBADMSG. Else 0 and *ret (free with offtime_set_done), or -ENOMEM. */
int offtime_unpack(const uint8_t *data, size_t size, struct offtime_set *ret);

void offtime_set_done(struct offtime_set *b);

/* The part of [start, start + duration) inside [from, to] (to inclusive,
 * as queries' windows are: the window's last ns counts), in ns: what a
 * window counts of a block that crosses its edge. *ret_at: where that part
 * begins. 0 (and *ret_at untouched) when they do not meet. */
uint64_t offtime_clip(uint64_t start, uint64_t duration, uint64_t from, uint64_t to, uint64_t *ret_at);
