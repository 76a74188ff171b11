/* A range allocator over [0, capacity): the slices of profd's unwind maps
 * (rows and mappings) that BPF programs read while the daemon changes them.
 * First fit, neighbours coalesced. A freed range is reused only after a grace
 * period, so a BPF program still reading the old contents never sees new
 * ones. Pure: the caller passes the clock. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct rangealloc rangealloc;

/* grace_ns: how long a freed range stays unusable. Returns NULL on ENOMEM. */
rangealloc *rangealloc_new(uint32_t capacity, uint64_t grace_ns);
rangealloc *rangealloc_free(rangealloc *a);

/* Allocates n > 0 contiguous slots. Returns 0 with *ret_off set, or -ENOSPC
 * (no free range that large, counting none still in grace). */
int rangealloc_alloc(rangealloc *a, uint32_t n, uint32_t *ret_off);

/* Frees [off, off + n) as of now_ns: usable again once reclaimed. */
void rangealloc_release(rangealloc *a, uint32_t off, uint32_t n, uint64_t now_ns);

/* Makes the ranges whose grace has passed by now_ns free again. */
void rangealloc_reclaim(rangealloc *a, uint64_t now_ns);

/* Slots allocated or still in grace. */
uint32_t rangealloc_used(const rangealloc *a);
uint32_t rangealloc_capacity(const rangealloc *a);
/* The largest free range (for status and tests). */
uint32_t rangealloc_largest_free(const rangealloc *a);

/* A range the caller holds and could release, as of since_ns (an unused
 * table's slice, released as of when it became unused). */
struct rangealloc_spare {
        uint32_t off, n;
        uint64_t since_ns;
};

/* Where n contiguous slots could be had by releasing some of the spare
 * ranges: the window [*ret_off, *ret_off + n) made of free slots, slots
 * whose grace has passed by now_ns, and whole spare ranges whose grace
 * would have passed. Of all windows, the one whose newest spare range
 * (since_ns) is oldest, then the one with the fewest spare slots, then the
 * lowest; a window of free slots alone before any. The caller releases
 * the spare ranges that overlap the window (each as of its since_ns),
 * reclaims at now_ns, and can then allocate n. Releases nothing itself.
 * Returns 0; -ENOSPC if no window exists; -EINVAL for n 0; -ENOMEM. */
int rangealloc_find_room(const rangealloc *a, uint32_t n, const struct rangealloc_spare *spare, size_t n_spare,
                         uint64_t now_ns, uint32_t *ret_off);
