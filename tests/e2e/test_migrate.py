#!/usr/bin/env python3
"""End to end, an upgrade from schema 7 (issue 14, fast start): a store as
a profd of schema 7 wrote it (one samples row per sample), made here with
schema/0001-0007 and SQL. Serve-only profd opens it at once, converts
nothing (no writer), and says so: status `store_migration` with every row
pending and `running` false, query answers without the old drains and a
note on stderr. A profd with its writer converts it between drains; then
status has no `store_migration` and the old samples are answered, the same
totals as were written. Real profd, real socket, real profctl."""
import glob
import json
import os
import sqlite3
import struct
import tempfile
import time

from harness import Profd, require_root, run_tests

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schema")
SEC = 1_000_000_000
N_DRAINS = 30
N_FUNCS = 6
PID = 3_999_901


def make_v7_store(path):
    """A schema 7 store: the old drains of a process `oldsvc`, ending now;
    returns {function name: cpu samples}."""
    db = sqlite3.connect(path, isolation_level=None)
    for f in sorted(glob.glob(os.path.join(SCHEMA_DIR, "000[1-7]-*.sql"))):
        with open(f) as sql:
            db.executescript(sql.read())
    db.execute("PRAGMA user_version = 7")
    db.execute("BEGIN")
    db.execute("INSERT INTO mappings (id, path, build_id) VALUES (1, '/usr/bin/oldsvc', '')")
    for k in range(1, N_FUNCS + 1):
        db.execute("INSERT INTO functions (id, mapping_id, raw_name, name) VALUES (?, 1, ?, ?)",
                   (k, f"old_fn_{k}", f"old_fn_{k}"))
        db.execute("INSERT INTO locations (id, mapping_id, address, function_id, kernel) VALUES (?, 1, ?, ?, 0)",
                   (k, 4096 * k, k))
        # root `old_fn_1`, leaf `old_fn_k`
        frames = struct.pack("<q", 1) + (struct.pack("<q", k) if k > 1 else b"")
        db.execute("INSERT INTO stacks (id, hash, frames, user_end) VALUES (?, ?, ?, 0)", (k, k, frames))
    db.execute("INSERT INTO processes (id, pid, start_ns, comm, exe, uid) VALUES (1, ?, 1, 'oldsvc', "
               "'/usr/bin/oldsvc', 0)", (PID,))
    now = time.time_ns()
    expected = {}
    for d in range(1, N_DRAINS + 1):
        end = now - (N_DRAINS - d) * 10 * SEC - 30 * SEC
        db.execute("INSERT INTO drains (id, start_ns, end_ns, samples, keys) VALUES (?, ?, ?, 0, 0)",
                   (d, end - 10 * SEC, end))
        for k in range(1, N_FUNCS + 1):
            value = d + k
            expected[f"old_fn_{k}"] = expected.get(f"old_fn_{k}", 0) + value
            db.execute("INSERT INTO samples (drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, stack_id, "
                       "value) VALUES (?, 1, ?, 1, 0, 0, 0, ?, ?)", (d, PID, k, value))
    db.execute("UPDATE drains SET keys = (SELECT count(*) FROM samples WHERE drain_id = drains.id), "
               "samples = (SELECT sum(value) FROM samples WHERE drain_id = drains.id AND kind = 0)")
    db.execute("COMMIT")
    db.close()
    os.chmod(path, 0o600)
    return expected


def leaf_totals(answer):
    """{leaf function: value} of a query --json answer."""
    totals = {}
    for s in answer.get("stacks", answer if isinstance(answer, list) else []):
        name = s["frames"][-1]["name"]
        totals[name] = totals.get(name, 0) + s["value"]
    return totals


def test_serve_only_opens_at_once_and_says_what_is_not_converted():
    workdir = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(workdir, "profd.db")
    make_v7_store(store)
    started = time.monotonic()
    with Profd("--kinds", "none", store=store, workdir=workdir) as d:
        took = time.monotonic() - started
        st = json.loads(d.profctl("status", "--json").stdout)
        m = st["store_migration"]
        print(f"  socket open after {took:.2f}s; store_migration: {m}")
        assert m is not None and m["running"] is False, m
        assert m["pending_drains"] == N_DRAINS and m["pending_rows"] == N_DRAINS * N_FUNCS, m
        assert m["done_rows"] == 0, m
        text = d.profctl("status").stdout
        assert "converting schema 7 samples: 0 of 180 rows done" in text and "(paused: no writer)" in text, text
        r = d.profctl("query", "--comm", "oldsvc", "--since", "1h")
        assert f"{N_DRAINS} drains of this window are still being converted" in r.stderr, r.stderr
        r = d.profctl("series", "--comm", "oldsvc", "--since", "1h", "--step", "1m")
        assert f"{N_DRAINS} drains of this window are still being converted" in r.stderr, r.stderr


def test_writer_converts_and_the_old_samples_are_answered():
    require_root()
    workdir = tempfile.mkdtemp(prefix="profd-test-")
    store = os.path.join(workdir, "profd.db")
    expected = make_v7_store(store)
    with Profd("--kinds", "cpu", "--interval", "1s", store=store, workdir=workdir) as d:
        deadline = time.monotonic() + 90
        while True:
            m = json.loads(d.profctl("status", "--json").stdout)["store_migration"]
            if m is None or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert m is None, f"still converting after 90 s: {m}"
        r = d.profctl("query", "--json", "--comm", "oldsvc", "--since", "1h")
        assert "still being converted" not in r.stderr, r.stderr
        got = leaf_totals(json.loads(r.stdout))
        print(f"  converted; old_fn totals {got}")
        assert got == expected, f"got {got}, wrote {expected}"
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            assert "samples_v7" not in names, names
            # process_refs counts the blocks that name the process, read in
            # one snapshot: retention may merge the converted drains (the
            # oldest are minutes old) between the end of the conversion and
            # this read, which makes fewer blocks, not a wrong count
            db.execute("BEGIN")
            refs = db.execute("SELECT blocks FROM process_refs WHERE process_id = 1").fetchone()
            blocks = db.execute("SELECT count(*) FROM sample_blocks WHERE process_id = 1").fetchone()
            db.execute("COMMIT")
            print(f"  process_refs {refs}, sample_blocks {blocks} of {N_DRAINS} converted drains")
            assert blocks[0] >= 1 and refs == blocks, f"process_refs {refs}, sample_blocks {blocks}"
        finally:
            db.close()


if __name__ == "__main__":
    run_tests([
        test_serve_only_opens_at_once_and_says_what_is_not_converted,
        test_writer_converts_and_the_old_samples_are_answered,
    ])
