/* Off-CPU blocks at known times (tests/e2e/test_offcpu_timeline.py): N
 * sleeps of BLOCK_MS in block_wait, each after a CPU spin of 150-350 ms
 * (a fixed sequence, so the gaps differ), and the wall-clock bounds of each
 * sleep as measured around it. Usage: sleeps N BLOCK_MS.
 * Prints {"pid":N,"blocks":[[start_ns,end_ns],...]}: the sleeps' bounds on
 * CLOCK_REALTIME (the thread leaves the CPU just after the first and comes
 * back just before the second). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock_spin.h"

/* Burns CPU in user mode until ms have passed on the monotonic clock:
 * between two sleeps the thread is on the CPU, not blocked. */
static NOINLINE unsigned long spin(unsigned ms) {
        return spin_ms(ms);
}

/* The block: one sleep of ms, its bounds in *ret. */
static NOINLINE void block_wait(unsigned ms, uint64_t ret[2]) {
        struct timespec t = { ms / 1000, (long) (ms % 1000) * 1000000L };

        ret[0] = now_ns(CLOCK_REALTIME);
        nanosleep(&t, NULL);
        ret[1] = now_ns(CLOCK_REALTIME);
        __asm__ volatile("" ::: "memory"); /* not a tail call: block_wait stays on the stack */
}

int main(int argc, char **argv) {
        static const unsigned spin_ms[] = { 150, 250, 350, 200, 300 };
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 8, block = argc > 2 ? (unsigned) atoi(argv[2]) : 200;
        uint64_t (*b)[2] = calloc(n ? n : 1, sizeof(*b));
        volatile unsigned long sink = 0;

        if (!b)
                return 1;
        for (unsigned i = 0; i < n; i++) {
                sink += spin(spin_ms[i % 5]);
                block_wait(block, b[i]);
        }
        sink += spin(100);
        printf("{\"pid\":%d,\"blocks\":[", (int) getpid());
        for (unsigned i = 0; i < n; i++)
                printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long) b[i][0], (unsigned long long) b[i][1]);
        printf("]}\n");
        free(b);
        return (int) (sink & 0);
}
