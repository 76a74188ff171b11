/* A workload only the DWARF unwinder can walk: built without frame
 * pointers, and its hot loop keeps a garbage value in rbp, as code built
 * that way may, so a frame-pointer walk of it fails. It burns CPU for
 * SECONDS of wall time in spin() under main, then prints {"pid":N}.
 * tests/e2e/test_quality_unwind.py: its first samples, before profd loaded
 * its unwind table, are "no table yet"; the rest are complete. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* ~100 us of work with rbp holding no frame pointer (the compiler saves
 * and restores the caller's, as the clobber tells it to) */
static NOINLINE uint64_t spin(uint64_t x) {
        for (int i = 0; i < 20000; i++)
                __asm__ volatile("mov %1, %%rbp\n\t"
                                 "imul %%rbp, %0\n\t"
                                 "add $7, %0"
                                 : "+r"(x)
                                 : "r"(x | 0x5a5a000000000001ULL)
                                 : "rbp", "cc");
        return x;
}

int main(int argc, char *argv[]) {
        double seconds = argc > 1 ? atof(argv[1]) : 3;
        uint64_t end, x = 1;

        if (argc > 2 || seconds <= 0) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        end = now_ns() + (uint64_t) (seconds * 1e9);
        while (now_ns() < end)
                x = spin(x);
        sink = x;
        printf("{\"pid\":%d}\n", (int) getpid());
        return 0;
}
