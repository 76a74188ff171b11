#!/usr/bin/env python3
"""End to end, issue 41 (Python functions in every stack): the real profd
samples CPython ground-truth workloads (tests/workloads/python/), and
profctl's stacks must carry their Python frames, named after the processes
are gone: a Python frame is a frame whose build_id starts with "python-"
(module = co_filename, name = co_qualname, file and line from the code's
line table), in place of the interpreter loop's native frame
(_PyEval_EvalFrameDefault), between the native frames around it.

- Ground truth, on Debian's python3 (3.11) and on the second 3.11 build
  (pyenv's, `python3` on PATH here; skipped, loudly, where there is none):
  py_split.py spends 50/30/20 of its CPU in three functions under distinct
  chains. >= 95% of the samples of its measured part have the exact
  Python chain (and no native eval-loop frame left); each function's
  share is within 2 binomial standard errors of the truth; the hot
  function's commonest line is its hot line (file:line), in the JSON
  stacks and in the table by line; folded stacks have the chain.
- Python, C, Python: py_callback.py sorts with libc's qsort through ctypes
  and a Python comparison; the callback's samples interleave
  <module>;main;sort_numbers, native frames with qsort's, then
  compare(;weight), in that order.
- Off-CPU: py_offcpu.py's threads block in time.sleep, a pipe read and a
  threading.Lock; each function's blocked time is within 2% of the truth,
  >= 95% of it with the thread's whole Python chain.
- Threads: py_threads.py's two threads burn CPU under different Python
  stacks; each thread's samples (--tid) have its own chain, never the
  other's.
- Short-lived: eight runs of py_short.py, 200 ms of CPU each, queried after
  they exit: >= 90% of their samples that ran Python are named.
- Hostile: py_hostile.py corrupts its own frame chain (a loop, garbage, an
  unmapped address) while profiled: profd keeps answering, every stack is
  bounded, the walk's end is counted in `profctl status`, the frames inside
  the corruption keep their names, and the process is named again once its
  chain is repaired.

profd runs at its defaults (private socket and store, as every e2e test)
except the sampling frequency: 997 Hz, ~1000 samples per CPU second. Each
workload first sleeps WARMUP (off-CPU, not measured) so that profd has
loaded the new process and found its interpreter before the measured part:
the moments before are test_unwind's first-sight business, not this file's.
Run one test: PROFD=build/daemon/profd PROFCTL=build/client/profctl
PY_WORKLOADS=tests/workloads/python python3 tests/e2e/test_python.py NAME...
(as root), or meson test -C build python --test-args NAME."""
import collections
import glob
import json
import os
import re
import select
import shutil
import subprocess
import time

from harness import (MAX_FRAMES, HeldWorkload, SharedProfd, binary, binomial_tolerance, folded_stacks,
                     run_json, run_selected, sanitized, user_names)

FREQUENCY = "997"
DEBIAN_PYTHON = "/usr/bin/python3"
COMPLETE_SHARE = 0.95      # the bar for whole Python chains
SHORT_LIVED_SHARE = 0.90   # the bar for a 200 ms script
OFFCPU_TOLERANCE = 0.02    # the bar for blocked time per function
# Sleep before the measured part: profd loads a new process (its exec
# event, its maps, the interpreter's tables, built once per file) in well
# under a second here; under AddressSanitizer the daemon is several times
# slower at it.
WARMUP = 2.0 if sanitized() else 1.0
FLUSH_TIMEOUT = 240  # a drain stored while the machine is three times over its cores
EVAL_LOOP = "_PyEval_EvalFrameDefault"

shared_profd = SharedProfd("--frequency", FREQUENCY)


def flush(d):
    """profctl flush: stores what profd has drained; says how long a slow
    one took (the wall time of this file goes there on a busy machine)."""
    t0 = time.monotonic()
    d.profctl("flush", timeout=FLUSH_TIMEOUT)
    if time.monotonic() - t0 > 5:
        print(f"  (flush took {time.monotonic() - t0:.1f} s)")


def workload(name):
    return os.path.join(os.path.abspath(binary("PY_WORKLOADS")), name)


def python(interpreter, script, *args):
    """argv running a workload script: -B, no bytecode written beside it."""
    return [interpreter, "-B", workload(script)] + [str(a) for a in args]


# --- reading Python frames out of `profctl query --json` -----------------

def is_python(frame):
    """A Python pseudo-frame: named ones carry build_id "python-<hash>",
    unnamed ones module "[python]" (how the store keeps a Python frame,
    issue 41)."""
    return (frame.get("build_id") or "").startswith("python-") or frame.get("module") == "[python]"


def python_name(frame):
    """A Python frame's qualified name; "?" when profd could not name it."""
    if frame.get("module") == "[python]" or frame.get("resolved") is False:
        return "?"
    return frame["name"]


def python_chain(frames):
    """The Python frames' names of a stack, outermost first."""
    return [python_name(f) for f in frames if not f.get("kernel") and is_python(f)]


def runs(frames):
    """A stack's user frames as runs of one kind, outermost first:
    [("python", [qualname, ...]), ("native", [name, ...]), ...]."""
    out = []
    for f in frames:
        if f.get("kernel"):
            continue
        kind = "python" if is_python(f) else "native"
        name = python_name(f) if kind == "python" else f["name"]
        if out and out[-1][0] == kind:
            out[-1][1].append(name)
        else:
            out.append((kind, [name]))
    return out


def has_eval_loop(frames):
    """Is the interpreter loop still a native frame of the stack (a
    hand-over to the Python walker that did not happen)?"""
    return EVAL_LOOP in user_names(frames)


def commonest(result, key, k=4):
    """For failure messages: the k heaviest (value, key(stack)) of an answer."""
    c = collections.Counter()
    for st in result["stacks"]:
        c[key(st["frames"])] += st["value"]
    return [(v, s) for s, v in c.most_common(k)]


def python_summary(frames):
    """A stack in a line: its Python chain, or its innermost native frames
    when it has none."""
    chain = python_chain(frames)
    if chain:
        return "py:" + ";".join(chain) + (" +eval-loop" if has_eval_loop(frames) else "")
    return "native:..." + ";".join(user_names(frames)[-3:])


def status_counters(d):
    """Every number of `profctl status --json`, by its dotted path."""
    out = {}

    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else k, x)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[prefix] = v
    walk("", json.loads(d.profctl("status", "--json").stdout))
    return out


# --- 1. ground truth: whole chains, shares, the hot line -----------------

SPLIT_SECONDS = 2.0  # of CPU: ~2000 samples at 997 Hz
SPLIT_PREFIX = ["<module>", "main", "run"]
SPLIT_CHAINS = {
    "Parser.tokenize": SPLIT_PREFIX + ["Parser.parse", "Parser.tokenize"],
    "render.<locals>.paint": SPLIT_PREFIX + ["render", "render.<locals>.paint"],
    "checksum": SPLIT_PREFIX + ["compress", "checksum"],
}


def hot_lines(script):
    """{qualname: line} of the lines a workload marks `# hot line: QUALNAME`."""
    out = {}
    with open(script) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"# hot line: (\S+)\s*$", text)
            if m:
                out[m.group(1)] = number
    return out


def split_chain(chain):
    """Is a Python chain a true one of py_split.py while it runs run: a
    prefix of one of its chains, at least <module>;main;run?"""
    return len(chain) >= len(SPLIT_PREFIX) and any(c[:len(chain)] == chain for c in SPLIT_CHAINS.values())


def check_split(interpreter, label):
    script = workload("py_split.py")
    with shared_profd as d:
        with HeldWorkload(*python(interpreter, "py_split.py", SPLIT_SECONDS, WARMUP)) as truth:
            flush(d)
            pid = str(truth["pid"])
            result = d.query_json("--pid", pid, "--since", "5m")
            folded = folded_stacks(d.profctl("query", "--pid", pid, "--since", "5m", "--folded").stdout)
            by_line = json.loads(d.profctl("query", "--pid", pid, "--since", "5m", "--by", "line", "--children",
                                           "--limit", "0", "--format", "table", "--json").stdout)
            status = d.profctl("status").stdout
    # profctl status says the walker ran: "python:    N stacks handed over ..."
    handed = re.search(r"^python: +(\d+) stacks handed over to the Python walker, (\d+) Python frames", status, re.M)
    assert handed and int(handed.group(1)) > 0 and int(handed.group(2)) > 0, \
        f"profctl status shows no Python walks:\n{status}"
    n = result["total"]
    # samples of the measured part: the interpreter's start-up, imports
    # and warm-up (tens of ms of CPU) run no chain of run's
    n_run = n * truth["run_cpu_ns"] / truth["process_cpu_ns"]
    whole = 0
    by_leaf = {f: 0 for f in SPLIT_CHAINS}
    lines = {f: collections.Counter() for f in SPLIT_CHAINS}
    for st in result["stacks"]:
        chain = python_chain(st["frames"])
        if not split_chain(chain) or has_eval_loop(st["frames"]):
            continue
        whole += st["value"]
        for f, c in SPLIT_CHAINS.items():
            if chain == c:
                by_leaf[f] += st["value"]
                leaf = [fr for fr in st["frames"] if not fr.get("kernel") and is_python(fr)][-1]
                lines[f][(leaf.get("file"), leaf.get("line"))] += st["value"]
    print(f"  {label}: {whole}/{n} samples have a whole chain of run (expected {n_run:.0f} in run: "
          f"{100.0 * whole / max(n_run, 1):.1f}%); commonest stacks: {commonest(result, python_summary)}")
    assert n >= 0.5 * SPLIT_SECONDS * int(FREQUENCY), f"{label}: only {n} samples of py_split.py"
    failures = []
    for f in SPLIT_CHAINS:
        p = truth["functions"][f] / truth["process_cpu_ns"]
        got = by_leaf[f] / n
        tol = binomial_tolerance(p, n)
        print(f"  {label} {f}: truth {100 * p:.2f}%  profd {100 * got:.2f}%  (tolerance +-{100 * tol:.2f} pp, n={n})")
        if abs(got - p) > tol:
            failures.append(f"{f} {100 * got:.2f}% vs truth {100 * p:.2f}% (+-{100 * tol:.2f} pp)")
    # the hot function: the most CPU; its hot line: the line it spins on
    hot = max(truth["functions"], key=truth["functions"].get)
    want = (script, hot_lines(script)[hot])
    top = lines[hot].most_common(3)
    print(f"  {label} {hot}: hot line {want[0]}:{want[1]}; profd's commonest (file, line): {top}")
    assert whole >= COMPLETE_SHARE * n_run, \
        f"{label}: only {100.0 * whole / max(n_run, 1):.1f}% of the samples of py_split.py's run have the " \
        f"whole Python chain (need {100 * COMPLETE_SHARE:.0f}%): {whole} of {n_run:.0f}; commonest stacks: " \
        f"{commonest(result, python_summary)}"
    assert not failures, f"{label}: shares off the truth: {'; '.join(failures)}"
    assert top and top[0][0] == want, \
        f"{label}: {hot}'s commonest line is {top[0][0] if top else None}, not its hot line {want}"
    # the same through the views: folded stacks name the chain, and the
    # table by line (TOTAL: the Python frame is rarely the leaf) puts the
    # hot function's time on its hot line
    chain = ";".join(SPLIT_CHAINS[hot])
    in_folded = sum(w for names, w in folded if chain in ";".join(names))
    rows = sorted((r for r in by_line["rows"] if r["name"].startswith(hot + " (")), key=lambda r: -r["total"])
    print(f"  {label}: folded lines through {chain}: {in_folded} samples; by line: "
          f"{[(r['name'], r['total']) for r in rows[:3]]}")
    assert in_folded >= by_leaf[hot], f"{label}: folded stacks have {chain} in {in_folded} samples, " \
        f"the JSON stacks in {by_leaf[hot]}"
    assert rows and rows[0]["name"].endswith(f"{os.path.basename(script)}:{want[1]})"), \
        f"{label}: the table by line's first row of {hot} is {rows[0]['name'] if rows else None}, " \
        f"not its hot line {want[1]}"


def second_python311():
    """The other CPython 3.11 build (pyenv's here): `python3` on PATH, or a
    pyenv 3.11 install, that is not Debian's; None when there is none."""
    candidates = [shutil.which("python3")]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(root, "versions", "3.11*", "bin", "python3")))
    debian = os.path.realpath(DEBIAN_PYTHON)
    for c in filter(None, candidates):
        try:
            # the executable it really runs (a pyenv shim is a shell script)
            r = subprocess.run([c, "-c", "import sys; print(sys.executable); print(sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        out = r.stdout.split("\n")
        if r.returncode == 0 and len(out) >= 2 and out[1] == "(3, 11)" and os.path.realpath(out[0]) != debian:
            return out[0]
    return None


def test_ground_truth_on_debian_python():
    assert os.path.exists(DEBIAN_PYTHON), f"{DEBIAN_PYTHON} is missing (python3.11 is a build dependency)"
    check_split(DEBIAN_PYTHON, "debian python3")


def test_ground_truth_on_second_python311_build():
    interpreter = second_python311()
    if interpreter is None:
        print("  SKIPPED: no second CPython 3.11 build (pyenv's python3) on this machine; "
              "only Debian's was measured")
        return
    check_split(interpreter, f"second 3.11 ({interpreter})")


# --- 2. Python, C, Python --------------------------------------------------

CALLBACK_SECONDS = 1.5
CALLBACK_OUTER = ["<module>", "main", "sort_numbers"]
CALLBACK_INNER = (["compare"], ["compare", "weight"])
QSORT = re.compile(r"qsort|msort_with_tmp")


def python_runs(frames):
    """runs() from the first Python frame on: the native frames from the
    thread's start to the interpreter's first loop left out."""
    r = runs(frames)
    return r[1:] if r and r[0][0] == "native" else r


def interleaved(frames):
    """Python <module>;main;sort_numbers, then native frames among which
    qsort's, then Python compare(;weight), then native frames only (none
    of them the interpreter's loop)."""
    r = python_runs(frames)
    return (not has_eval_loop(frames) and len(r) in (3, 4) and r[0] == ("python", CALLBACK_OUTER)
            and r[1][0] == "native" and any(QSORT.search(n) for n in r[1][1])
            and r[2][0] == "python" and r[2][1] in CALLBACK_INNER)


def test_c_callback_interleaves_python_c_python():
    with shared_profd as d:
        with HeldWorkload(*python(DEBIAN_PYTHON, "py_callback.py", CALLBACK_SECONDS, WARMUP)) as truth:
            flush(d)
            result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
    n = result["total"]
    n_sort = n * truth["sort_cpu_ns"] / truth["process_cpu_ns"]
    in_qsort = ok_outer = inter = 0
    for st in result["stacks"]:
        names = user_names(st["frames"])
        if not any(QSORT.search(x) for x in names):
            continue
        in_qsort += st["value"]
        # outside the callback too, qsort's caller is sort_numbers' chain
        if python_runs(st["frames"])[:1] == [("python", CALLBACK_OUTER)] and not has_eval_loop(st["frames"]):
            ok_outer += st["value"]
        if interleaved(st["frames"]):
            inter += st["value"]
    shape = lambda frames: " | ".join(f"{k}:{';'.join(v) if k == 'python' else '...' + v[-1]}"
                                      for k, v in runs(frames))
    print(f"  py_callback: {n} samples, {n_sort:.0f} expected in the sorts; {in_qsort} through qsort, "
          f"{ok_outer} of them under {';'.join(CALLBACK_OUTER)}, {inter} interleaved Python|C|Python; "
          f"commonest shapes: {commonest(result, shape)}")
    assert n >= 0.5 * CALLBACK_SECONDS * int(FREQUENCY), f"only {n} samples of py_callback.py"
    # the comparison takes ~90% of a sort's CPU (the rest: qsort, ctypes'
    # and libffi's glue, making the array)
    assert inter >= 0.75 * n_sort, \
        f"only {inter} samples interleave Python {';'.join(CALLBACK_OUTER)} | native qsort | Python compare, " \
        f"of {n_sort:.0f} in the sorts (need 75%)"
    assert ok_outer >= COMPLETE_SHARE * in_qsort, \
        f"only {ok_outer} of {in_qsort} samples through qsort have {';'.join(CALLBACK_OUTER)} as its caller"


# --- 3. off-CPU ------------------------------------------------------------

OFFCPU_SECONDS = 2.0  # of blocking per function, in rounds of 200 ms


def measure_blocked_functions(d):
    """One run: the failures (empty if none), the switch-ins profd missed
    meanwhile, and whether every function got at least half its time (so
    that lost blocks may explain a failure; a walker that names nothing
    is not worth a second run)."""
    missed0 = status_counters(d).get("drops.switch_missed", 0)
    with HeldWorkload(*python(DEBIAN_PYTHON, "py_offcpu.py", OFFCPU_SECONDS, WARMUP)) as truth:
        flush(d)
        result = d.query_json("--kind", "offcpu", "--pid", str(truth["pid"]), "--since", "5m")
    missed = status_counters(d).get("drops.switch_missed", 0) - missed0
    failures = []
    attributed = True
    for f, want in truth["functions"].items():
        thread = truth["threads"][f]
        have = whole = 0
        for st in result["stacks"]:
            chain = python_chain(st["frames"])
            if f not in chain:
                continue
            have += st["value"]
            # Thread._bootstrap ... thread function, the function: the
            # blocking call itself is C (time.sleep, os.read, acquire)
            if chain[:1] == ["Thread._bootstrap"] and chain[-2:] == [thread, f] and not has_eval_loop(st["frames"]):
                whole += st["value"]
        print(f"  {f}: truth {want / 1e6:.1f} ms  profd {have / 1e6:.1f} ms ({100.0 * (have - want) / want:+.2f}%), "
              f"whole chain Thread._bootstrap;...;{thread};{f} {100.0 * whole / want:.1f}% of the truth")
        attributed = attributed and have >= 0.5 * want
        if abs(have - want) > OFFCPU_TOLERANCE * want:
            failures.append(f"{f}: {have / 1e6:.1f} ms blocked, truth {want / 1e6:.1f} ms "
                            f"(+-{100 * OFFCPU_TOLERANCE:.0f}%)")
        if whole < COMPLETE_SHARE * want:
            failures.append(f"{f}: whole chain in {100.0 * whole / want:.1f}% of its time "
                            f"(need {100 * COMPLETE_SHARE:.0f}%)")
    if failures:
        top = [(v // 1000000, s) for v, s in commonest(result, python_summary, 6)]
        print(f"  the process's commonest off-CPU stacks (ms): {top}")
    return failures, missed, attributed


def test_offcpu_blocked_time_per_python_function():
    with shared_profd as d:
        failures, missed, attributed = measure_blocked_functions(d)
        if failures and missed > 0 and attributed:
            # as test_unwind_offcpu: a switch-in the kernel did not deliver
            # loses one 200 ms block (10% of a function); one run more
            print(f"  profd counted {missed} missed switch-ins meanwhile; measuring again")
            failures, _, _ = measure_blocked_functions(d)
    assert not failures, "; ".join(failures)


# --- 4. threads ------------------------------------------------------------

THREAD_SECONDS = 1.0  # of CPU per thread
THREAD_CHAINS = {"alpha": ["AlphaWorker.run", "AlphaWorker.spin_alpha"],
                 "beta": ["Thread.run", "beta_main", "beta_spin"]}
THREAD_OWN = {"alpha": {"AlphaWorker.run", "AlphaWorker.spin_alpha"}, "beta": {"beta_main", "beta_spin"}}


def test_threads_have_their_own_python_stacks():
    with shared_profd as d:
        with HeldWorkload(*python(DEBIAN_PYTHON, "py_threads.py", THREAD_SECONDS, WARMUP)) as truth:
            flush(d)
            by_thread = {t: d.query_json("--tid", str(tid), "--since", "5m") for t, tid in truth["tids"].items()}
    failures = []
    for t, result in by_thread.items():
        other = "beta" if t == "alpha" else "alpha"
        n = result["total"]
        own = crossed = 0
        for st in result["stacks"]:
            chain = python_chain(st["frames"])
            if chain[:1] == ["Thread._bootstrap"] and chain[-len(THREAD_CHAINS[t]):] == THREAD_CHAINS[t] \
                    and not has_eval_loop(st["frames"]):
                own += st["value"]
            if THREAD_OWN[other] & set(chain):
                crossed += st["value"]
        expect = truth["cpu_ns"][t] / 1e9 * int(FREQUENCY)
        print(f"  thread {t} (tid {truth['tids'][t]}): {n} samples ({expect:.0f} expected), {own} with its own "
              f"chain ...;{';'.join(THREAD_CHAINS[t])}, {crossed} with {other}'s functions; "
              f"commonest: {commonest(result, python_summary, 3)}")
        if n < 0.5 * expect:
            failures.append(f"{t}: only {n} samples")
        elif own < COMPLETE_SHARE * n:
            failures.append(f"{t}: its own chain in {100.0 * own / n:.1f}% of its samples "
                            f"(need {100 * COMPLETE_SHARE:.0f}%)")
        if crossed:
            failures.append(f"{t}: {crossed} samples carry {other}'s functions")
    assert not failures, "; ".join(failures)


# --- 5. a short-lived script -------------------------------------------------

SHORT_RUNS = 8
SHORT_SECONDS = 0.2
SHORT_CHAIN = ["<module>", "main", "Burner.burn"]


# The qualified names of the code objects of every module frozen into an
# interpreter, with the lines of each, by the file its frames name
# ("<frozen importlib._bootstrap>"):
# CPython 3.11 deep-freezes them into the binary's data, where each run
# after the first names them by the first's read (runtime_names.shared_hits).
IMPORT_CALL = ["_find_and_load", "_find_and_load_unlocked"]
FROZEN_NAMES = """
import _imp, json
names = {}
for m in _imp._frozen_module_names():
    todo = [_imp.get_frozen_object(m)]
    while todo:
        c = todo.pop()
        lines = names.setdefault(c.co_filename, {}).setdefault(c.co_qualname, set())
        lines.update(l for _, _, l in c.co_lines() if l)
        lines.add(c.co_firstlineno)
        todo.extend(x for x in c.co_consts if hasattr(x, "co_qualname"))
print(json.dumps({f: {q: sorted(l) for q, l in n.items()} for f, n in names.items()}))
"""


def frozen_names(interpreter):
    r = subprocess.run([interpreter, "-c", FROZEN_NAMES], capture_output=True, text=True, timeout=60, check=True)
    return {f: {q: set(l) for q, l in n.items()} for f, n in json.loads(r.stdout).items()}


def test_short_lived_script_is_named_after_it_exits():
    # Each run burns 200 ms from its first moments (no warm-up) and exits
    # before the drain that stores it: its code objects must have been
    # read while it lived. A sample "ran Python" when it has a Python
    # frame or the native eval loop; it is named when it has Python frames,
    # all named, and no eval loop left. The interpreter's start-up before
    # its first Python code (native only) is left out, and counted.
    frozen = frozen_names(DEBIAN_PYTHON)
    with shared_profd as d:
        hits0 = status_counters(d).get("runtime_names.shared_hits", 0)
        truths = [run_json(*python(DEBIAN_PYTHON, "py_short.py", SHORT_SECONDS)) for _ in range(SHORT_RUNS)]
        flush(d)
        results = [d.query_json("--pid", str(t["pid"]), "--since", "5m") for t in truths]
        hits = status_counters(d).get("runtime_names.shared_hits", 0) - hits0
    # every frame in a frozen module is one of that module's functions, at
    # one of its lines, whichever run read its code object
    frozen_frames = 0
    wrong = collections.Counter()
    # and they keep apart: the import machinery's own call, each import's
    # first, named in the runs after the first too
    imports = 0
    for i, r in enumerate(results):
        for st in r["stacks"]:
            chain = python_chain(st["frames"])
            if i > 0 and any(chain[k:k + 2] == IMPORT_CALL for k in range(len(chain))):
                imports += st["value"]
            for f in st["frames"]:
                # (getpath, frozen for start-up only, is not listed: left out)
                if not f.get("kernel") and is_python(f) and f.get("module") in frozen:
                    frozen_frames += st["value"]
                    if python_name(f) not in frozen[f["module"]] or \
                            (f.get("line") and f["line"] not in frozen[f["module"]][python_name(f)]):
                        wrong[(f["module"], python_name(f), f.get("line"))] += st["value"]
    total = ran = named = burn = native = 0
    burn_expected = 0.0
    per_run = []
    for t, r in zip(truths, results):
        r_named = r_ran = 0
        for st in r["stacks"]:
            chain = python_chain(st["frames"])
            if not chain and not has_eval_loop(st["frames"]):
                native += st["value"]
                continue
            r_ran += st["value"]
            if chain and "?" not in chain and not has_eval_loop(st["frames"]):
                r_named += st["value"]
            if chain == SHORT_CHAIN and not has_eval_loop(st["frames"]):
                burn += st["value"]
        per_run.append(f"{r_named}/{r_ran}")
        total += r["total"]
        ran += r_ran
        named += r_named
        burn_expected += r["total"] * t["burn_cpu_ns"] / t["process_cpu_ns"]
    print(f"  {SHORT_RUNS} runs of py_short.py: {total} samples, {native} native-only (start-up), {ran} ran Python, "
          f"{named} named ({100.0 * named / max(ran, 1):.1f}%); {burn} in {';'.join(SHORT_CHAIN)} of "
          f"{burn_expected:.0f} expected; named/ran per run: {' '.join(per_run)}; commonest: "
          f"{commonest(results[0], python_summary, 3)}; {frozen_frames} frames in frozen modules, {hits} reads "
          f"spared by code objects another run read; {imports} samples of later runs in {';'.join(IMPORT_CALL)}")
    assert total >= 0.5 * SHORT_RUNS * SHORT_SECONDS * int(FREQUENCY), f"only {total} samples of {SHORT_RUNS} runs"
    assert named >= SHORT_LIVED_SHARE * ran, \
        f"only {100.0 * named / max(ran, 1):.1f}% of a short-lived script's samples that ran Python are named " \
        f"after it exited (need {100 * SHORT_LIVED_SHARE:.0f}%)"
    assert burn >= SHORT_LIVED_SHARE * burn_expected, \
        f"only {burn} samples have {';'.join(SHORT_CHAIN)}, of {burn_expected:.0f} its CPU time gives"
    assert not wrong, f"frames in frozen modules named with another's function or line: {wrong.most_common(5)}"
    assert hits > 0, "no code object of the interpreter's frozen modules was named by another run's read"
    assert frozen_frames > 0, "no frame in a frozen module: the check of their names checked nothing"
    assert imports > 0, f"no sample of the runs after the first has {';'.join(IMPORT_CALL)}"


# --- 6. hostile input --------------------------------------------------------

HOSTILE_SECONDS = 2.0  # of CPU: four phases of 0.5 s
HOSTILE_PHASES = ("Hostile.loop", "Hostile.garbage", "Hostile.unmapped")


def script_functions(path):
    """Every qualified name of a code object in the script, from its own
    compilation (nested functions, comprehensions, generator expressions):
    a frame named in its file must be one of them (a name read from the
    garbage would be anything)."""
    with open(path) as f:
        todo = [compile(f.read(), path, "exec")]
    names = set()
    while todo:
        code = todo.pop()
        names.add(code.co_qualname)
        todo.extend(c for c in code.co_consts if hasattr(c, "co_qualname"))
    return names


# Counters of `profctl status --json` that may count why a runtime walk
# ended: their path names the runtime (python, runtime, rt_); counts of
# work done (walks, frames, code objects read) are not reasons.
RUNTIME_COUNTER = re.compile(r"python|runtime|(^|[._])rt_")
WORK_COUNTER = re.compile(r"(^|[._])(walks|frames|codes?|code_events|named|names|read|resolved|seen|events|hits|"
                          r"entries|bytes|slots|processes|files|runtimes|interpreters|found|cached|loaded|"
                          r"active|version)$")


def run_hostile(d):
    """Runs py_hostile.py, asking profd's status every 0.25 s while it
    runs (each must answer within 10 s, profd still running); returns the
    workload's truth and the process, held."""
    p = subprocess.Popen(python(DEBIAN_PYTHON, "py_hostile.py", HOSTILE_SECONDS, WARMUP),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    asked = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 0.25)
            if ready:
                line = p.stdout.readline()
                assert line, f"py_hostile.py exited {p.wait(10)} without its truth"
                print(f"  profd answered status {asked} times while py_hostile.py ran")
                return json.loads(line), p
            assert d.proc.poll() is None, f"profd exited {d.proc.returncode} while py_hostile.py ran"
            d.profctl("status", "--json", timeout=10)
            asked += 1
        raise AssertionError("py_hostile.py did not finish in 120 s")
    except BaseException:
        p.kill()
        p.wait()
        raise


def test_hostile_frame_chain_is_bounded_and_counted():
    with shared_profd as d:
        before = status_counters(d)
        truth, p = run_hostile(d)
        try:
            flush(d)
            result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
            after = status_counters(d)
        finally:
            p.stdin.close()
            assert p.wait(60) == 0, f"py_hostile.py exited {p.returncode}"
            p.stdout.close()
        assert d.proc.poll() is None, f"profd exited {d.proc.returncode}"
    n = result["total"]
    longest = max((len(user_names(st["frames"])) for st in result["stacks"]), default=0)
    grew = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}
    reasons = {k: v for k, v in grew.items() if RUNTIME_COUNTER.search(k) and not WORK_COUNTER.search(k)}
    truncated = {k: v for k, v in grew.items() if k.startswith("truncated.")}  # every process's: for the log
    own_truncated = result["quality"].get("truncated_total", 0)
    # the frames inside the corruption, innermost: phase;corrupt_and_burn;spin
    inner = {ph: 0 for ph in HOSTILE_PHASES}
    clean = 0
    script = workload("py_hostile.py")
    names = script_functions(script)
    assert set(HOSTILE_PHASES) <= names, f"{script} lacks a phase of {HOSTILE_PHASES}"
    misnamed = collections.Counter()
    for st in result["stacks"]:
        for f in st["frames"]:
            if is_python(f) and script in (f.get("module"), f.get("file")) and python_name(f) not in names:
                misnamed[python_name(f)] += st["value"]
        chain = python_chain(st["frames"])
        for ph in HOSTILE_PHASES:
            if chain[-3:] == [ph, "Hostile.corrupt_and_burn", "spin"]:
                inner[ph] += st["value"]
        if chain == ["<module>", "main", "clean_spin", "spin"] and not has_eval_loop(st["frames"]):
            clean += st["value"]
    expect = {f: n * ns / truth["process_cpu_ns"] for f, ns in truth["cpu_ns"].items()}
    print(f"  py_hostile ({truth['version']}): {n} samples, longest user stack {longest} frames; runtime "
          f"reason counters grown: {reasons}; truncations grown: {truncated} (this process's: {own_truncated}); "
          f"inner frames kept per phase: {inner} of {({k: round(v) for k, v in expect.items()})}; "
          f"clean_spin's whole chain {clean}; frames of the script under other names: {dict(misnamed)}; "
          f"commonest: {commonest(result, python_summary, 4)}")
    assert n >= 0.5 * HOSTILE_SECONDS * int(FREQUENCY), f"only {n} samples of py_hostile.py"
    assert longest <= MAX_FRAMES, f"a stack of py_hostile.py has {longest} user frames (limit {MAX_FRAMES})"
    # Counted: a reason counter of the runtime walk grew, or (a walker that
    # ends such a stack as a truncation) this process's own truncated
    # weight is at least half its loop phase's samples (first-sight
    # truncations of a process are a few samples).
    assert reasons or own_truncated >= 0.5 * expect["Hostile.loop"], \
        "py_hostile.py's corrupted frame chains left no count in profctl status: no runtime reason counter " \
        f"grew (candidates: {sorted(k for k in after if RUNTIME_COUNTER.search(k))}), and only {own_truncated} " \
        f"of this process's samples are truncated ({expect['Hostile.loop']:.0f} in its loop phase)"
    assert not misnamed, f"frames in {script} named after none of its functions: {dict(misnamed)}"
    short = [ph for ph in HOSTILE_PHASES if inner[ph] < 0.8 * expect[ph]]
    assert not short, f"the frames inside the corruption lost their names in {short}: {inner} of {expect}"
    assert clean >= 0.9 * expect["clean_spin"], \
        f"once repaired, only {clean} samples of {expect['clean_spin']:.0f} have <module>;main;clean_spin;spin"


if __name__ == "__main__":
    run_selected([test_ground_truth_on_debian_python,
                  test_ground_truth_on_second_python311_build,
                  test_c_callback_interleaves_python_c_python,
                  test_offcpu_blocked_time_per_python_function,
                  test_threads_have_their_own_python_stacks,
                  test_short_lived_script_is_named_after_it_exits,
                  test_hostile_frame_chain_is_bounded_and_counted], shared_profd.cleanup)
