#!/usr/bin/env python3
"""End to end: a table that samples go through and that found no room gets
it from the least recently sampled tables, those of live processes too,
never from tables sampled within the hot window (three drain intervals;
daemon/unwind/table-lru.h). As on a build host where two compilers'
tables do not fit the budget together. Each compiler runs with its own
copies of LLVM's large libraries (LD_LIBRARY_PATH), so that their tables
are its own whatever else the host runs.

profd's budget is computed at test time from the compact tables, as
unwind-pack-bench (the same packer as profd's) sizes them: with L and K
the 8-byte values of libLLVM's and libclang-cpp's tables (about 475,000
and 501,000 with LLVM 14), Z those of libz3 (which libLLVM needs: the
host's file, mapped by every compiler here, about 193,000) and H those of
every file the host's processes map now (profd's own included), the
budget is H + Z + L + K (A's tables beside the host's) + L / 2. So A's
tables fit beside the host's; B's libLLVM (L, and its room is planned 1%
above that) does not fit unless A's tables give it room; and C finds no
room for whichever of A's tables was evicted while B's libLLVM and the
other of A's are hot. The IR that B compiles is made before profd starts:
made while profd ran, by a clang with the system's libraries, it left
their tables in the middle of the budget, and A's libLLVM, planned a
little above the system's, found no window around them (libz3 pinned
beside it). The waits for a table are derived from the bench's build
times for these libraries (which run as slowly as profd's under
AddressSanitizer or load). A host whose processes start large programs
during the test (other than the test's) may leave A without room: A's
wait then fails, saying so.

- A, clang's compiler proper (`clang -cc1`) on a large generated C++
  file, with copies of libclang-cpp and libLLVM, runs until its
  tables are built and its samples reach a root frame; then it is
  stopped (SIGSTOP): its tables go cold.
- B, LLVM's opt on the file's IR, with its own copy of libLLVM, finds no room (`tables_no_room`); once its samples go
  through libLLVM, cold tables of A are evicted for it
  (`tables_evicted_cold`, and profd's log names which for which) and its
  table is built: >= 90% of B's samples reach a root frame, as profctl's
  quality report says. (opt, not a second clang: the room of a second
  clang's two large tables would have to be taken from A's whole.)
- C, a new clang with A's copies, starts while B runs hot: the tables it
  wants (A's, evicted) cannot take B's rows (`tables_kept_hot` counts the
  refusal, `tables_evicted_cold` does not move, no table of B is
  evicted), and B's samples still reach a root frame."""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import Profd, require_root, run_tests, wait_unwinder_loaded, write_big_cpp

INTERVAL_S = 1  # the hot window is three intervals
HOT_S = 3 * INTERVAL_S
CLANG = "/usr/lib/llvm-14/bin/clang"
OPT = "/usr/lib/llvm-14/bin/opt"
# copied for A (libLLVM alone for B); libLLVM's libz3 is the host's
LIBS = ["/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/usr/lib/llvm-14/lib/libclang-cpp.so.14"]
LIBZ3 = "/usr/lib/x86_64-linux-gnu/libz3.so.4"
# set by table_sizes(): the wait for the tables of one process to be built
# and sampled (seconds)
BUILD_TIMEOUT = None
ROOT_SHARE = 0.90

_profd = None
_tmp = None


def table_sizes(files):
    """Per file of files that has a table: the 8-byte values of
    unwind_rows its compact table takes, and the ms unwind-pack-bench took
    to read its rows (this build's speed, on this machine under its load
    now). Files without a table (no CFI, gone) are left out."""
    sizes = {}
    files = list(files)
    for i in range(0, len(files), 200):
        out = subprocess.run([os.environ["UNWIND_PACK_BENCH"], "-r", "1"] + files[i:i + 200], check=True,
                             capture_output=True, text=True, timeout=600).stdout
        for line in out.splitlines():
            m = re.match(r"(\S+)\s+\d+ rows\s+\d+ ->\s+(\d+) bytes .* build\s+([\d.]+) ms", line)
            if m:
                sizes[m.group(1)] = ((int(m.group(2)) + 7) // 8, float(m.group(3)))
    return sizes


def host_files():
    """The regular files the host's processes map executable now, and
    profd's own (its binary and libraries, as ldd names them), by path:
    the tables profd builds at its start."""
    files = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
                        files.add(parts[5].rstrip("\n"))
        except OSError:
            continue
    profd = os.environ["PROFD"]
    files.add(profd)
    ldd = subprocess.run(["ldd", profd], capture_output=True, text=True).stdout
    files.update(re.findall(r"=> (/\S+)", ldd))
    return {f for f in files if not f.endswith(" (deleted)") and os.path.isfile(f)} - set(LIBS) - {LIBZ3}


def budget_and_waits():
    """The budget in bytes (the docstring's H + Z + L + K + L / 2) and
    BUILD_TIMEOUT: a minute plus 30 times what reading both libraries'
    rows took the bench, as profd builds them while the compilers and the
    host load the machine, and its samples need a few drains."""
    global BUILD_TIMEOUT
    sizes = table_sizes(LIBS + [LIBZ3])
    assert set(sizes) == set(LIBS + [LIBZ3]), f"unwind-pack-bench did not size every library: {sizes}"
    big_l, big_k, big_z = (sizes[lib][0] for lib in LIBS + [LIBZ3])
    host = sum(v for v, _ in table_sizes(host_files()).values())
    values = host + big_z + big_l + big_k + big_l // 2
    build_s = sum(sizes[lib][1] for lib in LIBS) / 1000
    BUILD_TIMEOUT = 60 + 30 * build_s
    print(f"  tables: libLLVM {big_l}, libclang-cpp {big_k}, libz3 {big_z}, the host's {host} values (LLVM's "
          f"read in {build_s:.1f} s); budget {values} values ({8 * values} bytes); waits up to "
          f"{BUILD_TIMEOUT:.0f} s")
    return 8 * values


def unwind(d):
    return json.loads(d.profctl("status", "--json", timeout=BUILD_TIMEOUT).stdout)["unwind"]


def fmt(u):
    keys = ("rows_used", "rows_capacity", "tables_built", "tables_evicted", "tables_evicted_cold",
            "tables_no_room", "tables_kept_hot", "tables_queued")
    return ", ".join(f"{k} {u.get(k)}" for k in keys) + f", budget_full {u['failures']['budget_full']}"


def wait_for(d, what, pred, timeout=None):
    deadline = time.monotonic() + (timeout or BUILD_TIMEOUT)
    while True:
        u = unwind(d)
        if pred(u):
            return u
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {fmt(u)}")
        time.sleep(0.2)


# samples a share is taken over: a compiler on a loaded machine may get a
# few percent of a CPU (20 samples in 3 s at 199 Hz here, load 11)
MIN_SAMPLES = 60
WINDOWS_S = (3, 6, 12, 24, 48)


def recent_share(d, pid, shortest_s=3, longest_s=WINDOWS_S[-1]):
    """root_share over the shortest window of WINDOWS_S, from shortest_s
    to longest_s, that holds MIN_SAMPLES of process pid's samples (else
    the longest): (share, samples, truncated, window)."""
    for since_s in [w for w in WINDOWS_S if shortest_s <= w <= longest_s] or [shortest_s]:
        share, n, trunc = root_share(d, pid, since_s)
        if n >= MIN_SAMPLES:
            break
    return share, n, trunc, since_s


def wait_root_share(d, pid, what, timeout=None):
    """Until ROOT_SHARE of process pid's recent samples reach a root frame
    (its tables built and published), whatever else the host builds
    meanwhile. Returns the unwinder's status then, and the monotonic time
    the window that showed it began: a later window back to it holds no
    sample of before the tables."""
    deadline = time.monotonic() + (timeout or BUILD_TIMEOUT)
    good = 0
    while True:
        share, n, trunc, since_s = recent_share(d, pid)
        # enough samples that the ones of its start (before the dynamic
        # loader mapped the libraries) do not count, twice in a row (the
        # host's own large tables may be queued at any time)
        good = good + 1 if n >= MIN_SAMPLES and share >= ROOT_SHARE else 0
        if good >= 2:
            return unwind(d), time.monotonic() - since_s
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {100 * share:.1f}% of {n} samples of the last "
                                 f"{since_s} s reach a root frame, {trunc}; {fmt(unwind(d))}")
        time.sleep(0.5)


def root_share(d, pid, since_s):
    """Share of process pid's samples of the last since_s seconds whose
    user stack reached a root frame (the quality report's `complete`), the
    samples, and the truncated ones by reason."""
    # a flush waits for a drain, which profd under AddressSanitizer on a
    # loaded machine once took longer than profctl waits (60 s) for; the
    # query then answers from the drains stored, and the callers wait on
    d.profctl("flush", check=False, timeout=BUILD_TIMEOUT)
    out = json.loads(d.profctl("query", "--pid", str(pid), "--since", f"{since_s}s", "--json",
                               timeout=BUILD_TIMEOUT).stdout)
    q = out["quality"] if "quality" in out else out["end"]["quality"]
    return (q["complete"] / q["total"] if q["total"] else 0.0), q["total"], q["truncated"]


class Compiler:
    """clang's compiler proper on src (or opt on IR), its libraries from
    libdir."""

    def __init__(self, libdir, src, opt=False):
        argv = [OPT, "-O3", src, "-o", "/dev/null"] if opt else \
            [CLANG, "-cc1", "-O2", "-S", "-o", "/dev/null", "-x", "c++", src]
        self.p = subprocess.Popen(argv,
                                  env=dict(os.environ, LD_LIBRARY_PATH=libdir), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.p.pid

    def signal(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)

    def running(self):
        return self.p.poll() is None

    def end(self):
        self.signal(signal.SIGKILL)
        self.p.wait()


def copies(tmp, name, libs=LIBS):
    """A directory of new copies of LLVM's large libraries: files profd
    has never seen."""
    libdir = os.path.join(tmp, name)
    os.mkdir(libdir)
    for lib in libs:
        shutil.copy(lib, libdir)
    return libdir


def idents(libdir):
    """The libraries of libdir as profd's log names files: dev:ino."""
    out = {}
    for name in os.listdir(libdir):
        st = os.stat(os.path.join(libdir, name))
        out[f"{st.st_dev}:{st.st_ino}"] = name
    return out


EVICT_RE = re.compile(r"Evicting the unwind table of file (\d+:\d+) .* for the sampled table of file (\d+:\d+)\.")
KEPT_RE = re.compile(r"No room for the sampled unwind table of file (\d+:\d+) ")


def evictions(d):
    """(evicted, for) file pairs profd's log names, in order."""
    return EVICT_RE.findall(d.read_log())


def test_cold_tables_give_room_to_a_sampled_one_hot_tables_do_not():
    assert os.path.exists(CLANG), f"{CLANG} is not installed (setup.sh installs clang)"
    d = _profd
    tmp = _tmp
    compilers = []
    try:
        src, ir = os.path.join(tmp, "big.cpp"), os.path.join(tmp, "big.ll")
        lib_a, lib_b = copies(tmp, "a"), copies(tmp, "b", LIBS[:1])
        u0 = unwind(d)
        print(f"  start: {fmt(u0)}")

        # A: sampled until its tables are built and its stacks whole
        a = Compiler(lib_a, src)
        compilers.append(a)
        try:
            ua, a_since = wait_root_share(d, a.pid, "A's tables")
        except AssertionError as e:
            u = unwind(d)
            raise AssertionError(f"{e} (tables_kept_hot {u0['tables_kept_hot']} -> {u['tables_kept_hot']}: if A's "
                                 f"share is low, the host's own sampled tables took A's room)") from None
        time.sleep(3 * INTERVAL_S)
        share, n, trunc, _ = recent_share(d, a.pid, 3, time.monotonic() - a_since)
        print(f"  A running: {fmt(ua)}; {100 * share:.1f}% of {n} samples reach a root frame")
        assert a.running(), "A ended before the test stopped it (the generated file is too small)"
        assert share >= ROOT_SHARE, f"A's own tables were not built: {100 * share:.1f}% complete, {trunc}"

        # A goes cold
        a.signal(signal.SIGSTOP)
        time.sleep(HOT_S + 2 * INTERVAL_S)

        # B: its tables find no room, then get it from cold tables
        ub0 = unwind(d)
        b = Compiler(lib_b, ir, opt=True)
        compilers.append(b)
        ub = wait_for(d, "B's table to find no room", lambda u: u["tables_no_room"] > ub0["tables_no_room"])
        print(f"  B refused: {fmt(ub)}")
        ub = wait_for(d, "cold tables evicted for B", lambda u: u["tables_evicted_cold"] > ub0["tables_evicted_cold"])
        ub, b_since = wait_root_share(d, b.pid, "B's tables")
        print(f"  B built: {fmt(ub)}")
        ids_a, ids_b = idents(lib_a), idents(lib_b)
        names = {**{k: "A's " + v for k, v in ids_a.items()}, **{k: "B's " + v for k, v in ids_b.items()}}
        pairs = evictions(d)
        for gone, wanted in pairs:
            print(f"    evicted {names.get(gone, gone)} for {names.get(wanted, wanted)}")
        assert any(gone in ids_a and wanted in ids_b for gone, wanted in pairs), \
            "no table of A was evicted for one of B's"
        assert not any(gone in ids_b for gone, _ in pairs), "a table of B was evicted for B"
        time.sleep(5 * INTERVAL_S)
        share, n, trunc, _ = recent_share(d, b.pid, 5, time.monotonic() - b_since)
        print(f"  B: {100 * share:.1f}% of {n} samples reach a root frame")
        assert b.running(), "B ended before the test was done with it"
        assert n > 0, "no samples of B"
        assert share >= ROOT_SHARE, f"only {100 * share:.1f}% of B's samples reach a root frame: {trunc}"

        # C: a new clang with A's libraries while B runs hot
        uc0 = unwind(d)
        c = Compiler(lib_a, src)
        compilers.append(c)
        uc = wait_for(d, "C's tables to be refused, B's being hot",
                      lambda u: u["tables_kept_hot"] > uc0["tables_kept_hot"])
        time.sleep(3 * INTERVAL_S)
        uc = unwind(d)
        print(f"  C refused: {fmt(uc)}")
        assert uc["tables_evicted_cold"] == uc0["tables_evicted_cold"], \
            f"{uc['tables_evicted_cold'] - uc0['tables_evicted_cold']} tables evicted while B and C ran hot"
        assert uc["failures"]["budget_full"] > uc0["failures"]["budget_full"], "the refusal is not counted budget_full"
        log = d.read_log()
        assert any(f in ids_a for f in KEPT_RE.findall(log)), "no refusal of a table of A's libraries logged"
        assert not any(gone in ids_b for gone, _ in evictions(d)), "a table of B was evicted while B ran hot"
        share, n, trunc, _ = recent_share(d, b.pid, 3, time.monotonic() - b_since)
        print(f"  B with C running: {100 * share:.1f}% of {n} samples reach a root frame")
        assert b.running(), "B ended before the test was done with it"
        assert share >= ROOT_SHARE, f"B lost its tables to C: {100 * share:.1f}% complete, {trunc}"

        # the status text tells both counts, as the JSON (one answer each;
        # the counts only grow, so the text's lie between two JSON reads)
        u1 = unwind(d)
        text = d.profctl("status").stdout
        u2 = unwind(d)
        m = re.search(r"tables evicted for room: (\d+) unused, (\d+) of live processes not sampled lately; "
                      r"left without room: (\d+) not built, (\d+) sampled", text)
        assert m, f"status text has no eviction counts:\n{text}"
        for got, key in zip(m.groups(), ("tables_evicted", "tables_evicted_cold", "tables_no_room", "tables_kept_hot")):
            assert u1[key] <= int(got) <= u2[key], f"status text says {got} {key}, JSON {u1[key]}..{u2[key]}"
        assert int(m.group(2)) > 0 and int(m.group(4)) > 0, f"the text's counts are zero: {m.group(0)}"
    finally:
        for c in compilers:
            c.end()


if __name__ == "__main__":
    require_root()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM"))
    _tmp = tempfile.mkdtemp(prefix="profd-test-lru-")
    try:
        # the source, and B's IR, before profd starts (docstring)
        write_big_cpp(os.path.join(_tmp, "big.cpp"))
        subprocess.run([CLANG, "-cc1", "-O0", "-disable-O0-optnone", "-emit-llvm", "-o", os.path.join(_tmp, "big.ll"),
                        "-x", "c++", os.path.join(_tmp, "big.cpp")], check=True, timeout=300)
        budget = budget_and_waits()
        _profd = Profd("--unwind-memory", str(budget), "--frequency", "199", "--interval", f"{INTERVAL_S}s", "-v")
        _profd.start()
        wait_unwinder_loaded(_profd)
        run_tests([test_cold_tables_give_room_to_a_sampled_one_hot_tables_do_not])
    except SystemExit as e:
        if e.code and _profd is not None:
            print("--- profd log (last 3000 characters) ---\n" + _profd.read_log()[-3000:], file=sys.stderr)
        raise
    finally:
        if _profd is not None:
            _profd.cleanup()
        shutil.rmtree(_tmp, ignore_errors=True)
