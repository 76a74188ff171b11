#!/usr/bin/env python3
"""profctl is clean under valgrind memcheck: every command, its usage errors
and its connection errors, against the real profd after a little load, exit
with the status the documentation gives and without a single memcheck error
(invalid access, uninitialised value, definite or indirect leak)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import SKIP, Profd, binary, require_root, run_tests  # noqa: E402

SUPPRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profctl.supp")

# memcheck's own exit status when it found an error, distinct from profctl's
# 0, 1 and 2 so a test can tell them apart.
VALGRIND_ERROR_EXIT = 99

profd = None
workload_pid = None
logdir = None


def memcheck(*args, expect, socket=None):
    """Runs profctl under memcheck, asserts it exited `expect` and memcheck
    reported nothing; returns the CompletedProcess."""
    log = os.path.join(logdir, "memcheck.%p.log")
    cmd = ["valgrind", "--tool=memcheck", "--quiet",
           "--leak-check=full", "--show-leak-kinds=definite,indirect",
           "--errors-for-leak-kinds=definite,indirect",
           f"--error-exitcode={VALGRIND_ERROR_EXIT}",
           f"--suppressions={SUPPRESSIONS}", f"--log-file={log}",
           binary("PROFCTL"), "--socket", socket or profd.socket, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    # --quiet: memcheck writes only what it found, so any text is a finding
    report = ""
    for name in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, name)
        with open(path) as f:
            report += f.read()
        os.unlink(path)
    what = "profctl " + " ".join(args)
    assert r.returncode != VALGRIND_ERROR_EXIT and not report.strip(), \
        f"{what}: memcheck found errors:\n{report}"
    assert r.returncode == expect, \
        f"{what}: exited {r.returncode}, expected {expect}:\n{r.stderr}"
    return r


def test_status_is_clean():
    r = memcheck("status", expect=0)
    assert r.stdout.startswith("profd ") and "drops since the store was created:" in r.stdout, r.stdout


def test_status_json_is_clean():
    status = json.loads(memcheck("status", "--json", expect=0).stdout)
    assert status["type"] == "status" and status["pid"] == profd.proc.pid, status


def test_flush_is_clean():
    r = memcheck("flush", expect=0)
    assert r.stdout.startswith("drain ") and " stored: " in r.stdout, r.stdout


def test_query_table_is_clean():
    # the whole machine's table: many functions through the hash table
    r = memcheck("query", "--since", "5m", "--limit", "0", expect=0)
    assert " samples from " in r.stdout and "spin_gamma" in r.stdout, r.stdout[:2000]


def test_query_folded_is_clean():
    r = memcheck("query", "--since", "5m", "--folded", expect=0)
    assert "run_workload;spin_" in r.stdout, r.stdout[:2000]


def test_query_json_is_clean():
    r = memcheck("query", "--since", "5m", "--json", "--pid", str(workload_pid), expect=0)
    doc = json.loads(r.stdout)
    assert doc["total"] > 0 and doc["stacks_count"] == len(doc["stacks"]), r.stdout[:2000]


def test_query_offcpu_is_clean():
    # the table or, if nothing blocked long enough, "no samples match": both exit 0
    memcheck("query", "--since", "5m", "--kind", "offcpu", expect=0)


def test_error_answer_from_profd_is_clean():
    # profctl cannot see this window is empty (--since is profd's default),
    # profd answers with an "error" line
    r = memcheck("query", "--until", "1h", expect=1)
    assert r.stderr.startswith("profctl: "), r.stderr


def test_usage_error_is_clean():
    r = memcheck("query", "--no-such-option", expect=2)
    assert "unrecognized option '--no-such-option'" in r.stderr, r.stderr


def test_connection_error_is_clean():
    missing = os.path.join(logdir, "missing.sock")
    r = memcheck("status", expect=1, socket=missing)
    assert f"cannot connect to {missing}" in r.stderr, r.stderr


def main():
    global profd, workload_pid, logdir

    require_root()
    if not shutil.which("valgrind"):
        print("SKIP: valgrind is not installed (apt-get install valgrind); profctl's memcheck "
              "test did NOT run", file=sys.stderr)
        sys.exit(SKIP)
    with open(binary("PROFCTL"), "rb") as f:
        if b"__asan_init" in f.read():
            print("SKIP: this profctl is built with AddressSanitizer, which cannot run under "
                  "valgrind; memcheck did NOT run (run this suite in a plain build)", file=sys.stderr)
            sys.exit(SKIP)

    logdir = tempfile.mkdtemp(prefix="profctl-memcheck-")
    # One drain, on demand (flush): the interval never comes round in this test.
    with Profd("--frequency", "199", "--interval", "1h") as d:
        profd = d
        w = subprocess.run([binary("CPU_SPLIT"), "1"], capture_output=True, text=True, timeout=60)
        assert w.returncode == 0, f"cpu_split exited {w.returncode}"
        workload_pid = json.loads(w.stdout)["pid"]
        try:
            run_tests([test_status_is_clean, test_status_json_is_clean, test_flush_is_clean,
                       test_query_table_is_clean, test_query_folded_is_clean,
                       test_query_json_is_clean, test_query_offcpu_is_clean,
                       test_error_answer_from_profd_is_clean, test_usage_error_is_clean,
                       test_connection_error_is_clean])
        finally:
            shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    main()
