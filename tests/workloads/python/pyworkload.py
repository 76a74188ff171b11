"""Shared by the CPython ground-truth workloads (tests/e2e/test_python.py):
how each one reads its arguments, waits before its measured work, and
prints its truth then stays alive, as the C workloads do
(tests/workloads/unwind_workload.h). Nothing here is measured: the
functions under test are in the workloads themselves.

Every workload takes [SECONDS [WARMUP]]: SECONDS of work (of CPU for the
CPU-bound ones, of blocking for the off-CPU one), and WARMUP seconds of
sleep first (in warm_up), so that a profiler that loads a new process's
tables and finds its interpreter sees the measured part in its steady
state. Truth is one JSON line on stdout; then the process reads stdin to
its end (at once for /dev/null): a test holding the pipe keeps it alive."""
import json
import os
import sys
import time


def parse_args(default_seconds, default_warmup=0.0):
    """(seconds, warmup) from argv; exits 2 with a usage line on a bad one."""
    args = sys.argv[1:]
    try:
        if len(args) > 2:
            raise ValueError("too many arguments")
        seconds = float(args[0]) if args else default_seconds
        warmup = float(args[1]) if len(args) > 1 else default_warmup
        if not seconds > 0 or warmup < 0:
            raise ValueError("SECONDS must be > 0 and WARMUP >= 0")
    except ValueError as e:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} [SECONDS [WARMUP]]: {e}")
    return seconds, warmup


def warm_up(seconds):
    if seconds > 0:
        time.sleep(seconds)


def finish(truth):
    """Prints the truth (with the pid and the process's CPU time so far),
    then holds until stdin ends."""
    truth = dict(truth, pid=os.getpid(), process_cpu_ns=time.process_time_ns())
    sys.stdout.write(json.dumps(truth) + "\n")
    sys.stdout.flush()
    sys.stdin.read()
