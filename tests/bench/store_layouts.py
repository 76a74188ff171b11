#!/usr/bin/env python3
"""What other layouts of the samples would take: reads every entry of a
schema 8, 9 or 10 store's sample_blocks (schema/0008-compact-samples.sql,
0009-spanning-blocks.sql) and estimates the size of the same samples
stored as

  - the store's own blocks (per drain, or per span of drains, kind and
    process): estimated the same way, to compare the estimate with the
    real size (dbstat);
  - blocks per (drain, kind, process): schema 8's layout;
  - blocks per (drain, kind), the process a seventh field; also with each
    blob compressed by zlib;
  - blocks per (K drains, kind, process), the drain a seventh field (the
    offset from the block's first drain); also as two levels: each distinct
    (stack, thread, state, peer, cgroup) once, then a (drain, value) pair
    per entry.

  tests/bench/store_layouts.py STORE.db [--spans 6,30,90]

Fixed-width fields as schema 8 and 9 packed them (per block and field the
smallest value and the width in whole bytes of the largest offset from
it; schema 10 counts widths in bits, which these estimates do not). A block's
row costs its key and bases as SQLite record varints, the record header
and 4 bytes of cell; pages are not full, so the estimates are multiplied
by the ratio of today's real size to its estimate. The other tables
(stacks, processes, ...) are added as they are. An estimate, not a store:
no query, retention or export was run on these layouts."""
import argparse
import collections
import sqlite3
import sys
import zlib

import blocks

FIELDS = ("stack", "tid", "state", "peer", "cgroup", "value")
SPAN = 6  # the seventh field: the entry's drain is the block's key plus it (base 0)


def record_int_bytes(v):
    """Bytes of an integer in an SQLite record (0 and 1 take none)."""
    if v in (0, 1):
        return 0
    v = abs(v)
    for n, limit in ((1, 0x7f), (2, 0x7fff), (3, 0x7fffff), (4, 0x7fffffff), (6, 0x7fffffffffff)):
        if v <= limit:
            return n
    return 8


def width(v):
    n = 0
    while v:
        n += 1
        v >>= 8
    return n


def read_entries(path):
    """(drain, kind, process, stack, tid, state, peer, cgroup, value, block
    key, span offset) of every sample entry."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = []
    for row in db.execute("SELECT drain_id, kind, process_id, n, widths, stack_base, tid_base, state_base, "
                          "peer_base, cgroup_base, value_base, entries FROM sample_blocks"):
        key, kind, process, n, widths, *bases = row
        blob = bases.pop()
        for vals in blocks.entries(n, widths, bases, blob):
            span = vals.pop()
            out.append((key + span, kind, process, *vals, key, span))
    return db, out


def estimate(entries, key, fields, compress=False, two_level=None):
    """Bytes of the blocks grouping entries by key(entry), each packing the
    entry positions in fields."""
    blocks = collections.defaultdict(list)
    for e in entries:
        blocks[key(e)].append(e)
    payload = overhead = 0
    for k, rows in blocks.items():
        rows.sort(key=lambda r: tuple(r[f] for f in fields))
        bases = [min(r[f] for r in rows) for f in fields]
        widths = [width(max(r[f] for r in rows) - b) for f, b in zip(fields, bases)]
        if two_level:
            # each distinct key part once (+1 byte: its count), then a pair per entry
            keys = {tuple(r[f] for f in two_level[0]) for r in rows}
            kw = sum(w for f, w in zip(fields, widths) if f in two_level[0])
            pw = sum(w for f, w in zip(fields, widths) if f in two_level[1])
            size = len(keys) * (kw + 1) + len(rows) * pw
        elif compress:
            blob = bytearray()
            for r in rows:
                for f, b, w in zip(fields, bases, widths):
                    blob += (r[f] - b).to_bytes(w, "little")
            size = len(zlib.compress(bytes(blob), 6)) if blob else 0
        else:
            size = len(rows) * sum(widths)
        payload += size
        cols = list(k) + [len(rows), 1 << 20] + bases
        header = len(cols) + 2
        overhead += header + sum(record_int_bytes(c) for c in cols) + 4 + (1 if size < 120 else 2)
    return len(blocks), payload, overhead


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--spans", default="6,30,90,360", help="drains per block for the spanning layouts")
    args = ap.parse_args()
    db, entries = read_entries(args.store)
    if not entries:
        sys.exit(f"{args.store}: no samples")
    pages = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    real = pages.get("sample_blocks", 0)
    others = sum(v for k, v in pages.items() if k != "sample_blocks")
    drains = db.execute("SELECT count(*) FROM drains").fetchone()[0]
    hours = (db.execute("SELECT max(end_ns) - min(start_ns) FROM drains").fetchone()[0] or 0) / 3.6e12
    n = len(entries)
    mib = 1 << 20
    # entry tuple positions: 0 drain, 1 kind, 2 process, 3.. FIELDS, then
    # the block's key and the span offset
    f6 = list(range(3, 3 + len(FIELDS)))
    key, span = 3 + len(FIELDS), 4 + len(FIELDS)
    rows = []
    spans = any(e[span] for e in entries)
    nb, pay, over = estimate(entries, lambda e: (e[key], e[1], e[2]), f6 + ([span] if spans else []))
    fill = real / (pay + over)
    rows.append(("today's: the store's own blocks", nb, pay, over))
    nb, pay, over = estimate(entries, lambda e: (e[0], e[1], e[2]), f6)
    rows.append(("(drain, kind, process): schema 8", nb, pay, over))
    nb, pay, over = estimate(entries, lambda e: (e[0], e[1]), [2] + f6)
    rows.append(("(drain, kind), process a field", nb, pay, over))
    nb, pay, over = estimate(entries, lambda e: (e[0], e[1]), [2] + f6, compress=True)
    rows.append(("(drain, kind), process a field, zlib", nb, pay, over))
    for k in (int(s) for s in args.spans.split(",")):
        span = lambda e, k=k: (e[0] // k, e[1], e[2])
        nb, pay, over = estimate(entries, span, [0] + f6)
        rows.append((f"({k} drains, kind, process), drain a field", nb, pay, over))
        nb, pay, over = estimate(entries, span, [0] + f6, two_level=(f6[:-1], [0, f6[-1]]))
        rows.append((f"({k} drains, kind, process), two levels", nb, pay, over))
    print(f"{args.store}: {drains} drains over {hours:.1f} h, {n} sample entries; sample_blocks "
          f"{real / mib:.1f} MiB in its pages, the other tables {others / mib:.1f} MiB; estimates x {fill:.3f} "
          f"(today's real size over its estimate)\n")
    print("| layout | blocks | entries MiB | per block MiB | samples, est. MiB | bytes a sample | "
          "whole store, est. MiB per day |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, nb, pay, over in rows:
        est = (pay + over) * fill
        per_day = (est + others) / (hours / 24) if hours else 0
        print(f"| {name} | {nb:,} | {pay / mib:.1f} | {over / mib:.1f} | {est / mib:.1f} | {est / n:.2f} | "
              f"{per_day / mib:.1f} |")


if __name__ == "__main__":
    main()
