#!/usr/bin/env python3
"""End to end, on-CPU: the real profd samples a workload whose true CPU split
is known, and the real profctl must report that split; samples survive the
process's exit and profd's own SIGTERM."""
import json
import subprocess
import time

from harness import Profd, binary, function_shares, require_root, run_tests

FUNCS = ("spin_alpha", "spin_beta", "spin_gamma")
TOLERANCE_PP = 5.0  # percentage points, as the specification states


def start_workload(seconds):
    return subprocess.Popen([binary("CPU_SPLIT"), str(seconds)], stdout=subprocess.PIPE, text=True)


def finish_workload(p):
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, f"cpu_split exited {p.returncode}"
    return json.loads(out)


def test_cpu_split_matches_truth():
    # 997 Hz (a prime) gives ~6000 samples of the workload: one binomial
    # standard error is below 0.7 pp, so +-5 pp is a real test of accuracy.
    with Profd("--frequency", "997", "--interval", "2s") as d:
        w = start_workload(6)
        time.sleep(3)
        # while it runs, recent stacks show the workload with correct names
        d.profctl("flush")
        folded = d.profctl("query", "--since", "1m", "--folded").stdout
        running = [l for l in folded.splitlines() if "run_workload;spin_" in l]
        assert running, "no stack of the running workload in --folded output:\n" + folded[:2000]
        for line in running:
            stack, count = line.rsplit(" ", 1)
            assert int(count) > 0 and ";main;" in ";" + stack + ";", f"stack lacks main: {line}"

        truth = finish_workload(w)
        d.profctl("flush")
        # the process has exited: its stacks must still be there, symbolized
        result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
        # a function's time includes what was inlined into it (burn(), with
        # debug info its own inlined frame), as the truth measures it; the
        # spin functions don't call each other, so stacks containing one are
        # its samples
        _, in_stack, total = function_shares(result)
        # as many samples as the CPU time it had (a busy machine gives it
        # less than its 6 s), and enough of them for the tolerance to mean
        # something (1500: one binomial SE below 1.3 pp)
        expected = truth["total_ns"] / 1e9 * 997
        print(f"  {total} samples for {truth['total_ns'] / 1e9:.2f} s of CPU at 997 Hz (expected ~{expected:.0f})")
        assert total >= 0.9 * expected, f"only {total} samples of the workload, expected ~{expected:.0f}"
        assert total > 1500, f"only {total} samples of the workload: the machine gave it too little CPU"
        for f in FUNCS:
            true_pct = 100.0 * truth["functions"][f] / truth["total_ns"]
            got_pct = 100.0 * in_stack.get(f, 0) / total
            print(f"  {f}: truth {true_pct:.1f}%  profd {got_pct:.1f}%  ({in_stack.get(f, 0)}/{total} samples)")
            assert abs(got_pct - true_pct) <= TOLERANCE_PP, \
                f"{f}: profd says {got_pct:.1f}%, truth is {true_pct:.1f}% (tolerance {TOLERANCE_PP} pp)"

        # the table view names the functions too (all rows: with debug info
        # their self time is the inlined burn()'s, so they sort low)
        table = d.profctl("query", "--pid", str(truth["pid"]), "--since", "5m", "--limit", "0").stdout
        for f in FUNCS:
            assert f in table, f"{f} missing from the table:\n{table}"


def test_exited_process_and_sigterm_keep_the_last_interval():
    # An interval longer than the test: the only drain is the one SIGTERM
    # triggers, after the workload has exited. Default frequency (49 Hz).
    with Profd("--interval", "1h") as d:
        truth = finish_workload(start_workload(2))
        assert d.stop() == 0, "profd did not exit cleanly on SIGTERM:\n" + d.read_log()

        # a new profd on the same store answers with what the first one kept
        again = Profd(store=d.store, workdir=d.dir)
        again.args = ["--interval", "1h"]
        again.start()
        try:
            result = again.query_json("--pid", str(truth["pid"]), "--since", "5m")
            self_counts, total_counts, total = function_shares(result)
            cpu_s = truth["total_ns"] / 1e9
            expected = 49 * cpu_s
            print(f"  {total} samples for {cpu_s:.2f} s of CPU at 49 Hz (expected ~{expected:.0f})")
            assert abs(total - expected) <= 0.15 * expected + 3, \
                f"{total} samples, expected about {expected:.0f} (49 Hz x {cpu_s:.2f} s)"
            for f in FUNCS:
                assert total_counts.get(f, 0) > 0, f"{f} missing after exit and restart: {self_counts}"
            assert total_counts.get("main", 0) >= 0.9 * total, "stacks do not reach main"
        finally:
            again.stop()


if __name__ == "__main__":
    require_root()
    run_tests([test_cpu_split_matches_truth, test_exited_process_and_sigterm_keep_the_last_interval])
