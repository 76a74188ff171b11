/* Prints the kernel memory of profd's aggregation maps per CPU count, from
 * the sizing profd uses (daemon/collect/mapsize.c) and, for comparison, the
 * sizing before stacks were stored by depth: one JSON object a line, for
 * the kmem suite of bench.py. Usage: kmem-plan [KERNEL_MEMORY_BYTES] CPUS... */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "mapsize.h"

static size_t pow2(size_t v) {
        size_t p = 1;
        while (p < v)
                p <<= 1;
        return p;
}

int main(int argc, char **argv) {
        uint64_t budget = 64ULL << 20;
        int i = 1;

        if (argc > 1 && strtoull(argv[1], NULL, 10) > 1024) {
                budget = strtoull(argv[1], NULL, 10);
                i = 2;
        }
        for (; i < argc; i++) {
                unsigned cpus = (unsigned) strtoul(argv[i], NULL, 10);
                struct mapsize_input in = {
                        .cpus = cpus,
                        .frequency_hz = 49,
                        .interval_ns = 10ULL * 1000000000ULL,
                        .cpu = true,
                        .blocks = true,
                        .kernel_memory = budget,
                };
                struct mapsize_plan p;
                /* before: counts and 1 KiB stack slots, powers of two, capped
                 * at 128 Ki keys and 64 Ki stacks a generation */
                size_t samples = (size_t) 49 * cpus * 10;
                size_t old_keys = pow2(MIN(MAX(samples + 16384, (size_t) 4096), (size_t) 1 << 17));
                size_t old_stacks = pow2(MIN(MAX(samples * 2 + 4096, (size_t) 8192), (size_t) 1 << 16));
                uint64_t old_bytes = 2 * (mapsize_hash_bytes(old_keys, sizeof(struct profd_sample_key), 8, cpus) +
                                          mapsize_hash_bytes(old_stacks, 8, 8 + 8 * PROFD_MAX_FRAMES, cpus));

                mapsize_plan(&in, &p);
                printf("{\"cpus\": %u, \"kernel_memory\": %" PRIu64 ", \"keys\": %zu, \"stacks\": %zu, "
                       "\"nodes\": [%zu, %zu, %zu], \"bytes\": %" PRIu64 ", \"demand_bytes\": %" PRIu64
                       ", \"capped\": %s, \"before_keys\": %zu, \"before_stacks\": %zu, \"before_bytes\": %" PRIu64 "}\n",
                       cpus, budget, p.keys, p.stacks, p.nodes[0], p.nodes[1], p.nodes[2], p.bytes, p.demand_bytes,
                       p.capped ? "true" : "false", old_keys, old_stacks, old_bytes);
        }
        return 0;
}
