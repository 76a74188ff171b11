/* The quality report of one answer, added up from the stacks the answer is
 * made of and the drops of its window (common/quality.h has the report).
 * Pure: no store, no socket; the unit test feeds it stacks. */
#pragma once

#include <stdint.h>

#include "protocol.h"
#include "quality.h"

/* Adds one answered stack: its value to total, to complete, unknown or a
 * truncation reason by how its user part ended, and to each reason one of
 * its user frames has no name for. */
void quality_add_stack(struct quality *q, const struct store_stack_out *stack);
/* The reasons its user frames have no name for, as bits (1 << enum
 * quality_unresolved); 0 when every user frame has a name. With the
 * stack's user_end, all that quality_add_stack() looks at. */
unsigned quality_unresolved_mask(const struct store_stack_out *stack);
/* quality_add_stack() of a stack known by its value, user_end and
 * quality_unresolved_mask(): a stack summed several times (per host) is
 * classified once. */
void quality_add_class(struct quality *q, uint64_t value, int user_end, unsigned unresolved_mask);

/* Adds a drop reason's count in the window (store_query_drops). Reasons
 * that are not losses (the unwinder's truncation counters, counted per stack
 * instead) are ignored. */
void quality_add_drop(struct quality *q, const char *reason, uint64_t count);

/* The quality index of a stored stack end (stacks.user_end): -1 complete,
 * -2 unknown, else an enum quality_truncated. */
int quality_end_class(int user_end);
