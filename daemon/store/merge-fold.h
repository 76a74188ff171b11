/* Rare stacks folded when retention merges drains into 1- and 10-minute
 * buckets (issue 43; setting `retention_fold`, profd.conf(5)). A build
 * host's compilers leave a new stack at nearly every sample: kept whole in
 * the merged tiers, a day of them does not fit the store's maximum. A
 * merge step weighs the stacks of each kind in the bucket it merges into
 * (all processes), and each stack keeps the deepest prefix whose node
 * holds the share (stack-fold.h); the frames below become one `[folded]`
 * frame. The folded stacks are stored like any other, so queries, flame
 * graphs and exports read them unchanged; the stacks no entry names any
 * more go with retention's removal of unreferenced rows.
 *
 * Nothing is folded while a timeline of the drains names their stacks
 * (drains_timed). Not for use outside daemon/store/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "hashmap.h"

/* The folded frame: a location of this mapping, address 0, whose function
 * has this name. */
#define FOLDED_NAME "[folded]"

/* Plans the folding of the entries of a merge step: those of the drains
 * in step_drains (drain id -> anything), held in the blocks keyed in
 * step_keys_sql (a parenthesised SELECT of drain ids). The tree is weighed
 * over the whole bucket the step merges into, the drains in bucket (a
 * superset of step_drains: a busy host's 10-minute bucket takes several
 * steps, and a share is of the bucket, not of a step), held in the blocks
 * keyed in bucket_keys_sql; unless the bucket names more than max_stacks
 * (stack, kind), whose frames would take too much memory: then over the
 * step alone, and *ret_bucket_too_big is set. Stores each folded stack
 * the step needs that is not stored yet (and the folded frame), inside
 * the caller's transaction. *ret_map is set to NULL when nothing folds,
 * else to a map for merge_fold_stack (freed with hashmap_free);
 * *ret_folded to the number of (stack, kind) of the step folded. Returns
 * 0 or a negative errno, logged. */
int merge_fold_plan(const struct db *d, const char *bucket_keys_sql, const hashmap *bucket, const char *step_keys_sql,
                    const hashmap *step_drains, size_t max_stacks, uint32_t share_ppm, hashmap **ret_map,
                    uint64_t *ret_folded, bool *ret_bucket_too_big);

/* The stack an entry of kind `kind` on `stack` is written under. */
int64_t merge_fold_stack(const hashmap *map, int64_t stack, int kind);
