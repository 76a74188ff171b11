/* Chains of stack nodes back into stacks. */
#include "stacknodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct stack_node *stack_node_from_value(const void *value, size_t value_size) {
        struct profd_node_head h;
        struct stack_node *s;

        if (value_size < sizeof(h))
                return NULL;
        memcpy(&h, value, sizeof(h));
        if (h.n == 0 || h.n > (value_size - sizeof(h)) / sizeof(uint64_t)) {
                errno = EINVAL;
                return NULL;
        }
        s = malloc(sizeof(*s) + h.n * sizeof(uint64_t));
        if (!s) {
                errno = ENOMEM;
                return NULL;
        }
        s->parent = h.parent;
        s->n = h.n;
        s->end = h.end;
        memcpy(s->ips, (const char *) value + sizeof(h), h.n * sizeof(uint64_t));
        return s;
}

int stack_nodes_assemble(const hashmap *nodes, uint64_t id, struct stack_trace **ret) {
        const struct stack_node *chain[(PROFD_MAX_FRAMES + PROFD_NODE_CHUNK - 1) / PROFD_NODE_CHUNK];
        size_t depth = 0, n = 0;
        struct stack_trace *t;
        void *v;

        /* innermost node first, following parents; every node holds at
         * least one frame, so a cycle ends at the frame limit */
        for (uint64_t at = id; at != PROFD_NODE_ROOT;) {
                const struct stack_node *s;

                if (hashmap_get(nodes, UINT64_TO_KEY(at), &v) < 0)
                        return -ENOENT;
                s = v;
                if (depth == sizeof(chain) / sizeof(chain[0]) || n + s->n > PROFD_MAX_FRAMES)
                        return -ELOOP;
                chain[depth++] = s;
                n += s->n;
                at = s->parent;
        }
        if (depth == 0)
                return -ENOENT; /* id is the root marker: no stack */
        t = malloc(sizeof(*t) + n * sizeof(uint64_t));
        if (!t)
                return -ENOMEM;
        t->n = 0;
        t->end = chain[0]->end;
        for (size_t i = 0; i < depth; i++) {
                memcpy(t->ips + t->n, chain[i]->ips, chain[i]->n * sizeof(uint64_t));
                t->n += chain[i]->n;
        }
        *ret = t;
        return 0;
}
