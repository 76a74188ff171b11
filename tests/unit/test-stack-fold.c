/* Rare stacks folded into their callers (daemon/store/stack-fold.c): each
 * stack keeps the deepest prefix whose node holds the share, against a
 * hand-made tree and against a brute force over random ones; a stack
 * folded before stays as it is; no share keeps everything; weights of
 * blocked time in nanoseconds do not overflow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store/stack-fold.h"
#include "tests.h"

#define F 999 /* the folded location */

static struct fold_stack st(const int64_t *frames, size_t n, uint64_t weight) {
        return (struct fold_stack) { .frames = frames, .n = n, .weight = weight, .keep = 12345 };
}

/* main->a->x 600, main->a->y 300, main->b->z 99, main->b->w 1, and the
 * stack main->a itself 5 (a sample taken in a): 1005 in all. */
static void test_the_deepest_prefix_that_holds_the_share(void) {
        const int64_t x[] = { 1, 2, 3 }, y[] = { 1, 2, 4 }, z[] = { 1, 5, 6 }, w[] = { 1, 5, 7 }, a[] = { 1, 2 };
        struct fold_stack s[5];

        /* in an order that is not the tree's */
        s[0] = st(w, 3, 1), s[1] = st(x, 3, 600), s[2] = st(z, 3, 99), s[3] = st(a, 2, 5), s[4] = st(y, 3, 300);
        CHECK_INT_EQ(stack_fold(s, 5, 0, F), 0);
        for (size_t i = 0; i < 5; i++)
                CHECK_INT_EQ(s[i].keep, s[i].n);

        /* 5%: 50.25; b holds 100, w 1 */
        CHECK_INT_EQ(stack_fold(s, 5, 50000, F), 0);
        CHECK_INT_EQ(s[0].keep, 2); /* main;b;[folded] */
        CHECK_INT_EQ(s[1].keep, 3);
        CHECK_INT_EQ(s[2].keep, 3);
        CHECK_INT_EQ(s[3].keep, 2); /* a holds 905: whole, and it is only 2 deep */
        CHECK_INT_EQ(s[4].keep, 3);
        /* the order is the caller's */
        CHECK(s[0].frames == w && s[1].frames == x && s[4].frames == y);

        /* 20%: 201; b goes whole, y (300) stays */
        CHECK_INT_EQ(stack_fold(s, 5, 200000, F), 0);
        CHECK_INT_EQ(s[0].keep, 1);
        CHECK_INT_EQ(s[2].keep, 1);
        CHECK_INT_EQ(s[4].keep, 3);
        /* exactly the share is enough: 600 of 1005 is 59.70...%, a 905 */
        CHECK_INT_EQ(stack_fold(s, 5, 597014, F), 0);
        CHECK_INT_EQ(s[1].keep, 3);
        CHECK_INT_EQ(stack_fold(s, 5, 597015, F), 0);
        CHECK_INT_EQ(s[1].keep, 2);
        CHECK_INT_EQ(s[3].keep, 2);
        CHECK_INT_EQ(s[4].keep, 2);
        /* 100%: only main holds it all */
        CHECK_INT_EQ(stack_fold(s, 5, 1000000, F), 0);
        for (size_t i = 0; i < 5; i++)
                CHECK_INT_EQ(s[i].keep, 1);
}

/* A root that holds too little keeps nothing: the stack is [folded] alone. */
static void test_a_rare_root_keeps_no_frame(void) {
        const int64_t big[] = { 1, 2 }, rare[] = { 8, 9 };
        struct fold_stack s[2] = { st(big, 2, 10000), st(rare, 2, 1) };

        CHECK_INT_EQ(stack_fold(s, 2, 1000, F), 0);
        CHECK_INT_EQ(s[0].keep, 2);
        CHECK_INT_EQ(s[1].keep, 0);
}

/* A merge of buckets already folded folds no further what still holds its
 * share: main;b;[folded] stays itself, not main;b;[folded] folded again. */
static void test_folded_stacks_stay_folded_once(void) {
        const int64_t x[] = { 1, 2, 3 }, bf[] = { 1, 5, F }, cf[] = { 1, 6, F };
        struct fold_stack s[3] = { st(x, 3, 900), st(bf, 3, 99), st(cf, 3, 1) };

        CHECK_INT_EQ(stack_fold(s, 3, 50000, F), 0);
        CHECK_INT_EQ(s[0].keep, 3);
        CHECK_INT_EQ(s[1].keep, 3); /* whole: it is main;b;[folded] already */
        CHECK_INT_EQ(s[2].keep, 1); /* main;[folded] */
}

/* Stacks with the same frames (another user_end) share their nodes. */
static void test_equal_frames_add_up(void) {
        const int64_t x[] = { 1, 2, 3 }, y[] = { 1, 2, 3 }, big[] = { 1, 4 };
        struct fold_stack s[3] = { st(x, 3, 30), st(y, 3, 30), st(big, 2, 940) };

        /* 5%: 50; each alone holds 30, together 60 */
        CHECK_INT_EQ(stack_fold(s, 3, 50000, F), 0);
        CHECK_INT_EQ(s[0].keep, 3);
        CHECK_INT_EQ(s[1].keep, 3);
}

/* Blocked time in ns over a busy bucket: totals past 2^64 / 10^6. */
static void test_nanoseconds_do_not_overflow(void) {
        const int64_t x[] = { 1, 2 }, y[] = { 1, 3 }, z[] = { 1, 4 };
        struct fold_stack s[3] = { st(x, 2, 4000000000000000000ULL), st(y, 2, 4000000000000000000ULL),
                                   st(z, 2, 4000000000000000ULL) };

        /* z holds 4e15 of 8.004e18: 499.75 ppm */
        CHECK_INT_EQ(stack_fold(s, 3, 499, F), 0);
        CHECK_INT_EQ(s[2].keep, 2);
        CHECK_INT_EQ(stack_fold(s, 3, 501, F), 0);
        CHECK_INT_EQ(s[2].keep, 1);
        CHECK_INT_EQ(s[0].keep, 2);
}

/* Random trees against the definition, computed the slow way: the node of
 * a prefix holds every stack that starts with it. */
static void test_random_trees_against_brute_force(void) {
        enum { N = 300, DEPTH = 12 };
        static int64_t frames[N][DEPTH];
        struct fold_stack s[N];
        unsigned seed = 4321;

        for (int round = 0; round < 40; round++) {
                uint32_t ppm = (uint32_t) (rand_r(&seed) % 3 == 0 ? rand_r(&seed) % 200000 : rand_r(&seed) % 5000);
                uint64_t total = 0;

                for (int i = 0; i < N; i++) {
                        size_t n = (size_t) (rand_r(&seed) % DEPTH); /* 0 too: a stack without frames */

                        /* few symbols near the root, more below: shared prefixes */
                        for (size_t d = 0; d < n; d++)
                                frames[i][d] = 1 + rand_r(&seed) % (int) (2 + 3 * d);
                        s[i] = st(frames[i], n, (uint64_t) (rand_r(&seed) % 4 == 0 ? rand_r(&seed) % 1000 : 1));
                        total += s[i].weight;
                }
                CHECK_INT_EQ(stack_fold(s, N, ppm, F), 0);
                for (int i = 0; i < N; i++) {
                        size_t keep = 0;

                        for (size_t d = 1; d <= s[i].n; d++) {
                                uint64_t w = 0;

                                for (int j = 0; j < N; j++)
                                        if (s[j].n >= d && memcmp(s[j].frames, s[i].frames, d * sizeof(int64_t)) == 0)
                                                w += s[j].weight;
                                if ((unsigned __int128) w * 1000000u < (unsigned __int128) total * ppm)
                                        break;
                                keep = d;
                        }
                        if (s[i].keep != keep) {
                                CHECK_INT_EQ(s[i].keep, keep);
                                return;
                        }
                }
        }
}

int main(void) {
        test_the_deepest_prefix_that_holds_the_share();
        test_a_rare_root_keeps_no_frame();
        test_folded_stacks_stay_folded_once();
        test_equal_frames_add_up();
        test_nanoseconds_do_not_overflow();
        test_random_trees_against_brute_force();
        if (tests_failed)
                return 1;
        printf("stack-fold: ok\n");
        return 0;
}
