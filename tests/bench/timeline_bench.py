#!/usr/bin/env python3
"""The timeline's size and the heatmap's query time (issue 44): fills a
store per host (idle, busy, build) with `gen_store --timeline`, reads what
the timeline takes, starts the real `profd --kinds none` on each store and
times the real profctl:

  tests/bench/timeline_bench.py                      as root; rewrites the section "The timeline and the
                                                     heatmap (issue 44)" of docs/performance.md
  tests/bench/timeline_bench.py --quick --output F   tiny stores (what the test suite runs)

Size: the timeline's rows (timeline_blocks) as SQLite stores them (dbstat:
pages with their overhead) and their packed blobs alone, per on-CPU sample
they hold. Growth per day: with the default timeline_retention (1h) the
timeline stops growing after an hour at its steady size; without
retention a day of samples at the host's rate times the bytes per sample.

Queries: each runs --runs times after one warm-up (median, min-max of the
wall time as a user sees it: profctl started, answer read and rendered to
a file). The stores are made ending at a fixed time of day (09:30 UTC, where
gen_store's daily curve is at its mean) and moved so the last drain ends
now, so --since 1h is the last hour of data.

Used by the test suite with --quick (tests/bench/meson.build: timeline-bench),
which checks that every measurement is made, not how fast."""
import argparse
import datetime
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import query_bench  # noqa: E402  (the Daemon, run_profctl and machine facts)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BEGIN, END = "<!-- bench:timeline:begin -->", "<!-- bench:timeline:end -->"

# gen_store's samples per drain are frequency x cpus x interval x its daily
# curve (0.6 at the fixed end time): --frequency sets the rate, not the
# sampler's spacing. The rates are the real ones measured on this machine
# (docs/performance.md, "profd's own cost", and issue 43):
# - idle: 65 samples in 180 s (0.36/s): 1 x 1 x 0.6 = 0.6/s, the closest
#   gen_store's integer options come;
# - busy: stress-ng on both CPUs at 49 Hz, 98/s: 82 x 2 x 0.6 = 98/s;
# - build: 149,926 samples in 30 min (83/s) with ~1,100 processes tracked
#   and more stacks than samples: 69 x 2 x 0.6 = 83/s, 1,100 processes,
#   20,000 stack templates.
HOSTS = [
    ("idle", "0.36/s measured idle (65 samples in 180 s)",
     {"frequency": 1, "cpus": 1, "processes": 60, "stacks": 500}),
    ("busy", "98/s: stress-ng on both CPUs at 49 Hz",
     {"frequency": 82, "cpus": 2, "processes": 300, "stacks": 6000}),
    ("build", "83/s measured on the build loop (149,926 samples in 30 min, issue 43)",
     {"frequency": 69, "cpus": 2, "processes": 1100, "stacks": 20000}),
]
QUICK_SCALE = {"processes": 40, "stacks": 300}
DAY = 86400


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def end_time():
    """Today's (or yesterday's) 09:30 UTC: a fixed point of gen_store's daily
    curve, so the rates do not depend on when the bench runs."""
    now = int(time.time())
    end = now - now % DAY + 9 * 3600 + 1800
    return end if end <= now else end - DAY


def generate(gen_store, path, params, hours, timeline=True):
    """Runs gen_store; its wall time and its own CPU time (user + system,
    from its rusage: the store code's work, not the machine's load)."""
    cmd = [gen_store] + (["--timeline"] if timeline else []) + ["--quiet", "--hours", str(hours),
                                                                 "--end", str(end_time())]
    for k in ("frequency", "cpus", "processes", "stacks"):
        cmd += [f"--{k}", str(params[k])]
    cmd.append(path)
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"gen_store failed ({p.returncode}):\n{err.read().decode()[-3000:]}")
    return {"command": " ".join(["gen_store"] + cmd[1:-1]), "seconds": time.monotonic() - t0,
            "cpu_s": ru.ru_utime + ru.ru_stime}


def writer_cpu(gen_store, path, params, hours, rounds, first):
    """The writer's CPU the timeline adds: the same drains (gen_store's
    aggregates do not change with --timeline) stored with and without
    it, interleaved, through the daemon's store code and retention.
    first: the --timeline run already made (the store the queries use)."""
    on, off = [first["cpu_s"]], []
    for i in range(rounds):
        for timeline in ((False, True) if i % 2 == 0 else (True, False)):
            if timeline and len(on) > rounds:
                continue
            p = path + ".cpu"
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(p + suffix):
                    os.unlink(p + suffix)
            (on if timeline else off).append(generate(gen_store, p, params, hours, timeline)["cpu_s"])
    log(f"  writer CPU: {', '.join(f'{x:.1f}' for x in on)} s with the timeline, "
        f"{', '.join(f'{x:.1f}' for x in off)} s without")
    return {"on": on, "off": off}


def real_daemon(profd, profctl, seconds, workdir):
    """profd at its defaults (49 Hz, 10 s drains, cpu+offcpu+wakeup) under
    stress-ng on every CPU: what its timeline takes per sample, and its CPU
    (utime + stime from /proc) with the timeline, which cannot be turned
    off (timeline_retention is at least 1m)."""
    store, sock = os.path.join(workdir, "real.db"), os.path.join(workdir, "real.sock")
    d = subprocess.Popen([profd, "--config", "/dev/null", "--store", store, "--socket", sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    w = None
    try:
        for _ in range(600):
            if os.path.exists(sock) or d.poll() is not None:
                break
            time.sleep(0.1)
        w = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "int64",
                              "--timeout", str(seconds + 15)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(12)  # past the first drain and its symbol loading
        tick = os.sysconf("SC_CLK_TCK")
        cpu = lambda: sum(int(x) for x in open(f"/proc/{d.pid}/stat").read().rsplit(")", 1)[1].split()[11:13]) / tick
        load0, c0, t0 = open("/proc/loadavg").read().split()[0], cpu(), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu(), time.monotonic()
        subprocess.run([profctl, "--socket", sock, "flush"], stdout=subprocess.DEVNULL, check=False)
        st = json.loads(subprocess.run([profctl, "--socket", sock, "status", "--json"], stdout=subprocess.PIPE,
                                       check=True).stdout)
        t = st["timeline"]
        return {"seconds": t1 - t0, "cpu_pct": 100 * (c1 - c0) / (t1 - t0), "samples": t["samples"],
                "bytes": t["bytes"], "blocks": t["blocks"], "untimed": t.get("untimed", 0),
                "loadavg": (load0, open("/proc/loadavg").read().split()[0])}
    finally:
        if w and w.poll() is None:
            w.terminate()
            w.wait()
        d.terminate()
        d.wait()


def rebase(path):
    """Moves the drains and the timeline so the last drain ends now."""
    db = sqlite3.connect(path)
    try:
        shift = time.time_ns() - db.execute("SELECT max(end_ns) FROM drains").fetchone()[0]
        db.execute("UPDATE drains SET start_ns = start_ns + ?1, end_ns = end_ns + ?1", (shift,))
        db.execute("UPDATE timeline_blocks SET start_ns = start_ns + ?1, end_ns = end_ns + ?1", (shift,))
        db.commit()
    finally:
        db.close()


def timeline_facts(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        q = lambda sql: db.execute(sql).fetchone()[0]
        f = {"blocks": q("SELECT count(*) FROM timeline_blocks"),
             "samples": q("SELECT coalesce(sum(n), 0) FROM timeline_blocks"),
             "blob_bytes": q("SELECT coalesce(sum(length(data)), 0) FROM timeline_blocks"),
             "keys": 0,
             "span_s": (q("SELECT max(end_ns) - min(start_ns) FROM timeline_blocks") or 0) / 1e9,
             "store_bytes": os.path.getsize(path)}
        # the table's pages and its indexes', as the file holds them
        f["table_bytes"] = q("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'timeline_blocks' OR "
                             "name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'timeline_blocks')")
        # keys per block: the first varint of each blob
        for (data,) in db.execute("SELECT data FROM timeline_blocks"):
            v, shift = 0, 0
            for b in data:
                v |= (b & 0x7f) << shift
                shift += 7
                if not b & 0x80:
                    break
            f["keys"] += v
        return f
    finally:
        db.close()


def utc(ns):
    t = datetime.datetime.fromtimestamp(ns / 1e9, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def oldest(path):
    """The timeline's oldest sample, to the ms after it: the start of the
    longest window it answers (--since 1h can start a moment before the
    oldest block retention left, and is then refused)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ns = db.execute("SELECT min(start_ns) FROM timeline_blocks").fetchone()[0]
    finally:
        db.close()
    return utc(ns - ns % 1_000_000 + 1_000_000)


def one_second(path):
    """A 1 s window the timeline covers: the second starting at the middle
    of the second-to-last drain (every drain before the last is whole, and
    the middle of a drain is inside its bursts' spread)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        start, end = db.execute("SELECT start_ns, end_ns FROM drains ORDER BY end_ns DESC LIMIT 1 OFFSET 1").fetchone()
    finally:
        db.close()
    mid = (start + end) // 2
    mid -= mid % 1_000_000
    return utc(mid), utc(mid + 1_000_000_000)


def measure(profctl, daemon, name, args, runs):
    times, size, failure, first = [], 0, None, None
    for i in range(runs + 1):
        took, rc, size, _, err = query_bench.run_profctl(profctl, daemon.socket, args)
        if rc != 0:
            failure = f"exit {rc}: {err.strip()[:300]}"
            break
        if i == 0:
            first = took * 1000
        else:
            times.append(took * 1000)
    r = {"name": name, "command": "profctl " + " ".join(args), "failure": failure, "ms": times, "first_ms": first,
         "bytes": size}
    log(f"    {name}: " + (failure or f"{statistics.median(times):.0f} ms ({min(times):.0f}-{max(times):.0f}), "
                                     f"{size} bytes"))
    return r


def run(args):
    hours = args.hours or (0.1 if args.quick else 1.5)
    runs = args.runs or (2 if args.quick else 7)
    results = {"facts": query_bench.machine_facts(), "hours": hours, "runs": runs, "hosts": [],
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    workdir = tempfile.mkdtemp(prefix="timeline-bench-")
    try:
        for host, why, params in HOSTS:
            if args.quick:
                params = dict(params, **QUICK_SCALE)
            path = os.path.join(workdir, f"{host}.db")
            log(f"{host}: generating {hours} h ...")
            gen = generate(args.gen_store, path, params, hours)
            cpu = writer_cpu(args.gen_store, path, params, hours, args.cpu_rounds, gen)
            rebase(path)
            t = timeline_facts(path)
            if t["samples"] == 0:
                raise SystemExit(f"{host}: the store has no timeline")
            rate = t["samples"] / t["span_s"] if t["span_s"] else 0
            h = {"host": host, "why": why, "params": params, "gen": gen, "timeline": t, "rate": rate, "cpu": cpu,
                 "bytes_per_sample": t["table_bytes"] / t["samples"],
                 "blob_per_sample": t["blob_bytes"] / t["samples"], "queries": []}
            h["day_bytes"] = h["bytes_per_sample"] * rate * DAY
            h["hour_bytes"] = h["bytes_per_sample"] * rate * 3600
            log(f"  {t['samples']} samples over {t['span_s']:.0f} s ({rate:.1f}/s), "
                f"{h['bytes_per_sample']:.2f} bytes a sample ({h['blob_per_sample']:.2f} packed)")
            frm, to = one_second(path)
            h["window"] = (frm, to)
            h["oldest"] = oldest(path)
            cases = [
                ("heatmap, last hour, json", ["heatmap", "--from", h["oldest"], "--json"]),
                ("heatmap, last hour, html", ["heatmap", "--from", h["oldest"], "--format", "html"]),
                ("heatmap, 1 s, json", ["heatmap", "--from", frm, "--to", to, "--json"]),
                ("query, 1 s, folded", ["query", "--from", frm, "--to", to, "--folded"]),
                ("query, 1 s, by drains, folded", ["query", "--from", frm, "--to", to, "--by-drains", "--folded"]),
            ]
            with query_bench.Daemon(args.profd, path, workdir) as d:
                for label, a in cases:
                    h["queries"].append(measure(args.profctl, d, label, a, runs))
            h["problems"] = d.problems
            results["hosts"].append(h)
            os.unlink(path)
        if args.real:
            log(f"real profd under stress-ng for {args.real} s ...")
            results["real"] = real_daemon(args.profd, args.profctl, args.real, workdir)
            log(f"  {results['real']}")
        results["loadavg_end"] = open("/proc/loadavg").read().split()[0]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def render(r, argv):
    f = r["facts"]
    L = [BEGIN, "## The timeline and the heatmap (issue 44)", ""]
    L.append(f"Measured {r['date']} on {f['cpus']} CPUs ({f['cpu']}), {f['mem_gib']} GiB, kernel {f['kernel']}, "
             f"SQLite {f['sqlite']}, load average {f['loadavg']} at the start and {r['loadavg_end']} at the end "
             f"(the machine is shared with other builds). Command: "
             f"`{' '.join(['tests/bench/timeline_bench.py'] + argv)}`.")
    L.append("")
    L.append(f"Each host's store: {r['hours']} h of `gen_store --timeline` (every on-CPU sample with its own time, "
             f"in a burst of its process's within the drain, from 5 ms to the whole 10 s; written with "
             f"`store_drain_timeline` as profd's writer does, and kept by the default `timeline_retention` of 1h), "
             f"ending at 09:30 UTC (the mean of gen_store's daily curve) and moved to end now. The rates are "
             f"the measured ones (gen_store's `--frequency` sets the samples per drain):")
    L.append("")
    for h in r["hosts"]:
        L.append(f"- {h['host']}: {h['why']}; `{h['gen']['command']}` ({h['gen']['seconds']:.0f} s)")
    L.append("")
    L.append("Size: `timeline_blocks` as the file holds it (its pages and its index's, SQLite's dbstat) per "
             "on-CPU sample it holds; packed: the blobs alone. Keys: the distinct (process, stack, thread) a "
             "block names, per sample. A day with `timeline_retention` at its default (1h): the timeline stops "
             "at its steady size, an hour of samples. Without retention (or `timeline_retention=24h`): a day "
             "of samples at that rate.")
    L.append("")
    L.append("| host | samples/s | samples held | keys per sample | bytes per sample (packed) | steady size, 1h "
             "retention | per day without retention |")
    L.append("| --- | --- | --- | --- | --- | --- | --- |")
    for h in r["hosts"]:
        t = h["timeline"]
        L.append(f"| {h['host']} | {h['rate']:.2f} | {t['samples']:,} in {t['blocks']:,} blocks over "
                 f"{t['span_s'] / 60:.0f} min | {t['keys'] / t['samples']:.2f} | {h['bytes_per_sample']:.2f} "
                 f"({h['blob_per_sample']:.2f}) | {mib(h['hour_bytes'])} | {mib(h['day_bytes'])} |")
    L.append("")
    if r.get("real"):
        x = r["real"]
        L.append(f"For comparison, the real profd at its defaults (49 Hz, 10 s drains, cpu+offcpu+wakeup) under "
                 f"`stress-ng --cpu {f['cpus']} --cpu-method int64` for {x['seconds']:.0f} s (load average "
                 f"{x['loadavg'][0]}, then {x['loadavg'][1]}): its timeline held {x['samples']:,} samples in "
                 f"{x['blocks']} blocks, {x['bytes']:,} bytes (`profctl status`: the blobs), "
                 f"**{x['bytes'] / max(x['samples'], 1):.2f} bytes a sample**, {x['untimed']} untimed; the daemon's "
                 f"CPU {x['cpu_pct']:.2f}% of one core. Few threads and few stacks: fewer keys per sample than "
                 f"the generated hosts.")
        L.append("")
    L.append("**The writer's part of the timeline's cost.** The real daemon with the timeline on and off "
             "(`timeline = off`, `--no-timeline`) side by side: \"Daemon CPU with the timeline on and off\" "
             "below (tests/bench/timeline_onoff.py). What is measured here: (1) the BPF side, in \"The "
             "timeline's cost in the sampler\" above (not settled on this VM); (2) the writer's side alone: the "
             "same drains "
             "stored through the daemon's store code and retention by gen_store with and without `--timeline` "
             "(the aggregates are identical; the difference is `store_drain_timeline`, packing and inserting "
             "each drain's block, and retention deleting the expired blocks), gen_store's own user+system "
             "CPU from its rusage, interleaved. As a share of one core: the difference over the span "
             "generated.")
    L.append("")
    L.append("| host | CPU s with the timeline | CPU s without | difference, median | % of one core |")
    L.append("| --- | --- | --- | --- | --- |")
    for h in r["hosts"]:
        c = h["cpu"]
        diff = statistics.median(c["on"]) - statistics.median(c["off"])
        L.append(f"| {h['host']} | {', '.join(f'{x:.2f}' for x in c['on'])} | "
                 f"{', '.join(f'{x:.2f}' for x in c['off'])} | {diff:+.2f} s | "
                 f"{100 * diff / (r['hours'] * 3600):+.4f}% |")
    L.append("")
    L.append(f"Queries on each store through the real `profd --kinds none` and `profctl` (output to a file): "
             f"{r['runs']} runs after one warm-up, wall time median (min-max) in ms; the first run on its own. "
             f"The last hour: from the timeline's oldest sample (OLDEST, to the ms after it) to now, all the "
             f"timeline holds at the default retention (`--since 1h` can start a moment before the oldest block "
             f"retention left, and is then refused). The 1 s window (T to T+1s) is the second at the middle of the "
             f"second-to-last drain.")
    L.append("")
    L.append("| host | query | ms, median (min-max) | first run, ms | answer bytes |")
    L.append("| --- | --- | --- | --- | --- |")
    for h in r["hosts"]:
        for q in h["queries"]:
            cmd = q["command"].replace(h["window"][0], "T").replace(h["window"][1], "T+1s")
            cmd = cmd.replace(h["oldest"], "OLDEST")
            if q["failure"]:
                L.append(f"| {h['host']} | `{cmd}` | failed: {q['failure']} | - | - |")
                continue
            L.append(f"| {h['host']} | `{cmd}` | {statistics.median(q['ms']):.0f} ({min(q['ms']):.0f}-"
                     f"{max(q['ms']):.0f}) | {q['first_ms']:.0f} | {q['bytes']:,} |")
    L.append(END)
    return "\n".join(L) + "\n"


def write_section(path, text):
    old = open(path).read() if os.path.exists(path) else "# profd performance\n\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.path.join(ROOT, "build")
    ap.add_argument("--quick", action="store_true", help="tiny stores, 2 runs (the test suite)")
    ap.add_argument("--hours", type=float, help="hours generated per host (default 1.5; quick 0.1)")
    ap.add_argument("--runs", type=int, help="timed runs per query (default 7; quick 2)")
    ap.add_argument("--cpu-rounds", type=int, default=None,
                    help="gen_store runs with and without the timeline for the writer's CPU (default 2; quick 1)")
    ap.add_argument("--real", type=int, default=None,
                    help="seconds of the real profd under stress-ng (root; default 120; quick 0: not run)")
    ap.add_argument("--output", help="file whose section to (re)write (default docs/performance.md; "
                    "quick: none)")
    ap.add_argument("--profd", default=os.environ.get("PROFD", os.path.join(build, "daemon/profd")))
    ap.add_argument("--profctl", default=os.environ.get("PROFCTL", os.path.join(build, "client/profctl")))
    ap.add_argument("--gen-store", default=os.environ.get("GEN_STORE", os.path.join(build, "tests/bench/gen_store")))
    args = ap.parse_args()
    if args.cpu_rounds is None:
        args.cpu_rounds = 1 if args.quick else 2
    if args.real is None:
        args.real = 0 if args.quick else 120
    r = run(args)
    text = render(r, sys.argv[1:])
    failed = [f"{h['host']}: {q['name']}: {q['failure']}" for h in r["hosts"] for q in h["queries"] if q["failure"]]
    failed += [f"{h['host']}: {p}" for h in r["hosts"] for p in h["problems"]]
    # a 1 s window the timeline covers is answered from it; by drains, whole drains: more samples
    for h in r["hosts"]:
        q = {q["name"]: q for q in h["queries"]}
        a, b = q["query, 1 s, folded"], q["query, 1 s, by drains, folded"]
        if not a["failure"] and not b["failure"] and h["host"] != "idle" and not a["bytes"] < b["bytes"]:
            failed.append(f"{h['host']}: the 1 s window's answer ({a['bytes']} bytes) is not smaller than its "
                          f"drains' ({b['bytes']} bytes)")
    output = args.output or (None if args.quick else os.path.join(ROOT, "docs/performance.md"))
    if output:
        write_section(output, text)
        log(f"wrote {output}")
    else:
        print(text)
    if failed:
        raise SystemExit("\n".join(failed))


if __name__ == "__main__":
    main()
