/* What the workloads at known wall-clock times share (bursts.c,
 * sleeps.c): a clock read in ns, and a spin in user mode until a
 * monotonic time, always inlined so that the function a workload names
 * as its burst stays the leaf of its samples. */
#pragma once

#include <stdint.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static inline uint64_t now_ns(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Burns CPU until ms have passed on the monotonic clock. */
static inline __attribute__((always_inline)) unsigned long spin_ms(unsigned ms) {
        uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t) ms * 1000000ULL;
        unsigned long x = 1;

        while (now_ns(CLOCK_MONOTONIC) < end)
                for (int i = 0; i < 10000; i++)
                        x = x * 6364136223846793005UL + 1442695040888963407UL;
        return x;
}
