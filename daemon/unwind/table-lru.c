/* The eviction policy for tables of live processes (table-lru.h). The
 * candidates are sorted by when they were last sampled (the smaller first
 * among equals); feasibility grows with the prefix of that order offered
 * to rangealloc_find_room (more spare rows never remove a window), so the
 * shortest prefix is found by bisection: about log2(tables) searches of a
 * few hundred segments, and only when a sampled table found no room. */
#include "table-lru.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"

struct candidate {
        size_t index;
        uint64_t sampled_ns;
        uint32_t slots, off;
};

static int candidate_compare(const void *x, const void *y) {
        const struct candidate *a = x, *b = y;

        if (a->sampled_ns != b->sampled_ns)
                return a->sampled_ns < b->sampled_ns ? -1 : 1;
        if (a->slots != b->slots)
                return a->slots < b->slots ? -1 : 1;
        return a->off < b->off ? -1 : a->off > b->off;
}

static bool is_hot(const struct table_lru_entry *t, uint64_t now_ns, uint64_t hot_ns) {
        return t->sampled_ns > now_ns || now_ns - t->sampled_ns < hot_ns;
}

/* Room for need rows once the k least recently sampled candidates are
 * released: rangealloc_find_room with them as spare ranges whose grace is
 * taken as over (since 0: the caller waits for it). Returns 0 and *ret_off,
 * -ENOSPC or -ENOMEM. */
static int room_with(const rangealloc *a, uint32_t need, const struct table_lru_entry *tables,
                     const struct candidate *c, size_t k, struct rangealloc_spare *spare, uint64_t now_ns,
                     uint32_t *ret_off) {
        for (size_t i = 0; i < k; i++)
                spare[i] = (struct rangealloc_spare) { tables[c[i].index].off, tables[c[i].index].slots, 0 };
        return rangealloc_find_room(a, need, spare, k, now_ns, ret_off);
}

int table_lru_choose(const rangealloc *a, uint32_t need, const struct table_lru_entry *tables, size_t n,
                     uint64_t now_ns, uint64_t hot_ns, bool *ret_evict, uint32_t *ret_off) {
        _cleanup_free_ struct candidate *c = NULL;
        _cleanup_free_ struct rangealloc_spare *spare = NULL;
        size_t k = 0, lo, hi;
        uint32_t off;
        int r;

        if (need == 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                ret_evict[i] = false;
        if (need > rangealloc_capacity(a))
                return 0; /* evicting everything would not do */
        c = calloc(n + 1, sizeof(*c));
        spare = calloc(n + 1, sizeof(*spare));
        if (!c || !spare)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (tables[i].slots > 0 && !tables[i].pinned && !is_hot(&tables[i], now_ns, hot_ns))
                        c[k++] = (struct candidate) { i, tables[i].sampled_ns, tables[i].slots, tables[i].off };
        qsort(c, k, sizeof(*c), candidate_compare);

        /* the shortest prefix [0, hi) that makes room, off its window:
         * none makes room unless the whole does */
        r = room_with(a, need, tables, c, k, spare, now_ns, &off);
        if (r == -ENOSPC)
                return 0;
        if (r < 0)
                return r;
        lo = 0;
        hi = k;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                uint32_t mid_off;

                r = room_with(a, need, tables, c, mid, spare, now_ns, &mid_off);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        hi = mid;
                        off = mid_off;
                } else
                        lo = mid + 1;
        }
        for (size_t i = 0; i < hi; i++) {
                const struct table_lru_entry *t = &tables[c[i].index];

                if (t->off < off + need && off < t->off + t->slots)
                        ret_evict[c[i].index] = true;
        }
        *ret_off = off;
        return 1;
}
