#!/usr/bin/env python3
"""The daemon's system calls per exec on a process churn (issue 43).

  tests/bench/churn_syscalls.py --rounds 2 main=/tmp/main-build new=build

For each round, each named build's profd runs alone at defaults (`profd
--config /dev/null`, a private directory) while a churn runs: copies of
dash named churnling, eight at a time, each a shell loop of about a
millisecond of CPU, for --seconds. bpftrace counts the daemon's system
calls by thread and number (raw_syscalls:sys_enter, its pid only) and the
execs of the whole machine over the churn; the daemon's CPU (utime + stime
from /proc/PID/stat) is read before and after. The builds alternate within
a round. One JSON object on stdout: per build, per round, the execs, the
daemon's CPU in microseconds an exec, and its system calls an exec by
thread and by name. A count is exact where a CPU figure is not: the
tracing itself costs the daemon per call, and this machine's load moves
from run to run. Root (profd loads BPF; bpftrace)."""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# x86_64 numbers of the calls profd makes on this path; others by number
NAMES = {0: "read", 1: "write", 3: "close", 5: "fstat", 9: "mmap", 11: "munmap", 17: "pread64", 18: "pwrite64",
         28: "madvise", 89: "readlink", 186: "gettid", 202: "futex", 232: "epoll_wait", 257: "openat",
         262: "newfstatat", 267: "readlinkat", 286: "timerfd_settime", 321: "bpf"}
CHILD_SCRIPT = "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done"
AT_ONCE = 8


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def wait_ready(profctl, sock, proc, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"profd exited with {proc.returncode}")
        if os.path.exists(sock) and subprocess.run([profctl, "--socket", sock, "status"], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("profd did not answer")


def churn(exe, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kids = [subprocess.Popen([exe, "-c", CHILD_SCRIPT]) for _ in range(AT_ONCE)]
        for k in kids:
            k.wait()


def one(build, seconds):
    work = tempfile.mkdtemp(prefix="profd-churn-syscalls-")
    sock, exe = os.path.join(work, "s"), os.path.join(work, "churnling")
    shutil.copy(shutil.which("dash") or "/bin/sh", exe)
    with open(os.path.join(work, "log"), "w") as log:
        d = subprocess.Popen([os.path.join(build, "daemon", "profd"), "--config", "/dev/null", "--socket", sock,
                              "--store", os.path.join(work, "db")], stdout=log, stderr=log)
    try:
        wait_ready(os.path.join(build, "client", "profctl"), sock, d)
        time.sleep(3)  # the first drain and the scan of /proc behind it
        prog = (f"tracepoint:raw_syscalls:sys_enter /pid == {d.pid}/ {{ @c[comm, args->id] = count(); }} "
                "tracepoint:sched:sched_process_exec { @execs = count(); }")
        bt = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(2)  # attached
        t0 = cpu_ticks(d.pid)
        churn(exe, seconds)
        t1 = cpu_ticks(d.pid)
        bt.send_signal(signal.SIGINT)
        out = bt.communicate(timeout=60)[0]
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=120)
        shutil.rmtree(work, ignore_errors=True)
    execs = int(re.search(r"@execs: (\d+)", out).group(1))
    calls = {}
    for comm, nr, n in re.findall(r"@c\[([^,]+), (\d+)\]: (\d+)", out):
        calls.setdefault(comm, {})[NAMES.get(int(nr), nr)] = round(int(n) / execs, 2)
    hz = os.sysconf("SC_CLK_TCK")
    return {"execs": execs, "cpu_us_per_exec": round((t1 - t0) * 1e6 / hz / execs, 1),
            "syscalls_per_exec": {c: round(sum(v.values()), 1) for c, v in calls.items()},
            "by_name": calls}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10, help="the churn's length in each run (default 10)")
    ap.add_argument("builds", nargs="+", metavar="NAME=BUILD_DIR")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("churn_syscalls.py: run as root (profd loads BPF; bpftrace)")
    builds = [b.split("=", 1) for b in a.builds]
    res = {"started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "seconds": a.seconds,
           "results": {name: [] for name, _ in builds}}
    for _ in range(a.rounds):
        for name, path in builds:
            res["results"][name].append(one(path, a.seconds))
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
