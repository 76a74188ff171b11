"""Hostile CPython workload (tests/e2e/test_python.py, issue 41): a process
that corrupts its own frame chain while it burns CPU, so a profiler that
walks Python frames in its memory meets a loop and pointers into garbage.
It must bound its walk and count why, and keep running; the process itself
runs on, as the interpreter does not follow the corrupted link until the
frame returns (it is repaired before that).

How (CPython 3.11 only: struct _frame and _PyInterpreterFrame as 3.11's
Include/internal/pycore_frame.h lays them out on x86-64):
sys._getframe() gives the running function's frame object; its f_frame
(at offset 24: after the object header, 16 bytes, and f_back) is the
address of the _PyInterpreterFrame the interpreter runs, whose `previous`
(offset 48) is the caller's interpreter frame. Writing that field with
ctypes changes the chain every walker of this thread's frames follows
(the thread state's current frame, then `previous` each step out) while
the interpreter itself only reads it when the frame returns (and for
f_back, which nothing asks for meanwhile). Three phases, each corrupting
its own function's frame and burning SECONDS/4 of CPU, then restoring the
link (the burn itself is two frames inside, in
Hostile.corrupt_and_burn and spin):

  Hostile.loop     previous = the frame itself: a walk that follows it
                   never reaches the entry frame (an endless loop);
  Hostile.garbage  previous = a buffer of random bytes (mapped, readable),
                   whose own f_code points into more random bytes (not a
                   code object), whose `previous` is random (most likely no
                   mapping), is_entry 0 (so a walk goes on past it);
  Hostile.unmapped previous = an address in no mapping (a read fault);

then clean_spin burns SECONDS/4 with an intact chain: the walker must name
it again (no state poisoned by what came before).
Truth: {"pid":N,"process_cpu_ns":T,"cpu_ns":{function: CPU ns,...},
        "version":"3.11.x"}
Exits 3 (before doing anything) on a Python other than 3.11.
Usage: py_hostile.py [SECONDS [WARMUP]]  (SECONDS of CPU, default 2)"""
import ctypes
import random
import sys
import time

from pyworkload import finish, parse_args, warm_up

FRAMEOBJECT_F_FRAME = 24      # PyFrameObject.f_frame
IFRAME_F_CODE = 32            # _PyInterpreterFrame.f_code
IFRAME_PREVIOUS = 48          # _PyInterpreterFrame.previous
IFRAME_IS_ENTRY = 68          # _PyInterpreterFrame.is_entry (bool)
IFRAME_OWNER = 69             # _PyInterpreterFrame.owner (char)
# no mapping: below the lowest address Linux maps by default (vm.mmap_min_addr)
UNMAPPED = 0x1000 - 0x10


def current_iframe(frame):
    """The _PyInterpreterFrame address of a running function's frame object."""
    return ctypes.c_void_p.from_address(id(frame) + FRAMEOBJECT_F_FRAME).value


def spin(seconds):
    """Burns `seconds` of this thread's CPU; returns the CPU it used."""
    x, start = 7, time.thread_time_ns()
    deadline = start + int(seconds * 1e9)
    while time.thread_time_ns() < deadline:
        for _ in range(200):
            x = (x * 69069 + 1) & 0xFFFFFFFF
    return time.thread_time_ns() - start


class Hostile:
    def __init__(self, seconds):
        self.seconds = seconds
        rng = random.Random(41)
        # the fake interpreter frame and the fake code object it points to
        self.junk = ctypes.create_string_buffer(bytes(rng.randrange(256) for _ in range(4096)), 4096)
        base = ctypes.addressof(self.junk)
        ctypes.c_void_p.from_address(base + IFRAME_F_CODE).value = base + 1024
        ctypes.c_uint8.from_address(base + IFRAME_IS_ENTRY).value = 0
        ctypes.c_uint8.from_address(base + IFRAME_OWNER).value = 0

    def corrupt_and_burn(self, frame, previous):
        """Points the `previous` of `frame` (the caller's running frame)
        at `previous` (None: at the frame itself), burns, then repairs it.
        The burn is in spin, two frames inside the corrupted one: a walk
        from the thread's current frame meets the corruption on its
        third step. Exits 4 when the layout is not what it assumes (the
        interpreter frame's f_code is not the frame's code, or its
        previous not the caller's): then nothing was written."""
        iframe = current_iframe(frame)
        link = ctypes.c_void_p.from_address(iframe + IFRAME_PREVIOUS)
        saved = link.value
        if ctypes.c_void_p.from_address(iframe + IFRAME_F_CODE).value != id(frame.f_code) or \
                saved != current_iframe(frame.f_back):
            print("py_hostile.py: the frame layout is not 3.11's as assumed", file=sys.stderr)
            sys.exit(4)
        link.value = previous if previous is not None else iframe
        try:
            return spin(self.seconds)
        finally:
            link.value = saved

    def loop(self):
        return self.corrupt_and_burn(sys._getframe(), None)

    def garbage(self):
        return self.corrupt_and_burn(sys._getframe(), ctypes.addressof(self.junk))

    def unmapped(self):
        return self.corrupt_and_burn(sys._getframe(), UNMAPPED)


def clean_spin(seconds):
    return spin(seconds)


def main():
    if sys.version_info[:2] != (3, 11):
        print(f"py_hostile.py knows CPython 3.11's frame layout only, not {sys.version}", file=sys.stderr)
        sys.exit(3)
    seconds, warmup = parse_args(2.0)
    warm_up(warmup)
    h = Hostile(seconds / 4)
    cpu = {"Hostile.loop": h.loop(), "Hostile.garbage": h.garbage(), "Hostile.unmapped": h.unmapped(),
           "clean_spin": clean_spin(seconds / 4)}
    finish({"cpu_ns": cpu, "version": sys.version.split()[0]})


if __name__ == "__main__":
    main()
