"""Ground-truth off-CPU workload for CPython frames (tests/e2e/
test_python.py, issue 41): three threads block, each from one Python
function, for a known time per round, and the workload prints how long
each was blocked (time.monotonic_ns around the blocking call):

  Sleeper.nap     time.sleep(BLOCK)
  read_pipe       os.read of a pipe that writer_thread writes BLOCK later
  wait_for_lock   threading.Lock.acquire of a lock holder_thread holds BLOCK

Every other wait (the helpers' sleeps, the rounds' handshakes, the main
thread's joins and hold) is in other functions, so a function's off-CPU
time is its measured block: what a thread waits for the GIL after its
call returned inside the call, so in the truth too.

Truth: {"pid":N,"functions":{qualname: blocked ns,...},
        "threads":{qualname: thread function's qualname,...},
        "tids":{qualname: native thread id,...}}
Usage: py_offcpu.py [SECONDS [WARMUP]]  (SECONDS of blocking per function,
default 2, in rounds of BLOCK = 0.2 s)"""
import os
import threading
import time

from pyworkload import finish, parse_args, warm_up

BLOCK = 0.2

blocked = {"Sleeper.nap": 0, "read_pipe": 0, "wait_for_lock": 0}
tids = {}


class Sleeper:
    def nap(self):
        t0 = time.monotonic_ns()
        time.sleep(BLOCK)
        blocked["Sleeper.nap"] += time.monotonic_ns() - t0


def read_pipe(fd):
    t0 = time.monotonic_ns()
    data = os.read(fd, 1)
    blocked["read_pipe"] += time.monotonic_ns() - t0
    return data


def wait_for_lock(lock):
    t0 = time.monotonic_ns()
    lock.acquire()
    blocked["wait_for_lock"] += time.monotonic_ns() - t0


def writer_wait():
    time.sleep(BLOCK)


def holder_wait():
    time.sleep(BLOCK)


def round_sync(barrier):
    barrier.wait()


def sleeper_thread(rounds):
    tids["Sleeper.nap"] = threading.get_native_id()
    s = Sleeper()
    for _ in range(rounds):
        s.nap()


def reader_thread(rounds, fd):
    tids["read_pipe"] = threading.get_native_id()
    for _ in range(rounds):
        read_pipe(fd)


def writer_thread(rounds, fd):
    for _ in range(rounds):
        writer_wait()
        os.write(fd, b"x")


# Each round: both meet at the barrier; the holder takes the lock; both
# meet again (the contender now knows it is held); the contender blocks on
# it while the holder sleeps BLOCK, then releases it.
def holder_thread(rounds, lock, barrier):
    for _ in range(rounds):
        round_sync(barrier)
        lock.acquire()
        round_sync(barrier)
        holder_wait()
        lock.release()


def contender_thread(rounds, lock, barrier):
    tids["wait_for_lock"] = threading.get_native_id()
    for _ in range(rounds):
        round_sync(barrier)
        round_sync(barrier)
        wait_for_lock(lock)
        lock.release()


def join_all(threads):
    for t in threads:
        t.join()


def main():
    seconds, warmup = parse_args(2.0)
    rounds = max(1, round(seconds / BLOCK))
    warm_up(warmup)
    r, w = os.pipe()
    lock, barrier = threading.Lock(), threading.Barrier(2)
    threads = [threading.Thread(target=sleeper_thread, args=(rounds,)),
               threading.Thread(target=reader_thread, args=(rounds, r)),
               threading.Thread(target=writer_thread, args=(rounds, w)),
               threading.Thread(target=holder_thread, args=(rounds, lock, barrier)),
               threading.Thread(target=contender_thread, args=(rounds, lock, barrier))]
    for t in threads:
        t.start()
    join_all(threads)
    finish({"functions": blocked, "tids": tids,
            "threads": {"Sleeper.nap": "sleeper_thread", "read_pipe": "reader_thread",
                        "wait_for_lock": "contender_thread"}})


if __name__ == "__main__":
    main()
