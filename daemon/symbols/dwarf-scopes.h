/* The DIE scope tree of one DWARF CU, for finding the innermost scope of an address without walking every DIE each time. */
#pragma once

#include <elfutils/libdw.h>
#include <stdint.h>

#include "macro.h"

/* No node: the parent of a child of the CU, or no scope at all. */
#define SCOPE_NONE UINT32_MAX

struct cu_scopes;

/* Builds the tree of the CU at cudie: every DIE with address ranges that
 * libdw's scope walk (dwarf_getscopes) would descend to, with its ranges.
 * Unreadable DWARF ends the walk where it is (a smaller tree, not an
 * error). Returns 0 and *ret, or -ENOMEM. */
int cu_scopes_build(Dwarf_Die *cudie, struct cu_scopes **ret);
/* Accepts NULL, returns NULL. */
struct cu_scopes *cu_scopes_free(struct cu_scopes *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cu_scopes *, cu_scopes_free);

/* The memory the tree holds, for the cache budget. */
uint64_t cu_scopes_bytes(const struct cu_scopes *c);

/* The innermost scope containing pc, as dwarf_getscopes finds it: the first
 * child of the CU (in DIE order) containing pc, then its first child
 * containing pc, and so on. SCOPE_NONE when no child of the CU contains it. */
uint32_t cu_scopes_innermost(const struct cu_scopes *c, uint64_t pc);
/* A node's DIE (valid while the Dwarf is open) and the node enclosing it
 * (SCOPE_NONE for a child of the CU). node must be a node of c. */
Dwarf_Die *cu_scopes_die(const struct cu_scopes *c, uint32_t node);
uint32_t cu_scopes_parent(const struct cu_scopes *c, uint32_t node);
