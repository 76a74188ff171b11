#!/usr/bin/env python3
"""End to end, rare stacks folded when retention merges (issue 43,
`retention_fold`): a store holds ten minutes of drains (storegen), each
with one hot stack and twenty stacks seen in no other drain. The real
profd opens it with a raw window of one minute and `--retention-fold 1%`;
its merges keep the hot stack whole and write the rare ones under
main;[folded]. profctl answers the same totals, the folded frame is in the
flame graph's lines and in the JSON answer, status counts the folded stacks,
and the store no longer holds the rare stacks nor their frames."""
import json
import os
import sqlite3
import tempfile
import time

from harness import Profd, run_selected, storegen

DRAINS = 60  # ten minutes of 10 s drains, ending two minutes ago
RARE = 20
APP = {"pid": 4242, "start_ns": 5, "comm": "genapp", "exe": "/opt/gen/bin/app", "uid": 1000}


def stack(*names):
    return [{"name": n, "module": "/opt/gen/bin/app"} for n in names]


def spec():
    lines = []
    for i in range(DRAINS):
        ago = 720 - 10 * i
        lines.append({"ago_s": ago, **APP, "value": 200, "stack": stack("main", "hot", "inner")})
        for j in range(RARE):
            lines.append({"ago_s": ago, **APP, "value": 1, "stack": stack("main", f"rare_{i}_{j}", "leaf")})
    return lines


def test_merged_buckets_fold_rare_stacks():
    work = tempfile.mkdtemp(prefix="profd-fold-")
    store = os.path.join(work, "profd.db")
    storegen(store, spec())
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    stacks_before = db.execute("SELECT count(*) FROM stacks").fetchone()[0]
    db.close()
    assert stacks_before == 1 + DRAINS * RARE, stacks_before
    with Profd("--kinds", "cpu", "--interval", "1s", "--retention-raw", "1m", "--retention-1m", "1h",
               "--retention", "2h", "--timeline-retention", "1m", "--retention-fold", "1%",
               store=store, workdir=work) as d:
        deadline = time.monotonic() + 60
        while True:
            st = json.loads(d.profctl("status", "--json").stdout)["retention"]
            # the stacks go in one step, their locations and functions in
            # a later one (the sweep): both done before the store is read
            if (st["folded_stacks"] >= DRAINS * RARE and st["deleted_stacks"] >= DRAINS * RARE
                    and st["deleted_locations"] >= DRAINS * RARE):
                break
            assert time.monotonic() < deadline, f"retention folded too little: {st}"
            time.sleep(0.5)
        print(f"  retention: {st['merged_drains']} drains merged, {st['folded_stacks']} stacks folded, "
              f"{st['deleted_stacks']} removed; fold_ppm {st['fold_ppm']}")
        assert st["fold_ppm"] == 10000, st
        assert st["folded_stacks"] == DRAINS * RARE, st
        # a 1-minute bucket holds 6 x (200 + 20) = 1320 samples: 1% is
        # 13.2, which the hot stack holds and no rare one does
        lines = d.profctl("query", "--since", "20m", "--exe", "/opt/gen/bin/app", "--folded").stdout.split("\n")
        got = sorted(l for l in lines if l)
        assert got == [f"main;[folded] {DRAINS * RARE}", f"main;hot;inner {200 * DRAINS}"], got
        answer = json.loads(d.profctl("query", "--since", "20m", "--exe", "/opt/gen/bin/app", "--json").stdout)
        assert answer["total"] == DRAINS * (200 + RARE), answer["total"]
        # the rare stacks went, with their frames (locations and functions)
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
        rare_left = db.execute("SELECT count(*) FROM functions WHERE name LIKE 'rare_%'").fetchone()[0]
        # (the daemon also profiles this host: only the generated program's)
        stacks_after = db.execute("SELECT count(DISTINCT s.stack_id) FROM samples s JOIN processes p "
                                  "ON p.id = s.process_id WHERE p.exe = '/opt/gen/bin/app'").fetchone()[0]
        locations_after = db.execute("SELECT count(*) FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                                     "WHERE m.path = '/opt/gen/bin/app'").fetchone()[0]
        db.close()
        assert rare_left == 0, f"{rare_left} rare functions still stored"
        assert stacks_after == 2, stacks_after
        assert locations_after == 3, f"{locations_after} locations of the program: main, hot, inner expected"


if __name__ == "__main__":
    run_selected([test_merged_buckets_fold_rare_stacks])
