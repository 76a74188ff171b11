# The process test-python-walk reads: a known chain of Python frames,
# <module> -> root -> Outer.middle -> leaf, with leaf spinning on one line.
# The line numbers below are the test's expectations: keep them in step.
import sys


def leaf(n):
    x = 0
    while True: x += n  # line 9: HOT


class Outer:
    def middle(self, n):
        sys.stdout.write('ready\n')
        sys.stdout.flush()
        return leaf(n)  # line 16


def root():
    Outer().middle(3)


root()
