"""Ground-truth workload for CPython frames per thread (tests/e2e/
test_python.py, issue 41): two threads burn CPU under different Python
stacks, taking turns on the GIL, while the main thread waits:

  thread "alpha"  Thread.run -> AlphaWorker.run -> AlphaWorker.spin_alpha
  thread "beta"   Thread.run -> beta_main -> beta_spin

(AlphaWorker subclasses threading.Thread; beta is a Thread with a target.)
Each spins until it has used SECONDS of its own CPU (time.thread_time_ns).
Truth: {"pid":N,"tids":{"alpha":tid,"beta":tid},"cpu_ns":{"alpha":ns,"beta":ns}}
Usage: py_threads.py [SECONDS [WARMUP]]  (SECONDS of CPU per thread, default 1)"""
import threading
import time

from pyworkload import finish, parse_args, warm_up

tids, cpu = {}, {}


class AlphaWorker(threading.Thread):
    def __init__(self, seconds):
        super().__init__(name="alpha")
        self.seconds = seconds

    def spin_alpha(self):
        x, budget, start = 1, int(self.seconds * 1e9), time.thread_time_ns()
        while time.thread_time_ns() - start < budget:
            for _ in range(500):
                x = (x * 48271) % 2147483647
        return time.thread_time_ns() - start

    def run(self):
        tids["alpha"] = threading.get_native_id()
        cpu["alpha"] = self.spin_alpha()


def beta_spin(seconds):
    x, budget, start = 3, int(seconds * 1e9), time.thread_time_ns()
    while time.thread_time_ns() - start < budget:
        for _ in range(500):
            x = (x * 16807) % 2147483647
    return time.thread_time_ns() - start


def beta_main(seconds):
    tids["beta"] = threading.get_native_id()
    cpu["beta"] = beta_spin(seconds)


def main():
    seconds, warmup = parse_args(1.0)
    warm_up(warmup)
    threads = [AlphaWorker(seconds), threading.Thread(target=beta_main, args=(seconds,), name="beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    finish({"tids": tids, "cpu_ns": cpu})


if __name__ == "__main__":
    main()
