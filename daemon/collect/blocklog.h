/* The off-CPU log (offcpu_log in bpf/maps.bpf.h): the programs that end a
 * block append its key, end and duration to a region of their CPU and
 * generation, besides counting it in the counts map. The drain names each
 * logged block by its key's entry among the drained counts: the timeline
 * of off-CPU blocks (issue 44). Pure: the matching, unit-tested without
 * BPF. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"

/* One logged off-CPU block, as the drain hands it to the writer. */
struct drain_block {
        uint64_t end_mono_ns;   /* CLOCK_MONOTONIC of its end (the switch-in) */
        uint64_t duration_ns;
        uint32_t entry;         /* index in drain_batch.entries: its key */
};

/* Names each of the n logged blocks by the index of its key among keys[0,
 * n_keys) (the drained counts map: distinct keys). order is scratch of
 * n_keys entries. A block whose key is not among them (its insert found
 * the counts map full, PROFD_DROP_MAP_FULL) is left out and added to
 * *ret_unmatched and its duration to *ret_unmatched_ns. Writes the others
 * to ret[0, returned). */
size_t blocklog_match(const struct profd_sample_key *keys, size_t n_keys, const struct profd_block_slot *logged,
                      size_t n, uint32_t *order, struct drain_block *ret, uint64_t *ret_unmatched,
                      uint64_t *ret_unmatched_ns);
