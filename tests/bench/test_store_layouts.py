#!/usr/bin/env python3
"""store_layouts.py still reads a store of today's schema: on a quarter
hour made by gen_store (with retention, so with spans) it must print every
layout's row, with today's layout at its real size, schema 8's with more
blocks, and fewer blocks for the layouts that group more.
The estimates themselves are not judged (docs/performance.md)."""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

with tempfile.TemporaryDirectory() as d:
    store = os.path.join(d, "day.db")
    subprocess.run([os.environ["GEN_STORE"], "--hours", "0.25", "--processes", "40", "--stacks", "300",
                    "--quiet", store], check=True, timeout=300)
    out = subprocess.run([sys.executable, os.path.join(HERE, "store_layouts.py"), store, "--spans", "6,30"],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    db = sqlite3.connect(store)
    blocks = db.execute("SELECT count(*) FROM sample_blocks").fetchone()[0]
    real = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'sample_blocks'").fetchone()[0]
    db.close()
print(out)
rows = {m.group(1): (int(m.group(2).replace(",", "")), float(m.group(3)))
        for m in re.finditer(r"^\| ([^|]+?) \| ([0-9,]+) \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \|", out, re.M)}
today = rows.get("today's: the store's own blocks")
assert today, f"no row for today's layout in:\n{out}"
assert today[0] == blocks, (today, blocks)
assert abs(today[1] - real / 2**20) < 0.06, (today, real)  # scaled to its real size
# retention spans the quarter hour's first 60 drains: fewer blocks than
# schema 8's one per drain
assert rows["(drain, kind, process): schema 8"][0] > blocks, (rows, blocks)
for name in ("(drain, kind), process a field", "(drain, kind), process a field, zlib",
             "(6 drains, kind, process), drain a field", "(30 drains, kind, process), two levels"):
    assert name in rows, f"no row {name!r}"
    assert rows[name][0] < blocks, (name, rows[name], blocks)
print("ok - every layout estimated")
