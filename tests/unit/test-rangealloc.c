/* Tests of the range allocator behind the unwind maps: first fit, freed
 * ranges unusable until their grace has passed, neighbours coalesced so a
 * large table fits again once the small ones around it are gone, and a
 * randomized run checked against a bitmap of who owns each slot. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "macro.h"
#include "rangealloc.h"
#include "tests.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(rangealloc *, rangealloc_free);

#define GRACE 2000 /* ns; the daemon uses 2 s, any value does here */

static void test_first_fit(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(100, GRACE);
        uint32_t x, y, z, w;

        CHECK(a);
        CHECK_INT_EQ(rangealloc_capacity(a), 100);
        CHECK_INT_EQ(rangealloc_used(a), 0);
        CHECK_INT_EQ(rangealloc_largest_free(a), 100);
        CHECK_INT_EQ(rangealloc_alloc(a, 0, &x), -EINVAL);

        CHECK_INT_EQ(rangealloc_alloc(a, 10, &x), 0);
        CHECK_INT_EQ(x, 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 20, &y), 0);
        CHECK_INT_EQ(y, 10);
        CHECK_INT_EQ(rangealloc_alloc(a, 30, &z), 0);
        CHECK_INT_EQ(z, 30);
        CHECK_INT_EQ(rangealloc_used(a), 60);
        CHECK_INT_EQ(rangealloc_largest_free(a), 40);

        /* the first hole large enough, not the best-fitting one */
        rangealloc_release(a, x, 10, 0);
        rangealloc_reclaim(a, GRACE);
        CHECK_INT_EQ(rangealloc_alloc(a, 5, &w), 0);
        CHECK_INT_EQ(w, 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 6, &w), 0);
        CHECK_INT_EQ(w, 60); /* the 5-slot rest of the hole is too small */
        CHECK_INT_EQ(rangealloc_alloc(a, 5, &w), 0);
        CHECK_INT_EQ(w, 5);
        CHECK_INT_EQ(rangealloc_used(a), 66);
}

static void test_grace(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(10, GRACE);
        uint32_t x, y;

        CHECK_INT_EQ(rangealloc_alloc(a, 10, &x), 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 1, &y), -ENOSPC);
        rangealloc_release(a, x, 10, 1000);
        /* freed, but a BPF program may still read it: not reusable */
        CHECK_INT_EQ(rangealloc_used(a), 10);
        CHECK_INT_EQ(rangealloc_alloc(a, 1, &y), -ENOSPC);
        rangealloc_reclaim(a, 1000 + GRACE - 1);
        CHECK_INT_EQ(rangealloc_alloc(a, 1, &y), -ENOSPC);
        CHECK_INT_EQ(rangealloc_largest_free(a), 0);
        /* a clock that went backwards does not release early */
        rangealloc_reclaim(a, 10);
        CHECK_INT_EQ(rangealloc_alloc(a, 1, &y), -ENOSPC);
        rangealloc_reclaim(a, 1000 + GRACE);
        CHECK_INT_EQ(rangealloc_used(a), 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 10, &y), 0);
        CHECK_INT_EQ(y, 0);
}

/* Releases in different orders, some reclaimed at different times: the
 * whole space coalesces back into one range. */
static void test_coalesce(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(64, GRACE);
        uint32_t off[8], big;

        for (int i = 0; i < 8; i++) {
                CHECK_INT_EQ(rangealloc_alloc(a, 8, &off[i]), 0);
                CHECK_INT_EQ(off[i], 8 * i);
        }
        /* every other one: four holes of 8, no 16 */
        for (int i = 0; i < 8; i += 2)
                rangealloc_release(a, off[i], 8, 0);
        rangealloc_reclaim(a, GRACE);
        CHECK_INT_EQ(rangealloc_largest_free(a), 8);
        CHECK_INT_EQ(rangealloc_alloc(a, 9, &big), -ENOSPC);
        /* the middle ones: merge with the hole before, after, and both */
        rangealloc_release(a, off[3], 8, 100);
        rangealloc_release(a, off[1], 8, 100);
        rangealloc_reclaim(a, 100 + GRACE);
        CHECK_INT_EQ(rangealloc_largest_free(a), 40); /* [0, 40) */
        rangealloc_release(a, off[7], 8, 200);
        rangealloc_release(a, off[5], 8, 300);
        rangealloc_reclaim(a, 200 + GRACE); /* only off[7]: [48, 64) */
        CHECK_INT_EQ(rangealloc_largest_free(a), 40);
        CHECK_INT_EQ(rangealloc_used(a), 8);
        rangealloc_reclaim(a, 300 + GRACE);
        CHECK_INT_EQ(rangealloc_largest_free(a), 64);
        CHECK_INT_EQ(rangealloc_used(a), 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 64, &big), 0);
        CHECK_INT_EQ(big, 0);
}

/* Fragmentation: free space enough in total, no range large enough. */
static void test_fragmentation(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(30, 0);
        uint32_t o[3], x;

        for (int i = 0; i < 3; i++)
                CHECK_INT_EQ(rangealloc_alloc(a, 10, &o[i]), 0);
        rangealloc_release(a, o[0], 10, 5);
        rangealloc_release(a, o[2], 10, 5);
        rangealloc_reclaim(a, 5); /* grace 0: at once */
        CHECK_INT_EQ(30 - rangealloc_used(a), 20);
        CHECK_INT_EQ(rangealloc_largest_free(a), 10);
        CHECK_INT_EQ(rangealloc_alloc(a, 11, &x), -ENOSPC);
        CHECK_INT_EQ(rangealloc_alloc(a, 10, &x), 0);
        CHECK_INT_EQ(x, 0);
}

static void test_bad_release(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(10, 0);
        uint32_t x;

        CHECK_INT_EQ(rangealloc_alloc(a, 10, &x), 0);
        /* beyond the capacity: ignored, never makes slots appear */
        rangealloc_release(a, 5, 10, 0);
        rangealloc_release(a, UINT32_MAX, 2, 0);
        rangealloc_reclaim(a, 1);
        CHECK_INT_EQ(rangealloc_used(a), 10);

        /* released twice: the second is ignored, the slots are not counted twice */
        rangealloc_release(a, 0, 4, 0);
        rangealloc_release(a, 2, 4, 0);
        rangealloc_reclaim(a, 1);
        CHECK_INT_EQ(rangealloc_used(a), 6);
        rangealloc_release(a, 0, 4, 2);
        rangealloc_reclaim(a, 3);
        CHECK_INT_EQ(rangealloc_used(a), 6);
        CHECK_INT_EQ(rangealloc_alloc(a, 4, &x), 0);
        CHECK_INT_EQ(x, 0);
        CHECK_INT_EQ(rangealloc_alloc(a, 1, &x), -ENOSPC);

        _cleanup_(rangealloc_freep) rangealloc *empty = rangealloc_new(0, 0);
        CHECK(empty);
        CHECK_INT_EQ(rangealloc_alloc(empty, 1, &x), -ENOSPC);
        CHECK_INT_EQ(rangealloc_largest_free(empty), 0);
}

/* Random allocations and releases checked against a slot ownership map: no
 * slot handed out twice, none reused before its grace, and at the end, all
 * released and reclaimed, one free range as large as the capacity. */
static void test_random(void) {
        enum { CAP = 4096, OPS = 20000, LIVE = 256 };
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(CAP, GRACE);
        static int owner[CAP];        /* 0 free, 1 allocated, 2 in grace */
        static uint64_t freed_at[CAP];
        struct { uint32_t off, n; } live[LIVE];
        size_t n_live = 0;
        uint64_t now = 0;
        unsigned seed = 12345;
        int collisions = 0, early = 0;

        for (int op = 0; op < OPS; op++) {
                now += rand_r(&seed) % 100;
                if (rand_r(&seed) % 8 == 0) {
                        rangealloc_reclaim(a, now);
                        for (uint32_t s = 0; s < CAP; s++)
                                if (owner[s] == 2 && now - freed_at[s] >= GRACE)
                                        owner[s] = 0;
                }
                if (n_live < LIVE && rand_r(&seed) % 2 == 0) {
                        uint32_t n = 1 + rand_r(&seed) % 64, off;

                        if (rangealloc_alloc(a, n, &off) < 0)
                                continue;
                        CHECK(off + n <= CAP);
                        for (uint32_t s = off; s < off + n && s < CAP; s++) {
                                collisions += owner[s] == 1;
                                early += owner[s] == 2;
                                owner[s] = 1;
                        }
                        live[n_live].off = off;
                        live[n_live++].n = n;
                } else if (n_live > 0) {
                        size_t i = rand_r(&seed) % n_live;

                        rangealloc_release(a, live[i].off, live[i].n, now);
                        for (uint32_t s = live[i].off; s < live[i].off + live[i].n; s++) {
                                owner[s] = 2;
                                freed_at[s] = now;
                        }
                        live[i] = live[--n_live];
                }
                {
                        uint32_t used = 0;

                        for (uint32_t s = 0; s < CAP; s++)
                                used += owner[s] != 0;
                        if (used != rangealloc_used(a)) {
                                CHECK_INT_EQ(rangealloc_used(a), used);
                                break;
                        }
                }
        }
        CHECK_INT_EQ(collisions, 0);
        CHECK_INT_EQ(early, 0);
        while (n_live > 0) {
                n_live--;
                rangealloc_release(a, live[n_live].off, live[n_live].n, now);
        }
        rangealloc_reclaim(a, now + GRACE);
        CHECK_INT_EQ(rangealloc_used(a), 0);
        CHECK_INT_EQ(rangealloc_largest_free(a), CAP);
}

int main(void) {
        test_first_fit();
        test_grace();
        test_coalesce();
        test_fragmentation();
        test_bad_release();
        test_random();
        TESTS_DONE();
}
