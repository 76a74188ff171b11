#!/usr/bin/env python3
"""The big-program mix of issue 43 under a real profd (run by hand, as
root; not a test): clang++ and g++ compile one large generated C++ file at
once while node, python3 and a JVM spin, with profd at its default
unwind_memory. Prints, from `profctl status --json`, the unwind values
used against the capacity, the kernel bytes and the tables refused, and
for each program the share of its samples of the last WINDOW seconds
whose user stack reached a root frame (the quality report's `complete`,
as tests/e2e/test_unwind_lru.py computes it). docs/performance.md,
"Compact unwind tables (issue 43)", has its figures.

usage: unwind_mix_run.py PROFD PROFCTL [SECONDS]"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FUNCTIONS = 40000  # minutes of -O2 for either compiler
WINDOW = 20
# comm of each program's busy process: clang++'s compiler proper is a
# clang, g++'s a cc1plus
PROGRAMS = ["clang", "clang++", "cc1plus", "node", "python3", "java"]
LOOP_JAVA = "class Loop { public static void main(String[] a) { long s = 0; " \
            "for (long i = 0; ; i++) { s += i ^ (s >> 3); if (s == 42) System.out.println(s); } } }\n"


def main():
    profd, profctl = sys.argv[1], sys.argv[2]
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    tmp = tempfile.mkdtemp(prefix="profd-mix-")
    sock = os.path.join(tmp, "profd.sock")
    src = os.path.join(tmp, "big.cpp")
    with open(src, "w") as f:
        for i in range(FUNCTIONS):
            f.write(f"int f{i}(int n) {{ int s = {i}; for (int k = 0; k < n; k++) s = s * 31 + (k ^ (s >> 3)); "
                    f"return s; }}\n")
    with open(os.path.join(tmp, "Loop.java"), "w") as f:
        f.write(LOOP_JAVA)
    log = open(os.path.join(tmp, "profd.log"), "wb")
    d = subprocess.Popen([profd, "--config", "/dev/null", "--socket", sock, "--store", os.path.join(tmp, "p.db"),
                          "--interval", "1s"], stdout=log, stderr=log)
    work = []

    def ctl(*args, check=True):
        r = subprocess.run([profctl, "--socket", sock, *args], capture_output=True, text=True)
        if r.returncode != 0 and not check:
            return None
        if r.returncode != 0:
            with open(os.path.join(tmp, "profd.log"), "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
            sys.exit(f"profctl {' '.join(args)}: {r.stderr.strip()}; profd exited: {d.poll()}; its log:\n{tail}")
        return r.stdout

    try:
        for _ in range(300):
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(sock)
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(5)  # the processes already running loaded
        # each in its own process group: the compilers' drivers fork the
        # compilers proper, which must end with them
        quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp,
                     start_new_session=True)
        for argv in (["clang++", "-O2", "-c", src, "-o", "/dev/null"], ["g++", "-O2", "-c", src, "-o", "/dev/null"],
                     ["node", "-e", "let s = 0; for (;;) { s = (s * 31 + 7) % 1000003; }"],
                     ["python3", "-c", "s = 0\nwhile True: s = (s * 31 + 7) % 1000003"],
                     ["java", "Loop.java"]):
            if shutil.which(argv[0]):
                work.append(subprocess.Popen(argv, **quiet))
        time.sleep(seconds)
        u = json.loads(ctl("status", "--json"))["unwind"]  # the tables of the mix, all running
        t_end = time.monotonic()
        for p in work:
            os.killpg(p.pid, signal.SIGKILL)
        # the writer may be minutes behind on a loaded host (the big
        # libraries' symbols): flush until it has written the window
        for _ in range(10):
            if ctl("flush", check=False) is not None:
                break
        ago = time.monotonic() - t_end
        for comm in PROGRAMS:
            out = json.loads(ctl("query", "--comm", comm, "--since", f"{ago + WINDOW:.0f}s", "--until",
                                 f"{ago:.0f}s", "--json"))
            q = out["quality"] if "quality" in out else out["end"]["quality"]
            share = q["complete"] / q["total"] if q["total"] else 0.0
            trunc = {k: v for k, v in q["truncated"].items() if v}
            print(f"{comm:8} {100 * share:5.1f}% of {q['total']} samples reach a root frame; truncated {trunc}")
        print(f"unwind values used {u['rows_used']} of {u['rows_capacity']} "
              f"({100 * u['rows_used'] / u['rows_capacity']:.1f}%), kernel_bytes {u['kernel_bytes']} "
              f"({u['kernel_bytes'] / 2**20:.2f} MiB), tables_built {u['tables_built']}, "
              f"tables_no_room {u['tables_no_room']}, budget_full {u['failures']['budget_full']}, "
              f"tables_kept_hot {u.get('tables_kept_hot')}, tables_evicted {u['tables_evicted']}, "
              f"tables_evicted_cold {u.get('tables_evicted_cold')}")
    finally:
        for p in work:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        d.send_signal(signal.SIGTERM)
        d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
