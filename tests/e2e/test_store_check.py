#!/usr/bin/env python3
"""End to end, the store's integrity check: it runs after profd is ready, on
its own thread, and `profctl status` reports it. On a healthy store it ends
`ok`; on a store with a damaged page (one that opening the store and
answering queries never read) it ends `failed` with SQLite's finding, and
profd goes on answering. Real profd (serve-only), real socket, real profctl."""
import json
import os
import sqlite3
import struct
import tempfile
import time

from harness import Profd, require_root, run_tests, storegen

TABLE_LEAF = 0x0d  # SQLite's page type of a table b-tree leaf


def samples(n):
    return [{"ago_s": 30 + 10 * (i % 20), "pid": 200 + i % 5, "comm": "svc", "exe": "/usr/bin/svc", "value": 1 + i % 3,
             "stack": [{"name": f"leaf_{i}", "module": "/usr/bin/svc"}, {"name": "main", "module": "/usr/bin/svc"}]}
            for i in range(n)]


def wait_check(d, timeout=60):
    """The status's store_check once it is no longer running."""
    deadline = time.monotonic() + timeout
    while True:
        st = json.loads(d.profctl("status", "--json").stdout)
        c = st["store_check"]
        if c["state"] != "running" or time.monotonic() > deadline:
            return st, c
        time.sleep(0.2)


def test_healthy_store_check_is_reported_ok():
    workdir = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(workdir, "profd.db")
    storegen(store, samples(200))
    with Profd("--kinds", "none", store=store, workdir=workdir) as d:
        st, c = wait_check(d)
        print(f"  store_check: {c}")
        assert c["state"] == "ok", c
        assert c["message"] is None, c
        assert c["finished_ns"] >= c["started_ns"] > 0, c
        text = d.profctl("status").stdout
        assert "integrity check ok" in text, text


def damage_a_page(store):
    """Breaks the order of the rows on one leaf page of the stack_refs table
    (swaps its first two cell pointers): opening the store, status and
    queries do not read that table (only the writer and retention do, which
    serve-only profd does not run; schema 8), a full page check finds the
    row ids out of order. Returns the page number."""
    db = sqlite3.connect(store)
    try:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        # leaf pages of the table, in order; not the last (the one appends go to)
        pages = [r[0] for r in db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'stack_refs' AND pagetype = 'leaf' ORDER BY pageno")]
    finally:
        db.close()
    assert len(pages) >= 3, f"the stack_refs table has only {len(pages)} leaf pages"
    page = pages[len(pages) // 2]
    with open(store, "r+b") as f:
        f.seek((page - 1) * page_size)
        header = f.read(8)
        assert header[0] == TABLE_LEAF, f"page {page} starts with {header[0]:#x}, not a table leaf"
        cells = struct.unpack(">H", header[3:5])[0]
        assert cells >= 2, f"page {page} holds {cells} rows"
        f.seek((page - 1) * page_size + 8)
        first, second = f.read(2), f.read(2)
        f.seek((page - 1) * page_size + 8)
        f.write(second + first)
    return page


def test_damaged_page_is_reported_failed_and_profd_keeps_serving():
    workdir = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(workdir, "profd.db")
    n = 12000  # stack_refs spans several 16 KiB leaf pages
    storegen(store, samples(n))
    total = sum(s["value"] for s in samples(n))
    # the rows in the main file, not in a WAL, so the damage is what is read
    db = sqlite3.connect(store)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    page = damage_a_page(store)
    check = sqlite3.connect(store).execute("PRAGMA quick_check").fetchall()
    assert check != [("ok",)] and f"page {page}" in check[0][0], f"the damage is not what quick_check finds: {check}"
    with Profd("--kinds", "none", store=store, workdir=workdir) as d:
        st, c = wait_check(d)
        print(f"  page {page} damaged; store_check: {c}")
        assert c["state"] == "failed", c
        assert c["message"] and c["message"].startswith(f"On tree page {page} "), c
        # profd keeps running and answering
        q = d.query_json("--since", "1h")
        assert q["total"] == total, (q["total"], total)
        assert d.proc.poll() is None, "profd died"
        text = d.profctl("status").stdout
        assert "integrity check FAILED" in text and f"page {page}" in text, text
        log = d.read_log()
        assert "Integrity check of store" in log and "failed" in log, log[-2000:]


if __name__ == "__main__":
    require_root()
    run_tests([test_healthy_store_check_is_reported_ok, test_damaged_page_is_reported_failed_and_profd_keeps_serving])
