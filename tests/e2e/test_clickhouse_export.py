"""The ClickHouse export, end to end: real profd instances (BPF in the
kernel) export to two real clickhouse-server shards on loopback
(tests/e2e/clickhouse.py) behind Distributed tables.

Exactly once is checked drain by drain: for every drain of a host's store
(read with sqlite3, read-only), ClickHouse holds the same number of sample
rows with the same sum of values, and no drain it does not have; and the
answer of `profctl query` for a fixed past window equals ClickHouse's, stack
by stack. That holds across a shard killed with SIGKILL mid-export, a user
that may not insert, an answer lost after ClickHouse stored the insert,
and bad configuration (unreachable URL, wrong password, another schema
version), each shown in `profctl status` and the log while profd keeps
profiling locally."""
import http.server
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clickhouse  # noqa: E402
from harness import binary, Profd, require_root, rfc3339, run_tests, storegen  # noqa: E402

CH = None  # the cluster every test uses
INTERVAL = "2s"  # enough drains in seconds, few enough for a loaded 2-CPU machine


def start_profd(host, url=None, user=clickhouse.USER, password=clickhouse.PASSWORD, timeout=None, spec=None,
                extra=()):
    """A profd (not started yet) exporting to url (default: the cluster) as
    host, with a credentials file for user; with spec, its store starts
    with that known content (storegen); extra: more options."""
    # dwarf_min_samples 0: every frame is stored with its lines at once.
    # At the default, the first samples of a file (fewer than 20) are
    # exported with their symbols alone and their local stacks gain the
    # lines later, so "exactly what they stored" would hold only for the
    # rest (docs/clickhouse.md)
    p = Profd("--interval", INTERVAL, "--clickhouse-url", url or CH.url, "--host-name", host,
              "--dwarf-min-samples", "0", *extra)
    if spec:
        storegen(p.store, spec)
    p.credentials = set_credentials(p, user, password)
    p.config = os.path.join(p.dir, "profd.conf")
    with open(p.config, "w") as f:
        f.write(f"clickhouse_credentials = {p.credentials}\n")
        if timeout:
            f.write(f"clickhouse_timeout = {timeout}\n")
    return p


def set_credentials(p, user=clickhouse.USER, password=clickhouse.PASSWORD):
    return CH.write_credentials(os.path.join(p.dir, "clickhouse.cred"), user, password)


def export_status(p):
    st = json.loads(p.profctl("status", "--json").stdout)
    assert "export" in st, f"status has no export section: {st.keys()}"
    return st["export"], st


def wait_for(what, cond, timeout=90, p=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.3)
    extra = ""
    if p:
        extra = "\nstatus: " + json.dumps(export_status(p)[0]) + "\nlog:\n" + p.read_log()[-3000:]
    raise AssertionError(f"timed out waiting for {what}{extra}")


def newest_drain(p):
    """(id, end) of the store's newest drain, read-only."""
    db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
    try:
        return db.execute("SELECT id, end_ns FROM drains WHERE resolution_ns = 0 ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        db.close()


def drains_stored(p, n):
    """Waits until the store holds n drains; returns [(start, end)] of them."""
    def enough():
        db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT start_ns, end_ns FROM drains WHERE resolution_ns = 0 ORDER BY id").fetchall()
        except sqlite3.OperationalError:  # not created yet
            rows = []
        finally:
            db.close()
        return rows if len(rows) >= n else None
    return wait_for(f"{n} drains in the store", enough, timeout=180, p=p)


def caught_up(p):
    """Waits until ClickHouse acknowledged every drain stored so far;
    returns (id, end) of the last of them."""
    drains_stored(p, 1)
    last = newest_drain(p)
    wait_for("the export to catch up", lambda: export_status(p)[0]["acknowledged_drain_id"] >= last[0],
             timeout=180, p=p)
    p.upto = last
    return last


def local_drains(p):
    """{drain_end: (sample rows, sum of values)} of the store's drains as
    drained up to caught_up's, read-only."""
    db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT d.end_ns, count(s.value), coalesce(sum(s.value), 0) FROM drains d "
                          "LEFT JOIN samples s ON s.drain_id = d.id WHERE d.resolution_ns = 0 AND d.id <= ? "
                          "GROUP BY d.id", (p.upto[0],)).fetchall()
    finally:
        db.close()
    return {end: (n, v) for end, n, v in rows if n > 0}


def clickhouse_drains(host, upto_end):
    out = CH.query(f"SELECT drain_end, count(), sum(value) FROM profd.samples WHERE host = '{host}' "
                   f"AND drain_end <= {upto_end} GROUP BY drain_end FORMAT TabSeparated")
    res = {}
    for line in out.splitlines():
        end, n, v = map(int, line.split("\t"))
        res[end] = (n, v)
    return res


def local_drops(p):
    """{(drain_end, reason): count} of the store's drains up to caught_up's."""
    db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
    try:
        return {(end, reason): n for end, reason, n in db.execute(
            "SELECT d.end_ns, x.reason, x.count FROM drops x JOIN drains d ON d.id = x.drain_id "
            "WHERE d.resolution_ns = 0 AND d.id <= ?", (p.upto[0],))}
    finally:
        db.close()


def assert_drops_exactly_once(p, host):
    """Every drop counter of the store's drains is in profd.drops once."""
    out = CH.query(f"SELECT drain_end, reason, count(), sum(value) FROM profd.drops WHERE host = '{host}' "
                   f"AND drain_end <= {p.upto[1]} GROUP BY drain_end, reason FORMAT TabSeparated")
    rows = [line.split("\t") for line in out.splitlines()]
    twice = [r for r in rows if r[2] != "1"]
    remote = {(int(e), reason): int(v) for e, reason, _, v in rows}
    local = local_drops(p)
    assert not twice and remote == local, (host, twice[:5], sorted(set(local.items()) ^ set(remote.items()))[:10])
    return len(local)


def assert_timeline_exactly_once(p, host):
    """Every drain's timeline (each on-CPU sample's own time) is in
    profd.timeline once: as many rows, its first and last times the
    store's, each row's stack one of the host's cpu sample rows."""
    db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
    try:
        # the blob keeps µs (timeline-pack.h), end_ns the last sample's ns
        local = {end: (n, t0, t1 // 1000 * 1000) for end, n, t0, t1 in db.execute(
            "SELECT d.end_ns, t.n, t.start_ns, t.end_ns FROM timeline_blocks t JOIN drains d ON d.id = t.drain_id "
            "WHERE d.resolution_ns = 0 AND d.id <= ? AND t.n > 0", (p.upto[0],))}
    finally:
        db.close()
    out = CH.query(f"SELECT drain_end, count(), min(t), max(t) FROM profd.timeline WHERE host = '{host}' "
                   f"AND drain_end <= {p.upto[1]} GROUP BY drain_end FORMAT TabSeparated")
    remote = {e: (n, t0, t1) for e, n, t0, t1 in (map(int, line.split("\t")) for line in out.splitlines())}
    differ = sorted(e for e in set(local) | set(remote) if local.get(e) != remote.get(e))
    assert not differ, (f"{host}: timelines of {len(local)} drains stored, {len(remote)} in ClickHouse; "
                        f"(samples, first, last) differ: {[(e, local.get(e), remote.get(e)) for e in differ[:5]]}")
    # up to the drains acknowledged: a later batch may be between its
    # timeline's insert and its samples'
    strays = CH.query(f"SELECT count() FROM profd.timeline WHERE host = '{host}' AND drain_end <= {p.upto[1]} "
                      f"AND stack GLOBAL NOT IN "
                      f"(SELECT stack FROM profd.samples WHERE host = '{host}' AND kind = 0)").strip()
    assert strays == "0", f"{host}: {strays} timeline rows name a stack no cpu sample row of the host has"
    return sum(n for n, _, _ in local.values())


def assert_exactly_once(p, host):
    """Every drain of the store is in ClickHouse once, with the same rows
    and values, the same drop counters and the same timeline; ClickHouse
    has nothing else for host."""
    assert_drops_exactly_once(p, host)
    assert_timeline_exactly_once(p, host)
    local, remote = local_drains(p), clickhouse_drains(host, p.upto[1])
    assert local, "the store holds no samples"
    missing = sorted(set(local) - set(remote))
    extra = sorted(set(remote) - set(local))
    differ = sorted(e for e in set(local) & set(remote) if local[e] != remote[e])
    assert not missing and not extra and not differ, (
        f"{host}: {len(local)} drains stored, {len(remote)} in ClickHouse; missing {missing[:5]}, "
        f"not in the store {extra[:5]}, different (rows, sum) {[(e, local[e], remote[e]) for e in differ[:5]]}")
    return len(local)


def local_stacks(p, kind, from_ns, to_ns):
    """{(frame names, modules): value} and the total of a local query."""
    # whole drains, as ClickHouse holds them (a cpu window would otherwise
    # be answered from the timeline, by each sample's own time)
    doc = p.query_json("--kind", kind, "--from", rfc3339(from_ns), "--to", rfc3339(to_ns), "--by-drains")
    stacks = {}
    for st in doc["stacks"]:
        key = tuple((f["name"], f.get("module", "")) for f in st["frames"])
        stacks[key] = stacks.get(key, 0) + st["value"]
    return stacks, doc["total"]


def clickhouse_stacks(host, kind, from_ns, to_ns):
    """The same from ClickHouse: samples of the window's drains summed per
    stack, stacks and frames looked up by id (duplicates tolerated)."""
    k = {"cpu": 0, "offcpu": 1, "wakeup": 2}[kind]
    sums = CH.query(f"SELECT stack, sum(value) FROM profd.samples WHERE host = '{host}' AND kind = {k} "
                    f"AND drain_end >= {from_ns} AND drain_start <= {to_ns} GROUP BY stack FORMAT TabSeparated")
    by_stack = {int(s): int(v) for s, v in (l.split("\t") for l in sums.splitlines())}
    if not by_stack:
        return {}, 0
    ids = ",".join(map(str, by_stack))
    frames_of = {}
    for line in CH.query(f"SELECT id, any(frames) FROM profd.stacks WHERE id IN ({ids}) "
                         "GROUP BY id FORMAT TabSeparated").splitlines():
        i, arr = line.split("\t")
        frames_of[int(i)] = json.loads(arr)
    fids = {f for fr in frames_of.values() for f in fr}
    names = {}
    if fids:
        for line in CH.query(f"SELECT id, any(name) AS name, any(module) AS module FROM profd.frames "
                             f"WHERE id IN ({','.join(map(str, fids))}) GROUP BY id "
                             "FORMAT JSONEachRow").splitlines():
            row = json.loads(line)
            names[int(row["id"])] = (row["name"], row["module"])
    stacks = {}
    for sid, v in by_stack.items():
        assert sid in frames_of, f"stack {sid} of {host}'s samples is not in profd.stacks"
        key = tuple(names[f] for f in frames_of[sid])
        stacks[key] = stacks.get(key, 0) + v
    return stacks, sum(by_stack.values())


def fleet_profctl(*args):
    r = subprocess.run([binary("PROFCTL"), "--clickhouse", CH.url] + list(args), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"profctl --clickhouse {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}"
    return r


def timeline_oldest(p):
    """The oldest sample the store's timeline holds (Unix-epoch ns)."""
    db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
    try:
        return db.execute("SELECT min(start_ns) FROM timeline_blocks").fetchone()[0]
    finally:
        db.close()


def heatmap_json(profctl, from_ns, to_ns, *args):
    return json.loads(profctl("heatmap", "--from", rfc3339(from_ns), "--to", rfc3339(to_ns), "--json",
                              *args).stdout)


def stop(p):
    """Stops profd: on a loaded machine its writer may need long for the
    drains still queued."""
    if p.proc and p.proc.poll() is None:
        p.stop(timeout=300)
    p.cleanup()


def cleanup_all(profds):
    """Stops every profd, even when stopping one fails; then raises the
    first failure."""
    errors = []
    for p in profds:
        try:
            stop(p)
        except Exception as e:  # the others must stop all the same
            errors.append(e)
    if errors:
        raise errors[0]


def busy(seconds):
    """Work for the profilers to see: cpu_split, a real workload."""
    return subprocess.Popen([binary("CPU_SPLIT"), str(seconds)], stdout=subprocess.DEVNULL)


def hosts_on_both_shards(n):
    """n host names whose samples land on both shards (sipHash64 % 2)."""
    names, shards = [], set()
    for i in range(100):
        name = f"fleet-{i:02d}"
        shard = int(CH.query(f"SELECT sipHash64('{name}') % 2").strip())
        if len(names) < n - 1 or shard not in shards:
            names.append(name)
            shards.add(shard)
        if len(names) == n and len(shards) == 2:
            return names
        if len(names) == n:
            names.pop()
    raise AssertionError("no host names for both shards")


def test_three_hosts_export_exactly_what_they_stored():
    hosts = hosts_on_both_shards(3)
    profds = [start_profd(h) for h in hosts]
    work = None
    try:
        for p in profds:
            p.start(timeout=180)
        work = busy(8)  # once every host profiles
        # a window in the past every host profiled: from the latest second
        # drain's start (the hosts start one after the other, far apart
        # under a sanitizer and load) over three intervals
        t_from = max(drains_stored(p, 2)[1][0] for p in profds) + 1
        t_to = t_from + 3 * 2 * 10**9
        for p in profds:
            wait_for("a drain past the window", lambda: newest_drain(p)[1] > t_to, timeout=120, p=p)
        for p in profds:
            caught_up(p)
        for h, p in zip(hosts, profds):
            n = assert_exactly_once(p, h)
            assert n >= 3, f"{h}: only {n} drains with samples"
            ticks = assert_timeline_exactly_once(p, h)
            assert ticks > 0, f"{h}: no timeline exported"
            for kind in ("cpu", "offcpu", "wakeup"):
                ls, lt = local_stacks(p, kind, t_from, t_to)
                rs, rt = clickhouse_stacks(h, kind, t_from, t_to)
                assert lt == rt, f"{h} {kind}: local total {lt}, ClickHouse {rt}"
                assert ls == rs, (f"{h} {kind}: {len(ls)} local stacks, {len(rs)} in ClickHouse, "
                                  f"{len(set(ls) ^ set(rs))} differ")
                assert lt > 0 or kind != "cpu", f"{h}: no cpu samples in the window"
            e, _ = export_status(p)
            assert e["errors"] == {k: 0 for k in e["errors"]}, f"{h}: errors {e['errors']}"
            assert e["exported_timeline"] >= ticks and e["timeline_unmatched"] == 0, \
                f"{h}: {ticks} timeline samples stored, status {e}"
        # the fleet's heatmap: each host's exported timeline, cell for cell
        # what its profd draws from its own; all hosts, their sum. The
        # window: where every host's timeline holds samples, ending a
        # second before the last drain exported (a sample taken just
        # before a drain's end may be read by the next)
        h_from = max(timeline_oldest(p) for p in profds)
        for p in profds:  # hosts start one after the other: a few seconds past the last one's first sample
            wait_for("a drain 4 s after every host's first timed sample",
                     lambda: newest_drain(p)[1] > h_from + 4 * 10**9, timeout=120, p=p)
            caught_up(p)
        h_to = min(p.upto[1] for p in profds) - 10**9
        assert h_from < h_to, f"no window every host's exported timeline covers: {h_from} to {h_to}"
        total = 0
        for h, p in zip(hosts, profds):
            lh = heatmap_json(p.profctl, h_from, h_to)
            fh = heatmap_json(fleet_profctl, h_from, h_to, "--host", h)
            assert lh["total"] > 0, f"{h}: no timeline samples in the window"
            for k in ("total", "start_ns", "columns", "cells", "omitted"):
                assert fh[k] == lh[k], f"{h}: the fleet heatmap's {k} is {fh[k]!r:.200}, profd's {lh[k]!r:.200}"
            total += lh["total"]
        fh = heatmap_json(fleet_profctl, h_from, h_to, "--host", "fleet-*")
        assert fh["total"] == total, f"the fleet heatmap of every host holds {fh['total']} samples, the hosts {total}"
        # both shards hold samples, each host on one of them
        per_shard = [s.query("SELECT DISTINCT host FROM profd.samples_local FORMAT TabSeparated").split()
                     for s in CH.servers]
        assert all(per_shard), f"a shard holds no samples: {per_shard}"
        for h in hosts:
            assert sum(h in s for s in per_shard) == 1, f"{h}'s samples are on {per_shard}"
        # stacks and frames are named by content: a stack two hosts share is one id
        shared = CH.query("SELECT count() FROM (SELECT stack FROM profd.samples GROUP BY stack "
                          "HAVING uniqExact(host) > 1)").strip()
        assert int(shared) > 0, "no stack id is shared between hosts"
    except BaseException as e:
        print(f"failed: {e!r}", file=sys.stderr)
        for p in profds:
            print(f"--- profd {p.args} ---\n" + p.read_log()[-3000:], file=sys.stderr)
        raise
    finally:
        if work:
            work.wait()
        cleanup_all(profds)


def test_shard_killed_mid_export_loses_and_doubles_nothing():
    host = "crash-host"
    p = start_profd(host, timeout="2s")
    home = int(CH.query(f"SELECT sipHash64('{host}') % 2").strip())
    work = busy(30)
    try:
        p.start(timeout=180)
        time.sleep(2)
        # the server profd talks to dies while drains stream in: connections break mid-insert
        CH.servers[0].kill9()
        wait_for("a connect error", lambda: export_status(p)[0]["errors"]["connect"] > 0, p=p)
        # drains keep being stored while nothing can be sent: the backlog grows
        e = wait_for("a backlog of 2 drains while ClickHouse is down",
                     lambda: (lambda s: s if s["backlog_drains"] >= 2 else None)(export_status(p)[0]),
                     timeout=30, p=p)
        assert e["state"] in ("retrying", "sending"), e
        CH.servers[0].start()
        time.sleep(2)
        # then the shard holding this host's samples, the other one
        other = CH.servers[1]
        other.kill9()
        time.sleep(3)
        other.start()
        # and the shard of the host's samples once more, if it is the first
        CH.servers[home].kill9()
        time.sleep(1)
        CH.servers[home].start()
        # drains stored past the kills, however fast they went: on a quiet
        # host the sequence above took 6 drains, only 4 of them with samples
        drains_stored(p, 8)
        caught_up(p)
        n = assert_exactly_once(p, host)
        e, _ = export_status(p)
        assert n >= 5 and e["last_error"], (n, e)
        log = p.read_log()
        assert "ClickHouse export (connect)" in log and "works again" in log, log[-3000:]
    finally:
        work.kill()
        work.wait()
        stop(p)
        for s in CH.servers:  # whatever failed, the next tests get a whole cluster
            if not s.running():
                s.start()


def test_read_only_user_keeps_a_backlog_then_catches_up():
    host = "readonly-host"
    p = start_profd(host, user=clickhouse.READER)
    try:
        p.start(timeout=180)
        wait_for("an auth error", lambda: export_status(p)[0]["errors"]["auth"] > 0, p=p)
        # the backlog grows while every insert is refused
        wait_for("a backlog of 3 drains", lambda: export_status(p)[0]["backlog_drains"] >= 3, p=p)
        e, st = export_status(p)
        # between two attempts (retrying), or in one whose refusal is not
        # back yet (sending); the last error stays until one succeeds
        assert e["state"] in ("retrying", "sending") and e["error"] == "auth", e
        assert "readonly" in e["last_error"], e["last_error"]
        assert e["backlog_drains"] >= 3 and e["backlog_oldest_ns"], e
        assert e["exported_drains"] == 0
        assert CH.query(f"SELECT count() FROM profd.samples WHERE host = '{host}'").strip() == "0"
        assert "ClickHouse export (auth)" in p.read_log()
        # local profiling goes on meanwhile
        assert st["drains"] >= 3 and p.query_json("--since", "1m")["total"] >= 0
        # the operator gives profd a user that may insert: taken without a restart
        set_credentials(p)
        caught_up(p)
        n = assert_exactly_once(p, host)
        e, _ = export_status(p)
        assert e["exported_drains"] >= n - e["already_stored"], e
    finally:
        stop(p)


class DroppingProxy:
    """An HTTP proxy on loopback in front of a ClickHouse server: passes
    requests on and answers back, except that the first `drops` sample
    INSERTs are passed on (ClickHouse stores them) and their answers are
    never given: profd's request times out after the data was stored."""

    def __init__(self, upstream, drops, table="samples"):
        self.upstream, self.drops, self.dropped = upstream, drops, 0
        self.insert = "INSERT%20INTO%20profd." + table + "%20"
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                req = urllib.request.Request(proxy.upstream.rstrip("/") + self.path, data=body, method="POST")
                for h in ("Authorization", "X-ClickHouse-User", "X-ClickHouse-Key"):
                    if self.headers.get(h):
                        req.add_header(h, self.headers[h])
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if proxy.insert in self.path and status == 200 and proxy.dropped < proxy.drops:
                    proxy.dropped += 1
                    time.sleep(4)  # longer than profd's clickhouse_timeout: it gives up
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_insert_stored_but_answer_lost_is_not_sent_twice():
    host = "timeout-host"
    proxy = DroppingProxy(CH.url, drops=2)
    p = start_profd(host, url=proxy.url, timeout="1s")
    try:
        p.start(timeout=180)
        wait_for("two dropped answers", lambda: proxy.dropped >= 2, p=p)
        caught_up(p)
        e, _ = export_status(p)
        assert e["errors"]["timeout"] >= 2, e
        assert e["already_stored"] >= 2, f"the stored drains were not found before resending: {e}"
        assert_exactly_once(p, host)
    finally:
        stop(p)
        proxy.close()


def test_drops_stored_but_answer_lost_are_not_sent_twice():
    """Drop rows go in before the samples: when their insert landed but its
    answer was lost, the retry finds them (profd.drops, by drain_end) and
    sends only the samples."""
    host = "drops-host"
    spec = [{"ago_s": ago, "drops": {"map_full": 7, "ringbuf_full": i + 1}} for i, ago in enumerate((40, 30, 20))]
    spec += [{"ago_s": ago, "pid": 9, "comm": "known", "value": 5, "stack": [{"name": "main", "module": "/bin/k"}]}
             for ago in (40, 30)]
    proxy = DroppingProxy(CH.url, drops=2, table="drops")
    p = start_profd(host, url=proxy.url, timeout="1s", spec=spec)
    try:
        p.start(timeout=180)
        wait_for("two dropped answers", lambda: proxy.dropped >= 2, p=p)
        caught_up(p)
        e, _ = export_status(p)
        assert e["errors"]["timeout"] >= 2, e
        assert assert_drops_exactly_once(p, host) >= 6
        assert_exactly_once(p, host)
    finally:
        stop(p)
        proxy.close()


def clickhouse_captures(host):
    """{(id, state): [rows]} of profd.captures for host, each row as
    profctl capture list names the fields."""
    out = CH.query(f"SELECT id, state, cause, origin, uid, trigger_ns, from_ns, to_ns, pinned_bytes, value_centi "
                   f"FROM profd.captures WHERE host = '{host}' FORMAT JSONEachRow")
    rows = {}
    for line in out.splitlines():
        r = json.loads(line)
        r = {k: int(v) if k not in ("cause", "origin") else v for k, v in r.items()}
        rows.setdefault((r["id"], r["state"]), []).append(r)
    return rows


def local_capture(p, cid):
    return next(c for c in json.loads(p.profctl("capture", "list", "--json").stdout)["captures"] if c["id"] == cid)


def capture_events_of(profctl, view, from_ns, to_ns, *args):
    """The capture events of profctl VIEW --json over the window (host
    dropped: only the fleet's lines carry it)."""
    doc = json.loads(profctl(view, "--from", rfc3339(from_ns), "--to", rfc3339(to_ns), "--json", *args).stdout)
    return [{k: v for k, v in e.items() if k != "host"} for e in doc.get("events", [])], doc


def test_capture_arrives_once_per_state_and_the_fleet_marks_it():
    """A capture by hand arrives in profd.captures once in each state it
    was exported in (active unless it had ended by the exporter's next look,
    as under a sanitizer and load; pinned when its time ended; unpinned),
    also when the first insert's answer was lost (the retry finds it
    stored) and across a restart of profd (the states are looked up, none
    sent again); the fleet's series and heatmap mark it as the host's own
    do."""
    host = "capture-host"
    proxy = DroppingProxy(CH.url, drops=1, table="captures")
    p = start_profd(host, url=proxy.url, timeout="1s",
                    extra=("--capture-before", "6s", "--capture-duration", "1s", "--capture-cooldown", "1s"))
    states = {0: "active", 1: "pinned", 2: "unpinned"}
    try:
        p.start(timeout=180)
        drains_stored(p, 1)  # the time before: a few seconds of it
        r = p.profctl("capture", "start", "manual", "--json")
        cid = json.loads(r.stdout)["capture"]["id"]
        # its first state (active, or pinned if it ended before the
        # exporter's next look): the insert lands, its answer is lost, the
        # retry finds it
        wait_for("the capture in ClickHouse", lambda: proxy.dropped >= 1 and any(
            i == cid for i, _ in clickhouse_captures(host)), timeout=180, p=p)
        wait_for("the capture pinned", lambda: local_capture(p, cid)["state"] == "pinned", timeout=60, p=p)
        wait_for("the pinned capture in ClickHouse", lambda: (cid, 1) in clickhouse_captures(host), timeout=180,
                 p=p)
        # the store's writer may hold its transaction longer than the
        # busy timeout (a drain symbolized under a sanitizer and load):
        # profd then refuses the unpin as busy, and it is asked again
        def unpin():
            r = p.profctl("capture", "unpin", str(cid), check=False)
            assert r.returncode == 0 or "busy" in r.stderr, r.stderr
            return r.returncode == 0
        wait_for("the capture unpinned", unpin, timeout=60, p=p)
        wait_for("the unpinned capture in ClickHouse", lambda: (cid, 2) in clickhouse_captures(host), timeout=180,
                 p=p)
        e, _ = export_status(p)
        assert e["errors"]["timeout"] >= 1 and e["captures_already_stored"] >= 1, e
        assert e["exported_captures"] >= 2 and e["captures_backlog"] == 0, e
        # a restart: every state is found in ClickHouse, none sent again
        p.stop()
        p.start(timeout=180)
        caught_up(p)
        e, _ = export_status(p)
        assert e["captures_already_stored"] >= 1 and e["exported_captures"] == 0 and e["captures_backlog"] == 0, e
        local = local_capture(p, cid)
        rows = clickhouse_captures(host)
        assert sorted(rows) in ([(cid, 0), (cid, 1), (cid, 2)], [(cid, 1), (cid, 2)]), rows
        print(f"  states exported: {', '.join(states[st] for _, st in sorted(rows))}")
        for (i, state), got in rows.items():
            assert len(got) == 1, f"capture {i} {states[state]} is in ClickHouse {len(got)} times: {got}"
            r = got[0]
            for k in ("cause", "origin", "uid", "trigger_ns", "from_ns", "to_ns"):
                assert r[k] == local[k], (states[state], k, r[k], local[k])
            assert r["value_centi"] == -1, r  # manual: no value
            if state > 0:  # measured when it ended (0 if its drains were not stored yet), kept when unpinned
                assert r["pinned_bytes"] == local["pinned_bytes"], (r, local)
        # the fleet's series and heatmap mark it as profd's own do
        # (from where the host's timeline begins: a local heatmap needs it)
        t_from, t_to = max(local["trigger_ns"] - 2 * 10**9, timeline_oldest(p)), local["trigger_ns"] + 2 * 10**9
        ls, _ = capture_events_of(p.profctl, "series", t_from, t_to, "--step", "1s")
        fs, fdoc = capture_events_of(fleet_profctl, "series", t_from, t_to, "--step", "1s", "--host", host)
        assert ls and fs == ls, (fs, ls)
        assert ls[0]["id"] == cid and ls[0]["state"] == "unpinned" and ls[0]["cause"] == "manual", ls
        assert all(e.get("host") == host for e in fdoc["events"]), fdoc["events"]
        lh, _ = capture_events_of(p.profctl, "heatmap", t_from, t_to)
        fh, _ = capture_events_of(fleet_profctl, "heatmap", t_from, t_to, "--host", host)
        assert lh == ls and fh == lh, (fh, lh)
        text = fleet_profctl("heatmap", "--from", rfc3339(t_from), "--to", rfc3339(t_to), "--host", host).stdout
        assert f"capture {cid} (manual) at " in text, text
        # a window its pinned range does not reach: no event, locally or from the fleet
        after = (local["to_ns"] + 10**9, local["to_ns"] + 3 * 10**9)
        assert capture_events_of(fleet_profctl, "series", *after, "--host", host)[0] == []
        assert capture_events_of(p.profctl, "series", *after)[0] == []
    finally:
        stop(p)
        proxy.close()


def free_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # closed again: nothing listens there


def check_bad_config(p, kind, words):
    """profd starts, reports kind in status and its log, and profiles on."""
    p.start(timeout=180)
    try:
        wait_for(f"a {kind} error", lambda: export_status(p)[0]["errors"][kind] > 0, p=p)
        e, st = export_status(p)
        assert e["state"] in ("retrying", "sending") and e["error"] == kind, e
        for w in words:
            assert w in e["last_error"], f"'{w}' not in status's error: {e['last_error']}"
        log = p.read_log()
        assert f"ClickHouse export ({kind})" in log and words[0] in log, log[-2000:]
        human = p.profctl("status").stdout
        assert "export:" in human and f"current error {kind}" in human, human
        # profiling goes on locally: a drain stored after the error was seen
        before = st["drains"]
        wait_for("another local drain", lambda: export_status(p)[1]["drains"] > before, p=p)
        assert p.query_json("--since", "1m")["total"] > 0
    finally:
        stop(p)


def test_unreachable_url_is_reported_and_profiling_goes_on():
    check_bad_config(start_profd("unreachable-host", url=free_url()), "connect", ["Couldn't connect"])


def test_wrong_password_is_reported_and_profiling_goes_on():
    p = start_profd("badpw-host", password="not-the-password")
    check_bad_config(p, "auth", ["Wrong password"])


def test_other_schema_version_is_refused_and_profiling_goes_on():
    entry = CH.servers[0]
    entry.query("INSERT INTO profd.schema_version (version) VALUES (99)")
    try:
        p = start_profd("schema-host")
        check_bad_config(p, "schema", ["schema version 99", "exports version 5"])
        assert CH.query("SELECT count() FROM profd.samples WHERE host = 'schema-host'").strip() == "0"
    finally:
        entry.query("TRUNCATE TABLE profd.schema_version")
        entry.query("INSERT INTO profd.schema_version (version) VALUES (4)")


def create_version_4():
    """The cluster as a profd of version 4 made it: this version's schema
    without what version 5 added (the timeline's rate columns), its
    version row 4, and rows of a version-4 host (a drop, a timeline
    sample, a capture)."""
    for name in ("shard.sql", "cluster.sql"):
        for s in CH.servers:
            for stmt in clickhouse.schema_statements(name):
                stmt = re.sub(r",\s*frequency_hz UInt32 DEFAULT 0,\s*base_hz UInt32 DEFAULT 0", "", stmt)
                assert "frequency_hz" not in stmt, stmt
                s.query(stmt.replace("VALUES (5)", "VALUES (4)"))
    sync = {"insert_distributed_sync": 1}
    CH.query("INSERT INTO profd.drops (host, drain_start, drain_end, time, day, reason, value) "
             "VALUES ('v4-host', 1, 2, 0, '2026-12-01', 'map_full', 5)", settings=sync)
    CH.query("INSERT INTO profd.timeline (host, drain_start, drain_end, day, t, time, pid, tid, stack) "
             "VALUES ('v4-host', 1, 2, '2026-12-01', 1500, 0, 7, 7, 42)", settings=sync)
    CH.query("INSERT INTO profd.captures (host, id, state, day, cause) VALUES ('v4-host', 1, 0, '2026-12-01', "
             "'manual')", settings=sync)


def test_init_upgrades_version_4_in_place():
    """profctl init on every server of a version-4 cluster adds the
    timeline's rate columns (local and Distributed tables) and version 5,
    and keeps what was there: the old timeline row reads the base rate; a
    profd then exports (the other tests)."""
    assert CH.query("SELECT max(version) FROM profd.schema_version").strip() == "4"
    for s in CH.servers:
        r = subprocess.run([binary("PROFCTL"), "--clickhouse", s.url, "init", "--cluster", clickhouse.CLUSTER_NAME],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "schema ready" in r.stdout, (r.stdout, r.stderr)
    for s in CH.servers:
        assert s.query("SELECT max(version) FROM profd.schema_version").strip() == "5"
        # (the ALTER's default reads CAST(0, 'UInt32'): the old row below
        # shows its value)
        cols = s.query("SELECT table, name, type, default_kind FROM system.columns WHERE database = 'profd' "
                       "AND table IN ('timeline_local', 'timeline') AND name IN ('frequency_hz', 'base_hz') "
                       "FORMAT TabSeparated")
        assert sorted(cols.splitlines()) == sorted(f"{t}\t{n}\tUInt32\tDEFAULT" for t in ("timeline", "timeline_local")
                                                   for n in ("frequency_hz", "base_hz")), cols
    assert CH.query("SELECT sum(value) FROM profd.drops WHERE host = 'v4-host'").strip() == "5"
    assert CH.query("SELECT t, stack, frequency_hz, base_hz FROM profd.timeline WHERE host = 'v4-host' "
                    "FORMAT TabSeparated").strip() == "1500\t42\t0\t0"
    assert CH.query("SELECT cause FROM profd.captures WHERE host = 'v4-host'").strip() == "manual"


def test_a_capture_raise_is_exported_at_the_base_rate():
    """A capture raises one host's rate tenfold for 4 s: each raised
    drain's cpu rows reach ClickHouse weighted to the base rate (its sum
    the weighted sum rounded), the others as stored, so the fleet's total
    over the window is profd's within a sample per drain; its timeline
    rows carry the raise (version 5), so the fleet's heatmap over it is
    profd's, cell for cell, at the base rate."""
    p = start_profd("raise-host")
    p.args += ["--kinds", "cpu", "--capture-frequency", "499", "--capture-duration", "4s"]
    work = None
    try:
        p.start(timeout=180)
        work = busy(12)
        t_from = drains_stored(p, 2)[1][0] + 1
        p.profctl("capture", "start", "manual")
        st = json.loads(p.profctl("status", "--json").stdout)
        assert st["sampling_hz"] == 499 and st["raised_until_ns"] > 0, st
        wait_for("the raise's end", lambda: json.loads(p.profctl("status", "--json").stdout)["sampling_hz"] == 49,
                 timeout=30, p=p)
        # the writer may be drains behind (the raise's come five a second)
        end = time.time_ns()
        wait_for("a drain after the raise stored", lambda: newest_drain(p)[1] > end, timeout=60, p=p)
        t_to = newest_drain(p)[1]
        caught_up(p)
        db = sqlite3.connect(f"file:{p.store}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT d.end_ns, coalesce(d.frequency_hz, 0), count(s.value), sum(s.value) "
                              "FROM drains d JOIN samples s ON s.drain_id = d.id WHERE d.resolution_ns = 0 "
                              "AND d.id <= ? AND s.kind = 0 GROUP BY d.id", (p.upto[0],)).fetchall()
        finally:
            db.close()
        ch = {}
        for line in CH.query("SELECT drain_end, count(), sum(value) FROM profd.samples WHERE host = 'raise-host' "
                             "AND kind = 0 GROUP BY drain_end FORMAT TabSeparated").splitlines():
            e, n, v = map(int, line.split("\t"))
            ch[e] = (n, v)
        raised = 0
        for e, hz, n, v in rows:
            want = v if hz in (0, 49) else (v * 49 * 2 + hz) // (2 * hz)  # the weighted sum, to the nearest
            assert ch.get(e) == (n, want), f"drain ending {e} at {hz} Hz: {n} rows of {v} stored, ClickHouse {ch.get(e)}, want {want}"
            raised += hz == 499
        assert raised >= 10, f"only {raised} raised drains of {len(rows)}"
        _, lt = local_stacks(p, "cpu", t_from, t_to)
        _, rt = clickhouse_stacks("raise-host", "cpu", t_from, t_to)
        n_drains = sum(1 for e, *_ in rows if t_from <= e)
        print(f"  {raised} drains at 499 Hz; window total: profd {lt}, ClickHouse {rt} ({n_drains} drains)")
        assert abs(lt - rt) <= n_drains, (lt, rt)
        # the timeline rows of a raised drain carry its rate and base, the
        # others none
        t_heat = time.monotonic()
        got = CH.query("SELECT frequency_hz, base_hz, uniqExact(drain_end) FROM profd.timeline WHERE "
                       "host = 'raise-host' GROUP BY frequency_hz, base_hz ORDER BY frequency_hz FORMAT TabSeparated")
        rates = {tuple(map(int, l.split("\t")[:2])): int(l.split("\t")[2]) for l in got.splitlines()}
        assert set(rates) == {(0, 0), (499, 49)} and rates[(499, 49)] >= 10, rates
        # the fleet's heatmap over the raise is profd's (cells, totals at
        # the base rate, what was taken, the base): from the timeline's
        # first sample to a second before the last drain exported (a
        # sample taken just before a drain's end may be read by the next)
        h_from, h_to = max(t_from, timeline_oldest(p)), p.upto[1] - 10**9
        lh = heatmap_json(p.profctl, h_from, h_to)
        fh = heatmap_json(fleet_profctl, h_from, h_to, "--host", "raise-host")
        assert lh["raised_samples"] > 0 and lh["samples_taken"] > lh["total"] and lh["base_hz"] == 49, \
            {k: lh.get(k) for k in ("total", "samples_taken", "raised_samples", "base_hz")}
        for k in ("total", "samples_taken", "raised_samples", "base_hz", "start_ns", "columns", "cells", "omitted"):
            assert fh.get(k) == lh.get(k), f"the fleet heatmap's {k} is {fh.get(k)!r:.200}, profd's {lh.get(k)!r:.200}"
        print(f"  heatmap over the raise: {lh['total']} samples at 49 Hz of {lh['samples_taken']} taken "
              f"({lh['raised_samples']} raised), fleet the same ({time.monotonic() - t_heat:.1f} s)")
        e, _ = export_status(p)
        assert e["errors"] == {k: 0 for k in e["errors"]}, e["errors"]
    finally:
        if work:
            work.wait()
        cleanup_all([p])


def main():
    global CH
    require_root()
    clickhouse.require_server()
    with clickhouse.Cluster() as CH:
        create_version_4()
        test_init_upgrades_version_4_in_place()  # whatever tests are named: the others need version 5
        run_tests([t for t in [
            test_capture_arrives_once_per_state_and_the_fleet_marks_it,
            test_three_hosts_export_exactly_what_they_stored,
            test_a_capture_raise_is_exported_at_the_base_rate,
            test_shard_killed_mid_export_loses_and_doubles_nothing,
            test_read_only_user_keeps_a_backlog_then_catches_up,
            test_insert_stored_but_answer_lost_is_not_sent_twice,
            test_drops_stored_but_answer_lost_are_not_sent_twice,
            test_unreachable_url_is_reported_and_profiling_goes_on,
            test_wrong_password_is_reported_and_profiling_goes_on,
            test_other_schema_version_is_refused_and_profiling_goes_on,
        ] if len(sys.argv) < 2 or t.__name__ in sys.argv[1:]])  # names given: only those


if __name__ == "__main__":
    main()
