/* Folding rare stacks into their callers (issue 43): what retention's
 * merges keep of a bucket's stacks when `fold` is set (profd.conf(5)).
 *
 * The stacks of one kind in a merge step form a tree, root first, each
 * node weighted by the values of the stacks that pass through it (samples,
 * time blocked, time woken after). A stack keeps the deepest prefix whose
 * node holds at least `share_ppm` millionths of the step's total; the frames
 * below are replaced by one frame, the folded location. A flame graph of
 * the bucket then shows the same picture down to that width, and every
 * total (per process, kind, state and the kept prefix) stays exact.
 *
 * Pure: unit-tested by test-stack-fold.c. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct fold_stack {
        const int64_t *frames; /* location ids, root first */
        size_t n;
        uint64_t weight;       /* the stack's value in the step */
        /* out: how many frames stay. n: the stack is kept whole; below n,
         * frames[0 .. keep) followed by the folded location stand for it */
        size_t keep;
};

/* Sets keep for each of the n stacks (their order is not changed).
 * `folded` is the folded location's id: a stack that already ends in it
 * and would keep every frame above it is kept whole. share_ppm 0 keeps
 * every stack whole. Returns 0 or -ENOMEM. */
int stack_fold(struct fold_stack *stacks, size_t n, uint32_t share_ppm, int64_t folded);
