/* Blocks of samples in the store (schema/0008): writing a block from
 * entries, reading one from a row, and the per-stack count of blocks
 * (stack_refs) that tells retention when a stack is no longer used. Shared
 * by the write path, the query path, the outbox, retention and the
 * migration of older stores. Not for use outside daemon/store/. */
#pragma once

#include <stdbool.h>
#include <sqlite3.h>
#include <stdint.h>

#include "db.h"
#include "hashmap.h"
#include "sample-pack.h"

/* The columns sample_block_from_row reads, in its order, for a SELECT
 * with sample_blocks as `b`. */
#define SAMPLE_BLOCK_COLUMNS \
        "b.n, b.widths, b.stack_base, b.tid_base, b.state_base, b.peer_base, b.cgroup_base, b.value_base, b.entries"
#define SAMPLE_BLOCK_N_COLUMNS 9
/* The columns sample_block_from_row_stacks reads: for a reader of stacks
 * and values alone. Each column not read saves SQLite decoding it and an
 * API call, per block: a day is millions of blocks. */
#define SAMPLE_BLOCK_COLUMNS_STACKS "b.n, b.widths, b.stack_base, b.value_base, b.entries"

/* The block of the SAMPLE_BLOCK_COLUMNS starting at column col of st's
 * current row; its data points into SQLite's copy (valid until the next
 * step). Returns 0, or -EBADMSG for a block that does not add up. */
int sample_block_from_row(sqlite3_stmt *st, int col, struct sample_block *ret);

/* The same from the SAMPLE_BLOCK_COLUMNS_STACKS: only the stack and value
 * fields are right (the other bases are 0). */
int sample_block_from_row_stacks(sqlite3_stmt *st, int col, struct sample_block *ret);

/* The insert of one block, by sample_blocks_insert. */
#define SAMPLE_BLOCKS_INSERT_SQL                                                                   \
        "INSERT INTO sample_blocks (drain_id, kind, process_id, n, widths, stack_base, tid_base, " \
        "state_base, peer_base, cgroup_base, value_base, entries) "                                 \
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"

/* Packs entries (sorted in place) and inserts them as the block (drain,
 * kind, process); counts 1 per distinct stack in refs and 1 for the
 * process in process_refs (stack_refs_add; either may be NULL). n == 0
 * writes nothing. *st is the caller's SAMPLE_BLOCKS_INSERT_SQL on d,
 * prepared here when NULL and left reset for the next block: a writer of
 * many blocks compiles it once (compiling it for each block took two
 * thirds of an insert); the caller finalizes it. Returns 0 or a negative
 * errno, logged. */
int sample_blocks_insert(const struct db *d, sqlite3_stmt **st, int64_t drain, int kind, int64_t process,
                         struct sample_entry *e, size_t n, hashmap *refs, hashmap *process_refs);

/* Adds delta blocks to the count of stack (or process) in refs (a
 * hashmap_new_u64 of intptr_t counts). Returns 0 or -ENOMEM. */
int stack_refs_add(hashmap *refs, int64_t stack, int64_t delta);

/* Adds 1 (once per stack) for every distinct stack of block b to refs with
 * sign delta (+1 or -1). Returns 0 or -ENOMEM. */
int stack_refs_add_block(hashmap *refs, const struct sample_block *b, int64_t delta);

/* Applies the counts in refs to the stack_refs table; with gc_candidates,
 * stacks whose count fell to 0 or below are added to temp.gc_stacks.
 * Returns 0 or a negative errno, logged. */
int stack_refs_apply(const struct db *d, hashmap *refs, bool gc_candidates);

/* The same for processes: process_refs, temp.gc_processes. */
int process_refs_apply(const struct db *d, hashmap *refs, bool gc_candidates);
