/* The intrusive list against a model (an array in list order): random
 * pushes at either end and unlinks from anywhere, the links checked both
 * ways after each; unlinking a node in no list; removal while iterating. */
#include <stdlib.h>

#include "dlist.h"
#include "tests.h"

struct item {
        int id;
        struct dlist_node node;
};

#define N 16

/* l's elements head to tail equal model[0..n), and tail to head reversed */
static void check_matches(const struct dlist *l, const int *model, size_t n) {
        size_t i = 0;
        const struct dlist_node *p = NULL;

        for (const struct dlist_node *x = l->head; x; p = x, x = x->next, i++) {
                CHECK(i < n);
                if (i >= n)
                        return;
                CHECK_INT_EQ(DLIST_ENTRY((struct dlist_node *) x, struct item, node)->id, model[i]);
                CHECK(x->prev == p);
        }
        CHECK_INT_EQ(i, n);
        CHECK(l->tail == p);
        for (const struct dlist_node *x = l->tail; x; x = x->prev)
                CHECK_INT_EQ(DLIST_ENTRY((struct dlist_node *) x, struct item, node)->id, model[--i]);
        CHECK_INT_EQ(i, 0);
}

static void test_random_operations_match_model(void) {
        struct item items[N];
        struct dlist l = { 0 };
        int model[N];
        size_t n = 0;

        for (int i = 0; i < N; i++)
                items[i] = (struct item) { .id = i };
        srandom(43);
        for (int step = 0; step < 20000; step++) {
                int id = (int) (random() % N);
                size_t at = n;

                for (size_t k = 0; k < n; k++)
                        if (model[k] == id)
                                at = k;
                CHECK(dlist_linked(&l, &items[id].node) == (at < n));
                if (at < n) {
                        dlist_unlink(&l, &items[id].node);
                        for (size_t k = at; k + 1 < n; k++)
                                model[k] = model[k + 1];
                        n--;
                        CHECK(!dlist_linked(&l, &items[id].node));
                } else if (random() % 2) {
                        dlist_push_head(&l, &items[id].node);
                        for (size_t k = n; k > 0; k--)
                                model[k] = model[k - 1];
                        model[0] = id;
                        n++;
                } else {
                        dlist_push_tail(&l, &items[id].node);
                        model[n++] = id;
                }
                check_matches(&l, model, n);
        }
}

static void test_unlink_of_node_in_no_list_changes_nothing(void) {
        struct item a = { .id = 1 }, b = { .id = 2 }, stray = { .id = 3 };
        struct dlist l = { 0 };
        const int model[] = { 1, 2 };

        dlist_push_tail(&l, &a.node);
        dlist_push_tail(&l, &b.node);
        dlist_unlink(&l, &stray.node);
        check_matches(&l, model, 2);
        dlist_unlink(&l, &a.node);
        dlist_unlink(&l, &a.node); /* twice */
        check_matches(&l, model + 1, 1);
        dlist_unlink(&l, &b.node);
        CHECK(!l.head && !l.tail);
        CHECK(DLIST_ENTRY(l.head, struct item, node) == NULL);
}

static void test_foreach_safe_removes_as_it_goes(void) {
        struct item items[N];
        struct dlist l = { 0 };
        struct item *e;
        int model[N / 2], seen = 0;

        for (int i = 0; i < N; i++) {
                items[i] = (struct item) { .id = i };
                dlist_push_tail(&l, &items[i].node);
        }
        DLIST_FOREACH_SAFE(&l, e, struct item, node) {
                CHECK_INT_EQ(e->id, seen++);
                if (e->id % 2 == 0)
                        dlist_unlink(&l, &e->node);
        }
        CHECK_INT_EQ(seen, N);
        for (int i = 0; i < N / 2; i++)
                model[i] = 2 * i + 1;
        check_matches(&l, model, N / 2);
        seen = 0;
        DLIST_FOREACH_SAFE(&l, e, struct item, node)
                dlist_unlink(&l, &e->node), seen++;
        CHECK_INT_EQ(seen, N / 2);
        CHECK(!l.head && !l.tail);
        DLIST_FOREACH_SAFE(&l, e, struct item, node)
                CHECK(false); /* an empty list: no iteration */
}

int main(void) {
        test_random_operations_match_model();
        test_unlink_of_node_in_no_list_changes_nothing();
        test_foreach_safe_removes_as_it_goes();
        TESTS_DONE();
}
