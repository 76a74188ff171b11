/* Which unwind tables of live processes give their rows to a table that a
 * sample wants and that found no room: the least recently sampled first,
 * never one sampled within the hot window nor one pinned, never more than
 * the one window of rows needs, and none at all when no choice makes room.
 * Pure: the caller passes the allocator, the tables and the clock, and
 * evicts what it is told. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rangealloc.h"

/* One table that holds rows in the allocator. */
struct table_lru_entry {
        uint32_t off, slots;   /* its slice of rows; slots 0: no table (ignored) */
        uint64_t sampled_ns;   /* when a sample last went through it (or it was built); 0: never */
        bool pinned;           /* wanted now whatever its time (the wanting process's own tables) */
};

/* Chooses the tables to evict so that need contiguous rows can be had in
 * a at now_ns. A table is a candidate unless pinned or sampled within
 * hot_ns before now_ns (or after now_ns: a clock that went back). Of the
 * candidates, the fewest least recently sampled ones (a prefix of their
 * order by sampled_ns, then slots, then off) that make room at all are
 * used, and of those only the ones in the window rangealloc_find_room
 * picks with the fewest of their rows: each is then released by the
 * caller, and room for
 * need rows exists once their grace has passed (the window starts at
 * *ret_off). Free rows alone count first: then nothing is evicted.
 * Sets ret_evict[i] for each table chosen (false for the others).
 * Returns 1 and *ret_off; 0 when nothing can make room (need larger than
 * the whole capacity, or every window crosses a table that is hot,
 * pinned, or rows still in grace), nothing chosen; -EINVAL for need 0;
 * -ENOMEM. */
int table_lru_choose(const rangealloc *a, uint32_t need, const struct table_lru_entry *tables, size_t n,
                     uint64_t now_ns, uint64_t hot_ns, bool *ret_evict, uint32_t *ret_off);
