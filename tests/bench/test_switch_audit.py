#!/usr/bin/env python3
"""switch-audit still counts what it says: over 3 s in which two processes
pinned to one CPU pass a byte back and forth 2000 times (each pass a switch
out of one and into the other), it reports at least those 4000 switches at
both tracepoints; no switch-in is hidden by more unreported switches than
there were (each hides at most one); and no switch-out finds its thread's
last one still open, profd's switch_missed being 0 where sched_exit_tp ends
blocks (docs/reliability.md). A bad duration is refused. Root and a kernel
with sched_exit_tp, else skipped (77)."""
import os
import re
import subprocess
import sys
import threading
import time

AUDIT = os.environ["SWITCH_AUDIT"]
ROUNDS = 2000

if os.geteuid() != 0:
    print("needs root")
    sys.exit(77)
for bad in ("0", "2x", "-1", " 5", "86401"):
    r = subprocess.run([AUDIT, bad], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "usage" in r.stderr, (bad, r.returncode, r.stderr)


def ping_pong():
    """ROUNDS passes between two processes on CPU 0, in the audit's window."""
    time.sleep(0.5)
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {0})
        for _ in range(ROUNDS):
            os.read(a_r, 1)
            os.write(b_w, b"x")
        os._exit(0)
    os.sched_setaffinity(0, {0})
    for _ in range(ROUNDS):
        os.write(a_w, b"x")
        os.read(b_r, 1)
    os.waitpid(pid, 0)
    os.sched_setaffinity(0, set(range(os.cpu_count())))


audit = subprocess.Popen([AUDIT, "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(0.5)  # loaded and attached: the BPF load takes well under this
if audit.poll() is not None:
    err = audit.stderr.read()
    if "sched_exit_tp" in err:
        print(err)
        sys.exit(77)
    raise AssertionError(err)
worker = threading.Thread(target=ping_pong)
worker.start()
out, err = audit.communicate(timeout=60)
worker.join()
print(out)
assert audit.returncode == 0, err

rows = {}
for title, n, kernel, user in re.findall(r"^(\S[^\n]*):\n  (\d+) \([0-9.]+/s\): kernel threads (\d+) \([0-9.]+/s\), "
                                         r"user threads (\d+)", out, re.M):
    rows[title.split(" (")[0]] = (int(n), int(kernel), int(user))
assert len(rows) == 6, rows
reported = rows["switches reported to sched_switch"][0]
switches = rows["switches"][0]
hidden = rows["switches sched_switch did not report, by the thread switched out"][0]
hidden_in = rows["unreported switch-ins ending a reported switch-out"][0]
missed = rows["switch-outs finding the last one open although sched_exit_tp ends blocks"]
assert reported >= 2 * ROUNDS and switches >= 2 * ROUNDS, (reported, switches)
assert hidden_in <= hidden, (hidden_in, hidden)
assert missed == (0, 0, 0), missed
