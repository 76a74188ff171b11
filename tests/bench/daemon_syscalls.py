#!/usr/bin/env python3
"""Where a running profd's system time goes: time in each system call, by
thread, call and the daemon's code that made it (issue 43).

  tests/bench/daemon_syscalls.py --seconds 120 PID > out.json

Attaches bpftrace to the daemon PID (raw_syscalls, its pid only) for
--seconds and sums, for each thread name, system call and the first
--frames named frames of profd's own code on the user stack (found by its
frame pointers; Debian's libraries have none, so a call made inside glibc,
SQLite or libelf shows only its library's function, or no frame: "?"), the
calls made and the time from entry to exit. Waits (epoll_wait, futex,
poll, ppoll) are left out: their time is not CPU. The threads' user and
system CPU over the same span come from /proc/PID/task. Runs alongside
anything: a build loop (tests/bench/churn_ab.py --keep, then this on its
daemon), or a production host. bpftrace adds about a microsecond to each
of the daemon's calls while it runs.

The counts are exact; the time in a call is wall time, not CPU. On a
machine whose CPUs are all busy it includes the time the thread waited to
run again, and a call that flushes the TLB of other CPUs (madvise, munmap)
waits for them, which in a VM may wait for the host. So it says where the
calls are made and how many; what removing some saves is for a side by
side run (churn_ab.py) to say. On the build loop the unwinder's drops of
.eh_frame pages took 0.55% of a core by this measure, and with most of
them removed the daemon's CPU did not change (docs/performance.md, "Where
the daemon's system time goes").

One JSON object on stdout. Root (bpftrace)."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

# x86_64 numbers of the calls profd makes; others by number
NAMES = {0: "read", 1: "write", 3: "close", 5: "fstat", 8: "lseek", 9: "mmap", 10: "mprotect", 11: "munmap",
         12: "brk", 16: "ioctl", 17: "pread64", 18: "pwrite64", 25: "mremap", 28: "madvise", 72: "fcntl",
         75: "fdatasync", 77: "ftruncate", 89: "readlink", 186: "gettid", 217: "getdents64",
         257: "openat", 262: "newfstatat", 267: "readlinkat", 286: "timerfd_settime", 310: "process_vm_readv",
         321: "bpf", 332: "statx"}
WAITS = (7, 202, 232, 271, 281)  # poll, futex, epoll_wait, ppoll, epoll_pwait
LIBC_WRAPPERS = re.compile(r"^(__GI_|__libc_|__)?(read|write|close|open64|openat64|pread64|pwrite64|madvise|"
                           r"munmap|mmap64|syscall|fstatat64|readlinkat|bpf|fdatasync|ftruncate64|"
                           r"__internal_syscall_cancel|__syscall_cancel_arch)$")


def site(stack, frames):
    """The first named frames of a bpftrace ustack, glibc's wrappers and
    unnamed addresses left out."""
    named = []
    for line in stack.strip().splitlines():
        f = re.sub(r"\+\d+$", "", line.strip())
        if not f or f.startswith("0x") or LIBC_WRAPPERS.match(f):
            continue
        named.append(f)
        if len(named) == frames:
            break
    return " < ".join(named) or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--frames", type=int, default=3, help="named frames of each call site (default 3)")
    ap.add_argument("--top", type=int, default=40, help="call sites listed (default 40)")
    ap.add_argument("pid", type=int)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("daemon_syscalls.py: run as root (bpftrace)")
    waits = " && ".join(f"args->id != {w}" for w in WAITS)
    prog = (f"tracepoint:raw_syscalls:sys_enter /pid == {a.pid}/ {{ @s[tid] = nsecs; }} "
            f"tracepoint:raw_syscalls:sys_exit /pid == {a.pid} && @s[tid]/ {{ "
            f"if ({waits}) {{ $d = nsecs - @s[tid]; @t[comm, args->id, ustack(12)] = stats($d); }} "
            f"delete(@s[tid]); }}")
    bt = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(3)  # attached
    before, t0 = bench.threads_cpu_s(a.pid), time.monotonic()
    time.sleep(a.seconds)
    after, span = bench.threads_cpu_s(a.pid), time.monotonic() - t0
    bt.send_signal(signal.SIGINT)  # prints while the daemon lives: its symbols are read then
    out = bt.communicate(timeout=300)[0]

    by_site, by_call = {}, {}
    # one map, so that each call's stack is taken once: count, average, total
    for comm, nr, stack, n, total in re.findall(
            r"@t\[([^,]+), (\d+), \n(.*?)\]: count (\d+), average \d+, total (\d+)", out, re.S):
        call = NAMES.get(int(nr), nr)
        for e in (by_site.setdefault((comm, call, site(stack, a.frames)), [0, 0]),
                  by_call.setdefault((comm, call), [0, 0])):
            e[0] += int(n)
            e[1] += int(total)

    def row(k, v):
        return {"thread": k[0], "call": k[1], **({"site": k[2]} if len(k) > 2 else {}), "calls": v[0],
                "wall_ms": round(v[1] / 1e6, 1), "wall_us_per_call": round(v[1] / 1e3 / v[0], 1) if v[0] else None,
                "wall_pct_of_core": round(100 * v[1] / 1e9 / span, 3)}

    threads = {c: {"user_pct": round(100 * (u - before.get(c, [0, 0])[0]) / span, 2),
                   "sys_pct": round(100 * (s - before.get(c, [0, 0])[1]) / span, 2),
                   "in_calls_wall_pct": round(100 * sum(v[1] for k, v in by_call.items() if k[0] == c) / 1e9 / span, 2)}
               for c, (u, s) in sorted(after.items())}
    json.dump({"pid": a.pid, "seconds": round(span, 1), "threads": threads,
               "calls": [row(k, v) for k, v in sorted(by_call.items(), key=lambda kv: -kv[1][1])],
               "sites": [row(k, v) for k, v in sorted(by_site.items(), key=lambda kv: -kv[1][1])[:a.top]]},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
