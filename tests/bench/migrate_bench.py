#!/usr/bin/env python3
"""Time to READY=1, and schema 8's conversion of a schema 7 store (issue 14).

    migrate_bench.py PROFD PROFCTL STORE WORKDIR [--wait-migration] [PROFD OPTIONS...]

Copies STORE into WORKDIR (the original is never touched), starts PROFD on
the copy (`--config /dev/null -v`, defaults otherwise, plus the options
given, e.g. --kinds=none) with NOTIFY_SOCKET, and prints the seconds from
exec to READY=1. With --wait-migration, then polls `profctl status --json`
every second until it has no store_migration, and prints when that was,
the largest size of the store and its WAL meanwhile, the exit time after
SIGTERM and, from profd's debug log (WORKDIR/profd.log, lines prefixed
with the seconds since exec), the conversion steps' count and times.

A schema 7 store: main's generator from before schema 8, e.g.
    git worktree add /work/wt/s7 eaac5b0 && cd /work/wt/s7 &&
    meson setup build -Dtests=true && meson compile -C build tests/bench/gen_store &&
    build/tests/bench/gen_store --hours 3 --quiet s7-3h.db
Figures: docs/performance.md, Store size, "Migration". Needs root for
profd's defaults (BPF); --kinds=none does not.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time


def main():
    profd, profctl, src, work = sys.argv[1:5]
    wait = "--wait-migration" in sys.argv
    extra = [a for a in sys.argv[5:] if a != "--wait-migration"]
    os.makedirs(work, exist_ok=True)
    store = os.path.join(work, "store.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.unlink(store + suffix)
    shutil.copyfile(src, store)
    os.chmod(store, 0o600)
    sock_path = os.path.join(work, "notify.sock")
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(sock_path)
    notify.settimeout(0.05)
    qsock = os.path.join(work, "profd.sock")
    log_path = os.path.join(work, "profd.log")
    log = open(log_path, "wb")
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    size0 = os.path.getsize(store)
    started = time.monotonic()
    proc = subprocess.Popen([profd, "--config", "/dev/null", "-v", "--store", store, "--socket", qsock] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)

    def pump():
        for line in proc.stderr:
            log.write(b"%.3f " % (time.monotonic() - started) + line)
        log.flush()
    pumper = threading.Thread(target=pump, daemon=True)
    pumper.start()
    ready = None
    try:
        while ready is None:
            if proc.poll() is not None:
                raise SystemExit(f"profd exited {proc.returncode}")
            try:
                msg = notify.recv(4096).decode()
            except socket.timeout:
                if time.monotonic() - started > 900:
                    raise SystemExit("no READY=1 in 900 s")
                continue
            if "READY=1" in msg.split("\n"):
                ready = time.monotonic() - started
        print(f"READY=1 after {ready:.2f} s (store {size0 / 1e6:.1f} MB)", flush=True)

        # keep reading: profd sends STATUS= after every drain, and a full
        # socket would block its event loop (systemd always reads)
        def drain_notify():
            notify.settimeout(None)
            while True:
                try:
                    notify.recv(4096)
                except OSError:
                    return
        threading.Thread(target=drain_notify, daemon=True).start()
        if not wait:
            return
        peak = 0
        done = None
        first_status = None
        while True:
            size = sum(os.path.getsize(store + s) for s in ("", "-wal") if os.path.exists(store + s))
            peak = max(peak, size)
            out = subprocess.run([profctl, "--socket", qsock, "status", "--json"], capture_output=True, text=True)
            if out.returncode == 0:
                st = json.loads(out.stdout)
                m = st.get("store_migration")
                if first_status is None:
                    first_status = m
                    print(f"first status: store_migration {json.dumps(m)}", flush=True)
                if m is None:
                    done = time.monotonic() - started
                    break
                if int(time.monotonic() - started) % 15 == 0:
                    print(f"  {time.monotonic() - started:.0f} s: {json.dumps(m)} file {size / 1e6:.1f} MB", flush=True)
            if time.monotonic() - started > 3600:
                break
            time.sleep(1)
        size = sum(os.path.getsize(store + s) for s in ("", "-wal") if os.path.exists(store + s))
        print(f"conversion done {done:.1f} s after exec ({done - ready:.1f} s after READY); "
              f"file {size0 / 1e6:.1f} MB before, peak {peak / 1e6:.1f} MB (db+wal), {size / 1e6:.1f} MB after",
              flush=True)
        # a drain or two more: freed pages given back by retention's vacuum
        time.sleep(25)
        size = sum(os.path.getsize(store + s) for s in ("", "-wal") if os.path.exists(store + s))
        print(f"25 s later: {size / 1e6:.1f} MB", flush=True)
    finally:
        t_term = time.monotonic()
        proc.terminate()
        try:
            proc.wait(600)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(f"exit {time.monotonic() - t_term:.1f} s after SIGTERM (at {t_term - started:.1f} s)", flush=True)
        pumper.join(10)
        log.close()
    text = open(log_path, errors="replace").read()
    steps = [float(x) for x in re.findall(r"to blocks in ([0-9.]+) ms", text)]
    rows = [int(x) for x in re.findall(r"drains \(([0-9]+) sample rows\) to blocks", text)]
    if steps:
        steps_sorted = sorted(steps)
        print(f"steps: {len(steps)}, rows {sum(rows)}, median {steps_sorted[len(steps) // 2]:.1f} ms, "
              f"p99 {steps_sorted[int(len(steps) * 0.99)]:.1f} ms, max {steps_sorted[-1]:.1f} ms, "
              f"sum {sum(steps) / 1000:.1f} s")
    for line in text.splitlines():
        if "packed into" in line or "every schema 7 sample" in line or "Migrating" in line:
            print("log:", line.strip())


main()
