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

static int key_cmp(const void *a, const void *b) {
        return memcmp(a, b, sizeof(struct profd_sample_key));
}

size_t samplelog_sum(struct profd_sample_key *keys, uint64_t *counts, size_t n) {
        size_t out = 0;

        if (n == 0)
                return 0;
        qsort(keys, n, sizeof(*keys), key_cmp);
        counts[0] = 1;
        for (size_t i = 1; i < n; i++) {
                if (key_cmp(&keys[i], &keys[out]) == 0) {
                        counts[out]++;
                        continue;
                }
                keys[++out] = keys[i];
                counts[out] = 1;
        }
        return out + 1;
}
