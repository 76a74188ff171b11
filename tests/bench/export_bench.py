#!/usr/bin/env python3
"""What the ClickHouse export costs, and what a sample costs in ClickHouse.

Runs profd at its defaults (49 Hz, 10 s drains, every kind) twice on the
same workload, export off and then on (to two real clickhouse-server
shards on loopback, tests/e2e/clickhouse.py), and measures profd's CPU
time (utime + stime from /proc/PID/stat) and its peak and final RSS. Then,
once ClickHouse acknowledged every drain, the bytes on disk of the fleet
tables (system.parts, active parts, every shard) as inserted and after
OPTIMIZE ... FINAL (merged; duplicate stacks and frames collapsed),
against the local store's bytes in use, each per sample row and per CPU
sample. Writes the Export section of docs/performance.md.

As root, after a build: tests/bench/export_bench.py [--seconds 300]"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import clickhouse  # noqa: E402
from harness import memory_kib  # noqa: E402

BEGIN, END = "<!-- bench:export:begin -->", "<!-- bench:export:end -->"
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def workload(build, seconds):
    """A busy host: on-CPU work and many distinct stacks."""
    return [subprocess.Popen([os.path.join(build, "tests", "workloads", w[0]), str(seconds)] + w[1:],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for w in (["cpu_split"], ["many_stacks", "2"])]


def status(profctl, sock):
    return json.loads(subprocess.run([profctl, "--socket", sock, "status", "--json"], capture_output=True,
                                     text=True, check=True, timeout=120).stdout)


def run_profd(args, seconds, build, extra_config=""):
    """profd at defaults for `seconds` under the workload; returns its
    figures and keeps its directory for the store."""
    d = tempfile.mkdtemp(prefix="profd-export-bench-")
    sock, store, conf = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db"), os.path.join(d, "profd.conf")
    with open(conf, "w") as f:
        f.write(extra_config)
    log = open(os.path.join(d, "profd.log"), "wb")
    p = subprocess.Popen([args.profd, "--config", conf, "--socket", sock, "--store", store],
                         stdout=log, stderr=log)
    deadline = time.monotonic() + 180
    while not os.path.exists(sock):
        if p.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"profd did not start; see {d}/profd.log")
        time.sleep(0.2)
    time.sleep(2)
    cpu0, t0 = cpu_s(p.pid), time.monotonic()
    work = workload(build, seconds)
    time.sleep(seconds)
    cpu1, t1 = cpu_s(p.pid), time.monotonic()
    rss, hwm = memory_kib(p.pid)
    for w in work:
        w.wait()
    return {"dir": d, "proc": p, "sock": sock, "store": store, "cpu_s": cpu1 - cpu0, "wall_s": t1 - t0,
            "rss_kib": rss, "hwm_kib": hwm, "log": log}


def stop(r):
    r["proc"].terminate()
    r["proc"].wait(600)
    r["log"].close()


def store_figures(store):
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT count(*) FROM samples").fetchone()[0]
        cpu = db.execute("SELECT coalesce(sum(value), 0) FROM samples WHERE kind = 0").fetchone()[0]
        page = db.execute("PRAGMA page_size").fetchone()[0]
        used = (db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]) * page
        drains = db.execute("SELECT count(*), max(id), max(end_ns) FROM drains WHERE resolution_ns = 0").fetchone()
    finally:
        db.close()
    return {"rows": rows, "cpu_samples": cpu, "bytes": used, "drains": drains[0], "last_id": drains[1]}


def clickhouse_bytes(ch):
    """Bytes on disk and rows of the active parts of each fleet table,
    summed over the shards."""
    out = {}
    for s in ch.servers:
        for line in s.query("SELECT table, sum(bytes_on_disk), sum(rows) FROM system.parts WHERE database = 'profd' "
                            "AND active AND table != 'schema_version' GROUP BY table "
                            "FORMAT TabSeparated").splitlines():
            t, b, n = line.split("\t")
            o = out.setdefault(t, [0, 0])
            o[0] += int(b)
            o[1] += int(n)
    return out


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=int, default=300, help="length of each run (default 300)")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    args.profd = os.path.join(args.build, "daemon", "profd")
    args.profctl = os.path.join(args.build, "client", "profctl")
    if os.geteuid() != 0:
        sys.exit("run as root: profd loads BPF programs")
    load0 = os.getloadavg()[0]

    off = run_profd(args, args.seconds, args.build)
    stop(off)
    with clickhouse.Cluster() as ch:
        ch.create_schema()
        cred = ch.write_credentials(os.path.join(ch.root, "cred"))
        on = run_profd(args, args.seconds, args.build,
                       f"clickhouse_url = {ch.url}\nhost_name = bench\nclickhouse_credentials = {cred}\n")
        st = store_figures(on["store"])
        deadline = time.monotonic() + 600
        while status(args.profctl, on["sock"])["export"]["acknowledged_drain_id"] < st["last_id"]:
            if time.monotonic() > deadline:
                sys.exit("the export did not catch up within 10 minutes")
            time.sleep(1)
        exp = status(args.profctl, on["sock"])["export"]
        stop(on)
        st = store_figures(on["store"])
        inserted = clickhouse_bytes(ch)
        for s in ch.servers:
            for t in ("samples_local", "stacks_local", "frames_local"):
                s.query(f"OPTIMIZE TABLE profd.{t} FINAL")
        merged = clickhouse_bytes(ch)
        ch_rows = int(ch.query("SELECT count() FROM profd.samples").strip())
    load1 = os.getloadavg()[0]

    total_ins = sum(b for b, _ in inserted.values())
    total_mer = sum(b for b, _ in merged.values())
    rows = st["rows"]
    cpu_over = (on["cpu_s"] / on["wall_s"] - off["cpu_s"] / off["wall_s"]) * 100
    L = [BEGIN, "## Export to ClickHouse", "",
         f"`tests/bench/export_bench.py --seconds {args.seconds}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
         f"load average {load0:.1f} before, {load1:.1f} after (the machine is shared: CPU figures are noisy). "
         "profd at defaults (49 Hz, 10 s drains, cpu, offcpu and wakeup) with `cpu_split` and `many_stacks` "
         "running, export off, then on to two clickhouse-server 18.16 shards on loopback.", "",
         "| | export off | export on |", "| --- | --- | --- |",
         f"| profd CPU | {off['cpu_s'] / off['wall_s'] * 100:.2f}% of a core | {on['cpu_s'] / on['wall_s'] * 100:.2f}% of a core |",
         f"| peak RSS (VmHWM) | {off['hwm_kib'] / 1024:.1f} MiB | {on['hwm_kib'] / 1024:.1f} MiB |",
         f"| RSS at the end | {off['rss_kib'] / 1024:.1f} MiB | {on['rss_kib'] / 1024:.1f} MiB |", "",
         f"Export cost: {cpu_over:+.2f}% of a core, {(on['hwm_kib'] - off['hwm_kib']) / 1024:+.1f} MiB peak RSS. "
         f"It sent {exp['exported_drains']} drains, {exp['exported_samples']} sample rows, "
         f"{exp['exported_stacks']} stack rows and {exp['exported_frames']} frame rows, "
         f"{fmt_bytes(exp['bytes_sent'])} of request bodies ({exp['bytes_sent'] / max(rows, 1):.0f} B per sample row).", "",
         f"Bytes per sample: the local store holds {rows} sample rows ({st['cpu_samples']} CPU samples) "
         f"in {fmt_bytes(st['bytes'])} of pages in use; ClickHouse {ch_rows} rows.", "",
         "| | bytes | per sample row | per CPU sample |", "| --- | --- | --- | --- |",
         f"| local store (SQLite, all tables and indexes) | {fmt_bytes(st['bytes'])} | {st['bytes'] / max(rows, 1):.1f} | "
         f"{st['bytes'] / max(st['cpu_samples'], 1):.1f} |"]
    for label, parts, total in (("ClickHouse as inserted", inserted, total_ins),
                                ("ClickHouse merged (OPTIMIZE FINAL)", merged, total_mer)):
        detail = ", ".join(f"{t} {fmt_bytes(b)}" for t, (b, _) in sorted(parts.items()))
        L.append(f"| {label} ({detail}) | {fmt_bytes(total)} | {total / max(rows, 1):.1f} | "
                 f"{total / max(st['cpu_samples'], 1):.1f} |")
    L += ["", "A sample row is one (process, thread, stack, kind, state) of one drain with its value; a CPU "
          "sample is one tick of the 49 Hz timer. ClickHouse's parts as inserted are many small ones (a "
          "batch each) with per-part overhead; background merges bring them toward the merged figure.", END, ""]
    text = "\n".join(L)
    old = open(args.output).read() if os.path.exists(args.output) else "# profd performance\n\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(args.output, "w") as f:
        f.write(new)
    print(text)


if __name__ == "__main__":
    main()
