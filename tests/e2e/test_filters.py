#!/usr/bin/env python3
"""End to end, the query filters on known content: tests/tools/storegen
writes a store through profd's own store code, a serve-only profd (--kinds
none: no BPF) answers on it, and the real profctl (or, for what profctl does
not ask, a raw request on the socket) must return exactly the folded lines
and totals the content implies: each filter (pid, tid, comm exact and glob,
exe, uid, cgroup subtree and glob, unit, container prefix, kind and state),
each window (since/until, from/to as durations and as RFC 3339 with offsets
and fractions, last), the per-process and per-unit groups, time series
points, the extra frame fields, access control, and the errors of bad
values."""
import json
import os
import sys

from harness import SKIP, exchange, run_tests, serve_only

NGINX = "/usr/sbin/nginx"
ID_A = "4f5a1c2b3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd"   # docker
ID_B = "9e8d7c6b5a4938271605f4e3d2c1b0a99887766554433221100ffeeddccbbaa0"   # kubepods


def frames(module, *names, kernel=()):
    return [{"name": n, "module": module} for n in names] + \
           [{"name": n, "module": "[kernel.kallsyms]", "kernel": True} for n in kernel]


def proc(pid, comm, exe, uid, cgroup):
    return {"pid": pid, "comm": comm, "exe": exe, "uid": uid, "cgroup": cgroup}


P_NGINX = proc(100, "nginx", NGINX, 33, "/system.slice/nginx.service")
P_WORKER = proc(110, "nginx-w", NGINX, 33, "/system.slice/nginx.service/worker")
P_PG = proc(200, "postgres", "/usr/lib/postgresql/15/bin/postgres", 105, "/system.slice/postgresql@15-main.service")
P_BASH = proc(300, "bash", "/usr/bin/bash", 1000, "/user.slice/user-1000.slice/session-3.scope")
P_REDIS = proc(400, "redis-server", "/usr/bin/redis-server", 999, f"/system.slice/docker-{ID_A}.scope")
P_JAVA = proc(500, "java", "/usr/lib/jvm/bin/java", 1001, f"/kubepods/burstable/pod1234/{ID_B}")
# a sibling whose path starts like nginx's: a subtree filter must not take it
P_SIBLING = proc(600, "app", "/opt/app", 1000, "/system.slice/nginx.service-extra.service")


def sample(p, ago, value, stack, **kw):
    d = dict(p, ago_s=ago, value=value, stack=stack)
    d.update(kw)
    return d


# Three drains of 10 s: 30 s ago (the last), 300 s ago and 1000 s ago.
CONTENT = [
    sample(P_NGINX, 30, 40, frames(NGINX, "main", "ngx_worker", kernel=["__x64_sys_epoll_wait"])),
    sample(P_NGINX, 30, 25, frames(NGINX, "main", "ngx_http_handler"), tid=101),
    sample(P_NGINX, 300, 10, frames(NGINX, "main", "ngx_http_handler")),
    sample(P_WORKER, 30, 8, frames(NGINX, "main", "ngx_gzip")),
    sample(P_PG, 30, 30, frames(P_PG["exe"], "PostgresMain", "exec_simple_query")),
    sample(P_PG, 1000, 12, frames(P_PG["exe"], "PostgresMain", "exec_simple_query")),
    sample(P_PG, 30, 5000000, frames(P_PG["exe"], "PostgresMain", "pg_fsync", kernel=["io_schedule"]),
           kind="offcpu", state="D"),
    sample(P_PG, 30, 2000000, frames(P_PG["exe"], "PostgresMain", "WaitLatch", kernel=["schedule"]),
           kind="offcpu", state="S"),
    sample(P_BASH, 300, 3, frames("/usr/bin/bash", "main", "readline")),
    sample(P_REDIS, 30, 17, frames("/usr/bin/redis-server", "main", "processCommand")),
    sample(P_JAVA, 30, 9, [{"name": "Interpreter", "module": "[jit]", "jit": True}]),
    sample(P_SIBLING, 30, 5, frames("/opt/app", "main", "app_run")),
]

L_EPOLL = "main;ngx_worker;__x64_sys_epoll_wait_[k] 40"
L_HANDLER_ALL = "main;ngx_http_handler 35"       # tid 101 (25, last drain) + tid 100 (10, 300 s ago)
L_GZIP = "main;ngx_gzip 8"
L_PG_ALL = "PostgresMain;exec_simple_query 42"   # 30 + 12
L_BASH = "main;readline 3"
L_REDIS = "main;processCommand 17"
L_JAVA = "Interpreter 9"
L_APP = "main;app_run 5"
ALL_CPU = [L_EPOLL, L_HANDLER_ALL, L_GZIP, L_PG_ALL, L_BASH, L_REDIS, L_JAVA, L_APP]

D = None   # the serve-only profd on CONTENT


def folded(daemon, *args):
    out = daemon.profctl("query", "--folded", *args).stdout
    return sorted(out.splitlines())


def check_folded(args, want):
    got = folded(D, *args)
    assert got == sorted(want), f"profctl query --folded {' '.join(args)}:\n got  {got}\n want {sorted(want)}"


def raw(daemon, *requests):
    return exchange(daemon.socket, [json.dumps(r).encode() for r in requests])


def answer(daemon, request):
    """The lines of one raw request's answer: (stack or point lines, end line)."""
    lines = raw(daemon, request)
    assert lines and lines[-1]["type"] in ("end", "error"), lines
    assert lines[-1]["type"] == "end", f"{request}: {lines[-1]}"
    return lines[:-1], lines[-1]


def test_serve_only_answers_exact_folded_lines_without_a_filter():
    check_folded(["--since", "1h"], ALL_CPU)
    end = answer(D, {"op": "query", "since": "1h"})[1]
    assert end["total"] == 40 + 35 + 8 + 42 + 3 + 17 + 9 + 5 and end["stacks"] == 8, end


def test_serve_only_status_says_nothing_is_collected_and_flush_is_refused():
    st = json.loads(D.profctl("status", "--json").stdout)
    assert st["kinds"] == [] and st["event"] is None and st["drains"] == 3, st
    r = D.profctl("flush", check=False)
    assert r.returncode == 1 and "serve-only" in r.stderr, (r.returncode, r.stderr)


def test_pid_and_tid():
    check_folded(["--since", "1h", "--pid", "100"], [L_EPOLL, L_HANDLER_ALL])
    check_folded(["--since", "1h", "--tid", "101"], ["main;ngx_http_handler 25"])
    check_folded(["--since", "1h", "--tid", "100"], [L_EPOLL, "main;ngx_http_handler 10"])


def test_comm_exact_and_glob():
    check_folded(["--since", "1h", "--comm", "nginx"], [L_EPOLL, L_HANDLER_ALL])
    check_folded(["--since", "1h", "--comm", "nginx*"], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--comm", "[pb]*"], [L_PG_ALL, L_BASH])
    check_folded(["--since", "1h", "--comm", "?ava"], [L_JAVA])
    # GLOB is case-sensitive, and an exact name is not a prefix
    check_folded(["--since", "1h", "--comm", "NGINX*"], [])
    check_folded(["--since", "1h", "--comm", "ngin"], [])


def test_exe_exact_and_glob():
    check_folded(["--since", "1h", "--exe", NGINX], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--exe", "*/redis-*"], [L_REDIS])
    check_folded(["--since", "1h", "--exe", "/usr/lib/*"], [L_PG_ALL, L_JAVA])


def test_uid():
    check_folded(["--since", "1h", "--uid", "33"], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--uid", "1000"], [L_BASH, L_APP])
    check_folded(["--since", "1h", "--uid", "0"], [])


def test_cgroup_subtree_and_glob():
    # the cgroup and below it, not a sibling sharing its prefix
    check_folded(["--since", "1h", "--cgroup", "/system.slice/nginx.service"], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--cgroup", "/system.slice/nginx.service/"], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--cgroup", "/system.slice/nginx.service/worker"], [L_GZIP])
    check_folded(["--since", "1h", "--cgroup", "/system.slice"],
                 [L_EPOLL, L_HANDLER_ALL, L_GZIP, L_PG_ALL, L_REDIS, L_APP])
    check_folded(["--since", "1h", "--cgroup", "/"], ALL_CPU)
    check_folded(["--since", "1h", "--cgroup", "/system.sl"], [])
    # a glob matches cgroups and their subtrees
    check_folded(["--since", "1h", "--cgroup", "/system.slice/*.service"],
                 [L_EPOLL, L_HANDLER_ALL, L_GZIP, L_PG_ALL, L_APP])
    check_folded(["--since", "1h", "--cgroup", "/kubepods/*"], [L_JAVA])


def test_unit():
    check_folded(["--since", "1h", "--unit", "nginx.service"], [L_EPOLL, L_HANDLER_ALL, L_GZIP])
    check_folded(["--since", "1h", "--unit", "session-3.scope"], [L_BASH])
    check_folded(["--since", "1h", "--unit", "postgresql@*.service"], [L_PG_ALL])
    check_folded(["--since", "1h", "--unit", "*.scope"], [L_BASH, L_REDIS])
    stacks, end = answer(D, {"op": "query", "since": "1h", "unit": "postgresql@*"})
    assert end["total"] == 42 and end["stacks"] == 1, end
    check_folded(["--since", "1h", "--unit", f"docker-{ID_A}.scope"], [L_REDIS])
    check_folded(["--since", "1h", "--unit", "nginx.service-extra.service"], [L_APP])


def test_container_prefix():
    check_folded(["--since", "1h", "--container", ID_A[:12]], [L_REDIS])
    check_folded(["--since", "1h", "--container", ID_A], [L_REDIS])
    check_folded(["--since", "1h", "--container", ID_B[:4].upper()], [L_JAVA])
    check_folded(["--since", "1h", "--container", "abcd"], [])


def test_kind_and_state():
    # off-CPU folded weights are microseconds
    check_folded(["--since", "1h", "--kind", "offcpu"],
                 ["PostgresMain;pg_fsync;io_schedule_[k] 5000", "PostgresMain;WaitLatch;schedule_[k] 2000"])
    check_folded(["--since", "1h", "--kind", "offcpu", "--state", "D"], ["PostgresMain;pg_fsync;io_schedule_[k] 5000"])
    end = answer(D, {"op": "query", "kind": "offcpu", "since": "1h", "comm": "post*"})[1]
    assert end["total"] == 7000000 and end["unit"] == "ns", end
    check_folded(["--since", "1h", "--kind", "wakeup"], [])


def test_filters_combine():
    check_folded(["--since", "1h", "--unit", "nginx.service", "--comm", "nginx-*"], [L_GZIP])
    check_folded(["--since", "1h", "--uid", "1000", "--cgroup", "/system.slice"], [L_APP])
    check_folded(["--since", "1h", "--pid", "100", "--tid", "101"], ["main;ngx_http_handler 25"])
    check_folded(["--since", "1h", "--pid", "100", "--uid", "1000"], [])


LAST_DRAIN = [L_EPOLL, "main;ngx_http_handler 25", L_GZIP, "PostgresMain;exec_simple_query 30", L_REDIS, L_JAVA,
              L_APP]
MIDDLE_DRAIN = ["main;ngx_http_handler 10", L_BASH]


def test_windows_since_until_and_relative_from_to():
    check_folded(["--since", "2m"], LAST_DRAIN)
    check_folded(["--since", "10m", "--until", "2m"], MIDDLE_DRAIN)
    check_folded(["--from", "10m", "--to", "2m"], MIDDLE_DRAIN)
    check_folded(["--from", "10m", "--until", "2m"], MIDDLE_DRAIN)
    check_folded(["--since", "2h", "--until", "10m"], ["PostgresMain;exec_simple_query 12"])
    check_folded(["--since", "20m", "--until", "2m"], MIDDLE_DRAIN + ["PostgresMain;exec_simple_query 12"])


def test_last_is_the_most_recent_drain_with_filters():
    check_folded(["--last"], LAST_DRAIN)
    check_folded(["--last", "--comm", "nginx"], [L_EPOLL, "main;ngx_http_handler 25"])
    _, end = answer(D, {"op": "query", "last": True})
    assert end["to_ns"] - end["from_ns"] == 10 * 10**9, end


def test_group_process_and_unit():
    check_folded(["--since", "1h", "--root", "process", "--comm", "nginx*"],
                 ["nginx-100;" + L_EPOLL, "nginx-100;" + L_HANDLER_ALL, "nginx-w-110;" + L_GZIP])
    check_folded(["--since", "1h", "--root", "unit", "--uid", "1000"],
                 ["session-3.scope;" + L_BASH, "nginx.service-extra.service;" + L_APP])
    check_folded(["--since", "1h", "--root", "unit", "--comm", "java"], ["-;" + L_JAVA])
    # on the wire: stacks of one root merged, each line naming its group
    stacks, end = answer(D, {"op": "query", "since": "1h", "group": "unit", "cgroup": "/system.slice/nginx.service"})
    got = sorted((s["group"], ";".join(f["name"] for f in s["frames"]), s["value"]) for s in stacks)
    assert got == [("nginx.service", "main;ngx_gzip", 8), ("nginx.service", "main;ngx_http_handler", 35),
                   ("nginx.service", "main;ngx_worker;__x64_sys_epoll_wait", 40)], got
    assert end["total"] == 83 and end["stacks"] == 3, end


def test_frames_carry_address_build_id_and_jit():
    stacks, _ = answer(D, {"op": "query", "since": "1h", "pid": 500})
    assert len(stacks) == 1, stacks
    f = stacks[0]["frames"][0]
    # the writer's per-process tag of JIT code is not a build-id
    assert f["jit"] is True and "build_id" not in f and isinstance(f["address"], int), f
    stacks, _ = answer(D2, {"op": "query", "since": "1h", "pid": 700})
    by_name = {f["name"]: f for s in stacks for f in s["frames"]}
    assert by_name["main"]["address"] == 4096 and by_name["main"]["build_id"] == "ab12cd34", by_name["main"]
    assert by_name["work"]["address"] == 8192 and by_name["work"]["file"] == "w.c" and by_name["work"]["line"] == 7
    assert by_name["helper"]["address"] == 8192 and by_name["helper"]["inlined"] is True
    # JSON integers are int64 to most parsers: an address above 2^63 comes
    # as the same 64 bits, negative
    assert by_name["do_read"]["kernel"] is True and by_name["do_read"]["address"] % 2**64 == 0xffffffff81000000
    assert by_name["app+0x3000"]["resolved"] is False and by_name["app+0x3000"]["address"] == 0x3000
    assert "jit" not in by_name["main"], by_name["main"]


def test_unprivileged_caller_sees_own_uid_only_and_no_kernel_addresses():
    # uid 1000 owns bash and app; grouping must not name anyone else's units
    lines = as_uid(1000, D2.socket, {"op": "query", "since": "1h", "group": "unit"})
    assert lines[-1]["type"] == "end", lines
    groups = sorted(s["group"] for s in lines[:-1])
    assert groups == ["user.service"], groups
    frames_ = lines[0]["frames"]
    kernel = [f for f in frames_ if f["kernel"]]
    assert [f["name"] for f in kernel] == ["[kernel]"] and "address" not in kernel[0], frames_
    assert lines[-1]["total"] == 4, lines[-1]
    # asking for another uid gives nothing, not someone else's data
    lines = as_uid(1000, D2.socket, {"op": "query", "since": "1h", "uid": 0})
    assert lines == [lines[-1]] and lines[-1]["total"] == 0, lines
    lines = as_uid(1000, D2.socket, {"op": "series", "since": "1h", "group": "unit"})
    assert lines[-1]["type"] == "error" and "'group'" in lines[-1]["error"], lines
    lines = as_uid(1000, D2.socket, {"op": "series", "since": "1h"})
    assert sum(p["value"] for p in lines[:-1]) == 4 and lines[-1]["total"] == 4, lines


def as_uid(uid, path, request):
    """Sends one request from a process running as uid; returns the lines."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rd)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out = json.dumps(exchange(path, [json.dumps(request).encode()]))
            os.write(wr, out.encode())
            os._exit(0)
        except BaseException as e:  # report in the parent
            os.write(wr, json.dumps([{"type": "child-error", "error": repr(e)}]).encode())
            os._exit(1)
    os.close(wr)
    data = b""
    while chunk := os.read(rd, 65536):
        data += chunk
    os.close(rd)
    os.waitpid(pid, 0)
    return json.loads(data)


# Absolute times: a store whose "now" is 2026-01-01T00:00:00Z, drains of 10 s
# ending then, a minute and two minutes before.
NOW = "2026-01-01T00:00:00Z"
TIMED = [
    sample(P_NGINX, 0, 7, frames(NGINX, "main", "at_midnight")),
    sample(P_NGINX, 60, 100, frames(NGINX, "main", "a_minute_before")),
    sample(P_NGINX, 120, 3, frames(NGINX, "main", "two_minutes_before")),
]
D3 = None


def check_folded3(args, want):
    got = folded(D3, *args)
    assert got == sorted(want), f"profctl query --folded {' '.join(args)}:\n got  {got}\n want {sorted(want)}"


def test_from_to_rfc3339_with_offsets_and_fractions():
    # [23:58:30, 23:59:30] overlaps only the drain [23:58:50, 23:59:00]
    check_folded3(["--from", "2025-12-31T23:58:30Z", "--to", "2025-12-31T23:59:30Z"], ["main;a_minute_before 100"])
    check_folded3(["--from", "2026-01-01T00:58:30+01:00", "--to", "2025-12-31T18:59:30-05:00"],
                  ["main;a_minute_before 100"])
    # windows are inclusive to the nanosecond: the last drain starts at 23:59:50
    check_folded3(["--from", "2025-12-31T23:59:00.000000001Z", "--to", "2025-12-31T23:59:49.999999999Z"], [])
    check_folded3(["--from", "2025-12-31T23:59:00Z", "--to", "2025-12-31T23:59:50Z"],
                  ["main;a_minute_before 100", "main;at_midnight 7"])
    check_folded3(["--from", "2025-12-31T23:50:00Z", "--to", "2026-01-01T00:00:00Z"],
                  ["main;a_minute_before 100", "main;at_midnight 7", "main;two_minutes_before 3"])
    # an absolute start with a relative end, and the end line's window
    _, end = answer(D3, {"op": "query", "from": "2025-12-31T23:58:30.5+00:00", "to": "0s"})
    assert end["from_ns"] == 1767225510500000000 and end["total"] == 107, end


def test_series_points_per_step():
    # default step: the drain interval (10 s), one point per drain
    points, end = answer(D3, {"op": "series", "from": "2025-12-31T23:50:00Z", "to": "2026-01-01T00:00:00Z"})
    assert [(p["t_ns"], p["value"]) for p in points] == [
        (1767225470 * 10**9, 3), (1767225530 * 10**9, 100), (1767225590 * 10**9, 7)], points
    assert end["step_ns"] == 10**10 and end["points"] == 3 and end["total"] == 110, end
    # 5 s steps halve each drain; 3 s steps straddle: 7 over [..90, 00:00:00)
    # is 1 s in [..88, ..91) and 3 s in each of the next three buckets:
    # 0.7, 2.1, 2.1, 2.1 rounded by largest remainder to 1, 2, 2, 2
    points, end = answer(D3, {"op": "series", "from": "2025-12-31T23:59:00Z", "to": "2026-01-01T00:00:00Z",
                              "step": "5s"})
    assert [(p["t_ns"] // 10**9 - 1767225500, p["value"]) for p in points] == [
        (30, 50), (35, 50), (90, 4), (95, 3)], points
    points, end = answer(D3, {"op": "series", "from": "2025-12-31T23:59:40Z", "to": "2026-01-01T00:00:00Z",
                              "step": "3s"})
    assert [(p["t_ns"] // 10**9 - 1767225500, p["value"]) for p in points] == [
        (88, 1), (91, 2), (94, 2), (97, 2)], points
    assert end["total"] == 7 and end["points"] == 4, end
    # the same through profctl
    doc = json.loads(D3.profctl("series", "--from", "2025-12-31T23:59:40Z", "--to", "2026-01-01T00:00:00Z",
                                "--step", "3s", "--json").stdout)
    assert [(p["t_ns"] // 10**9 - 1767225500, p["value"]) for p in doc["points"]] == [
        (88, 1), (91, 2), (94, 2), (97, 2)], doc
    assert doc["total"] == 7 and doc["step_ns"] == 3 * 10**9, doc
    doc = json.loads(D3.profctl("series", "--comm", "nginx", "--from", "2025-12-31T23:50:00Z", "--to",
                                "2026-01-01T00:00:00Z", "--json").stdout)
    assert sum(p["value"] for p in doc["points"]) == 110 and doc["step_ns"] == 10**10, doc
    points, end = answer(D3, {"op": "series", "last": True, "step": "1m"})
    assert [(p["t_ns"] // 10**9 - 1767225500, p["value"]) for p in points] == [(40, 7)], points


def test_bad_filter_values_are_refused_naming_the_field():
    cases = [
        ({"op": "query", "tid": 0}, "'tid'"),
        ({"op": "query", "uid": -1}, "'uid'"),
        ({"op": "query", "uid": "root"}, "'uid'"),
        ({"op": "query", "exe": "nginx"}, "'exe'"),
        ({"op": "query", "cgroup": "system.slice"}, "'cgroup'"),
        ({"op": "query", "unit": "nginx"}, "'unit'"),
        ({"op": "query", "container": "xyz123"}, "'container'"),
        ({"op": "query", "container": "abc"}, "'container'"),
        ({"op": "query", "from": "2026-13-01T00:00:00Z"}, "'from'"),
        ({"op": "query", "to": "yesterday"}, "'to'"),
        ({"op": "query", "since": "10m", "from": "5m"}, "'since' and 'from'"),
        ({"op": "query", "last": True, "since": "10m"}, "'last'"),
        ({"op": "query", "group": "task"}, "'group'"),
        ({"op": "query", "from": "2099-01-01T00:00:00Z"}, "future"),
        ({"op": "query", "from": "2026-01-01T00:00:00Z", "to": "2025-01-01T00:00:00Z"}, "empty window"),
        ({"op": "series", "step": "0s"}, "'step'"),
        ({"op": "series", "since": "1h", "step": "1ms"}, "'step'"),
        ({"op": "series", "raw_names": True}, "'raw_names'"),
        ({"op": "query", "step": "1s"}, "'step'"),
    ]
    replies = raw(D3, *[c for c, _ in cases])
    assert len(replies) == len(cases), replies
    for (req, want), rep in zip(cases, replies):
        assert rep["type"] == "error" and want in rep["error"], f"{req}: {rep}"


D2 = None   # frame details and access control
DETAILS = [
    sample(proc(700, "reader", "/usr/bin/reader", 0, "/system.slice/reader.service"), 30, 11,
           [{"name": "main", "module": "/usr/bin/reader", "build_id": "ab12cd34", "address": 4096},
            {"name": "work", "module": "/usr/bin/reader", "build_id": "ab12cd34", "address": 8192,
             "file": "w.c", "line": 7},
            {"name": "helper", "module": "/usr/bin/reader", "file": "h.h", "line": 2, "inlined": True},
            {"name": "unused", "module": "/usr/bin/app", "address": 0x3000, "resolved": False},
            {"name": "do_read", "module": "[kernel.kallsyms]", "kernel": True, "address": "0xffffffff81000000"}]),
    sample(proc(800, "mine", "/usr/bin/mine", 1000, "/user.slice/user-1000.slice/user@1000.service/app.slice"
                "/user.service"), 30, 4,
           [{"name": "main", "module": "/usr/bin/mine"},
            {"name": "vfs_read", "module": "[kernel.kallsyms]", "kernel": True},
            {"name": "ext4_read", "module": "[kernel.kallsyms]", "kernel": True}]),
]


if __name__ == "__main__":
    if os.geteuid() != 0:
        # the socket is handed to root's group, and the access test changes uid
        print("SKIP: needs root; this test did NOT run", file=sys.stderr)
        sys.exit(SKIP)
    config = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"profd-filters-{os.getpid()}.conf")
    with open(config, "w") as f:
        f.write("socket_mode = 0666\n")
    try:
        with serve_only(CONTENT) as D, serve_only(DETAILS, config=config) as D2, serve_only(TIMED, now=NOW) as D3:
            os.chmod(D2.dir, 0o755)
            run_tests([
                test_serve_only_answers_exact_folded_lines_without_a_filter,
                test_serve_only_status_says_nothing_is_collected_and_flush_is_refused,
                test_pid_and_tid,
                test_comm_exact_and_glob,
                test_exe_exact_and_glob,
                test_uid,
                test_cgroup_subtree_and_glob,
                test_unit,
                test_container_prefix,
                test_kind_and_state,
                test_filters_combine,
                test_windows_since_until_and_relative_from_to,
                test_last_is_the_most_recent_drain_with_filters,
                test_group_process_and_unit,
                test_frames_carry_address_build_id_and_jit,
                test_unprivileged_caller_sees_own_uid_only_and_no_kernel_addresses,
                test_from_to_rfc3339_with_offsets_and_fractions,
                test_series_points_per_step,
                test_bad_filter_values_are_refused_naming_the_field,
            ])
    finally:
        os.unlink(config)
