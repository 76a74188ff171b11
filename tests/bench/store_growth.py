#!/usr/bin/env python3
"""Store growth of the real daemon at defaults: runs one or more profd
binaries side by side on this host (same load, same time), each with its
own store and socket, and reports how fast each store's data grows, in
MiB per hour and per day, measured on the main file's pages in use
((page_count - freelist_count) * page_size through a read-only
connection, which sees what the WAL holds too; the -wal file itself is not
counted).

  tests/bench/store_growth.py --seconds 300 before=/path/to/old/profd after=build/daemon/profd

As root. The first drain's pages (schema, first stacks) are not growth:
the rate is taken between the first sample after --warmup and the last."""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time


def used_bytes(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        q = lambda sql: db.execute(sql).fetchone()[0]
        return (q("PRAGMA page_count") - q("PRAGMA freelist_count")) * q("PRAGMA page_size"), q(
            "SELECT count(*) FROM drains"), q("SELECT coalesce(sum(keys), 0) FROM drains")
    finally:
        db.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--warmup", type=float, default=30, help="seconds before the first measurement")
    ap.add_argument("--interval", type=float, default=30)
    ap.add_argument("daemons", nargs="+", help="NAME=PATH_TO_PROFD")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="store-growth-")
    runs = []
    try:
        for spec in args.daemons:
            name, profd = spec.split("=", 1)
            d = os.path.join(work, name)
            os.makedirs(d)
            store, sock = os.path.join(d, "profd.db"), os.path.join(d, "profd.sock")
            log = open(os.path.join(d, "profd.log"), "wb")
            p = subprocess.Popen([profd, "--config", "/dev/null", "--socket", sock, "--store", store],
                                 stdout=log, stderr=log)
            runs.append({"name": name, "proc": p, "store": store, "points": []})
        time.sleep(args.warmup)
        t_end = time.monotonic() + args.seconds
        while True:
            now = time.monotonic()
            for r in runs:
                if r["proc"].poll() is not None:
                    sys.exit(f"{r['name']}: profd exited {r['proc'].returncode}")
                r["points"].append((now,) + used_bytes(r["store"]))
            if now >= t_end:
                break
            time.sleep(min(args.interval, max(0.0, t_end - now)))
        load = open("/proc/loadavg").read().split()[:3]
        print(f"{args.seconds:.0f} s after {args.warmup:.0f} s warm-up, load average {' '.join(load)}, "
              f"{os.cpu_count()} CPUs")
        for r in runs:
            (t0, b0, d0, k0), (t1, b1, d1, k1) = r["points"][0], r["points"][-1]
            rate = (b1 - b0) / (t1 - t0)  # bytes per second
            keys = k1 - k0
            print(f"{r['name']}: {b0 / 2**20:.2f} -> {b1 / 2**20:.2f} MiB in use, {d1 - d0} drains, {keys} samples "
                  f"({(b1 - b0) / keys if keys else 0:.1f} bytes each incl. new stacks): "
                  f"{rate * 3600 / 2**20:.2f} MiB/h, {rate * 86400 / 2**20:.0f} MiB/day")
    finally:
        for r in runs:
            if r["proc"].poll() is None:
                r["proc"].terminate()
                try:
                    r["proc"].wait(60)
                except subprocess.TimeoutExpired:
                    r["proc"].kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
