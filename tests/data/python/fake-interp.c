/* A stand-in CPython interpreter for test-python-discover: the symbols
 * discovery reads (exported with -rdynamic), and an eval loop whose
 * unlikely paths gcc moves to a cold part (_PyEval_EvalFrameDefault.cold
 * in .text.unlikely, -O2 -freorder-blocks-and-partition). */
#include <stdio.h>
#include <stdlib.h>

const unsigned long Py_Version = 0x030b05f0;   /* 3.11.5 final */
/* Initialized data, as the real runtime is: its head is in the file. */
struct { char cookie[8]; unsigned long words[15]; } _PyRuntime = { "notdebug", { 1, 2, 3 } };
void *PyCode_Type[8] = { &PyCode_Type };

__attribute__((cold, noinline)) void fake_error(const char *what, long v);
__attribute__((cold, noinline)) void fake_error(const char *what, long v) {
        fprintf(stderr, "%s: %ld\n", what, v);
}

__attribute__((noinline)) long _PyEval_EvalFrameDefault(const long *ops, long n);
__attribute__((noinline)) long _PyEval_EvalFrameDefault(const long *ops, long n) {
        long acc = 0;

        for (long i = 0; i < n; i++) {
                switch (ops[i] & 3) {
                case 0:
                        acc += ops[i];
                        break;
                case 1:
                        acc *= 3;
                        break;
                case 2:
                        if (__builtin_expect(acc < 0, 0)) {
                                fake_error("negative", acc);
                                acc = -acc * 7 + i;
                        }
                        acc -= ops[i];
                        break;
                default:
                        if (__builtin_expect(ops[i] > 1000000, 0)) {
                                fake_error("too large", ops[i]);
                                return -1;
                        }
                        acc ^= ops[i];
                }
        }
        return acc;
}

int main(int argc, char **argv) {
        long ops[64];

        for (int i = 0; i < 64; i++)
                ops[i] = argc > 1 ? strtol(argv[1], NULL, 10) + i : i;
        printf("%ld\n", _PyEval_EvalFrameDefault(ops, 64));
        return 0;
}
