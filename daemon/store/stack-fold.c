/* See stack-fold.h. */
#include "stack-fold.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "macro.h"

/* Orders stack indexes by their frames, lexicographically (a prefix before
 * the stacks that extend it), so the stacks of one subtree are neighbours. */
static int by_frames(const void *a, const void *b, void *userdata) {
        const struct fold_stack *s = userdata;
        const struct fold_stack *x = &s[*(const size_t *) a], *y = &s[*(const size_t *) b];
        size_t n = MIN(x->n, y->n);

        for (size_t i = 0; i < n; i++)
                if (x->frames[i] != y->frames[i])
                        return x->frames[i] < y->frames[i] ? -1 : 1;
        return x->n < y->n ? -1 : x->n > y->n;
}

static size_t common_prefix(const struct fold_stack *x, const struct fold_stack *y) {
        size_t n = MIN(x->n, y->n), i = 0;

        while (i < n && x->frames[i] == y->frames[i])
                i++;
        return i;
}

int stack_fold(struct fold_stack *s, size_t n, uint32_t share_ppm, int64_t folded) {
        _cleanup_free_ size_t *order = NULL, *open = NULL, *lcp = NULL;
        _cleanup_free_ uint64_t *weight = NULL;
        size_t depth = 0, nodes = 0, next;
        unsigned __int128 total = 0;

        for (size_t i = 0; i < n; i++) {
                s[i].keep = s[i].n;
                total += s[i].weight;
                depth = MAX(depth, s[i].n);
        }
        if (share_ppm == 0 || n == 0)
                return 0;
        order = malloc(n * sizeof(*order));
        lcp = malloc(n * sizeof(*lcp));
        open = malloc((depth + 1) * sizeof(*open));
        if (!order || !lcp || !open)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        qsort_r(order, n, sizeof(*order), by_frames, s);
        /* each stack opens a node for each of its frames past the prefix it
         * shares with the one before it, in this order: node ids follow
         * the walk, so the second walk below finds the same ones */
        for (size_t i = 0; i < n; i++) {
                lcp[i] = i ? common_prefix(&s[order[i - 1]], &s[order[i]]) : 0;
                nodes += s[order[i]].n - lcp[i];
        }
        weight = calloc(MAX(nodes, (size_t) 1), sizeof(*weight));
        if (!weight)
                return -ENOMEM;
        next = 0;
        for (size_t i = 0; i < n; i++) {
                const struct fold_stack *x = &s[order[i]];

                for (size_t d = lcp[i]; d < x->n; d++)
                        open[d] = next++;
                for (size_t d = 0; d < x->n; d++)
                        weight[open[d]] += x->weight;
        }
        /* a node stays when weight / total >= share_ppm / 10^6 */
        next = 0;
        for (size_t i = 0; i < n; i++) {
                struct fold_stack *x = &s[order[i]];
                size_t keep = 0;

                for (size_t d = lcp[i]; d < x->n; d++)
                        open[d] = next++;
                /* weights only fall with depth */
                while (keep < x->n && (unsigned __int128) weight[open[keep]] * 1000000u >= total * share_ppm)
                        keep++;
                /* one that was folded before and keeps its callers is as it is */
                if (keep + 1 == x->n && x->frames[keep] == folded)
                        keep = x->n;
                x->keep = keep;
        }
        return 0;
}
