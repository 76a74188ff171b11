/* Stacks put back together from the kernel's stack nodes (see "Stack
 * nodes" in bpf/profd.h): pure, so the unit tests feed it chains. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "collector.h"
#include "hashmap.h"

/* One drained node: frames innermost first. */
struct stack_node {
        uint64_t parent;  /* id of the next outer node, PROFD_NODE_ROOT for none */
        uint32_t n;
        uint8_t end;
        uint64_t ips[];
};

/* A copy of a node's value as the kernel map holds it (value_size bytes:
 * head, then the class's frames), or NULL: out of memory, or n beyond the
 * class (-EINVAL in errno terms; such a node is skipped). */
struct stack_node *stack_node_from_value(const void *value, size_t value_size);

/* The stack whose innermost node is id, from nodes (id -> struct
 * stack_node*): its frames innermost first, end from the innermost node.
 * Returns 0 and a new stack_trace (free()), -ENOENT if a node of the chain
 * is missing, -ELOOP if the chain holds more than PROFD_MAX_FRAMES frames
 * (no chain BPF stores; a cycle), or -ENOMEM. */
int stack_nodes_assemble(const hashmap *nodes, uint64_t id, struct stack_trace **ret);

/* The sampler keeps a user stack's leaf in its key (PROFD_KEY_LEAF in
 * bpf/profd.h) and the callers in the nodes; the drain puts them together
 * under an id of their own, which no node has (class 3, never a
 * sentinel). stack_leaf_id is that id for the stack id (the callers) and
 * the leaf; attempt 1, 2, ... give others, for the rare id a different
 * stack took already in the same drain. */
uint64_t stack_leaf_id(uint64_t id, uint64_t leaf, unsigned attempt);

/* A new stack (free()): leaf, then t's frames, t's end. NULL with errno
 * ENOMEM, or ELOOP if t has PROFD_MAX_FRAMES frames already (no stack
 * the sampler stores). */
struct stack_trace *stack_trace_with_leaf(const struct stack_trace *t, uint64_t leaf);

bool stack_trace_equal(const struct stack_trace *a, const struct stack_trace *b);
/* Is t the stack leaf + callers? (stack_trace_with_leaf's, without
 * building it) */
bool stack_trace_is_leaf_and(const struct stack_trace *t, uint64_t leaf, const struct stack_trace *callers);

/* Puts the stack leaf + callers (callers: the stack id names) into stacks
 * (id -> struct stack_trace*) under the first of its leaf ids
 * (stack_leaf_id, attempts 0, 1, ...) that is free or holds the same
 * stack, and returns that id in *ret_id. -EEXIST if the first
 * STACK_LEAF_ATTEMPTS are other stacks' (never met: ids of 62 bits),
 * -ELOOP (see stack_trace_with_leaf), or -ENOMEM. */
#define STACK_LEAF_ATTEMPTS 64
int stacks_put_with_leaf(hashmap *stacks, uint64_t id, const struct stack_trace *callers, uint64_t leaf,
                         uint64_t *ret_id);
