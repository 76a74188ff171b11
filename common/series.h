/* Time series from drains: spreads each drain's value over fixed-width time
 * buckets in proportion to how much of the drain's interval falls in each,
 * in whole units (largest remainder), so the points add up exactly to the
 * drains' values. The part of the value with complete stacks is spread
 * along (complete and the rest each by the same rule), so every point says
 * how much of it is complete. Pure, streaming: drains come in order of start time and a
 * bucket is emitted once no later drain can add to it. */
#pragma once

#include <stdint.h>

/* Most points one answer may have: at 1 s steps, eleven days. */
#define SERIES_MAX_POINTS 1000000ULL

typedef struct series series;

/* Called for each bucket with a non-zero value, in time order; t_ns is the
 * bucket's start, a multiple of the step since the Unix epoch. A negative
 * return stops the series and is passed on. */
typedef int (*series_point_fn)(uint64_t t_ns, uint64_t value, uint64_t complete, void *userdata);

/* step_ns > 0. Returns NULL on out of memory. */
series *series_new(uint64_t step_ns, series_point_fn fn, void *userdata);
series *series_free(series *s);

/* Adds a drain covering [start_ns, end_ns) (an empty or reversed interval
 * puts everything in start_ns's bucket), of which complete (<= value) had
 * complete stacks. Drains must come in order of start_ns. Returns 0,
 * -E2BIG when the drain alone spans more than SERIES_MAX_POINTS buckets,
 * -EINVAL when complete > value, -ENOMEM, or what the callback returned. */
int series_add(series *s, uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete);

/* Emits the buckets still held. Returns 0 or what the callback returned. */
int series_finish(series *s);

/* Points emitted so far. */
uint64_t series_points(const series *s);
