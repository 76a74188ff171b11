#!/usr/bin/env python3
# Writes fuzz-hotspot-scopes' seeds into DIR: the debug info test-hotspot-scopes
# builds (M0 at bci 10 inlining M1 at bci 300 inlining M2 at bci 7; PcDescs at
# -1, 0x20, 0x40, 0x60 and the end), with the pc at each PcDesc, in both formats.
#   seed-hotspot-scopes.py DIR
import struct, sys

def put(out, v, x):
    low = 256 - 64 - x
    for i in range(5):
        if v < low or i == 4:
            out.append(v + x)
            return
        v -= low
        out.append(low + v % 64 + x)
        v >>= 6

def seed(pc, x, check_root):
    data = bytearray([0xff])
    def scope(sender, index, bci):
        at = len(data)
        for v in (sender, index, bci + 1, 0, 0, 0):
            put(data, v, x)
        return at
    outer = scope(0, 1, 10)
    middle = scope(outer, 2, 300)
    inner = scope(middle, 3, 7)
    pcs = b''.join(struct.pack('<iiii', p, d, 0, 0)
                   for p, d in [(-1, 0), (0x20, outer), (0x40, inner), (0x60, 0), (0x7fffffff, 0)])
    meta = struct.pack('<QQQQ', 0x7f0000001000, 0x7f0000002000, 0x7f0000003000, 0x7f0000009000)
    head = struct.pack('<iHHBBBB', pc, len(pcs), len(meta), x, check_root, 16, 0)
    return head + pcs + meta + bytes(data)

for pc in (0x20, 0x31, 0x40, 0x60):
    for x in (0, 1):
        open(f'{sys.argv[1]}/pc{pc:x}-x{x}', 'wb').write(seed(pc, x, pc & 1 ^ 1))
