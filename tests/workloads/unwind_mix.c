/* Ground-truth mixed-stack workload for the DWARF unwinder (issue 12): all
 * of its CPU is spent in the chain
 *   main;run;app_outer;mix_lib_enter;mix_lib_middle;app_callback
 * where mix_lib_* live in a shared library (unwind_mix_lib.c) and
 * app_callback is this program's, called back through a function pointer.
 * Built twice (tests/workloads/meson.build): unwind_mix_fp (this program with
 * frame pointers, the library without) and unwind_mix_nofp (the reverse), so
 * an unwinder must cross from frame-pointer code to CFI-only code and back.
 * Prints {"pid":N} when done. Usage: unwind_mix [SECONDS]  (of CPU, default 3) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unwind_workload.h"


void app_checkpoint(uint64_t x);
uint64_t app_callback(uint64_t n, uint64_t x);
uint64_t app_outer(uint64_t x);
void run(double seconds);

/* Iterations per callback: a few milliseconds, so run's clock reads are a
 * negligible share of the samples. */
#define CALLBACK_ITERATIONS 4000000

typedef uint64_t (*mix_callback)(uint64_t n, uint64_t x);
uint64_t mix_lib_enter(mix_callback cb, uint64_t n, uint64_t x);

volatile uint64_t mix_sink;

/* Called on entry (unconditionally, so gcc's shrink-wrapping cannot keep
 * the loop out of the frame) and every 64 Ki iterations: app_callback is not
 * a leaf, with -fno-omit-frame-pointer it has a frame of its own, and what
 * is tested is the crossing into the library, not the frameless leaf. */
NOINLINE void app_checkpoint(uint64_t x) {
        mix_sink = x;
}

/* Burns the CPU: the innermost frame of every sample. */
NOINLINE uint64_t app_callback(uint64_t n, uint64_t x) {
        app_checkpoint(x);
        for (uint64_t i = 0; i < n; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                if ((i & 0xffff) == 0)
                        app_checkpoint(x);
        }
        return x;
}

NOINLINE uint64_t app_outer(uint64_t x) {
        uint64_t r = mix_lib_enter(app_callback, CALLBACK_ITERATIONS, x);
        KEEP_FRAME();
        return r + 11;
}

NOINLINE void run(double seconds) {
        uint64_t deadline = unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) + (uint64_t) (seconds * 1e9), x = mix_sink;
        do {
                x = app_outer(x);
                KEEP_FRAME();
        } while (unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) < deadline);
        mix_sink = x;
}

int main(int argc, char *argv[]) {
        double seconds = 3;
        if (argc > 2 || (argc == 2 && !unwind_parse_seconds(argv[1], &seconds))) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        run(seconds);
        KEEP_FRAME();
        unwind_workload_done();
        return 0;
}
