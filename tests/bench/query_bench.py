#!/usr/bin/env python3
"""Query latency and memory on a day of data: fills a store with
tests/bench/gen_store (24 hours of a busy 2-CPU host at profd's defaults),
starts the real `profd --kinds none` on it, and times the real profctl:

  tests/bench/query_bench.py                      as root; rewrites the "Queries" section of docs/performance.md
  tests/bench/query_bench.py --quick --output F   a tiny store (what the test suite runs)

Each query runs --runs times (median, min-max of wall time as a user sees
it: profctl started, connected, answer read and rendered to /dev/null).
Peak memory: profctl's from its rusage (ru_maxrss), profd's from VmHWM,
reset before each query through /proc/PID/clear_refs. A slow reader (a
client that takes the whole 24-hour answer at 1 MiB/s) shows whether the
daemon's memory stays bounded while a large answer streams.

The store is cached by its parameters (under --cache-dir) because a day
takes minutes to generate; its drains are moved so the last one ends now
before each run, so "--since 10m" means the last ten minutes of data.

Used by tests/bench/bench.py (suite answers) and, with --quick, by the
test suite (tests/bench/meson.build: query-bench)."""
import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import blocks

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BEGIN, END = "<!-- bench:queries:begin -->", "<!-- bench:queries:end -->"

# the day: profd's defaults on a busy 2-CPU host
FULL = {"hours": 24, "processes": 300, "stacks": 6000}
QUICK = {"hours": 0.25, "processes": 40, "stacks": 300}
# the issue's targets, in ms (a benchmark reports them; nothing asserts them)
TARGETS = {"since 10m, folded": 100, "since 24h, folded": 2000, "pid, since 10m, folded": 50}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def machine_facts():
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = int(open("/proc/meminfo").read().split()[1]) // (1024 * 1024)
    return {"cpus": os.cpu_count(), "cpu": cpu, "mem_gib": mem, "kernel": platform.release(),
            "sqlite": sqlite3.sqlite_version, "loadavg": open("/proc/loadavg").read().split()[0]}


def generate(gen_store, path, params, seed):
    cmd = [gen_store, "--hours", str(params["hours"]), "--processes", str(params["processes"]),
           "--stacks", str(params["stacks"]), "--seed", str(seed), path]
    log("generating:", " ".join(cmd))
    t0 = time.monotonic()
    p = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"gen_store failed ({p.returncode}):\n{p.stderr[-3000:]}")
    summary = [l for l in p.stderr.replace("\r", "\n").splitlines() if l.startswith("gen_store: ") and "drains (" in l]
    return {"command": " ".join(cmd), "seconds": took, "summary": summary[-1] if summary else ""}


def sample_rows(db):
    """Sample rows (entries of blocks since schema 8, rows before)."""
    if db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sample_blocks'").fetchone()[0]:
        return db.execute("SELECT coalesce(sum(n), 0) FROM sample_blocks").fetchone()[0]
    return db.execute("SELECT count(*) FROM samples").fetchone()[0]


def block_values(n, widths, bases, blob):
    """The values of a block's entries (tests/bench/blocks.py): the sixth
    field of seven."""
    for (value,) in blocks.entries(n, widths, bases, blob, fields=[5]):
        yield value


def store_facts(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        q = lambda sql: db.execute(sql).fetchone()[0]
        return {"bytes": os.path.getsize(path), "drains": q("SELECT count(*) FROM drains"),
                "samples": sample_rows(db), "stacks": q("SELECT count(*) FROM stacks"),
                "processes": q("SELECT count(*) FROM processes"), "locations": q("SELECT count(*) FROM locations"),
                "hours": (q("SELECT max(end_ns) - min(start_ns) FROM drains") or 0) / 3.6e12}
    finally:
        db.close()


def rebase(path):
    """Moves every drain so the last one ends now: the store was made earlier."""
    db = sqlite3.connect(path)
    try:
        last = db.execute("SELECT max(end_ns) FROM drains").fetchone()[0]
        shift = time.time_ns() - last
        db.execute("UPDATE drains SET start_ns = start_ns + ?1, end_ns = end_ns + ?1", (shift,))
        db.commit()
    finally:
        db.close()


def hot_pid(path, seconds):
    """The process with the most on-CPU samples in the last `seconds`."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        since = time.time_ns() - seconds * 10**9
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sample_blocks'").fetchone()[0]:
            return db.execute("SELECT p.pid, p.comm FROM samples s JOIN drains d ON d.id = s.drain_id "
                              "JOIN processes p ON p.id = s.process_id WHERE s.kind = 0 AND d.end_ns >= ? "
                              "GROUP BY p.id ORDER BY sum(s.value) DESC LIMIT 1", (since,)).fetchone()
        # blocks: summed here (the samples view decodes in SQL, slowly); a
        # block spanning drains (schema 9) counts whole: a pick, not a figure
        key = "coalesce(d.span, d.id)" if any(r[1] == "span" for r in db.execute("PRAGMA table_info(drains)")) \
            else "d.id"
        sums = {}
        for pid, comm, n, widths, *rest in db.execute(
                "SELECT p.pid, p.comm, b.n, b.widths, b.stack_base, b.tid_base, b.state_base, b.peer_base, "
                "b.cgroup_base, b.value_base, b.entries FROM sample_blocks b JOIN processes p ON p.id = b.process_id "
                f"WHERE b.kind = 0 AND b.drain_id IN (SELECT {key} FROM drains d WHERE d.end_ns >= ?) ORDER BY p.id",
                (since,)):
            key = (pid, comm)
            sums[key] = sums.get(key, 0) + sum(block_values(n, widths, rest[:6], rest[6]))
        return max(sums, key=lambda k: (sums[k], -k[0])) if sums else None
    finally:
        db.close()


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (Linux >= 4.0, root or the owner)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Daemon:
    def __init__(self, profd, store, workdir, extra=()):
        self.socket = os.path.join(workdir, "profd.sock")
        self.log_path = os.path.join(workdir, "profd.log")
        self.cmd = [profd, "--config", "/dev/null", "--kinds", "none", "--store", store, "--socket", self.socket]
        self.cmd += list(extra)
        self.proc = None

    def __enter__(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 600  # a first start migrates and indexes the store
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"profd exited {self.proc.returncode}:\n" + open(self.log_path).read()[-3000:])
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.socket)
                return self
            except OSError:
                time.sleep(0.1)
        raise SystemExit("profd did not open its socket")

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.exit_code = self.proc.returncode
        # a sanitized build reports here (what the test suite checks)
        text = open(self.log_path, errors="replace").read()
        self.problems = [f"profd's log has a sanitizer report:\n{text[-3000:]}"
                         for marker in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer")
                         if marker in text][:1]
        if self.exit_code != 0:
            self.problems.append(f"profd exited {self.exit_code} on SIGTERM:\n{text[-2000:]}")


TIME = "/usr/bin/time"


def run_profctl(profctl, sock, args, timeout=300):
    """One profctl run: (seconds, exit code, bytes written, peak RSS KiB, stderr).
    The peak RSS comes from GNU time (its wait4), not from this Python: a
    child forked from Python would count Python's pages until it execs."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as rss:
        cmd = [profctl, "--socket", sock] + args
        if os.access(TIME, os.X_OK):
            cmd = [TIME, "-f", "%M", "-o", rss.name] + cmd
        # a blocking wait, not subprocess's wait(timeout=), which polls with
        # sleeps of up to 50 ms and so rounds every time up to that grain
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        p.wait()
        took = time.perf_counter() - t0
        killer.cancel()
        out.seek(0, os.SEEK_END)
        err.seek(0)
        text = rss.read().strip().splitlines()
        maxrss = int(text[-1]) if text and text[-1].isdigit() else 0
        rc = p.returncode
        return took, rc, out.tell(), maxrss, err.read().decode(errors="replace")


def measure(profctl, daemon, name, args, runs):
    times, rss_client, rss_daemon = [], [], []
    size, failure, first = 0, None, None
    for i in range(runs + 1):
        reset_hwm(daemon.proc.pid)
        base = vm(daemon.proc.pid, "VmRSS")
        took, rc, size, maxrss, err = run_profctl(profctl, daemon.socket, args)
        if rc != 0:
            failure = f"exit {rc}: {err.strip()[:200]}"
            break
        if i == 0:
            # not counted: the first run reads the file into the page cache
            # and fills profd's location cache; reported on its own
            first = took * 1000
            continue
        times.append(took * 1000)
        rss_client.append(maxrss)
        rss_daemon.append(vm(daemon.proc.pid, "VmHWM") - base)
    r = {"name": name, "command": "profctl " + " ".join(args), "failure": failure}
    if not failure:
        r.update(ms=times, first_ms=first, bytes=size, client_kib=max(rss_client), daemon_growth_kib=max(rss_daemon),
                 daemon_rss_kib=vm(daemon.proc.pid, "VmRSS"))
    status = failure or f"{statistics.median(times):.0f} ms ({min(times):.0f}-{max(times):.0f}), {size} bytes"
    log(f"  {name}: {status}")
    return r


def measure_raw(daemon, name, request, runs):
    """The daemon's part alone: the request sent on the socket, the answer
    read to the end (and thrown away) as fast as Python reads."""
    times, size = [], 0
    for i in range(runs + 1):
        t0 = time.perf_counter()
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(daemon.socket)
            s.sendall(request + b"\n")
            s.shutdown(socket.SHUT_WR)
            size = 0
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                size += len(chunk)
        if i > 0:
            times.append((time.perf_counter() - t0) * 1000)
    log(f"  {name}: {statistics.median(times):.0f} ms ({min(times):.0f}-{max(times):.0f}), {size} bytes")
    return {"name": name, "request": request.decode(), "ms": times, "bytes": size}


def slow_reader(daemon, request, rate_bytes_s, max_seconds):
    """A client that reads a large answer at rate_bytes_s: profd's peak RSS
    over its baseline while it streams, and how much was read."""
    reset_hwm(daemon.proc.pid)
    base = vm(daemon.proc.pid, "VmRSS")
    peak, got, done = base, 0, False
    with socket.socket(socket.AF_UNIX) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.connect(daemon.socket)
        s.sendall(request + b"\n")
        t0 = time.monotonic()
        s.settimeout(30)
        chunk = min(1 << 20, max(4096, rate_bytes_s // 20))
        tail = b""
        while time.monotonic() - t0 < max_seconds:
            data = s.recv(chunk)
            if not data:
                done = True
                break
            got += len(data)
            tail = (tail + data)[-4096:]
            if b'"type":"end"' in tail and tail.endswith(b"\n"):
                done = True
                break
            peak = max(peak, vm(daemon.proc.pid, "VmRSS"))
            time.sleep(len(data) / rate_bytes_s)
    peak = max(peak, vm(daemon.proc.pid, "VmHWM"))
    return {"base_kib": base, "peak_kib": peak, "read_bytes": got, "complete": done,
            "seconds": time.monotonic() - t0}


def run(args):
    params = QUICK if args.quick else FULL
    if args.hours:
        params = dict(params, hours=args.hours)
    runs = args.runs or (3 if args.quick else 10)
    facts = machine_facts()
    os.makedirs(args.cache_dir, exist_ok=True)
    name = f"day-h{params['hours']}-p{params['processes']}-s{params['stacks']}-seed{args.seed}.db"
    cached = os.path.join(args.cache_dir, name)
    gen = None
    if args.regenerate or not os.path.exists(cached):
        for suffix in ("", "-wal", "-shm", ".gen.json"):
            if os.path.exists(cached + suffix):
                os.unlink(cached + suffix)
        gen = generate(args.gen_store, cached + ".tmp", params, args.seed)
        os.rename(cached + ".tmp", cached)
        with open(cached + ".gen.json", "w") as f:
            json.dump(gen, f)
    elif os.path.exists(cached + ".gen.json"):
        # how the cached store was made, for the report
        with open(cached + ".gen.json") as f:
            gen = json.load(f)
    rebase(cached)
    workdir = tempfile.mkdtemp(prefix="query-bench-")
    results = {"facts": facts, "params": params, "gen": gen, "runs": runs, "queries": [],
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        with Daemon(args.profd, cached, workdir) as d:
            results["store"] = store_facts(cached)
            log(f"store {cached}: {results['store']}")
            pid, comm = hot_pid(cached, 600) or (1, "?")
            results["pid"] = (pid, comm)
            cases = [
                ("since 10m, folded", ["query", "--since", "10m", "--folded"]),
                ("since 1h, folded", ["query", "--since", "1h", "--folded"]),
                ("since 24h, folded", ["query", "--since", "24h", "--folded"]),
                ("pid, since 10m, folded", ["query", "--pid", str(pid), "--since", "10m", "--folded"]),
                ("pid, since 24h, folded", ["query", "--pid", str(pid), "--since", "24h", "--folded"]),
                ("comm glob, since 1h, folded", ["query", "--comm", "post*", "--since", "1h", "--folded"]),
                ("offcpu, since 1h, folded", ["query", "--kind", "offcpu", "--since", "1h", "--folded"]),
                ("since 1h, table", ["query", "--since", "1h"]),
                ("since 24h, table", ["query", "--since", "24h"]),
                ("series 24h, step 1m", ["series", "--since", "24h", "--step", "1m"]),
                ("series 10m, step 1s", ["series", "--since", "10m", "--step", "1s"]),
                ("since 24h, json", ["query", "--since", "24h", "--json"]),
            ]
            if args.quick:
                cases = [c for c in cases if "24h" not in c[0] or "folded" in c[0]]
            for label, a in cases:
                results["queries"].append(measure(args.profctl, d, label, a, runs))
            results["raw"] = [measure_raw(d, label, req, runs) for label, req in (
                ("since 10m", b'{"op":"query","since":"10m"}'),
                ("since 24h", b'{"op":"query","since":"24h"}'),
                ("pid, since 10m", b'{"op":"query","since":"10m","pid":%d}' % pid),
            )]
            rate = 1 << 20
            # the same answer read as fast as possible: what the query itself
            # needs; the slow reader may cost more only by what is buffered
            results["fast"] = slow_reader(d, b'{"op":"query","since":"24h"}', 1 << 40, 120)
            log(f"  fast reader: {results['fast']}")
            log(f"  slow reader: 24 h answer at {rate >> 10} KiB/s ...")
            results["slow"] = slow_reader(d, b'{"op":"query","since":"24h"}', rate, 20 if args.quick else 60)
            log(f"  slow reader: {results['slow']}")
            results["idle_rss_kib"] = vm(d.proc.pid, "VmRSS")
        results["daemon_problems"] = d.problems
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def render(r, argv):
    f, s, p = r["facts"], r["store"], r["params"]
    L = [BEGIN, "## Queries", ""]
    L.append(f"Measured {r['date']} on {f['cpus']} CPUs ({f['cpu']}), {f['mem_gib']} GiB, kernel {f['kernel']}, "
             f"SQLite {f['sqlite']}, load average {f['loadavg']} at the start (the machine is shared).")
    L.append("")
    L.append(f"Store: `tests/bench/gen_store --hours {p['hours']} --processes {p['processes']} --stacks {p['stacks']}` "
             f"(a synthetic day of a busy 2-CPU host at profd's defaults: 49 Hz, 10 s drains, cpu+offcpu+wakeup; "
             f"see the generator's header): {s['drains']} drains over {s['hours']:.1f} h, {s['samples']:,} sample rows, "
             f"{s['stacks']:,} distinct stacks, {s['processes']:,} process instances, {s['locations']:,} locations, "
             f"{s['bytes'] / 2**20:.0f} MiB.")
    if r["gen"]:
        L.append(f"Generated in {r['gen']['seconds']:.0f} s: `{r['gen']['summary'].replace('gen_store: ', '')}`.")
    L.append("")
    L.append(f"Command: `{' '.join(['tests/bench/query_bench.py'] + argv)}`: the real `profd --kinds none` on the "
             f"store and the real `profctl`, output to a file; {r['runs']} runs after one warm-up, wall time "
             f"median (min-max); the first run (page cache and profd's location cache cold) on its own. "
             f"The pid is the busiest process of the last 10 minutes "
             f"({r['pid'][1]}, pid {r['pid'][0]}). Client memory: profctl's peak RSS; daemon memory: how far "
             f"profd's peak RSS rose above its RSS before the query.")
    L.append("")
    L.append("| query | ms, median (min-max) | first run, ms | target | answer bytes | profctl peak RSS | "
             "profd peak growth |")
    L.append("| --- | --- | --- | --- | --- | --- | --- |")
    for q in r["queries"]:
        target = TARGETS.get(q["name"])
        tgt = f"< {target} ms" if target else "-"
        if q["failure"]:
            L.append(f"| `{q['command']}` | failed: {q['failure']} | - | {tgt} | - | - | - |")
            continue
        med = statistics.median(q["ms"])
        if target:
            tgt += " met" if med < target else " **missed**"
        L.append(f"| `{q['command']}` | {med:.0f} ({min(q['ms']):.0f}-{max(q['ms']):.0f}) | {q['first_ms']:.0f} | {tgt} | "
                 f"{q['bytes']:,} | {q['client_kib'] / 1024:.1f} MiB | {q['daemon_growth_kib'] / 1024:.1f} MiB |")
    L.append("")
    L.append("The daemon's part alone (the JSON answer read from the socket by Python and thrown away; "
             "the rest of profctl's time above is profctl reading and rendering it):")
    L.append("")
    L.append("| request | ms, median (min-max) | answer bytes (JSON) |")
    L.append("| --- | --- | --- |")
    for q in r["raw"]:
        L.append(f"| `{q['request']}` | {statistics.median(q['ms']):.0f} ({min(q['ms']):.0f}-{max(q['ms']):.0f}) | "
                 f"{q['bytes']:,} |")
    sl = r["slow"]
    L.append("")
    L.append(f"Slow reader: a client asks `{{\"op\":\"query\",\"since\":\"24h\"}}` (JSON lines, the largest answer) "
             f"and reads it at 1 MiB/s: it read {sl['read_bytes'] / 2**20:.1f} MiB in {sl['seconds']:.0f} s "
             f"({'the whole answer' if sl['complete'] else 'stopped before the end'}); profd's RSS went from "
             f"{sl['base_kib'] / 1024:.1f} MiB to a peak of {sl['peak_kib'] / 1024:.1f} MiB "
             f"(+{(sl['peak_kib'] - sl['base_kib']) / 1024:.1f} MiB); read as fast as possible, the same answer "
             f"took profd from {r['fast']['base_kib'] / 1024:.1f} to {r['fast']['peak_kib'] / 1024:.1f} MiB "
             f"(+{(r['fast']['peak_kib'] - r['fast']['base_kib']) / 1024:.1f} MiB: the query's own working set). "
             f"profd's RSS after all queries: {r['idle_rss_kib'] / 1024:.1f} MiB.")
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    build = os.environ.get("MESON_BUILD_ROOT") or os.path.join(ROOT, "build")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tiny store and few runs (the test suite's check)")
    ap.add_argument("--build", default=build, help="meson build directory (default build/)")
    ap.add_argument("--profd", help="default: $PROFD or BUILD/daemon/profd")
    ap.add_argument("--profctl", help="default: $PROFCTL or BUILD/client/profctl")
    ap.add_argument("--gen-store", help="default: $GEN_STORE or BUILD/tests/bench/gen_store")
    ap.add_argument("--runs", type=int, help="timed runs per query (default 10, --quick 3)")
    ap.add_argument("--hours", type=float, help="hours of data (default 24, --quick 0.25)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache-dir", help="where generated stores are kept (default /var/tmp/profd-query-bench; "
                                        "--quick: a temporary directory)")
    ap.add_argument("--regenerate", action="store_true", help="generate the store even if cached")
    ap.add_argument("--output", help="markdown file whose Queries section is rewritten "
                                     "(default docs/performance.md; --quick: none)")
    ap.add_argument("--json", help="also write the raw figures here")
    args = ap.parse_args(argv)
    args.profd = args.profd or os.environ.get("PROFD") or os.path.join(args.build, "daemon", "profd")
    args.profctl = args.profctl or os.environ.get("PROFCTL") or os.path.join(args.build, "client", "profctl")
    args.gen_store = args.gen_store or os.environ.get("GEN_STORE") or os.path.join(args.build, "tests", "bench",
                                                                                    "gen_store")
    if args.output is None and not args.quick:
        args.output = os.path.join(ROOT, "docs", "performance.md")
    for b in (args.profd, args.profctl, args.gen_store):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"query_bench: {b} not found (build first, or pass --build)")
    tmp_cache = None
    if not args.cache_dir:
        if args.quick:
            args.cache_dir = tmp_cache = tempfile.mkdtemp(prefix="query-bench-cache-")
        else:
            args.cache_dir = "/var/tmp/profd-query-bench"
    try:
        r = run(args)
    finally:
        if tmp_cache:
            shutil.rmtree(tmp_cache, ignore_errors=True)
    text = render(r, argv)
    print(text)
    if args.output:
        write_section(args.output, text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    problems = check(r)
    for p in problems:
        log("query_bench: FAILED:", p)
    return r, problems


def check(r):
    """What must hold whatever the machine's speed: every query answered,
    the recent window not empty, the slow reader got the whole answer."""
    problems = [f"{q['command']}: {q['failure']}" for q in r["queries"] if q["failure"]]
    problems += r.get("daemon_problems", [])
    for q in r["queries"]:
        if not q["failure"] and q["name"].startswith("since 10m") and q["bytes"] == 0:
            problems.append(f"{q['command']}: empty answer on a store with data in the last 10 minutes")
    if not r["slow"]["complete"]:
        problems.append(f"the slow reader did not get the whole answer ({r['slow']['read_bytes']} bytes)")
    return problems


if __name__ == "__main__":
    sys.exit(1 if main()[1] else 0)
