#!/usr/bin/env python3
"""profctl's filters and views against a store of known content: a serve-only
profd (--kinds none) answers, the real profctl asks, and every view and
option is checked line by line against numbers worked out by hand below.

The store (NOW is the clock rounded down to 10 s; drains are 10 s, the one
`ago` seconds before NOW spans [NOW-ago-10, NOW-ago)):

  ago 300  app pid 100     main;work 100, main;idle 300                 (baseline)
  ago  60  app pid 100     main;work;compute(compute.c:10) 500, main;work 100
           app pid 101     main;work 100, main;idle 300
  ago  50  app pid 100     main;helper;work;compute(compute.c:12) 200, main;helper 150,
                           main;do_syscall_64 (kernel) 50
  ago  40  db pid 200 tid 201 uid 0   main;query 300
           worker pid 300 (docker container)  main;spin 40
           app pid 100 offcpu  S main;read;schedule 2 s,  D main;fsync 0.5 s

so app pid 100 has, in the current window (the last 100 s), the 1000
samples of tests/unit/test-views.c: compute self 700, helper 150, work 100,
do_syscall_64 50; work total 800, helper 350."""
import datetime
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import binary, run_tests, serve_only  # noqa: E402

# profctl prints local times: pin them
os.environ["TZ"] = "UTC"

NOW = int(time.time()) // 10 * 10
APP, LIBM, DB, WORKER = "/usr/bin/app", "/usr/lib/libm.so.6", "/usr/sbin/db", "/opt/worker"
CONTAINER = "0123456789abcdef" * 4


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def f(name, module=APP, **kw):
    return dict(name=name, module=module, **kw)


def sample(ago, pid, stack, value, comm="app", **kw):
    s = {"ago_s": ago, "pid": pid, "comm": comm, "value": value, "stack": stack,
         "exe": APP, "uid": 1000, "cgroup": "/system.slice/app.service"}
    s.update(kw)
    return s


KERNEL = "[kernel.kallsyms]"
SAMPLES = [
    sample(300, 100, [f("main"), f("work")], 100),
    sample(300, 100, [f("main"), f("idle")], 300),
    sample(60, 100, [f("main"), f("work"), f("compute", LIBM, file="/src/compute.c", line=10)], 500),
    sample(60, 100, [f("main"), f("work")], 100),
    sample(60, 101, [f("main"), f("work")], 100),
    sample(60, 101, [f("main"), f("idle")], 300),
    sample(50, 100, [f("main"), f("helper"), f("work"), f("compute", LIBM, file="/src/compute.c", line=12)], 200),
    sample(50, 100, [f("main"), f("helper")], 150),
    sample(50, 100, [f("main"), f("do_syscall_64", KERNEL, kernel=True)], 50),
    sample(40, 200, [f("main", DB), f("query", DB)], 300, comm="db", tid=201, exe=DB, uid=0,
           cgroup="/system.slice/db.service"),
    sample(40, 300, [f("main", WORKER), f("spin", WORKER)], 40, comm="worker", exe=WORKER,
           cgroup=f"/system.slice/docker-{CONTAINER}.scope"),
    sample(40, 100, [f("main"), f("read"), f("schedule", KERNEL, kernel=True)], 2_000_000_000,
           kind="offcpu", state="S"),
    sample(40, 100, [f("main"), f("fsync")], 500_000_000, kind="offcpu", state="D"),
]

# the current window: drains ago 60, 50 and 40; the baseline: ago 300
FROM, TO = rfc3339(NOW - 100), rfc3339(NOW)
CUR = ["--from", FROM, "--to", TO]
BASE = ["--baseline-from", rfc3339(NOW - 330), "--baseline-to", rfc3339(NOW - 290)]
D = None


def profctl(*args, check=True):
    """The real profctl; a sanitizer report on its stderr (ASan/UBSan
    builds) fails the test whatever the exit code."""
    r = D.profctl(*args, check=check)
    for marker in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"):
        assert marker not in r.stderr, f"profctl {' '.join(args)}: sanitizer report:\n{r.stderr}"
    return r


def ok(*args):
    return profctl(*args).stdout


def lines(*args):
    return ok(*args).splitlines()


def usage_error(*args, says):
    r = profctl(*args, check=False)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert says in r.stderr, (args, says, r.stderr)
    assert r.stdout == "", (args, r.stdout)


def folded(*args):
    return sorted(lines(*args, "--folded"))


HEADER = f"1000 samples from {utc(NOW - 100)} to {utc(NOW)} (1m40s)"


# ---- table ----

def test_table_by_function_self_then_total():
    assert lines("query", "--pid", "100", *CUR) == [
        HEADER,
        "",
        " SELF%  TOTAL%  SELF  FUNCTION       MODULE",
        " 70.0%   70.0%   700  compute        libm.so.6",
        " 15.0%   35.0%   150  helper         app",
        " 10.0%   80.0%   100  work           app",
        "  5.0%    5.0%    50  do_syscall_64  [kernel.kallsyms]",
        "  0.0%  100.0%     0  main           app",
    ]


def test_table_children_sorts_by_total_and_limit_cuts():
    # the name column is as wide as the rows shown need
    assert lines("query", "--pid", "100", *CUR, "--children", "--limit", "3")[3:] == [
        "  0.0%  100.0%     0  main      app",
        " 10.0%   80.0%   100  work      app",
        " 70.0%   70.0%   700  compute   libm.so.6",
    ]


def test_table_by_line_and_by_module():
    assert lines("query", "--pid", "100", *CUR, "--by", "line", "--limit", "2")[2:] == [
        " SELF%  TOTAL%  SELF  LINE                    MODULE",
        " 50.0%   50.0%   500  compute (compute.c:10)  libm.so.6",
        " 20.0%   20.0%   200  compute (compute.c:12)  libm.so.6",
    ]
    # the app is on every stack but the leaf only of main;work, main;helper
    assert lines("query", "--pid", "100", *CUR, "--by", "module")[2:] == [
        " SELF%  TOTAL%  SELF  MODULE",
        " 70.0%   70.0%   700  /usr/lib/libm.so.6",
        " 25.0%  100.0%   250  /usr/bin/app",
        "  5.0%    5.0%    50  [kernel.kallsyms]",
    ]


def test_table_as_json():
    doc = json.loads(ok("query", "--pid", "100", *CUR, "--format", "table", "--json", "--limit", "2"))
    assert doc["view"] == "table" and doc["by"] == "function" and doc["total"] == 1000, doc
    assert doc["from_ns"] == (NOW - 100) * 10**9 and doc["to_ns"] == NOW * 10**9, doc
    assert doc["rows"] == [
        {"name": "compute", "module": LIBM, "kernel": False, "self": 700, "total": 700,
         "self_pct": 70.0, "total_pct": 70.0},
        {"name": "helper", "module": APP, "kernel": False, "self": 150, "total": 350,
         "self_pct": 15.0, "total_pct": 35.0},
    ], doc["rows"]


# ---- filters ----

def test_each_filter_selects_its_samples():
    app_stacks = ["main;do_syscall_64_[k] 50", "main;helper 150", "main;helper;work;compute 200",
                  "main;work 100", "main;work;compute 500"]
    assert folded("query", "--pid", "100", *CUR) == app_stacks
    assert folded("query", "--tid", "201", *CUR) == ["main;query 300"]
    assert folded("query", "--comm", "db", *CUR) == ["main;query 300"]
    assert folded("query", "--comm", "wor*", *CUR) == ["main;spin 40"]
    assert folded("query", "--exe", DB, *CUR) == ["main;query 300"]
    assert folded("query", "--exe", "*/worker", *CUR) == ["main;spin 40"]
    assert folded("query", "--uid", "0", *CUR) == ["main;query 300"]
    assert folded("query", "--cgroup", "/system.slice/db.service", *CUR) == ["main;query 300"]
    assert folded("query", "--unit", "db.service", *CUR) == ["main;query 300"]
    assert folded("query", "--container", CONTAINER[:6], *CUR) == ["main;spin 40"]
    # pids 100 and 101 merge: main;work 100 + 100
    assert folded("query", "--comm", "app", *CUR) == [
        "main;do_syscall_64_[k] 50", "main;helper 150", "main;helper;work;compute 200",
        "main;idle 300", "main;work 200", "main;work;compute 500"]
    # combined: both must hold
    assert folded("query", "--comm", "app", "--pid", "101", *CUR) == ["main;idle 300", "main;work 100"]


def test_kind_and_state_filters_weigh_microseconds():
    assert folded("query", "--kind", "offcpu", *CUR) == ["main;fsync 500000", "main;read;schedule_[k] 2000000"]
    assert folded("query", "--kind", "offcpu", "--state", "D", *CUR) == ["main;fsync 500000"]


def test_time_windows():
    # only the drain ago 60 overlaps [NOW-68, NOW-62]
    assert folded("query", "--pid", "100", "--from", rfc3339(NOW - 68), "--to", rfc3339(NOW - 62)) == [
        "main;work 100", "main;work;compute 500"]
    # the newest drain (ago 40)
    assert folded("query", "--last") == ["main;query 300", "main;spin 40"]
    assert folded("query", "--last", "--pid", "300") == ["main;spin 40"]
    # relative: --until 4m leaves only the baseline drain (ago 300)
    assert folded("query", "--pid", "100", "--since", "1h", "--until", "4m") == ["main;idle 300", "main;work 100"]
    assert folded("query", "--pid", "100", "--from", "1h", "--to", "4m") == ["main;idle 300", "main;work 100"]


def test_bad_filters_are_usage_errors_naming_the_option():
    usage_error("query", "--tid", "0", says="--tid '0' is not a thread id")
    usage_error("query", "--uid", "-1", says="--uid '-1' is not a user id")
    usage_error("query", "--container", "xyz", says="--container 'xyz' is not a container id")
    usage_error("query", "--container", "abc", says="4 to 64 hexadecimal digits")
    usage_error("query", "--unit", "nginx", says="try 'nginx.service'")
    usage_error("query", "--cgroup", "system.slice", says="--cgroup 'system.slice' is not a cgroup path")
    usage_error("query", "--exe", "bash", says="--exe 'bash' is not an absolute path")
    usage_error("query", "--comm", "a-very-long-command-name", says="longer than the 15 characters")
    usage_error("query", "--from", "yesterday", says="--from 'yesterday' is not a time")
    usage_error("query", "--to", "2026-02-30T00:00:00Z", says="--to '2026-02-30T00:00:00Z' is not a time")
    usage_error("query", "--from", "1m", "--to", "5m", says="--from 1m is later than --to 5m")
    usage_error("query", "--since", "1h", "--from", "10m", says="--since and --from")
    usage_error("query", "--last", "--since", "1m", says="--last")
    usage_error("query", "--state", "S", says="--state applies to --kind offcpu")
    usage_error("query", "--kind", "gpu", says="--kind 'gpu' is not known")


def test_empty_result_says_so():
    r = profctl("query", "--pid", "999", *CUR, "--folded")
    assert r.returncode == 0 and r.stdout == "", r
    assert r.stderr == f"no samples match --pid 999 from {utc(NOW - 100)} to {utc(NOW)}\n", r.stderr
    r = profctl("query", "--pid", "999", *CUR)
    assert r.stdout == "" and "no samples match --pid 999" in r.stderr, r
    doc = json.loads(profctl("query", "--pid", "999", *CUR, "--json").stdout)
    assert doc["stacks"] == [] and doc["total"] == 0, doc


# ---- folded ----

def test_folded_with_process_and_unit_roots():
    assert folded("query", "--comm", "app", *CUR, "--root", "process") == [
        "app-100;main;do_syscall_64_[k] 50", "app-100;main;helper 150", "app-100;main;helper;work;compute 200",
        "app-100;main;work 100", "app-100;main;work;compute 500", "app-101;main;idle 300", "app-101;main;work 100"]
    assert folded("query", "--last", "--root", "unit") == [
        "db.service;main;query 300", f"docker-{CONTAINER}.scope;main;spin 40"]


def test_folded_with_lines():
    assert folded("query", "--pid", "100", *CUR, "--lines")[2:4] == [
        "main;helper;work;compute (compute.c:12) 200", "main;work 100"]


# ---- tree ----

TREE_HEAD = [HEADER, "focus '^work$': 800 samples (80.0%)", ""]


def test_tree_focus_callers_above_callees_below():
    assert lines("query", "--pid", "100", *CUR, "--format", "tree", "--focus", "^work$") == TREE_HEAD + [
        "callers (each function is called by those indented below it):",
        " TOTAL%  TOTAL  FUNCTION",
        "  80.0%    800  work",
        "  60.0%    600    main",
        "  20.0%    200    helper",
        "  20.0%    200      main",
        "",
        "callees (each function calls those indented below it):",
        " TOTAL%    SELF%  TOTAL  FUNCTION",
        "  80.0%    10.0%    800  work",
        "  70.0%    70.0%    700    compute",
    ]


def test_tree_hide_and_max_depth():
    assert lines("query", "--pid", "100", *CUR, "--format", "tree", "--hide", "^helper$")[2:] == [
        " TOTAL%    SELF%  TOTAL  FUNCTION",
        " 100.0%    15.0%   1000  main",
        "  80.0%    10.0%    800    work",
        "  70.0%    70.0%    700      compute",
        "   5.0%     5.0%     50    do_syscall_64",
    ]
    assert lines("query", "--pid", "100", *CUR, "--format", "tree", "--max-depth", "2")[2:] == [
        " TOTAL%    SELF%  TOTAL  FUNCTION",
        " 100.0%     0.0%   1000  main",
        "  60.0%    10.0%    600    work",
        "  35.0%    15.0%    350    helper",
        "   5.0%     5.0%     50    do_syscall_64",
    ]


def test_tree_as_json_and_bad_regex():
    doc = json.loads(ok("query", "--pid", "100", *CUR, "--format", "tree", "--focus", "^compute$", "--json"))
    assert doc["matched"] == 700 and doc["focus"] == "^compute$", doc
    assert [(n["name"], n["total"], n["self"]) for n in doc["callees"]] == [("compute", 700, 700)], doc
    (work,) = doc["callers"][0]["children"]
    assert (work["name"], work["total"]) == ("work", 700), work
    assert [(c["name"], c["total"]) for c in work["children"]] == [("main", 500), ("helper", 200)], work
    usage_error("query", "--format", "tree", "--focus", "(", says="--focus '(' is not a valid regular expression")
    usage_error("query", "--focus", "x", says="--focus applies to --format tree")
    r = profctl("query", "--pid", "100", *CUR, "--format", "tree", "--focus", "nothing")
    assert r.stdout == "" and "no frame matches --focus 'nothing'" in r.stderr, r


# ---- svg, pprof, --output ----

def test_svg_and_pprof_and_output_file():
    out = os.path.join(D.dir, "q.svg")
    r = profctl("query", "--pid", "100", *CUR, "--format", "svg", "--output", out, "--title", "T1")
    assert r.stdout == "", r.stdout
    with open(out) as fh:
        svg = fh.read()
    xml.dom.minidom.parseString(svg)
    assert "compute" in svg and "T1" in svg
    # a failing query leaves the file as it was
    r = subprocess.run([binary("PROFCTL"), "--socket", "/nonexistent.sock", "query", "--output", out],
                       capture_output=True, text=True)
    assert r.returncode == 1
    with open(out) as fh:
        assert fh.read() == svg
    assert [n for n in os.listdir(D.dir) if n.startswith("q.svg.")] == []
    pb = os.path.join(D.dir, "q.pb.gz")
    profctl("query", "--pid", "100", *CUR, "--format", "pprof", "--output", pb)
    with open(pb, "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"  # gzip
    usage_error("query", "--format", "pprof", "--json", says="--json cannot be combined with --format pprof")


# ---- series ----

def test_series_per_step():
    # pid 100: 600 samples in the drain ago 60, 400 ago 50; 10 s steps: 60/s and 40/s
    assert lines("series", "--pid", "100", *CUR, "--step", "10s")[2:] == [
        "TIME                    SAMPLES/S  COMPLETE",
        f"{utc(NOW - 70)}          60.0    100.0%  " + "#" * 40,
        f"{utc(NOW - 60)}          40.0    100.0%  " + "#" * 27,
    ]
    doc = json.loads(ok("series", "--pid", "100", *CUR, "--step", "5s", "--json"))
    assert doc["step_ns"] == 5 * 10**9 and doc["total"] == 1000 and doc["rate_unit"] == "samples/s", doc
    assert [(p["t_ns"] // 10**9 - NOW, p["value"], p["rate"]) for p in doc["points"]] == [
        (-70, 300, 60.0), (-65, 300, 60.0), (-60, 200, 40.0), (-55, 200, 40.0)], doc["points"]
    # off-CPU: 2.5 s blocked in a 10 s step is 250 ms per second
    assert lines("series", "--pid", "100", "--kind", "offcpu", *CUR, "--step", "10s")[3:] == [
        f"{utc(NOW - 50)}         250.0    100.0%  " + "#" * 40]
    usage_error("series", "--step", "0s", says="--step must be longer than 0")
    out = os.path.join(D.dir, "series.txt")
    assert ok("series", "--pid", "100", *CUR, "--step", "10s", "--output", out) == ""
    with open(out) as fh:
        assert fh.read() == ok("series", "--pid", "100", *CUR, "--step", "10s")


def test_series_gap_shows_zero():
    # pid 100 on-CPU over the baseline and current drains in 1 min steps:
    # the minutes between them had nothing, and are shown as 0
    out = lines("series", "--pid", "100", "--from", rfc3339(NOW - 360), "--to", TO, "--step", "1m")[3:]
    first, last = (NOW - 310) // 60 * 60, (NOW - 60) // 60 * 60
    want = {}
    for drain_start, value in ((NOW - 310, 400), (NOW - 70, 600), (NOW - 60, 400)):
        # drains are 10 s on 10 s boundaries: never across a minute
        want[drain_start // 60 * 60] = want.get(drain_start // 60 * 60, 0) + value
    expected = [(utc(t), "%.1f" % (want.get(t, 0) / 60)) for t in range(first, last + 60, 60)]
    assert [(l[:19], l.split()[2]) for l in out] == expected, (out, expected)
    assert len(expected) >= 4 and expected[1][1] == "0.0"


# ---- diff ----

DIFF_TABLE = [
    " BASE%    CUR%    DELTA  FUNCTION       MODULE",
    " 75.0%    0.0%    -75.0  idle           app",
    "  0.0%   70.0%    +70.0  compute        libm.so.6",
    "  0.0%   15.0%    +15.0  helper         app",
    " 25.0%   10.0%    -15.0  work           app",
    "  0.0%    5.0%     +5.0  do_syscall_64  [kernel.kallsyms]",
]


def test_diff_table_between_windows_and_between_processes():
    out = lines("diff", "--pid", "100", *CUR, *BASE)
    assert out[0] == f"baseline: 400 samples from {utc(NOW - 330)} to {utc(NOW - 290)} (40s)", out
    assert out[1] == "current:  " + HEADER, out
    assert out[4:] == DIFF_TABLE, out
    assert lines("diff", "--pid", "100", "--baseline-pid", "101", *CUR)[4:] == DIFF_TABLE
    doc = json.loads(ok("diff", "--pid", "100", *CUR, *BASE, "--json", "--format", "table", "--limit", "1"))
    assert doc["baseline"]["total"] == 400 and doc["current"]["total"] == 1000, doc
    assert doc["rows"] == [{"name": "idle", "module": APP, "kernel": False, "baseline": 300, "current": 0,
                            "baseline_pct": 75.0, "current_pct": 0.0, "delta_pct": -75.0}], doc


def test_diff_folded_is_normalised():
    # the baseline (400 samples) is scaled to the current total (1000): x2.5
    assert lines("diff", "--pid", "100", *CUR, *BASE, "--format", "folded") == [
        "main;do_syscall_64_[k] 0 50",
        "main;helper 0 150",
        "main;helper;work;compute 0 200",
        "main;idle 750 0",
        "main;work 250 100",
        "main;work;compute 0 500",
    ]
    doc = json.loads(ok("diff", "--pid", "100", *CUR, *BASE, "--json"))
    idle = [s for s in doc["stacks"] if [f["name"] for f in s["frames"]] == ["main", "idle"]]
    assert idle == [{"frames": [{"name": "main", "module": APP, "kernel": False},
                                {"name": "idle", "module": APP, "kernel": False}],
                     "baseline": 300, "current": 0, "baseline_scaled": 750}], doc


def test_diff_svg_and_usage():
    out = os.path.join(D.dir, "d.svg")
    profctl("diff", "--pid", "100", *CUR, *BASE, "--format", "svg", "--output", out)
    with open(out) as fh:
        svg = fh.read()
    xml.dom.minidom.parseString(svg)
    assert "compute" in svg
    usage_error("diff", "--pid", "100", says="diff needs a baseline")
    usage_error("diff", "--baseline-pid", "101", says="give the current one with --pid")
    usage_error("diff", "--baseline-from", "10m", says="needs both --baseline-from and --baseline-to")
    usage_error("diff", "--baseline-from", "1m", "--baseline-to", "5m", says="--baseline-from 1m is later")


# ---- top ----

TOP_ROWS = [
    "",
    " SELF%  TOTAL%  SELF  FUNCTION  MODULE",
    " 88.2%   88.2%   300  query     db",
    " 11.8%   11.8%    40  spin      worker",
    "  0.0%   88.2%     0  main      db",
    "  0.0%   11.8%     0  main      worker",
]


def test_top_prints_a_frame_per_refresh_when_not_a_terminal():
    t0 = time.monotonic()
    out = lines("top", "--iterations", "2")
    took = time.monotonic() - t0
    # the newest drain (ago 40): 300 + 40 samples
    frame = [f"340 samples from {utc(NOW - 50)} to {utc(NOW - 40)} (10s)"] + TOP_ROWS
    assert out[0].startswith("profctl top at ") and out[0].endswith(": the last drain"), out
    assert out[1:8] == frame, out
    assert out[8] == "" and out[9].startswith("profctl top at "), out
    assert out[10:] == frame, out
    # two frames a refresh apart (not a speed check: at least the wait)
    assert took >= 0.9, took
    out = lines("top", "--iterations", "1", "--window", "2h", "--pid", "100", "--limit", "1")
    assert out[0].endswith(": the last 2h, --pid 100"), out
    assert lines("top", "--iterations", "1", "--by", "module", "--children")[3:] == [
        " SELF%  TOTAL%  SELF  MODULE",
        " 88.2%   88.2%   300  /usr/sbin/db",
        " 11.8%   11.8%    40  /opt/worker",
    ]
    docs = [json.loads(l) for l in lines("top", "--iterations", "2", "--json", "--limit", "1")]
    assert len(docs) == 2, docs
    for doc in docs:
        assert (doc["view"], doc["total"], doc["from_ns"], doc["to_ns"]) == (
            "table", 340, (NOW - 50) * 10**9, (NOW - 40) * 10**9), doc
        assert [(r["name"], r["self"]) for r in doc["rows"]] == [("query", 300)], doc
    # pid 100 over 2 h: the baseline drain too, 400 + 1000 samples
    assert out[1].startswith("1400 samples from "), out
    assert out[4:] == [" 50.0%   50.0%   700  compute   libm.so.6"], out


def run_top_in_pty(stop):
    """profctl top on a terminal: returns (exit code, output, termios before,
    termios after); stop(proc, master) ends it."""
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    p = subprocess.Popen([binary("PROFCTL"), "--socket", D.socket, "top"], stdin=slave, stdout=slave,
                         stderr=slave, start_new_session=True)
    out = b""
    deadline = time.monotonic() + 20
    while b"SELF%" not in out and time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            out += os.read(master, 65536)
    stop(p, master)
    rc = p.wait(20)
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    after = termios.tcgetattr(slave)
    os.close(master)
    os.close(slave)
    return rc, out.decode(errors="replace"), before, after


def test_top_on_a_terminal_quits_on_q_and_restores_it():
    rc, out, before, after = run_top_in_pty(lambda p, m: os.write(m, b"q"))
    assert rc == 0, (rc, out)
    assert "\033[H\033[2J" in out and "(q quits)" in out and "query" in out, out
    assert out.endswith("\033[?25h"), repr(out[-40:])
    assert before == after, (before, after)
    rc, out, before, after = run_top_in_pty(lambda p, m: p.send_signal(signal.SIGTERM))
    assert rc == 0 and before == after, (rc, before, after)
    assert out.endswith("\033[?25h"), repr(out[-40:])


# ---- help ----

def test_every_command_has_full_help():
    options = {
        "query": ["--pid", "--tid", "--comm", "--exe", "--uid", "--cgroup", "--unit", "--container", "--kind",
                  "--state", "--since", "--until", "--from", "--to", "--last", "--format", "--folded", "--json",
                  "--output", "--by", "--children", "--limit", "--lines", "--raw-names", "--root", "--focus",
                  "--hide", "--max-depth", "--icicle", "--title"],
        "series": ["--pid", "--from", "--step", "--json", "--output"],
        "diff": ["--baseline-from", "--baseline-to", "--baseline-pid", "--format", "--by", "--children", "--limit"],
        "top": ["--window", "--by", "--children", "--limit", "--iterations", "--json", "--last"],
    }
    for cmd, opts in options.items():
        r = profctl(cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith(f"Usage: profctl {cmd}"), r
        for o in opts:
            assert o in r.stdout, (cmd, o)
    top = profctl("--help").stdout
    for cmd in ("status", "flush", "query", "series", "diff", "top"):
        assert f"  {cmd} " in top, cmd


if __name__ == "__main__":
    with serve_only(SAMPLES, now=rfc3339(NOW)) as D:
        run_tests([
            test_table_by_function_self_then_total,
            test_table_children_sorts_by_total_and_limit_cuts,
            test_table_by_line_and_by_module,
            test_table_as_json,
            test_each_filter_selects_its_samples,
            test_kind_and_state_filters_weigh_microseconds,
            test_time_windows,
            test_bad_filters_are_usage_errors_naming_the_option,
            test_empty_result_says_so,
            test_folded_with_process_and_unit_roots,
            test_folded_with_lines,
            test_tree_focus_callers_above_callees_below,
            test_tree_hide_and_max_depth,
            test_tree_as_json_and_bad_regex,
            test_svg_and_pprof_and_output_file,
            test_series_per_step,
            test_series_gap_shows_zero,
            test_diff_table_between_windows_and_between_processes,
            test_diff_folded_is_normalised,
            test_diff_svg_and_usage,
            test_top_prints_a_frame_per_refresh_when_not_a_terminal,
            test_top_on_a_terminal_quits_on_q_and_restores_it,
            test_every_command_has_full_help,
        ])
