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

/* A fixed-point sum as whole samples: rounded to the nearest, half up,
 * except that a non-zero sum is at least 1: a stack sampled only while
 * the rate was raised stays in the answer (its share over-stated by less
 * than one base sample) rather than vanishing. */
uint64_t rate_weight_round(uint64_t fixed);

/* rate_weight_round(rate_weight_fixed(...)): one value. */
uint64_t rate_weight(uint64_t value, unsigned drain_hz, unsigned base_hz);

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
