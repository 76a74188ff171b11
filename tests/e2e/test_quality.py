#!/usr/bin/env python3
"""End to end, the quality report every answer carries (docs/protocol.md,
"quality"; docs/profctl.md):

- On a store with known content (storegen, `profd --kinds none`): every stack
  end, every unresolved reason and every loss counter is present with a known
  weight, and the report's numbers, the summary line under each view, the
  JSON, the pprof comments, the SVG subtitle and the series' complete part
  match exactly; losses outside the window stay out.
- On the real daemon: a frame-pointer workload reports ~100% complete stacks;
  a full aggregation map (tiny --max-keys) shows its loss in the window of the
  query and not in an earlier one."""
import gzip
import datetime
import json
import math
import os
import sqlite3
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

from harness import binary, Profd, require_root, rfc3339, run_tests, serve_only

APP = "/usr/bin/app"
MAIN = {"name": "main", "module": APP}
WORK = {"name": "work", "module": APP}
KERNEL = [{"name": "worker_thread", "module": "[kernel.kallsyms]", "kernel": True},
          {"name": "schedule", "module": "[kernel.kallsyms]", "kernel": True}]


def app(value, end=None, stack=None, kind=None, pid=100, comm="app", ago=30):
    s = {"ago_s": ago, "pid": pid, "comm": comm, "value": value, "stack": stack or [MAIN, WORK]}
    if end:
        s["end"] = end
    if kind:
        s["kind"] = kind
    return s


# (sample, truncation reason or "complete"/"unknown", unresolved reasons)
KNOWN = [
    (app(500), "complete", ()),
    (app(40, "no_process"), "no_table", ()),
    (app(60, "pending"), "no_table", ()),
    (app(70, "no_mapping"), "no_mapping", ()),
    (app(10, "unsupported"), "unsupported", ()),
    (app(20, "read_fault"), "read_fault", ()),
    (app(30, "depth"), "depth", ()),
    (app(45, "fp_end"), "fp_end", ()),
    (app(50, "cfa_stuck"), "cfa_stuck", ()),
    (app(80, "lost", [{"name": "[lost]", "module": "[lost]"}]), "stack_lost", ()),
    # stored before stacks kept their end
    (app(25, "unknown"), "unknown", ()),
    (app(15, stack=[MAIN, {"name": "x", "module": "/usr/lib/libx.so", "unresolved": "no_symbols"}]),
     "complete", ("no_symbols",)),
    (app(5, "depth", [MAIN, {"name": "j", "module": "[jit]", "unresolved": "jit_without_map"},
                      {"name": "u", "module": "[unknown]", "unresolved": "unknown_mapping"}]),
     "depth", ("jit_without_map", "unknown_mapping")),
    (app(7, stack=[MAIN, {"name": "y", "module": "/opt/gone.so", "unresolved": "no_file"}]),
     "complete", ("no_file",)),
    # a kernel thread: no user stack, complete
    (app(45, stack=KERNEL, pid=2, comm="kworker/0:1"), "complete", ()),
]
OFFCPU = app(3000000, "pending", kind="offcpu")
OLD = app(1, ago=300)
DROPS_NOW = {"map_full": 12, "stack_map_full": 3, "store_write_failed": 1,
             # not a loss: the unwinder's truncation counter, counted per stack
             "truncated_no_table": 99}
DROPS_OLD = {"map_full": 1000}
SPEC = [s for s, _, _ in KNOWN] + [OFFCPU, OLD,
                                   {"ago_s": 30, "drops": DROPS_NOW}, {"ago_s": 300, "drops": DROPS_OLD}]

TRUNC = ["no_table", "no_mapping", "unsupported", "read_fault", "depth", "fp_end", "cfa_stuck", "stack_lost"]
UNRES = ["no_symbols", "no_file", "jit_without_map", "unknown_mapping", "python_no_runtime", "python_exited",
         "python_read_code", "python_not_code", "python_read_string", "python_bad_string", "hotspot_no_runtime",
         "hotspot_exited", "hotspot_read", "hotspot_bad", "hotspot_no_scope", "unknown"]
LOST = ["map_full", "stack_map_full", "user_stack_error", "kernel_stack_error", "ringbuf_full",
        "task_storage_full", "process_vanished", "store_write_failed", "switch_missed"]
LABELS = {"no_table": "no table yet", "no_mapping": "no mapping", "unsupported": "unsupported",
          "read_fault": "read fault", "depth": "depth", "fp_end": "frame pointer ended",
          "cfa_stuck": "stack did not grow", "stack_lost": "stack lost", "no_symbols": "no symbols",
          "no_file": "no file", "jit_without_map": "JIT without map", "unknown_mapping": "unknown mapping",
          "unknown": "reason not recorded", "map_full": "map full", "stack_map_full": "stack map full",
          "store_write_failed": "store write failed"}


def expected(pid=None, drops=(DROPS_NOW,)):
    """The report the known content must give, computed from the spec alone."""
    q = {"partial": False, "total": 0, "complete": 0, "unknown": 0, "truncated": dict.fromkeys(TRUNC, 0),
         "unresolved": 0, "unresolved_by": dict.fromkeys(UNRES, 0), "lost": dict.fromkeys(LOST, 0)}
    for s, end, unres in KNOWN:
        if pid is not None and s["pid"] != pid:
            continue
        q["total"] += s["value"]
        if end in ("complete", "unknown"):
            q[end] += s["value"]
        else:
            q["truncated"][end] += s["value"]
        if unres:
            q["unresolved"] += s["value"]
        for r in unres:
            q["unresolved_by"][r] += s["value"]
    q["truncated_total"] = sum(q["truncated"].values())
    for d in drops:
        for k, v in d.items():
            if k in q["lost"]:
                q["lost"][k] += v
    return q


def share(part, total):
    pct = 100.0 * part / total
    return "<0.1%" if part and pct < 0.05 else f"{pct:.1f}%"


def summary(q):
    """The summary line as docs/profctl.md describes it."""
    t = q["total"]
    parts = [f"{share(q['complete'], t)} complete stacks"]
    trunc = [f"{LABELS[k]} {share(v, t)}" for k, v in q["truncated"].items() if v]
    parts.append(f"{share(q['truncated_total'], t)} truncated" + (f" ({', '.join(trunc)})" if trunc else ""))
    if q["unknown"]:
        parts.append(f"{share(q['unknown'], t)} end not recorded")
    unres = [f"{LABELS[k]} {share(v, t)}" for k, v in q["unresolved_by"].items() if v]
    parts.append(f"{share(q['unresolved'], t)} unresolved" + (f" ({', '.join(unres)})" if unres else ""))
    lost = [f"{LABELS[k]} {v}" for k, v in q["lost"].items() if v]
    parts.append("lost: " + (", ".join(lost) + " (host-wide)" if lost else "none"))
    return "quality: " + "; ".join(parts)


def test_known_store_report_matches_exactly():
    with serve_only(SPEC) as d:
        want = expected()
        got = d.profctl("query", "--since", "1m", "--quality", "--json")
        doc = json.loads(got.stdout)
        assert doc["quality"] == want, f"report differs:\n got  {doc['quality']}\n want {want}"
        assert got.stderr == "", f"--quality wrote to stderr: {got.stderr}"
        # shares add up: complete + truncated + unknown is the whole
        assert want["complete"] + want["truncated_total"] + want["unknown"] == want["total"]

        # a process filter: the kernel thread is not in it
        doc = json.loads(d.profctl("query", "--since", "1m", "--pid", "100", "--quality", "--json").stdout)
        assert doc["quality"] == expected(pid=100), doc["quality"]

        # the text report names every reason with its weight
        text = d.profctl("query", "--since", "1m", "--quality").stdout
        for line in ("  no table yet", "  frame pointer ended", "  stack lost", "  JIT without map",
                     "  store write failed"):
            assert line in text, f"{line!r} missing from --quality:\n{text}"
        assert f"complete stacks" in text and f"{want['complete']}\n" in text, text

        # each kind has its own report: the off-CPU sample is pending, alone
        doc = json.loads(d.profctl("query", "--since", "1m", "--kind", "offcpu", "--quality", "--json").stdout)
        assert doc["quality"]["total"] == 3000000 and doc["quality"]["truncated"]["no_table"] == 3000000, doc


def test_summary_line_under_every_view():
    want = summary(expected())
    with serve_only(SPEC) as d:
        for args in (["--limit", "5"], ["--folded"], ["--format", "tree"]):
            r = d.profctl("query", "--since", "1m", *args)
            assert r.stderr.strip().splitlines()[-1] == want, \
                f"query {args}: stderr\n{r.stderr}\nwanted\n{want}"
        # JSON views carry the whole report instead of the line
        for args in (["--json"], ["--json", "--format", "table"], ["--json", "--format", "tree"]):
            r = d.profctl("query", "--since", "1m", *args)
            assert "quality:" not in r.stderr, f"{args}: {r.stderr}"
            assert json.loads(r.stdout)["quality"] == expected(), f"{args}: no full report in the JSON"

        with tempfile.TemporaryDirectory() as tmp:
            svg = os.path.join(tmp, "q.svg")
            pb = os.path.join(tmp, "q.pb.gz")
            d.profctl("query", "--since", "1m", "--format", "svg", "--output", svg)
            d.profctl("query", "--since", "1m", "--format", "pprof", "--output", pb)
            # the subtitle wraps at spaces into lines (tspans) that fit the width
            root = ET.parse(svg).getroot()
            sub = root.find("{http://www.w3.org/2000/svg}text[@id='subtitle']")
            subtitle = " ".join(t.text or "" for t in sub.findall("{http://www.w3.org/2000/svg}tspan"))
            assert want in subtitle, f"SVG subtitle lacks the summary: {subtitle}"
            with gzip.open(pb) as f:
                data = f.read()
            # comments are strings of the profile: the summary, and the report as JSON
            assert want.encode() in data, "pprof profile has no quality comment"
            assert b'quality report: {"complete":' + str(expected()["complete"]).encode() in data


def test_losses_outside_the_window_stay_out():
    with serve_only(SPEC) as d:
        # 10 minutes: both drains, both drops
        doc = json.loads(d.profctl("query", "--since", "10m", "--quality", "--json").stdout)
        assert doc["quality"]["lost"]["map_full"] == 1012, doc["quality"]["lost"]
        # the old drain alone: its loss only
        doc = json.loads(d.profctl("query", "--since", "10m", "--until", "2m", "--quality", "--json").stdout)
        assert doc["quality"]["lost"] == dict(dict.fromkeys(LOST, 0), map_full=1000), doc["quality"]["lost"]
        assert doc["quality"]["total"] == 1 and doc["quality"]["complete"] == 1, doc["quality"]
        # the last minute: not the old drain's
        doc = json.loads(d.profctl("query", "--since", "1m", "--quality", "--json").stdout)
        assert doc["quality"]["lost"]["map_full"] == 12, doc["quality"]["lost"]


def test_series_carries_the_complete_part_per_step():
    with serve_only(SPEC) as d:
        # one window for both answers: with --since, a 10 s step boundary
        # passing between the two queries moved every step
        end = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=1)
        window = ["--from", (end - datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "--to", end.strftime("%Y-%m-%dT%H:%M:%SZ")]
        doc = json.loads(d.profctl("series", *window, "--step", "10s", "--json").stdout)
        want = expected()
        assert sum(p["value"] for p in doc["points"]) == want["total"] + 1
        assert sum(p["complete"] for p in doc["points"]) == want["complete"] + 1
        for p in doc["points"]:
            assert 0 <= p["complete"] <= p["value"], p
            # C's round(): halves away from zero (Python's round() goes to even)
            assert p["complete_pct"] == math.floor(1000 * p["complete"] / p["value"] + 0.5) / 10, p
        assert doc["quality"]["partial"] is True and doc["quality"]["lost"]["map_full"] == 1012
        r = d.profctl("series", *window, "--step", "10s")
        lines = r.stdout.splitlines()
        assert lines[2].split() == ["TIME", "SAMPLES/S", "COMPLETE"], r.stdout
        # each step with samples shows its complete share, from its points
        shares = [l.split()[3] for l in lines[3:] if l.split()[3] != "-"]
        assert shares == [f"{p['complete_pct']:.1f}%" for p in doc["points"]], r.stdout
        total = want["total"] + 1
        assert r.stderr.strip() == (f"quality: {share(want['complete'] + 1, total)} complete stacks; "
                                    f"{share(total - want['complete'] - 1, total)} not complete "
                                    "(profctl query --quality tells why); lost: map full 1012, "
                                    "stack map full 3, store write failed 1 (host-wide)"), r.stderr


def has_unwinder(d):
    """Does this profd's BPF walker report how walks end? The DWARF unwinder
    (issue 12) does, and `profctl status` then has its "unwind" object."""
    return "unwind" in json.loads(d.profctl("status", "--json").stdout)


def quality_of(d, *args):
    return json.loads(d.profctl("query", "--quality", "--json", *args).stdout)["quality"]


def wait_unwinder_idle(d, timeout=45):
    """Waits until the unwinder has built the tables of the programs running
    when it started (its count of tables built stops growing for 2 s, or 45
    s passed: a busy host keeps starting programs), so a new process is not
    queued behind them and gets its tables at once."""
    deadline, last, steady = time.monotonic() + timeout, -1, 0
    while time.monotonic() < deadline and steady < 4:
        n = json.loads(d.profctl("status", "--json").stdout)["unwind"]["tables_built"]
        steady = steady + 1 if n == last and n > 0 else 0
        last = n
        time.sleep(0.5)


def test_frame_pointer_workload_is_complete():
    # cpu_split is built with frame pointers: its stacks reach main
    with Profd("--kinds", "cpu", "--frequency", "199", "--interval", "250ms") as d:
        if not has_unwinder(d):
            w = subprocess.Popen([binary("CPU_SPLIT"), "3"], stdout=subprocess.PIPE, text=True)
            out, _ = w.communicate(timeout=60)
            assert w.returncode == 0
            d.profctl("flush")
            q = quality_of(d, "--pid", str(json.loads(out)["pid"]), "--since", "5m")
            print(f"  {q['complete']}/{q['total']} samples complete, {q['unknown']} end unknown")
            assert q["total"] >= 20, q  # a loaded machine (or ASan) gives the workload little CPU
            # the frame-pointer walker before the unwinder cannot tell a
            # complete walk from one that met a garbage frame pointer: profd
            # says "unknown", never "complete"
            print("  (BPF walker without the DWARF unwinder: ends are not reported)")
            assert q["complete"] == 0 and q["unknown"] >= 0.97 * q["total"], q
            return
        wait_unwinder_idle(d)
        # Its first samples come before profd heard of it ("no table yet":
        # the frame-pointer fallback stops in libc, which is built without);
        # how long that lasts depends on how busy the machine is. So: run it
        # until a drain shows its stacks complete, then measure a window.
        w = subprocess.Popen([binary("CPU_SPLIT"), "60"], stdout=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 50
            while time.monotonic() < deadline:
                time.sleep(1)
                d.profctl("flush")
                if quality_of(d, "--pid", str(w.pid), "--since", "1s")["complete"] > 0:
                    break
            loaded = time.time_ns()
            assert time.monotonic() < deadline, "the workload's stacks never became complete: tables not loaded"
            time.sleep(4)
            d.profctl("flush")
            end = time.time_ns()
        finally:
            w.kill()
            w.wait()
        q = quality_of(d, "--pid", str(w.pid), "--from", rfc3339(loaded + 10**9), "--to", rfc3339(end))
        print(f"  with its tables: {q['complete']}/{q['total']} samples complete, truncated {q['truncated']}")
        assert q["total"] >= 20, q  # a loaded machine gives the workload little CPU
        assert q["complete"] >= 0.97 * q["total"], f"only {q['complete']} of {q['total']} complete: {q}"
        assert q["unknown"] == 0, q
        whole = quality_of(d, "--pid", str(w.pid), "--since", "5m")
        print(f"  whole run: {whole['complete']}/{whole['total']} complete, no table yet "
              f"{whole['truncated']['no_table']}")


def db_lost(store, from_ns, to_ns, reason="map_full"):
    """The loss profd stored for the drains overlapping [from_ns, to_ns]."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        row = db.execute("SELECT coalesce(sum(x.count), 0) FROM drains d JOIN drops x ON x.drain_id = d.id "
                         "WHERE x.reason = ? AND d.end_ns >= ? AND d.start_ns <= ?",
                         (reason, from_ns, to_ns)).fetchone()
    return row[0]


def test_full_map_loss_is_in_its_window_only():
    work = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(work, "profd.db")
    # first a profd sized as usual: its map holds every sample of an interval
    d = Profd("--kinds", "cpu", "--frequency", "99", "--interval", "1s", store=store, workdir=work).start()
    try:
        t0 = time.time_ns()
        time.sleep(3)
        d.profctl("flush")
        t1 = time.time_ns()
    finally:
        assert d.stop() == 0, d.read_log()
    quiet = (rfc3339(t0), rfc3339(t1))
    # then the same store under a 16-key map and many threads in many stacks
    d = Profd("--kinds", "cpu", "--frequency", "99", "--interval", "1s", "--max-keys", "16",
              store=store, workdir=work).start()
    try:
        time.sleep(1.2)
        t2 = time.time_ns()
        w = subprocess.Popen([binary("MANY_STACKS"), "3", "8"], stdout=subprocess.PIPE, text=True)
        w.communicate(timeout=60)
        d.profctl("flush")
        t3 = time.time_ns()
        busy = (rfc3339(t2), rfc3339(t3))
    finally:
        assert d.stop() == 0, d.read_log()
    # asked of a serve-only profd: no drain lands between the answer and
    # the look at the store
    with Profd("--kinds", "none", store=store, workdir=work) as d:
        q_busy = quality_of(d, "--from", busy[0], "--to", busy[1])
        q_quiet = quality_of(d, "--from", quiet[0], "--to", quiet[1])
        q_both = quality_of(d, "--from", quiet[0], "--to", busy[1])
        print(f"  map_full: busy window {q_busy['lost']['map_full']}, quiet window {q_quiet['lost']['map_full']}")
        assert q_busy["lost"]["map_full"] > 0, f"no loss in the window of the full map: {q_busy['lost']}"
        assert q_busy["lost"]["map_full"] == db_lost(store, t2, t3), "busy window: not the stored drops"
        # the quiet profd's window has none of the full map's loss
        assert q_quiet["lost"]["map_full"] == db_lost(store, t0, t1) == 0, q_quiet["lost"]
        assert q_both["lost"]["map_full"] == db_lost(store, t0, t3) >= q_busy["lost"]["map_full"]
        # the summary line says it, as host-wide
        line = d.profctl("query", "--from", busy[0], "--to", busy[1], "--folded").stderr.strip().splitlines()[-1]
        assert "lost: map full " in line and line.endswith("(host-wide)"), line


if __name__ == "__main__":
    tests = [test_known_store_report_matches_exactly, test_summary_line_under_every_view,
             test_losses_outside_the_window_stay_out, test_series_carries_the_complete_part_per_step]
    if os.geteuid() == 0 and os.path.exists("/sys/kernel/btf/vmlinux"):
        tests += [test_frame_pointer_workload_is_complete, test_full_map_loss_is_in_its_window_only]
    else:
        require_root()  # exits 77: the real-daemon half cannot run here
    run_tests(tests)
