/* Shared by the unwinder's ground-truth workloads (unwind_*.c, issue 12):
 * what keeps each function under test a real frame with a stable name, and
 * how a workload stays alive until the test has queried profd. Their
 * SECONDS are of CPU time (CLOCK_PROCESS_CPUTIME_ID), not of the wall
 * clock: on a busy machine they take longer, with the same number of
 * samples. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Functions under test are also non-static: a stable symbol, no local clone. */
#define NOINLINE __attribute__((noinline, noclone))
/* After a call: the call is not the function's last act, so it is never
 * turned into a jump that would take the caller's frame off the stack. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* After the truth is printed: waits until stdin reaches end of file (at
 * once for /dev/null). A test holding the pipe open keeps the process alive
 * while profd symbolizes it, so libraries mapped after its exec are named
 * (profd reads a live process's maps again, not an exited one's). */
static inline void unwind_workload_hold(void) {
        char buf[64];

        fflush(stdout);
        while (read(STDIN_FILENO, buf, sizeof buf) > 0)
                ;
}

static inline uint64_t unwind_clock_ns(clockid_t id) {
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* A positive number of seconds, nothing after it; false if it is not. */
static inline bool unwind_parse_seconds(const char *s, double *ret) {
        char *end;
        double v = strtod(s, &end);

        if (end == s || *end != '\0' || !(v > 0))
                return false;
        *ret = v;
        return true;
}

/* The end of a workload whose truth is its pid (the stacks are the truth):
 * prints {"pid":N}, then holds. */
static inline void unwind_workload_done(void) {
        printf("{\"pid\":%d}\n", (int) getpid());
        unwind_workload_hold();
}
