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

/* Sums n logged keys (each one sample) in place: keys[0..ret) are the
 * distinct keys, in memcmp order, counts[i] how many times keys[i] was
 * logged. Returns ret. */
size_t samplelog_sum(struct profd_sample_key *keys, uint64_t *counts, size_t n);
