#!/usr/bin/env python3
"""The heatmap page (client/heatmap.c, heatmap.js) in a real browser:
test-heatmap writes a page of known content (a 300 ms burst of main;burst
from 1.300 s after its first column, main;idle_loop every 100 ms, 400 ms
of blocked time in main;wait from 2.200 s), and headless Chromium loads it.

- A range in the address (#range=1300-1600) selects the burst: the page's
  folded stacks are exactly the burst's 30 samples and the 3 idle ones,
  and its flame graph has a frame per function with those widths.
- A drag with the mouse from the burst's first cell to its last selects
  the same range and the same stacks.
- A range over part of a blocked span counts the part of it it holds.
- A capture's raise (issue 44): on a page of samples taken at 499 Hz
  counted at 49, each range folds to exactly what test-heatmap's C
  (heatmap_range_weigh, the daemon's rounding) gives it, ties included.
- No script error; a screenshot is kept for a person to look at.

Usage: test_heatmap_page.py TEST_HEATMAP (77: no Chromium)"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HEATMAP = sys.argv[1]
CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and os.path.exists(p)), None)
failures = 0

# Appended to a copy of the page: presses the mouse on the cell of 1.300 s
# and releases it on the cell of 1.580 s, as a person drags.
DRAG = """<script>
window.addEventListener("load", function () {
  var box = document.getElementById("grid-frame").getBoundingClientRect();
  var grid = document.getElementById("grid");
  var columns = Number(grid.getAttribute("data-columns")), rows = Number(grid.getAttribute("data-rows"));
  function at(type, column, row) {
    grid.dispatchEvent(new MouseEvent(type, {bubbles: true, clientX: box.left + (column + 0.5) * box.width / columns,
                                             clientY: box.top + (row + 0.5) * box.height / rows}));
  }
  at("mousedown", 1, 15);
  at("mousemove", 1, 20);
  at("mouseup", 1, 29);
});
</script>
"""


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def chromium(work, *args):
    profile = tempfile.mkdtemp(prefix="chromium-", dir=work)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120)


def script_errors(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]


def page_state(work, url):
    r = chromium(work, "--window-size=1200,900", "--dump-dom", url)
    check(r.returncode == 0, f"chromium --dump-dom {url}: {r.stderr[-2000:]}")
    check(not script_errors(r.stderr), f"script errors on {url}: {script_errors(r.stderr)}")
    folded = re.search(r'<pre id="folded">(.*?)</pre>', r.stdout, re.S)
    selected = re.search(r'<body[^>]* data-selected="([^"]*)"', r.stdout)
    frames = re.findall(r'<div class="frame" title="([^"]*)"', r.stdout)
    return (folded.group(1) if folded else None, selected.group(1) if selected else None, frames)


def main():
    if not CHROMIUM:
        print("SKIP: no chromium to load the heatmap page in; the page was NOT checked", file=sys.stderr)
        return 77
    work = tempfile.mkdtemp(prefix="profd-heatmap-page-")
    try:
        r = subprocess.run([HEATMAP, work], capture_output=True, text=True)
        check(r.returncode == 0, f"test-heatmap {work}: {r.stderr}")
        page = os.path.join(work, "heatmap.html")
        burst = "main;burst 30\nmain;idle_loop 3"

        folded, selected, frames = page_state(work, f"file://{page}#range=1300-1600")
        check(folded == burst, f"#range=1300-1600 folds to the burst: {folded!r}")
        check(selected == "1300-1600", f"the page says what it selected: {selected!r}")
        check(frames == ["all (33, 100.00%)", "main (33, 100.00%)", "burst (30, 90.91%)", "idle_loop (3, 9.09%)"],
              f"the range's flame graph: {frames}")

        with open(page) as f:
            html = f.read()
        dragged = os.path.join(work, "dragged.html")
        with open(dragged, "w") as f:
            f.write(html.replace("</body>", DRAG + "</body>"))
        folded, selected, _ = page_state(work, f"file://{dragged}")
        check(selected == "1300-1600", f"a drag from the cell of 1.300 s to that of 1.580 s selects 1300-1600: {selected!r}")
        check(folded == burst, f"the drag folds to the burst: {folded!r}")

        folded, _, _ = page_state(work, f"file://{page}#range=2300-2500")
        check(folded == "main;idle_loop 2\nmain;wait? 200000000",
              f"half the blocked span's 400 ms is in 2300-2500: {folded!r}")

        with open(os.path.join(work, "heatmap-raised.json")) as f:
            expected = json.load(f)
        check(expected.get("2400-2600") == "main;r0 1", f"six tied 0.1 samples round to one, the first: {expected}")
        # 49 base samples, and the raised second's 399 + 100 as 39.2 + 9.8
        check(expected.get("0-3000") == "main;burst 89\nmain;idle_loop 10",
              f"a raised second counts about 49, not 499: {expected}")
        for rng, want in sorted(expected.items()):
            folded, selected, _ = page_state(work, f"file://{work}/heatmap-raised.html#range={rng}")
            check(folded == want, f"raised page #range={rng} folds as C weighs it: {folded!r} != {want!r}")

        png = os.path.join(work, "heatmap.png")
        r = chromium(work, "--window-size=1200,800", f"--screenshot={png}", f"file://{page}#range=1300-1600")
        check(r.returncode == 0 and os.path.getsize(png) > 10000, f"screenshot: {r.stderr[-2000:]}")
        # beside test-heatmap in the build directory, for a person to look at
        shutil.copy(png, os.path.join(os.path.dirname(os.path.abspath(HEATMAP)), "heatmap-page.png"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{failures} check(s) failed", file=sys.stderr)
        return 1
    print("ok - the heatmap page selects by address and by drag, and folds what it selected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
