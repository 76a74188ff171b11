#!/usr/bin/env python3
# Writes fuzz-hotspot-names' seed: a Method of com/example/Outer$Inner, int spin(int),
# in Outer.java, laid out from 0x1000 with JDK 17's offsets, as test-hotspot-names builds it.
import struct, sys
BASE = 0x1000
img = bytearray(0x1000)  # one page: the line table is read to its end
def put(addr, v, n): img[addr-BASE:addr-BASE+n] = v.to_bytes(n, 'little')
METHOD, CM, POOL, TAGS, KLASS, SYM = BASE, BASE+0x60, BASE+0x100, BASE+0x1a0, BASE+0x1c0, BASE+0x3a0
CODE = 50
table = bytes([0xff,0x00,0x14,0x21,0x2a,0xff,0x0c,0x01,0xff,0x3e,0x0e,0x00])
put(METHOD+8, CM, 8)
put(CM+8, POOL, 8); put(CM+28, 1, 2); put(CM+32, CODE, 2); put(CM+34, 1, 2); put(CM+36, 2, 2)
img[CM+48+CODE-BASE:CM+48+CODE+len(table)-BASE] = table
put(POOL+8, TAGS, 8); put(POOL+24, KLASS, 8); put(POOL+54, 3, 2); put(POOL+60, 6, 4)
put(TAGS, 6, 4)
syms = {1: b"spin", 2: b"(I)I", 3: b"Outer.java", 5: b"com/example/Outer$Inner"}
for i, tag in [(1,1),(2,1),(3,1),(4,7),(5,1)]:
    put(TAGS+4+i, tag, 1)
    if i in syms:
        a = SYM + 0x30*i
        put(a, 1, 4); put(a+4, len(syms[i]), 2); img[a+6-BASE:a+6+len(syms[i])-BASE] = syms[i]
        put(POOL+72+8*i, a, 8)
    else:
        put(POOL+72+8*i, KLASS, 8)
put(KLASS+24, SYM+0x30*5, 8); put(KLASS+232, POOL, 8)
open(sys.argv[1], 'wb').write(img)
