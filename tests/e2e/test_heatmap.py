#!/usr/bin/env python3
"""End to end, profctl heatmap (issue 44): a workload burns CPU in 300 ms
bursts at wall-clock times it records; the heatmap profd's timeline gives
puts them where they were.

- JSON and text: the workload's samples are in the cells of the bursts'
  true seconds and rows (95%, +- one sampling period), every burst has a
  hot cell, the text's lines are the JSON's columns.
- The HTML page in headless Chromium (a screenshot is kept in the build
  directory, tests/e2e/heatmap-e2e.png): its hot cells are the bursts', and
  a range selected by its address (#range=FROM-TO) folds to exactly the
  stacks of `profctl query --from --to --format folded` over the same
  window (the page has each sample's millisecond, the range's ends are
  whole milliseconds, so the two select the same samples: no tolerance).
- The cap: --max-samples 10 draws 10 samples and says how many it left out.
- Bad input: --from after --to, a window before the timeline's oldest
  sample, --rows that do not divide a second, --kind wakeup, a raw
  timeline request with its window reversed: each a clear error and a
  non-zero exit, and profd answers after each."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import binary, exchange, Profd, require_root, rfc3339, run_tests

FREQ = 199                      # Hz: a period of 5 ms, ~60 samples a burst
PERIOD_NS = 10**9 // FREQ
BURSTS, BURST_MS = 6, 300
ROWS = 50                       # 20 ms a row
BUCKET_NS = 10**9 // ROWS
CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and os.path.exists(p)), None)


def in_a_burst(t0, t1, bursts):
    """Whether [t0, t1) overlaps a burst, widened by a sampling period."""
    return any(t0 <= b1 + PERIOD_NS and t1 > b0 - PERIOD_NS for b0, b1 in bursts)


def folded_sums(text):
    """Folded lines "frames N" summed by their frames (a stack's frames may
    read the same as another's: two addresses in one function)."""
    sums = {}
    for line in text.splitlines():
        if line.strip():
            frames, n = line.rsplit(" ", 1)
            sums[frames] = sums.get(frames, 0) + int(n)
    return sums


def chromium(work, *args):
    profile = tempfile.mkdtemp(prefix="chromium-", dir=work)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120)


def page_dom(work, url):
    """The page's DOM after its script ran, and the script errors."""
    r = chromium(work, "--window-size=1200,900", "--dump-dom", url)
    assert r.returncode == 0, f"chromium --dump-dom: {r.stderr[-2000:]}"
    errors = [l for l in r.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
    assert not errors, f"script errors: {errors}"
    return r.stdout


def check_json_and_text(d, pid, bursts, cpu_ns, window):
    hm = json.loads(d.profctl("heatmap", "--pid", str(pid), *window, "--rows", str(ROWS), "--format", "json").stdout)
    assert hm["rows"] == ROWS and hm["bucket_ms"] == 20 and hm["omitted"] == 0, hm
    assert hm["start_ns"] % 10**9 == 0 and hm["columns"] == len(hm["cells"]), hm
    total, inside, hot = 0, 0, set()
    for c, column in enumerate(hm["cells"]):
        assert len(column) == ROWS
        for r, v in enumerate(column):
            t0 = hm["start_ns"] + c * 10**9 + r * BUCKET_NS
            total += v
            if in_a_burst(t0, t0 + BUCKET_NS, bursts):
                inside += v
            if v:
                hot.add((c, r))
    print(f"  json: {hm['columns']} columns of {ROWS} rows, {total} samples, {inside} in the bursts' cells "
          f"({100.0 * inside / max(total, 1):.1f}%), hottest cell {hm['max']}")
    # as many samples as the CPU time the workload had (a loaded machine
    # gives it less than its wall time), and enough for 95% to mean something
    assert total == hm["total"] and total >= 0.85 * cpu_ns / 1e9 * FREQ, (total, cpu_ns)
    assert total >= 60, f"only {total} samples: the machine gave the workload too little CPU"
    assert inside >= 0.95 * total, f"only {inside} of {total} samples in the bursts' cells"
    # each burst lights cells of its own second and rows
    for b0, b1 in bursts:
        mid = [(t - hm["start_ns"]) for t in range(b0, b1, BUCKET_NS)]
        cells = {(t // 10**9, t % 10**9 // BUCKET_NS) for t in mid}
        lit = cells & hot
        print(f"  burst at {rfc3339(b0)}: {len(lit)} of its {len(cells)} cells hot")
        assert lit, f"burst {rfc3339(b0)}: none of its {len(cells)} cells hot"

    # the text: a line a second, its characters the rows, its total the column's
    r = d.profctl("heatmap", "--pid", str(pid), *window, "--rows", str(ROWS))
    text = r.stdout
    assert r.stderr.startswith("quality: "), r.stderr
    lines = [l for l in text.splitlines() if re.match(r"\d\d:\d\d:\d\d \|", l)]
    assert len(lines) == hm["columns"], text
    for c, line in enumerate(lines):
        hms = time.strftime("%H:%M:%S", time.gmtime(hm["start_ns"] // 10**9 + c))
        cells = line.split("|")[1]
        assert line.startswith(hms) and len(cells) == ROWS, line
        n = int(re.search(r"\| (\d+) samples?$", line).group(1)) if sum(hm["cells"][c]) else 0
        assert n == sum(hm["cells"][c]), (line, sum(hm["cells"][c]))
        for r, v in enumerate(hm["cells"][c]):
            assert (cells[r] != " ") == (v > 0), (line, r, v)
    print(f"  text: {len(lines)} lines, each its column's cells and total")
    return hm


def check_page(d, pid, bursts, window, hm, build_dir):
    if not CHROMIUM:
        raise AssertionError("no chromium to load the heatmap page in (setup.sh installs it)")
    work = tempfile.mkdtemp(prefix="profd-heatmap-e2e-")
    try:
        page = os.path.join(work, "heatmap.html")
        d.profctl("heatmap", "--pid", str(pid), *window, "--rows", str(ROWS), "--output", page)
        with open(page) as f:
            html = f.read()
        assert html.startswith("<!DOCTYPE html>") and "http://" not in html.replace(
            "http://www.w3.org/2000/svg", ""), "the page is not self-contained"

        # ranges: burst 3 with 40 ms either side, and bursts 2 to 4 with the
        # idle time between them; in ms after the first column's second
        ranges = [(bursts[2][0] - 40_000_000, bursts[2][1] + 40_000_000),
                  (bursts[1][0] - 40_000_000, bursts[3][1] + 40_000_000)]
        for lo_ns, hi_ns in ranges:
            lo, hi = (lo_ns - hm["start_ns"]) // 10**6, (hi_ns - hm["start_ns"]) // 10**6
            dom = page_dom(work, f"file://{page}#range={lo}-{hi}")
            selected = re.search(r'<body[^>]* data-selected="([^"]*)"', dom)
            assert selected and selected.group(1) == f"{lo}-{hi}", selected
            folded = re.search(r'<pre id="folded">(.*?)</pre>', dom, re.S).group(1)
            folded = folded.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
            page_sums = folded_sums(folded)
            # the same window: whole ms from lo, up to but not at hi
            start, end = hm["start_ns"] + lo * 10**6, hm["start_ns"] + hi * 10**6 - 1
            q = d.profctl("query", "--pid", str(pid), "--from", rfc3339(start), "--to", rfc3339(end),
                          "--format", "folded")
            query_sums = folded_sums(q.stdout)
            qj = d.query_json("--pid", str(pid), "--from", rfc3339(start), "--to", rfc3339(end))
            print(f"  range {lo}-{hi} ms: the page folds {sum(page_sums.values())} samples in "
                  f"{len(page_sums)} stacks, query {sum(query_sums.values())} in {len(query_sums)} "
                  f"(timeline {qj.get('timeline')})")
            assert qj.get("timeline") is True, qj.get("timeline")
            assert sum(page_sums.values()) >= 5, page_sums
            assert page_sums == query_sums, f"page {page_sums}\nquery {query_sums}"
            burst = sum(n for k, n in page_sums.items() if "burst_spin" in k)
            assert burst >= 0.95 * sum(page_sums.values()), page_sums
            frames = re.findall(r'<div class="frame" title="([^"]*)"', dom)
            assert any(f.startswith("burst_spin (") for f in frames), frames

        # the hot cells the page draws are the bursts'
        cells = [(int(t), int(v)) for t, v in re.findall(r'<rect [^>]*data-t="(\d+)" data-v="(\d+)"', html)]
        drawn = sum(v for _, v in cells)
        inside = sum(v for t, v in cells if in_a_burst(hm["start_ns"] + t * 10**6,
                                                          hm["start_ns"] + t * 10**6 + BUCKET_NS, bursts))
        print(f"  the page draws {len(cells)} cells, {inside} of {drawn} samples in the bursts' cells")
        assert drawn == hm["total"] and inside >= 0.95 * drawn, (inside, drawn)

        # a screenshot with burst 3 selected, for a person to look at
        lo, hi = (ranges[0][0] - hm["start_ns"]) // 10**6, (ranges[0][1] - hm["start_ns"]) // 10**6
        png = os.path.join(work, "heatmap.png")
        r = chromium(work, "--window-size=1200,900", f"--screenshot={png}", f"file://{page}#range={lo}-{hi}")
        assert r.returncode == 0 and os.path.getsize(png) > 10000, f"screenshot: {r.stderr[-2000:]}"
        os.makedirs(build_dir, exist_ok=True)
        shutil.copy(png, os.path.join(build_dir, "heatmap-e2e.png"))
        shutil.copy(page, os.path.join(build_dir, "heatmap-e2e.html"))
        print(f"  screenshot: {os.path.join(build_dir, 'heatmap-e2e.png')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_bad_input(d, pid, window):
    def refused(args, code, message):
        r = d.profctl("heatmap", *args, check=False)
        print(f"  heatmap {' '.join(args)}: exit {r.returncode}: {r.stderr.strip().splitlines()[0]}")
        assert r.returncode == code and message in r.stderr, (r.returncode, r.stderr)
        assert r.stdout == "", r.stdout
        # profd still answers
        assert json.loads(d.profctl("status", "--json").stdout)["timeline"]["blocks"] > 0

    oldest = json.loads(d.profctl("status", "--json").stdout)["timeline"]["oldest_ns"]
    refused(["--from", window[3], "--to", window[1]], 2, "is later than --to")
    refused(["--from", rfc3339(oldest - 60 * 10**9), "--to", rfc3339(oldest + 10**9)], 1,
            "before the oldest sample the timeline holds")
    refused(["--rows", "7"], 2, "--rows '7' is not a number of rows per second")
    refused(["--rows", "50x"], 2, "--rows '50x' is not a number of rows per second")
    refused(["--kind", "wakeup"], 2, "wakeups do not keep their times")
    refused(["--format", "png"], 2, "--format 'png' is not known")
    # profd itself refuses what profctl would have caught
    lines = exchange(d.socket, [json.dumps({"op": "timeline", "from": window[3], "to": window[1]}).encode(),
                                json.dumps({"op": "timeline", "kind": "wakeup"}).encode(),
                                json.dumps({"op": "status"}).encode()])
    print(f"  raw requests: {[l.get('error', l['type']) for l in lines]}")
    assert lines[0]["type"] == "error" and "is before 'from'" in lines[0]["error"], lines[0]
    assert lines[1]["type"] == "error" and "wakeups do not keep their times" in lines[1]["error"], lines[1]
    assert lines[2]["type"] == "status", lines[2]

    # the cap: the first samples drawn, the rest counted and said
    r = d.profctl("heatmap", "--pid", str(pid), *window, "--json", "--max-samples", "10")
    capped = json.loads(r.stdout)
    print(f"  --max-samples 10: total {capped['total']}, omitted {capped['omitted']}; {r.stderr.strip()}")
    assert capped["total"] == 10 and capped["omitted"] > 0, capped
    assert "are not drawn" in r.stderr and f"note: {capped['omitted']} samples" in r.stderr, r.stderr


def test_heatmap_shows_the_bursts_where_they_were():
    build_dir = os.path.join(os.environ.get("PROFD_BUILD_ROOT", tempfile.gettempdir()), "tests", "e2e")
    with Profd("--frequency", str(FREQ), "--interval", "2s") as d:
        w = subprocess.run([binary("BURSTS"), str(BURSTS), str(BURST_MS)], capture_output=True, text=True,
                           timeout=60)
        assert w.returncode == 0, f"bursts exited {w.returncode}"
        truth = json.loads(w.stdout)
        d.profctl("flush")
        bursts = truth["bursts"]
        # from half a second before the first burst, or the timeline's
        # start if profd started later
        oldest = json.loads(d.profctl("status", "--json").stdout)["timeline"]["oldest_ns"]
        assert oldest <= bursts[0][0], (oldest, bursts[0][0])
        window = ["--from", rfc3339(max(bursts[0][0] - 500_000_000, oldest)),
                  "--to", rfc3339(bursts[-1][1] + 500_000_000)]
        hm = check_json_and_text(d, truth["pid"], bursts, truth["cpu_ns"], window)
        check_page(d, truth["pid"], bursts, window, hm, build_dir)
        check_bad_input(d, truth["pid"], window)


if __name__ == "__main__":
    require_root()
    run_tests([test_heatmap_shows_the_bursts_where_they_were])
