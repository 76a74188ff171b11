"""Short-lived CPython workload (tests/e2e/test_python.py, issue 41): burns
SECONDS of CPU in <module>;main;Burner.burn from its first moments and
exits (run with stdin at /dev/null, it does not hold), so a profiler must
name its Python frames after the process is gone.
Truth: {"pid":N,"process_cpu_ns":T,"burn_cpu_ns":B}, B the CPU within burn.
Usage: py_short.py [SECONDS [WARMUP]]  (SECONDS of CPU, default 0.2)"""
import time

from pyworkload import finish, parse_args, warm_up


class Burner:
    def burn(self, seconds):
        x, start = 5, time.process_time_ns()
        deadline = start + int(seconds * 1e9)
        while time.process_time_ns() < deadline:
            for _ in range(200):
                x = (x * 69069 + 1) & 0xFFFFFFFF
        return time.process_time_ns() - start


def main():
    seconds, warmup = parse_args(0.2)
    warm_up(warmup)
    finish({"burn_cpu_ns": Burner().burn(seconds)})


if __name__ == "__main__":
    main()
