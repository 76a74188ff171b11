/* Ground-truth on-CPU workload: one thread spends its CPU time in three named
 * functions in the ratio 1:2:3, measures the CPU time each really used with
 * CLOCK_THREAD_CPUTIME_ID, and prints the truth as JSON when it is done:
 *   {"pid":N,"total_ns":T,"functions":{"spin_alpha":A,"spin_beta":B,"spin_gamma":C}}
 * total_ns is the whole process's CPU time (CLOCK_PROCESS_CPUTIME_ID), the
 * denominator a profiler's share of samples for this pid compares with.
 * Built with frame pointers so the kernel can walk its stack. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static uint64_t clock_ns(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static volatile uint64_t sink;

/* Burns CPU until this thread has used `budget` ns of it. The clock is read
 * only every few tens of microseconds of work, so samples that land in the
 * clock_gettime system call (whose libc wrapper has no frame pointer) are a
 * negligible share. Returns the CPU time really used. */
static inline __attribute__((always_inline)) uint64_t burn(uint64_t budget) {
        uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), now;
        uint64_t x = sink;

        do {
                for (int i = 0; i < 20000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        } while (now - start < budget);
        sink = x;
        return now - start;
}

/* Each function has its own copy of the loop (burn is inlined), so samples
 * land in the function's own code. */
static NOINLINE uint64_t spin_alpha(uint64_t budget) {
        return burn(budget);
}
static NOINLINE uint64_t spin_beta(uint64_t budget) {
        return burn(budget);
}
static NOINLINE uint64_t spin_gamma(uint64_t budget) {
        return burn(budget);
}

static NOINLINE void run_workload(double seconds, uint64_t used[3]) {
        /* 7 ms: not a multiple of common timer periods, so the rotation does
         * not beat against the sampling clock */
        const uint64_t slice = 7000000;
        uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t) (seconds * 1e9);

        while (clock_ns(CLOCK_MONOTONIC) < deadline) {
                used[0] += spin_alpha(1 * slice);
                used[1] += spin_beta(2 * slice);
                used[2] += spin_gamma(3 * slice);
        }
}

int main(int argc, char *argv[]) {
        double seconds = 6;
        uint64_t used[3] = {};
        char *end;

        if (argc > 2 || (argc == 2 && (seconds = strtod(argv[1], &end), *end != '\0' || seconds <= 0))) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        run_workload(seconds, used);
        printf("{\"pid\":%d,\"total_ns\":%" PRIu64 ",\"functions\":{\"spin_alpha\":%" PRIu64
               ",\"spin_beta\":%" PRIu64 ",\"spin_gamma\":%" PRIu64 "}}\n",
               (int) getpid(), clock_ns(CLOCK_PROCESS_CPUTIME_ID), used[0], used[1], used[2]);
        return 0;
}
