/* Stacks put back together from the kernel's stack nodes (see "Stack
 * nodes" in bpf/profd.h): pure, so the unit tests feed it chains. */
#pragma once

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
