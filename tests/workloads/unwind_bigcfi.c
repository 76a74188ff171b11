/* A program whose unwind table takes long to build (issue 12, first
 * sight): 100,000 tiny functions, each with its own FDE in .eh_frame, next
 * to main, which burns the CPU from its first moment (main -> run ->
 * bigcfi_leaf). While profd is still building the table, the process's
 * samples cannot be walked by it and must be counted under a "no table yet"
 * truncation reason; afterwards they are complete. Built -O2
 * -fomit-frame-pointer. Prints {"pid":N} when done.
 * Usage: unwind_bigcfi [SECONDS]  (of CPU, default 1) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unwind_workload.h"

uint64_t bigcfi_leaf(uint64_t deadline);
void run(double seconds);

/* 100,000 functions of two bytes (nop; ret), one FDE each: about 2.4 MB of
 * .eh_frame, some 25 times libc's, made by the assembler in a moment. */
__asm__(".text\n"
        ".globl bigcfi_stubs\n"
        "bigcfi_stubs:\n"
        ".rept 100000\n"
        ".cfi_startproc\n"
        "nop\n"
        "ret\n"
        ".cfi_endproc\n"
        ".endr\n");

volatile uint64_t bigcfi_sink;

NOINLINE uint64_t bigcfi_leaf(uint64_t deadline) {
        uint64_t x = bigcfi_sink;
        do {
                for (int i = 0; i < 100000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        } while (unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) < deadline);
        return x;
}

NOINLINE void run(double seconds) {
        bigcfi_sink = bigcfi_leaf(unwind_clock_ns(CLOCK_PROCESS_CPUTIME_ID) + (uint64_t) (seconds * 1e9));
        KEEP_FRAME();
}

int main(int argc, char *argv[]) {
        double seconds = 1;
        if (argc > 2 || (argc == 2 && !unwind_parse_seconds(argv[1], &seconds))) {
                fprintf(stderr, "Usage: %s [SECONDS]\n", argv[0]);
                return 2;
        }
        run(seconds);
        KEEP_FRAME();
        unwind_workload_done();
        return 0;
}
