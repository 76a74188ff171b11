#!/usr/bin/env python3
"""Writes the fixtures of test-python-lines: code objects' location tables
with the line CPython itself gives each code unit (co_positions).

Run with the interpreter whose format is wanted, e.g.
  /usr/bin/python3.11 gen-linetables.py > linetables-3.11.txt
Every form of entry occurs: short and one-line (ordinary code), long (a
multi-line expression, a jump of more than two lines, a column past 127),
no-location (exception-handler cleanup) and, from a second run under
-X no_debug_ranges, no-column.
"""
import subprocess
import sys
import types

SOURCE = '''
def simple(a, b):
    c = a + b
    return c * 2

def spread(x):
    total = 0
    for i in range(x):
        total += i



    return (total +
            x +
            1)

def handler(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return str(e)

def wide():
    return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]

class Outer:
    def method(self, n):
        def inner(k):
            return k + n
        return sum(inner(k) for k in range(n))
'''


def codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)


def dump(tag):
    top = compile(SOURCE, 'fixture.py', 'exec')
    for code in codes(top):
        lines = [-1 if pos[0] is None else pos[0] for pos in code.co_positions()]
        print('code', tag + ':' + code.co_qualname, code.co_firstlineno, code.co_linetable.hex())
        print('lines', *lines)


if __name__ == '__main__':
    if sys.argv[1:] == ['--no-columns']:
        dump('nocol')
        sys.exit(0)
    print('# python', sys.version.split()[0], '- written by gen-linetables.py, do not edit')
    sys.stdout.flush()
    dump('full')
    sys.stdout.flush()
    subprocess.run([sys.executable, '-X', 'no_debug_ranges', __file__, '--no-columns'], check=True)
