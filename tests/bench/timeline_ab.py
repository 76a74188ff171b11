#!/usr/bin/env python3
"""A/B of the on-CPU sampler's BPF time per sample, a build before the
timeline (BEFORE, e.g. a worktree of f4a294c built in build/) against main
(build/): interleaved rounds, profd --kinds cpu at defaults under
stress-ng --cpu 2 for 20 s after 8 s. Usage: timeline_ab.py [ROUNDS] (root)."""
import os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
builds = {"before": os.environ.get("BEFORE", "/work/wt/base/build"), "main (timeline)": os.path.join(ROOT, "build")}
res = {k: [] for k in builds}
bench.set_bpf_stats(True)
try:
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        for label, b in (list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]):
            wd = tempfile.mkdtemp(prefix="ab-")
            p = subprocess.Popen([b + "/daemon/profd", "--kinds", "cpu", "--store", wd + "/s.db",
                                  "--socket", wd + "/s.sock"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(3)
                w = subprocess.Popen(["stress-ng", "--cpu", "2", "--cpu-method", "int64", "--timeout", "30"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(8)
                ids = bench.owned_progs(p.pid)
                a = bench.bpf_progs(); time.sleep(20); z = bench.bpf_progs()
                w.wait()
                cnt = ns = 0
                for i in ids:
                    if i in a and i in z and z[i].get("type") == "perf_event":
                        cnt += z[i].get("run_cnt", 0) - a[i].get("run_cnt", 0)
                        ns += z[i].get("run_time_ns", 0) - a[i].get("run_time_ns", 0)
                res[label].append(ns / cnt if cnt else None)
                print(label, r, cnt, round(ns / cnt) if cnt else None, open("/proc/loadavg").read().split()[0], flush=True)
            finally:
                p.terminate(); p.wait()
                subprocess.run(["rm", "-rf", wd])
finally:
    bench.set_bpf_stats(False)
import statistics
for k, v in res.items():
    v = [x for x in v if x]
    print(k, "median ns/sample", round(statistics.median(v)) if v else None, [round(x) for x in v])
