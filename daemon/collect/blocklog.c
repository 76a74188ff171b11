/* Naming the off-CPU log's blocks by the drained keys. */
#include "blocklog.h"

#include <stdlib.h>
#include <string.h>

static int index_cmp(const void *a, const void *b, void *userdata) {
        const struct profd_sample_key *keys = userdata;
        uint32_t ia = *(const uint32_t *) a, ib = *(const uint32_t *) b;
        int c = memcmp(&keys[ia], &keys[ib], sizeof(*keys));

        return c ? c : (ia < ib ? -1 : ia > ib);
}

size_t blocklog_match(const struct profd_sample_key *keys, size_t n_keys, const struct profd_block_slot *logged,
                      size_t n, uint32_t *order, struct drain_block *ret, uint64_t *ret_unmatched,
                      uint64_t *ret_unmatched_ns) {
        size_t out = 0;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n_keys; i++)
                order[i] = (uint32_t) i;
        /* indexes sorted by their keys, then a binary search per block: the
         * blocks of a drain are few next to its keys (on-CPU ones included) */
        qsort_r(order, n_keys, sizeof(*order), index_cmp, (void *) keys);
        for (size_t j = 0; j < n; j++) {
                const struct profd_sample_key *k = &logged[j].key;
                size_t lo = 0, hi = n_keys;

                while (lo < hi) {
                        size_t mid = lo + (hi - lo) / 2;

                        if (memcmp(&keys[order[mid]], k, sizeof(*k)) < 0)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                if (lo < n_keys && memcmp(&keys[order[lo]], k, sizeof(*k)) == 0)
                        ret[out++] = (struct drain_block) { logged[j].end_ns, logged[j].duration_ns, order[lo] };
                else {
                        (*ret_unmatched)++;
                        *ret_unmatched_ns += logged[j].duration_ns;
                }
        }
        return out;
}
