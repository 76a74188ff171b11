#!/usr/bin/env python3
"""End to end, faults: profd killed in the middle of drains, a disk that
fills up, a store it cannot use, a storm of short-lived processes, kernel
maps too small for the load, and maps that fill within a drain interval. Each test checks what survives and by how much
(integrity, whole drains, counted drops, memory), not merely that profd is
still there."""
import errno
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time

from harness import exchange, settled_rss_kib, memory_kib, sanitized, Profd, binary, run_selected

KIB = 1024
MIB = 1024 * 1024


def status(d, timeout=20):
    return json.loads(d.profctl("status", "--json", timeout=timeout).stdout)


def start_workload(*argv, nice=0):
    """Starts a workload. Many spinning threads run at nice 19: they soak up
    idle CPU (and are sampled) without starving profd, whose BPF verification
    at start alone takes several seconds when it must share 2 CPUs with a
    dozen spinning threads. A single thread runs at normal priority, so it
    gets its samples even when the machine is busy with other work."""
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)


def finish(p, timeout=120):
    out, _ = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"workload {p.args[0]} exited {p.returncode}"
    return json.loads(out)


def stop_workload(p):
    if p and p.poll() is None:
        p.kill()
        p.wait()



def check_store(path):
    """Opens a store profd no longer runs on, read-only. Asserts
    `PRAGMA integrity_check` is ok and every drain is whole: its `samples`
    equals the sum of its cpu samples and `keys` the number of its sample
    rows (the drain row is written first with zeros and completed last, in
    one transaction, so a torn drain would show here), and no sample belongs
    to a drain that does not exist. Returns {drain id: (samples, start_ns, end_ns)}."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ic = db.execute("PRAGMA integrity_check").fetchall()
        assert ic == [("ok",)], f"integrity_check of {path}: {ic}"
        # the samples view decodes every block whatever its WHERE says (a
        # span's entries name their drain only once decoded): one pass,
        # grouped, not a subquery per drain
        rows = db.execute(
            "WITH s AS (SELECT drain_id, sum(CASE WHEN kind = 0 THEN value ELSE 0 END) AS cpu, count(*) AS n "
            "FROM samples GROUP BY drain_id) "
            "SELECT d.id, d.samples, d.keys, d.start_ns, d.end_ns, coalesce(s.cpu, 0), coalesce(s.n, 0) "
            "FROM drains d LEFT JOIN s ON s.drain_id = d.id ORDER BY d.id").fetchall()
        orphans = db.execute("WITH s AS (SELECT DISTINCT drain_id FROM samples) "
                             "SELECT count(*) FROM s WHERE drain_id NOT IN (SELECT id FROM drains)").fetchone()[0]
    finally:
        db.close()
    assert orphans == 0, f"{orphans} samples belong to no drain"
    drains = {}
    for did, samples, keys, start_ns, end_ns, cpu_sum, n_rows in rows:
        assert samples == cpu_sum and keys == n_rows, \
            f"drain {did} is torn: row says {samples} samples/{keys} keys, its samples hold {cpu_sum}/{n_rows}"
        drains[did] = (samples, start_ns, end_ns)
    return drains


def stored_drops(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT reason, sum(count) FROM drops GROUP BY reason").fetchall())
    finally:
        db.close()


# --- 1. SIGKILL in the middle of drains --------------------------------------

# Under AddressSanitizer two kills: what the sanitizer adds (memory errors
# in recovery and restart) shows in the first; the five of the plain run
# are there for the timing of where a kill lands (a minute under ASan).
KILL_ATTEMPTS = 5
KILL_INTERVAL_S = 1.0


def flush_then_sigkill(d, delay):
    """Sends a flush on a raw connection, waits `delay` seconds, SIGKILLs
    profd. Returns (the flush's answer if it came before the kill, or None;
    the kill time in Unix-epoch ns)."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(d.socket)
        s.sendall(b'{"op":"flush"}\n')
        time.sleep(delay)
        kill_ns = time.time_ns()
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(10)
        s.settimeout(5)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:  # reset by the dying daemon
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    lines = [json.loads(l) for l in data.decode().splitlines()]
    return (lines[0] if lines else None), kill_ns


def test_sigkill_mid_drain_loses_at_most_the_interval_in_flight():
    workdir = tempfile.mkdtemp(prefix="profd-kill-")
    store = os.path.join(workdir, "profd.db")
    acked = {}          # drain id -> samples, as a flush answered
    work = None
    in_flight_lost = in_flight_kept = 0
    try:
        attempts = 2 if sanitized() else KILL_ATTEMPTS
        for attempt in range(attempts):
            d = Profd("--frequency", "499", "--interval", "1s", store=store, workdir=workdir)
            d.start()
            try:
                if work is None:
                    # 8 threads in thousands of stacks: drains of ~1000 keys,
                    # long enough (tens of ms) for a kill to land inside one
                    work = start_workload(binary("MANY_STACKS"), 60, 8, nice=19)
                else:
                    # what the killed profd completed is there and queryable
                    st = status(d)
                    assert st["drains"] >= len(acked), (st["drains"], len(acked))
                    total = d.query_json("--since", "1h")["total"]
                    assert total >= sum(acked.values()), \
                        f"after restart the store answers {total} samples, flushes acknowledged {sum(acked.values())}"
                took = []
                last_id = max(acked, default=0)
                for _ in range(3):
                    time.sleep(0.3)
                    t0 = time.monotonic()
                    out = json.loads(d.profctl("flush", "--json").stdout)
                    took.append(time.monotonic() - t0)
                    assert out["type"] == "flushed" and out["drain_id"] > last_id, (out, last_id)
                    last_id = out["drain_id"]
                    acked[out["drain_id"]] = out["samples"]
                # let a timer drain or two happen, then kill within a flush
                time.sleep(random.uniform(0.2, 1.2))
                # profctl's own start is part of `took`: the drain is shorter
                delay = random.uniform(0, 0.7 * max(took))
                answer, kill_ns = flush_then_sigkill(d, delay)
            finally:
                if d.proc.poll() is None:
                    d.stop()
                d.log.close()
            assert d.proc.returncode == -signal.SIGKILL, d.proc.returncode

            drains = check_store(store)
            missing = [i for i in acked if i not in drains]
            assert not missing, f"acknowledged drains {missing} are gone after SIGKILL"
            for i, samples in acked.items():
                assert drains[i][0] == samples, f"drain {i}: flush said {samples} samples, store has {drains[i][0]}"
            if answer and answer.get("type") == "flushed":
                acked[answer["drain_id"]] = answer["samples"]
                assert answer["drain_id"] in drains, f"flush {answer} was answered but is not stored"
                in_flight_kept += 1
            else:
                in_flight_lost += 1
            # what is lost is what came after the last completed drain: at
            # most one interval plus the drain's own time, as this attempt's
            # flushes took it (at least 0.75 s): under AddressSanitizer a
            # first drain took 1.7 s, and 1.81 s were lost once in CI
            last_end = max(e for _, _, e in drains.values())
            gap_s = (kill_ns - last_end) / 1e9
            print(f"  attempt {attempt + 1}: flushes took {max(took) * 1000:.0f} ms at most, killed {delay * 1000:.0f} ms "
                  f"into a flush ({'answered' if answer else 'not answered'}); {len(drains)} drains whole; "
                  f"{gap_s * 1000:.0f} ms of samples lost since the last completed drain")
            assert gap_s < KILL_INTERVAL_S + max(0.75, max(took)), \
                f"the last completed drain ended {gap_s:.2f} s before the kill: more than the interval in flight lost"

        # a last restart: the store still opens, answers and takes drains
        d = Profd("--frequency", "499", "--interval", "1s", store=store, workdir=workdir)
        with d:
            out = json.loads(d.profctl("flush", "--json").stdout)
            assert out["type"] == "flushed" and out["drain_id"] > max(acked), out
            result = d.query_json("--since", "1h", "--pid", str(work.pid))
            assert result["total"] > 0, "the workload's samples are not queryable after the kills"
            names = {f["name"] for st in result["stacks"] for f in st["frames"]}
            assert "leaf_spin" in names, f"workload stacks are not symbolized after the kills: {sorted(names)[:20]}"
            d.stop()
            drains = check_store(store)
            print(f"  {attempts} kills: {len(drains)} drains whole, {len(acked)} acknowledged all kept; "
                  f"in-flight flush stored {in_flight_kept}x, lost {in_flight_lost}x")
    finally:
        stop_workload(work)
        shutil.rmtree(workdir, ignore_errors=True)


# --- 2. disk full --------------------------------------------------------------

FAILED_FLUSHES = 3


def fill(directory):
    """Writes a filler file until the file system refuses; returns its path
    and size."""
    path = os.path.join(directory, "filler")
    size = 0
    with open(path, "wb", buffering=0) as f:
        chunk = b"\0" * (16 * KIB)
        while True:
            try:
                n = f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                break
            size += n
    return path, size


def test_disk_full_counts_failed_drains_and_recovers():
    workdir = tempfile.mkdtemp(prefix="profd-full-")
    mnt = os.path.join(workdir, "small")
    os.mkdir(mnt)
    # mode=0750: profd refuses a store directory others may write (tmpfs:
    # 1777). 8 MiB: the first drain of a busy machine (every process's
    # stacks and symbols) once needed more than 2 under AddressSanitizer
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M,mode=0750", "tmpfs", mnt], check=True)
    work = None
    # interval 1h: only flushes drain, so the failed drains are counted exactly
    d = Profd("--interval", "1h", store=os.path.join(mnt, "profd.db"), workdir=workdir)
    try:
        d.start()
        work = start_workload(binary("CPU_SPLIT"), 30)
        time.sleep(1)
        # a first drain symbolizes the whole machine: 28 s under
        # AddressSanitizer on a loaded machine
        first = json.loads(d.profctl("flush", "--json", timeout=180).stdout)
        assert first["type"] == "flushed", first

        filler, filled = fill(mnt)
        print(f"  store on an 8 MiB tmpfs; filler of {filled // KIB} KiB took the rest")
        for i in range(FAILED_FLUSHES):
            time.sleep(0.5)
            reply = exchange(d.socket, [b'{"op":"flush"}'])
            assert len(reply) == 1 and reply[0]["type"] == "error", f"flush on a full disk answered {reply}"
            print(f"  flush {i + 1} on the full disk: {reply[0]['error']}")
        r = d.profctl("flush", check=False)
        assert r.returncode == 1 and r.stderr, (r.returncode, r.stdout, r.stderr)
        assert d.proc.poll() is None, "profd died on a full disk:\n" + d.read_log()
        st = status(d)
        failed = st["drops"]["store_write_failed"]
        assert failed == FAILED_FLUSHES + 1, \
            f"status counts {failed} failed drains, {FAILED_FLUSHES + 1} flushes failed"

        os.unlink(filler)
        # a workload of its own after the disk is freed: on a loaded machine
        # under AddressSanitizer the flushes above took over 100 s, and the
        # first workload had ended by then
        stop_workload(work)
        t_free = time.time()
        work = start_workload(binary("CPU_SPLIT"), 5)
        time.sleep(1)
        # the drain after the failed ones writes again what their rollback
        # forgot was stored: as slow as a first one
        out = json.loads(d.profctl("flush", "--json", timeout=180).stdout)
        assert out["type"] == "flushed" and out["drain_id"] > first["drain_id"] and out["samples"] > 0, out
        st = status(d)
        assert st["drops"]["store_write_failed"] == FAILED_FLUSHES + 1, \
            f"after recovery status counts {st['drops']['store_write_failed']} failed drains"
        # the new drain is queryable: samples of the workload since the disk freed up
        since = f"{int((time.time() - t_free) * 1000) + 200}ms"
        result = d.query_json("--pid", str(work.pid), "--since", since)
        assert result["total"] > 0, f"no samples of the workload stored after the disk freed up ({since})"
        print(f"  after freeing: drain {out['drain_id']} stored {out['samples']} samples; "
              f"workload has {result['total']} samples in the last {since}")
        assert d.stop() == 0, d.read_log()
        # the count is stored with the drain that succeeded, not only in memory
        drops = stored_drops(d.store)
        assert drops.get("store_write_failed") == FAILED_FLUSHES + 1, f"stored drops: {drops}"
        check_store(d.store)
    finally:
        stop_workload(work)
        if d.proc and d.proc.poll() is None:
            d.stop()
        subprocess.run(["umount", mnt], check=False)
        d.cleanup()


# --- 3. a store profd cannot use -----------------------------------------------

def run_profd(workdir, store, timeout=20):
    t0 = time.monotonic()
    r = subprocess.run([binary("PROFD"), "--config", "/dev/null", "--socket", os.path.join(workdir, "s.sock"),
                        "--store", store], capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_unusable_store_is_refused_at_start_and_left_alone():
    workdir = tempfile.mkdtemp(prefix="profd-store-")
    try:
        # (a) paths that can't hold a file: the store is a directory; its
        # parent is a regular file. (Root reads files of mode 000, so
        # permissions can't make a store unreadable here; these are real.)
        as_dir = os.path.join(workdir, "dir.db")
        os.mkdir(as_dir)
        parent_file = os.path.join(workdir, "plainfile")
        open(parent_file, "w").close()
        for store in (as_dir, os.path.join(parent_file, "profd.db")):
            r, took = run_profd(workdir, store)
            assert r.returncode != 0 and took < 10, (store, r.returncode, took)
            assert store in r.stderr, f"the message does not name {store}:\n{r.stderr}"
            print(f"  {store}: exit {r.returncode} in {took:.1f} s")

        # (b) not a database: random bytes and a text file
        rnd = random.Random(1234)
        for name, content in (("random.db", bytes(rnd.getrandbits(8) for _ in range(64 * KIB))),
                              ("text.db", b"this is a shopping list, not a profd store\n" * 100)):
            store = os.path.join(workdir, name)
            with open(store, "wb") as f:
                f.write(content)
            before, mtime = digest(store), os.stat(store).st_mtime_ns
            r, took = run_profd(workdir, store)
            assert r.returncode == 1 and took < 10, (name, r.returncode, took, r.stderr)
            assert store in r.stderr and "not usable" in r.stderr and "Move it aside" in r.stderr, r.stderr
            assert digest(store) == before and os.stat(store).st_mtime_ns == mtime, f"{name} was modified"
            print(f"  {name}: exit 1, file untouched")

        # (d) a store that exists but cannot be written (immutable, which
        # even root cannot write): SQLite quietly opens it read-only, so
        # profd must notice at start rather than lose every drain later
        store = os.path.join(workdir, "immutable.db")
        with Profd(store=store, workdir=tempfile.mkdtemp(dir=workdir)) as d:
            d.stop()
        if subprocess.run(["chattr", "+i", store], capture_output=True).returncode == 0:
            try:
                r, took = run_profd(workdir, store, timeout=10)
            except subprocess.TimeoutExpired:
                r, took = None, 10
            finally:
                subprocess.run(["chattr", "-i", store], check=False)
            assert r is not None, "profd started on a store it cannot write (immutable) and kept running"
            assert r.returncode != 0 and store in r.stderr, (r.returncode, r.stderr)
            print(f"  immutable store: exit {r.returncode} in {took:.1f} s")
        else:
            print("  (chattr +i not supported on this file system; the read-only store case did not run)")

        # (c) missing store and missing directories: created fresh
        store = os.path.join(workdir, "new", "sub", "profd.db")
        with Profd(store=store, workdir=tempfile.mkdtemp(dir=workdir)) as d:
            st = status(d)
            assert st["drains"] == 0 and st["samples"] == 0 and st["store_path"] == store, st
            out = json.loads(d.profctl("flush", "--json").stdout)
            assert out["drain_id"] == 1, out
            assert d.stop() == 0
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            assert db.execute("PRAGMA user_version").fetchone()[0] >= 1
        finally:
            db.close()
        assert len(check_store(store)) == 2  # the flush and the drain at SIGTERM
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# --- 4. a storm of short-lived processes ---------------------------------------

STORM_S = 10
HWM_LIMIT_KIB = 64 * KIB        # generous: profd starts at ~25 MiB with kallsyms loaded
GROWTH_LIMIT_KIB = 8 * KIB      # RSS after the storm vs before it (after a warm-up)
# processes_tracked after the storm may exceed its value before by what the
# rest of the machine (other test suites, say) started meanwhile: 50, or a
# tenth of what the storm added (thousands), whichever is more
PRUNED_SLACK = 50


def bpf_map_rss_kib(pid):
    """Resident KiB of the BPF maps mapped into process pid (/proc/PID/smaps):
    the ring buffer and the global variables, not the unwind arrays."""
    total, in_map = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):
                in_map = line.rstrip().endswith("anon_inode:bpf-map")
            elif in_map and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def test_process_storm_keeps_memory_bounded_and_table_pruned():
    with Profd("--frequency", "499", "--interval", "1s") as d:
        # Two storms as long as the real one first: SQLite's page cache, the
        # allocator's arenas, the symbols of the storm binary and what is
        # sized by the most processes tracked at once (the process table's
        # slots, the store's id caches, up to 16384 ids) reach their working
        # size, so growth over the real storm is what the storm leaves
        # behind. After a 2 s warm-up the real storm still added 4-10 MiB of
        # heap in use (mallinfo2), the more the busier the host. On a quiet
        # host (6,400 forks/s) settled RSS after four storms in a row went
        # 37.8, 42.8, 44.8, 44.7 MiB: one warm-up storm left 9 MiB of growth
        # (a CI failure), two leave 2 MiB or less; a leak of 1 MiB a drain
        # adds its 20 MiB to every storm. On 2026-11-27 two warm-ups still
        # left 2-9.5 MiB of growth over 17 runs: 4 failures, all in the 10
        # runs of schema 10's build; 59728a0's 7 runs reached 7 MiB. Side
        # by side under the same storms the two grew +6 (59728a0) and -1
        # MiB after two warm-ups, -3 to +3 after each further storm: no
        # sign that one keeps more. Three warm-ups.
        # Under AddressSanitizer the memory limits are not checked (below),
        # so the warm-up, which only serves them, is skipped: 23 s of the
        # suite's budget.
        if not sanitized():
            for _ in range(3):
                finish(start_workload(binary("STORM"), STORM_S, 4))
            time.sleep(3)  # the warm-up's processes are forgotten
        d.profctl("flush")
        pre = status(d)
        assert "processes_tracked" in pre, "status has no processes_tracked"
        rss0, hwm0 = memory_kib(d.proc.pid)
        settled0, copies0 = settled_rss_kib(d.proc.pid, d.store)
        storm = start_workload(binary("STORM"), STORM_S, 4)
        peak_tracked, slowest, rss_max = pre["processes_tracked"], 0.0, rss0
        while storm.poll() is None:
            time.sleep(0.5)
            t0 = time.monotonic()
            st = status(d)
            slowest = max(slowest, time.monotonic() - t0)
            peak_tracked = max(peak_tracked, st["processes_tracked"])
            rss_max = max(rss_max, memory_kib(d.proc.pid)[0])
        truth = finish(storm)
        # two intervals to notice the exits and one more to forget them;
        # the fewest entries seen counts (other work on the machine comes
        # and goes)
        pruned_limit = pre["processes_tracked"] + max(PRUNED_SLACK, (peak_tracked - pre["processes_tracked"]) // 10)
        deadline = time.monotonic() + 10
        least = None
        while True:
            time.sleep(1)
            post = status(d)
            least = min(post["processes_tracked"], least if least is not None else post["processes_tracked"])
            if least <= pruned_limit or time.monotonic() > deadline:
                break
        rss1, hwm1 = memory_kib(d.proc.pid)
        settled1, copies1 = settled_rss_kib(d.proc.pid, d.store)
        print(f"  storm: {truth['forks']} forks ({truth['per_second']}/s), {truth['execs']} execs in {truth['seconds']} s")
        print(f"  processes_tracked: {pre['processes_tracked']} before, {peak_tracked} at peak, "
              f"{least} after")
        print(f"  profd memory: RSS {rss0 // KIB} MiB before, {rss_max // KIB} MiB max during, {rss1 // KIB} MiB after; "
              f"high-water {hwm1 // KIB} MiB; slowest status during the storm {slowest * 1000:.0f} ms")
        print(f"  drops: " + ", ".join(f"{k} {post['drops'][k]}" for k in sorted(post["drops"])))
        # a storm worth the name: hundreds of processes alive and gone
        # within the run (how fast it forks depends on the machine and on
        # what profd does per new process; docs/performance.md measures
        # that, not this test)
        assert truth["forks"] >= 100 * STORM_S, f"the storm forked only {truth['forks']} processes"
        assert truth["failed"] == 0, truth
        assert d.proc.poll() is None
        if sanitized():
            print("  NOTE: profd is built with AddressSanitizer: its memory figures are ASan's, "
                  "the memory limits are NOT checked in this run (they are in the plain build)")
        else:
            # the symbol cache is bounded by its own budget (symbol_cache)
            # between drains, and shown in status; within a drain it grows
            # with the DWARF of whatever the host runs (its heap, and the
            # mapped copies of debug sections), which is not the storm's:
            # symbol_peak_bytes is the most both came to at a drain's end
            cache = post.get("symbol_cache_bytes", 0) // 1024
            mapped = post["symbol_mapped_bytes"] // 1024
            sym_peak = post["symbol_peak_bytes"] // 1024
            assert sym_peak >= cache, f"symbol_peak_bytes {sym_peak} KiB below symbol_cache_bytes {cache} KiB"
            # the unwind tables' arrays (unwind_memory) are the kernel's:
            # profd maps only the slice it writes, while it writes it, so
            # at most the largest slice was in its RSS at once (in the
            # high-water mark), and none of it stays
            tables = post["unwind"]["mapped_bytes"] // 1024
            resident = bpf_map_rss_kib(d.proc.pid)
            assert resident < 4 * KIB, f"{resident} KiB of BPF maps stay mapped in profd's RSS"
            print(f"  symbols: {cache // KIB} MiB heap and {mapped // KIB} MiB of DWARF copies mapped now, "
                  f"{sym_peak // KIB} MiB at the peak; largest unwind slice mapped: {tables} KiB, "
                  f"BPF maps resident: {resident} KiB; high-water less symbols' peak and slice: "
                  f"{(hwm1 - sym_peak - tables) // KIB} MiB")
            assert hwm1 - sym_peak - tables < HWM_LIMIT_KIB, \
                f"profd's memory high-water mark is {hwm1} KiB ({sym_peak} KiB of it symbols at their peak, " \
                f"{tables} KiB unwind tables)"
            # growth: RSS less the DWARF copies' resident pages (smaps),
            # settled (the least over 2.5 s, drains every second), less the
            # growth of the symbols' heap. A drain touches pages of the
            # copies and gives them back at its end, and holds its working
            # heap until then: one reading of VmRSS within a drain and one
            # between moved by up to the copies' mapped size and the
            # drain's heap (+17 MiB with 1.6 MiB of symbols' heap, once,
            # failing). Anonymous memory that stays, where a leak would be,
            # is in every reading and is counted with no allowance for the
            # copies at all.
            heap_growth = max(0, cache - pre["symbol_cache_bytes"] // 1024)
            growth = settled1 - settled0
            print(f"  RSS less the DWARF copies' pages, settled: {settled0 // KIB} MiB before "
                  f"({copies0 // KIB} MiB of copies resident then), {settled1 // KIB} MiB after "
                  f"({copies1 // KIB} MiB); symbols' heap grew {heap_growth // KIB} MiB")
            assert growth - heap_growth < GROWTH_LIMIT_KIB, \
                f"profd's RSS less the DWARF copies grew by {growth} KiB over the storm ({heap_growth} KiB of it " \
                f"the symbols' heap); VmRSS {rss0} -> {rss1} KiB"
        # status's rss_bytes is /proc's VmRSS: read around one status call,
        # since a drain between them moves it (it maps and gives back the
        # DWARF copies' pages, megabytes within a second)
        rss_a = memory_kib(d.proc.pid)[0]
        st = status(d)
        rss_b = memory_kib(d.proc.pid)[0]
        rss_st = st["rss_bytes"] // KIB
        assert min(rss_a, rss_b) - 4 * KIB < rss_st < max(rss_a, rss_b) + 4 * KIB, \
            f"status rss_bytes {rss_st} KiB vs /proc VmRSS {rss_a} KiB before, {rss_b} KiB after"
        # its breakdown adds up: anonymous and file pages are the RSS of
        # the same reading (less shared memory: the store's -shm when it
        # is on tmpfs); SQLite's heap is part of malloc's
        mem = st["memory"]
        assert mem["rss_bytes"] == st["rss_bytes"], mem
        assert 0 <= mem["rss_bytes"] - mem["anon_bytes"] - mem["file_bytes"] <= KIB * KIB, mem
        assert mem["sqlite_bytes"] > 0, mem
        # glibc's malloc counts SQLite's heap in its own; a malloc that
        # replaced it (AddressSanitizer's) reports nothing to mallinfo2
        if mem["heap_in_use_bytes"] > 0:
            assert mem["sqlite_bytes"] < mem["heap_in_use_bytes"], mem
        assert slowest < 5, f"status took {slowest:.1f} s to answer during the storm"
        for reason in ("process_vanished", "ringbuf_full"):
            assert isinstance(post["drops"].get(reason), int) and post["drops"][reason] >= 0, post["drops"]
        # the storm reached profd: its processes grew the table and the store
        assert peak_tracked >= pre["processes_tracked"] + 200, \
            f"the table never grew during the storm (peak {peak_tracked}, before {pre['processes_tracked']})"
        assert least <= pruned_limit, \
            f"the process table was not pruned: {least} entries at least, {pre['processes_tracked']} before the " \
            f"storm, {peak_tracked} at its peak"
        d.stop()
        db = sqlite3.connect(f"file:{d.store}?mode=ro", uri=True)
        try:
            stored = db.execute("SELECT count(*) FROM processes WHERE comm = 'storm'").fetchone()[0]
        finally:
            db.close()
        print(f"  {stored} storm processes stored with samples")
        assert stored >= 50, f"only {stored} storm processes have samples in the store"


# --- 5. kernel maps too small --------------------------------------------------

def tiny_maps_run(max_keys):
    """cpu only, so every sample BPF saw is either stored or counted as
    map_full: the books must balance. Returns the drops and the samples
    stored with a [lost] stack."""
    with Profd("--kinds", "cpu", "--frequency", "499", "--interval", "1s",
               "--max-keys", str(max_keys), "--max-stacks", "64") as d:
        work = start_workload(binary("MANY_STACKS"), 5, 16, nice=19)
        truth = finish(work)
        out = json.loads(d.profctl("flush", "--json").stdout)
        assert out["type"] == "flushed", out
        st = status(d)
        drops = st["drops"]
        seen = st["samples_seen"] - st["idle_samples"]
        print(f"  {max_keys} keys: {seen} samples seen, {st['samples']} stored; drops: "
              + ", ".join(f"{k} {v}" for k, v in sorted(drops.items()) if v))
        assert drops["stack_map_full"] > 0, f"64 stacks held 4096 distinct stacks without a drop? {drops}"
        # the books balance: stored + dropped = seen, within the samples that
        # land between a drain's flip and its reading of the counters (read
        # at once after the flip: a few; read after the maps, as before, the
        # whole drain's, 304 of 5655 once in CI under AddressSanitizer)
        slack = 0.02
        assert abs(seen - (st["samples"] + drops["map_full"])) <= slack * seen + 20, \
            f"{seen} samples seen, {st['samples']} stored + {drops['map_full']} dropped"
        # queries still work
        result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
        assert result["total"] > 0, "no samples of the workload stored"
        every = d.query_json("--since", "5m")
        lost = sum(s["value"] for s in every["stacks"] if any(f["name"] == "[lost]" for f in s["frames"]))
        print(f"  workload: {result['total']} samples stored; {lost} of all samples stored with a [lost] stack")
        assert st["drains"] >= 1 and d.proc.poll() is None
        return drops, lost


def test_tiny_kernel_maps_count_what_they_drop():
    # 16 keys are full long before the 64 stacks: samples past them are
    # counted as map_full
    drops, _ = tiny_maps_run(16)
    assert drops["map_full"] > 0, f"16 keys held 16 threads x 4096 stacks without a drop? {drops}"
    # 256 keys outlast the 64 stacks: a sample whose stack found no room is
    # kept with a [lost] stack (with 16 keys, whether such a sample found a
    # key before they were all taken was a race, lost more often than not)
    _, lost = tiny_maps_run(256)
    assert lost > 0, "no [lost] stack, yet stacks were dropped"


def early_drain_run(max_stacks, seconds):
    """The sampler alone at 99 Hz over many_stacks' thousands of distinct
    stacks, with a drain interval longer than the run: only a drain made
    early by the fill check can empty the stack maps. Returns (status
    after a flush, the workload's truth, profctl status's text)."""
    with Profd("--kinds", "cpu", "--frequency", "99", "--interval", "1h",
               "--max-keys", "4096", "--max-stacks", str(max_stacks)) as d:
        work = start_workload(binary("MANY_STACKS"), seconds, 4, nice=19)
        truth = finish(work)
        out = json.loads(d.profctl("flush", "--json").stdout)
        assert out["type"] == "flushed", out
        text = d.profctl("status").stdout
        assert d.proc.poll() is None
        return status(d), truth, text


def test_nearly_full_maps_drain_early():
    # 4000 stacks: 1400 nodes of 8 frames, where many_stacks' stacks go
    # (16 frames without the leaf: two such nodes, the outer one shared by
    # the chains of the same first five levels). Its 4096 chains bring new
    # nodes for the whole run, at 99 Hz on 2 CPUs about 200 samples and
    # about as many new nodes a second: more than the class holds within
    # the run, less than the quarter of it left when the check (every
    # second) finds it 3/4 full. Here: 2 early drains and no stack lost;
    # main before the check lost 956 stacks of 3170 samples.
    st, truth, text = early_drain_run(4000, 16)
    drops = st["drops"]
    seen = st["samples_seen"] - st["idle_samples"]
    print(f"  {seen} samples seen, {st['samples']} stored in {st['drains']} drains "
          f"({st['drains_early']} early); stack_map_full {drops['stack_map_full']}, map_full {drops['map_full']}")
    # the interval (1h) never came: every drain but the flush was early
    assert st["drains_early"] >= 2, f"no early drain: {st['drains_early']} ({st['drains']} drains)"
    assert st["drains"] >= st["drains_early"] + 1
    # and the stacks found room: without the early drains the class fills
    # within the run and every later new stack is lost (hundreds)
    assert drops["stack_map_full"] <= 0.01 * seen, \
        f"{drops['stack_map_full']} stacks lost of {seen} samples despite {st['drains_early']} early drains"
    assert drops["map_full"] == 0
    assert f"({st['drains_early']} early: a kernel map was nearly full)" in text, text


if __name__ == "__main__":
    run_selected([
        test_sigkill_mid_drain_loses_at_most_the_interval_in_flight,
        test_disk_full_counts_failed_drains_and_recovers,
        test_unusable_store_is_refused_at_start_and_left_alone,
        test_process_storm_keeps_memory_bounded_and_table_pruned,
        test_tiny_kernel_maps_count_what_they_drop,
        test_nearly_full_maps_drain_early,
    ])
