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

uint64_t stack_leaf_id(uint64_t id, uint64_t leaf, unsigned attempt) {
        uint64_t h = id ^ 0x9e3779b97f4a7c15ULL * (leaf + 1);

        h ^= attempt * 0xbf58476d1ce4e5b9ULL;
        /* splitmix64's finalizer: every bit of id and leaf moves the id */
        h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
        h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
        h ^= h >> 31;
        h = (h & PROFD_ID_HASH_MASK) | (3ULL << PROFD_ID_CLASS_SHIFT);
        /* class 3 holds the sentinels too */
        if (h == PROFD_STACK_NONE || h == PROFD_STACK_LOST)
                h -= 2;
        return h;
}

struct stack_trace *stack_trace_with_leaf(const struct stack_trace *t, uint64_t leaf) {
        struct stack_trace *s;

        if (t->n >= PROFD_MAX_FRAMES) {
                errno = ELOOP;
                return NULL;
        }
        s = malloc(sizeof(*s) + (t->n + 1) * sizeof(uint64_t));
        if (!s) {
                errno = ENOMEM;
                return NULL;
        }
        s->n = t->n + 1;
        s->end = t->end;
        s->ips[0] = leaf;
        memcpy(s->ips + 1, t->ips, t->n * sizeof(uint64_t));
        return s;
}

bool stack_trace_equal(const struct stack_trace *a, const struct stack_trace *b) {
        return a->n == b->n && a->end == b->end && memcmp(a->ips, b->ips, a->n * sizeof(uint64_t)) == 0;
}

bool stack_trace_is_leaf_and(const struct stack_trace *t, uint64_t leaf, const struct stack_trace *callers) {
        return t->n == callers->n + 1 && t->end == callers->end && t->ips[0] == leaf &&
               memcmp(t->ips + 1, callers->ips, callers->n * sizeof(uint64_t)) == 0;
}

int stacks_put_with_leaf(hashmap *stacks, uint64_t id, const struct stack_trace *callers, uint64_t leaf,
                         uint64_t *ret_id) {
        if (callers->n >= PROFD_MAX_FRAMES)
                return -ELOOP;
        for (unsigned attempt = 0; attempt < STACK_LEAF_ATTEMPTS; attempt++) {
                uint64_t sid = stack_leaf_id(id, leaf, attempt);
                void *v;

                if (hashmap_get(stacks, UINT64_TO_KEY(sid), &v) == 0) {
                        /* compared in place: most keys of a drain find
                         * their stack there already */
                        if (!stack_trace_is_leaf_and(v, leaf, callers))
                                continue; /* another stack has this id */
                } else {
                        struct stack_trace *t = stack_trace_with_leaf(callers, leaf);
                        int r;

                        if (!t)
                                return -errno;
                        r = hashmap_put(stacks, UINT64_TO_KEY(sid), t);
                        if (r < 0) {
                                free(t);
                                return r;
                        }
                }
                *ret_id = sid;
                return 0;
        }
        return -EEXIST;
}
