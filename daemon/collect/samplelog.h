/* The sampler's log (samples_log in bpf/maps.bpf.h): the on-CPU programs
 * append one key per sample to a region of their CPU and generation, and
 * the drain sums the regions into keys and counts, as the counts maps
 * hold them. Pure: the regions' size and the sum, unit-tested without
 * BPF. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"

/* Slots of one region, its head included: the samples one CPU takes in a
 * generation (frequency x the drain interval), with room for a drain that
 * comes late, but no more keys per CPU than the counts map holds per CPU
 * (keys: its max_entries, from max_keys or the kernel_memory budget; see
 * mapsize.h), so that those settings bound the log too. A sample that
 * finds its region full goes to the counts map, so the log's size costs
 * memory, never samples. */
size_t samplelog_slots(unsigned frequency_hz, uint64_t interval_ns, size_t keys, unsigned cpus);

/* Sums n logged keys (each one sample): ret_keys[0..ret) are the distinct
 * keys, in memcmp order, ret_counts[i] how many times ret_keys[i] was
 * logged, and, unless ret_index is NULL, ret_index[i] the index in
 * ret_keys of logged[i] (so each sample's time can name its key: the
 * timeline). order is scratch of n entries. ret_keys must not overlap
 * logged. Returns ret (0 for n == 0, the outputs untouched). */
size_t samplelog_sum(const struct profd_sample_key *logged, size_t n, uint32_t *order,
                     struct profd_sample_key *ret_keys, uint64_t *ret_counts, uint32_t *ret_index);
