#!/usr/bin/env python3
"""End to end, debuginfod: a binary stripped of every symbol, whose debug
info is nowhere on this host, is named through a real debuginfod server that
the test starts on loopback; and a build-id the server does not have is asked
for once, however many processes need it (the negative cache).

The test runs in a network namespace of its own (debuginfod binds every
address; there it finds only loopback)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from harness import Profd, binary, function_shares, network_libraries, require_root, run_tests

SPIN = ("spin_alpha", "spin_beta", "spin_gamma")
PORT = 18000 + os.getpid() % 1000
STATE = {}


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no build-id"
    return m.group(1)


def strip_copy(src, dst):
    """Every symbol and all debug info gone, and no .gnu_debuglink either."""
    subprocess.run(["objcopy", "--strip-all", "--remove-section=.gnu_debuglink", src, dst], check=True)
    os.chmod(dst, 0o755)


def start_server(served, workdir):
    log = open(os.path.join(workdir, "debuginfod.log"), "wb")
    server = subprocess.Popen(["debuginfod", "-F", served, "-p", str(PORT), "-d", os.path.join(workdir, "db.sqlite"),
                               "-v"], stdout=log, stderr=subprocess.STDOUT)
    STATE["server"], STATE["server_log"] = server, log.name
    url = f"http://127.0.0.1:{PORT}/buildid/{build_id(os.path.join(served, 'cpu_split'))}/debuginfo"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        assert server.poll() is None, "debuginfod exited:\n" + open(log.name).read()
        time.sleep(0.3)
    raise AssertionError("debuginfod did not serve cpu_split's debug info within 60 s")


def run(exe, seconds):
    out = subprocess.run([exe, str(seconds)], capture_output=True, text=True, check=True, timeout=60).stdout
    return int(re.search(r'"pid":(\d+)', out).group(1))


def test_debug_info_from_debuginfod_and_misses_asked_once():
    workdir = tempfile.mkdtemp(prefix="profd-debuginfod-")
    try:
        served = os.path.join(workdir, "served")
        os.mkdir(served)
        shutil.copy(binary("CPU_SPLIT"), served)           # the server has its debug info
        exe = os.path.join(workdir, "cpu_split_nodebug")
        strip_copy(binary("CPU_SPLIT"), exe)
        unknown = os.path.join(workdir, "offcpu_nodebug")  # the server has nothing for this one
        strip_copy(binary("OFFCPU_TRUTH"), unknown)
        bid, missing = build_id(exe), build_id(unknown)
        assert not os.path.exists(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
        nm = subprocess.run(["nm", exe], capture_output=True, text=True)
        assert "spin_gamma" not in nm.stdout, "the binary under test still has symbols"
        start_server(served, workdir)

        conf = os.path.join(workdir, "profd.conf")
        with open(conf, "w") as f:
            f.write(f"debuginfod_urls = http://127.0.0.1:{PORT}\ndebuginfod_cache = {workdir}/cache\n")
        with Profd("--frequency", "499", "--interval", "1s", config=conf) as d:
            pid = run(exe, 3)
            for _ in range(2):
                run(unknown, 1)  # two processes, one build-id the server lacks
            d.profctl("flush")
            result = d.query_json("--pid", str(pid), "--since", "5m")
            _, in_stack, total = function_shares(result)
            named = sum(in_stack.get(f, 0) for f in SPIN)
            print(f"  {named} of {total} samples in spin_* functions named from debuginfod")
            for f in SPIN:
                assert in_stack.get(f, 0) > 0, f"{f} not named: {sorted(in_stack)[:20]}"
            assert named >= 0.8 * total, f"only {named} of {total} samples named"
            # loaded because debuginfod is configured (daemon/dynlib.h)
            libs = network_libraries(d.proc.pid)
            assert any(n.startswith("libdebuginfod") for n in libs), f"libdebuginfod not loaded: {libs}"

        asks = open(STATE["server_log"]).read()
        served_asks = asks.count(f"/buildid/{bid}/debuginfo")
        missing_asks = asks.count(f"/buildid/{missing}/debuginfo")
        print(f"  requests: {served_asks} for the served build-id, {missing_asks} for the missing one "
              "(two processes needed it)")
        assert served_asks >= 1
        assert missing_asks == 1, f"the missing build-id was asked for {missing_asks} times"
        cached = [os.path.join(p, f) for p, _, files in os.walk(os.path.join(workdir, "cache")) for f in files]
        assert any(bid in p for p in cached), f"nothing for {bid} in the cache: {cached}"
    finally:
        server = STATE.get("server")
        if server and server.poll() is None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def test_defaults_load_no_network_library():
    """At defaults (no export, no debuginfod) profd maps neither libcurl nor
    libdebuginfod, nor the TLS and directory libraries they bring: about
    5 MiB of resident memory on every host that uses neither (issue 14)."""
    with Profd("--interval", "1s") as d:
        d.profctl("flush")  # a drain symbolized and stored: every stage ran
        libs = network_libraries(d.proc.pid)
        print(f"  network libraries mapped at defaults: {libs or 'none'}")
        assert not libs, f"profd at defaults maps {libs}"


def enter_own_netns():
    """Runs this script again in a new network namespace with loopback up."""
    if os.environ.get("PROFD_TEST_IN_NETNS") != "1":
        os.environ["PROFD_TEST_IN_NETNS"] = "1"
        os.execvp("unshare", ["unshare", "--net", sys.executable] + sys.argv)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


if __name__ == "__main__":
    require_root()
    if not shutil.which("debuginfod"):
        print("SKIP: debuginfod (Debian package debuginfod) is not installed; this test did NOT run",
              file=sys.stderr)
        sys.exit(77)
    enter_own_netns()
    run_tests([test_defaults_load_no_network_library, test_debug_info_from_debuginfod_and_misses_asked_once])
