/* CPU bursts at known times (tests/e2e/test_timeline.py): N bursts of
 * BURST_MS in burst_spin, each followed by an idle sleep of 300-700 ms
 * (a fixed sequence, so the gaps differ), and the wall-clock bounds of each
 * burst as measured around it. Usage: bursts N BURST_MS.
 * Prints {"pid":N,"cpu_ns":N,"bursts":[[start_ns,end_ns],...]}: the
 * bursts' bounds on CLOCK_REALTIME, the CPU time they had (a loaded
 * machine gives them less than their wall time). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock_spin.h"

/* Burns CPU in user mode until ms have passed on the monotonic clock. */
static NOINLINE unsigned long burst_spin(unsigned ms) {
        return spin_ms(ms);
}

int main(int argc, char **argv) {
        static const unsigned idle_ms[] = { 300, 500, 700, 400, 600 };
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 10, burst = argc > 2 ? (unsigned) atoi(argv[2]) : 300;
        uint64_t (*b)[2] = calloc(n ? n : 1, sizeof(*b));
        volatile unsigned long sink = 0;
        uint64_t cpu = 0;

        if (!b)
                return 1;
        for (unsigned i = 0; i < n; i++) {
                struct timespec idle = { 0, (long) idle_ms[i % 5] * 1000000L };

                uint64_t c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);

                b[i][0] = now_ns(CLOCK_REALTIME);
                sink += burst_spin(burst);
                b[i][1] = now_ns(CLOCK_REALTIME);
                cpu += now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
                nanosleep(&idle, NULL);
        }
        printf("{\"pid\":%d,\"cpu_ns\":%llu,\"bursts\":[", (int) getpid(), (unsigned long long) cpu);
        for (unsigned i = 0; i < n; i++)
                printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long) b[i][0], (unsigned long long) b[i][1]);
        printf("]}\n");
        free(b);
        return (int) (sink & 0);
}
