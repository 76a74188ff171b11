/* A heatmap's on-CPU samples counted at the base rate (issue 44), as a
 * query counts them: a capture raises the sampling rate, and a sample a
 * raised drain took is worth base_hz / its rate of one. The daemon sums a
 * window's samples in rate-weight.h's fixed point, one sample at a time,
 * per stack, and apportions the sums to whole samples (largest
 * remainder, ties to the stack of the smaller id); a heatmap's range does
 * exactly that over the same samples, so that its folded stacks are those
 * of `profctl query --from --to` over the range. The cells are
 * apportioned the same way (ties to the earlier cell), so that they add
 * up to the window's weighted total rounded, the query's total.
 * heatmap.js mirrors heatmap_range_weigh for the page. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "heatmap.h"

/* The fixed-point weight of n samples taken at hz (0: the base rate)
 * counted at base_hz: n times one sample's, as the daemon adds them one
 * by one (not n samples' weight rounded once, which may differ in the
 * last bit). Saturates at UINT64_MAX. */
uint64_t heatmap_weight_fixed(uint64_t n, unsigned hz, unsigned base_hz);

/* The grid's cells, summed in fixed point (heatmap_add of
 * heatmap_weight_fixed weights), as whole samples: apportioned over the
 * cells that hold any, so that they add up to the fixed total rounded;
 * total, max and outside are set to whole samples. Returns 0 or
 * -ENOMEM. */
int heatmap_weigh_cells(struct heatmap *h);

/* The whole samples of each of n_rows rows (a timeline answer's stack
 * lines, in their order) in the range [from_ns, to_ns): the fixed-point
 * weights of the samples (span_ns 0) there summed per row (sample.row)
 * and apportioned, into ret[0..n_rows). Returns 0, -EINVAL (a row out of
 * range) or -ENOMEM. */
int heatmap_range_weigh(const struct heatmap_sample *samples, size_t n_samples, size_t n_rows, uint64_t from_ns,
                        uint64_t to_ns, uint64_t *ret);
