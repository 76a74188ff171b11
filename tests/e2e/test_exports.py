#!/usr/bin/env python3
"""End to end, exports: what `profctl query --format pprof|svg` and `profctl
diff --format svg` write, read back by the real consumers.

- On stores with known content (storegen, `profd --kinds none`): the real
  `go tool pprof -top` must give, per function, exactly the flat and cum
  that profctl's own table gives (samples and off-CPU nanoseconds); the
  mappings carry build-ids, inlined frames are inline chains of one
  location; the SVG's frame widths are the table's totals; the differential
  SVG colours growth red and shrinkage blue; Python frames (as the CPython
  walker stores them) reach pprof with file:line in one [python] mapping,
  `--by line` as qualname (file.py:line) and the SVG in blue; Java frames
  (as the HotSpot walker's writer stores them) likewise in one [hotspot]
  mapping, `--by line` as package.Class.method (File.java:line), the SVG
  in green.
- On the real daemon sampling a real workload (cpu_split): the SVG is
  well-formed XML naming the hot functions, its pprof has cpu/nanoseconds =
  samples x the sampling period, and where Chromium is installed the SVG
  renders headless to a PNG without script errors, and its script zooms and
  searches (driven in the page, results read back from the DOM).

go tool pprof runs offline with a private HOME/GOCACHE/GOPATH. Without go
the pprof cases fail (golang-go is in setup.sh's TEST_PACKAGES); without Chromium
the rendering case is skipped loudly."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from harness import Profd, binary, require_root, run_tests

SVG_NS = {"svg": "http://www.w3.org/2000/svg"}
CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and os.path.exists(p)), None)
WORK = tempfile.mkdtemp(prefix="profd-exports-")
# where to look at the PNG afterwards: PROFD_TEST_KEEP=DIR keeps the artifacts there
KEEP = os.environ.get("PROFD_TEST_KEEP")


def go_env():
    home = os.path.join(WORK, "gohome")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ)
    env.update(HOME=home, GOCACHE=os.path.join(home, "cache"), GOPATH=os.path.join(home, "go"),
               GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="", GOTELEMETRY="off")
    return env


def go_pprof(*args):
    go = shutil.which("go")
    assert go, "go is not installed (golang-go, in setup.sh's TEST_PACKAGES): cannot read the profile back"
    # -symbolize=none: the profile must stand on its own, no binary or network lookups
    r = subprocess.run([go, "tool", "pprof", "-symbolize=none"] + list(args), capture_output=True,
                       text=True, env=go_env(), timeout=120)
    assert r.returncode == 0, f"go tool pprof {' '.join(args)} failed:\n{r.stderr}"
    return r.stdout


NANOS = {"ns": 1, "us": 1000, "ms": 10**6, "s": 10**9}


def pprof_top(path, sample_index, unit=None):
    """{function: (flat, cum)} from `go tool pprof -top` over every node;
    inlined functions lose pprof's " (inline)" suffix."""
    args = ["-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0",
            f"-sample_index={sample_index}"]
    if unit:
        args.append(f"-unit={unit}")
    out = go_pprof(*args, path)
    rows, started = {}, False
    for line in out.splitlines():
        if re.match(r"\s*flat\s+flat%\s+sum%\s+cum\s+cum%", line):
            started = True
            continue
        if not started or not line.strip():
            continue
        m = re.match(r"\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.*)$", line)
        assert m, f"unexpected pprof -top line: {line!r}"

        def value(s):
            if s == "0":
                return 0
            num = re.match(r"^(\d+)([a-z]*)$", s)
            assert num, f"pprof printed {s!r}, not an exact number (line {line!r})"
            return int(num.group(1)) * NANOS.get(num.group(2), 1)
        name = m.group(3)
        if name.endswith(" (inline)"):
            name = name[:-len(" (inline)")]
        assert name not in rows, f"pprof lists {name} twice"
        rows[name] = (value(m.group(1)), value(m.group(2)))
    assert rows, "pprof -top printed no rows:\n" + out
    return rows


def table(d, *args):
    """{function: (self, total)} and the total from profctl's own table"""
    t = json.loads(d.profctl("query", "--format", "table", "--json", "--limit", "0", *args).stdout)
    rows = {}
    for r in t["rows"]:
        assert r["name"] not in rows, f"{r['name']} in two modules: the fixture must avoid that"
        rows[r["name"]] = (r["self"], r["total"])
    return rows, t["total"]


def parse_svg(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise AssertionError(f"{path} is not well-formed XML: {e}")
    if shutil.which("xmllint"):
        r = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True)
        assert r.returncode == 0, f"xmllint rejects {path}: {r.stderr}"
    return root


def svg_frames(root):
    """[(name, x, width, fill, value)] of the drawn frames"""
    out = []
    for g in root.find("svg:g[@id='frames']", SVG_NS).findall("svg:g", SVG_NS):
        rect = g.find("svg:rect", SVG_NS)
        out.append((g.find("svg:title", SVG_NS).text.split("\n")[0], float(rect.get("x")),
                    float(rect.get("width")), rect.get("fill"), int(g.get("data-v"))))
    return out


def keep(path):
    if KEEP:
        os.makedirs(KEEP, exist_ok=True)
        shutil.copy(path, KEEP)
        print(f"  kept {os.path.join(KEEP, os.path.basename(path))}")


# --- stores with known content ---

APP = "/usr/bin/app"
LIBX = "/usr/lib/libx.so.1"
BUILD_APP = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334"
BUILD_LIBX = "ffeeddccbbaa99887766554433221100aabbccdd"


def fr(name, module=APP, **kw):
    f = {"name": name, "module": module}
    # an inlined frame takes its caller's build-id (and address): storegen refuses them
    if module == APP and not kw.get("inlined"):
        f["build_id"] = BUILD_APP
    elif module == LIBX:
        f["build_id"] = BUILD_LIBX
    f.update(kw)
    return f


def kfr(name):
    return {"name": name, "module": "[kernel.kallsyms]", "kernel": True}


MAIN = fr("main", file="app.c", line=10)
# (value, pid, stack) of the current window: inline chain, kernel frames,
# recursion, a library with its own build-id, a second program
CURRENT = [
    (60, 100, [MAIN, fr("work", file="app.c", line=20), fr("mix", file="mix.h", line=3, inlined=True),
               fr("rotate", file="mix.h", line=9, inlined=True)]),
    (25, 100, [MAIN, fr("read_input", file="app.c", line=30), kfr("ksys_read"), kfr("vfs_read")]),
    (12, 100, [MAIN, fr("rec"), fr("rec"), fr("rec"), fr("compute", LIBX)]),
    (7, 200, [fr("start", "/usr/bin/other"), fr("other_work", "/usr/bin/other")]),
    (3, 100, [MAIN, fr("work", file="app.c", line=20)]),
]
# the baseline window, a while earlier: read_input dominated
BASELINE = [
    (10, 100, [MAIN, fr("work", file="app.c", line=20), fr("mix", file="mix.h", line=3, inlined=True),
               fr("rotate", file="mix.h", line=9, inlined=True)]),
    (80, 100, [MAIN, fr("read_input", file="app.c", line=30), kfr("ksys_read"), kfr("vfs_read")]),
    (10, 100, [MAIN, fr("rec"), fr("rec"), fr("rec"), fr("compute", LIBX)]),
]
OFFCPU = [
    (1500000000, 100, "S", [MAIN, fr("wait_input"), kfr("schedule")]),
    (250000000, 100, "D", [MAIN, fr("flush_disk"), kfr("io_schedule")]),
    (750000, 100, "S", [MAIN, fr("wait_input"), fr("poll_once"), kfr("schedule")]),
]


def spec_lines():
    lines = []
    for value, pid, stack in CURRENT:
        lines.append({"ago_s": 30, "kind": "cpu", "pid": pid, "comm": "app" if pid == 100 else "other",
                      "exe": APP if pid == 100 else "/usr/bin/other", "uid": 0, "value": value, "stack": stack})
    for value, pid, stack in BASELINE:
        lines.append({"ago_s": 600, "kind": "cpu", "pid": pid, "comm": "app", "exe": APP, "uid": 0,
                      "value": value, "stack": stack})
    for value, pid, state, stack in OFFCPU:
        lines.append({"ago_s": 30, "kind": "offcpu", "state": state, "pid": pid, "comm": "app", "exe": APP,
                      "uid": 0, "value": value, "stack": stack})
    return "".join(json.dumps(l) + "\n" for l in lines)


def known_store():
    """A serve-only profd on a store holding exactly the stacks above."""
    d = Profd("--kinds", "none")
    r = subprocess.run([binary("STOREGEN"), d.store], input=spec_lines(), capture_output=True, text=True)
    assert r.returncode == 0, f"storegen failed:\n{r.stderr}"
    return d


def expected_functions(stacks):
    """{function: (self, total)} by the definition the table uses"""
    out = {}
    for value, _, stack in stacks:
        names = [f["name"] for f in stack]
        for n in set(names):
            s, t = out.get(n, (0, 0))
            out[n] = (s, t + value)
        s, t = out[names[-1]]
        out[names[-1]] = (s + value, t)
    return out


def test_pprof_top_equals_the_table_on_known_content():
    with known_store() as d:
        path = os.path.join(WORK, "known.pb.gz")
        d.profctl("query", "--since", "2m", "--format", "pprof", "--output", path)
        with open(path, "rb") as f:
            assert f.read(2) == b"\x1f\x8b", "not gzip"

        rows, total = table(d, "--since", "2m")
        # the table itself is right about the known content
        assert total == sum(v for v, _, _ in CURRENT), f"table total {total}"
        assert rows == expected_functions(CURRENT), f"table {rows} != {expected_functions(CURRENT)}"
        top = pprof_top(path, "samples")
        print(f"  pprof -top: {len(top)} functions, e.g. work {top.get('work')}, rec {top.get('rec')}")
        assert top == rows, f"pprof -top {top}\n  != profctl's table {rows}"

        raw = go_pprof("-raw", path)
        # sample types: a store from storegen has no sampling frequency,
        # so only the count (cpu/nanoseconds needs the period; see below)
        assert re.search(r"^samples/count\s*$", raw, re.M), raw[:500]
        mappings = raw.split("Mappings\n", 1)[1]
        assert re.search(rf" {re.escape(APP)} {BUILD_APP}\b", mappings), mappings
        assert re.search(rf" {re.escape(LIBX)} {BUILD_LIBX}\b", mappings), mappings
        assert "[kernel.kallsyms]" in mappings, mappings
        # one location holds work and what was inlined into it, innermost first
        locations = raw.split("Locations\n", 1)[1].split("Mappings\n", 1)[0]
        m = re.search(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ rotate mix\.h:9 s=0\n\s+mix mix\.h:3 s=0\n"
                      r"\s+work app\.c:20 s=0$", locations, re.M)
        assert m, "no location with the inline chain rotate < mix < work:\n" + locations
        # the window: --since 2m
        head = go_pprof("-top", "-nodecount=1", path)
        assert re.search(r"^Duration: 120s", head, re.M), head


def test_pprof_offcpu_is_nanoseconds_equal_to_the_table():
    with known_store() as d:
        path = os.path.join(WORK, "offcpu.pb.gz")
        d.profctl("query", "--kind", "offcpu", "--since", "2m", "--format", "pprof", "--output", path)
        rows, total = table(d, "--kind", "offcpu", "--since", "2m")
        want = expected_functions([(v, p, s) for v, p, _, s in OFFCPU])
        assert rows == want, f"table {rows} != {want}"
        top = pprof_top(path, "off_cpu", unit="ns")
        assert top == rows, f"pprof -top {top}\n  != profctl's table {rows}"
        raw = go_pprof("-raw", path)
        assert re.search(r"^off_cpu/nanoseconds\s*$", raw, re.M), raw[:500]


def test_svg_widths_are_the_tables_totals():
    with known_store() as d:
        path = os.path.join(WORK, "known.svg")
        d.profctl("query", "--since", "2m", "--format", "svg", "--output", path, "--title", "known <content>")
        root = parse_svg(path)
        assert root.find("svg:text[@id='title']", SVG_NS).text == "known <content>"
        rows, total = table(d, "--since", "2m")
        frames = svg_frames(root)
        avail = 1200 - 20
        # every function on a single path (all but rec, drawn at three depths)
        # is one frame, as wide as its total share of the image
        for name, (_, tot) in rows.items():
            drawn = [f for f in frames if f[0] == name]
            if name == "rec":
                assert [f[4] for f in drawn] == [12, 12, 12], f"rec at three depths: {drawn}"
                continue
            assert len(drawn) == 1, f"{name}: {len(drawn)} frames"
            assert abs(drawn[0][2] - tot * avail / total) < 0.006, \
                f"{name}: {drawn[0][2]} px, expected {tot * avail / total:.2f}"
        # --icicle: the same frames, the root row at the top, under the header
        icicle = os.path.join(WORK, "icicle.svg")
        d.profctl("query", "--since", "2m", "--format", "svg", "--icicle", "--output", icicle)
        iroot = parse_svg(icicle)
        rows_y = {g.find("svg:title", SVG_NS).text.split("\n")[0]: float(g.find("svg:rect", SVG_NS).get("y"))
                  for g in iroot.find("svg:g[@id='frames']", SVG_NS).findall("svg:g", SVG_NS)}
        assert rows_y["all"] == 76 and rows_y["main"] == 92 and rows_y["compute"] == 76 + 5 * 16, rows_y
        # one frame per distinct path prefix, and "all"
        prefixes = {tuple(f["name"] for f in stack[:i + 1]) for _, _, stack in CURRENT
                    for i in range(len(stack))}
        assert len(frames) == 1 + len(prefixes), f"{len(frames)} frames: {[f[0] for f in frames]}"


def test_diff_svg_colours_growth_red_and_shrinkage_blue():
    with known_store() as d:
        path = os.path.join(WORK, "diff.svg")
        d.profctl("diff", "--pid", "100", "--since", "2m", "--baseline-from", "11m", "--baseline-to", "9m",
                  "--format", "svg", "--output", path)
        frames = {f[0]: f for f in svg_frames(parse_svg(path))}
        cur_total = sum(v for v, p, _ in CURRENT if p == 100)
        # widths are the current window's
        assert abs(frames["work"][2] - 63 * 1180 / cur_total) < 0.006, frames["work"]

        def rgb(fill):
            return tuple(int(c) for c in fill[4:-1].split(","))
        # self shares, current against baseline (both 100 samples for pid 100):
        # vfs_read 25% against 80%, -55 points, the largest change: full blue;
        # rotate 60% against 10%, +50 points: red, 50/55 of full strength
        assert rgb(frames["vfs_read"][3]) == (50, 50, 250), frames["vfs_read"]
        strong = round(250 - 200 * 50 / 55)
        assert rgb(frames["rotate"][3]) == (250, strong, strong), frames["rotate"]
        # main has no self time either side: unchanged, white
        assert rgb(frames["main"][3]) == (250, 250, 250), frames["main"]
        if CHROMIUM:
            r = chromium("--window-size=1200,200", f"--screenshot={os.path.join(WORK, 'diff.png')}",
                         "file://" + path)
            assert r.returncode == 0 and not script_errors(r.stderr), \
                f"chromium on the diff: {script_errors(r.stderr) or r.stderr[-2000:]}"
            keep(path)
            keep(os.path.join(WORK, "diff.png"))


# --- the real daemon on a real workload ---

# A Python program as profd stores it once the CPython walker names its
# frames (common/protocol.h): module and file the .py file, address and
# line the line, build_id "python-" and a hash of one function.
PY_EXE = "/usr/bin/python3.11"


def pyfr(name, path, line, fid):
    return {"name": name, "module": path, "build_id": f"python-{fid:016x}", "file": path, "line": line,
            "address": line}


PY_MAIN = fr("main", PY_EXE, build_id="aa11bb22", address=4096)
PY_STACKS = [
    (60, [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1), pyfr("Worker.run", "/srv/app/work.py", 41, 2)]),
    (30, [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1), pyfr("Worker.run", "/srv/app/work.py", 42, 2)]),
    (10, [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1), pyfr("helper", "/srv/app/work.py", 50, 3)]),
]


def test_python_frames_in_pprof_svg_and_by_line():
    d = Profd("--kinds", "none")
    spec = "".join(json.dumps({"ago_s": 30, "kind": "cpu", "pid": 300, "comm": "python3", "exe": PY_EXE, "uid": 0,
                               "value": v, "stack": st}) + "\n" for v, st in PY_STACKS)
    r = subprocess.run([binary("STOREGEN"), d.store], input=spec, capture_output=True, text=True)
    assert r.returncode == 0, f"storegen failed:\n{r.stderr}"
    with d:
        path = os.path.join(WORK, "python.pb.gz")
        d.profctl("query", "--since", "2m", "--format", "pprof", "--output", path)
        rows, total = table(d, "--since", "2m")
        assert total == 100 and rows == expected_functions([(v, 300, st) for v, st in PY_STACKS]), rows
        assert pprof_top(path, "samples") == rows, "pprof -top != profctl's table"
        raw = go_pprof("-raw", path)
        mappings = raw.split("Mappings\n", 1)[1]
        # the interpreter's file and one [python] mapping, no build-id of a function
        assert "[python]" in mappings and "python-" not in mappings and ".py" not in mappings, mappings
        assert re.search(rf" {re.escape(PY_EXE)} aa11bb22\b", mappings), mappings
        locations = raw.split("Locations\n", 1)[1].split("Mappings\n", 1)[0]
        for want in ("Worker.run /srv/app/work.py:41", "Worker.run /srv/app/work.py:42", "helper /srv/app/work.py:50",
                     "<module> /srv/app/main.py:3"):
            assert re.search(rf"^\s+\d+: 0x0 M=\d+ {re.escape(want)} s=0$", locations, re.M), \
                f"no location {want!r}:\n{locations}"
        # pprof's own line view: file:line of the hot line
        lines = go_pprof("-top", "-lines", "-nodecount=100", path)
        assert re.search(r"^\s*60\s+60(\.00)?%.*Worker\.run /srv/app/work\.py:41$", lines, re.M), lines

        t = json.loads(d.profctl("query", "--since", "2m", "--by", "line", "--format", "table", "--json",
                                 "--limit", "0").stdout)
        by_line = {r["name"]: (r["self"], r["total"]) for r in t["rows"]}
        assert by_line.get("Worker.run (work.py:41)") == (60, 60), by_line
        assert by_line.get("Worker.run (work.py:42)") == (30, 30), by_line
        assert by_line.get("<module> (main.py:3)") == (0, 100), by_line

        svg = os.path.join(WORK, "python.svg")
        d.profctl("query", "--since", "2m", "--format", "svg", "--output", svg)
        frames = {n: fill for n, _, _, fill, _ in svg_frames(parse_svg(svg))}
        r_, g_, b_ = (int(c) for c in frames["Worker.run"][4:-1].split(","))
        assert b_ > g_ > r_, f"Python frames are blue: {frames['Worker.run']}"
        r_, g_, b_ = (int(c) for c in frames["main"][4:-1].split(","))
        assert r_ > g_ and r_ > b_, f"the interpreter's native frames stay red: {frames['main']}"


# Java frames as the HotSpot walker's writer stores them (common/protocol.h):
# module the .java file ("[jvm]" for a stub), address and line the line,
# build_id "hotspot-" and a hash of one method.
JVM = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"


def javafr(name, source, line, fid):
    return {"name": name, "module": source, "build_id": f"hotspot-{fid:016x}", "file": source, "line": line,
            "address": line}


# one of the JVM's stubs: named, module "[jvm]", no file or line
JVM_STUB = {"name": "[jvm] StubRoutines (1)", "module": "[jvm]", "build_id": f"hotspot-{9:016x}", "address": 0}
JAVA_ROOT = [fr("thread_native_entry", JVM, build_id="cc33dd44", address=8192),
             JVM_STUB, javafr("hs.Worker.run", "Split.java", 120, 1)]
JAVA_STACKS = [
    (60, JAVA_ROOT + [javafr("hs.Split.tokenize", "Split.java", 60, 2)]),
    (30, JAVA_ROOT + [javafr("hs.Split.tokenize", "Split.java", 61, 2)]),
    (10, JAVA_ROOT + [javafr("hs.Split.checksum", "Split.java", 81, 3)]),
]


def test_java_frames_in_pprof_svg_and_by_line():
    d = Profd("--kinds", "none")
    spec = "".join(json.dumps({"ago_s": 30, "kind": "cpu", "pid": 400, "comm": "java", "exe": JVM, "uid": 0,
                               "value": v, "stack": st}) + "\n" for v, st in JAVA_STACKS)
    r = subprocess.run([binary("STOREGEN"), d.store], input=spec, capture_output=True, text=True)
    assert r.returncode == 0, f"storegen failed:\n{r.stderr}"
    with d:
        path = os.path.join(WORK, "java.pb.gz")
        d.profctl("query", "--since", "2m", "--format", "pprof", "--output", path)
        rows, total = table(d, "--since", "2m")
        assert total == 100 and rows == expected_functions([(v, 400, st) for v, st in JAVA_STACKS]), rows
        assert pprof_top(path, "samples") == rows, "pprof -top != profctl's table"
        raw = go_pprof("-raw", path)
        mappings = raw.split("Mappings\n", 1)[1]
        # libjvm's file and one [hotspot] mapping: no build-id of a method, no .java file
        assert "[hotspot]" in mappings and "hotspot-" not in mappings and ".java" not in mappings, mappings
        assert "[jvm]" not in mappings, mappings
        assert re.search(rf" {re.escape(JVM)} cc33dd44\b", mappings), mappings
        locations = raw.split("Locations\n", 1)[1].split("Mappings\n", 1)[0]
        for want in ("hs.Split.tokenize Split.java:60", "hs.Split.tokenize Split.java:61",
                     "hs.Split.checksum Split.java:81", "hs.Worker.run Split.java:120"):
            assert re.search(rf"^\s+\d+: 0x0 M=\d+ {re.escape(want)} s=0$", locations, re.M), \
                f"no location {want!r}:\n{locations}"
        lines = go_pprof("-top", "-lines", "-nodecount=100", path)
        assert re.search(r"^\s*60\s+60(\.00)?%.*hs\.Split\.tokenize Split\.java:60$", lines, re.M), lines

        t = json.loads(d.profctl("query", "--since", "2m", "--by", "line", "--format", "table", "--json",
                                 "--limit", "0").stdout)
        by_line = {r["name"]: (r["self"], r["total"]) for r in t["rows"]}
        assert by_line.get("hs.Split.tokenize (Split.java:60)") == (60, 60), by_line
        assert by_line.get("hs.Split.tokenize (Split.java:61)") == (30, 30), by_line
        assert by_line.get("hs.Worker.run (Split.java:120)") == (0, 100), by_line

        svg = os.path.join(WORK, "java.svg")
        d.profctl("query", "--since", "2m", "--format", "svg", "--output", svg)
        frames = {n: fill for n, _, _, fill, _ in svg_frames(parse_svg(svg))}
        for name in ("hs.Worker.run", "[jvm] StubRoutines (1)"):
            r_, g_, b_ = (int(c) for c in frames[name][4:-1].split(","))
            assert g_ > b_ > r_, f"Java frames are green: {name} {frames[name]}"
        r_, g_, b_ = (int(c) for c in frames["thread_native_entry"][4:-1].split(","))
        assert r_ > g_ and r_ > b_, f"the JVM's native frames stay red: {frames['thread_native_entry']}"


def chromium(*args, timeout=120):
    profile_dir = tempfile.mkdtemp(prefix="chromium-", dir=WORK)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", f"--user-data-dir={profile_dir}", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout)


def script_errors(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]


# Appended to a copy of the SVG: drives its script like a person would
# (type in the search box, click a frame, hover, reset) and leaves what it
# saw in an attribute that --dump-dom prints.
PROBE = """<script type="text/ecmascript"><![CDATA[
window.addEventListener("load", function () {
  var out = {}, errors = [];
  // the widest frame of that name: a short stack (a sample taken as main
  // began or returned) can hold another, narrower main beside the one
  // above the spin functions
  function frame(name) {
    var all = document.querySelectorAll("g.fr"), best = null, most = -1;
    for (var i = 0; i < all.length; i++) {
      if (all[i].querySelector("title").textContent.split("\\n")[0] !== name) continue;
      var w = Number(all[i].querySelector("rect").getAttribute("width"));
      if (w > most) { best = all[i]; most = w; }
    }
    if (!best) throw new Error("no frame " + name);
    return best;
  }
  function width(name) { return Number(frame(name).querySelector("rect").getAttribute("width")); }
  try {
    var input = document.getElementById("search");
    input.value = "^spin_";
    input.dispatchEvent(new Event("input"));
    out.matched = document.getElementById("matched").textContent;
    out.highlighted = frame("spin_gamma").querySelector("rect").getAttribute("fill");
    out.before = width("spin_alpha");
    frame("spin_alpha").querySelector("rect").dispatchEvent(new MouseEvent("click", {bubbles: true}));
    out.zoomed = width("spin_alpha");
    out.gammaHidden = frame("spin_gamma").style.display;
    out.mainDimmed = frame("main").getAttribute("class");
    frame("spin_alpha").querySelector("rect").dispatchEvent(
      new MouseEvent("mouseover", {bubbles: true, clientX: 300, clientY: 100}));
    out.details = document.getElementById("details").textContent;
    document.getElementById("reset").dispatchEvent(new MouseEvent("click", {bubbles: true}));
    out.after = width("spin_alpha");
  } catch (e) { errors.push(String(e)); }
  document.documentElement.setAttribute("data-probe", JSON.stringify({out: out, errors: errors}));
});
]]></script>
</svg>"""


def test_real_workload_svg_pprof_and_rendering():
    with Profd("--frequency", "997", "--interval", "2s") as d:
        w = subprocess.Popen([binary("CPU_SPLIT"), "3"], stdout=subprocess.PIPE, text=True)
        out, _ = w.communicate(timeout=120)
        assert w.returncode == 0, f"cpu_split exited {w.returncode}"
        pid = str(json.loads(out)["pid"])
        d.profctl("flush")
        window = ["--pid", pid, "--since", "5m"]

        svg = os.path.join(WORK, "cpu_split.svg")
        d.profctl("query", *window, "--format", "svg", "--output", svg)
        keep(svg)
        root = parse_svg(svg)
        names = {f[0] for f in svg_frames(root)}
        for fn in ("spin_alpha", "spin_beta", "spin_gamma", "main"):
            assert fn in names, f"{fn} is not in the flame graph: {sorted(names)[:40]}"
        rows, total = table(d, *window)
        hot = max(rows, key=lambda n: rows[n][1] if n.startswith("spin_") else -1)
        print(f"  {total} samples; hottest spin function {hot} ({100 * rows[hot][1] / total:.1f}%)")

        # pprof of the same answer: the same functions, and the time type
        pb = os.path.join(WORK, "cpu_split.pb.gz")
        d.profctl("query", *window, "--format", "pprof", "--output", pb)
        top = pprof_top(pb, "samples")
        assert top == rows, f"pprof -top {top}\n  != profctl's table {rows}"
        raw = go_pprof("-raw", pb)
        assert re.search(r"^samples/count cpu/nanoseconds\s*$", raw, re.M), raw[:400]
        period = 10**9 // 997
        assert re.search(rf"^Period: {period}$", raw, re.M), raw[:400]
        for count, ns in re.findall(r"^\s+(\d+)\s+(\d+): [\d ]+$", raw, re.M):
            assert int(ns) == int(count) * period, f"{ns} ns for {count} samples at {period} ns"

        if not CHROMIUM:
            print("SKIP (part): Chromium is not installed: the SVG was NOT rendered", file=sys.stderr)
            return
        png = os.path.join(WORK, "cpu_split.png")
        height = int(float(root.get("height")))
        r = chromium(f"--window-size=1200,{height}", f"--screenshot={png}", "file://" + svg)
        assert r.returncode == 0, f"chromium failed:\n{r.stderr[-3000:]}"
        assert not script_errors(r.stderr), f"script errors: {script_errors(r.stderr)}"
        with open(png, "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        assert int.from_bytes(head[16:20], "big") == 1200, "PNG width"
        assert os.path.getsize(png) > 5000, "PNG suspiciously small"
        keep(png)

        # the script works in the real file: search, zoom, tooltip, reset
        probe = os.path.join(WORK, "probe.svg")
        with open(svg) as f, open(probe, "w") as p:
            p.write(f.read().replace("</svg>\n", PROBE))
        r = chromium("--virtual-time-budget=5000", "--dump-dom", "file://" + probe)
        assert r.returncode == 0, f"chromium failed:\n{r.stderr[-3000:]}"
        assert not script_errors(r.stderr), f"script errors: {script_errors(r.stderr)}"
        m = re.search(r'data-probe="([^"]*)"', r.stdout)
        assert m, "the probe left no result:\n" + r.stdout[:2000]
        result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")
                            .replace("&lt;", "<").replace("&gt;", ">"))
        print(f"  in Chromium: {result}")
        assert not result["errors"], result["errors"]
        o = result["out"]
        spin_share = 100 * sum(t for n, (_, t) in rows.items() if n.startswith("spin_")) / total
        got = float(re.match(r"Matched: ([\d.]+)%", o["matched"]).group(1))
        assert abs(got - spin_share) < 0.01, f"search says {o['matched']}, table {spin_share:.2f}%"
        assert o["highlighted"] == "rgb(230,0,230)", o
        assert abs(o["zoomed"] - 1180) < 0.01 and o["before"] < 1180, o
        assert o["gammaHidden"] == "none" and "parent" in o["mainDimmed"], o
        assert o["details"].startswith("spin_alpha: "), o
        assert abs(o["after"] - o["before"]) < 0.01, o


# profd runs as root here, also serve-only; the last case loads BPF
require_root()
try:
    run_tests([test_pprof_top_equals_the_table_on_known_content,
               test_pprof_offcpu_is_nanoseconds_equal_to_the_table,
               test_svg_widths_are_the_tables_totals,
               test_diff_svg_colours_growth_red_and_shrinkage_blue,
               test_python_frames_in_pprof_svg_and_by_line,
               test_java_frames_in_pprof_svg_and_by_line,
               test_real_workload_svg_pprof_and_rendering])
finally:
    shutil.rmtree(WORK, ignore_errors=True)
