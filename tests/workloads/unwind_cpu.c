/* Ground-truth on-CPU workload for the DWARF unwinder (issue 12): one thread
 * spends its CPU in the chains main;run;phase_a;leaf_a, main;run;phase_b;leaf_b
 * and main;run;phase_c;leaf_c, 50/30/20 of its time, and prints the truth as
 * JSON when it is done:
 *   {"pid":N,"total_ns":T,"functions":{"phase_a":A,"phase_b":B,"phase_c":C}}
 * A..C are the thread CPU ns each phase used (CLOCK_THREAD_CPUTIME_ID), T the
 * whole process's CPU (the denominator of a profiler's share for this pid).
 *
 * Built twice (tests/workloads/meson.build): -O2 -fomit-frame-pointer and
 * -O2 -fno-omit-frame-pointer. The leaves call nothing, so gcc gives them no
 * frame even with -fno-omit-frame-pointer: a frame-pointer walk from inside a
 * leaf skips its caller (the phase), a CFI walk must not. Every function
 * under test is noinline and noclone with a body of its own (distinct
 * constants: identical bodies could be folded into one symbol), and nothing
 * is called in tail position, so each one is a real frame with a stable name.
 * Usage: unwind_cpu [SECONDS]  (of CPU; default 3; 0.2 makes a short-lived process) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unwind_workload.h"


uint64_t leaf_a(uint64_t n, uint64_t x);
uint64_t leaf_b(uint64_t n, uint64_t x);
uint64_t leaf_c(uint64_t n, uint64_t x);
uint64_t phase_a(uint64_t budget);
uint64_t phase_b(uint64_t budget);
uint64_t phase_c(uint64_t budget);
void run(double seconds, uint64_t used[3]);

/* Iterations per leaf call: about a millisecond here, long enough that the
 * clock reads between calls (in the phase, not the leaf: a system call,
 * slower on a busy machine) are a small share of the samples. */
#define CHUNK 800000

volatile uint64_t unwind_sink;

NOINLINE uint64_t leaf_a(uint64_t n, uint64_t x) {
        for (uint64_t i = 0; i < n; i++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return x;
}

NOINLINE uint64_t leaf_b(uint64_t n, uint64_t x) {
        for (uint64_t i = 0; i < n; i++)
                x = x * 2862933555777941757ULL + 3037000493ULL;
        return x;
}

NOINLINE uint64_t leaf_c(uint64_t n, uint64_t x) {
        for (uint64_t i = 0; i < n; i++)
                x = x * 3202034522624059733ULL + 4354685564936845319ULL;
        return x;
}

/* Each phase calls its leaf until it has used `budget` ns of thread CPU;
 * returns the CPU it really used. */
NOINLINE uint64_t phase_a(uint64_t budget) {
        uint64_t start = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID), now, x = unwind_sink;
        do {
                x = leaf_a(CHUNK, x);
                KEEP_FRAME();
                now = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        } while (now - start < budget);
        unwind_sink = x;
        return now - start;
}

NOINLINE uint64_t phase_b(uint64_t budget) {
        uint64_t start = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID), now, x = unwind_sink + 1;
        do {
                x = leaf_b(CHUNK, x);
                KEEP_FRAME();
                now = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        } while (now - start < budget);
        unwind_sink = x;
        return now - start;
}

NOINLINE uint64_t phase_c(uint64_t budget) {
        uint64_t start = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID), now, x = unwind_sink + 2;
        do {
                x = leaf_c(CHUNK, x);
                KEEP_FRAME();
                now = unwind_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        } while (now - start < budget);
        unwind_sink = x;
        return now - start;
}

NOINLINE void run(double seconds, uint64_t used[3]) {
        /* 3 ms: not a multiple of common timer periods, so the rotation does
         * not beat against the sampling clock; 5:3:2 of it per round */
        const uint64_t slice = 3000000;
        uint64_t deadline = unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) + (uint64_t) (seconds * 1e9);

        do {
                used[0] += phase_a(5 * slice);
                KEEP_FRAME();
                used[1] += phase_b(3 * slice);
                KEEP_FRAME();
                used[2] += phase_c(2 * slice);
                KEEP_FRAME();
        } while (unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) < deadline);
}

int main(int argc, char *argv[]) {
        double seconds = 3;
        uint64_t used[3] = {};
        if (argc > 2 || (argc == 2 && !unwind_parse_seconds(argv[1], &seconds))) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        run(seconds, used);
        KEEP_FRAME();
        printf("{\"pid\":%d,\"total_ns\":%" PRIu64 ",\"functions\":{\"phase_a\":%" PRIu64
               ",\"phase_b\":%" PRIu64 ",\"phase_c\":%" PRIu64 "}}\n",
               (int) getpid(), unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID), used[0], used[1], used[2]);
        unwind_workload_hold();
        return 0;
}
