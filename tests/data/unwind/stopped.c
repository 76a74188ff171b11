/* Fixture of test-bpf-walker: stops at a known call chain, main -> outer ->
 * middle -> inner, for its parent (its tracer: PTRACE_TRACEME) to record
 * its registers and stack. "raise": inner stops itself with SIGSTOP (the
 * stack then starts in libc). "spin": inner calls spin_leaf, a frameless
 * leaf, which spins until the parent stops it; the fixture writes one line
 * to stdout before. Built with and without frame pointers by
 * tests/unit/meson.build. Exits 77 (a skip) where it may not be traced. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
/* after a call: the call is no tail call, its frame stays */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* never set: spin_leaf returns (as far as the compiler knows) */
volatile int fixture_stop;
volatile unsigned long fixture_sink;

NOINLINE void spin_leaf(unsigned long x);
NOINLINE void inner(int spin);
NOINLINE void middle(int spin);
NOINLINE void outer(int spin);

NOINLINE void spin_leaf(unsigned long x) {
        while (!fixture_stop)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        fixture_sink = x;
}

NOINLINE void inner(int spin) {
        if (spin)
                spin_leaf(fixture_sink + 1);
        else
                raise(SIGSTOP);
        KEEP_FRAME();
}

NOINLINE void middle(int spin) {
        inner(spin);
        KEEP_FRAME();
}

NOINLINE void outer(int spin) {
        middle(spin);
        KEEP_FRAME();
}

int main(int argc, char *argv[]) {
        int spin = argc > 1 && strcmp(argv[1], "spin") == 0;

        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
                return 77;
        if (spin) {
                fputs("ready\n", stdout);
                fflush(stdout);
        }
        outer(spin);
        KEEP_FRAME();
        return 0;
}
