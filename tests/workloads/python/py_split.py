"""Ground-truth CPU workload for CPython frames (tests/e2e/test_python.py,
issue 41): one thread spends its CPU in three functions under distinct
call chains, 50/30/20 of the time, and prints the truth:

  <module>;main;run;Parser.parse;Parser.tokenize          (a method)
  <module>;main;run;render;render.<locals>.paint          (a closure)
  <module>;main;run;compress;checksum                     (a plain function)

{"pid":N,"process_cpu_ns":T,"run_cpu_ns":R,"functions":{qualname: ns,...}}:
each leaf's own CPU time (time.thread_time_ns around its busy loop),
T the whole process's CPU (a profiler's denominator for this pid), R the
process's CPU within run (T less the interpreter's start-up, imports and
warm-up: tens of milliseconds, samples without the chain).

Each leaf spins on one line marked "# hot line: QUALNAME" (a big-integer
step, most of the leaf's time) in chunks of CHUNK iterations, reading the
thread's CPU clock between chunks, until its slice is used. run rotates the three
every 3 ms x (5, 3, 2), as tests/workloads/unwind_cpu.c does: 3 ms is not
a multiple of common timer periods, so the rotation does not beat against
the sampling clock.
Usage: py_split.py [SECONDS [WARMUP]]  (SECONDS of CPU, default 2)"""
import time

from pyworkload import finish, parse_args, warm_up

# about 0.1 ms of CPU here: the clock read between chunks is a small share
CHUNK = 400
SLICE_NS = 3_000_000
# 64-bit LCG constants, reduced modulo a prime above 2^64: a big-integer
# multiply, add and remainder per iteration
MUL, ADD, MOD = 6364136223846793005, 1442695040888963407, 18446744073709551557


class Parser:
    def __init__(self):
        self.state = 1

    def tokenize(self, budget_ns):
        start = time.thread_time_ns()
        x = self.state
        while True:
            for _ in range(CHUNK):
                x = (x * MUL + ADD) % MOD  # hot line: Parser.tokenize
            used = time.thread_time_ns() - start
            if used >= budget_ns:
                break
        self.state = x
        return used

    def parse(self, budget_ns):
        used = self.tokenize(budget_ns)
        return used


def render(budget_ns, seed):
    def paint():
        start = time.thread_time_ns()
        x = seed
        while True:
            for _ in range(CHUNK):
                x = (x * ADD + MUL) % MOD  # hot line: render.<locals>.paint
            used = time.thread_time_ns() - start
            if used >= budget_ns:
                break
        return used

    used = paint()
    return used


def checksum(budget_ns, seed):
    start = time.thread_time_ns()
    x = seed
    while True:
        for _ in range(CHUNK):
            x = (x * MUL + MOD) % ADD  # hot line: checksum
        used = time.thread_time_ns() - start
        if used >= budget_ns:
            break
    return used


def compress(budget_ns):
    used = checksum(budget_ns, 7)
    return used


def run(seconds, used):
    parser = Parser()
    deadline = time.process_time_ns() + int(seconds * 1e9)
    while time.process_time_ns() < deadline:
        used["Parser.tokenize"] += parser.parse(5 * SLICE_NS)
        used["render.<locals>.paint"] += render(3 * SLICE_NS, 3)
        used["checksum"] += compress(2 * SLICE_NS)


def main():
    seconds, warmup = parse_args(2.0)
    warm_up(warmup)
    used = {"Parser.tokenize": 0, "render.<locals>.paint": 0, "checksum": 0}
    start = time.process_time_ns()
    run(seconds, used)
    finish({"functions": used, "run_cpu_ns": time.process_time_ns() - start})


if __name__ == "__main__":
    main()
