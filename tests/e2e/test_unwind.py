#!/usr/bin/env python3
"""End to end, issue 12 (complete user stacks without frame pointers), on-CPU:
the real profd samples ground-truth workloads built -O2 with and without
frame pointers, and profctl's stacks must be complete and exact:

- unwind_cpu: >= 95% of its samples have exactly one of the chains
  main;run;phase_X;leaf_X, or main;run;phase_X and the phase's clock read
  (the leaves are frameless even in the
  frame-pointer build, so the phase, their caller, must be found by CFI),
  and each phase's share is within 2 binomial standard errors of the truth;
- unwind_mix: a program and a shared library of the other kind (frame
  pointers or not) call each other; >= 95% of samples have the whole chain
  main;run;app_outer;mix_lib_enter;mix_lib_middle;app_callback;
- a process that burns 200 ms and exits: >= 90% of its samples complete;
- unwind_deep, 200 frames deep: its stacks end at the depth limit, and
  `profctl status --json` counts them under the depth truncation reason
  (its "truncated" object),
  next to every other truncation reason;
- unwind_bigcfi, whose table (100,000 FDEs) takes a while to build, burns
  the CPU from its start: its samples from before the table was loaded are
  counted under a "no table yet" reason, and its later ones are complete.

profd runs at its defaults (private socket and store, as every e2e test)
except the sampling frequency: 997 Hz instead of 49 gives the statistics
power (a run of 2 s of CPU is ~2000 samples, not ~100); it changes nothing of how a
stack is walked."""
import json
import os
import time

from harness import (MAX_FRAMES, HeldWorkload, SharedProfd, binary, binomial_tolerance, folded_stacks,
                     reaches_start, run_json, run_selected, sanitized, user_names)

FREQUENCY = "997"
VARIANTS = ("nofp", "fp")
PHASES = {"phase_a": "leaf_a", "phase_b": "leaf_b", "phase_c": "leaf_c"}
COMPLETE_SHARE = 0.95       # the bar for on-CPU chains and Debian's binaries
SHORT_LIVED_SHARE = 0.90    # the bar for a process living 200 ms
MIX_CHAIN = ["main", "run", "app_outer", "mix_lib_enter", "mix_lib_middle", "app_callback"]
# The truncation reasons profd counts (bpf/profd.h enum profd_stack_end, in
# order), as `profctl status --json` names them in its "truncated" object,
# next to "drops" (stored as truncated_NAME, daemon/writer.c).
TRUNCATION_REASONS = ("no_process", "pending", "no_mapping", "unsupported", "read_fault", "depth",
                      "fp_end", "cfa_stuck")
# a drain of a busy machine's complete stacks, stored while the machine is
# three times over its cores, has taken over a minute here
FLUSH_TIMEOUT = 240
# how long the idle unwinder is watched
IDLE_S = 4


# one profd for every test of this file (harness.SharedProfd)
shared_profd = SharedProfd("--frequency", FREQUENCY)


def from_main(names):
    """The user frames from main inwards, or None when main is not there."""
    return names[names.index("main"):] if "main" in names else None


# Between leaf calls a phase reads the thread's CPU clock: libc's
# clock_gettime, the vDSO, a system call. A sample there is a true stack
# too: main;run;phase, then these frames (the inlined helper
# unwind_clock_ns, libc's function, the vDSO's code, unnamed).
CLOCK_FRAMES = ("unwind_clock_ns", "clock_gettime", "__clock_gettime", "__GI___clock_gettime", "[vdso]")


def cpu_chain(names):
    """The phase whose exact chain a stack is, else None: main;run;phase;leaf,
    or main;run;phase followed only by its clock read (CLOCK_FRAMES)."""
    chain = from_main(names)
    for phase, leaf in PHASES.items():
        if chain == ["main", "run", phase, leaf]:
            return phase
        if chain and chain[:3] == ["main", "run", phase] and len(chain) > 3 and \
                all(n in CLOCK_FRAMES or n.startswith("[vdso]") for n in chain[3:]):
            return phase
    return None


def unwind_report(d, before):
    """For the log: truncations since `before` (a status), and the unwinder's
    own figures, so a failure shows why stacks ended early."""
    st = json.loads(d.profctl("status", "--json").stdout)
    t0, t1 = before.get("truncated", {}), st.get("truncated", {})
    print(f"  truncations meanwhile (all processes): {({k: v - t0.get(k, 0) for k, v in t1.items() if v - t0.get(k, 0)})}; "
          f"unwind status: {json.dumps(st.get('unwind'))}")


def check_cpu_split(d, variant):
    before = json.loads(d.profctl("status", "--json").stdout)
    with HeldWorkload(binary("UNWIND_CPU_" + variant.upper()), "2") as truth:
        d.profctl("flush", timeout=FLUSH_TIMEOUT)
        pid = str(truth["pid"])
        stacks = folded_stacks(d.profctl("query", "--pid", pid, "--since", "5m", "--folded").stdout)
    unwind_report(d, before)
    n = sum(w for _, w in stacks)
    assert n >= 500, f"{variant}: only {n} samples of unwind_cpu (pid {pid})"

    by_phase = {p: 0 for p in PHASES}
    for names, w in stacks:
        phase = cpu_chain(names)
        if phase:
            by_phase[phase] += w
    exact = sum(by_phase.values())
    worst = sorted(((w, ";".join(names)) for names, w in stacks if not cpu_chain(names)), reverse=True)[:5]
    print(f"  {variant}: {exact}/{n} samples ({100.0 * exact / n:.1f}%) have an exact chain "
          f"main;run;phase_X;leaf_X (or the phase's clock read); commonest others: {worst}")

    # Shares: a phase's samples (its exact chain) over all the process's
    # samples, against its share of the process's CPU, within 2 binomial
    # standard errors (harness.binomial_tolerance), p the true share, n
    # the process's samples.
    failures = []
    for phase in PHASES:
        p = truth["functions"][phase] / truth["total_ns"]
        got = by_phase[phase] / n
        tol = binomial_tolerance(p, n)
        print(f"  {variant} {phase}: truth {100 * p:.2f}%  profd {100 * got:.2f}%  "
              f"(tolerance +-{100 * tol:.2f} pp, n={n})")
        if abs(got - p) > tol:
            failures.append(f"{phase} {100 * got:.2f}% vs truth {100 * p:.2f}% (+-{100 * tol:.2f} pp)")
    assert exact >= COMPLETE_SHARE * n, \
        f"{variant}: only {100.0 * exact / n:.1f}% of samples have an exact chain from main " \
        f"(need {100 * COMPLETE_SHARE:.0f}%); commonest others: {worst}"
    assert not failures, f"{variant}: shares off the truth: {'; '.join(failures)}"


def test_cpu_chains_and_split_without_frame_pointers():
    with shared_profd as d:
        check_cpu_split(d, "nofp")


def test_cpu_chains_and_split_with_frame_pointers_and_frameless_leaves():
    with shared_profd as d:
        check_cpu_split(d, "fp")


def test_mixed_stacks_cross_library_boundaries():
    failures = []
    with shared_profd as d:
        for variant in VARIANTS:
            before = json.loads(d.profctl("status", "--json").stdout)
            # nofp: the frame-pointer program calls the library without
            # frame pointers; fp: the reverse (names are the program's kind)
            with HeldWorkload(binary("UNWIND_MIX_" + variant.upper()), "2") as truth:
                d.profctl("flush", timeout=FLUSH_TIMEOUT)
                result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
            n = result["total"]
            # app_callback calls app_checkpoint every 64 Ki iterations: a
            # sample there has the whole chain too, one frame deeper
            exact = sum(st["value"] for st in result["stacks"]
                        if from_main(user_names(st["frames"])) in (MIX_CHAIN, MIX_CHAIN + ["app_checkpoint"]))
            others = sorted(((st["value"], ";".join(user_names(st["frames"]))) for st in result["stacks"]
                             if from_main(user_names(st["frames"])) not in (MIX_CHAIN, MIX_CHAIN + ["app_checkpoint"])),
                            reverse=True)[:4]
            pct = 100.0 * exact / max(n, 1)
            unwind_report(d, before)
            print(f"  unwind_mix_{variant}: {exact}/{n} samples ({pct:.1f}%) have the whole chain "
                  f"{';'.join(MIX_CHAIN)}; commonest others: {others}")
            if n < 500:
                failures.append(f"unwind_mix_{variant}: only {n} samples")
            elif exact < COMPLETE_SHARE * n:
                failures.append(f"unwind_mix_{variant}: {pct:.1f}% complete (need {100 * COMPLETE_SHARE:.0f}%)")
    assert not failures, "; ".join(failures)


def test_short_lived_process_has_complete_stacks():
    # Eight processes, each burning 200 ms from its first moments and
    # exiting (not held: profd symbolizes them after their exit): their
    # stacks must be complete from (nearly) the start. A
    # stack is complete when it has an exact chain main;run;phase;leaf, or,
    # for samples before main (the dynamic loader, libc's start-up), when it
    # reaches where the process started (harness.STACK_START_FRAMES).
    runs, complete, total = [], 0, 0
    with shared_profd as d:
        before = json.loads(d.profctl("status", "--json").stdout)
        pids = [str(run_json(binary("UNWIND_CPU_NOFP"), "0.2")["pid"]) for _ in range(8)]
        d.profctl("flush", timeout=FLUSH_TIMEOUT)
        unwind_report(d, before)
        for pid in pids:
            result = d.query_json("--pid", pid, "--since", "5m")
            ok = sum(st["value"] for st in result["stacks"]
                     if cpu_chain(user_names(st["frames"]))
                     or ("main" not in user_names(st["frames"]) and reaches_start(user_names(st["frames"]))))
            runs.append(f"{ok}/{result['total']}")
            if ok < SHORT_LIVED_SHARE * result["total"]:
                others = {}
                for st in result["stacks"]:
                    names = user_names(st["frames"])
                    if not (cpu_chain(names) or ("main" not in names and reaches_start(names))):
                        others[";".join(names)] = others.get(";".join(names), 0) + st["value"]
                print(f"    pid {pid}: commonest incomplete stacks {sorted(((v, k) for k, v in others.items()), reverse=True)[:3]}")
            complete += ok
            total += result["total"]
    print(f"  complete stacks per run: {' '.join(runs)}; all: {complete}/{total} "
          f"({100.0 * complete / max(total, 1):.1f}%)")
    assert total >= 400, f"only {total} samples of 8 runs of 200 ms at {FREQUENCY} Hz"
    assert complete >= SHORT_LIVED_SHARE * total, \
        f"only {100.0 * complete / total:.1f}% of a short-lived process's samples are complete " \
        f"(need {100 * SHORT_LIVED_SHARE:.0f}%)"


def truncations(d):
    """`profctl status --json`'s truncation counts, which must hold every
    reason as a count."""
    st = json.loads(d.profctl("status", "--json").stdout)
    assert "truncated" in st, f"profctl status --json has no truncated object: {sorted(st)}"
    got = st["truncated"]
    missing = [r for r in TRUNCATION_REASONS if r not in got]
    assert not missing, f"profctl status --json has no {missing} in truncated: {sorted(got)}"
    for r in TRUNCATION_REASONS:
        assert isinstance(got[r], int) and got[r] >= 0, (r, got[r])
    return got


def test_truncation_reasons_are_counted():
    with shared_profd as d:
        before = truncations(d)
        with HeldWorkload(binary("UNWIND_DEEP"), "1", "200") as truth:
            d.profctl("flush", timeout=FLUSH_TIMEOUT)
            after = truncations(d)
            result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
        n = result["total"]
        # every sample in the recursion (all but start-up and exit) is 200
        # deep: its walk stops at the frame limit, innermost frames kept
        at_limit = sum(st["value"] for st in result["stacks"]
                       if len(user_names(st["frames"])) >= MAX_FRAMES
                       and user_names(st["frames"])[-1] == "deep_leaf"
                       and set(user_names(st["frames"])[:-1]) == {"deep_recurse"})
        depth = after["depth"] - before["depth"]
        print(f"  unwind_deep: {n} samples, {at_limit} with {MAX_FRAMES}+ frames "
              f"deep_recurse...;deep_leaf; truncated depth +{depth}; "
              f"other reasons: {{{', '.join(f'{r}: +{after[r] - before[r]}' for r in TRUNCATION_REASONS if r != 'depth')}}}")
        assert n >= 300, f"only {n} samples of unwind_deep"
        assert at_limit >= COMPLETE_SHARE * n, \
            f"only {at_limit} of {n} samples walked to the frame limit through deep_recurse"
        # counted once per stack walk that stopped there (other processes
        # may add theirs, never fewer)
        assert depth >= at_limit, f"truncated depth grew by {depth}, {at_limit} samples stopped at the limit"


# "No table yet": the process has no unwind entry yet, or a mapping's table
# is still being built (profd.h PROFD_END_NO_PROCESS, PROFD_END_PENDING), or
# the code was mapped after profd last read the process's maps.
NO_TABLE_YET = ("no_process", "pending", "no_mapping")


def test_first_sight_truncations_are_counted():
    # Under AddressSanitizer profd takes about half a second to load the
    # process and build its 100,000 FDEs' table (here: 491 of 1003 samples
    # of a 1 s run before it, 49%): the run is three times as long there,
    # so that the samples after the table still are most of them.
    seconds = "3" if sanitized() else "1"
    with shared_profd as d:
        before = truncations(d)
        with HeldWorkload(binary("UNWIND_BIGCFI"), seconds) as truth:
            d.profctl("flush", timeout=FLUSH_TIMEOUT)
            after = truncations(d)
            result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
    n = result["total"]
    chain = ["main", "run", "bigcfi_leaf"]
    complete = sum(st["value"] for st in result["stacks"] if from_main(user_names(st["frames"])) == chain)
    # an incomplete stack of this process: the leaf, not reaching main
    early = sum(st["value"] for st in result["stacks"]
                if user_names(st["frames"])[-1:] == ["bigcfi_leaf"] and "main" not in user_names(st["frames"]))
    no_table = {r: after[r] - before[r] for r in NO_TABLE_YET}
    print(f"  unwind_bigcfi: {n} samples, {complete} complete ({';'.join(chain)}), {early} in bigcfi_leaf "
          f"without main; no-table-yet truncations: {no_table}")
    assert n >= 300, f"only {n} samples of unwind_bigcfi"
    # profd counts every walk that stopped for want of a table: at least
    # this process's incomplete ones (other processes may add theirs)
    assert sum(no_table.values()) >= early, \
        f"{early} samples stopped before the table was there, no-table-yet counters grew by {no_table}"
    assert early > 0, "no sample before the table was built (in 100,000 FDEs' build time): " \
        "the test saw nothing to count"
    assert complete >= 0.5 * n, f"only {complete} of {n} samples complete once the table was built"


def thread_cpu_s(pid):
    """CPU seconds (utime + stime) of each of pid's threads, by thread name."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                comm, rest = f.read().rsplit(")", 1)
        except FileNotFoundError:
            continue  # ended meanwhile
        fields = rest.split()
        name = comm.split("(", 1)[1]
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def test_unwinder_waits_when_idle():
    # once the processes running at start are loaded, the unwinder's thread
    # sleeps until a request or its next sweep: a wait that timed out at
    # once (a CLOCK_MONOTONIC deadline read as CLOCK_REALTIME) spun a whole
    # core. Not a speed target: a sleeping thread uses almost nothing, a
    # spinning one all of a core.
    with shared_profd as d:
        pid = d.proc.pid
        before = thread_cpu_s(pid)
        assert "profd-unwind" in before, f"no thread named profd-unwind: {sorted(before)}"
        time.sleep(IDLE_S)
        after = thread_cpu_s(pid)
    used = after["profd-unwind"] - before["profd-unwind"]
    print(f"  profd-unwind used {used:.2f} s of CPU in {IDLE_S} s (threads: "
          + ", ".join(f"{k} {after[k] - before.get(k, 0):.2f} s" for k in sorted(after)) + ")")
    assert used < IDLE_S / 3, f"the unwinder's thread used {used:.2f} s of CPU in {IDLE_S} s with nothing to do"


if __name__ == "__main__":
    run_selected([test_cpu_chains_and_split_without_frame_pointers,
                  test_cpu_chains_and_split_with_frame_pointers_and_frameless_leaves,
                  test_mixed_stacks_cross_library_boundaries,
                  test_short_lived_process_has_complete_stacks,
                  test_truncation_reasons_are_counted,
                  test_first_sight_truncations_are_counted,
                  test_unwinder_waits_when_idle], shared_profd.cleanup)
