/* One intrusive doubly linked list with both ends, for the caches whose
 * entries leave from anywhere and whose oldest goes first (the unwinder's
 * unused files, the runtime names' code objects and idle shared objects). */
#pragma once

#include <stdbool.h>

#include "macro.h"

/* Embedded in an element; both links NULL while it is in no list. */
struct dlist_node {
        struct dlist_node *prev, *next;
};

/* Empty: both NULL ({ 0 } or calloc). */
struct dlist {
        struct dlist_node *head, *tail;
};

/* The element that embeds node (NULL for NULL), as member of type. */
#define DLIST_ENTRY(node, type, member)                                          \
        ({                                                                       \
                struct dlist_node *_dl_n = (node);                               \
                _dl_n ? container_of(_dl_n, type, member) : (type *) NULL;       \
        })

/* Every element of l from the head, as e (type * through member); the
 * body may unlink or free e itself, and no other element. */
#define DLIST_FOREACH_SAFE(l, e, type, member)                                            \
        for (struct dlist_node *_dl_i = (l)->head, *_dl_next = _dl_i ? _dl_i->next : NULL; \
             _dl_i && ((e) = container_of(_dl_i, type, member), true);                    \
             _dl_i = _dl_next, _dl_next = _dl_i ? _dl_i->next : NULL)

static inline bool dlist_linked(const struct dlist *l, const struct dlist_node *n) {
        return n->prev || n->next || l->head == n;
}

/* Takes n out of l. A node in no list is left as it is. */
static inline void dlist_unlink(struct dlist *l, struct dlist_node *n) {
        if (n->prev)
                n->prev->next = n->next;
        else if (l->head == n)
                l->head = n->next;
        if (n->next)
                n->next->prev = n->prev;
        else if (l->tail == n)
                l->tail = n->prev;
        n->prev = n->next = NULL;
}

/* Adds n, in no list, at the head of l. */
static inline void dlist_push_head(struct dlist *l, struct dlist_node *n) {
        n->prev = NULL;
        n->next = l->head;
        if (l->head)
                l->head->prev = n;
        else
                l->tail = n;
        l->head = n;
}

/* Adds n, in no list, at the tail of l. */
static inline void dlist_push_tail(struct dlist *l, struct dlist_node *n) {
        n->next = NULL;
        n->prev = l->tail;
        if (l->tail)
                l->tail->next = n;
        else
                l->head = n;
        l->tail = n;
}
