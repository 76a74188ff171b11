#!/usr/bin/env python3
"""What a profd store is made of (issue 43, docs/performance.md, Store size,
"On churn"): bytes per table and index (SQLite's dbstat), row counts, and
why there are more stacks than samples: which kind first names each stack,
how many stacks one process alone names, off-CPU stacks by task state, and
stacks with [unknown] or [jit] frames.

  tests/bench/store_breakdown.py profd.db

Read-only; decodes every sample block through the samples view, so meant
for stores of minutes to hours, not a day's."""
import collections
import sqlite3
import sys


def stack_ids(blob):
    """Location ids of stacks.frames in either form (docs/schema.md, Packed stacks)."""
    if not blob or blob[-1] == 0:
        return [int.from_bytes(blob[i:i + 8], "little") for i in range(0, len(blob), 8)]
    out, prev, v, shift = [], 0, 0, 0
    for b in blob[:-1]:
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            prev += (v >> 1) ^ -(v & 1)
            out.append(prev)
            v, shift = 0, 0
    return out


def main():
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    q = lambda s: db.execute(s).fetchall()
    one = lambda s: db.execute(s).fetchone()[0]
    ps, pc, fl = one("PRAGMA page_size"), one("PRAGMA page_count"), one("PRAGMA freelist_count")
    print(f"page_size {ps}, pages {pc}, free {fl}, in use {(pc - fl) * ps / 2**20:.2f} MiB")
    n, samples, keys, t0, t1 = q("SELECT count(*), sum(samples), sum(keys), min(start_ns), max(end_ns) FROM drains")[0]
    secs = (t1 - t0) / 1e9
    print(f"drains {n}, cpu samples {samples}, sample entries {keys}, {secs:.0f} s")
    rows = q("SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC")
    total = sum(r[1] for r in rows)
    print("\nbytes by table and index (dbstat):")
    for name, size, payload, unused in rows:
        if size > ps:
            print(f"  {name:28s} {size / 2**20:8.2f} MiB {100 * size / total:5.1f}%  "
                  f"payload {payload / 2**20:7.2f}  unused {unused / 2**20:6.2f}")
    print(f"  {'all':28s} {total / 2**20:8.2f} MiB; {total / max(samples, 1):.0f} bytes a cpu sample; "
          f"{total / 2**20 * 3600 / max(secs, 1):.0f} MiB an hour")
    print("\nrows:")
    for t in ("stacks", "locations", "location_lines", "functions", "mappings", "processes", "threads",
              "sample_blocks", "stack_refs", "process_refs", "timeline_blocks", "offcpu_timeline"):
        print(f"  {t:16s} {one('SELECT count(*) FROM ' + t)}")
    kinds, procs = collections.defaultdict(set), collections.defaultdict(set)
    for sid, kind, pid in q("SELECT stack_id, kind, process_id FROM samples"):
        kinds[sid].add(kind)
        procs[sid].add(pid)
    first = collections.Counter(min(k) for k in kinds.values())
    print("\nstacks by the first kind naming them (0 cpu, 1 offcpu, 2 wakeup):", dict(sorted(first.items())))
    print(f"stacks one process alone names: {sum(1 for p in procs.values() if len(p) == 1)} of {len(procs)}")
    print("off-CPU entries and distinct stacks by state (1 R, 2 S, 3 D, 4 T, 5 I):",
          q("SELECT state, count(*), count(DISTINCT stack_id) FROM samples WHERE kind = 1 GROUP BY state"))
    paths = dict(q("SELECT l.id, m.path FROM locations l JOIN mappings m ON m.id = l.mapping_id"))
    frames = blob_bytes = unknown = jit = 0
    for blob, in q("SELECT frames FROM stacks"):
        ids = stack_ids(blob)
        frames += len(ids)
        blob_bytes += len(blob)
        names = {paths.get(i) for i in ids}
        unknown += "[unknown]" in names
        jit += "[jit]" in names
    n_stacks = one("SELECT count(*) FROM stacks")
    print(f"frames {frames} ({frames / max(n_stacks, 1):.1f} a stack) in {blob_bytes / 2**20:.2f} MiB of blobs; "
          f"stacks with an [unknown] frame {unknown}, a [jit] frame {jit}")
    print("top comm by processes:", q("SELECT comm, count(*) c FROM processes GROUP BY comm ORDER BY c DESC LIMIT 8"))


if __name__ == "__main__":
    main()
