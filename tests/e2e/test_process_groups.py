#!/usr/bin/env python3
"""End to end, short-lived processes grouped by what they ran (issue 43):
a store holds ten minutes of a build host's drains (storegen: a long-lived
make and, in each drain, three compilers and a shell that live in it
alone). The real profd opens it with a raw window of one minute; its
retention merges what is older into 1-minute buckets, where the
compilers become one process row per (command, executable, user,
cgroup). Queries by executable, command or unit answer the same totals
as before; by pid they no longer find a grouped compiler, but still find
make (in every drain: not short-lived); `--root process` names the group COMM-*; status counts them."""
import json
import os
import sqlite3
import tempfile
import time

from harness import Profd, run_selected, storegen

DRAINS = 60  # ten minutes of 10 s drains, ending two minutes ago
CGROUP = "/system.slice/profd-gen-ci.service"
MAKE = {"pid": 100, "start_ns": 5, "comm": "genmake", "exe": "/opt/gen/bin/make", "uid": 1000, "cgroup": CGROUP}


def stack(*names, module="/opt/gen/bin/cc1"):
    return [{"name": n, "module": module} for n in names]


def spec():
    lines = []
    for i in range(DRAINS):
        ago = 720 - 10 * i
        lines.append({"ago_s": ago, **MAKE, "value": 1, "stack": stack("main", "run_job", module="/opt/gen/bin/make")})
        for j in range(3):
            pid = 1000 + 4 * i + j
            cc1 = {"pid": pid, "start_ns": 10**9 * i + j + 1, "comm": "gencc1", "exe": "/opt/gen/bin/cc1", "uid": 1000,
                   "cgroup": CGROUP}
            lines.append({"ago_s": ago, **cc1, "value": 2, "stack": stack("main", "parse")})
            lines.append({"ago_s": ago, **cc1, "value": 1, "stack": stack("main", "emit")})
        sh = {"pid": 1000 + 4 * i + 3, "start_ns": 10**9 * i + 7, "comm": "gensh", "exe": "/opt/gen/bin/sh",
              "uid": 1000, "cgroup": CGROUP}
        lines.append({"ago_s": ago, **sh, "value": 1, "stack": stack("main", "evalcommand", module="/opt/gen/bin/sh")})
    return lines


def total(d, *args):
    return json.loads(d.profctl("query", "--since", "20m", "--json", *args).stdout)["total"]


def test_short_lived_processes_grouped_after_the_raw_window():
    work = tempfile.mkdtemp(prefix="profd-groups-")
    store = os.path.join(work, "profd.db")
    storegen(store, spec())
    # the store as written: every instance a row of its own
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert db.execute("SELECT count(*) FROM processes").fetchone()[0] == 1 + 4 * DRAINS
    db.close()
    with Profd("--kinds", "cpu", "--interval", "1s", "--retention-raw", "1m", "--retention-1m", "1h",
               "--retention", "2h", "--timeline-retention", "1m", store=store, workdir=work) as d:
        deadline = time.monotonic() + 60
        while True:
            st = json.loads(d.profctl("status", "--json").stdout)["retention"]
            if st["grouped_processes"] >= 4 * DRAINS:
                break
            assert time.monotonic() < deadline, f"retention grouped too little: {st}"
            time.sleep(0.5)
        print(f"  retention: {st['merged_drains']} drains merged, {st['grouped_processes']} processes grouped, "
              f"{st['deleted_processes']} rows removed")
        # what each executable, command and unit ran: as written (the
        # generated drains are all older than a minute)
        assert total(d, "--exe", "/opt/gen/bin/cc1") == 3 * 3 * DRAINS
        assert total(d, "--comm", "gensh") == DRAINS
        assert total(d, "--comm", "genmake") == DRAINS
        assert total(d, "--unit", "profd-gen-ci.service") == DRAINS * (1 + 9 + 1)
        # by pid: make is still make; the first compiler is in its group
        # (the host's own pid 100 and 1000, if any, are not these programs)
        assert total(d, "--pid", "100", "--exe", "/opt/gen/bin/make") == DRAINS
        assert total(d, "--pid", "1000", "--exe", "/opt/gen/bin/cc1") == 0
        folded = d.profctl("query", "--since", "20m", "--exe", "/opt/gen/bin/cc1", "--root", "process",
                           "--folded").stdout.split("\n")
        got = sorted(l for l in folded if l)
        assert got == [f"gencc1-*;main;emit {3 * DRAINS}", f"gencc1-*;main;parse {6 * DRAINS}"], got
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
        groups = db.execute("SELECT comm, exe FROM processes WHERE pid = -1 AND exe LIKE '/opt/gen/%' "
                            "ORDER BY comm").fetchall()
        left = db.execute("SELECT count(*) FROM processes WHERE pid > 100 AND exe LIKE '/opt/gen/%'").fetchone()[0]
        db.close()
        assert groups == [("gencc1", "/opt/gen/bin/cc1"), ("gensh", "/opt/gen/bin/sh")], groups
        assert left == 0, f"{left} short-lived processes still kept by pid"


if __name__ == "__main__":
    run_selected([test_short_lived_processes_grouped_after_the_raw_window])
