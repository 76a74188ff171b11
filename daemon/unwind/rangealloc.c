/* First-fit range allocator with coalescing and deferred frees: free ranges
 * are a sorted array (neighbours merged on every insert), freed ranges wait
 * in a second array until their grace has passed. The arrays stay small (a
 * few hundred entries for the tables of a busy host), so memmove is cheaper
 * than a tree. */
#include "rangealloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
#include "helpers.h"
#include "log.h"
#include "macro.h"

struct range {
        uint32_t off, n;
};

struct pending {
        uint32_t off, n;
        uint64_t since_ns;
};

struct rangealloc {
        uint32_t capacity;
        uint64_t grace_ns;
        uint32_t free_total; /* slots in free ranges */
        struct range *free;  /* sorted by off, never adjacent (coalesced) */
        size_t n_free, cap_free;
        struct pending *pending; /* in release order */
        size_t n_pending, cap_pending;
};

rangealloc *rangealloc_new(uint32_t capacity, uint64_t grace_ns) {
        rangealloc *a = calloc(1, sizeof(*a));

        if (!a)
                return NULL;
        a->capacity = capacity;
        a->grace_ns = grace_ns;
        if (capacity > 0) {
                if (array_grow((void **) &a->free, &a->cap_free, 1, sizeof(*a->free)) < 0) {
                        free(a);
                        return NULL;
                }
                a->free[a->n_free++] = (struct range) { .off = 0, .n = capacity };
                a->free_total = capacity;
        }
        return a;
}

rangealloc *rangealloc_free(rangealloc *a) {
        if (!a)
                return NULL;
        free(a->free);
        free(a->pending);
        free(a);
        return NULL;
}

int rangealloc_alloc(rangealloc *a, uint32_t n, uint32_t *ret_off) {
        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i < a->n_free; i++) {
                struct range *r = &a->free[i];

                if (r->n < n)
                        continue;
                *ret_off = r->off;
                r->off += n;
                r->n -= n;
                if (r->n == 0) {
                        memmove(r, r + 1, (a->n_free - i - 1) * sizeof(*r));
                        a->n_free--;
                }
                a->free_total -= n;
                return 0;
        }
        return -ENOSPC;
}

/* Puts [off, off + n) back among the free ranges, merged with the ranges
 * it touches. Returns 0 (also when the range was free already: a caller's
 * double release, logged) or -ENOMEM (the range then stays unusable: a
 * leak of slots, never a double use). */
static int free_insert(rangealloc *a, uint32_t off, uint32_t n) {
        size_t lo = LOWER_BOUND_BY(a->free, a->n_free, off, off);
        bool merge_prev, merge_next;

        /* lo: the first free range at or above off. A range overlapping a
         * free one was released twice: keeping it once is all we can do. */
        if ((lo > 0 && a->free[lo - 1].off + a->free[lo - 1].n > off) ||
            (lo < a->n_free && a->free[lo].off < off + n)) {
                log_error("rangealloc: [%u, +%u) released twice, ignoring", off, n);
                return 0;
        }
        merge_prev = lo > 0 && a->free[lo - 1].off + a->free[lo - 1].n == off;
        merge_next = lo < a->n_free && off + n == a->free[lo].off;
        if (merge_prev && merge_next) {
                a->free[lo - 1].n += n + a->free[lo].n;
                memmove(&a->free[lo], &a->free[lo + 1], (a->n_free - lo - 1) * sizeof(*a->free));
                a->n_free--;
        } else if (merge_prev)
                a->free[lo - 1].n += n;
        else if (merge_next) {
                a->free[lo].off = off;
                a->free[lo].n += n;
        } else {
                int r = array_grow((void **) &a->free, &a->cap_free, a->n_free + 1, sizeof(*a->free));

                if (r < 0)
                        return r;
                memmove(&a->free[lo + 1], &a->free[lo], (a->n_free - lo) * sizeof(*a->free));
                a->free[lo] = (struct range) { .off = off, .n = n };
                a->n_free++;
        }
        a->free_total += n;
        return 0;
}

void rangealloc_release(rangealloc *a, uint32_t off, uint32_t n, uint64_t now_ns) {
        if (n == 0)
                return;
        if (off > a->capacity || n > a->capacity - off) {
                log_error("rangealloc: release of [%u, +%u) beyond capacity %u, ignoring", off, n, a->capacity);
                return;
        }
        if (array_grow((void **) &a->pending, &a->cap_pending, a->n_pending + 1, sizeof(*a->pending)) < 0) {
                log_oom();
                return; /* the range is lost until restart: safe, never reused early */
        }
        a->pending[a->n_pending++] = (struct pending) { .off = off, .n = n, .since_ns = now_ns };
}

void rangealloc_reclaim(rangealloc *a, uint64_t now_ns) {
        size_t kept = 0;

        for (size_t i = 0; i < a->n_pending; i++) {
                const struct pending *p = &a->pending[i];

                if (now_ns < p->since_ns || now_ns - p->since_ns < a->grace_ns) {
                        a->pending[kept++] = *p;
                        continue;
                }
                if (free_insert(a, p->off, p->n) < 0) {
                        a->pending[kept++] = *p; /* retried at the next reclaim */
                        log_oom();
                }
        }
        a->n_pending = kept;
}

uint32_t rangealloc_used(const rangealloc *a) {
        return a->capacity - a->free_total;
}

uint32_t rangealloc_capacity(const rangealloc *a) {
        return a->capacity;
}

uint32_t rangealloc_largest_free(const rangealloc *a) {
        uint32_t largest = 0;

        for (size_t i = 0; i < a->n_free; i++)
                largest = MAX(largest, a->free[i].n);
        return largest;
}

/* A stretch of slots usable for a window: free, or a spare range that
 * would have to be released (spare true, since_ns its age). */
struct segment {
        uint32_t off, n;
        bool spare;
        uint64_t since_ns;
};

static int segment_compare(const void *x, const void *y) {
        const struct segment *a = x, *b = y;

        return a->off < b->off ? -1 : a->off > b->off;
}

static bool grace_over(const rangealloc *a, uint64_t since_ns, uint64_t now_ns) {
        return now_ns >= since_ns && now_ns - since_ns >= a->grace_ns;
}

int rangealloc_find_room(const rangealloc *a, uint32_t n, const struct rangealloc_spare *spare, size_t n_spare,
                         uint64_t now_ns, uint32_t *ret_off) {
        _cleanup_free_ struct segment *seg = NULL;
        uint64_t best_newest = 0, best_slots = 0;
        bool found = false;
        size_t k = 0;

        if (n == 0)
                return -EINVAL;
        seg = calloc(a->n_free + a->n_pending + n_spare + 1, sizeof(*seg));
        if (!seg)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_free; i++)
                seg[k++] = (struct segment) { .off = a->free[i].off, .n = a->free[i].n };
        for (size_t i = 0; i < a->n_pending; i++)
                if (grace_over(a, a->pending[i].since_ns, now_ns))
                        seg[k++] = (struct segment) { .off = a->pending[i].off, .n = a->pending[i].n };
        for (size_t i = 0; i < n_spare; i++)
                if (spare[i].n > 0 && spare[i].off <= a->capacity && spare[i].n <= a->capacity - spare[i].off &&
                    grace_over(a, spare[i].since_ns, now_ns))
                        seg[k++] = (struct segment) {
                                .off = spare[i].off, .n = spare[i].n, .spare = true, .since_ns = spare[i].since_ns,
                        };
        qsort(seg, k, sizeof(*seg), segment_compare);

        /* Windows that start where a segment starts are enough: starting
         * inside a free segment only leaves less of it, inside a spare one
         * releases it all the same. From each, segments are taken while
         * they touch end to start, until n slots; the window is ranked by
         * the newest spare range it releases (least recently used first),
         * then by the spare slots. A few hundred segments on a busy host. */
        for (size_t lo = 0; lo < k; lo++) {
                uint64_t have = 0, newest = 0, slots = 0;

                for (size_t hi = lo; hi < k && have < n; hi++) {
                        if (hi > lo && seg[hi - 1].off + seg[hi - 1].n != seg[hi].off)
                                break;
                        have += seg[hi].n;
                        if (seg[hi].spare) {
                                newest = MAX(newest, seg[hi].since_ns);
                                slots += seg[hi].n;
                        }
                }
                if (have < n)
                        continue;
                if (!found || newest < best_newest || (newest == best_newest && slots < best_slots)) {
                        found = true;
                        best_newest = newest;
                        best_slots = slots;
                        *ret_off = seg[lo].off;
                }
        }
        return found ? 0 : -ENOSPC;
}
