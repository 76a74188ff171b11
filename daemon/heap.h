/* The daemon's malloc heap: few arenas, and freed pages given back to the
 * kernel after large transient work, counted for status. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* At start, before any thread: at most HEAP_ARENAS malloc arenas, and a
 * fixed threshold from which blocks are mapped on their own (so given back
 * when freed), unless the environment sets glibc's own; and glibc's malloc
 * set up in this thread, whatever malloc replaced it. */
void heap_setup(void);

/* malloc_trim(0): gives back the pages of free chunks in every thread's
 * arena, not only the free end of each heap (all glibc returns by itself).
 * A few milliseconds on profd's heap: call it after work that freed a lot,
 * not per allocation. Any thread. */
void heap_trim(void);

/* heap_trim after a burst of work (a batch of processes recorded, of
 * tables built), unless any thread trimmed within the last
 * HEAP_IDLE_TRIM_GAP_MS: each trim madvises every free chunk of every
 * arena again, given back before or not, and on a build host such bursts
 * end several times a second. Returns whether it trimmed: if not, the
 * caller's work is still untrimmed (the drain's trim takes it at the
 * latest). Any thread. */
#define HEAP_IDLE_TRIM_GAP_MS 2000
bool heap_trim_idle(void);

/* What malloc holds now, in all arenas (mallinfo2): bytes in use (blocks
 * from the arenas and blocks mapped of their own) and free bytes kept in
 * the arenas. A few microseconds: for status, not hot paths. */
void heap_usage(uint64_t *ret_in_use, uint64_t *ret_free);

/* Trims since start and the time they took. */
void heap_trim_stats(uint64_t *ret_trims, uint64_t *ret_ns);
