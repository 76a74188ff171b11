#!/usr/bin/env python3
"""What a merged tier of a profd store would keep if its rare stacks were
folded into their callers (issue 43, docs/performance.md, Store size, "On
churn"; a measurement for a decision, nothing in profd does this).

  tests/bench/store_prune.py [--bucket SECONDS] [--functions] profd.db

The samples are grouped into buckets of --bucket seconds (600: the
10-minute tier) by their drain's end, and per bucket and kind into a tree
of their stacks' frames, root first, each node weighted by the samples'
values (cpu: samples; offcpu: time blocked; wakeup: time woken after).
For each threshold (a share of the bucket's kind's total) a sample keeps
the deepest prefix of its stack whose node reaches the threshold: what a
flame graph of the bucket at that resolution shows. With --functions each
frame is first taken as its function (its location if it has none), as a
tier kept by function rather than by address would hold them. Printed per threshold:
the distinct stacks the tier would hold (over all buckets), their frames,
the locations they name, the share of the value whose stack was cut and
the share of the value's frames kept (weighted by value), and the bytes of stacks, locations and their names scaled from what this
store spends on each (dbstat). Read-only."""
import argparse
import collections
import sqlite3

from store_breakdown import stack_ids

THRESHOLDS = (0, 0.0001, 0.0005, 0.001, 0.005)
KIND_NAMES = {0: "cpu", 1: "offcpu", 2: "wakeup"}


def table_bytes(db, names):
    return sum(db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?", (n,)).fetchone()[0]
               for n in names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bucket", type=int, default=600, help="bucket width in seconds (default 600)")
    ap.add_argument("--functions", action="store_true", help="frames as their functions, not their addresses")
    ap.add_argument("store")
    a = ap.parse_args()
    db = sqlite3.connect(f"file:{a.store}?mode=ro", uri=True)
    frames = {sid: tuple(stack_ids(blob)) for sid, blob in db.execute("SELECT id, frames FROM stacks")}
    if a.functions:
        # a function's frames as its lowest location id, a location without one as itself
        first = {}
        for lid, fid in db.execute("SELECT id, function_id FROM locations ORDER BY id"):
            first[lid] = first.setdefault(("f", fid), lid) if fid is not None else lid
        frames = {sid: tuple(first.get(x, x) for x in f) for sid, f in frames.items()}
    width = a.bucket * 10**9
    # (bucket, kind) -> stack id -> value
    values = collections.defaultdict(collections.Counter)
    for end_ns, kind, sid, value in db.execute(
            "SELECT d.end_ns, s.kind, s.stack_id, s.value FROM samples s JOIN drains d ON d.id = s.drain_id"):
        values[(end_ns // width, kind)][sid] += value if kind else 1
    n_stacks = len(frames)
    n_locations = db.execute("SELECT count(*) FROM locations").fetchone()[0]
    stack_bytes = table_bytes(db, ("stacks", "stacks_hash", "stack_refs"))
    location_bytes = table_bytes(db, ("locations", "sqlite_autoindex_locations_1", "location_lines",
                                      "functions", "sqlite_autoindex_functions_1"))
    buckets = sorted({b for b, _ in values})
    print(f"{a.store}: {n_stacks} stacks ({stack_bytes / 2**20:.2f} MiB with their index and counts), "
          f"{n_locations} locations ({location_bytes / 2**20:.2f} MiB with their lines and functions); "
          f"{len(buckets)} buckets of {a.bucket} s")
    print("| share kept as a node | stacks | frames | locations | cut (frames kept), by kind | stacks and locations, MiB |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for share in THRESHOLDS:
        kept, cut = set(), collections.Counter()
        total, depth, depth_kept = collections.Counter(), collections.Counter(), collections.Counter()
        for (bucket, kind), by_stack in values.items():
            node = collections.Counter()
            for sid, v in by_stack.items():
                f = frames.get(sid, ())
                for j in range(1, len(f) + 1):
                    node[f[:j]] += v
            floor = share * sum(by_stack.values())
            for sid, v in by_stack.items():
                f = frames.get(sid, ())
                j = len(f)
                while j > 0 and node[f[:j]] < floor:
                    j -= 1
                kept.add((f[:j], j < len(f)))
                total[kind] += v
                depth[kind] += v * len(f)
                depth_kept[kind] += v * j
                if j < len(f):
                    cut[kind] += v
        n_frames = sum(len(f) for f, _ in kept)
        locs = {x for f, _ in kept for x in f}
        est = stack_bytes * len(kept) / max(n_stacks, 1) + location_bytes * len(locs) / max(n_locations, 1)
        cuts = ", ".join(f"{KIND_NAMES.get(k, k)} {100 * cut[k] / total[k]:.1f}% "
                         f"({100 * depth_kept[k] / max(depth[k], 1):.0f}% of frames kept)" for k in sorted(total))
        print(f"| {share:g} | {len(kept)} | {n_frames} | {len(locs)} | {cuts} | {est / 2**20:.2f} |")


if __name__ == "__main__":
    main()
