/* Deep-stack workload for the DWARF unwinder's depth limit (issue 12): main
 * -> run -> deep_recurse x DEPTH -> deep_leaf, which burns the CPU. With
 * DEPTH (default 200) above the unwinder's frame limit (PROFD_MAX_FRAMES,
 * 127), every sample's user stack ends at the limit and must be counted as
 * truncated by depth. Built -O2 -fomit-frame-pointer.
 * Prints {"pid":N} when done. Usage: unwind_deep [SECONDS [DEPTH]]  (SECONDS of CPU) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unwind_workload.h"


uint64_t deep_leaf(uint64_t deadline);
uint64_t deep_recurse(int depth, uint64_t deadline);
void run(double seconds, int depth);

volatile uint64_t deep_sink;

NOINLINE uint64_t deep_leaf(uint64_t deadline) {
        uint64_t x = deep_sink;
        do {
                for (int i = 0; i < 200000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        } while (unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) < deadline);
        return x;
}

NOINLINE uint64_t deep_recurse(int depth, uint64_t deadline) {
        uint64_t r = depth > 0 ? deep_recurse(depth - 1, deadline) : deep_leaf(deadline);
        KEEP_FRAME();
        return r + (uint64_t) depth;
}

NOINLINE void run(double seconds, int depth) {
        deep_sink = deep_recurse(depth, unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) + (uint64_t) (seconds * 1e9));
        KEEP_FRAME();
}

int main(int argc, char *argv[]) {
        double seconds = 2;
        int depth = 200;
        char *end;

        if (argc > 3 || (argc >= 2 && !unwind_parse_seconds(argv[1], &seconds)) ||
            (argc == 3 && (depth = (int) strtol(argv[2], &end, 10), *end != '\0' || depth < 0))) {
                fprintf(stderr, "Usage: %s [SECONDS [DEPTH]]\n", argv[0]);
                return 2;
        }
        run(seconds, depth);
        KEEP_FRAME();
        unwind_workload_done();
        return 0;
}
