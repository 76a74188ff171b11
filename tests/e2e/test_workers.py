#!/usr/bin/env python3
"""End to end, the query workers under clients that never read: more such
clients than profd has query workers each ask for a large answer and read
nothing, and another client's query and status must still be answered while
they are connected, not only once `client_timeout` closed them. Their own
answers, read at last, are whole. Real profd (serve-only), real socket, real
profctl (docs/architecture.md, Queries off the loop)."""
import json
import os
import select
import socket
import tempfile
import time

from harness import Profd, require_root, run_tests, storegen

QUERY_WORKERS = 2             # daemon/serve/query.h
STALLED = 2 * QUERY_WORKERS   # more clients that do not read than workers
CLIENT_TIMEOUT_S = 120        # the stalled clients must outlive the checks
N_STACKS = 2500
FRAMES = 30


def big_store(store):
    """Distinct stacks of FRAMES frames with long names: the answer to one
    `since 1h` query is about 10 MB, far beyond what profd buffers for a
    client (1 MiB for the job, 1 MiB unread) and the socket holds."""
    samples = []
    for i in range(N_STACKS):
        stack = [{"name": f"frame_{d}_of_stack_{i}_with_a_long_name_for_a_big_answer", "module": "/usr/bin/app",
                  "file": "app.c", "line": d + 1, "address": 4096 + 16 * (i * FRAMES + d)} for d in range(FRAMES)]
        samples.append({"ago_s": 60 + 10 * (i % 30), "pid": 100 + i % 7, "comm": "app", "exe": "/usr/bin/app",
                        "value": 1 + i % 5, "stack": stack})
    storegen(store, samples)
    return sum(s["value"] for s in samples)


def connected(sock):
    """Has profd not closed this socket (it closes one idle for
    client_timeout)?"""
    p = select.poll()
    p.register(sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    return not p.poll(0)


def read_answer(sock):
    """Every line of one answer, to its end line."""
    sock.setblocking(True)
    sock.settimeout(60)
    f = sock.makefile("rb")
    lines = []
    while True:
        line = f.readline()
        assert line.endswith(b"\n"), "connection closed in the middle of an answer"
        o = json.loads(line)
        lines.append(o)
        if o["type"] in ("end", "error"):
            return lines


def status(d):
    return json.loads(d.profctl("status", "--json", timeout=30).stdout)


def wait_queries(d, done, timeout):
    """The status's "queries" once done(it) holds, or as it is at the
    timeout (the caller's assertions then say what is wrong)."""
    deadline = time.monotonic() + timeout
    while True:
        q = status(d)["queries"]
        if done(q) or time.monotonic() > deadline:
            return q
        time.sleep(0.2)


def test_clients_that_never_read_do_not_hold_the_query_workers():
    workdir = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(workdir, "profd.db")
    total = big_store(store)
    req = b'{"op":"query","since":"1h"}\n'
    with Profd("--kinds", "none", "--client-timeout", f"{CLIENT_TIMEOUT_S}s", store=store, workdir=workdir) as d:
        stalled = []
        try:
            for _ in range(STALLED):
                s = socket.socket(socket.AF_UNIX)
                s.connect(d.socket)
                s.sendall(req)
                stalled.append(s)
            t_stalled = time.monotonic()
            # every one of them fills what profd holds for it, then its job
            # waits for it to read: parked (status), not holding a worker
            q = wait_queries(d, lambda q: q["parked"] == STALLED, 60)
            print(f"  {STALLED} clients that do not read; status queries: {q}")
            assert q["parked"] == STALLED, f"not every stalled answer was parked: {q}"
            assert q["running"] == 0 and q["queued"] == 0, q
            assert q["parked_total"] >= STALLED, q

            # another client's query: answered while they are all still
            # connected (before, it waited for a worker until client_timeout
            # closed one of them)
            t0 = time.monotonic()
            r = d.profctl("query", "--json", "--since", "1h", timeout=CLIENT_TIMEOUT_S - 30)
            took = time.monotonic() - t0
            other = json.loads(r.stdout)
            st = status(d)
            still = [connected(s) for s in stalled]
            print(f"  another client's query: {took:.1f} s, total {other['total']}; stalled clients still "
                  f"connected: {sum(still)}/{STALLED} ({time.monotonic() - t_stalled:.0f} s after they stalled); "
                  f"status then: clients {st['clients']}, queries {st['queries']}")
            assert other["total"] == total, f"the other client's answer is wrong: {other['total']} != {total}"
            assert all(still), "a stalled client was closed before the other client was answered"
            assert st["clients"] >= STALLED + 1, st["clients"]
            assert st["queries"]["parked"] == STALLED, st["queries"]

            # the parked answers resume when their clients read: each whole
            for i, s in enumerate(stalled):
                lines = read_answer(s)
                end = lines[-1]
                stacks = lines[:-1]
                assert end["type"] == "end", f"stalled client {i}: {end}"
                assert end["stacks"] == len(stacks) == N_STACKS, (end["stacks"], len(stacks))
                assert end["total"] == sum(l["value"] for l in stacks) == total, end["total"]
            print(f"  the {STALLED} stalled clients then read whole answers ({N_STACKS} stacks each)")
        finally:
            for s in stalled:
                s.close()
        # the spare workers end with their jobs
        q = wait_queries(d, lambda q: q["workers"] == QUERY_WORKERS, 30)
        print(f"  afterwards: {q}")
        assert q["workers"] == QUERY_WORKERS and q["parked"] == 0 and q["running"] == 0, q
        assert "queries:" in d.profctl("status").stdout
        assert d.proc.poll() is None, "profd died"


if __name__ == "__main__":
    require_root()
    run_tests([test_clients_that_never_read_do_not_hold_the_query_workers])
