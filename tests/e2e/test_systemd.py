#!/usr/bin/env python3
"""End to end, profd as a systemd service: the sd_notify protocol spoken to a
real notify socket (READY=1 only once the programs are attached, the store
open and the socket listening; STATUS= lines with live rates; WATCHDOG=1 at
the pace WATCHDOG_USEC asks; STOPPING=1 on SIGTERM), socket activation by
systemd-socket-activate with a query through the passed socket by the real
profctl, and the installed units checked by systemd-analyze."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

from harness import Profd, binary, require_root, run_tests

FREQUENCY = 99


class NotifySocket:
    """A notify socket as systemd's: AF_UNIX datagrams, each with the
    sender's credentials (SO_PASSCRED), recorded with their arrival time."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.messages = []   # (monotonic time, sender pid, {key: value})
        self.lock = threading.Condition()
        self.on_ready = None  # called in the reader thread as READY=1 arrives
        self.closed = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        ucred = struct.calcsize("3i")
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(ucred))
            except OSError:
                return
            now = time.monotonic()
            pid = None
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", cdata[:ucred])[0]
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            if "READY" in fields and self.on_ready:
                self.on_ready(pid)
            with self.lock:
                self.messages.append((now, pid, fields))
                self.lock.notify_all()

    def wait_for(self, key, timeout, count=1):
        """Waits until count messages carry key; returns them."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                found = [m for m in self.messages if key in m[2]]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{count} notify message(s) with {key} did not arrive in {timeout}s; "
                                         f"got {[m[2] for m in self.messages]}")
                self.lock.wait(left)

    def with_key(self, key):
        with self.lock:
            return [m for m in self.messages if key in m[2]]

    def close(self):
        self.sock.close()


class NotifiedProfd(Profd):
    """profd started with NOTIFY_SOCKET (and the watchdog variables) as
    systemd starts a Type=notify service. WATCHDOG_PID is profd's own pid:
    a shell sets it to $$ and execs profd, as systemd sets it to the pid it
    forks."""

    def __init__(self, *args, watchdog_usec=None, watchdog_pid="self", **kw):
        super().__init__(*args, **kw)
        self.notify = NotifySocket(self.dir)
        self.watchdog_usec = watchdog_usec
        self.watchdog_pid = watchdog_pid

    def start(self, timeout=30):
        env = dict(os.environ, NOTIFY_SOCKET=self.notify.path)
        env.pop("WATCHDOG_USEC", None)
        env.pop("WATCHDOG_PID", None)
        script = 'exec "$@"'
        if self.watchdog_usec is not None:
            env["WATCHDOG_USEC"] = str(self.watchdog_usec)
            if self.watchdog_pid == "self":
                script = 'export WATCHDOG_PID=$$; exec "$@"'
            else:
                env["WATCHDOG_PID"] = str(self.watchdog_pid)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            ["sh", "-c", script, "sh", binary("PROFD"),
             "--config", self.config, "--socket", self.socket, "--store", self.store] + self.args,
            stdout=self.log, stderr=self.log, env=env)
        return self

    def cleanup(self):
        try:
            super().cleanup()
        finally:
            self.notify.close()


def fd_kinds(pid):
    """How many fds of each kind a process holds: 'anon_inode:bpf_link' etc."""
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        target = re.sub(r":?\[\d+\]$", "", target)
        kinds[target] = kinds.get(target, 0) + 1
    return kinds


def socket_listens(path):
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(path)
        return True
    except OSError:
        return False


def busy(seconds):
    """A CPU-bound child, so there is something to sample."""
    return subprocess.Popen([binary("CPU_SPLIT"), str(seconds)], stdout=subprocess.DEVNULL)


def test_ready_after_attach_then_status_watchdog_and_stopping():
    """READY=1 comes from profd's pid once it is really ready: frozen
    (SIGSTOP) the moment READY=1 arrives, it already holds its BPF links
    (as many as it ever will), its store exists and its socket accepts
    connections. Then STATUS= lines give rates each drain, WATCHDOG=1
    arrives at least every WATCHDOG_USEC, and SIGTERM brings STOPPING=1."""
    watchdog_usec = 2_000_000
    d = NotifiedProfd("--frequency", str(FREQUENCY), "--interval", "1s", "--kinds", "cpu,offcpu",
                      watchdog_usec=watchdog_usec)
    at_ready = {}

    def freeze(pid):
        # runs in the reader thread the moment the datagram is read
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            at_ready["pid"] = pid
            at_ready["fds"] = fd_kinds(d.proc.pid)
            at_ready["store"] = os.path.exists(d.store)
            at_ready["listening"] = socket_listens(d.socket)
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)

    d.notify.on_ready = freeze
    try:
        d.start()
        started = time.monotonic()
        d.notify.wait_for("READY", timeout=60)
        print(f"  READY=1 after {time.monotonic() - started:.2f}s; at that moment: "
              f"{at_ready['fds'].get('anon_inode:bpf_link', 0)} BPF links, store {at_ready['store']}, "
              f"socket listening {at_ready['listening']}")
        assert at_ready["pid"] == d.proc.pid, f"READY=1 sent by pid {at_ready['pid']}, profd is {d.proc.pid}"
        assert at_ready["fds"].get("anon_inode:bpf_link", 0) > 0, f"no BPF link at READY=1: {at_ready['fds']}"
        assert at_ready["store"], "the store did not exist yet at READY=1"
        assert at_ready["listening"], "the socket did not accept connections at READY=1"
        ready_status = d.notify.with_key("READY")[0][2].get("STATUS", "")
        assert f"sampling {FREQUENCY} Hz" in ready_status, f"STATUS with READY=1: {ready_status!r}"

        w = busy(4)
        # drains every second: each stored drain updates STATUS= with rates
        rates = []
        deadline = time.monotonic() + 30
        while len(rates) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
            rates = [m[2]["STATUS"] for m in d.notify.with_key("STATUS") if "samples/s" in m[2]["STATUS"]]
        w.wait(60)
        assert len(rates) >= 3, f"fewer than 3 STATUS= lines with rates: {rates}"
        print("  " + rates[-1])
        ncpus = os.cpu_count()
        values = [int(re.search(r"(\d+) samples/s", r).group(1)) for r in rates]
        # the workload keeps one CPU busy: about FREQUENCY samples/s of it
        # alone; never more than every CPU sampled (plus timing slack)
        assert max(values) >= FREQUENCY // 4, f"samples/s too low while a CPU was busy: {values}"
        assert max(values) <= FREQUENCY * ncpus * 1.5, f"samples/s above {FREQUENCY} Hz x {ncpus} CPUs: {values}"
        assert all(re.search(r"\d+ stacks/s stored; last drain \d\d:\d\d:\d\d", r) for r in rates), rates

        # the watchdog: pinged by profd, never more than WATCHDOG_USEC apart
        pings = [m for m in d.notify.with_key("WATCHDOG") if m[2]["WATCHDOG"] == "1"]
        ready_t = d.notify.with_key("READY")[0][0]
        times = [ready_t] + [m[0] for m in pings if m[0] >= ready_t]
        gaps = [b - a for a, b in zip(times, times[1:])]
        span = time.monotonic() - ready_t
        assert pings, f"no WATCHDOG=1 in {span:.1f}s with WATCHDOG_USEC={watchdog_usec}"
        print(f"  {len(pings)} WATCHDOG=1 in {span:.1f}s, gaps {min(gaps):.2f}-{max(gaps):.2f}s "
              f"(WATCHDOG_USEC {watchdog_usec / 1e6:.1f}s)")
        assert {m[1] for m in pings} == {d.proc.pid}, "WATCHDOG=1 from another pid"
        assert len(times) - 1 >= span / (watchdog_usec / 1e6), f"too few pings: {len(pings)} in {span:.1f}s"
        assert max(gaps) < watchdog_usec / 1e6, f"a gap of {max(gaps):.2f}s between pings"

        links = fd_kinds(d.proc.pid).get("anon_inode:bpf_link", 0)
        assert links == at_ready["fds"]["anon_inode:bpf_link"], \
            f"{at_ready['fds']['anon_inode:bpf_link']} BPF links at READY=1, {links} later: attached after READY"

        assert not d.notify.with_key("STOPPING"), "STOPPING=1 before any signal"
        rc = d.stop()
        assert rc == 0, f"profd exited {rc} on SIGTERM"
        stopping = d.notify.wait_for("STOPPING", timeout=5)
        assert stopping[0][1] == d.proc.pid
    except BaseException:
        print("--- profd log ---\n" + d.read_log(), file=sys.stderr)
        raise
    finally:
        d.cleanup()


def test_watchdog_only_for_its_pid_and_no_ready_on_failure():
    """WATCHDOG_USEC meant for another process (WATCHDOG_PID) is not
    obeyed: READY=1 but no WATCHDOG=1. And a profd that cannot start (its
    store path is a directory) never says READY=1."""
    d = NotifiedProfd("--kinds", "cpu", "--interval", "1s", watchdog_usec=400_000, watchdog_pid=os.getpid())
    try:
        d.start()
        d.notify.wait_for("READY", timeout=60)
        time.sleep(1.5)
        assert not d.notify.with_key("WATCHDOG"), "WATCHDOG=1 though WATCHDOG_PID names another process"
        assert d.stop() == 0
    finally:
        d.cleanup()

    bad = NotifiedProfd("--kinds", "cpu", watchdog_usec=400_000)
    try:
        os.mkdir(bad.store)
        bad.start()
        rc = bad.proc.wait(60)
        time.sleep(0.2)  # a datagram sent just before exit is read by now
        assert rc == 1, f"profd with a directory as its store exited {rc}"
        assert not bad.notify.with_key("READY"), f"READY=1 from a profd that failed: {bad.notify.messages}"
    finally:
        bad.cleanup()


def test_passed_fd_that_is_not_a_listening_socket_is_refused():
    """LISTEN_FDS=1 with fd 3 not a listening Unix stream socket (here
    /dev/null): profd says so and exits 1 instead of serving nothing."""
    d = Profd("--kinds", "cpu")
    try:
        d.log = open(d.log_path, "ab")
        d.proc = subprocess.Popen(
            ["sh", "-c", 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$@" 3</dev/null', "sh", binary("PROFD"),
             "--config", d.config, "--socket", d.socket, "--store", d.store] + d.args,
            stdout=d.log, stderr=d.log)
        rc = d.proc.wait(60)
        assert rc == 1, f"profd with /dev/null as its passed socket exited {rc}:\n{d.read_log()}"
        assert "not a listening Unix stream socket" in d.read_log(), d.read_log()
        assert not os.path.exists(d.socket), "profd created its own socket anyway"
    finally:
        d.cleanup()


def test_every_log_line_has_a_priority_prefix():
    """With --verbose, every line profd writes to stderr starts with an
    sd-daemon priority, libbpf's lines among them at debug (<7>), each
    named once "libbpf: "."""
    d = Profd("--kinds", "cpu", "--interval", "1s", "--verbose")
    try:
        d.start()
        d.profctl("flush")
        assert d.stop() == 0
        lines = d.read_log().splitlines()
        bad = [l for l in lines if not re.match(r"<[0-7]>", l)]
        assert lines and not bad, f"lines without a priority prefix: {bad[:5]}"
        libbpf = [l for l in lines if "libbpf:" in l]
        print(f"  {len(lines)} lines, {len(libbpf)} from libbpf; priorities "
              f"{sorted({l[:3] for l in lines})}")
        assert libbpf, "no libbpf line with --verbose"
        assert all(l.startswith("<7>libbpf: ") and "libbpf: libbpf:" not in l for l in libbpf), \
            [l for l in libbpf if not l.startswith("<7>libbpf: ")][:5]
    finally:
        d.cleanup()


def test_socket_activation_query_through_passed_socket():
    """systemd-socket-activate listens, profd is started by the first
    connection and takes the socket (fd 3, LISTEN_FDS=1): profctl's query
    through it is answered; profd neither creates its --socket path nor
    changes the passed socket's mode, and leaves the socket file when it
    exits (systemd owns it)."""
    activate = shutil.which("systemd-socket-activate")
    if not activate:
        raise AssertionError("systemd-socket-activate is missing (Debian package systemd; setup.sh installs it)")
    d = Profd("--kinds", "cpu", "--frequency", str(FREQUENCY), "--interval", "1s", "--socket-mode", "0600")
    passed = os.path.join(d.dir, "passed.sock")
    env_args = []
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env_args += ["-E", f"{k}={os.environ[k]}"]
    try:
        d.log = open(d.log_path, "ab")
        d.proc = subprocess.Popen([activate, "-l", passed] + env_args +
                                  [binary("PROFD"), "--config", d.config, "--socket", d.socket,
                                   "--store", d.store] + d.args,
                                  stdout=d.log, stderr=d.log)
        deadline = time.monotonic() + 10
        while not os.path.exists(passed):
            assert time.monotonic() < deadline, "systemd-socket-activate did not create its socket"
            time.sleep(0.05)
        mode = stat.S_IMODE(os.stat(passed).st_mode)
        # the first connection starts profd; it answers once it is up
        r = subprocess.run([binary("PROFCTL"), "--socket", passed, "status", "--json"],
                           capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, f"profctl status through the passed socket: {r.stderr}\n{d.read_log()}"
        status = json.loads(r.stdout)
        assert status["pid"] == d.proc.pid, f"answered by pid {status['pid']}, not the activated {d.proc.pid}"
        assert status["kinds"] == ["cpu"], status["kinds"]

        w = busy(2)
        w.wait(60)
        r = subprocess.run([binary("PROFCTL"), "--socket", passed, "flush"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([binary("PROFCTL"), "--socket", passed, "query", "--json", "--since", "1m"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        result = json.loads(r.stdout)
        names = {f["name"] for st in result["stacks"] for f in st["frames"]}
        print(f"  query through the passed socket: {result['total']} samples, "
              f"{len(result['stacks'])} stacks; spin functions {sorted(n for n in names if 'spin_' in n)}")
        assert result["total"] > 0 and {"spin_alpha", "spin_beta"} <= names, sorted(names)[:30]

        assert not os.path.exists(d.socket), "profd created its own socket though one was passed"
        assert stat.S_IMODE(os.stat(passed).st_mode) == mode, "profd changed the passed socket's mode"
        assert "the socket passed by systemd" in d.read_log()
        assert d.stop() == 0
        assert os.path.exists(passed), "profd removed the passed socket's file on exit"
    except BaseException:
        print("--- profd log ---\n" + d.read_log(), file=sys.stderr)
        raise
    finally:
        d.cleanup()


def test_installed_units_verify_clean():
    """`meson install` puts the units, snippets, man pages and example
    configuration in place; systemd-analyze verify finds nothing to say
    about the installed units (with ExecStart's binary at its installed path
    and man: links resolving to the installed pages); their exposure stays
    at most 3.0; sysusers.d and tmpfiles.d snippets apply to an empty root."""
    build = os.environ.get("PROFD_BUILD_ROOT")
    if not build:
        raise AssertionError("PROFD_BUILD_ROOT is not set (run through meson test)")
    dest = tempfile.mkdtemp(prefix="profd-install-")
    try:
        r = subprocess.run(["meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"meson install failed:\n{r.stdout}\n{r.stderr}"
        units = glob.glob(os.path.join(dest, "**", "systemd", "system", "profd.service"), recursive=True)
        assert len(units) == 1, f"profd.service installed {len(units)} times: {units}"
        unitdir = os.path.dirname(units[0])
        prefix = os.path.dirname(os.path.dirname(os.path.dirname(unitdir)))[len(dest):]  # <prefix>/lib/systemd/system
        installed = {p[len(dest) + len(prefix):] for p in glob.glob(os.path.join(dest, "**"), recursive=True)
                     if os.path.isfile(p)}
        for want in ("/lib/systemd/system/profd.service", "/lib/systemd/system/profd.socket",
                     "/lib/sysusers.d/profd.conf", "/lib/tmpfiles.d/profd.conf",
                     "/share/man/man8/profd.8", "/share/man/man5/profd.conf.5", "/share/man/man1/profctl.1",
                     "/share/doc/profd/profd.conf.example"):
            assert want in installed, f"{prefix}{want} not installed; installed: {sorted(installed)}"
        with open(units[0]) as f:
            exec_start = re.search(r"^ExecStart=(\S+)", f.read(), re.M).group(1)
        assert exec_start.startswith(prefix + "/") and os.access(dest + exec_start, os.X_OK), \
            f"ExecStart={exec_start} is not the installed profd"

        # The installed tree is bind-mounted over the prefix in a mount
        # namespace of its own, so the units are verified at their real
        # paths with their real ExecStart, without touching the host.
        script = (f"mount --bind {dest}{prefix} {prefix} && "
                  f"MANPATH={prefix}/share/man exec systemd-analyze verify "
                  f"{prefix}/lib/systemd/system/profd.service {prefix}/lib/systemd/system/profd.socket")
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True, timeout=120)
        print(f"  systemd-analyze verify {prefix}/lib/systemd/system/profd.{{service,socket}}: "
              f"exit {r.returncode}, stderr {r.stderr!r}")
        assert r.returncode == 0 and r.stderr == "" and r.stdout == "", \
            f"systemd-analyze verify: exit {r.returncode}\n{r.stdout}\n{r.stderr}"

        r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=30", units[0]],
                           capture_output=True, text=True, timeout=60)
        level = re.search(r"Overall exposure level for profd.service: (\S+)", r.stdout)
        print(f"  exposure level: {level.group(1) if level else '?'}")
        assert r.returncode == 0 and level, f"systemd-analyze security (threshold 3.0):\n{r.stdout[-3000:]}\n{r.stderr}"

        root = tempfile.mkdtemp(prefix="profd-root-")
        try:
            os.mkdir(os.path.join(root, "etc"))
            r = subprocess.run(["systemd-sysusers", f"--root={root}",
                                dest + prefix + "/lib/sysusers.d/profd.conf"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            with open(os.path.join(root, "etc", "group")) as f:
                assert re.search(r"^profd:x:\d+:", f.read(), re.M), "sysusers did not create group profd"
            r = subprocess.run(["systemd-tmpfiles", "--create", f"--root={root}",
                                dest + prefix + "/lib/tmpfiles.d/profd.conf"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            st = os.stat(os.path.join(root, "var", "lib", "profd"))
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o750, oct(st.st_mode)
            assert os.path.isdir(os.path.join(root, "run", "profd"))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


if __name__ == "__main__":
    require_root()
    run_tests([test_ready_after_attach_then_status_watchdog_and_stopping,
               test_watchdog_only_for_its_pid_and_no_ready_on_failure,
               test_passed_fd_that_is_not_a_listening_socket_is_refused,
               test_every_log_line_has_a_priority_prefix,
               test_socket_activation_query_through_passed_socket,
               test_installed_units_verify_clean])
