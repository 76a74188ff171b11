#!/bin/bash
# Runs each libFuzzer target for a bounded time on a copy of its committed
# corpus; fails if any of them finds a crash, leak, UB or timeout.
#
#   run-fuzzers.sh SRCDIR ARTIFACT_DIR FUZZER...   (fuzz-NAME uses SRCDIR/corpus/NAME
#                                                   and SRCDIR/NAME.dict if present)
#   run-fuzzers.sh --skip REASON                   (exit 77: meson reports SKIP)
#
# FUZZ_SECONDS (default 6) sets the time per target, e.g. FUZZ_SECONDS=600
# for a longer hunt than the test suite can afford.
set -u

if [ "${1:-}" = "--skip" ]; then
        # Loud on purpose: a skipped fuzz run looks like a pass in a summary.
        echo "########################################################################" >&2
        echo "# FUZZ TESTS NOT RUN: ${2:-no reason given}" >&2
        echo "# Install clang and libclang-rt-14-dev (Debian) and reconfigure meson." >&2
        echo "########################################################################" >&2
        exit 77
fi

srcdir=$1
artifacts=$2
shift 2
seconds=${FUZZ_SECONDS:-6}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/profd-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$artifacts" || exit 1

# Our own settings rather than meson's defaults: leaks count as failures,
# and reports come with symbolized stacks.
export ASAN_OPTIONS=detect_leaks=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:symbolize=1

# One fuzzer per CPU at a time (FUZZ_JOBS overrides): each still gets its
# own core for its seconds, so execution counts stay comparable between
# runs on one machine, and the test takes half the time on two CPUs.
jobs=${FUZZ_JOBS:-$(nproc)}

# Runs one target into $tmp/NAME.log and $tmp/NAME.rc.
run_one() {
        local fuzzer=$1 name corpus log args=()

        name=$(basename "$fuzzer")
        name=${name#fuzz-}
        corpus=$tmp/corpus-$name
        log=$tmp/$name.log
        # A copy, because libFuzzer adds the inputs it finds to its corpus
        # directory and the source tree must stay as committed.
        cp -r "$srcdir/corpus/$name" "$corpus" || { echo 1 >"$tmp/$name.rc"; return; }
        [ -f "$srcdir/$name.dict" ] && args+=("-dict=$srcdir/$name.dict")

        # -timeout: one input running a second is a hang for parsers this
        # small; -rss_limit_mb: far above what they need, below what hurts CI.
        "$fuzzer" "${args[@]}" \
                -max_total_time="$seconds" \
                -timeout=10 \
                -rss_limit_mb=2048 \
                -print_final_stats=1 \
                -artifact_prefix="$artifacts/$name-" \
                "$corpus" >"$log" 2>&1
        echo $? >"$tmp/$name.rc"
}

failed=0
running=0
for fuzzer in "$@"; do
        name=$(basename "$fuzzer")
        name=${name#fuzz-}
        if [ ! -d "$srcdir/corpus/$name" ]; then
                echo "$name: no corpus at $srcdir/corpus/$name" >&2
                failed=1
                continue
        fi
        if [ "$running" -ge "$jobs" ]; then
                wait -n
                running=$((running - 1))
        fi
        run_one "$fuzzer" &
        running=$((running + 1))
done
wait

# The reports, in the order of the arguments.
for fuzzer in "$@"; do
        name=$(basename "$fuzzer")
        name=${name#fuzz-}
        [ -f "$tmp/$name.rc" ] || continue
        log=$tmp/$name.log
        corpus=$tmp/corpus-$name
        rc=$(cat "$tmp/$name.rc")

        execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
        seed=$(sed -n 's/^INFO: Seed: *\([0-9]*\).*/\1/p' "$log" | head -n 1)
        n_seeds=$(find "$srcdir/corpus/$name" -type f | wc -l)
        n_corpus=$(find "$corpus" -type f | wc -l)
        if [ "$rc" -ne 0 ]; then
                failed=1
                echo "FAIL $name: exit status $rc after ${execs:-?} executions (-seed=${seed:-?})"
                echo "---- last lines of the libFuzzer log ----"
                tail -n 80 "$log"
                echo "---- reproduce: $fuzzer <artifact in $artifacts> ----"
        elif [ -z "$execs" ] || [ "$execs" -eq 0 ]; then
                # libFuzzer did not run as expected (wrong flags, a target
                # that exits early): that must not pass silently.
                failed=1
                echo "FAIL $name: no executions reported"
                tail -n 20 "$log"
        else
                echo "ok   $name: $execs executions in ${seconds}s, corpus $n_seeds -> $n_corpus inputs (-seed=${seed:-?})"
        fi
done
exit "$failed"
