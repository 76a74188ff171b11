/* One binary search for every sorted array: the partition point, and the two bounds built on it. */
#pragma once

#include <stddef.h>

/* The index of the first element of array[0..n) for which pred is false,
 * where pred (an expression over the element pointer named elem) is true
 * for a prefix of the array and false for the rest: n when it holds for
 * all, 0 when for none. Never fails; O(log n) evaluations of pred. array
 * is evaluated once per step, so pass a plain lvalue. As C++'s
 * std::partition_point and Rust's slice::partition_point. */
#define PARTITION_POINT(array, n, elem, pred)                                    \
        ({                                                                       \
                size_t _pp_lo = 0, _pp_hi = (n);                                 \
                while (_pp_lo < _pp_hi) {                                        \
                        size_t _pp_mid = _pp_lo + (_pp_hi - _pp_lo) / 2;         \
                        const __typeof__(*(array)) *elem = &(array)[_pp_mid];    \
                        if (pred)                                                \
                                _pp_lo = _pp_mid + 1;                            \
                        else                                                     \
                                _pp_hi = _pp_mid;                                \
                }                                                                \
                _pp_lo;                                                          \
        })

/* For an array sorted by field: the number of elements whose field is at
 * most key, so element [i - 1] (when i > 0) is the last one starting at or
 * before key: the only one whose range [field, end) can contain key when
 * the ranges are disjoint. */
#define UPPER_BOUND_BY(array, n, field, key) PARTITION_POINT(array, n, _ub_e, _ub_e->field <= (key))

/* For an array sorted by field: the index of the first element whose field
 * is at least key (n when there is none): where key is, or would be
 * inserted. */
#define LOWER_BOUND_BY(array, n, field, key) PARTITION_POINT(array, n, _lb_e, _lb_e->field < (key))

/* The same two for arrays of plain numbers. */
#define UPPER_BOUND(array, n, key) PARTITION_POINT(array, n, _ub_e, *_ub_e <= (key))
#define LOWER_BOUND(array, n, key) PARTITION_POINT(array, n, _lb_e, *_lb_e < (key))
