/* Sizes of profd's aggregation maps (counts_<gen>, the stack node maps
 * frames<class>_<gen>, the sampler's log and the off-CPU log) from the machine, the
 * settings and the kernel_memory budget, and what the kernel locks for
 * them. Pure arithmetic, no BPF: the
 * unit tests and the kmem bench use the same figures as the collector. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/profd.h"

struct mapsize_input {
        unsigned cpus;            /* possible CPUs (per-CPU extras of each map) */
        unsigned frequency_hz;    /* on-CPU samples per second per CPU */
        uint64_t interval_ns;     /* drain interval: one generation's time */
        bool cpu;                 /* on-CPU sampling */
        bool blocks;              /* off-CPU or wakeup: blocks and wakers add keys and stacks */
        unsigned offcpu_rate;     /* off-CPU blocks logged per second per CPU (the off-CPU log,
                                   * blocklog.h); 0: no log */
        uint64_t max_keys;        /* entries of each counts map; 0: sized here */
        uint64_t max_stacks;      /* stack nodes per generation, all classes; 0: sized here */
        uint64_t kernel_memory;   /* bytes all of them may lock, both generations */
};

struct mapsize_plan {
        size_t keys;                      /* max_entries of counts_0 and counts_1 */
        size_t nodes[PROFD_CLASS__MAX];   /* max_entries of frames<class>_0 and _1 */
        size_t stacks;                    /* the nodes of one generation, all classes */
        size_t log_slots;                 /* slots of a region of the sampler's log (samplelog.h);
                                           * 0: no log (no on-CPU sampling) */
        size_t block_slots;               /* slots of a region of the off-CPU log (head included),
                                           * sized as the sampler's; 0: no log */
        uint64_t bytes;                   /* the kernel's memory for all 8 maps and the logs */
        uint64_t demand_bytes;            /* what the demand alone would have taken */
        bool capped;                      /* kernel_memory made the maps smaller than the demand */
};

/* Memory the kernel locks for a preallocated BPF hash map (not per-CPU, not
 * LRU), as bpftool reports it (bytes_memlock; kernel/bpf/hashtab.c,
 * htab_map_mem_usage): the struct, a bucket per power of two of entries,
 * and an element per entry plus one spare per CPU. */
uint64_t mapsize_hash_bytes(size_t entries, size_t key_size, size_t value_size, unsigned cpus);

/* The plan for in. Never fails: explicit max_keys / max_stacks are taken as
 * they are (then bytes may exceed kernel_memory); what is sized here is
 * shrunk until the total fits kernel_memory, down to small minimums. */
void mapsize_plan(const struct mapsize_input *in, struct mapsize_plan *ret);

/* How full one generation's maps are: the entries inserted since it
 * began (BPF's PROFD_CNT_NODES_NEW_* and PROFD_CNT_KEYS_NEW since the
 * last drain), against what each map holds. */
struct mapsize_fill {
        uint64_t nodes[PROFD_CLASS__MAX], nodes_max[PROFD_CLASS__MAX];
        uint64_t keys, keys_max;
};

/* A map is this full (percent) when the daemon drains early. */
#define MAPSIZE_FILL_HIGH_PCT 75

/* Whether a map of f is MAPSIZE_FILL_HIGH_PCT full or more: the daemon
 * then drains before the interval ends, so that the stacks and keys still
 * to come in it find room. A class of nodes counts alone (a full class
 * takes its nodes to larger ones, but the largest has nowhere to go). A
 * map of no entries (not in use) is never full. */
bool mapsize_fill_high(const struct mapsize_fill *f);
