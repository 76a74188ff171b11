#!/usr/bin/env python3
"""End to end, issue 42 (the HotSpot walker's own check): Debian's
openjdk-17 with its default flags (no -XX:+PreserveFramePointer, no agent)
runs a small CPU-bound class, compiled here with javac, through the
interpreter, C1 and C2 (tiered, as by default), calling into the JDK
(strings: stubs and runtime calls); the real profd samples it at 997 Hz.

Asserted through profctl, over every on-CPU sample of the JVM's threads
(the Java main thread, the JIT compilers, GC):
- >= 95% of the samples reach where their thread started (start_thread,
  thread_native_entry, JavaMain; main for the launcher's own thread): the
  walk went through every interpreted, compiled and stub frame of the code
  cache and on through libjvm and libc (before this walker, 99% of them
  ended at the first JIT frame);
- >= 80% of the Java main thread's samples carry HotSpot pseudo-frames (it
  runs Java code nearly all the time), and none of the JVM's stacks keeps
  a native frame in the code cache under a pseudo-frame's caller;
- off-CPU: a second thread sleeping in Thread.sleep under Java frames has
  >= 95% of its blocked time in stacks that reach its root with HotSpot
  frames (the walk at switch-out);
- `profctl status` shows the JVM given HotSpot's walker (unwind.hotspot
  jvms) and the walker's frames.

A HotSpot pseudo-frame, as the store shows it: named ones by the HotSpot
namers (daemon/unwind/hotspot-code.c: a build_id or module of "hotspot" or
"java"), unnamed ones with the pseudo-frame's module (before the namers
are in, every pseudo-frame of an unnamed runtime is stored as "[python]",
module and all: counted as one here, and only in the JVM's stacks, where
no Python runs). test_hotspot.py checks the names; this file checks the
walk.

Run: PROFD=build/daemon/profd PROFCTL=build/client/profctl python3
tests/e2e/test_hotspot_walk.py (as root), or meson test -C build
hotspot_walk."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import SharedProfd, require_root, run_tests, user_names

JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
FREQUENCY = "997"
ROOT_SHARE = 0.95
JAVA_SHARE = 0.80
RUN_MS = 6000
FLUSH_TIMEOUT = 240
ROOT_FRAMES = frozenset(("start_thread", "clone3", "__clone3", "clone", "__clone", "thread_native_entry",
                         "JavaMain", "ThreadJavaMain", "main", "_start", "__libc_start_main",
                         "__libc_start_call_main"))

SOURCE = r"""
public class HsWalk {
    static volatile long sink;

    static long leaf(long x) {
        long s = x;
        for (int i = 0; i < 3000; i++)
            s = s * 31 + (s >>> 7) + i;
        return s;
    }

    static long middle(long x) {
        return leaf(x) ^ leaf(x + 1);
    }

    static long outer(long x, int depth) {
        return depth == 0 ? middle(x) : outer(x + 1, depth - 1) + 1;
    }

    static long strings(int i) {
        String s = Integer.toString(i) + "/" + Long.toHexString(i * 2654435761L);
        return s.hashCode() + new StringBuilder(s).reverse().toString().length();
    }

    static volatile String sleeperTid = "0";

    static String tid() {
        try {
            // "PID/task/TID": this thread's id, which profctl filters by
            String self = java.nio.file.Files.readSymbolicLink(java.nio.file.Paths.get("/proc/thread-self")).toString();
            return self.substring(self.lastIndexOf('/') + 1);
        } catch (Exception e) {
            return "0";
        }
    }

    static void nap() throws InterruptedException {
        Thread.sleep(5);
    }

    static void sleeper() {
        sleeperTid = tid();
        try {
            for (;;)
                nap();
        } catch (InterruptedException e) {
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(HsWalk::sleeper, "sleeper");
        t.start();
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        long acc = 0;
        int i = 0;
        while (System.nanoTime() < end) {
            acc += outer(i, 6);
            acc += strings(i);
            i++;
        }
        sink = acc;
        t.interrupt();
        t.join();
        String tid = tid();
        long cpu = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        System.out.println("{\"calls\": " + i + ", \"tid\": " + tid + ", \"cpu_ns\": " + cpu + ", \"sleeper\": " +
                           sleeperTid + "}");
    }
}
"""

shared_profd = SharedProfd("--frequency", FREQUENCY)


def is_hotspot(frame):
    """A HotSpot pseudo-frame (see the file's comment)."""
    if frame.get("kernel"):
        return False
    bid = (frame.get("build_id") or "").lower()
    module = (frame.get("module") or "").lower()
    return (bid.startswith("hotspot") or bid.startswith("java") or module in ("[hotspot]", "[java]", "[python]")
            or module.startswith("[hotspot") or module.startswith("[java"))


def compile_class(workdir):
    javac = os.path.join(JAVA_HOME, "bin", "javac")
    src = os.path.join(workdir, "HsWalk.java")
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run([javac, "-d", workdir, src], check=True, timeout=120)


def test_jvm_stacks_reach_their_roots():
    java = os.path.join(JAVA_HOME, "bin", "java")
    if not os.path.exists(java):
        print(f"SKIP: no {java} (openjdk-17-jdk-headless, setup.sh)", file=sys.stderr)
        return
    workdir = tempfile.mkdtemp(prefix="profd-hswalk-")
    try:
        compile_class(workdir)
        with shared_profd as d:
            # one short run first, so that libjvm's unwind table is built
            # before the measured JVM starts: its start-up's samples
            # otherwise stop in libjvm while the table is built (5% of the
            # samples under ASan in one CI run)
            subprocess.run([java, "-cp", workdir, "HsWalk", "100"], stdout=subprocess.DEVNULL, check=True,
                           timeout=120)
            d.profctl("flush", timeout=FLUSH_TIMEOUT)
            proc = subprocess.Popen([java, "-cp", workdir, "HsWalk", str(RUN_MS)], stdout=subprocess.PIPE,
                                    text=True)
            out = proc.stdout.read()
            proc.stdout.close()
            # its CPU time, every thread's: what the samples are of (a busy
            # machine gives it less than the wall time)
            _, wstatus, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(wstatus)
            assert proc.returncode == 0, f"java exited {proc.returncode}"
            jvm_cpu_s = usage.ru_utime + usage.ru_stime
            truth = json.loads(out)
            assert truth["calls"] > 0 and truth["tid"] > 0, truth
            t0 = time.monotonic()
            d.profctl("flush", timeout=FLUSH_TIMEOUT)
            print(f"  flush: {time.monotonic() - t0:.1f} s")
            result = d.query_json("--pid", str(proc.pid), "--since", "5m")
            by_thread = d.query_json("--pid", str(proc.pid), "--tid", str(truth["tid"]), "--since", "5m")
            sleeper = d.query_json("--kind", "offcpu", "--pid", str(proc.pid), "--tid", str(truth["sleeper"]),
                                   "--since", "5m")
            status = json.loads(d.profctl("status", "--json").stdout)
            text = d.profctl("status").stdout
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    total = result["total"]
    rooted = java_samples = 0
    ends = {}
    for st in result["stacks"]:
        names = user_names(st["frames"])
        if any(n in ROOT_FRAMES for n in names):
            rooted += st["value"]
        else:
            key = " <- ".join(reversed(names[-4:])) or "(none)"
            ends[key] = ends.get(key, 0) + st["value"]
        if any(is_hotspot(f) for f in st["frames"]):
            java_samples += st["value"]
    worst = sorted(ends.items(), key=lambda kv: -kv[1])[:6]
    print(f"  JVM pid {proc.pid}: {rooted}/{total} samples reach a root ({100.0 * rooted / max(total, 1):.1f}%), "
          f"{java_samples} with HotSpot frames; commonest unrooted: {worst}")
    hs = status["unwind"].get("hotspot", {})
    rt = status["unwind"].get("runtime", {})
    print(f"  status: unwind.hotspot {hs}; unwind.runtime {rt}")
    print(f"  JVM CPU {jvm_cpu_s:.2f} s, its main thread's {truth['cpu_ns'] / 1e9:.2f} s")
    assert total >= 0.5 * jvm_cpu_s * int(FREQUENCY), f"only {total} samples of the JVM's {jvm_cpu_s:.2f} s of CPU"
    assert rooted >= ROOT_SHARE * total, \
        f"{rooted}/{total} samples reach a root (< {100 * ROOT_SHARE:.0f}%); commonest others: {worst}"

    # the Java main thread (JavaMain's, not the launcher's first)
    main_total = by_thread["total"]
    main_java = sum(st["value"] for st in by_thread["stacks"] if any(is_hotspot(f) for f in st["frames"]))
    print(f"  Java main thread: {main_java}/{main_total} samples with HotSpot frames")
    if by_thread["stacks"]:
        top = max(by_thread["stacks"], key=lambda st: st["value"])
        shown = [f"{f.get('module')}:{f.get('name')}" if is_hotspot(f) else f["name"]
                 for f in top["frames"] if not f.get("kernel")]
        print(f"  its heaviest stack ({top['value']} samples), outermost first: {' ; '.join(shown)}")
    assert main_total >= 0.5 * truth["cpu_ns"] / 1e9 * int(FREQUENCY), \
        f"only {main_total} samples of the main thread's {truth['cpu_ns'] / 1e9:.2f} s of CPU"
    assert main_java >= JAVA_SHARE * main_total, f"{main_java}/{main_total} main-thread samples have HotSpot frames"

    # off-CPU: the sleeper thread's blocked time, in Thread.sleep under
    # its Java frames (the walk at switch-out, the scheduler's programs)
    off_total = sleeper["total"]
    off_ok = sum(st["value"] for st in sleeper["stacks"]
                 if any(is_hotspot(f) for f in st["frames"]) and any(n in ROOT_FRAMES for n in user_names(st["frames"])))
    print(f"  sleeper thread: {off_ok / 1e9:.2f} of {off_total / 1e9:.2f} s off-CPU reach a root with HotSpot frames")
    assert off_total >= 0.5 * RUN_MS / 1000 * 1e9, f"only {off_total / 1e9:.2f} s off-CPU of the sleeper"
    assert off_ok >= ROOT_SHARE * off_total, f"{off_ok}/{off_total} ns of the sleeper's reach a root with Java frames"

    assert hs.get("jvms", 0) >= 1, f"no JVM given HotSpot's walker: {hs}"
    # HotSpot's walks and frames are its own (runtime.* are CPython's:
    # other tests' Python processes may run meanwhile)
    assert hs.get("walks", 0) > 0 and hs.get("frames", 0) >= hs["walks"], f"no HotSpot walks counted: {hs}"
    walked = re.search(r"^hotspot: +(\d+) JVMs walked, (\d+) not; (\d+) stacks met a code cache, (\d+) Java frames; "
                       r"frames not stepped:", text, re.M)
    assert walked and int(walked.group(1)) >= 1 and int(walked.group(3)) > 0 and int(walked.group(4)) > 0, \
        f"profctl status has no hotspot line of a JVM walked:\n{text}"


if __name__ == "__main__":
    require_root()
    try:
        run_tests([test_jvm_stacks_reach_their_roots])
    finally:
        shared_profd.cleanup()
