/* The DIE scope tree of one DWARF CU, for finding the innermost scope of an address without walking every DIE each time; grown as lookups descend. */
#pragma once

#include <elfutils/libdw.h>
#include <stdint.h>

#include "macro.h"

/* No node: the parent of a child of the CU, or no scope at all. */
#define SCOPE_NONE UINT32_MAX

struct cu_scopes;

/* Starts the tree of the CU at cudie: the DIEs with address ranges that
 * libdw's scope walk (dwarf_getscopes) would descend to, with their ranges;
 * the CU's children now, each node's children when a lookup first descends
 * into it. Unreadable DWARF ends a walk where it is (a smaller tree, not an
 * error). Returns 0 and *ret, or -ENOMEM. */
int cu_scopes_build(Dwarf_Die *cudie, struct cu_scopes **ret);
/* Accepts NULL, returns NULL. */
struct cu_scopes *cu_scopes_free(struct cu_scopes *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cu_scopes *, cu_scopes_free);

/* The memory the tree holds, for the cache budget; it grows with lookups. */
uint64_t cu_scopes_bytes(const struct cu_scopes *c);
/* The DIEs read for the tree so far (its nodes and the DIEs without
 * ranges among their siblings). */
size_t cu_scopes_dies_read(const struct cu_scopes *c);

/* The innermost scope containing pc, as dwarf_getscopes finds it: the first
 * child of the CU (in DIE order) containing pc, then its first child
 * containing pc, and so on; the children of the nodes on the way are read
 * if they were not yet. *ret is SCOPE_NONE when no child of the CU contains
 * pc. Returns 0, or -ENOMEM (*ret then the scope reached, valid). Nodes stay
 * valid as the tree grows (they are numbers, not pointers). */
int cu_scopes_innermost(struct cu_scopes *c, uint64_t pc, uint32_t *ret);
/* A node's DIE (valid while the Dwarf is open) and the node enclosing it
 * (SCOPE_NONE for a child of the CU). node must be a node of c. */
Dwarf_Die *cu_scopes_die(const struct cu_scopes *c, uint32_t node);
uint32_t cu_scopes_parent(const struct cu_scopes *c, uint32_t node);
