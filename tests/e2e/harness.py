"""Shared pieces of the end-to-end tests: start the real profd on a private
socket and store, drive it through the real profctl, stop it.

Paths of the binaries come from the environment meson sets (PROFD, PROFCTL,
and the workloads). Tests that need root or BPF exit 77 (meson: skipped),
loudly, only when that capability is really absent."""
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


def require_root():
    """Skip (exit 77) unless we can load BPF programs: needs root."""
    if os.geteuid() != 0:
        print("SKIP: this test loads BPF programs into the kernel and needs root; "
              "it did NOT run (run the suite as root: see README.md)", file=sys.stderr)
        sys.exit(SKIP)
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        print("SKIP: the kernel has no BTF (/sys/kernel/btf/vmlinux), profd's BPF programs "
              "cannot load here; this test did NOT run", file=sys.stderr)
        sys.exit(SKIP)


def sanitized():
    """Is profd built with AddressSanitizer? Its memory figures then say
    nothing about profd's own (ASan's shadow memory and quarantine)."""
    with open(binary("PROFD"), "rb") as f:
        return b"__asan_init" in f.read()


def binary(name):
    path = os.environ.get(name)
    if not path:
        sys.exit(f"test setup: ${name} is not set (run through meson test)")
    return path


def rfc3339(ns):
    """A Unix-epoch ns time as RFC 3339 in UTC, to the nanosecond."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


# Every kept block walked and counted as its own length. The default
# (offcpu_sample = auto) walks blocks shorter than the sampling period by a
# draw, so a short block's stack is an estimate; a test that compares one
# short run's blocked time with its truth within a few percent pins this.
EXACT_OFFCPU = ("--offcpu-sample", "none")


class Profd:
    """A profd process on a temporary socket and store."""

    def __init__(self, *args, store=None, workdir=None, config="/dev/null", prefix=()):
        """prefix: a command profd is run by, which must exec it (then the
        process started is profd's, stopped by its pid)."""
        self.prefix = list(prefix)
        self.dir = workdir or tempfile.mkdtemp(prefix="profd-test-")
        self.socket = os.path.join(self.dir, "profd.sock")
        self.store = store or os.path.join(self.dir, "profd.db")
        self.args = list(args)
        self.config = config
        self.log_path = os.path.join(self.dir, "profd.log")
        self.proc = None

    def start(self, timeout=30):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.prefix + [binary("PROFD"), "--config", self.config, "--socket", self.socket,
             "--store", self.store] + self.args,
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"profd exited with {self.proc.returncode} while starting:\n"
                                     + self.read_log())
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.socket)
                return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError("profd did not open its socket in time:\n" + self.read_log())

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=None):
        """Stops profd; returns its exit code. A sanitizer report in its log
        fails the test whatever the exit code. profd stores every drain
        queued before it exits: under AddressSanitizer on a busy machine the
        writer can be minutes behind, so the wait is longer there."""
        if timeout is None:
            timeout = 180 if sanitized() else 30
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("profd did not exit within %ds of %s" % (timeout, sig))
        self.log.close()
        self.check_log()
        return self.proc.returncode

    def check_log(self):
        log = self.read_log()
        for marker in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"):
            if marker in log:
                raise AssertionError(f"profd's log has a sanitizer report ({marker}):\n{log[-4000:]}")

    def profctl(self, *args, check=True, timeout=60):
        r = subprocess.run([binary("PROFCTL"), "--socket", self.socket] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"profctl {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
        return r

    def query_json(self, *args):
        return json.loads(self.profctl("query", "--json", *args).stdout)

    def cleanup(self):
        try:
            if self.proc and self.proc.poll() is None:
                rc = self.stop()
                if rc != 0:
                    raise AssertionError(f"profd exited {rc} on SIGTERM:\n{self.read_log()[-4000:]}")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        failed = exc[0] is not None and not (exc[0] is SystemExit and exc[1].code == 0)
        if failed and self.proc:
            print("--- profd log ---\n" + self.read_log(), file=sys.stderr)
        self.cleanup()


def exchange(path, lines, timeout=20):
    """Sends raw request lines on one fresh connection, then closes its
    sending side; returns every response object the daemon wrote."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(b"".join(l + b"\n" for l in lines))
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return [json.loads(l) for l in data.decode().splitlines()]


def storegen(store, samples, now=None):
    """Creates or extends a store with known content (tests/tools/storegen):
    samples are dicts as tests/tools/README.md describes; now an RFC 3339
    time taken as now (default: the clock)."""
    args = [binary("STOREGEN")] + (["--now", now] if now else []) + [store]
    spec = "".join(json.dumps(s) + "\n" for s in samples)
    r = subprocess.run(args, input=spec, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"storegen failed ({r.returncode}):\n{r.stderr}")


def serve_only(store_samples, now=None, config="/dev/null"):
    """A serve-only profd (--kinds none: no BPF) on a new store holding
    store_samples; use it as a context manager."""
    d = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(d, "profd.db")
    storegen(store, store_samples, now)
    return Profd("--kinds", "none", store=store, workdir=d, config=config)


def memory_kib(pid):
    """(VmRSS, VmHWM) of a process in KiB, from /proc/PID/status."""
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                vals[key] = int(value.split()[0])
    return vals["VmRSS"], vals["VmHWM"]


def mapped_libraries(pid):
    """The file names (without directories) of the shared objects a process
    has loaded, from /proc/PID/maps: those with an executable mapping, as
    ld.so maps a library's code. (profd also maps files it only reads, such
    as a library whose unwind table it builds: read-only, never executable.)"""
    names = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and "x" in fields[1] and ".so" in fields[5]:
                names.add(os.path.basename(fields[5].strip()))
    return names


# What libcurl and libdebuginfod bring (daemon/dynlib.h): profd loads them
# only when an export or debuginfod is configured.
NETWORK_LIBRARIES = ("libcurl", "libdebuginfod", "libgnutls", "libssl", "libcrypto", "libldap", "libkrb5")


def network_libraries(pid):
    return sorted(n for n in mapped_libraries(pid) if n.startswith(NETWORK_LIBRARIES))


def dwarf_copies_kib(pid, store):
    """(RSS, resident DWARF copies) of a process in KiB, from one read of
    /proc/PID/smaps: the RSS summed over every mapping, and of it the pages
    of the symbolizer's DWARF copies, the unlinked O_TMPFILE files profd
    maps read-only from the store's directory ("DIR/#INODE (deleted)").

    Why smaps and not status's symbol_mapped_bytes or RssFile: the copies
    are the symbols' memory, but only the pages a drain touched are
    resident, and only until the drain's end gives them back, so what they
    add to RSS at any moment is anywhere from 0 to the mapped size that
    status reports. RssFile also counts profd's own text and its libraries
    (11 MiB, some of it first touched during a test). The copies' own
    mappings, read in the same pass as the total, count exactly what they
    hold now and nothing else; anonymous memory (where a leak would be)
    is never counted as theirs."""
    prefix = os.path.join(os.path.dirname(os.path.abspath(store)), "#")
    total = copies = 0
    is_copy = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if first.endswith(":"):
                if first == "Rss:":
                    kib = int(line.split()[1])
                    total += kib
                    if is_copy:
                        copies += kib
            else:  # a mapping's header: range perms offset dev inode [path]
                fields = line.split(None, 5)
                path = fields[5].rstrip("\n") if len(fields) > 5 else ""
                is_copy = path.startswith(prefix) and path.endswith(" (deleted)")
    return total, copies


def settled_rss_kib(pid, store, seconds=2.5):
    """profd's RSS less its DWARF copies' resident pages (dwarf_copies_kib),
    the least of readings every 0.1 s for `seconds`: (that, the copies'
    resident pages then). A drain holds its working memory (its batch, its
    SQLite transaction, the files it reads mapped, libdw's buffers) only
    until its end, when the heap is trimmed; at a drain every second, one
    reading falls within a drain or not by chance, 10-20 MiB apart. Memory
    that stays (a leak) is in every reading, so in the least of them."""
    best = None
    deadline = time.monotonic() + seconds
    while True:
        total, copies = dwarf_copies_kib(pid, store)
        if best is None or total - copies < best[0]:
            best = (total - copies, copies)
        if time.monotonic() >= deadline:
            return best
        time.sleep(0.1)


def function_shares(result):
    """From a `profctl query --json` document: (self, total) sample counts per
    function name, and the total. Self counts the leaf frame; total counts
    every stack containing the function once."""
    self_counts, total_counts = {}, {}
    for st in result["stacks"]:
        names = [f["name"] for f in st["frames"]]
        if names:
            self_counts[names[-1]] = self_counts.get(names[-1], 0) + st["value"]
        for n in set(names):
            total_counts[n] = total_counts.get(n, 0) + st["value"]
    return self_counts, total_counts, result["total"]


# The unwinder's frame limit (bpf/profd.h PROFD_MAX_FRAMES): a user stack
# holds at most this many frames, a runtime's pseudo-frames included.
MAX_FRAMES = 127


def binomial_tolerance(p, n, k=2):
    """k binomial standard errors of a share p measured over n samples,
    k * sqrt(p (1 - p) / n): how far a sampled share may be from its truth
    p by chance. (Periodic sampling of a workload that rotates every few
    ms is if anything less variable than binomial.)"""
    return k * math.sqrt(p * (1 - p) / n)


class SharedProfd:
    """One profd for every test of a file (with `args`, otherwise its
    defaults), started at the first `with` and waited for until its
    unwinder has loaded the processes already running
    (wait_unwinder_loaded); the file's main calls cleanup() at the end. As
    a context manager it hands it out, and prints the end of its log when
    the block failed."""

    def __init__(self, *args):
        self.args = args
        self.profd = None

    def __enter__(self):
        if self.profd is None:
            self.profd = Profd(*self.args)
            self.profd.start()
            wait_unwinder_loaded(self.profd)
        return self.profd

    def __exit__(self, *exc):
        if exc[0] is not None and self.profd is not None:
            print("--- profd log (last 3000 characters) ---\n" + self.profd.read_log()[-3000:], file=sys.stderr)

    def cleanup(self):
        if self.profd is not None:
            self.profd.cleanup()


def run_json(*cmd, timeout=120):
    """Runs a workload to its exit (stdin /dev/null: no hold); its truth,
    the one JSON line it printed."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"{cmd[0]} exited {r.returncode}: {r.stderr}"
    return json.loads(r.stdout)


def stack_location_ids(blob):
    """The location ids of a stacks.frames blob, root first, in either form
    (daemon/store/stack-pack.h): since schema 15 zigzag varints of each id's
    difference from the one before, then a byte 1; before, each id as a
    little-endian 64-bit integer (last byte 0)."""
    if not blob or blob[-1] == 0:
        return [int.from_bytes(blob[i:i + 8], "little", signed=True) for i in range(0, len(blob), 8)]
    assert blob[-1] == 1, f"stack frames in no known form: {blob.hex()}"
    ids, prev, v, shift = [], 0, 0, 0
    for b in blob[:-1]:
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            prev += (v >> 1) ^ -(v & 1)
            ids.append(prev)
            v, shift = 0, 0
    assert shift == 0, f"stack frames end inside a varint: {blob.hex()}"
    return ids


def write_big_cpp(path, functions=40000):
    """A C++ file of `functions` small loops: minutes of -O2 for clang or
    g++, so a compiler runs as long as a test needs it (the tests end it)."""
    with open(path, "w") as f:
        for i in range(functions):
            f.write(f"int f{i}(int n) {{ int s = {i}; for (int k = 0; k < n; k++) s = s * 31 + (k ^ (s >> 3)); "
                    f"return s; }}\n")


def run_tests(tests):
    """Runs test functions in order; prints one line each, with its wall
    time (what the suite's 20-minute budget is spent on); exits 1 if any
    failed."""
    failed = 0
    for t in tests:
        start = time.monotonic()
        try:
            t()
            print(f"ok - {t.__name__} ({time.monotonic() - start:.1f} s)")
        except Exception as e:  # report every failure, then fail the test
            failed += 1
            print(f"FAIL - {t.__name__} ({time.monotonic() - start:.1f} s): {e}", file=sys.stderr)
    sys.exit(1 if failed else 0)


def run_selected(tests, *cleanups):
    """A test file's main: as root, the tests named on its command line
    (meson.build gives some to each test entry; none: all of them), a name
    that is not one refused; then each cleanup, also when meson stops the
    test past its timeout (SIGTERM, left through the finally)."""
    require_root()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM"))
    only = sys.argv[1:]
    unknown = [t for t in only if t not in {f.__name__ for f in tests}]
    if unknown:
        sys.exit(f"no such test: {', '.join(unknown)}")
    try:
        run_tests([t for t in tests if not only or t.__name__ in only])
    finally:
        for cleanup in cleanups:
            cleanup()


# Where a complete user stack starts, named by libc's and ld.so's symbols
# (libc6-dbg names glibc's static functions) or the program's own: the
# main thread's stack runs _start -> __libc_start_main ->
# __libc_start_call_main -> main, another thread's clone3 -> start_thread,
# and the dynamic loader's, before main, _start -> _dl_start. A walk that
# reached any of them has passed every frame of the program's own code.
STACK_START_FRAMES = frozenset((
    "main", "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
    "start_thread", "clone3", "__clone3", "clone", "__clone", "_dl_start", "_dl_start_user"))


def user_names(frames):
    """Names of a `query --json` stack's user frames, outermost first (kernel
    frames, always innermost, dropped)."""
    return [f["name"] for f in frames if not f["kernel"]]


def reaches_start(names):
    """Does a user stack (outermost first) reach where its thread started?
    True when any frame is one of STACK_START_FRAMES: an unwinder's walk
    goes outwards from the innermost frame, so a stack holding one of them
    was walked through every frame below it."""
    return any(n in STACK_START_FRAMES for n in names)


def folded_stacks(text):
    """`profctl query --folded` output as (user frames outermost first,
    weight) pairs; kernel frames (flamegraph's `_[k]` suffix) dropped."""
    out = []
    for line in text.splitlines():
        stack, _, weight = line.rpartition(" ")
        names = [n for n in stack.split(";") if n and not n.endswith("_[k]")]
        out.append((names, int(weight)))
    return out


class HeldWorkload:
    """A workload that prints its truth as one JSON line, then stays alive
    until its stdin closes (tests/workloads/unwind_workload.h): profd reads
    the maps of a live process again when its frames fall outside what it
    read at exec (libraries mapped later), not an exited one's. As a context
    manager: `with HeldWorkload(argv) as truth:`; leaving closes its stdin
    and waits for it."""

    def __init__(self, *argv, timeout=120):
        self.argv = [str(a) for a in argv]
        self.timeout = timeout
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(self.timeout)
            raise AssertionError(f"{self.argv[0]} exited {self.proc.returncode} without its truth")
        return json.loads(line)

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.proc.wait(self.timeout)
        self.proc.stdout.close()
        if exc[0] is None and self.proc.returncode != 0:
            raise AssertionError(f"{self.argv[0]} exited {self.proc.returncode}")


def user_processes():
    """Pids of the processes with user memory (kernel threads have none)."""
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/maps") as f:
                    if f.readline():
                        pids.append(int(p))
            except OSError:
                pass
    return pids


def wait_unwinder_loaded(d, timeout=90, quiet=3.0):
    """Waits until profd's unwinder has loaded the processes that ran when
    it started: an entry for most of them (status "unwind" "processes"),
    no table built for `quiet` seconds ("tables_built"; it builds the big
    ones last, one at a time) and none queued ("tables_queued"). The unwind
    tests measure the steady state of an always-on daemon, not its first
    seconds, when a new process waits behind that initial load. Returns the seconds waited; on timeout, says
    so and returns (the test then sees what there is)."""
    want = 0.8 * len(user_processes())
    t0 = time.monotonic()
    built, since = None, t0
    while time.monotonic() - t0 < timeout:
        u = json.loads(d.profctl("status", "--json").stdout).get("unwind") or {}
        if u.get("tables_built") != built:
            built, since = u.get("tables_built"), time.monotonic()
        elif u.get("processes", 0) >= want and not u.get("tables_queued") and time.monotonic() - since >= quiet:
            waited = time.monotonic() - t0
            print(f"  (unwinder loaded {u['processes']} processes, {built} tables, in {waited:.1f} s after start)")
            return waited
        time.sleep(0.2)
    print(f"  (unwinder still loading after {timeout} s: {u}; going on)")
    return timeout
