/* Samples taken at one rate counted in another (issue 44): a capture
 * raises the on-CPU sampler's rate, so a drain's cpu samples are worth
 * base_hz / drain_hz samples of the rate an answer counts in. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Weighted values are summed in fixed point, RATE_WEIGHT_SHIFT bits below
 * one base-rate sample: each add rounds to 1/2^20 of a sample, so a sum
 * of a million adds is off by half a sample at most, and 2^44 samples
 * (years of a large host) still fit in 64 bits. */
#define RATE_WEIGHT_SHIFT 20
#define RATE_WEIGHT_ONE   (UINT64_C(1) << RATE_WEIGHT_SHIFT)

/* value samples taken at drain_hz, in fixed point of base_hz samples,
 * rounded to the nearest step. drain_hz 0 (a drain stored before its rate
 * was, schema 14), base_hz 0 or equal rates: value exactly. */
uint64_t rate_weight_fixed(uint64_t value, unsigned drain_hz, unsigned base_hz);

/* The rate, counted in an answer of base base_hz, of samples taken at hz
 * by a host that counts them at row_base_hz (issue 44: the fleet's
 * timeline rows carry both, ClickHouse schema version 5): 0 for "the
 * base" (hz or row_base_hz 0, or equal, or base_hz 0); hz itself when
 * the bases agree; else hz scaled to base_hz, to the nearest Hz (at least
 * 1), so that a sample keeps its host's weight row_base_hz / hz within
 * that rounding (0 when it comes out at base_hz). Pure. */
uint32_t rate_weight_rebase_hz(uint64_t hz, uint64_t row_base_hz, unsigned base_hz);

/* A fixed-point sum as whole samples: rounded to the nearest, half up. */
uint64_t rate_weight_round(uint64_t fixed);

/* rate_weight_round(rate_weight_fixed(...)): one value. */
uint64_t rate_weight(uint64_t value, unsigned drain_hz, unsigned base_hz);

/* The fixed-point values of an answer's rows (stacks, or a series'
 * drains) as whole samples that add up to their sum rounded
 * (rate_weight_round): each row gets its whole part, and the samples
 * left go one each to the rows with the largest fractions (the earlier
 * row on a tie). Every row is within one sample of its weighted value and
 * the total within half a sample, so shares and totals stay true; rows
 * worth less than a sample may get 0 (a raise's rare stacks, 0.1 base
 * samples each, are kept in proportion, not each rounded up to a whole
 * sample, which would count them up to ten times over). whole[i] for
 * fixed[i]; n 0 does nothing. Returns 0 or -ENOMEM. */
int rate_weight_apportion(const uint64_t *fixed, size_t n, uint64_t *whole);

/* The drains of a window sampled at a rate other than the base, by id:
 * what an answer's sums look up for each entry. Empty (n 0) for the
 * common window, which then sums exactly as without rates. */
struct rate_map {
        struct rate_map_entry {
                int64_t drain_id;
                unsigned hz;
        } *entries;     /* sorted by drain_id */
        size_t n, cap;
};

/* Adds a drain (ids in any order; rate_map_sort before lookups). Returns 0
 * or -ENOMEM. */
int rate_map_add(struct rate_map *m, int64_t drain_id, unsigned hz);
void rate_map_sort(struct rate_map *m);
/* The drain's rate, or 0 when it is not in the map (the base rate). */
unsigned rate_map_hz(const struct rate_map *m, int64_t drain_id);
void rate_map_done(struct rate_map *m);
