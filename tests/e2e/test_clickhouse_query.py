#!/usr/bin/env python3
"""Fleet queries on ClickHouse: two real clickhouse-server shards on
loopback (tests/e2e/clickhouse.py), the schema created by the real
`profctl --clickhouse URL init`, three hosts' stores with known content
(storegen) served by real serve-only profd instances, and every view of
`profctl --clickhouse URL query --host H` compared with the same view of
`profctl query` against that host's profd: same stacks, same totals, and
the same quality report per host. The cluster starts with schema version 1
(tests/e2e/clickhouse-v1/), which `profctl init` upgrades in place.

The hosts' data reaches ClickHouse through load_store() below, which reads
each store and inserts its drains, stacks and frames as the schema
describes (docs/clickhouse.md): the fleet query is checked against the
local answer independently of profd's exporter (test_clickhouse_export
covers the exporter end to end)."""
import gzip
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clickhouse  # noqa: E402
from harness import binary, Profd, rfc3339, run_tests, stack_location_ids, storegen  # noqa: E402

# A fixed past: the window is given in absolute times, so local and fleet
# answers cover exactly the same drains.
NOW = "2026-11-20T12:00:00Z"
WINDOW = ["--from", "2026-11-20T11:00:00Z", "--to", "2026-11-20T12:00:00Z"]
EARLIER = ["--from", "2026-11-20T09:00:00Z", "--to", "2026-11-20T10:00:00Z"]

APP = "/usr/bin/app"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def fr(name, module=APP, **kw):
    f = {"name": name, "module": module}
    if module == APP and not kw.get("inlined"):
        f["build_id"] = "0123456789abcdef"
    f.update(kw)
    return f


def kfr(name):
    return {"name": name, "module": "[kernel.kallsyms]", "kernel": True}


MAIN = fr("main", file="app.c", line=10)
Q = "/usr/bin/q"
QLIB = "/usr/lib/libq.so"
# Names a query must carry through SQL, TabSeparated and JSON unharmed.
ODD = fr("ns::odd<'q\\\\'>;semi\tcaf\u00e9", file="o d.c", line=7, raw_name="_ZN2ns3oddE")


def pyfr(name, path, line, fid):
    """A Python frame as profd stores it once the CPython walker named it
    (common/protocol.h): module and file the .py file, address and line its
    line, build_id "python-" and a hash of the function."""
    return {"name": name, "module": path, "build_id": f"python-{fid:016x}", "file": path, "line": line,
            "address": line}


def javafr(name, source, line, fid, **kw):
    """A Java frame as profd stores it once the HotSpot walker's namer named
    it (common/protocol.h): module and file the .java file, address and
    line the line, build_id "hotspot-" and a hash of the method."""
    f = {"name": name, "module": source, "build_id": f"hotspot-{fid:016x}", "file": source, "line": line,
         "address": line}
    f.update(kw)
    return f


JVM = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
# one of the JVM's stubs: named, module "[jvm]", no file or line
JVM_STUB = {"name": "[jvm] StubRoutines (1)", "module": "[jvm]", "build_id": f"hotspot-{9:016x}", "address": 0}
JAVA_ROOT = [fr("thread_native_entry", JVM, build_id="cc33dd44", address=8192),
             JVM_STUB, javafr("hs.Worker.run", "Worker.java", 20, 1)]
PY = "/usr/bin/python3.11"
PY_MAIN = fr("Py_BytesMain", PY, build_id="aa11bb22", address=4096)


def host_spec(n, python=True):
    """Host n's samples: shared stacks (the same on every host), its own
    ones, offcpu with states, units, containers, a quote in a comm, and
    (python) a Python service's."""
    cg_web = "/system.slice/web.service"
    cg_ctr = "/system.slice/docker-" + "ab12" * 16 + ".scope"
    lines = []

    def add(ago, value, pid, comm, stack, **kw):
        d = {"ago_s": ago, "pid": pid, "comm": comm, "value": value, "stack": stack}
        d.update(kw)
        lines.append(d)

    for ago in (30, 600, 1800):  # three drains in the window
        add(ago, 40 * n, 100, "web", [MAIN, fr("serve"), fr("parse", file="p.c", line=3),
                                      fr("inl", file="i.h", line=4, inlined=True)],
            exe=APP, uid=33, cgroup=cg_web)
        add(ago, 7 + n, 100, "web", [MAIN, fr("serve"), fr("read", LIBC), kfr("ksys_read"), kfr("vfs_read")],
            exe=APP, uid=33, cgroup=cg_web, tid=101)
        add(ago, 5, 200, "it's", [fr("start", "/opt/x"), ODD], exe="/opt/x", uid=1000, cgroup=cg_ctr)
        add(ago, n, 300, "worker", [fr("w_main", "/usr/bin/w"), fr("w_host%d" % n, "/usr/bin/w"),
                                    fr("stripped", "/usr/bin/w", resolved=False, address=0x1234)],
            cgroup="/user.slice/user-1000.slice/session-3.scope")
        add(ago, 3, 400, "kthr", [kfr("kthread"), kfr("worker_thread")])
        add(ago, 2000000 * n, 100, "web", [MAIN, fr("serve"), kfr("schedule")], kind="offcpu", state="S",
            exe=APP, uid=33, cgroup=cg_web)
        add(ago, 500000, 100, "web", [MAIN, fr("flush"), kfr("io_schedule")], kind="offcpu", state="D",
            exe=APP, uid=33, cgroup=cg_web)
        # the quality report's inputs: truncated stacks by reason, one of
        # unknown end, unresolved frames by reason
        add(ago, 10 * n, 500, "q", [fr("q_main", Q), fr("q_deep", Q)], end="depth")
        add(ago, 4, 500, "q", [fr("q_main", Q), fr("q_x", Q, resolved=False, address=0x10, unresolved="no_symbols")],
            end="no_process")
        add(ago, n, 500, "q", [fr("q_main", Q), fr("l", QLIB, resolved=False, address=0x20, unresolved="no_file")],
            end="unknown")
        add(ago, 2, 500, "q", [fr("q_main", Q), fr("q_y", Q, resolved=False, address=0x30)], end="read_fault")
        if not python:
            continue
        # a Python service: named frames on two lines of one function, and
        # one whose code object could not be read
        add(ago, 6 * n, 600, "python3", [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1),
                                         pyfr("Worker.run", "/srv/app/work.py", 41, 2)], exe=PY)
        add(ago, 3, 600, "python3", [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1),
                                     pyfr("Worker.run", "/srv/app/work.py", 42, 2)], exe=PY)
        add(ago, 1, 600, "python3", [PY_MAIN, pyfr("<module>", "/srv/app/main.py", 3, 1),
                                     fr("[python]", "[python]", resolved=False, address=0x7f0012345670,
                                        unresolved="python_read_code")], exe=PY)
        # a JVM: named methods on two lines of one, a compiled frame whose
        # inlined calls are not known, and a method that could not be read
        add(ago, 5 * n, 700, "java", JAVA_ROOT + [javafr("hs.Split.tokenize", "Split.java", 60, 2)], exe=JVM)
        add(ago, 2, 700, "java", JAVA_ROOT + [javafr("hs.Split.tokenize", "Split.java", 61, 2)], exe=JVM)
        add(ago, 1, 700, "java", JAVA_ROOT + [javafr("hs.Split.paint", "Split.java", 70, 3,
                                                     unresolved="hotspot_no_scope")], exe=JVM)
        add(ago, 1, 700, "java", JAVA_ROOT + [fr("[hotspot]", "[hotspot]", resolved=False, address=0x7f0022345670,
                                                 unresolved="hotspot_read")], exe=JVM)
    # losses: in the window, and before it (in EARLIER, not in WINDOW)
    lines.append({"ago_s": 600, "drops": {"map_full": 5 * n, "ringbuf_full": 1}})
    lines.append({"ago_s": 3 * 3600 - 60, "drops": {"stack_map_full": 99}})
    # before the window: the baseline of the diff between windows
    add(3 * 3600 - 60, 90, 100, "web", [MAIN, fr("serve"), fr("read", LIBC), kfr("ksys_read"),
                                        kfr("vfs_read")], exe=APP, uid=33, cgroup=cg_web, interval_s=10)
    add(3 * 3600 - 60, 10, 100, "web", [MAIN, fr("serve"), fr("parse", file="p.c", line=3),
                                        fr("inl", file="i.h", line=4, inlined=True)],
        exe=APP, uid=33, cgroup=cg_web)
    return lines


# ---- the hosts' data into ClickHouse ----

def u64(v):
    return v & 0xFFFFFFFFFFFFFFFF


def hash64(*parts):
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little")


def location_frames(db, lid):
    """The frames a local query answers for location lid, as profd's store
    makes them (daemon/store/store.c, load_location)."""
    address, kernel, module, fn, raw, build_id, unresolved = db.execute(
        "SELECT l.address, l.kernel, m.path, f.name, f.raw_name, m.build_id, l.unresolved FROM locations l "
        "JOIN mappings m ON m.id = l.mapping_id LEFT JOIN functions f ON f.id = l.function_id "
        "WHERE l.id = ?", (lid,)).fetchone()
    module = module if module is not None else "[unknown]"
    jit = module == "[jit]"
    base = {"address": u64(address), "kernel": int(bool(kernel)), "module": module,
            "has_address": int(module != "[lost]"), "jit": int(jit),
            "build_id": build_id if build_id and not jit else "", "file": "", "line": 0, "inlined": 0,
            "unresolved": unresolved or 0}
    if fn is not None:
        base.update(name=fn, raw_name=raw or "", resolved=1)
    else:
        name = "%s+0x%x" % (os.path.basename(module), u64(address))
        base.update(name=name, raw_name=name, resolved=0)
    out = []
    for name, raw_name, file, line, inlined in db.execute(
            "SELECT f.name, f.raw_name, ll.file, ll.line, ll.inlined FROM location_lines ll "
            "JOIN functions f ON f.id = ll.function_id WHERE ll.location_id = ? ORDER BY ll.depth DESC", (lid,)):
        f = dict(base, name=name, raw_name=raw_name or "", file=file or "", line=line, inlined=int(bool(inlined)),
                 resolved=1)
        out.append(f)
    return out or [base]


FRAME_COLUMNS = ["id", "name", "raw_name", "module", "build_id", "file", "address", "line", "has_address",
                 "kernel", "resolved", "inlined", "jit", "unresolved"]


def tsv(values):
    def esc(v):
        return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    return "\t".join(esc(v) for v in values) + "\n"


def day_of(ns):
    import datetime
    return datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc).strftime("%Y-%m-%d")


def load_store(ch, store, host, version=2):
    """Inserts every drain of store into ClickHouse as host's, in the
    columns of schema version 2 (stack ends, unresolved reasons, drops) or
    of version 1 (without them)."""
    db = sqlite3.connect(store)
    stack_cache = {}
    samples, stacks, frames = [], {}, {}
    for (drain_start, drain_end, pid, pstart, comm, exe, uid, cgroup, unit, container, tid, cgroup_id, kind, state,
         peer, stack_id, value) in db.execute(
            "SELECT d.start_ns, d.end_ns, p.pid, p.start_ns, p.comm, p.exe, p.uid, p.cgroup, p.unit, p.container, "
            "s.tid, s.cgroup_id, s.kind, s.state, s.peer_tid, s.stack_id, s.value FROM samples s "
            "JOIN drains d ON d.id = s.drain_id JOIN processes p ON p.id = s.process_id"):
        if stack_id not in stack_cache:
            blob, user_end = db.execute("SELECT frames, user_end FROM stacks WHERE id = ?", (stack_id,)).fetchone()
            user_end = 255 if user_end is None else user_end
            ids = []
            for location_id in stack_location_ids(blob):
                for f in location_frames(db, location_id):
                    fid = hash64(*(f[c] for c in FRAME_COLUMNS[1:]))
                    frames[fid] = dict(f, id=fid)
                    ids.append(fid)
            stack_cache[stack_id] = (hash64(*ids, user_end), ids, user_end)
        sid, ids, user_end = stack_cache[stack_id]
        day = day_of(drain_end)
        stacks[(day, sid)] = (ids, user_end)
        samples.append([host, drain_start, drain_end, drain_end // 10**9, day, pid, pstart, comm, exe or "",
                        uid if uid is not None else -1, cgroup or "", unit or "", container or "", tid, cgroup_id,
                        kind, state, peer, sid, value])
        frames_days = frames.setdefault("_days", set())
        frames_days.add(day)
    days = frames.pop("_days", set())
    sync = {"insert_distributed_sync": "1"}
    ch.query("INSERT INTO profd.samples (host, drain_start, drain_end, time, day, pid, process_start, comm, exe, "
             "uid, cgroup, unit, container, tid, cgroup_id, kind, state, peer_tid, stack, value) "
             "FORMAT TabSeparated", data="".join(tsv(s[:3] + [s[3]] + s[4:]) for s in samples).encode(),
             settings=sync)
    columns = FRAME_COLUMNS if version >= 2 else FRAME_COLUMNS[:-1]
    ch.query("INSERT INTO profd.stacks (day, id, frames%s) FORMAT TabSeparated" % (", user_end" if version >= 2 else ""),
             data="".join(tsv([d, sid, "[" + ",".join(map(str, ids)) + "]"] + ([end] if version >= 2 else []))
                          for (d, sid), (ids, end) in stacks.items()).encode(), settings=sync)
    ch.query("INSERT INTO profd.frames (day, " + ", ".join(columns) + ") FORMAT TabSeparated",
             data="".join(tsv([d] + [f[c] for c in columns]) for d in days for f in frames.values())
             .encode(), settings=sync)
    drops = db.execute("SELECT d.start_ns, d.end_ns, x.reason, x.count FROM drops x JOIN drains d ON "
                       "d.id = x.drain_id").fetchall()
    if version >= 2 and drops:
        ch.query("INSERT INTO profd.drops (host, drain_start, drain_end, time, day, reason, value) "
                 "FORMAT TabSeparated", data="".join(tsv([host, s, e, e // 10**9, day_of(e), reason, n])
                                                     for s, e, reason, n in drops).encode(), settings=sync)


# ---- the fixture: a cluster, three hosts ----

HOSTS = ["web-1", "web-2", "db-1"]
# A host whose drains version 1 stored (before the upgrade), on a day no
# other test's window touches.
OLD_HOST = "old-1"
OLD_NOW = "2026-11-18T12:00:00Z"
OLD_WINDOW = ["--from", "2026-11-18T11:00:00Z", "--to", "2026-11-18T12:00:00Z"]


class Fleet:
    def __init__(self):
        self.ch = clickhouse.Cluster()
        self.hosts = {}

    def __enter__(self):
        self.ch.__enter__()
        try:
            # version 1, with a host's data in it: test_init upgrades it
            self.ch.create_schema(schema_dir=clickhouse.SCHEMA_V1_DIR)
            d = tempfile.mkdtemp(prefix="profd-test-")
            # (schema version 1 had no Python frames)
            storegen(os.path.join(d, "old.db"), host_spec(1, python=False), now=OLD_NOW)
            load_store(self.ch, os.path.join(d, "old.db"), OLD_HOST, version=1)
            for i, h in enumerate(HOSTS, 1):
                d = tempfile.mkdtemp(prefix="profd-test-")
                store = os.path.join(d, "profd.db")
                storegen(store, host_spec(i), now=NOW)
                self.hosts[h] = Profd("--kinds", "none", store=store, workdir=d).start()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc):
        for p in self.hosts.values():
            p.__exit__(*exc)
        self.ch.__exit__(*exc)

    def fleet(self, *args, check=True, url=None, credentials=None):
        cmd = [binary("PROFCTL"), "--clickhouse", url or self.ch.url]
        if credentials:
            cmd += ["--clickhouse-credentials", credentials]
        r = subprocess.run(cmd + list(args), capture_output=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"profctl --clickhouse {' '.join(args)} exited {r.returncode}:\n"
                                 f"{r.stderr.decode(errors='replace')}")
        return r

    def local(self, host, *args):
        r = subprocess.run([binary("PROFCTL"), "--socket", self.hosts[host].socket] + list(args),
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"profctl query on {host} exited {r.returncode}:\n{r.stderr.decode()}")
        return r


def stacks_of(doc):
    """{(group, frames as JSON): value} of a query --json document."""
    out = {}
    for s in doc["stacks"]:
        key = (s.get("group"), json.dumps(s["frames"], sort_keys=True))
        out[key] = out.get(key, 0) + s["value"]
    return out


def without_by_host(doc):
    """A fleet --json document without its per-host reports: what is left
    is shaped as the local one."""
    return {k: v for k, v in doc.items() if k != "quality_by_host"}


def add_reports(reports):
    """The field-by-field sum of quality reports (a fleet's total)."""
    out = None
    for r in reports:
        if out is None:
            out = json.loads(json.dumps(r))
            continue
        for k, v in r.items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    out[k][kk] += vv
            elif isinstance(v, bool):
                out[k] = out[k] or v
            else:
                out[k] += v
    return out


F = None

FILTERS = [
    [],
    ["--kind", "offcpu"],
    ["--kind", "offcpu", "--state", "D"],
    ["--pid", "100"],
    ["--tid", "101"],
    ["--comm", "it's"],
    ["--comm", "w*"],
    ["--exe", "/opt/*"],
    ["--uid", "33"],
    ["--cgroup", "/system.slice"],
    ["--cgroup", "/user.slice/*"],
    ["--unit", "web.service"],
    ["--unit", "session-*.scope"],
    ["--container", "ab12ab12"],
    ["--raw-names"],
]


def test_init_upgrades_version_1_on_both_shards_and_is_idempotent():
    assert F.ch.query("SELECT max(version) FROM profd.schema_version").strip() == "1"
    old = F.ch.query("SELECT host, count(), sum(value) FROM profd.samples GROUP BY host ORDER BY host")
    assert old.startswith(OLD_HOST + "\t"), old
    # a profctl of version 5 does not read version 1: it says how to upgrade
    r = F.fleet("query", *WINDOW, check=False)
    assert r.returncode == 1 and b"holds profd schema version 1, this profctl reads version 5" in r.stderr, r.stderr
    for s in F.ch.servers:
        r = F.fleet("init", "--cluster", clickhouse.CLUSTER_NAME, url=s.url)
        assert b"schema ready" in r.stdout, r.stdout
    for s in F.ch.servers:
        tables = set(s.query("SELECT name FROM system.tables WHERE database = 'profd'").split())
        assert tables >= {"samples_local", "stacks_local", "frames_local", "drops_local", "timeline_local",
                          "captures_local", "schema_version", "samples", "stacks", "frames", "drops", "timeline",
                          "captures"}, tables
        for table, column in (("stacks_local", "user_end"), ("stacks", "user_end"), ("frames_local", "unresolved"),
                              ("frames", "unresolved")):
            assert s.query(f"SELECT count() FROM system.columns WHERE database = 'profd' AND table = '{table}' "
                           f"AND name = '{column}'").strip() == "1", (s.name, table, column)
        assert "Distributed" in s.query("SELECT engine FROM system.tables WHERE database = 'profd' AND "
                                        "name = 'samples'")
    # what version 1 stored is still there, its stacks of unknown end
    assert F.ch.query("SELECT host, count(), sum(value) FROM profd.samples GROUP BY host ORDER BY host") == old
    assert F.ch.query("SELECT DISTINCT user_end FROM profd.stacks").split() == ["255"]
    for host, p in F.hosts.items():
        load_store(F.ch, p.store, host)
    before = F.ch.query("SELECT host, count(), sum(value) FROM profd.samples GROUP BY host ORDER BY host")
    # both shards hold some hosts: the Distributed table spreads them
    per_shard = [int(s.query("SELECT count() FROM profd.samples_local")) for s in F.ch.servers]
    assert all(n > 0 for n in per_shard), per_shard
    for s in F.ch.servers:
        F.fleet("init", "--cluster", clickhouse.CLUSTER_NAME, url=s.url)
    assert F.ch.query("SELECT host, count(), sum(value) FROM profd.samples GROUP BY host ORDER BY host") == before
    assert F.ch.query("SELECT max(version) FROM profd.schema_version").strip() == "5"
    # the version-1 host's answer: every stack of unknown end, every
    # unresolved frame of unknown reason, no losses (version 1 kept none)
    q = json.loads(F.fleet("query", "--json", "--host", OLD_HOST, *OLD_WINDOW).stdout)
    rep = q["quality_by_host"][OLD_HOST]
    assert q["total"] > 0 and rep["total"] == q["total"] and rep["unknown"] == q["total"], rep
    assert rep["complete"] == 0 and rep["truncated_total"] == 0 and rep["unresolved"] > 0, rep
    assert rep["unresolved_by"]["unknown"] == rep["unresolved"] and sum(rep["lost"].values()) == 0, rep
    r = F.fleet("init", "--cluster", "no_such_cluster", check=False)
    assert r.returncode == 1 and b"no cluster 'no_such_cluster'" in r.stderr, r.stderr


def test_each_hosts_fleet_answer_equals_its_local_answer():
    for host in HOSTS:
        for filters in FILTERS:
            local = json.loads(F.local(host, "query", "--json", *WINDOW, *filters).stdout)
            fleet = json.loads(F.fleet("query", "--json", "--host", host, *WINDOW, *filters).stdout)
            assert local["total"] > 0 or filters, (host, filters)
            assert stacks_of(fleet) == stacks_of(local), (host, filters, fleet, local)
            for k in ("total", "stacks_count", "kind", "unit", "from_ns", "to_ns"):
                assert fleet[k] == local[k], (host, filters, k, fleet[k], local[k])


def test_init_on_an_empty_server_creates_what_the_upgrade_made():
    """A new server: init creates version 5 whole, column for column what
    the upgrade of version 1 made (types and defaults too)."""
    columns = ("SELECT table, name, type, default_kind, default_expression FROM system.columns "
               "WHERE database = 'profd' ORDER BY table, name FORMAT TabSeparated")
    with clickhouse.Cluster(shards=1) as fresh:
        r = F.fleet("init", "--cluster", clickhouse.CLUSTER_NAME, url=fresh.url)
        assert b"schema ready" in r.stdout, r.stdout
        assert fresh.query("SELECT max(version) FROM profd.schema_version").strip() == "5"
        got = fresh.query(columns)
    want = F.ch.servers[0].query(columns)
    assert "drops_local\treason" in got and "timeline_local\tt\tUInt64" in got and "captures_local\tstate\tUInt8" in got and "timeline_local\tbase_hz\tUInt32\tDEFAULT\t" in got and "stacks_local\tuser_end\tUInt8\tDEFAULT\t255" in got, got
    assert got == want, (got, want)


def test_each_hosts_quality_equals_its_local_quality():
    """Per host, the fleet's report is its profd's for the same filters and
    window: complete, truncated and unresolved weights by reason, and the
    losses of the drains in the window (not those before it); the fleet's
    total is the sum."""
    for filters in FILTERS + [["--kind", "offcpu", "--comm", "q"], ["--pid", "500"]]:
        local = {h: json.loads(F.local(h, "query", "--json", *WINDOW, *filters).stdout)["quality"] for h in HOSTS}
        fleet = json.loads(F.fleet("query", "--json", *WINDOW, *filters).stdout)
        assert fleet["quality_by_host"] == local, (filters, fleet["quality_by_host"], local)
        assert fleet["quality"] == add_reports(local.values()), filters
        for host in HOSTS:
            one = json.loads(F.fleet("query", "--json", "--host", host, *WINDOW, *filters).stdout)
            assert one["quality_by_host"] == {host: local[host]} and one["quality"] == local[host], (host, filters)
    # the content behind it, so the comparison above is not of zeros
    rep = json.loads(F.local("web-2", "query", "--json", *WINDOW).stdout)["quality"]
    assert rep["truncated"]["depth"] == 3 * 20 and rep["truncated"]["no_table"] == 3 * 4, rep
    assert rep["truncated"]["read_fault"] == 3 * 2 and rep["unknown"] == 3 * 2, rep
    assert rep["unresolved_by"]["no_symbols"] == 12 and rep["unresolved_by"]["no_file"] == 6, rep
    assert rep["lost"]["map_full"] == 10 and rep["lost"]["ringbuf_full"] == 1, rep
    assert rep["lost"]["stack_map_full"] == 0, rep  # before the window
    before = json.loads(F.fleet("query", "--json", "--host", "web-2", *EARLIER).stdout)["quality"]
    assert before["lost"]["stack_map_full"] == 99 and before["lost"]["map_full"] == 0, before
    # profctl's text: a summary line per host on stderr, then the fleet's
    r = F.fleet("query", *WINDOW)
    lines = r.stderr.decode().splitlines()
    for host in HOSTS:
        want = F.local(host, "query", *WINDOW).stderr.decode().splitlines()[-1]
        assert want.startswith("quality: ") and f"{host}: {want}" in lines, (host, want, lines)
    assert lines[-1].startswith("quality: "), lines
    # --quality: each host's report, then the fleet's; --json carries them
    text = F.fleet("query", "--quality", *WINDOW).stdout.decode()
    for host in HOSTS:
        local = F.local(host, "query", "--quality", *WINDOW).stdout.decode()
        assert f"host {host}: {local}" in text, (host, text, local)
    assert "fleet, 3 hosts: quality of " in text, text
    doc = json.loads(F.fleet("query", "--quality", "--json", *WINDOW).stdout)
    assert set(doc["quality_by_host"]) == set(HOSTS) and doc["view"] == "quality", doc


def test_every_host_is_the_sum_of_the_hosts():
    for filters in FILTERS[:3]:
        want = {}
        for host in HOSTS:
            local = json.loads(F.local(host, "query", "--json", *WINDOW, *filters).stdout)
            for k, v in stacks_of(local).items():
                want[k] = want.get(k, 0) + v
        for glob in (["--host", "*"], []):
            fleet = json.loads(F.fleet("query", "--json", *glob, *WINDOW, *filters).stdout)
            assert stacks_of(fleet) == want, (glob, filters)
            assert fleet["total"] == sum(want.values())
    # a glob selects some hosts: web-1 and web-2
    both = json.loads(F.fleet("query", "--json", "--host", "web-[12]", *WINDOW).stdout)
    one = [json.loads(F.local(h, "query", "--json", *WINDOW).stdout)["total"] for h in ("web-1", "web-2")]
    assert both["total"] == sum(one), (both["total"], one)
    r = F.fleet("query", "--host", "nobody", *WINDOW)
    assert r.stdout == b"" and b"no samples match --host nobody" in r.stderr, r.stderr


def test_fleet_table_is_the_table_of_the_fleets_stacks():
    """The whole fleet's table, summed by ClickHouse, has each function's
    self (stacks it ends) and total (stacks it is in, once each) of the
    stacks the fleet answers, for every host together."""
    for filters in FILTERS[:3]:
        stacks = json.loads(F.fleet("query", "--format", "json", *WINDOW, *filters).stdout)["stacks"]
        want = {}
        for st in stacks:
            keys = [(f["name"], f.get("module") or "", f["kernel"]) for f in st["frames"]] or [("[unknown]", "", False)]
            for k in set(keys):
                want.setdefault(k, [0, 0])[1] += st["value"]
            want[keys[-1]][0] += st["value"]
        doc = json.loads(F.fleet("query", "--format", "table", "--json", "--limit", "0", *WINDOW, *filters).stdout)
        got = {(r["name"], r["module"], r["kernel"]): [r["self"], r["total"]] for r in doc["rows"]}
        assert got == want, (filters, got, want)
        assert doc["total"] == sum(st["value"] for st in stacks)
        assert len(got) >= (10 if not filters else 3), got


def test_python_frames_of_the_fleet():
    """Python frames go to ClickHouse and come back as they were stored:
    each host's fleet answer has them named, with file, line and their
    python- build_id; --by line sums the fleet's hosts per line; the one
    whose code object could not be read stays unresolved, for its reason."""
    for n, host in enumerate(HOSTS, 1):
        local = json.loads(F.local(host, "query", "--json", "--comm", "python3", *WINDOW).stdout)
        fleet = json.loads(F.fleet("query", "--json", "--host", host, "--comm", "python3", *WINDOW).stdout)
        assert stacks_of(fleet) == stacks_of(local), (host, fleet, local)
        assert fleet["total"] == local["total"] == 3 * (6 * n + 4), (host, fleet["total"], local["total"])
        frames = {(f["name"], f.get("file"), f.get("line"), f.get("build_id")) for st in fleet["stacks"]
                  for f in st["frames"]}
        assert ("Worker.run", "/srv/app/work.py", 41, f"python-{2:016x}") in frames, frames
        assert ("Worker.run", "/srv/app/work.py", 42, f"python-{2:016x}") in frames, frames
        assert fleet["quality"]["unresolved_by"]["python_read_code"] == 3, fleet["quality"]
    rows = json.loads(F.fleet("query", "--json", "--format", "table", "--by", "line", "--comm", "python3",
                              "--limit", "0", *WINDOW).stdout)["rows"]
    by_line = {r["name"]: r["self"] for r in rows}
    # three drains of each host, host n with 6 n samples on line 41
    assert by_line.get("Worker.run (work.py:41)") == 3 * 6 * (1 + 2 + 3), by_line
    assert by_line.get("Worker.run (work.py:42)") == 3 * 3 * len(HOSTS), by_line


def test_java_frames_of_the_fleet():
    """Java frames go to ClickHouse and come back as they were stored: each
    host's fleet answer has them named, with file, line and their hotspot-
    build_id; --by line sums the fleet's hosts per line; the quality
    report's Java reasons (an unreadable method, a compiled frame whose
    inlined calls are not known) are the local ones."""
    for n, host in enumerate(HOSTS, 1):
        local = json.loads(F.local(host, "query", "--json", "--comm", "java", *WINDOW).stdout)
        fleet = json.loads(F.fleet("query", "--json", "--host", host, "--comm", "java", *WINDOW).stdout)
        assert stacks_of(fleet) == stacks_of(local), (host, fleet, local)
        assert fleet["total"] == local["total"] == 3 * (5 * n + 4), (host, fleet["total"], local["total"])
        frames = {(f["name"], f.get("module"), f.get("file"), f.get("line"), f.get("build_id"))
                  for st in fleet["stacks"] for f in st["frames"]}
        assert ("hs.Split.tokenize", "Split.java", "Split.java", 60, f"hotspot-{2:016x}") in frames, frames
        assert ("hs.Split.tokenize", "Split.java", "Split.java", 61, f"hotspot-{2:016x}") in frames, frames
        assert any(f[0] == "[jvm] StubRoutines (1)" and f[1] == "[jvm]" and f[4] == f"hotspot-{9:016x}"
                   for f in frames), frames
        assert fleet["quality"]["unresolved_by"]["hotspot_read"] == 3, fleet["quality"]
        assert fleet["quality"]["unresolved_by"]["hotspot_no_scope"] == 3, fleet["quality"]
        assert fleet["quality"] == local["quality"], (fleet["quality"], local["quality"])
    rows = json.loads(F.fleet("query", "--json", "--format", "table", "--by", "line", "--comm", "java",
                              "--limit", "0", *WINDOW).stdout)["rows"]
    by_line = {r["name"]: r["self"] for r in rows}
    # three drains of each host, host n with 5 n samples on line 60
    assert by_line.get("hs.Split.tokenize (Split.java:60)") == 3 * 5 * (1 + 2 + 3), by_line
    assert by_line.get("hs.Split.tokenize (Split.java:61)") == 3 * 2 * len(HOSTS), by_line


def test_views_of_a_host_equal_its_local_views():
    host = "web-2"
    # the table is summed by ClickHouse (docs/clickhouse.md): every way to key, order and cut it
    for view in (["--format", "table"], ["--format", "table", "--by", "module", "--children"],
                 ["--format", "table", "--json"], ["--format", "table", "--by", "line"],
                 ["--format", "table", "--lines", "--limit", "3"], ["--format", "table", "--raw-names", "--limit", "0"],
                 ["--format", "table", "--children", "--json", "--limit", "0"],
                 ["--format", "table", "--by", "module", "--lines", "--limit", "0"], ["--format", "tree"], ["--format", "tree", "--focus", "serve"],
                 ["--format", "tree", "--json", "--root", "process"], ["--format", "tree", "--root", "unit"]):
        for filters in ([], ["--kind", "offcpu"]):
            local = F.local(host, "query", *WINDOW, *filters, *view).stdout
            fleet = F.fleet("query", "--host", host, *WINDOW, *filters, *view).stdout
            if "--json" in view:
                local, fleet = (json.loads(local), json.loads(fleet))
                # one host: the fleet's report is the host's
                if "quality_by_host" in fleet:
                    assert fleet["quality_by_host"] == {host: local["quality"]}, (view, filters)
                    fleet = without_by_host(fleet)
            assert fleet == local, (view, filters, str(fleet)[:2000], str(local)[:2000])
    # folded: profd writes each stack's line; the order of lines is not part of the format
    for extra in ([], ["--lines"], ["--root", "process"], ["--kind", "offcpu"], ["--raw-names"]):
        local = F.local(host, "query", "--folded", *WINDOW, *extra).stdout.decode().splitlines()
        fleet = F.fleet("query", "--folded", "--host", host, *WINDOW, *extra).stdout.decode().splitlines()
        assert sorted(fleet) == sorted(local), (extra, fleet, local)
        assert fleet, extra


def test_svg_and_pprof_of_the_fleet():
    d = tempfile.mkdtemp(prefix="profd-test-")
    local_svg, fleet_svg = os.path.join(d, "l.svg"), os.path.join(d, "f.svg")
    F.local("web-1", "query", "--format", "svg", "--output", local_svg, *WINDOW)
    F.fleet("query", "--format", "svg", "--host", "web-1", "--output", fleet_svg, *WINDOW)
    with open(local_svg, "rb") as a, open(fleet_svg, "rb") as b:
        # the subtitle's quality summary included
        assert a.read() == b.read(), "the fleet's flame graph of web-1 differs from web-1's own"
    # the whole fleet's graph has every host's functions
    F.fleet("query", "--format", "svg", "--root", "host", "--output", fleet_svg, *WINDOW)
    svg = open(fleet_svg, encoding="utf-8").read()
    for name in HOSTS + ["w_host1", "w_host2", "w_host3"]:
        assert name in svg, name
    for who, out in (("local", os.path.join(d, "l.pb.gz")), ("fleet", os.path.join(d, "f.pb.gz"))):
        if who == "local":
            F.local("web-1", "query", "--format", "pprof", "--output", out, *WINDOW)
        else:
            F.fleet("query", "--format", "pprof", "--host", "web-1", "--output", out, *WINDOW)
        with gzip.open(out) as g:
            data = g.read()
        assert len(data) > 100 and b"serve" in data and b"ksys_read" in data, who
    # the same profile, whatever the order of its samples: same size, same strings
    with gzip.open(os.path.join(d, "l.pb.gz")) as a, gzip.open(os.path.join(d, "f.pb.gz")) as b:
        la, fb = a.read(), b.read()
    # both carry the quality report as comments, the fleet's that of web-1
    assert b"quality report: " in la and b"quality report: " in fb
    assert la.count(b"quality") == fb.count(b"quality")
    for name in (b"main", b"serve", b"parse", b"inl", b"vfs_read", b"start"):
        assert la.count(name) == fb.count(name), name


def test_root_host_puts_each_host_under_its_own_root():
    lines = F.fleet("query", "--folded", "--root", "host", *WINDOW).stdout.decode().splitlines()
    per_host = {}
    for line in lines:
        stack, value = line.rsplit(" ", 1)
        per_host[stack.split(";", 1)[0]] = per_host.get(stack.split(";", 1)[0], 0) + int(value)
    want = {h: json.loads(F.local(h, "query", "--json", *WINDOW).stdout)["total"] for h in HOSTS}
    assert per_host == want, (per_host, want)
    tree = F.fleet("query", "--format", "tree", "--root", "host", *WINDOW).stdout.decode()
    for h in HOSTS:
        assert h in tree, (h, tree[:2000])
    r = subprocess.run([binary("PROFCTL"), "query", "--root", "host", "--folded"], capture_output=True)
    assert r.returncode == 2 and b"--root host groups a fleet by host" in r.stderr, r.stderr


def test_series_of_a_host_equals_its_local_series():
    for host in HOSTS:
        for filters in ([], ["--kind", "offcpu"], ["--pid", "100"]):
            local = json.loads(F.local(host, "series", "--json", "--step", "1m", *WINDOW, *filters).stdout)
            fleet = json.loads(F.fleet("series", "--json", "--step", "1m", "--host", host, *WINDOW,
                                       *filters).stdout)
            # the complete part per point and the partial report included
            assert fleet == local, (host, filters, fleet, local)
    total = json.loads(F.fleet("series", "--json", "--step", "10m", *WINDOW).stdout)
    want = sum(json.loads(F.local(h, "series", "--json", "--step", "10m", *WINDOW).stdout)["total"]
               for h in HOSTS)
    assert total["total"] == want and sum(p["value"] for p in total["points"]) == want, (total, want)
    # the fleet's complete part is the hosts' summed
    want_complete = sum(json.loads(F.local(h, "series", "--json", "--step", "10m", *WINDOW).stdout)["quality"]
                        ["complete"] for h in HOSTS)
    assert total["quality"]["complete"] == want_complete and total["quality"]["partial"], total["quality"]
    assert sum(p["complete"] for p in total["points"]) == want_complete, total["points"]


def test_diff_across_windows_and_between_hosts():
    host = "web-1"
    base = ["--baseline-from", EARLIER[1], "--baseline-to", EARLIER[3]]
    for view in (["--format", "table"], ["--format", "json"], ["--format", "table", "--json"]):
        local = F.local(host, "diff", *WINDOW, *base, *view).stdout
        fleet = F.fleet("diff", "--host", host, *WINDOW, *base, *view).stdout
        assert fleet == local, (view, fleet.decode()[:2000], local.decode()[:2000])
    local = sorted(F.local(host, "diff", *WINDOW, *base, "--format", "folded").stdout.decode().splitlines())
    fleet = sorted(F.fleet("diff", "--host", host, *WINDOW, *base, "--format", "folded").stdout.decode()
                   .splitlines())
    assert fleet == local
    # between hosts: web-1's worker runs w_host1, db-1's w_host3
    doc = json.loads(F.fleet("diff", "--host", "web-1", "--baseline-host", "db-1", *WINDOW, "--format", "table",
                             "--json", "--children", "--limit", "0").stdout)
    text = json.dumps(doc)
    assert "w_host1" in text and "w_host3" in text, text[:2000]
    folded = F.fleet("diff", "--host", "web-1", "--baseline-host", "db-1", *WINDOW, "--format", "folded") \
        .stdout.decode().splitlines()
    base_total = sum(int(l.rsplit(" ", 2)[1]) for l in folded)
    cur_total = sum(int(l.rsplit(" ", 2)[2]) for l in folded)
    want_cur = json.loads(F.local("web-1", "query", "--json", *WINDOW).stdout)["total"]
    assert cur_total == want_cur, (cur_total, want_cur)
    assert base_total > 0
    r = F.fleet("diff", "--host", "web-1", "--baseline-host", "web-1", *WINDOW, check=False)
    assert r.returncode == 2 and b"nothing to compare" in r.stderr, r.stderr


def test_bad_url_credentials_and_usage_are_clear_errors():
    r = F.fleet("query", *WINDOW, url="http://127.0.0.1:1/", check=False)
    assert r.returncode == 1 and b"cannot connect to ClickHouse at http://127.0.0.1:1/" in r.stderr, r.stderr
    r = F.fleet("query", *WINDOW, url="ftp://x/", check=False)
    assert r.returncode == 2 and b"not an http:// or https:// URL" in r.stderr, r.stderr
    d = tempfile.mkdtemp(prefix="profd-test-")
    good = F.ch.write_credentials(os.path.join(d, "good"))
    bad = F.ch.write_credentials(os.path.join(d, "bad"), password="wrong")
    ok = F.fleet("query", "--json", "--host", "web-1", *WINDOW, credentials=good)
    assert json.loads(ok.stdout)["total"] > 0
    r = F.fleet("query", *WINDOW, credentials=bad, check=False)
    assert r.returncode == 1 and b"refused the credentials" in r.stderr, r.stderr
    assert b"wrong" not in r.stderr  # the password is never printed
    r = F.fleet("query", *WINDOW, credentials=os.path.join(d, "missing"), check=False)
    assert r.returncode == 1 and b"cannot read the ClickHouse credentials file" in r.stderr, r.stderr
    # the port of something that is not ClickHouse's HTTP interface (its native TCP port)
    r = F.fleet("query", *WINDOW, url=f"http://127.0.0.1:{F.ch.servers[0].tcp_port}/", check=False)
    assert r.returncode == 1 and r.stderr.startswith(b"profctl: "), r.stderr
    for args in (["query", "--host", "x"], ["series", "--host", "x"]):
        r = subprocess.run([binary("PROFCTL")] + args, capture_output=True)
        assert r.returncode == 2 and b"--host selects hosts of a fleet" in r.stderr, (args, r.stderr)
    for cmd in ("status", "flush", "top"):
        r = F.fleet(cmd, check=False)
        assert r.returncode == 2 and b"asks one profd" in r.stderr, (cmd, r.stderr)
    r = F.fleet("query", "--last", check=False)
    assert r.returncode == 1 and b"--last is the most recent drain of one profd" in r.stderr, r.stderr


def test_real_profd_exports_equal_local_answers():
    """Three real profd (BPF, the real kernel) on stores with known past
    content, each exporting to the cluster under its own host_name: once
    each has flushed and ClickHouse acknowledged every drain, a fleet query
    of a past window equals each host's local one, known and live stacks
    alike, and every live host together is their sum."""
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        print("SKIP: test_real_profd_exports_equal_local_answers loads BPF and needs root and BTF; it did "
              "NOT run", file=sys.stderr)
        return
    d = tempfile.mkdtemp(prefix="profd-test-")
    cred = F.ch.write_credentials(os.path.join(d, "ch.cred"))
    live = {}
    try:
        for i in range(1, 4):
            host = f"live-{i}"
            wd = tempfile.mkdtemp(prefix="profd-test-")
            store = os.path.join(wd, "profd.db")
            storegen(store, host_spec(i))  # known stacks, minutes to hours ago
            conf = os.path.join(wd, "profd.conf")
            with open(conf, "w") as f:
                f.write(f"clickhouse_url = {F.ch.url}\nhost_name = {host}\nclickhouse_credentials = {cred}\n")
            # cpu only, at a low rate: three profd on two shared CPUs;
            # every frame with its lines at once, as exported (at the
            # default dwarf_min_samples a file's first samples are exported
            # by their symbols and their local stacks gain lines later:
            # docs/clickhouse.md)
            live[host] = Profd("--kinds", "cpu", "--frequency", "19", "--interval", "5s",
                               "--dwarf-min-samples", "0", store=store, workdir=wd, config=conf).start()
        time.sleep(12)  # a few drains of whatever runs on the machine
        stop_ns = time.time_ns()
        for host, p in live.items():
            p.profctl("flush")
            flushed_ns = time.time_ns()
            # every drain that ended by the flush (so every one the window
            # touches) acknowledged; later drains keep coming
            deadline = time.monotonic() + 180
            while True:
                st = json.loads(p.profctl("status", "--json").stdout)
                ex = st.get("export", {})
                if ex.get("exported_drains", 0) > 0 and (ex.get("backlog_drains") == 0 or
                                                         (ex.get("backlog_oldest_ns") or 0) > flushed_ns):
                    break
                assert time.monotonic() < deadline, f"{host} did not export its backlog: {ex}"
                time.sleep(0.5)
        window = ["--from", "4h", "--to", rfc3339(stop_ns - 10**9)]
        want = {}
        for host, p in live.items():
            for filters in ([], ["--comm", "web"], ["--kind", "offcpu"]):
                local = json.loads(p.profctl("query", "--json", *window, *filters).stdout)
                fleet = json.loads(F.fleet("query", "--json", "--host", host, *window, *filters).stdout)
                assert local["total"] > 0, (host, filters)
                assert stacks_of(fleet) == stacks_of(local), (host, filters)
                assert fleet["total"] == local["total"], (host, filters, fleet["total"], local["total"])
                if not filters:
                    for k, v in stacks_of(local).items():
                        want[k] = want.get(k, 0) + v
            # the live part holds real stacks of the real kernel
            known = {f["name"] for line in host_spec(int(host[-1])) for f in line.get("stack", [])} | \
                {"w+0x1234", "q+0x10", "q+0x30", "libq.so+0x20"}
            real = [s for s in json.loads(p.profctl("query", "--json", *window).stdout)["stacks"]
                    if any(f["name"] not in known for f in s["frames"])]
            assert real, host
        fleet = json.loads(F.fleet("query", "--json", "--host", "live-*", *window).stdout)
        assert stacks_of(fleet) == want
        # what profd's exporter sent (stack ends, unresolved reasons, drops)
        # gives each host the report of its own profd
        locals_ = {h: json.loads(p.profctl("query", "--json", *window).stdout)["quality"] for h, p in live.items()}
        assert fleet["quality_by_host"] == locals_, (fleet["quality_by_host"], locals_)
        assert fleet["quality"] == add_reports(locals_.values())
        for h, rep in locals_.items():
            assert rep["truncated"]["depth"] > 0 and rep["unresolved_by"]["no_file"] > 0, (h, rep)
            assert rep["lost"]["map_full"] >= 5 * int(h[-1]), (h, rep)
    finally:
        for p in live.values():
            p.cleanup()


def test_a_schema_of_another_version_is_refused():
    # last: it changes the cluster's schema version
    for s in F.ch.servers:
        s.query("INSERT INTO profd.schema_version (version) VALUES (6)")
    r = F.fleet("query", *WINDOW, check=False)
    assert r.returncode == 1 and b"holds profd schema version 6, this profctl reads version 5" in r.stderr, \
        r.stderr
    r = F.fleet("init", "--cluster", clickhouse.CLUSTER_NAME, check=False)
    assert r.returncode == 1 and b"already holds profd schema version 6" in r.stderr, r.stderr
    for s in F.ch.servers:
        s.query("DROP TABLE profd.schema_version")
    r = F.fleet("query", *WINDOW, check=False)
    assert r.returncode == 1 and b"has no profd schema" in r.stderr, r.stderr


if __name__ == "__main__":
    clickhouse.require_server()
    with Fleet() as F:
        run_tests([
            test_init_upgrades_version_1_on_both_shards_and_is_idempotent,
            test_init_on_an_empty_server_creates_what_the_upgrade_made,
            test_each_hosts_fleet_answer_equals_its_local_answer,
            test_each_hosts_quality_equals_its_local_quality,
            test_every_host_is_the_sum_of_the_hosts,
            test_fleet_table_is_the_table_of_the_fleets_stacks,
            test_views_of_a_host_equal_its_local_views,
            test_python_frames_of_the_fleet,
            test_java_frames_of_the_fleet,
            test_svg_and_pprof_of_the_fleet,
            test_root_host_puts_each_host_under_its_own_root,
            test_series_of_a_host_equals_its_local_series,
            test_diff_across_windows_and_between_hosts,
            test_bad_url_credentials_and_usage_are_clear_errors,
            test_real_profd_exports_equal_local_answers,
            test_a_schema_of_another_version_is_refused,
        ])
