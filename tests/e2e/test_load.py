#!/usr/bin/env python3
"""End to end, load and hostile clients: a hundred clients querying at once
while profd drains every second, a client that never reads its answers, a
client that says nothing, one client too many, and JSON nested as deep as a
request line allows. Answers must be complete and right, drains on time,
memory bounded, and misbehaving clients closed with a reason."""
import json
import os
import select
import socket
import sqlite3
import subprocess
import threading
import time

from harness import dwarf_copies_kib, memory_kib, sanitized, Profd, binary, require_root, run_tests

KIB = 1024
MIB = 1024 * 1024


def status(d, timeout=20):
    return json.loads(d.profctl("status", "--json", timeout=timeout).stdout)


def start_workload(*argv, nice=0):
    """Starts a workload; many spinning threads run at nice 19, sampled
    whenever they run but never starving profd or the clients under test."""
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)


def stop_workload(p):
    if p and p.poll() is None:
        p.kill()
        p.wait()


def connect(path, timeout=20):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    return s


class LineReader:
    """Reads JSON lines from a socket; a response ends with its last line
    (type end, status, flushed or error)."""
    FINAL = ("end", "status", "flushed", "error")

    def __init__(self, sock):
        self.file = sock.makefile("rb")

    def line(self):
        line = self.file.readline()
        if not line.endswith(b"\n"):
            raise EOFError("connection closed with %d bytes of a partial line" % len(line))
        return json.loads(line)

    def response(self):
        lines = []
        while True:
            o = self.line()
            lines.append(o)
            if o["type"] in self.FINAL:
                return lines

    def rest(self):
        """Every line until the daemon closes the connection."""
        return [json.loads(l) for l in self.file.readlines()]


def read_until_closed(sock):
    """Every line until the daemon closes the connection. A reset after the
    last line counts as closed: the daemon closes with our unread input still
    queued, which Linux reports to us as a reset."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return [json.loads(l) for l in data.splitlines()]


def answer_bytes(path, line):
    """The size of the raw answer to one request."""
    with connect(path, timeout=60) as s:
        s.sendall(line)
        s.shutdown(socket.SHUT_WR)
        n = 0
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                return n
            n += len(chunk)



def check_query_response(lines, what):
    """A query response is complete and self-consistent: stack lines, then an
    end line whose stacks and total match them."""
    end = lines[-1]
    assert end["type"] == "end", f"{what}: ended with {end}"
    stacks = lines[:-1]
    assert all(l["type"] == "stack" and l["frames"] and l["value"] > 0 for l in stacks), f"{what}: bad stack line"
    assert end["stacks"] == len(stacks), f"{what}: end says {end['stacks']} stacks, {len(stacks)} sent"
    assert end["total"] == sum(l["value"] for l in stacks), f"{what}: total {end['total']} != sum of values"
    return end


def drain_ends(store):
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return [r[0] for r in db.execute("SELECT end_ns FROM drains ORDER BY id")]
    finally:
        db.close()


# --- 6. a hundred clients at once ----------------------------------------------

N_CLIENTS = 100
ROUNDS = 1
INTERVAL_S = 1.0


def test_hundred_concurrent_clients_get_complete_answers_and_drains_stay_on_time():
    work = None
    with Profd("--frequency", "99", "--interval", "1s") as d:
        try:
            work = start_workload(binary("CPU_SPLIT"), 40)
            time.sleep(3)
            d.profctl("flush")
            # what a dashboard or a person asks: recent windows, one process,
            # every kind (a window of hours over the whole machine would take
            # the single-threaded loop a second per query, a known limit)
            requests = [
                (b'{"op":"status"}', "status"),
                (b'{"op":"query","since":"10s"}', "cpu"),
                (b'{"op":"query","since":"1m","comm":"cpu_split"}', "cpu"),
                (('{"op":"query","since":"1m","pid":%d}' % work.pid).encode(), "cpu-pid"),
                (b'{"op":"query","kind":"offcpu","since":"10s"}', "offcpu"),
                (b'{"op":"query","kind":"wakeup","since":"10s","state":"S"}', "wakeup"),
                (b'{"op":"status"}', "status"),
            ]
            # AddressSanitizer makes profd several times slower: waits (not
            # the checks) are scaled for it
            slow = 5 if sanitized() else 1
            connected = threading.Barrier(N_CLIENTS + 1, timeout=60 * slow)
            go = threading.Barrier(N_CLIENTS + 1, timeout=60 * slow)
            results, errors = [None] * N_CLIENTS, []

            def client(i):
                try:
                    with connect(d.socket, timeout=120 * slow) as s:
                        connected.wait()
                        go.wait()
                        t0 = time.monotonic()
                        reader = LineReader(s)
                        answers = []
                        for _round in range(ROUNDS):
                            s.sendall(b"".join(r + b"\n" for r, _ in requests))
                            for _, what in requests:
                                answers.append((what, reader.response()))
                        results[i] = (time.monotonic() - t0, answers)
                except Exception as e:  # collected and reported below
                    errors.append(f"client {i}: {e!r}")
                    for b in (connected, go):
                        b.abort()

            threads = [threading.Thread(target=client, args=(i,)) for i in range(N_CLIENTS)]
            t_start = time.time_ns()
            for t in threads:
                t.start()
            connected.wait()
            held = status(d)["clients"]  # the hundred, plus this status client
            go.wait()
            for t in threads:
                t.join(120 * slow)
            t_end = time.time_ns()
            assert not errors, errors[:5]
            assert all(r is not None for r in results), "some clients never finished"

            answered = 0
            for i, (took, answers) in enumerate(results):
                for what, lines in answers:
                    if what == "status":
                        assert len(lines) == 1 and lines[0]["type"] == "status", f"client {i}: {lines}"
                    else:
                        end = check_query_response(lines, f"client {i} {what}")
                        if what in ("cpu", "cpu-pid"):
                            assert end["total"] > 0, f"client {i}: {what} found no samples"
                    answered += 1
            slowest = max(r[0] for r in results)
            print(f"  {N_CLIENTS} clients held at once (status counted {held}); {answered} answers, all complete; "
                  f"slowest client {slowest:.2f} s")
            assert held == N_CLIENTS + 1, f"status counted {held} clients, {N_CLIENTS + 1} were connected"
            time.sleep(2 * INTERVAL_S)  # the drains right after the load, too
        finally:
            stop_workload(work)
        d.stop()
        ends = drain_ends(d.store)
        # every timer drain is re-armed one interval after the previous one
        # ended; with the loop busy with clients it must still come on time
        during = [e for e in ends if t_start - 2e9 <= e <= t_end + 2e9]
        gaps = [(b - a) / 1e9 for a, b in zip(during, during[1:])]
        median = sorted(gaps)[len(gaps) // 2]
        print(f"  {len(during)} drains around the load; gaps between drains {min(gaps):.2f}..{max(gaps):.2f} s, "
              f"median {median:.2f} s")
        assert len(during) >= 3, f"only {len(during)} drains around {(t_end - t_start) / 1e9:.1f} s of load"
        # on time: the drains keep their pace, and none is skipped. One may
        # wait for the request the loop is serving: on 2 CPUs with the
        # hundred clients the longest gap was 1.18-1.94 s in 10 runs before
        # and after this bound was set, and 2.15 s once in CI. A gap is the
        # interval plus the previous drain's own time (the timer is re-armed
        # when a drain ends), which the clients slow: the median was 1.24 s
        # once in CI. A skipped drain would make it 2 s.
        assert median < 1.5 * INTERVAL_S, f"drains came every {median:.2f} s (median; interval 1 s)"
        assert max(gaps) < 3 * INTERVAL_S, f"a drain came {max(gaps):.2f} s after the previous one (interval 1 s)"


# --- 7. a client that never reads ----------------------------------------------

STUCK_TIMEOUT_S = 5


def test_client_that_never_reads_is_capped_and_disconnected_others_unaffected():
    work = None
    with Profd("--frequency", "499", "--interval", "1s", "--client-timeout", f"{STUCK_TIMEOUT_S}s") as d:
        try:
            # thousands of distinct stacks: large answers
            work = start_workload(binary("MANY_STACKS"), 60, 8, nice=19)
            time.sleep(4)
            d.profctl("flush")
            req = b'{"op":"query","since":"1h"}\n'
            one = answer_bytes(d.socket, req)
            rss0, hwm0 = memory_kib(d.proc.pid)
            all0, copies0 = dwarf_copies_kib(d.proc.pid, d.store)
            st0 = status(d)
            cache0 = st0["symbol_cache_bytes"] // 1024
            # the DWARF copies mapped (their size, status after each drain)
            # and RSS less their resident pages (smaps), while it is stuck
            mapped_max = st0["symbol_mapped_bytes"] // 1024
            noncopy_max = all0 - copies0

            def other_client():
                """The longest wait of another client's status and query."""
                nonlocal mapped_max
                t0 = time.monotonic()
                st = status(d, timeout=10)
                t1 = time.monotonic()
                mapped_max = max(mapped_max, st["symbol_mapped_bytes"] // 1024)
                q = d.query_json("--since", "5s")
                t2 = time.monotonic()
                assert st["type"] == "status" and q["total"] > 0
                return max(t1 - t0, t2 - t1)

            baseline = max(other_client() for _ in range(3))

            t_stuck = time.time_ns()
            stuck = socket.socket(socket.AF_UNIX)
            stuck.connect(d.socket)
            stuck.setblocking(False)
            pending, sent = req * 200, 0
            latencies = []
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                if sent < len(pending):
                    try:
                        sent += stuck.send(pending[sent:])
                    except BlockingIOError:
                        pass  # the daemon stopped reading it: the cap at work
                    except OSError:
                        break  # it was disconnected already
                latencies.append(other_client())
                total, copies = dwarf_copies_kib(d.proc.pid, d.store)
                noncopy_max = max(noncopy_max, total - copies)
                time.sleep(0.2)
            rss1, hwm1 = memory_kib(d.proc.pid)
            all1, copies1 = dwarf_copies_kib(d.proc.pid, d.store)
            noncopy_max = max(noncopy_max, all1 - copies1)
            t_stuck_end = time.time_ns()
            cache1 = status(d)["symbol_cache_bytes"] // 1024
            # what profd may hold for it, whatever the size of its answers
            # (docs/reliability.md): a query worker stops making its answer
            # while 1 MiB waits for the client and the client has 1 MiB
            # unread, so the answer in flight is at most 3 MiB and a line;
            # the two query workers keep at most 32768 locations each (about
            # 12 MiB) between queries; 20 MiB for SQLite's page caches, the
            # writer's own growth and the allocator; the working set of the
            # two queries that may be running (the stuck client's, stalled
            # half-way, and another client's): each holds its window's
            # stacks summed, bounded by one answer, not by how many were
            # asked (a clean-clone CI run peaked 61 MiB above the start
            # outside the symbol cache with 19 MB answers, over the 48 MiB
            # this allowed without that term); plus what the symbol cache
            # (bounded on its own, shown in status) grew meanwhile. Not the
            # 200 answers it asked for.
            allowance = 4 * KIB + 2 * 12 * KIB + 20 * KIB + 2 * (one // 1024) + max(0, cache1 - cache0)
            # The symbols' DWARF copies: a drain (every second) touches
            # their pages and gives them back at its end. They are in the
            # high-water mark by however much a drain had touched at that
            # moment, which is at most what was mapped (status) less what
            # was resident already at the start: that much more is allowed
            # there. A leak is anonymous memory and stays, so RSS less the
            # copies' resident pages (smaps, sampled with every round of
            # the other client) is held to the allowance without it.
            copies_room = max(0, mapped_max - copies0)
            hwm_allowed = max(hwm0, rss0 + allowance + copies_room)
            noncopy_allowed = all0 - copies0 + allowance
            print(f"  one answer is {one // KIB} KiB; the stuck client got {sent // len(req)} of 200 queries in "
                  f"({sent // len(req) * one // MIB} MiB of answers asked for)")
            print(f"  others: a status or query took {max(latencies) * 1000:.0f} ms at worst "
                  f"({baseline * 1000:.0f} ms before the stuck client); profd RSS "
                  f"{rss0 // KIB} -> {rss1 // KIB} MiB, high-water {hwm0 // KIB} -> {hwm1 // KIB} MiB "
                  f"(allowed {hwm_allowed // KIB} MiB, of which the symbol cache's growth "
                  f"{max(0, cache1 - cache0) // KIB} MiB and DWARF copies {copies_room // KIB} MiB); "
                  f"less the copies' resident pages {(all0 - copies0) // KIB} -> at most {noncopy_max // KIB} MiB "
                  f"(allowed {noncopy_allowed // KIB} MiB)")
            # every property is checked, then all that failed are reported
            problems = []
            # its queries run on a query worker, which waits for it: the
            # drains (every 1 s) must not
            ends = [e for e in drain_ends(d.store) if t_stuck <= e <= t_stuck_end]
            gaps = [(b - a) / 1e9 for a, b in zip(ends, ends[1:])]
            print(f"  {len(ends)} drains while it did not read; gaps {min(gaps or [0]):.2f}..{max(gaps or [0]):.2f} s")
            if len(ends) < 3 or max(gaps) >= 2.0:
                problems.append(f"drains while a client did not read: {len(ends)} in "
                                f"{(t_stuck_end - t_stuck) / 1e9:.1f} s, largest gap {max(gaps or [0]):.2f} s")
            # "within a second or two": 2 s more than the same request took
            # before, which allows for a busy machine
            if max(latencies) >= 2.0 + baseline:
                problems.append(f"another client waited {max(latencies):.1f} s while one did not read "
                                f"({baseline:.1f} s before it came)")
            if sanitized():
                print("  NOTE: profd is built with AddressSanitizer: the memory limit is NOT checked in this "
                      "run (it is in the plain build)")
            else:
                if hwm1 >= hwm_allowed:
                    problems.append(f"profd's memory peaked at {hwm1 // KIB} MiB for a client that does not read "
                                    f"(started at {rss0 // KIB} MiB, answers of {one // KIB} KiB, "
                                    f"{mapped_max // KIB} MiB of DWARF copies mapped, {hwm0 // KIB} MiB high-water mark)")
                if noncopy_max >= noncopy_allowed:
                    problems.append(f"profd's RSS less its DWARF copies' pages reached {noncopy_max // KIB} MiB for a "
                                    f"client that does not read (started at {(all0 - copies0) // KIB} MiB, "
                                    f"answers of {one // KIB} KiB)")

            # and it is disconnected once it makes no progress for the timeout
            poller = select.poll()
            poller.register(stuck, select.POLLRDHUP | select.POLLHUP)
            t0 = time.monotonic()
            events = poller.poll((STUCK_TIMEOUT_S + 10) * 1000)
            waited = time.monotonic() - t0
            after = status(d)
            print(f"  stuck client {'disconnected' if events else 'STILL CONNECTED'} {waited:.1f} s after the "
                  f"last check; clients now {after['clients']}")
            if not events:
                problems.append(f"the client that never reads is still connected {STUCK_TIMEOUT_S + 10} s later")
            elif after["clients"] != 1:
                problems.append(f"{after['clients']} clients still connected (only this status should be)")
            stuck.close()
            assert d.proc.poll() is None, "profd died"
            assert not problems, "; ".join(problems)
        finally:
            stop_workload(work)


# --- 8. idle clients and too many clients --------------------------------------

def test_silent_client_is_closed_after_the_idle_timeout_with_a_reason():
    with Profd("--client-timeout", "1s") as d:
        with connect(d.socket) as s:
            t0 = time.monotonic()
            lines = LineReader(s).rest()
            waited = time.monotonic() - t0
        print(f"  silent client closed after {waited:.2f} s: {lines}")
        assert 0.9 <= waited < 4, f"closed after {waited:.2f} s, timeout is 1 s"
        assert len(lines) == 1 and lines[0]["type"] == "error", lines
        assert "1000 ms" in lines[0]["error"] or "1 s" in lines[0]["error"], lines[0]["error"]
        # a client that keeps asking is not idle, however long it stays
        with connect(d.socket) as s:
            reader = LineReader(s)
            for _ in range(6):
                s.sendall(b'{"op":"status"}\n')
                assert reader.response()[-1]["type"] == "status"
                time.sleep(0.5)


MAX_CLIENTS = 4


def test_max_clients_refuses_one_more_with_a_reason_and_keeps_the_others():
    with Profd("--max-clients", str(MAX_CLIENTS)) as d:
        held = [connect(d.socket) for _ in range(MAX_CLIENTS)]
        try:
            readers = [LineReader(s) for s in held]
            for s, r in zip(held, readers):
                s.sendall(b'{"op":"status"}\n')
                assert r.response()[-1]["type"] == "status"
            with connect(d.socket) as extra:
                lines = LineReader(extra).rest()
            print(f"  client {MAX_CLIENTS + 1} got: {lines}")
            assert len(lines) == 1 and lines[0]["type"] == "error", lines
            assert "max_clients" in lines[0]["error"] and str(MAX_CLIENTS) in lines[0]["error"], lines[0]["error"]
            # the first N still work
            for s, r in zip(held, readers):
                s.sendall(b'{"op":"status"}\n')
                st = r.response()[-1]
                assert st["type"] == "status" and st["clients"] == MAX_CLIENTS, st
            # a freed place is taken again
            readers.pop().file.close()  # the socket closes with its last reference
            held.pop().close()
            time.sleep(0.2)
            with connect(d.socket) as again:
                again.sendall(b'{"op":"status"}\n')
                reader = LineReader(again)
                lines = reader.response()
                reader.file.close()
                assert lines[-1]["type"] == "status", f"after one left, a new client got {lines}"
        finally:
            for s in held:
                s.close()


# --- 9. deeply nested JSON -------------------------------------------------------

def test_deeply_nested_json_gets_an_error_and_collection_goes_on():
    work = None
    with Profd("--interval", "1h") as d:
        try:
            work = start_workload(binary("CPU_SPLIT"), 20)
            before = status(d)
            depth_obj = 10000  # '{"a":' x 10000 = 50 KB, within the 64 KiB line limit
            cases = [
                b"[" * 60000,
                b"[" * 30000 + b"]" * 30000,
                b'{"op":"status","x":' + b"[" * 32000 + b"]" * 32000 + b"}",
                b'{"op":"query","since":' + b'{"a":' * depth_obj + b"1" + b"}" * depth_obj + b"}",
                b'{"op":"status","x":' + b'{"a":' * depth_obj + b"}",  # unterminated
            ]
            with connect(d.socket) as s:
                reader = LineReader(s)
                t0 = time.monotonic()
                for c in cases:
                    assert len(c) < 65536
                    s.sendall(c + b"\n")
                    lines = reader.response()
                    assert len(lines) == 1 and lines[0]["type"] == "error", f"{c[:40]!r}...: {lines}"
                took = time.monotonic() - t0
                # the same connection still answers
                s.sendall(b'{"op":"status"}\n')
                assert reader.response()[-1]["type"] == "status"
            print(f"  {len(cases)} nested requests refused in {took * 1000:.0f} ms")
            # beyond the line limit: refused and closed
            with connect(d.socket) as s:
                try:
                    s.sendall(b"[" * 100000 + b"\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # closed before we were done sending: as documented
                lines = read_until_closed(s)
            assert lines and lines[0]["type"] == "error" and "65536" in lines[0]["error"], lines
            # profd kept collecting all along
            time.sleep(1)
            out = json.loads(d.profctl("flush", "--json").stdout)
            after = status(d)
            assert out["type"] == "flushed" and out["samples"] > 0, out
            assert after["samples_seen"] > before["samples_seen"] and after["pid"] == before["pid"], (before, after)
            assert d.query_json("--pid", str(work.pid), "--since", "1m")["total"] > 0
        finally:
            stop_workload(work)


if __name__ == "__main__":
    require_root()
    run_tests([
        test_hundred_concurrent_clients_get_complete_answers_and_drains_stay_on_time,
        test_client_that_never_reads_is_capped_and_disconnected_others_unaffected,
        test_silent_client_is_closed_after_the_idle_timeout_with_a_reason,
        test_max_clients_refuses_one_more_with_a_reason_and_keeps_the_others,
        test_deeply_nested_json_gets_an_error_and_collection_goes_on,
    ])
