#!/usr/bin/env python3
"""End to end, off-CPU: the real profd measures a workload whose threads block
in known functions for known times; with every block walked
(offcpu_sample = none) profctl must report each function's blocked time
within 5%, in state S, and the pipe writer as the waker of the
reader's blocked time; a timer interrupt's wakeups are process 0's, not the
thread's it interrupted. Stopping profd keeps the last interval. With
offcpu_sample (auto, the sampling period, by default), blocks shorter than
it are walked by a draw, and each function's blocked time is an estimate
within its standard error. The
kernel stacks come from the memo at defaults; with
kernel_stack_memo_verify every hit is also walked, and none may differ."""
import json
import math
import re
import subprocess
import threading
import time

from harness import EXACT_OFFCPU, Profd, binary, function_shares, require_root, rfc3339, run_tests

FUNCS = ("block_nanosleep", "block_pipe_read", "block_mutex_lock")
TOLERANCE = 0.05  # relative, as the specification states
# switch_missed allowed over a run: none is known to remain where the kernel
# has sched_exit_tp; one or two for what is not known
MISSED_SWITCHES_MAX = 2
# frames of x86-64's interrupt entries, as profctl names kernel frames
INTERRUPT_ENTRIES = ("asm_sysvec_", "asm_common_interrupt")


def run_workload(seconds):
    out = subprocess.run([binary("OFFCPU_TRUTH"), str(seconds)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return json.loads(out)


def blocked_ns(result):
    """Off-CPU ns per function name: stacks containing it, counted once."""
    _, total_counts, _ = function_shares(result)
    return total_counts


def check_blocked_times(d, truth, label):
    pid = str(truth["pid"])
    got = blocked_ns(d.query_json("--kind", "offcpu", "--pid", pid, "--since", "5m"))
    sleeping = blocked_ns(d.query_json("--kind", "offcpu", "--state", "S", "--pid", pid, "--since", "5m"))
    for f in FUNCS:
        want, have = truth["functions"][f], got.get(f, 0)
        print(f"  {label} {f}: truth {want / 1e6:.1f} ms  profd {have / 1e6:.1f} ms  "
              f"({100.0 * (have - want) / want:+.2f}%)  in state S: {sleeping.get(f, 0) / 1e6:.1f} ms")
        assert abs(have - want) <= TOLERANCE * want, \
            f"{f}: profd says {have / 1e6:.1f} ms blocked, truth is {want / 1e6:.1f} ms"
        # these block in interruptible sleep: nearly all of it must be state S
        assert sleeping.get(f, 0) >= (1 - TOLERANCE) * want, \
            f"{f}: only {sleeping.get(f, 0) / 1e6:.1f} ms of {want / 1e6:.1f} ms in state S"


def test_blocked_time_per_function_matches_truth():
    with Profd("--interval", "2s", *EXACT_OFFCPU) as d:
        truth = run_workload(4)
        d.profctl("flush")
        check_blocked_times(d, truth, "")

        # the writer's stack is the waker of the reader's blocked time
        pid = str(truth["pid"])
        wakers = d.query_json("--kind", "wakeup", "--pid", pid, "--since", "5m")
        by_waker = blocked_ns(wakers)
        # a wakeup counts the blocked time until it, not the time the woken
        # thread then waits for a CPU (a loaded machine makes that long)
        reader = truth["functions"]["block_pipe_read"]
        queued = truth["run_delay"]["block_pipe_read"]
        ended = by_waker.get("feed_pipe_writer", 0)
        print(f"  feed_pipe_writer ended {ended / 1e6:.1f} ms of the reader's "
              f"{reader / 1e6:.1f} ms blocked, {queued / 1e6:.1f} ms of it waiting for a CPU")
        assert abs(ended - (reader - queued)) <= TOLERANCE * reader, \
            f"feed_pipe_writer woke {ended / 1e6:.1f} ms, the reader blocked {reader / 1e6:.1f} ms " \
            f"and waited {queued / 1e6:.1f} ms of it for a CPU"
        # the waker's kernel stack is walked from inside profd's own BPF
        # program: it must be named, by its kallsyms name bpf_prog_TAG_NAME
        progs = {f["name"] for st in wakers["stacks"] for f in st["frames"] if f["name"].startswith("bpf_prog_")}
        assert any(n.endswith("_profd_waking") for n in progs), f"profd_waking not named; BPF frames: {progs}"
        folded = d.profctl("query", "--kind", "wakeup", "--pid", pid, "--since", "5m", "--folded").stdout
        assert any("feed_pipe_writer" in l for l in folded.splitlines()), folded[:2000]
        # a wakeup done by an interrupt (a timer expiring while a thread of
        # the workload ran) is not that thread's: it goes to process 0
        by_irq = [l for l in folded.splitlines()
                  if any(f.startswith(INTERRUPT_ENTRIES) for f in l.rsplit(" ", 1)[0].split(";"))]
        assert not by_irq, f"wakeups by interrupts credited to the workload: {by_irq[:3]}"
        # folded weights for time kinds are microseconds
        total_us = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines())
        assert abs(total_us * 1000 - wakers["total"]) <= 1000 * len(folded.splitlines()), \
            (total_us, wakers["total"])
        check_no_missed_switches(d)
        # the kernel stacks came from the memo (bpf/kstack-memo.bpf.h)
        memo = json.loads(d.profctl("status", "--json").stdout)["offcpu"]["kernel_stack_memo"]
        print(f"  kernel stack memo: {memo}")
        assert memo["hits"] > 0 and memo["walks"] > 0, memo
        shown = d.profctl("status").stdout
        assert re.search(r"kernel stacks: [1-9]\d* from the memo, \d+ walked \(\d+%\)\n", shown), shown


BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"


def set_bpf_stats(value):
    with open(BPF_STATS, "w") as f:
        f.write(value)


# Other processes blocking and waking through other kernel paths at once:
# a shell starting programs (fork, exec, wait4, exit), file reads that
# block in the disk's queue, sleeps, pipes between processes.
CHURN = ("for i in $(seq 200); do /bin/true; ls -R /usr/share/doc > /dev/null; "
         "echo x | cat > /dev/null; sleep 0.001; done")


def test_kernel_stack_memo_hits_are_the_walks():
    """Every hit of the kernel stack memo is walked too
    (kernel_stack_memo_verify): a hit must never hold other frames than the
    kernel's walk of that stack, over the truth workload and a churn of
    shells, file reads and pipes; the blocked times still hold."""
    with open(BPF_STATS) as f:
        stats_before = f.read().strip()
    with Profd("--interval", "2s", "--kernel-stack-memo-verify", *EXACT_OFFCPU) as d:
        churn = [subprocess.Popen(["sh", "-c", CHURN], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(2)]
        # the BPF run-time statistics switched on halfway: the kernel then
        # calls the programs from another place, a frame of every stack
        # the programs walk (bpf/offcpu.bpf.c, KSTACK_BELOW_CTX)
        flip = threading.Timer(2.0, set_bpf_stats, ("0" if stats_before == "1" else "1",))
        flip.start()
        try:
            truth = run_workload(4)
        finally:
            flip.cancel()
            flip.join()
            set_bpf_stats(stats_before)
            for p in churn:
                p.kill()
                p.wait()
        d.profctl("flush")
        check_blocked_times(d, truth, "verified")
        memo = json.loads(d.profctl("status", "--json").stdout)["offcpu"]["kernel_stack_memo"]
        print(f"  kernel stack memo: {memo}")
        assert memo["hits"] >= 100, memo
        assert memo["mismatches"] == 0, f"{memo['mismatches']} hits of the memo were not the kernel's walk: {memo}"


def check_no_missed_switches(d):
    """Every block of every thread was timed: no switch-out found the
    thread's last one still open. The test VM's kernel does not call the
    sched_switch tracepoint for the switches its agent's threads (tgid 1)
    make (docs/reliability.md): without the program on sched_exit_tp ending
    the blocks they switch to, this ran at 5-10 a second here."""
    if not kernel_has_sched_exit_tp():
        return  # nothing else sees those switch-ins
    missed = json.loads(d.profctl("status", "--json").stdout)["drops"]["switch_missed"]
    print(f"  switch_missed over the whole run: {missed}")
    assert missed <= MISSED_SWITCHES_MAX, f"{missed} blocks not timed (switch_missed)"


def test_timer_wakeups_are_not_the_interrupted_threads():
    """A timer interrupt that wakes a sleeping thread while another runs in
    user mode on its CPU runs on that thread's stack: the wakeup is the
    interrupt's (process 0), never the spinner's."""
    with Profd("--interval", "2s") as d:
        truth = json.loads(subprocess.run([binary("TIMER_WAKES"), "3"], capture_output=True, text=True,
                                          timeout=60, check=True).stdout)
        d.profctl("flush")
        pid = str(truth["pid"])
        slept = blocked_ns(d.query_json("--kind", "offcpu", "--pid", pid, "--since", "5m")).get("sleep_briefly", 0)
        print(f"  {truth['sleeps']} sleeps, {slept / 1e6:.1f} ms of them off the CPU")
        # the sleeper was woken hundreds of times over the spinner
        assert truth["sleeps"] >= 100 and slept >= 0.4e9, (truth, slept)
        folded = d.profctl("query", "--kind", "wakeup", "--pid", pid, "--since", "5m", "--folded").stdout
        spinner = [l for l in folded.splitlines() if "spin_in_user" in l]
        assert not spinner, f"the spinner is credited with waking: {spinner[:3]}"
        # the interrupt's own wakeups: process 0, the timer's kernel stack
        everyone = d.profctl("query", "--kind", "wakeup", "--since", "5m", "--folded").stdout
        timers = sum(int(l.rsplit(" ", 1)[1]) for l in everyone.splitlines()
                     if l.startswith(INTERRUPT_ENTRIES) and "hrtimer_wakeup" in l)
        print(f"  timer wakeups over a thread in user mode, in process 0: {timers / 1e3:.1f} ms")
        assert timers * 1000 >= 0.4 * slept, (timers, slept)
        # process 0's wakeup stacks end, root side, at the interrupt's
        # entry: what it interrupted is not kept (issue 43)
        rooted = d.profctl("query", "--kind", "wakeup", "--since", "5m", "--root", "process",
                           "--folded").stdout.splitlines()
        zero = [l.split(";", 1)[1] for l in rooted if l.split(";", 1)[0].endswith("-0") and ";" in l]
        below = [l for l in zero if any(f.startswith(INTERRUPT_ENTRIES) for f in l.split(";")[1:])]
        entered = [l for l in zero if l.startswith(INTERRUPT_ENTRIES)]
        print(f"  process 0: {len(entered)} wakeup stacks from an interrupt's entry, {len(below)} with frames below it")
        assert entered and not below, below[:3]


def kernel_has_sched_exit_tp():
    """Whether the kernel's BTF has the sched_exit_tp tracepoint's type, as
    bpftool reads it (all of the BTF, not profd's search of its strings)."""
    out = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return "'btf_trace_sched_exit_tp'" in out


# offcpu_sample for the tests below, longer than every block of
# offcpu_truth (nominal lengths, offcpu_truth.c) and shorter than sleeps';
# and auto's at the default 49 Hz: 1 s / 49 in whole microseconds
SAMPLE_NS = 40_000_000
DEFAULT_SAMPLE_NS = 20_408_000
NOMINAL_NS = {"block_nanosleep": 20_000_000, "block_pipe_read": 15_000_000, "block_mutex_lock": 10_000_000}
LONG_BLOCK_MS = 100


def sampled_tolerance(total_ns, block_ns, sample_ns):
    """How far a sampled total may be from its truth total_ns of blocks of
    about block_ns each, shorter than sample_ns: each is walked with
    probability p = block / sample and counted as sample, so the count's
    variance is n sample^2 p (1 - p) = total (sample - block). Four standard
    errors, and 2% for what the truth's clock and BPF's disagree on."""
    return 4 * math.sqrt(total_ns * max(sample_ns - block_ns, 0)) + 0.02 * total_ns


def check_sampled_blocks(sample_ns, auto, *setting, timeline=False):
    """offcpu_truth and sleeps under profd with setting, an offcpu_sample
    of sample_ns (auto or not): offcpu_truth's blocks (10-20 ms) are each
    walked with probability length / sample_ns and counted as sample_ns;
    sleeps' 100 ms blocks are walked and counted exactly. Each function's
    blocked time, and the pipe writer's wake-ups of the reader, must be
    within their tolerances; at 40 ms a block counted as its own length (a
    biased estimate: -50% to -75%) or every block walked and counted as
    40 ms (+100% to +300%) fails. profctl status counts the blocks and
    wake-ups left unwalked. With timeline, a window of the off-CPU timeline
    (--from/--to) over the run must give each function the aggregates'
    estimate, less at most one period at the window's start: a block walked
    by a draw is logged as the period it counts for, ending where it ended.
    Logged with its own length instead, the 10 ms mutex waits would come to
    half their time."""
    with Profd("--interval", "2s", *setting) as d:
        begin_ns = time.time_ns()
        sleeps = subprocess.Popen([binary("SLEEPS"), "8", str(LONG_BLOCK_MS)], stdout=subprocess.PIPE, text=True)
        truth = run_workload(8)
        long_truth = json.loads(sleeps.communicate(timeout=60)[0])
        assert sleeps.returncode == 0
        end_ns = time.time_ns()
        d.profctl("flush")
        got = blocked_ns(d.query_json("--kind", "offcpu", "--pid", str(truth["pid"]), "--since", "5m"))
        for f in FUNCS:
            want, have = truth["functions"][f], got.get(f, 0)
            tolerance = sampled_tolerance(want, NOMINAL_NS[f], sample_ns)
            print(f"  {f}: truth {want / 1e6:.1f} ms  profd {have / 1e6:.1f} ms  "
                  f"({100.0 * (have - want) / want:+.2f}%, tolerance {100.0 * tolerance / want:.1f}%)")
            assert abs(have - want) <= tolerance, \
                f"{f}: profd estimates {have / 1e6:.1f} ms blocked, truth is {want / 1e6:.1f} ms"
        if timeline:
            window = d.query_json("--kind", "offcpu", "--pid", str(truth["pid"]), "--from", rfc3339(begin_ns),
                                  "--to", rfc3339(end_ns))
            assert window.get("timeline") is True, window.get("timeline")
            in_window = blocked_ns(window)
            for f in FUNCS:
                have = in_window.get(f, 0)
                print(f"  {f} in the timeline's window: {have / 1e6:.1f} ms (aggregates {got.get(f, 0) / 1e6:.1f})")
                # the log keeps a duration to the us, rounded up: 5 ms for some hundreds of blocks
                assert got.get(f, 0) - sample_ns - 5_000_000 <= have <= got.get(f, 0) + 5_000_000, \
                    (f, have, got.get(f, 0))
        # blocks longer than offcpu_sample: every one walked, exactly
        want = sum(e - s for s, e in long_truth["blocks"])
        have = blocked_ns(d.query_json("--kind", "offcpu", "--pid", str(long_truth["pid"]),
                                       "--since", "5m")).get("block_wait", 0)
        print(f"  block_wait ({LONG_BLOCK_MS} ms blocks): truth {want / 1e6:.1f} ms  profd {have / 1e6:.1f} ms")
        assert abs(have - want) <= TOLERANCE * want, (have, want)
        # the reader's wakers: the same draw, on the block until its wake-up
        reader = truth["functions"]["block_pipe_read"] - truth["run_delay"]["block_pipe_read"]
        ended = blocked_ns(d.query_json("--kind", "wakeup", "--pid", str(truth["pid"]),
                                        "--since", "5m")).get("feed_pipe_writer", 0)
        tolerance = sampled_tolerance(reader, NOMINAL_NS["block_pipe_read"], sample_ns)
        print(f"  feed_pipe_writer ended {ended / 1e6:.1f} ms of the reader's {reader / 1e6:.1f} ms "
              f"(tolerance {100.0 * tolerance / reader:.1f}%)")
        assert abs(ended - reader) <= tolerance, (ended, reader)
        offcpu = json.loads(d.profctl("status", "--json").stdout)["offcpu"]
        print(f"  status: {offcpu}")
        assert offcpu["sample_ns"] == sample_ns and offcpu["sample_auto"] == auto, offcpu
        assert offcpu["unsampled_blocks"] > 0 and offcpu["unsampled_ns"] > 0 and offcpu["unsampled_wakeups"] > 0
        shown = d.profctl("status").stdout
        said = "walked by a draw (offcpu_sample auto: the on-CPU period)" if auto else "walked by a draw (offcpu_sample)"
        assert said in shown, shown


def test_sampled_blocks_estimate_the_truth():
    """offcpu_sample = 40ms (check_sampled_blocks)."""
    check_sampled_blocks(SAMPLE_NS, False, "--offcpu-sample", f"{SAMPLE_NS // 1_000_000}ms")


def test_auto_sample_is_the_sampling_period():
    """offcpu_sample = auto at 25 Hz: the sampler's period, 40 ms, drawn
    and estimated as a setting of 40 ms is (check_sampled_blocks)."""
    check_sampled_blocks(SAMPLE_NS, True, "--offcpu-sample", "auto", "--frequency", "25")


def test_defaults_estimate_the_truth():
    """At the defaults, offcpu_sample is auto at 49 Hz: blocks under 20.408
    ms are drawn, and each function's time is within its tolerance
    (check_sampled_blocks), in the aggregates and in a window of the
    timeline. offcpu_truth's 20 ms sleeps are walked nearly always, so
    their tolerance is tight; its 10 ms mutex waits about every other time.
    The timeline's room is raised from 200 blocks a second per CPU
    (timeline_offcpu_rate) so that a loaded machine's other blocks leave
    none of the workload's out."""
    check_sampled_blocks(DEFAULT_SAMPLE_NS, True, "--timeline-offcpu-rate", "2000", timeline=True)


def test_blocked_stacks_walked_at_sched_exit_tp_where_it_exists():
    """profd finds the tracepoint (daemon/collect/collector.c) exactly when
    the kernel has it, and says so only when it does not."""
    with Profd("--interval", "1h") as d:
        d.profctl("flush")
        fallback = "no sched_exit_tp tracepoint" in d.read_log()
    have = kernel_has_sched_exit_tp()
    print(f"  kernel has sched_exit_tp: {have}; profd fell back to switch-out walks: {fallback}")
    assert fallback != have, d.read_log()


def test_sigterm_keeps_the_last_interval():
    with Profd("--interval", "1h", *EXACT_OFFCPU) as d:
        truth = run_workload(2)
        assert d.stop() == 0, d.read_log()
        again = Profd("--interval", "1h", *EXACT_OFFCPU, store=d.store, workdir=d.dir)
        again.start()
        try:
            check_blocked_times(again, truth, "after restart")
        finally:
            again.stop()


if __name__ == "__main__":
    require_root()
    run_tests([test_blocked_time_per_function_matches_truth, test_timer_wakeups_are_not_the_interrupted_threads,
               test_sampled_blocks_estimate_the_truth, test_auto_sample_is_the_sampling_period,
               test_defaults_estimate_the_truth,
               test_kernel_stack_memo_hits_are_the_walks,
               test_blocked_stacks_walked_at_sched_exit_tp_where_it_exists, test_sigterm_keeps_the_last_interval])
