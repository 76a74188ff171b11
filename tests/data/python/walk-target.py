# The process test-python-walk reads: a known chain of Python frames,
# <module> -> root -> Outer.middle -> leaf, with leaf spinning on one line.
# The line numbers below are the test's expectations: keep them in step.
# "ready" carries the thread pointer (glibc's pthread_self), so the test
# can check the thread-state TSS key through glibc's layout too.
import sys


def leaf(n):
    x = 0
    while True: x += n  # line 11: HOT


class Outer:
    def middle(self, n):
        sys.stdout.write('ready %d\n' % thread_pointer())
        sys.stdout.flush()
        return leaf(n)  # line 18


def root():
    Outer().middle(3)


def thread_pointer():
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.pthread_self.restype = ctypes.c_void_p
        return libc.pthread_self() or 0
    except Exception:
        return 0


root()  # line 35
