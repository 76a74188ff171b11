#!/bin/sh
# profd set-up on Debian 12, as root:
#   ./setup.sh run    install what is missing, build, install, start profiling
#   ./setup.sh test   install what is missing, build, run the whole test suite
set -eu
cd "$(dirname "$0")"

# Build and test dependencies, all from Debian's archive; linux-perf and
# libbpf-tools are the benchmark's workload and peer (its harness is tested).
PACKAGES="meson ninja-build pkg-config gcc clang llvm bpftool libbpf-dev libsystemd-dev
          libjansson-dev libelf-dev libdw-dev libsqlite3-dev python3 binutils elfutils valgrind
          linux-perf libbpf-tools"

die() { echo "setup.sh: $*" >&2; exit 1; }

install_missing() {
    [ "$(id -u)" = 0 ] || die "run as root: it installs packages, and profd loads BPF programs"
    missing=""
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "Installing:$missing"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    fi
}

build() {
    if [ ! -f build/build.ninja ]; then
        meson setup build
    fi
    meson compile -C build
}

# Writes the closing line CI reads ("tests: N passed, N failed, N skipped")
# from meson's machine-readable log.
summarize() {
    python3 - "$1" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    counts["passed" if r in ("OK", "EXPECTEDFAIL") else "skipped" if r == "SKIP" else "failed"] += 1
print("tests: {passed} passed, {failed} failed, {skipped} skipped".format(**counts))
PY
}

run_tests() {
    build
    # The vendored vmlinux.h must keep building the BPF programs too.
    [ -f build-vendored/build.ninja ] || meson setup build-vendored -Dvmlinux_h=vendored >/dev/null
    meson compile -C build-vendored bpf/profd.skel.h
    status=0
    meson test -C build --print-errorlogs || status=$?
    summarize build/meson-logs/testlog.json
    exit $status
}

start_profd() {
    meson install -C build --quiet
    sock=/run/profd/profd.sock
    store=/var/lib/profd/profd.db
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload
        systemctl enable --now profd.service
        systemctl restart profd.service
    else
        # No systemd here: run it in the background, logging to a file.
        if [ -f /run/profd/profd.pid ] && kill "$(cat /run/profd/profd.pid)" 2>/dev/null; then
            sleep 1
        fi
        mkdir -p /run/profd /var/log
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
    run) install_missing; build; start_profd ;;
    test) install_missing; run_tests ;;
    *) echo "usage: $0 run|test" >&2; exit 2 ;;
esac
