/* A CU's scope tree: the DIEs code addresses fall in, grown per CU as addresses land in them, searched per address as dwarf_getscopes would. */
#include "dwarf-scopes.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bsearch.h"
#include "helpers.h"

/* DIE nesting deeper than this (real code stays under a few hundred: deep
 * template inlining) is not followed, so crafted DWARF cannot exhaust the
 * stack of the recursive walk. */
#define SCOPE_DEPTH_MAX 1024

struct scope_node {
        Dwarf_Die die;
        uint32_t parent; /* SCOPE_NONE for a child of the CU */
        uint32_t first_child;
        uint32_t next_sibling;
        uint32_t first_range; /* into cu_scopes.ranges */
        uint32_t n_ranges;
        uint16_t depth; /* of its DIE below the CU's, for SCOPE_DEPTH_MAX */
        bool unread; /* it may have children that were not read yet */
};

struct pc_range {
        uint64_t lo, hi; /* [lo, hi) */
};

/* A range of a child of the CU, for binary search: there are thousands. */
struct top_range {
        uint64_t lo, hi;
        uint32_t node;
};

/* The DIEs of one CU that code addresses can fall in, as a tree: what
 * dwarf_getscopes searches, kept per CU instead of walking every DIE of the
 * CU for each address (which made C++ CUs, with thousands of DIEs, resolve
 * at a few hundred addresses per second). The tree is grown as addresses
 * land in it: the CU's children first, and a node's children when a lookup
 * descends into it. A build host's freshly built binaries are looked up
 * at one or two addresses in most of their CUs, and reading every DIE of
 * every function of such a CU (each parameter's and variable's attributes
 * too) was 13.5% of the writer's user time on the build loop. Measured again when the
 * symbolizer was split: dwarf_getscopes for the innermost scope plus
 * dwarf_getscopes_die for the inline chain, as eu-addr2line does, give the
 * same frames (the oracle test passes) but resolve cold addresses at 164/s
 * instead of 127,685/s on the C++ fixture, 10,255/s instead of 1,302,442/s
 * on the C one and 3,411/s instead of 9,179/s on libc (bench-symbolize). */
struct cu_scopes {
        struct scope_node *nodes; /* in DIE order (preorder) */
        size_t n_nodes, nodes_allocated;
        struct pc_range *ranges;
        size_t n_ranges, ranges_allocated;
        size_t dies_read; /* the DIEs read for it so far, for tests and figures */
        struct top_range *top; /* sorted by lo */
        uint64_t *top_max_hi; /* the largest hi of top[0..i] */
        size_t n_top;
};

struct cu_scopes *cu_scopes_free(struct cu_scopes *c) {
        if (c) {
                free(c->nodes);
                free(c->ranges);
                free(c->top);
                free(c->top_max_hi);
                free(c);
        }
        return NULL;
}

uint64_t cu_scopes_bytes(const struct cu_scopes *c) {
        return sizeof(*c) + c->nodes_allocated * sizeof(*c->nodes) + c->ranges_allocated * sizeof(*c->ranges) +
                c->n_top * (sizeof(*c->top) + sizeof(*c->top_max_hi));
}

/* The DIEs libdw's scope walk descends into (libdw_visit_scopes.c); those
 * without addresses of their own (namespaces, classes) are then pruned by
 * dwarf_getscopes, so only the ones with ranges matter here. */
static bool tag_may_have_scopes(int tag) {
        switch (tag) {
        case DW_TAG_compile_unit:
        case DW_TAG_module:
        case DW_TAG_lexical_block:
        case DW_TAG_with_stmt:
        case DW_TAG_catch_block:
        case DW_TAG_try_block:
        case DW_TAG_entry_point:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_subprogram:
                return true;
        default:
                return false;
        }
}

/* Adds the children of parent_die that have address ranges as children of
 * node parent (their own children are read when a lookup descends into
 * them); *last is the parent's last child so far. The children of an
 * imported (dwz partial) unit count as siblings, as for libdw. depth is
 * that of parent_die's children. Returns 0 or -ENOMEM; unreadable DWARF
 * ends the walk there. */
static int cu_scopes_walk(struct cu_scopes *c, Dwarf_Die *parent_die, uint32_t parent, uint32_t *last,
                          unsigned depth) {
        Dwarf_Die child;
        int r;

        if (depth > SCOPE_DEPTH_MAX || dwarf_child(parent_die, &child) != 0)
                return 0;
        do {
                Dwarf_Addr base, start, end;
                ptrdiff_t off = 0;
                uint32_t idx;
                size_t first_range = c->n_ranges;
                int tag = dwarf_tag(&child);

                c->dies_read++;
                if (tag == DW_TAG_imported_unit) {
                        Dwarf_Attribute attr;
                        Dwarf_Die unit;

                        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) &&
                            dwarf_tag(&unit) != DW_TAG_compile_unit) {
                                r = cu_scopes_walk(c, &unit, parent, last, depth + 1);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }

                while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0) {
                        if (start >= end)
                                continue;
                        r = array_grow((void **) &c->ranges, &c->ranges_allocated, c->n_ranges + 1,
                                       sizeof(*c->ranges));
                        if (r < 0)
                                return r;
                        c->ranges[c->n_ranges++] = (struct pc_range) { start, end };
                }
                if (c->n_ranges == first_range || c->n_nodes >= SCOPE_NONE || c->n_ranges >= SCOPE_NONE)
                        continue;

                r = array_grow((void **) &c->nodes, &c->nodes_allocated, c->n_nodes + 1, sizeof(*c->nodes));
                if (r < 0)
                        return r;
                idx = (uint32_t) c->n_nodes++;
                c->nodes[idx] = (struct scope_node) {
                        .die = child,
                        .parent = parent,
                        .first_child = SCOPE_NONE,
                        .next_sibling = SCOPE_NONE,
                        .first_range = (uint32_t) first_range,
                        .n_ranges = (uint32_t) (c->n_ranges - first_range),
                        .depth = (uint16_t) depth,
                        .unread = tag_may_have_scopes(tag) && dwarf_haschildren(&child) > 0,
                };
                if (*last == SCOPE_NONE) {
                        if (parent != SCOPE_NONE)
                                c->nodes[parent].first_child = idx;
                } else
                        c->nodes[*last].next_sibling = idx;
                *last = idx;
        } while (dwarf_siblingof(&child, &child) == 0);
        return 0;
}

/* Reads the children of node, once. Returns 0 or -ENOMEM. */
static int cu_scopes_read_children(struct cu_scopes *c, uint32_t node) {
        /* the walk grows c->nodes: the DIE is copied out first */
        Dwarf_Die die = c->nodes[node].die;
        uint32_t last = SCOPE_NONE;
        int r;

        if (!c->nodes[node].unread)
                return 0;
        r = cu_scopes_walk(c, &die, node, &last, c->nodes[node].depth + 1u);
        if (r < 0)
                return r;
        c->nodes[node].unread = false;
        return 0;
}

static int top_range_compare(const void *a, const void *b) {
        const struct top_range *x = a, *y = b;

        if (x->lo != y->lo)
                return x->lo < y->lo ? -1 : 1;
        return x->node < y->node ? -1 : x->node > y->node;
}

/* Builds the scope tree of the CU at cudie. Returns 0 and *ret, or -ENOMEM. */
int cu_scopes_build(Dwarf_Die *cudie, struct cu_scopes **ret) {
        _cleanup_(cu_scopes_freep) struct cu_scopes *c = NULL;
        uint32_t last = SCOPE_NONE;
        size_t n_top_ranges = 0, k = 0;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = cu_scopes_walk(c, cudie, SCOPE_NONE, &last, 0);
        if (r < 0)
                return r;

        for (size_t i = 0; i < c->n_nodes; i++)
                if (c->nodes[i].parent == SCOPE_NONE)
                        n_top_ranges += c->nodes[i].n_ranges;
        if (n_top_ranges > 0) {
                c->top = reallocarray(NULL, n_top_ranges, sizeof(*c->top));
                c->top_max_hi = reallocarray(NULL, n_top_ranges, sizeof(*c->top_max_hi));
                if (!c->top || !c->top_max_hi)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_nodes; i++) {
                const struct scope_node *n = &c->nodes[i];

                if (n->parent != SCOPE_NONE)
                        continue;
                for (uint32_t j = 0; j < n->n_ranges; j++)
                        c->top[k++] = (struct top_range) {
                                .lo = c->ranges[n->first_range + j].lo,
                                .hi = c->ranges[n->first_range + j].hi,
                                .node = (uint32_t) i,
                        };
        }
        c->n_top = k;
        if (k > 0)
                qsort(c->top, k, sizeof(*c->top), top_range_compare);
        for (size_t i = 0; i < k; i++)
                c->top_max_hi[i] = i == 0 ? c->top[i].hi : MAX(c->top_max_hi[i - 1], c->top[i].hi);
        *ret = TAKE_PTR(c);
        return 0;
}

static bool scope_node_contains(const struct cu_scopes *c, uint32_t node, uint64_t pc) {
        const struct scope_node *n = &c->nodes[node];

        for (uint32_t j = 0; j < n->n_ranges; j++)
                if (pc >= c->ranges[n->first_range + j].lo && pc < c->ranges[n->first_range + j].hi)
                        return true;
        return false;
}

int cu_scopes_innermost(struct cu_scopes *c, uint64_t pc, uint32_t *ret) {
        /* lo is the number of top ranges starting at or before pc; going
         * down from there, any range containing pc has a prefix maximum
         * above pc, so the scan stops at the first that has none. */
        size_t lo = UPPER_BOUND_BY(c->top, c->n_top, lo, pc);
        uint32_t node = SCOPE_NONE;
        int r;

        for (size_t i = lo; i > 0 && c->top_max_hi[i - 1] > pc; i--)
                if (pc < c->top[i - 1].hi && c->top[i - 1].node < node)
                        node = c->top[i - 1].node;
        *ret = node;
        if (node == SCOPE_NONE)
                return 0;

        for (;;) {
                uint32_t child;

                r = cu_scopes_read_children(c, node);
                if (r < 0)
                        return r;
                child = c->nodes[node].first_child;
                while (child != SCOPE_NONE && !scope_node_contains(c, child, pc))
                        child = c->nodes[child].next_sibling;
                if (child == SCOPE_NONE)
                        break;
                node = child;
        }
        *ret = node;
        return 0;
}

size_t cu_scopes_dies_read(const struct cu_scopes *c) {
        return c->dies_read;
}

Dwarf_Die *cu_scopes_die(const struct cu_scopes *c, uint32_t node) {
        /* libdw takes DIEs by non-const pointer but does not change them. */
        return (Dwarf_Die *) &c->nodes[node].die;
}

uint32_t cu_scopes_parent(const struct cu_scopes *c, uint32_t node) {
        return c->nodes[node].parent;
}
