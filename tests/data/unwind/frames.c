/* Fixture of test-unwind-table: functions whose call-frame information
 * takes each form the unwind table classifies. Built with fixed flags by
 * tests/unit/meson.build: -fomit-frame-pointer (CFA from rsp), with frame
 * pointers (CFA from rbp, rbp saved at CFA-16), and with -DREALIGN (a
 * stack realigned for a 64-byte local: CFA read from memory). printf gives
 * the executable a PLT stub with CFI. */
#include <stdio.h>
#include <stdlib.h>

/* Keeps the compiler from folding the arithmetic away. */
static volatile long sink;

__attribute__((noinline)) static long leaf(long x) {
        long s = 0;

        for (long i = 0; i < x; i++)
                s += i * i ^ (s >> 3);
        return s;
}

/* Keeps many values live across calls: pushes of callee-saved registers. */
__attribute__((noinline)) long phase(long n) {
        long a = leaf(n), b = leaf(n + 1), c = leaf(n + 2), d = leaf(n + 3), e = leaf(n + 4);

        return a * b + leaf(c) - leaf(d) * e + leaf(a ^ e);
}

/* A variable-length array: the function needs rbp as a frame pointer even
 * under -fomit-frame-pointer. */
__attribute__((noinline)) long run(long n) {
        long v[n + 1];

        for (long i = 0; i <= n; i++)
                v[i] = phase(i);
        sink = v[n / 2];
        return v[n];
}

#ifdef REALIGN
/* Touches the aligned array through a pointer the compiler cannot see
 * through. */
__attribute__((noinline)) static void fill(long *p, long n) {
        for (long i = 0; i < 8; i++)
                p[i] = n + i;
        __asm__ volatile("" : : "r"(p) : "memory");
}

/* 64-byte alignment above the ABI's 16: gcc realigns rsp and finds the
 * CFA through a copy of the old rsp saved in the realigned frame. */
__attribute__((noinline)) long realigned(long n) {
        long v[8] __attribute__((aligned(64)));

        fill(v, n);
        return v[n & 7] + phase(v[3]);
}
#endif

int main(int argc, char **argv) {
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10;

#ifdef REALIGN
        n += realigned(n);
#endif
        printf("%ld\n", run(n));
        return 0;
}
