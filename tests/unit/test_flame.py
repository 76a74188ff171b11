#!/usr/bin/env python3
"""Specification of profctl's SVG flame graphs (client/flame.c) on answers
with known content, through tests/unit/export-driver: well-formed XML, one
frame per merged function path, widths exactly proportional to weight,
siblings in name order, colours by kind, escaping of hostile names, the
differential colouring. Usage: test_flame.py EXPORT_DRIVER"""
import json
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

DRIVER = sys.argv[1]
NS = {"svg": "http://www.w3.org/2000/svg"}
PAD = 10.0
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def frame(name, module="/usr/bin/app", **kw):
    f = {"name": name, "module": module, "kernel": False, "resolved": True}
    f.update(kw)
    return f


def answer(stacks, kind="cpu", unit="samples"):
    """profd's answer lines for stacks [(frames, value, group)]"""
    lines = []
    for frames, value, *group in stacks:
        line = {"type": "stack", "value": value, "frames": frames}
        if group:
            line["group"] = group[0]
        lines.append(json.dumps(line))
    total = sum(s[1] for s in stacks)
    lines.append(json.dumps({"type": "end", "kind": kind, "unit": unit, "stacks": len(stacks),
                             "total": total, "from_ns": 1763700000 * 10**9,
                             "to_ns": 1763700600 * 10**9}))
    return "\n".join(lines) + "\n"


def run(args, stdin):
    r = subprocess.run([DRIVER] + args, input=stdin.encode(), capture_output=True)
    if r.returncode != 0:
        sys.exit(f"export-driver {args} failed: {r.stderr.decode()}")
    return r.stdout


def parse(svg_bytes, label):
    """Well-formed XML or the test fails here; xmllint too when installed."""
    try:
        root = ET.fromstring(svg_bytes)
    except ET.ParseError as e:
        sys.exit(f"{label}: not well-formed XML: {e}")
    if shutil.which("xmllint"):
        with tempfile.NamedTemporaryFile(suffix=".svg") as t:
            t.write(svg_bytes)
            t.flush()
            r = subprocess.run(["xmllint", "--noout", t.name], capture_output=True)
            check(r.returncode == 0, f"{label}: xmllint: {r.stderr.decode()}")
    return root


def frames_of(root, unique=True):
    """{name: (x, y, width, fill, label, title, depth, offset, value)} of the drawn frames"""
    out = {}
    for g in root.find("svg:g[@id='frames']", NS).findall("svg:g", NS):
        rect = g.find("svg:rect", NS)
        title = g.find("svg:title", NS).text
        name = title.split("\n")[0]
        check(not unique or name not in out, f"frame {name!r} drawn once")
        out[name] = dict(x=float(rect.get("x")), y=float(rect.get("y")), w=float(rect.get("width")),
                         fill=rect.get("fill"), label=g.find("svg:text", NS).text or "",
                         title=title, d=int(g.get("data-d")), o=int(g.get("data-o")),
                         v=int(g.get("data-v")))
    return out


def rgb(fill):
    return tuple(int(c) for c in fill[4:-1].split(","))


def expected_layout(stacks):
    """The spec, independently: merge paths by name, siblings sorted by
    name (bytewise), offsets accumulate left to right. {name: (offset, value, depth)}"""
    tree = {}
    for frames, value, *_ in stacks:
        node = tree
        node.setdefault("all", [0, {}])[0] += value
        node = tree["all"][1]
        for f in frames:
            node.setdefault(f["name"], [0, {}])[0] += value
            node = node[f["name"]][1]
    out = {}

    def walk(children, offset, depth):
        for name in sorted(children, key=lambda s: s.encode()):
            value, sub = children[name]
            out[name] = (offset, value, depth)
            walk(sub, offset, depth + 1)
            offset += value
    walk(tree, 0, 0)
    return out


HOSTILE = "op<&>\"'\u0001\ufffe caf\u00e9"
STACKS = [
    ([frame("main"), frame("work"), frame("helper", inlined=True),
      frame("do_syscall_64", "[kernel.kallsyms]", kernel=True)], 50),
    ([frame("main"), frame("work")], 20),
    ([frame("main"), frame("jitfn", "[jit]", jit=True)], 10),
    ([frame("main"), frame("lib+0x10", "/usr/lib/lib.so", resolved=False)], 4),
    ([frame("main"), frame("tiny")], 1),
    ([frame("main"), frame(HOSTILE)], 15),
]
TOTAL = 100


def test_frames_are_sized_by_weight_in_name_order():
    root = parse(run(["svg"], answer(STACKS)), "flame")
    fr = frames_of(root)
    exp = expected_layout(STACKS)
    # the hostile name reaches the title with its bad characters replaced
    shown_hostile = "op<&>\"'?? caf\u00e9"
    exp[shown_hostile] = exp.pop(HOSTILE)
    check(set(fr) == set(exp), f"frames drawn {sorted(fr)} == {sorted(exp)}")
    check(len(fr) == 9, f"9 frames, got {len(fr)}")
    height = float(root.get("height"))
    avail = 1200 - 2 * PAD
    max_depth = max(d for _, _, d in exp.values())
    check(height == 76 + (max_depth + 1) * 16 + 30, f"height {height}")
    for name, (offset, value, depth) in exp.items():
        if name not in fr:
            continue
        f = fr[name]
        want_x = PAD + offset * avail / TOTAL
        want_w = value * avail / TOTAL
        check(abs(f["x"] - want_x) < 0.006, f"{name}: x {f['x']} == {want_x:.2f}")
        check(abs(f["w"] - want_w) < 0.006, f"{name}: width {f['w']} == {want_w:.2f}")
        check(f["d"] == depth and f["o"] == offset and f["v"] == value, f"{name}: data attributes")
        # flame: the root at the bottom, callees above
        want_y = height - 30 - (depth + 1) * 16
        check(abs(f["y"] - want_y) < 0.006, f"{name}: y {f['y']} == {want_y}")
    # the figures themselves, for one frame: work holds 70 of 100 samples
    check(fr["work"]["w"] == 826.0 and fr["work"]["x"] == 364.0, f"work at 364, 826 px: {fr['work']}")
    check(fr["work"]["title"].split("\n")[1] == "70 samples, 70.00% (self 20 samples, 20.00%)",
          f"work's title: {fr['work']['title']!r}")
    check(fr["all"]["title"].split("\n")[1] == "100 samples, 100.00%", "all's title")
    # labels: whole when they fit, none in a frame too narrow for 3 characters
    check(fr["jitfn"]["label"] == "jitfn", "jitfn labelled")
    check(fr["tiny"]["label"] == "", "tiny (11.8 px) unlabelled")
    # 47.2 px: room for 5 characters of 7.08 px after the 6 px margin
    check(fr["lib+0x10"]["label"] == "lib..", f"lib+0x10 cut: {fr['lib+0x10']['label']!r}")


def test_colours_follow_the_kind_of_code():
    fr = frames_of(parse(run(["svg"], answer(STACKS)), "flame"))
    r, g, b = rgb(fr["work"]["fill"])
    check(r > g and r > b, f"user code is red: {fr['work']['fill']}")
    r, g, b = rgb(fr["do_syscall_64"]["fill"])
    check(r > g > b, f"kernel is orange: {fr['do_syscall_64']['fill']}")
    r, g, b = rgb(fr["jitfn"]["fill"])
    check(g > r and g > b, f"JIT is green: {fr['jitfn']['fill']}")
    r, g, b = rgb(fr["helper"]["fill"])
    check(g > r and b > r, f"inlined is aqua: {fr['helper']['fill']}")
    r, g, b = rgb(fr["lib+0x10"]["fill"])
    check(r == g == b, f"unresolved is grey: {fr['lib+0x10']['fill']}")
    check("(kernel)" in fr["do_syscall_64"]["title"] and "(inlined)" in fr["helper"]["title"]
          and "(JIT)" in fr["jitfn"]["title"], "titles name the kind")


def py_frame(qualname, path, line):
    """a named CPython frame as profd answers it (common/protocol.h)"""
    return frame(qualname, path, build_id="python-0123456789abcdef", address=line, file=path, line=line)


def test_python_frames_have_a_colour_of_their_own():
    stacks = [([frame("main", "/usr/bin/python3.11"), py_frame("<module>", "/srv/app.py", 9),
                py_frame("Worker.run", "/srv/work.py", 41), frame("PyNumber_Add", "/usr/bin/python3.11")], 6),
              ([frame("main", "/usr/bin/python3.11"),
                frame("[python]+0x7f0012345678", "[python]", resolved=False, address=0x7f0012345678)], 2)]
    root = parse(run(["svg"], answer(stacks)), "python")
    fr = frames_of(root)
    for name in ("<module>", "Worker.run"):
        r, g, b = rgb(fr[name]["fill"])
        check(b > g > r, f"Python {name} is blue: {fr[name]['fill']}")
        check(fr[name]["title"].endswith("(Python)"), f"{name}'s title names the kind: {fr[name]['title']!r}")
    check("/srv/work.py (Python)" in fr["Worker.run"]["title"], "the title gives the .py file")
    r, g, b = rgb(fr["PyNumber_Add"]["fill"])
    check(r > g and r > b, f"the interpreter's C code stays red: {fr['PyNumber_Add']['fill']}")
    r, g, b = rgb(fr["[python]+0x7f0012345678"]["fill"])
    check(r == g == b, f"an unnamed Python frame is grey: {fr['[python]+0x7f0012345678']['fill']}")
    # the legend has the kind, in the colour drawn
    legend = root.find("svg:g[@id='legend']", NS)
    texts = [t.text for t in legend.findall("svg:text", NS)]
    rects = legend.findall("svg:rect", NS)
    check("Python" in texts, f"the legend shows Python: {texts}")
    if "Python" in texts:
        r, g, b = rgb(rects[texts.index("Python")].get("fill"))
        check(b > g > r, "the legend's Python is blue")
    # a Python frame and a native one of the same name and module stay apart
    both = [([frame("f", "/srv/a.py")], 1), ([py_frame("f", "/srv/a.py", 1)], 1)]
    fr = frames_of(parse(run(["svg"], answer(both)), "python-merge"), unique=False)
    check(fr["f"]["v"] == 1, "not merged with a native frame of the same name")


def java_frame(name, source, line, **kw):
    """a named HotSpot frame as profd answers it (common/protocol.h)"""
    return frame(name, source, build_id="hotspot-0123456789abcdef", address=line, file=source, line=line, **kw)


def test_java_frames_have_a_colour_of_their_own():
    jvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
    stacks = [([frame("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6"), frame("thread_native_entry", jvm),
                java_frame("[jvm] StubRoutines (1)", "[jvm]", 0), java_frame("hs.Worker.run", "Split.java", 120),
                java_frame("hs.Split.tokenize", "Split.java", 60),
                java_frame("hs.Split.scan", "Split.java", 66, inlined=True)], 6),
              ([frame("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                frame("[hotspot]+0x7f0012345678", "[hotspot]", resolved=False, address=0x7f0012345678)], 2)]
    root = parse(run(["svg"], answer(stacks)), "java")
    fr = frames_of(root)
    for name in ("[jvm] StubRoutines (1)", "hs.Worker.run", "hs.Split.tokenize"):
        r, g, b = rgb(fr[name]["fill"])
        check(g > b > r, f"Java {name} is green: {fr[name]['fill']}")
        check(fr[name]["title"].endswith("(Java)"), f"{name}'s title names the kind: {fr[name]['title']!r}")
    check("Split.java (Java)" in fr["hs.Split.tokenize"]["title"], "the title gives the .java file")
    r, g, b = rgb(fr["hs.Split.scan"]["fill"])
    check(g > r and b > r and "(inlined)" in fr["hs.Split.scan"]["title"],
          f"a method inlined by the JIT is aqua: {fr['hs.Split.scan']['fill']}")
    r, g, b = rgb(fr["thread_native_entry"]["fill"])
    check(r > g and r > b, f"the JVM's C++ stays red: {fr['thread_native_entry']['fill']}")
    r, g, b = rgb(fr["[hotspot]+0x7f0012345678"]["fill"])
    check(r == g == b, f"an unnamed Java frame is grey: {fr['[hotspot]+0x7f0012345678']['fill']}")
    # JIT's green and Java's are told apart: Java's is darker
    jit = frames_of(parse(run(["svg"], answer([([frame("jitfn", "[jit]", jit=True)], 1)])), "jit-vs-java"))
    check(sum(rgb(jit["jitfn"]["fill"])) > sum(rgb(fr["hs.Worker.run"]["fill"])), "Java is darker than JIT")
    legend = root.find("svg:g[@id='legend']", NS)
    texts = [t.text for t in legend.findall("svg:text", NS)]
    rects = legend.findall("svg:rect", NS)
    check("Java" in texts and "Python" in texts, f"the legend shows Java and Python: {texts}")
    if "Java" in texts:
        r, g, b = rgb(rects[texts.index("Java")].get("fill"))
        check(g > b > r, "the legend's Java is green")
    # a Java frame and a native one of the same name and module stay apart
    both = [([frame("f", "A.java")], 1), ([java_frame("f", "A.java", 1)], 1)]
    fr = frames_of(parse(run(["svg"], answer(both)), "java-merge"), unique=False)
    check(fr["f"]["v"] == 1, "not merged with a native frame of the same name")


def test_narrow_frames_are_left_out():
    # 110 px: 90 px for 100 samples, tiny's 0.9 px is under the 1 px minimum
    fr = frames_of(parse(run(["svg", "110", "1"], answer(STACKS)), "narrow"))
    check("tiny" not in fr and "lib+0x10" in fr, f"tiny left out, lib kept: {sorted(fr)}")
    check(abs(fr["lib+0x10"]["w"] - 3.6) < 0.006, f"lib+0x10 3.6 px wide: {fr['lib+0x10']['w']}")


def test_icicle_grows_down_and_title_is_escaped():
    root = parse(run(["icicle"], answer(STACKS)), "icicle")
    fr = frames_of(root)
    check(fr["all"]["y"] == 76 and fr["main"]["y"] == 92 and fr["do_syscall_64"]["y"] == 76 + 4 * 16,
          f"icicle rows from the top: {fr['all']['y']}, {fr['main']['y']}")
    title = root.find("svg:text[@id='title']", NS).text
    check(title == "icicle <&> \"test\"", f"title {title!r}")


def test_groups_become_root_frames():
    stacks = [([frame("main"), frame("a")], 3, "app-1"), ([frame("main"), frame("b")], 1, "app-2")]
    fr = frames_of(parse(run(["svg"], answer(stacks)), "groups"), unique=False)
    check(fr.get("app-1", {}).get("d") == 1 and fr.get("app-2", {}).get("d") == 1,
          f"groups at depth 1: {sorted(fr)}")
    # main appears under both groups: two frames of the same name
    exp = expected_layout([([frame("app-1")] + s[0], s[1]) for s in stacks[:1]])
    check(abs(fr["app-1"]["w"] - 3 * 1180 / 4) < 0.006, "app-1 holds 3 of 4")
    check(exp["a"][2] == fr["a"]["d"], "a under app-1;main")


def test_empty_answer_is_a_valid_image():
    root = parse(run(["svg"], answer([])), "empty")
    check(frames_of(root) == {}, "no frames")
    check(b"no samples" in ET.tostring(root), "says there are no samples")


def test_offcpu_values_are_times():
    stacks = [([frame("main"), frame("read")], 1500000000), ([frame("main")], 500000000)]
    fr = frames_of(parse(run(["svg"], answer(stacks, "offcpu", "ns")), "offcpu"))
    check(fr["main"]["title"].split("\n")[1].startswith("2.00 s, 100.00%"), f"{fr['main']['title']!r}")
    check(fr["read"]["title"].split("\n")[1] == "1.50 s, 75.00%", f"{fr['read']['title']!r}")


def test_diff_colours_by_normalised_self_share():
    base = [([frame("main"), frame("work")], 50), ([frame("main"), frame("other")], 50),
            ([frame("main"), frame("gone")], 100)]
    cur = [([frame("main"), frame("work")], 30), ([frame("main"), frame("other")], 10)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as b:
        b.write(answer(base))
        b.flush()
        fr = frames_of(parse(run(["diff", b.name], answer(cur)), "diff"))
    # widths from the current profile: 40 samples over 1180 px
    check(abs(fr["work"]["w"] - 30 * 1180 / 40) < 0.006, f"work width {fr['work']['w']}")
    check("gone" not in fr, "a path only in the baseline has no width")
    # work: 75% of now against 25% of then (+50 points, the largest change): full red;
    # other: 25% against 25%: white; main: no self either side: white
    check(rgb(fr["work"]["fill"]) == (250, 50, 50), f"work full red: {fr['work']['fill']}")
    check(rgb(fr["other"]["fill"]) == (250, 250, 250), f"other unchanged: {fr['other']['fill']}")
    check(rgb(fr["main"]["fill"]) == (250, 250, 250), f"main unchanged: {fr['main']['fill']}")
    check(fr["work"]["title"].split("\n")[1:3] == ["30 samples, 75.00%, baseline 25.00%",
                                                   "self 75.00%, baseline 25.00%: +50.00 points"],
          f"work's title: {fr['work']['title']!r}")

    # shrinkage is blue, scaled to the largest change
    cur2 = [([frame("main"), frame("work")], 10), ([frame("main"), frame("other")], 30)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as b:
        b.write(answer(base[:2]))
        b.flush()
        fr = frames_of(parse(run(["diff", b.name], answer(cur2)), "diff2"))
    check(rgb(fr["work"]["fill"]) == (50, 50, 250), f"work full blue: {fr['work']['fill']}")
    check(rgb(fr["other"]["fill"]) == (250, 50, 50), f"other full red: {fr['other']['fill']}")


def test_script_is_inline_and_has_the_controls():
    svg = run(["svg"], answer(STACKS))
    root = parse(svg, "controls")
    scripts = root.findall("svg:script", NS)
    check(len(scripts) == 1 and "function zoom" in scripts[0].text and "function search" in scripts[0].text,
          "one inline script with zoom and search")
    check(b"http://" not in svg.replace(b"http://www.w3.org/", b""), "no other network reference")
    check(root.find("svg:text[@id='reset']", NS) is not None, "a reset-zoom control")
    check(root.find(".//{http://www.w3.org/1999/xhtml}input[@id='search']") is not None, "a search box")
    check(root.find("svg:text[@id='matched']", NS) is not None, "a matched-share line")


def test_a_long_subtitle_wraps_inside_the_picture():
    """The quality summary of a profile with every reason runs far past a
    picture's width on one line (seen clipped at both edges in Chromium):
    it wraps at spaces into lines that fit, and the legend and the frames
    move down by the lines added."""
    trunc = ["no_table", "no_mapping", "unsupported", "read_fault", "depth", "fp_end", "cfa_stuck", "stack_lost"]
    unres = ["no_symbols", "no_file", "jit_without_map", "unknown_mapping", "python_no_runtime",
             "python_exited", "python_read_code", "python_not_code", "python_read_string", "python_bad_string"]
    lost = ["map_full", "stack_map_full", "user_stack_error", "kernel_stack_error", "ringbuf_full",
            "task_storage_full", "process_vanished", "store_write_failed", "switch_missed"]
    quality = {"partial": False, "total": 100000, "complete": 50000, "unknown": 7,
               "truncated": {k: 1000 + i for i, k in enumerate(trunc)}, "unresolved": 20000,
               "unresolved_by": {k: 1000 + i for i, k in enumerate(unres)},
               "lost": {k: 100000 + i for i, k in enumerate(lost)}}
    lines = answer(STACKS).splitlines()
    end = json.loads(lines[-1])
    end["quality"] = quality
    text = "\n".join(lines[:-1] + [json.dumps(end)]) + "\n"
    for width in (1200, 600, 300):
        root = parse(run(["svg", str(width)], text), f"long subtitle at {width}")
        sub = root.find("svg:text[@id='subtitle']", NS)
        spans = sub.findall("svg:tspan", NS)
        texts = [t.text or "" for t in spans]
        whole = " ".join(texts)
        room = (width - 2 * PAD) / (12 * 0.59)
        check(len(spans) >= 2, f"{width}: the summary wraps ({len(spans)} lines)")
        check(all(len(t) <= room for t in texts), f"{width}: every line fits {room:.0f} characters: "
              f"{[len(t) for t in texts]}")
        check(all(t == t.strip() and t for t in texts), f"{width}: lines break at spaces: {texts}")
        check(whole.startswith("cpu: 100 samples") and ("stack map full 100001" in whole or
                                                        width < 600 and whole.endswith("\u2026")),
              f"{width}: the whole summary, in order: {whole!r}")
        check(all(float(t.get("x")) == width / 2 for t in spans) and
              [int(t.get("dy")) for t in spans] == [0] + [15] * (len(spans) - 1),
              f"{width}: lines centred, one under the other")
        # the legend and the frames below the last line, as with one line
        extra = 15 * (len(spans) - 1)
        legend_y = min(float(r.get("y")) for r in root.find("svg:g[@id='legend']", NS).iter(f"{{{NS['svg']}}}rect"))
        check(legend_y == 54 + extra, f"{width}: legend at {legend_y}, expected {54 + extra}")
        # the title clear of the search box at the right (below 500 px there
        # is no room for both)
        title = root.find("svg:text[@id='title']", NS)
        tw = len(title.text) * 17 * 0.59
        left = float(title.get("x")) - (0 if "start" in (title.get("style") or "") else tw / 2)
        check(left >= PAD - 0.01 and left + tw <= width - PAD - 220 or width < 500,
              f"{width}: title spans {left:.0f}..{left + tw:.0f}, the search box starts at {width - PAD - 220}")
        # the legend's labels fit too, on more rows when the width needs
        legend = root.find("svg:g[@id='legend']", NS)
        labels = legend.findall("svg:text", NS)
        right = max(float(t.get("x")) + len(t.text) * 12 * 0.59 for t in labels)
        check(right <= width - PAD, f"{width}: the legend ends at {right:.0f} of {width}")
        rows = sorted({float(r.get("y")) for r in legend.findall("svg:rect", NS)})
        extra += 16 * (len(rows) - 1)
        fr = frames_of(root)
        top = min(f["y"] for f in fr.values())
        check(top >= 76 + extra and top >= rows[-1] + 16, f"{width}: frames start at {top}, below the header "
              f"{76 + extra} and the legend's last row {rows[-1]}")
    # a picture too narrow for the whole summary in 12 lines says it is cut
    root = parse(run(["svg", "200"], text), "long subtitle at 200")
    texts = [t.text or "" for t in root.find("svg:text[@id='subtitle']", NS).findall("svg:tspan", NS)]
    check(len(texts) == 12 and texts[-1].endswith("\u2026") and all(len(t) <= 180 / (12 * 0.59) for t in texts),
          f"200: 12 lines, the last cut with an ellipsis: {texts}")
    short = root.find("svg:text[@id='subtitle']", NS)
    one = parse(run(["svg"], answer(STACKS)), "short subtitle").find("svg:text[@id='subtitle']", NS)
    check(len(one.findall("svg:tspan", NS)) == 1, "a short subtitle stays one line")
    check(short is not None, "subtitle present")


for name, fn in list(globals().items()):
    if name.startswith("test_") and callable(fn):
        fn()
if failures:
    sys.exit(f"{failures} check(s) failed")
print("ok")
