#!/usr/bin/env python3
"""The benchmark harness still runs: a tiny configuration of it, written to a
temporary file, must produce a filled-in table for every configuration. The
figures themselves are not judged here (see docs/performance.md)."""
import os
import re
import subprocess
import sys
import tempfile

if os.geteuid() != 0:
    print("SKIP: the benchmark harness loads BPF programs and needs root; it did NOT run",
          file=sys.stderr)
    sys.exit(77)

with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "performance.md")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "bench.py"), "--quick",
                    "--profd", os.environ["PROFD"], "--output", out], check=True, timeout=300)
    text = open(out).read()

SPREAD = r"[0-9.]+ \([0-9.]+-[0-9.]+\)"
# cost table: name | stress-ng spread | ratio | pipe spread | ratio | load
rows = {m.group(1): m.group(2) for m in
        re.finditer(rf"^\| ([^|]+?) \| (?:{SPREAD}|-) \| [^|]+ \| ({SPREAD}) \|", text, re.M)}
print(text)
for config in ("no profiler", "profd on-CPU only (--kinds cpu)", "profd off-CPU only (--kinds offcpu)",
               "profd defaults (cpu+offcpu+wakeup)"):
    assert config in rows, f"no measured row for {config!r}"
assert re.search(r"^\| no profiler \| " + SPREAD, text, re.M), "no stress-ng figure without a profiler"
assert re.search(r"\| profd off-CPU only \(--kinds offcpu\) \| pipe \| profd_switch \| tracing \| [1-9][0-9]* \| [0-9]+ \|",
                 text), "no BPF ns/run figure for profd_switch"
assert re.search(r"\| profd on-CPU only \(--kinds cpu\) \| stress \| profd_oncpu \| perf_event \| [1-9][0-9]* \| [0-9]+ \|",
                 text), "no BPF ns/run figure for profd_oncpu"
assert "## Targets and where they stand" in text, "no targets table"
print("ok - harness produced every row")
