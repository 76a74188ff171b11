#!/bin/sh
# profd set-up on Debian 12, as root:
#   ./setup.sh run    install what building and running needs, build, install, start profiling
#   ./setup.sh test   install that and the test tools, build, run the whole test suite
set -eu
cd "$(dirname "$0")"

# What building and running profd needs, all from Debian's archive (the
# `run` command installs only these): the meson/ninja/gcc toolchain; clang
# and bpftool build the BPF programs and their skeleton; the -dev packages
# of the libraries profd and profctl link (their run-time libraries come
# with them); python3 embeds the schema and the flame graph's script at
# build time; scdoc builds the man pages; protobuf-c, zlib and pprof's
# profile.proto (golang-github-google-pprof-dev) build the pprof export;
# libcurl4-openssl-dev: the ClickHouse export and fleet queries speak HTTP
# through libcurl.
RUN_PACKAGES="meson ninja-build pkg-config gcc clang bpftool python3 scdoc
              libbpf-dev libsystemd-dev libjansson-dev libelf-dev libdw-dev libsqlite3-dev
              libdebuginfod-dev libiberty-dev
              protobuf-c-compiler libprotobuf-c-dev golang-github-google-pprof-dev zlib1g-dev
              libcurl4-openssl-dev"

# What only the tests add (the `test` command installs both lists):
#   llvm libclang-rt-14-dev   llvm-symbolizer and the libFuzzer runtimes (fuzzing)
#   valgrind                  profctl under memcheck
#   g++ libc6-dbg binutils elfutils   the symbolizer's oracle test: C++, libc to check
#   nodejs                    the JIT the perf-map test profiles
#   openjdk-17-jre-headless   the JVM whose VM-structs tables the hotspot-jvm test reads
#   openjdk-17-jdk-headless   javac, which compiles the Java ground truths of the hotspot test
#   e2fsprogs                 chattr (an immutable store)
#   debuginfod iproute2       the debuginfod test's server and its private network
#   systemd                   systemd-analyze, systemd-socket-activate (service tests)
#   sqlite3 util-linux        the privacy test: sqlite3 and runuser as user nobody
#   golang-go chromium        go tool pprof and a headless browser read the exports back
#   debhelper lintian dpkg-dev adduser   the Debian package test builds, checks and
#                             installs the package (adduser: its dependency)
#   clickhouse-server         the ClickHouse export and fleet query tests (two shards
#                             on loopback); `run` needs no ClickHouse
#   linux-perf libbpf-tools stress-ng bpfcc-tools bpftrace time   the benchmark's
#                             workloads and peers (its harness is tested)
TEST_PACKAGES="llvm libclang-rt-14-dev
               valgrind
               g++ libc6-dbg binutils elfutils
               nodejs openjdk-17-jre-headless openjdk-17-jdk-headless
               e2fsprogs
               debuginfod iproute2
               systemd
               sqlite3 util-linux
               golang-go chromium
               debhelper lintian dpkg-dev adduser
               clickhouse-server
               linux-perf libbpf-tools stress-ng bpfcc-tools bpftrace time"

die() { echo "setup.sh: $*" >&2; exit 1; }

# Installs the packages of the lists named ($RUN_PACKAGES, $TEST_PACKAGES)
# that are missing.
install_missing() {
    [ "$(id -u)" = 0 ] || die "run as root: it installs packages, and profd loads BPF programs"
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "Installing:$missing"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    fi
}

# Builds in build/, with the tests (true) or without them (false: their
# tools are not installed by `run`).
build() {
    if [ ! -f build/build.ninja ]; then
        meson setup build -Dtests="$1"
    else
        meson configure build -Dtests="$1"
    fi
    meson compile -C build
}

# Writes the closing line CI reads ("tests: N passed, N failed, N skipped")
# from meson's machine-readable logs, one per build directory tested, added
# up. A log that is missing (its build failed before any test ran) counts as
# one failure, so a broken build can never read as a clean run.
summarize() {
    python3 - "$@" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    try:
        log = open(path)
    except OSError as e:
        print(f"setup.sh: no test log {path} ({e.strerror}), counted as one failure", file=sys.stderr)
        counts["failed"] += 1
        continue
    with log:
        for line in log:
            r = json.loads(line)["result"]
            counts["passed" if r in ("OK", "EXPECTEDFAIL") else "skipped" if r == "SKIP" else "failed"] += 1
print("tests: {passed} passed, {failed} failed, {skipped} skipped".format(**counts))
PY
}

run_tests() {
    build true
    # The vendored vmlinux.h must keep building the BPF programs too.
    [ -f build-vendored/build.ninja ] || meson setup build-vendored -Dvmlinux_h=vendored >/dev/null
    meson compile -C build-vendored bpf/profd.skel.h
    status=0
    # The plain build: every suite but `sanitized`, the end-to-end tests
    # whose checks hold whichever build runs them: they run once, in the
    # sanitizer build below, where they find more (tests/e2e/meson.build).
    meson test -C build --print-errorlogs --no-suite sanitized || status=$?

    # The unit suite again and the end-to-end suite, built with
    # AddressSanitizer and UndefinedBehaviorSanitizer (not the bench suite:
    # its timings mean nothing under ASan; nor the soak and timing suites,
    # whose reasons tests/e2e/meson.build gives). -fno-sanitize-recover makes every UB
    # report fatal, so it fails the test instead of scrolling by; LeakSanitizer reports at
    # the exit of profd and profctl, and abort_on_error turns any report into
    # an abnormal exit. b_lundef=false, as meson advises for sanitizers: with
    # clang a shared library (the symbolizer's test fixture) leaves the
    # sanitizer runtime's symbols to the executable that loads it.
    # ASan and LSan write their reports to files (log_path, in place of
    # stderr) and still fail the process: most tests never look at how profd
    # exited, yet a leak found when it stops must fail the run. "No report"
    # is one more check the summary counts. (UBSan reports stay on stderr:
    # its runtime ignores log_path when linked with ASan's.)
    reports="$PWD/build-asan/sanitizer-reports"
    rm -rf "$reports" build-asan/meson-logs/testlog.json build-asan/sanitizer-check.json
    asan_logs=build-asan/meson-logs/testlog.json
    if [ -f build-asan/build.ninja ] ||
       meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
           -Dc_args=-fno-sanitize-recover=all >/dev/null; then
        mkdir -p "$reports"
        # What `meson install` puts in place (the service test installs the
        # build, man pages included, with --no-rebuild); meson test then
        # builds what the tests it runs depend on. Not `meson compile`
        # alone: its default target also builds the fuzzers and the
        # benchmarks' tools, which this run does not use (about a minute
        # of CPU).
        installed=$(meson introspect build-asan --targets |
            python3 -c 'import json, os, sys
for target in json.load(sys.stdin):
    if target.get("installed"):
        for path in target["filename"]:
            print(os.path.relpath(path, sys.argv[1]))' "$PWD/build-asan") || status=$?
        # shellcheck disable=SC2086 # one ninja target a word
        ninja -C build-asan $installed >/dev/null || status=$?
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$reports/asan" \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            meson test -C build-asan --timeout-multiplier 4 --suite unit --suite e2e --no-suite soak --no-suite timing --print-errorlogs || status=$?
        result=OK
        if [ -n "$(ls -A "$reports")" ]; then
            echo "setup.sh: AddressSanitizer reports of the build-asan run:" >&2
            cat "$reports"/* >&2
            result=FAIL
            status=1
        fi
        echo "{\"name\": \"build-asan: no sanitizer report from any process\", \"result\": \"$result\"}" \
            > build-asan/sanitizer-check.json
        asan_logs="$asan_logs build-asan/sanitizer-check.json"
    else
        echo "setup.sh: cannot configure the sanitizer build in build-asan" >&2
        status=1
    fi

    summarize build/meson-logs/testlog.json $asan_logs
    exit $status
}

start_profd() {
    meson install -C build --quiet
    sock=/run/profd/profd.sock
    store=/var/lib/profd/profd.db
    if [ -d /run/systemd/system ]; then
        # group profd (profd.socket's SocketGroup) before the units start
        systemd-sysusers
        systemctl daemon-reload
        systemctl enable --now profd.socket profd.service
        systemctl restart profd.service
    else
        # No systemd here: run it in the background, logging to a file.
        if [ -f /run/profd/profd.pid ] && kill "$(cat /run/profd/profd.pid)" 2>/dev/null; then
            sleep 1
        fi
        mkdir -p /run/profd /var/log
        # the log names processes and paths: root's alone, as the store
        umask 077
        touch /var/log/profd.log && chmod 0600 /var/log/profd.log
        setsid /usr/local/sbin/profd >>/var/log/profd.log 2>&1 </dev/null &
        echo $! > /run/profd/profd.pid
    fi
    i=0
    until /usr/local/bin/profctl status >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 100 ] || die "profd did not start; see $( [ -d /run/systemd/system ] && echo 'journalctl -u profd' || echo /var/log/profd.log)"
        sleep 0.1
    done
    echo
    echo "profd is profiling every CPU."
    echo "  socket: $sock"
    echo "  store:  $store"
    echo "Try, after a few seconds:  profctl query --since 1m --folded | head"
}

case "${1:-}" in
    run) install_missing $RUN_PACKAGES; build false; start_profd ;;
    test) install_missing $RUN_PACKAGES $TEST_PACKAGES; run_tests ;;
    *) echo "usage: $0 run|test" >&2; exit 2 ;;
esac
