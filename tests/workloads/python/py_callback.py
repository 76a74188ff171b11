"""Ground-truth workload for CPython frames around C code (tests/e2e/
test_python.py, issue 41): Python calls C, which calls Python back. Without
compiling anything: ctypes calls libc's qsort on an array of ints with a
Python comparison function, and the comparison is made slow (a weight
computed per element), so most of the CPU goes to the callback. A sample
there has, outermost first:

  Python  <module>;main;sort_numbers
  native  ctypes and libffi's call, libc's qsort (qsort_r, msort_with_tmp,
          recursively), libffi's closure, ctypes' callback glue
  Python  compare;weight

Truth: {"pid":N,"process_cpu_ns":T,"sort_cpu_ns":S,"sorts":K}: S is the
process's CPU within sort_numbers' loop of K sorts (the rest is the
interpreter's start-up and imports).
Usage: py_callback.py [SECONDS [WARMUP]]  (SECONDS of CPU, default 1.5)"""
import ctypes
import ctypes.util
import random
import time

from pyworkload import finish, parse_args, warm_up

N = 200
CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def weight(v):
    w = v
    for _ in range(40):
        w = (w * 1103515245 + 12345) & 0x7FFFFFFF
    return w


def compare(a, b):
    wa, wb = weight(a[0]), weight(b[0])
    return (wa > wb) - (wa < wb)


def sort_numbers(libc, seconds):
    cmp = CMPFUNC(compare)
    rng = random.Random(41)
    sorts = 0
    deadline = time.process_time_ns() + int(seconds * 1e9)
    while time.process_time_ns() < deadline:
        arr = (ctypes.c_int * N)(*(rng.randrange(1 << 30) for _ in range(N)))
        libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), cmp)
        sorts += 1
    return sorts


def main():
    seconds, warmup = parse_args(1.5)
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMPFUNC]
    libc.qsort.restype = None
    warm_up(warmup)
    start = time.process_time_ns()
    sorts = sort_numbers(libc, seconds)
    finish({"sort_cpu_ns": time.process_time_ns() - start, "sorts": sorts})


if __name__ == "__main__":
    main()
