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

/* find_room(n) is expect: an offset, or a negative errno */
#define CHECK_ROOM(n, expect)                                                                   \
        do {                                                                                    \
                uint32_t _off = UINT32_MAX;                                                     \
                int _r = rangealloc_find_room(a, (n), spare, ELEMENTSOF(spare), now, &_off);    \
                CHECK_INT_EQ(_r < 0 ? (int64_t) _r : (int64_t) _off, (int64_t) (expect));       \
        } while (0)

/* Room from spare ranges: the window that releases only tables unused
 * longer than any other window's, then the fewest slots; nothing released
 * by the search itself; none when even every spare range leaves no window. */
static void test_find_room(void) {
        _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(100, GRACE);
        uint32_t o[5];

        /* five tables: [0,20) [20,40) [40,60) [60,80) [80,100) */
        for (int i = 0; i < 5; i++)
                CHECK_INT_EQ(rangealloc_alloc(a, 20, &o[i]), 0);
        uint64_t now = 10 * GRACE;
        struct rangealloc_spare spare[] = {
                { o[0], 20, 3 * GRACE }, /* unused since 3 GRACE */
                { o[1], 20, 1 * GRACE }, /* the oldest, with o[4] */
                { o[2], 20, 2 * GRACE },
                { o[4], 20, 1 * GRACE },
        };

        CHECK_ROOM(0, -EINVAL);
        /* 20: o[1] and o[4] are as old; o[1] is lower */
        CHECK_ROOM(20, o[1]);
        /* 40: o[1]+o[2] (newest 2 GRACE) before o[0]+o[1] (3 GRACE); o[3]
         * is in use, so o[4] has no neighbour to make 40 with */
        CHECK_ROOM(40, o[1]);
        CHECK_ROOM(60, o[0]);
        CHECK_ROOM(61, -ENOSPC);
        /* the search released nothing */
        CHECK_INT_EQ(rangealloc_used(a), 100);
        CHECK_INT_EQ(rangealloc_largest_free(a), 0);

        /* free slots count, and come before any table: free [60,80) */
        rangealloc_release(a, o[3], 20, now);
        rangealloc_reclaim(a, now + GRACE);
        now += GRACE;
        CHECK_ROOM(20, o[3]);
        /* 40: the free 20 and o[4] (1 GRACE) before o[1]+o[2] (2 GRACE) */
        CHECK_ROOM(40, o[3]);
        /* 30: o[2] and the free 20 (2 GRACE) lose to the free 20 and o[4] */
        CHECK_ROOM(30, o[3]);
        /* everything: free and spare make one run */
        CHECK_ROOM(100, 0);
        CHECK_ROOM(101, -ENOSPC);

        /* a table unused for less than the grace cannot be had yet */
        spare[1].since_ns = now - GRACE + 1;
        CHECK_ROOM(40, o[3]);
        spare[3].since_ns = now - 1; /* o[4] */
        CHECK_ROOM(40, o[2]); /* o[2] + free: o[1] and o[4] still in grace */
        CHECK_ROOM(41, -ENOSPC);
}

/* The search against every possible window, slot by slot, on random
 * layouts: the same rank, and the window it names really is one. */
static void test_find_room_random(void) {
        enum { CAP = 200, ROUNDS = 3000 };
        unsigned seed = 4242;
        int wrong = 0;

        for (int round = 0; round < ROUNDS; round++) {
                _cleanup_(rangealloc_freep) rangealloc *a = rangealloc_new(CAP, GRACE);
                struct rangealloc_spare spare[CAP];
                int owner[CAP]; /* -1 free, -2 held (in use or in grace), else the spare range */
                size_t n_spare = 0;
                uint64_t now = 100 * GRACE;
                uint32_t off = 0;

                /* cut [0, CAP) into ranges: free, in use, in grace, or spare
                 * (some of those unused too recently) */
                while (off < CAP) {
                        uint32_t n = 1 + rand_r(&seed) % 30, got;
                        int kind = rand_r(&seed) % 4;

                        n = MIN(n, CAP - off);
                        CHECK_INT_EQ(rangealloc_alloc(a, n, &got), 0);
                        CHECK_INT_EQ(got, off);
                        for (uint32_t s = off; s < off + n; s++)
                                owner[s] = kind == 0 ? -1 : -2;
                        if (kind == 0 || kind == 1) {
                                /* free (reclaimed below) or in grace */
                                rangealloc_release(a, off, n, kind == 0 ? 0 : now - rand_r(&seed) % GRACE);
                        } else if (kind == 3) {
                                uint64_t since = now - rand_r(&seed) % (3 * GRACE);

                                spare[n_spare] = (struct rangealloc_spare) { off, n, since };
                                if (now - since >= GRACE)
                                        for (uint32_t s = off; s < off + n; s++)
                                                owner[s] = (int) n_spare;
                                n_spare++;
                        }
                        off += n;
                }
                rangealloc_reclaim(a, GRACE);

                uint32_t want = 1 + rand_r(&seed) % 120, x;
                bool exp_found = false;
                uint64_t exp_newest = 0, exp_slots = 0;
                uint32_t exp_off = 0;

                for (uint32_t s = 0; s + want <= CAP; s++) {
                        uint64_t newest = 0, slots = 0;
                        bool ok = true, seen[CAP] = { false };

                        for (uint32_t t = s; t < s + want && ok; t++) {
                                if (owner[t] == -2)
                                        ok = false;
                                else if (owner[t] >= 0 && !seen[owner[t]]) {
                                        seen[owner[t]] = true;
                                        newest = MAX(newest, spare[owner[t]].since_ns);
                                        slots += spare[owner[t]].n;
                                }
                        }
                        if (ok && (!exp_found || newest < exp_newest || (newest == exp_newest && slots < exp_slots))) {
                                exp_found = true;
                                exp_newest = newest;
                                exp_slots = slots;
                                exp_off = s;
                        }
                }
                int r = rangealloc_find_room(a, want, spare, n_spare, now, &x);
                if (r != (exp_found ? 0 : -ENOSPC) || (exp_found && x != exp_off)) {
                        CHECK_INT_EQ(r, exp_found ? 0 : -ENOSPC);
                        CHECK_INT_EQ(x, exp_off);
                        wrong++;
                        break;
                }
        }
        CHECK_INT_EQ(wrong, 0);
}

int main(void) {
        test_first_fit();
        test_grace();
        test_coalesce();
        test_fragmentation();
        test_bad_release();
        test_random();
        test_find_room();
        test_find_room_random();
        TESTS_DONE();
}
