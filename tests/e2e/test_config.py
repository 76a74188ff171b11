#!/usr/bin/env python3
"""End to end, configuration: every key of profd.conf has an effect seen
through the real profctl status, the socket, the store or profd's log, and
its command-line option overrides it; a bad file stops profd with a message
naming file, line and key; SIGHUP applies a new frequency (the sample rate
of a busy workload follows), new off-CPU thresholds and client limits, keeps
what needs a restart, and a bad file on reload keeps the running settings."""
import grp
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

from harness import Profd, binary, require_root, run_tests

GROUP = "profdcfg" + str(os.getpid())
NO_GROUP = "profdnone" + str(os.getpid())   # never created

# Every key, a value unlike its default, and how status (or the log) shows it.
FILE_VALUES = {
    "frequency": "73",
    "interval": "2s",
    "kinds": "cpu,offcpu",
    "offcpu_min": "3ms",
    "offcpu_max": "5s",
    "socket_mode": "0640",
    "socket_group": GROUP,
    "admin_group": NO_GROUP,
    "max_clients": "5",
    "client_timeout": "7s",
    "retention_raw": "3h",
    "retention_1m": "3d",
    "retention": "20d",
    "max_store_size": "300M",
    "symbol_cache": "32",
    "debug_dirs": "/usr/lib/debug /opt/profd-test-debug",
    "debuginfod_urls": "http://127.0.0.1:9/",
    "debuginfod_cache": "/tmp/profd-test-debuginfod-cache",
    "max_keys": "3000",
    "max_stacks": "5000",
}
CLI_VALUES = {
    "frequency": "31",
    "interval": "3s",
    "kinds": "cpu",
    "offcpu_min": "4ms",
    "offcpu_max": "6s",
    "socket_mode": "0600",
    "socket_group": "",
    "admin_group": NO_GROUP + "x",
    "max_clients": "6",
    "client_timeout": "8s",
    "retention_raw": "4h",
    "retention_1m": "4d",
    "retention": "21d",
    "max_store_size": "none",
    "symbol_cache": "48",
    "debug_dirs": "/opt/profd-test-other",
    "debuginfod_urls": "http://127.0.0.1:10/",
    "debuginfod_cache": "/tmp/profd-test-debuginfod-other",
    "max_keys": "2000",
    "max_stacks": "6000",
}
MIB = 1 << 20


def status(d):
    return json.loads(d.profctl("status", "--json").stdout)


def check_status(d, v, expect_group):
    """Asserts that status, the socket and the log show the values v."""
    s = status(d)
    log = d.read_log()
    dur = {"2s": 2000, "3s": 3000, "7s": 7000, "8s": 8000}
    assert s["frequency_hz"] == int(v["frequency"]), s["frequency_hz"]
    assert s["interval_ms"] == dur[v["interval"]], s["interval_ms"]
    assert s["kinds"] == v["kinds"].split(","), s["kinds"]
    if "offcpu" in v["kinds"]:
        assert s["offcpu"]["min_ns"] == int(v["offcpu_min"][:-2]) * 1000000, s["offcpu"]
        assert s["offcpu"]["max_ns"] == int(v["offcpu_max"][:-1]) * 10**9, s["offcpu"]
    else:
        assert "Measuring off-CPU" not in log
    mode = os.stat(d.socket).st_mode
    assert stat.S_IMODE(mode) == int(v["socket_mode"], 8), oct(mode)
    gid = os.stat(d.socket).st_gid
    assert gid == (grp.getgrnam(expect_group).gr_gid if expect_group else 0), gid
    assert f"Admin group '{v['admin_group']}' not found" in log, log
    assert s["max_clients"] == int(v["max_clients"])
    assert s["client_timeout_ms"] == dur[v["client_timeout"]]
    r = s["retention"]
    hours = lambda t: int(t[:-1]) * (3600 if t.endswith("h") else 86400)
    assert r["active"] is True
    assert r["raw_s"] == hours(v["retention_raw"]), r
    assert r["minute_s"] == hours(v["retention_1m"]), r
    assert r["all_s"] == hours(v["retention"]), r
    assert r["max_store_size"] == (None if v["max_store_size"] == "none" else int(v["max_store_size"][:-1]) * MIB), r
    assert s["symbol_cache_limit_bytes"] == int(v["symbol_cache"]) * MIB
    assert s["debug_dirs"] == v["debug_dirs"].split(), s["debug_dirs"]
    assert f"Debug files missing on this host are asked from {v['debuginfod_urls']}" in log
    assert f"Kernel maps per generation: {v['max_keys']} keys, {v['max_stacks']} stacks" in log, log


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_every_key_of_the_file_takes_effect():
    with tempfile.TemporaryDirectory(prefix="profd-config-") as tmp:
        conf = os.path.join(tmp, "profd.conf")
        store = os.path.join(tmp, "sub", "dir", "from-config.db")
        sock = os.path.join(tmp, "run", "from-config.sock")
        write(conf, "# every key\n" + "".join(f"{k} = {v}\n" for k, v in FILE_VALUES.items())
              + f"store = {store}\nsocket = {sock}\n")
        # socket and store come from the file: run profd without the
        # harness's --socket/--store
        log_path = os.path.join(tmp, "log")
        with open(log_path, "wb") as log:
            p = subprocess.Popen([binary("PROFD"), "--config", conf], stdout=log, stderr=log)
        try:
            d = Profd(workdir=tmp)
            d.socket, d.log_path, d.proc = sock, log_path, p
            d.log = open(log_path, "ab")
            deadline = time.monotonic() + 30
            while not os.path.exists(sock) and time.monotonic() < deadline:
                assert p.poll() is None, d.read_log()
                time.sleep(0.1)
            time.sleep(0.5)
            check_status(d, FILE_VALUES, GROUP)
            assert status(d)["store_path"] == store
            assert os.path.exists(store)

            # max_clients = 5: the sixth client at once is told and closed
            held = []
            for _ in range(5):
                c = socket.socket(socket.AF_UNIX)
                c.connect(sock)
                held.append(c)
            time.sleep(0.3)
            extra = socket.socket(socket.AF_UNIX)
            extra.connect(sock)
            extra.settimeout(10)
            answer = extra.recv(4096).decode()
            assert "too many clients" in answer and "max_clients" in answer, answer
            # client_timeout = 7s: a silent client is closed, not before
            t0 = time.monotonic()
            held[0].settimeout(30)
            got = held[0].recv(4096)
            waited = time.monotonic() - t0
            assert b"no request" in got and 6.0 <= waited <= 25, (got, waited)
            for c in held + [extra]:
                c.close()
        finally:
            d.stop()


def test_command_line_overrides_every_key():
    with tempfile.TemporaryDirectory(prefix="profd-config-") as tmp:
        conf = os.path.join(tmp, "profd.conf")
        write(conf, "".join(f"{k} = {v}\n" for k, v in FILE_VALUES.items()))
        args = []
        for k, v in CLI_VALUES.items():
            args += ["--" + k.replace("_", "-"), v]
        with Profd(*args, config=conf) as d:
            check_status(d, CLI_VALUES, None)


BAD_FILES = [
    # (file text, line, key, what the message says after "key 'K': ")
    ("frequency = 99\nbogus_key = 1\n", 2, "bogus_key", None),
    ("\n# comment\nfrequency = fast\n", 3, "frequency", "frequency must be a whole number of Hz from 1 to 10000, not \"fast\""),
    ("interval = 10 seconds\n", 1, "interval", "interval must be a duration from 100ms to 1h"),
    ("max_store_size = 12X\n", 1, "max_store_size", "max_store_size must be a size of at least 1M"),
    ("max_store_size = 500K\n", 1, "max_store_size", "max_store_size must be a size of at least 1M"),
    ("retention = two weeks\n", 1, "retention", "retention must be a duration of at least 1m"),
    ("retention_raw = 5\n", 1, "retention_raw", "retention_raw must be a duration of at least 1m"),
    ("debug_dirs = usr/lib/debug\n", 1, "debug_dirs", "debug_dirs must be absolute directories"),
    ("max_clients = -1\n", 1, "max_clients", "max_clients must be a whole number"),
    ("socket_mode = rw-rw----\n", 1, "socket_mode", "socket_mode must be an octal mode"),
    ("kinds = cpu,gpu\n", 1, "kinds", "unknown kind \"gpu\""),
]


def test_bad_files_are_refused_naming_file_line_and_key():
    with tempfile.TemporaryDirectory(prefix="profd-config-") as tmp:
        conf = os.path.join(tmp, "bad.conf")
        sock = os.path.join(tmp, "s.sock")
        for text, line, key, why in BAD_FILES:
            write(conf, text)
            r = subprocess.run([binary("PROFD"), "--config", conf, "--socket", sock,
                                "--store", os.path.join(tmp, "s.db")],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 1, (text, r.returncode, r.stderr)
            if why is None:
                want = f"{conf}:{line}: unknown key '{key}' (known: "
            else:
                want = f"{conf}:{line}: key '{key}': {why}"
            assert want in r.stderr, f"for {text!r} want {want!r} in:\n{r.stderr}"
            assert not os.path.exists(sock), "profd started with a bad file"
        # settings that disagree: named by key
        write(conf, "retention_raw = 10d\n")
        r = subprocess.run([binary("PROFD"), "--config", conf, "--socket", sock],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "retention_raw (10d) is longer than retention_1m (7d)" in r.stderr, r.stderr
        # a missing --config file is an error too, the default path's absence is not
        r = subprocess.run([binary("PROFD"), "--config", os.path.join(tmp, "missing.conf")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "missing.conf" in r.stderr, r.stderr
        # a bad command-line value is a usage error (2) naming the option
        r = subprocess.run([binary("PROFD"), "--config", "/dev/null", "--max-store-size", "lots"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "--max-store-size: max_store_size must be a size" in r.stderr, r.stderr


def workload_rate(d, seconds):
    """Runs cpu_split; returns its samples per second of CPU time."""
    out = subprocess.run([binary("CPU_SPLIT"), str(seconds)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    truth = json.loads(out)
    d.profctl("flush")
    res = d.query_json("--pid", str(truth["pid"]), "--since", "10m")
    return res["total"] / (truth["total_ns"] / 1e9)


def test_sighup_applies_frequency_and_keeps_the_rest():
    with tempfile.TemporaryDirectory(prefix="profd-config-") as tmp:
        conf = os.path.join(tmp, "profd.conf")
        write(conf, "frequency = 29\ninterval = 1s\nkinds = cpu,offcpu\noffcpu_min = 10m\noffcpu_sample = auto\n")
        with Profd(config=conf) as d:
            assert status(d)["frequency_hz"] == 29
            # offcpu_sample = auto: the sampler's period, in whole us
            assert status(d)["offcpu"]["sample_ns"] == 34_482_000 and status(d)["offcpu"]["sample_auto"], status(d)
            before = workload_rate(d, 4)

            # off-CPU blocks shorter than 10 minutes are only counted
            sleeper = subprocess.run(["python3", "-c", "import os,time\nfor _ in range(10): time.sleep(0.05)\n"
                                      "print(os.getpid())"], capture_output=True, text=True, check=True)
            d.profctl("flush")
            none = d.query_json("--kind", "offcpu", "--pid", sleeper.stdout.strip(), "--since", "10m")
            assert none["total"] == 0, none["total"]

            write(conf, "frequency = 197\ninterval = 1s\nkinds = cpu,offcpu\noffcpu_min = 1ms\n"
                        "max_clients = 9\nsymbol_cache = 100\nretention_raw = 2h\noffcpu_sample = auto\n")
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while status(d)["frequency_hz"] != 197 and time.monotonic() < deadline:
                time.sleep(0.2)
            s = status(d)
            assert s["frequency_hz"] == 197, s["frequency_hz"]
            # auto moved with the rate
            assert s["offcpu"]["sample_ns"] == 5_076_000 and s["offcpu"]["sample_auto"], s["offcpu"]
            assert s["offcpu"]["min_ns"] == 1000000 and s["max_clients"] == 9, s
            assert s["symbol_cache_limit_bytes"] == 100 * MIB and s["retention"]["raw_s"] == 7200, s
            assert "Reloaded the configuration: frequency 29 -> 197 Hz" in d.read_log(), d.read_log()
            after = workload_rate(d, 4)
            print(f"  busy loop: {before:.1f} samples/s at 29 Hz, {after:.1f} samples/s at 197 Hz")
            assert 0.75 * 29 <= before <= 1.25 * 29, before
            assert 0.75 * 197 <= after <= 1.25 * 197, after

            # the new off-CPU threshold is in the kernel: blocks are attributed now
            sleeper = subprocess.run(["python3", "-c", "import os,time\nfor _ in range(10): time.sleep(0.05)\n"
                                      "print(os.getpid())"], capture_output=True, text=True, check=True)
            d.profctl("flush")
            some = d.query_json("--kind", "offcpu", "--pid", sleeper.stdout.strip(), "--since", "10m")
            assert some["total"] >= 0.3e9, some["total"]

            # what needs a restart is kept, and said so
            write(conf, "frequency = 197\ninterval = 1s\nkinds = cpu\noffcpu_min = 1ms\n"
                        "max_clients = 9\nsymbol_cache = 100\nretention_raw = 2h\n")
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while "Setting kinds changed" not in d.read_log() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "Setting kinds changed; it needs a restart" in d.read_log(), d.read_log()
            assert status(d)["kinds"] == ["cpu", "offcpu"]

            # a bad file on reload: logged with file, line and key; nothing changes
            write(conf, "frequency = 53\ninterval = 1s\nfrequenzy = 11\n")
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while "Reloading the configuration failed" not in d.read_log() and time.monotonic() < deadline:
                time.sleep(0.2)
            log = d.read_log()
            assert (f"Reloading the configuration failed, keeping the running one: {conf}:3: "
                    f"unknown key 'frequenzy'") in log, log
            s = status(d)
            assert s["frequency_hz"] == 197 and s["max_clients"] == 9, s
            assert d.proc.poll() is None


def spin_names(d, exe):
    """Runs cpu_split from exe; returns the spin_* function names profd gave
    its samples."""
    out = subprocess.run([exe, "2"], capture_output=True, text=True, timeout=120, check=True).stdout
    d.profctl("flush")
    res = d.query_json("--pid", str(json.loads(out)["pid"]), "--since", "10m")
    return {f["name"] for st in res["stacks"] for f in st["frames"] if f["name"].startswith("spin_")}


def test_debug_dirs_are_where_debug_files_are_found():
    """A stripped binary whose debug file is only under a directory of
    debug_dirs (as DIR/<the binary's directory>/<debuglink name>) is named
    from it; without that directory it is not."""
    with tempfile.TemporaryDirectory(prefix="profd-debugdirs-") as tmp:
        bindir = os.path.join(tmp, "bin")
        dbg = os.path.join(tmp, "debug")
        os.makedirs(bindir)
        os.makedirs(dbg + bindir)
        exe = os.path.join(bindir, "cpu_split_stripped")
        shutil.copy(binary("CPU_SPLIT_STRIPPED"), exe)
        src = binary("CPU_SPLIT_STRIPPED")
        shutil.copy(os.path.join(os.path.dirname(src), "cpu_split.debug"), os.path.join(dbg + bindir, "cpu_split.debug"))
        os.chmod(tmp, 0o755)
        with Profd("--kinds", "cpu", "--frequency", "199", "--debug-dirs", "") as d:
            assert spin_names(d, exe) == set(), "named without its debug file"
        with Profd("--kinds", "cpu", "--frequency", "199", "--debug-dirs", "/nonexistent " + dbg) as d:
            assert spin_names(d, exe) == {"spin_alpha", "spin_beta", "spin_gamma"}


def setup():
    subprocess.run(["groupadd", "--system", GROUP], check=True, capture_output=True)


def teardown():
    subprocess.run(["groupdel", GROUP], capture_output=True)


if __name__ == "__main__":
    require_root()
    setup()
    try:
        run_tests([test_bad_files_are_refused_naming_file_line_and_key,
                   test_every_key_of_the_file_takes_effect,
                   test_command_line_overrides_every_key,
                   test_debug_dirs_are_where_debug_files_are_found,
                   test_sighup_applies_frequency_and_keeps_the_rest])
    finally:
        teardown()
