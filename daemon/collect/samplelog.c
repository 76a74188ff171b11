/* Sizes of the sampler's log and the drain's sum of it. */
#include "samplelog.h"

#include <stdlib.h>
#include <string.h>

/* A drain may come late by half an interval (a slow store, a busy host),
 * and a sample or two more than the frequency per second (timer slack). */
#define LATE_NUM 3
#define LATE_DEN 2
#define SLACK 16

size_t samplelog_slots(unsigned frequency_hz, uint64_t interval_ns, size_t keys, unsigned cpus) {
        uint64_t ms = (interval_ns + 999999) / 1000000;
        uint64_t per_gen = ((uint64_t) frequency_hz * ms + 999) / 1000;
        uint64_t records = per_gen * LATE_NUM / LATE_DEN + SLACK;
        uint64_t per_cpu = keys / (cpus ? cpus : 1);

        if (records > per_cpu)
                records = per_cpu;
        return records ? (size_t) records + 1 : 0;
}

/* Orders indexes by the key they point at; equal keys by index, so the
 * order does not depend on qsort's. */
static int index_cmp(const void *a, const void *b, void *userdata) {
        const struct profd_sample_key *keys = userdata;
        uint32_t ia = *(const uint32_t *) a, ib = *(const uint32_t *) b;
        int c = memcmp(&keys[ia], &keys[ib], sizeof(*keys));

        if (c != 0)
                return c;
        return ia < ib ? -1 : ia > ib;
}

size_t samplelog_sum(const struct profd_sample_key *logged, size_t n, uint32_t *order,
                     struct profd_sample_key *ret_keys, uint64_t *ret_counts, uint32_t *ret_index) {
        size_t out = 0;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                order[i] = (uint32_t) i;
        /* indexes sorted, not the keys: 4 bytes moved per swap, not 48,
         * and the permutation is what the timeline needs */
        qsort_r(order, n, sizeof(*order), index_cmp, (void *) logged);
        ret_keys[0] = logged[order[0]];
        ret_counts[0] = 1;
        if (ret_index)
                ret_index[order[0]] = 0;
        for (size_t j = 1; j < n; j++) {
                const struct profd_sample_key *k = &logged[order[j]];

                if (memcmp(k, &ret_keys[out], sizeof(*k)) == 0)
                        ret_counts[out]++;
                else {
                        ret_keys[++out] = *k;
                        ret_counts[out] = 1;
                }
                if (ret_index)
                        ret_index[order[j]] = (uint32_t) out;
        }
        return out + 1;
}
