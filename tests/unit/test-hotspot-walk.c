/* HotSpot's walker, its pure parts: the pseudo-frame encoding of a
 * Method* (8-byte aligned, up to the top of x86-64's user space), the
 * segment map's walk back to a blob (hotspot_segmap_find, the reference
 * of bpf/hotspot.bpf.h's hs_find_blob) on maps laid out as HotSpot lays
 * them (CodeHeap::mark_segmap_as_used: 0, 1, ..., 254, then 1 again), the
 * walker's slot made from JDK 17's VM structs (the values of the capture
 * tests/data/hotspot/vmstructs-jdk17.txt) and what it refuses, and which
 * failures of the VM-structs reader may be a JVM still starting. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot.h"
#include "macro.h"
#include "tests.h"

static void test_encoding(void) {
        /* a Method* is 8-byte aligned: /16 lost its low bit */
        uint64_t methods[] = { 0x7f3a1c0d2a08ULL, 0x800000008ULL, 8, PROFD_RT_FRAME_CODE_LIMIT - 8 };

        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                uint64_t ip = PROFD_RT_FRAME(PROFD_RUNTIME_HOTSPOT, methods[i], 17);

                CHECK(PROFD_RT_FRAME_IS(ip));
                CHECK_INT_EQ(PROFD_RT_FRAME_ID(ip), PROFD_RUNTIME_HOTSPOT);
                CHECK(PROFD_RT_FRAME_CODE(ip) == methods[i]);
                CHECK_INT_EQ(PROFD_RT_FRAME_OFFSET(ip), 17);
        }
        /* a blob's offset saturates at 64 KiB */
        CHECK_INT_EQ(PROFD_RT_FRAME_OFFSET(PROFD_RT_FRAME(PROFD_RUNTIME_HOTSPOT_CODE, 0x7f0000001000ULL, 0x12345)),
                     0xffff);
        CHECK_INT_EQ(PROFD_RT_FRAME_ID(PROFD_RT_FRAME(PROFD_RUNTIME_HOTSPOT_CODE, 0x7f0000001000ULL, 1)),
                     PROFD_RUNTIME_HOTSPOT_CODE);
        /* CPython's 16-aligned objects keep their meaning */
        CHECK(PROFD_RT_FRAME_CODE(PROFD_RT_FRAME(PROFD_RUNTIME_PYTHON, 0x7f0012345670ULL, 3)) == 0x7f0012345670ULL);
        /* above the limit the code is not what was given: the walkers check */
        CHECK(PROFD_RT_FRAME_CODE(PROFD_RT_FRAME(PROFD_RUNTIME_HOTSPOT, PROFD_RT_FRAME_CODE_LIMIT, 0)) !=
              PROFD_RT_FRAME_CODE_LIMIT);
        /* a pseudo-frame never passes for a leaf kept in the key */
        CHECK(PROFD_RT_FRAME(PROFD_RUNTIME_HOTSPOT, 8, 0) >= PROFD_KEY_LEAF_MAX);
}

/* A block of n segments from segment first, as HotSpot marks it used. */
static void mark_used(uint8_t *map, uint64_t first, uint64_t n) {
        unsigned v = 0;

        for (uint64_t i = 0; i < n; i++) {
                map[first + i] = (uint8_t) v++;
                if (v == 0xff)
                        v = 1;
        }
}

static void test_segmap(void) {
        enum { N = 20000 };
        uint8_t *map = malloc(N);
        uint64_t seg = 0;

        CHECK(map);
        if (!map)
                return;
        memset(map, 0xff, N);
        mark_used(map, 0, 3);          /* a small blob */
        mark_used(map, 3, 1);          /* a blob of one segment */
        mark_used(map, 4, 3000);       /* a large one: 12 hops from its end */
        /* a free block after them stays 0xff */
        mark_used(map, 4000, 5);

        CHECK_INT_EQ(hotspot_segmap_find(map, N, 0, 16, &seg), 0);
        CHECK_INT_EQ(seg, 0);
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 2, 16, &seg), 0);
        CHECK_INT_EQ(seg, 0);
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 3, 16, &seg), 0);
        CHECK_INT_EQ(seg, 3);
        for (uint64_t s = 4; s < 4 + 3000; s += 37) {
                CHECK_INT_EQ(hotspot_segmap_find(map, N, s, 16, &seg), 0);
                CHECK_INT_EQ(seg, 4);
        }
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 4 + 2999, 16, &seg), 0);
        CHECK_INT_EQ(seg, 4);
        /* more hops than allowed: not a block's start, never a wrong one */
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 4 + 2999, 4, &seg), -EBADMSG);
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 4004, 16, &seg), 0);
        CHECK_INT_EQ(seg, 4000);
        /* free */
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 3500, 16, &seg), -ENOENT);
        /* garbage: a hop into a free segment, a tag that leads before
         * the map's start */
        map[10000] = 200;
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 10000, 16, &seg), -ENOENT);
        {
                const uint8_t before[] = { 3, 0xfe };

                CHECK_INT_EQ(hotspot_segmap_find(before, 2, 1, 16, &seg), -EBADMSG);
                CHECK_INT_EQ(hotspot_segmap_find(before, 2, 0, 16, &seg), -EBADMSG);
        }
        map[5] = 0;
        map[6] = 1;     /* a hop onto a tag 0: a block's start */
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 6, 16, &seg), 0);
        CHECK_INT_EQ(seg, 5);
        /* a loop of hops never ends at a start */
        map[12000] = 0xfe;
        map[12000 - 0xfe] = 0xfe;
        map[12000 - 2 * 0xfe] = 0xfe;
        CHECK_INT_EQ(hotspot_segmap_find(map, N, 12000, 2, &seg), -EBADMSG);
        CHECK_INT_EQ(hotspot_segmap_find(map, N, N, 16, &seg), -EBADMSG);
        free(map);
}

/* JDK 17's, as its tables describe them (the capture's values). */
static struct hotspot_vmstructs jdk17(void) {
        struct hotspot_vmstructs vs;

        memset(&vs, 0xff, sizeof(vs)); /* every offset HOTSPOT_NO_FIELD */
        vs.version_major = 17;
        vs.version_minor = 0;
        vs.version_security = 13;
        vs.code_low = 0x7f0000000000ULL;
        vs.code_high = 0x7f000f000000ULL;
        vs.n_heaps = 3;
        vs.heaps[0] = (struct hotspot_code_heap) { 0x7f0000000000ULL, 0x7f0000590000ULL, 0x7f1000000000ULL };
        vs.heaps[1] = (struct hotspot_code_heap) { 0x7f0000590000ULL, 0x7f0007ac0000ULL, 0x7f1000010000ULL };
        vs.heaps[2] = (struct hotspot_code_heap) { 0x7f0007ac0000ULL, 0x7f000f000000ULL, 0x7f1000100000ULL };
        vs.log2_segment_size = 7;
        vs.heap_block_size = 16;
        vs.call_stub_return_address = 0x7f00000123abULL;
        vs.blob_size = 104;
        vs.blob_name = 96;
        vs.blob_frame_size = 28;
        vs.blob_frame_complete_offset = 20;
        vs.blob_code_begin = 32;
        vs.blob_code_end = 40;
        vs.method_const_method = 8;
        vs.const_method_size = 48;
        vs.interp_sender_sp = -1;
        vs.interp_last_sp = -2;
        vs.interp_method = HOTSPOT_NO_SLOT;
        vs.interp_bcp = HOTSPOT_NO_SLOT;
        return vs;
}

static void test_runtime_make(void) {
        struct hotspot_vmstructs vs = jdk17();
        struct profd_runtime rt;
        uint64_t lo = 0, hi = 0;

        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), 0);
        CHECK_INT_EQ(rt.id, PROFD_RUNTIME_HOTSPOT);
        CHECK_INT_EQ(rt.version, 17);
        CHECK(lo == vs.code_low && hi == vs.code_high);
        CHECK_INT_EQ(rt.hotspot.n_heaps, 3);
        for (unsigned i = 0; i < 3; i++) {
                CHECK(rt.hotspot.heaps[i].low == vs.heaps[i].low);
                CHECK(rt.hotspot.heaps[i].high == vs.heaps[i].high);
                CHECK(rt.hotspot.heaps[i].segmap == vs.heaps[i].segmap_low);
        }
        CHECK_INT_EQ(rt.hotspot.log2_segment, 7);
        CHECK_INT_EQ(rt.hotspot.heap_block, 16);
        CHECK_INT_EQ(rt.hotspot.code_offsets, 0);
        CHECK_INT_EQ(rt.hotspot.blob_name, 96);
        CHECK_INT_EQ(rt.hotspot.blob_frame_size, 28);
        CHECK_INT_EQ(rt.hotspot.blob_frame_complete, 20);
        CHECK_INT_EQ(rt.hotspot.blob_code_begin, 32);
        CHECK_INT_EQ(rt.hotspot.method_const_method, 8);
        CHECK_INT_EQ(rt.hotspot.const_method_size, 48);
        /* x86_64 JDK 17 exports sender_sp and last_sp only: the others
         * from last_sp, as frame_x86.hpp lays them out */
        CHECK_INT_EQ(rt.hotspot.interp_sender_sp, -1);
        CHECK_INT_EQ(rt.hotspot.interp_method, -3);
        CHECK_INT_EQ(rt.hotspot.interp_bcp, -8);
        CHECK(rt.hotspot.call_stub_return == vs.call_stub_return_address);

        /* exported slots win */
        vs.interp_method = -4;
        vs.interp_bcp = -9;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), 0);
        CHECK_INT_EQ(rt.hotspot.interp_method, -4);
        CHECK_INT_EQ(rt.hotspot.interp_bcp, -9);
        /* none at all: the walker's interpreter step refuses */
        vs.interp_method = vs.interp_bcp = vs.interp_last_sp = HOTSPOT_NO_SLOT;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), 0);
        CHECK_INT_EQ(rt.hotspot.interp_method, PROFD_HOTSPOT_NO_SLOT);
        CHECK_INT_EQ(rt.hotspot.interp_bcp, PROFD_HOTSPOT_NO_SLOT);

        /* JDK 23's offsets from the blob */
        vs = jdk17();
        vs.blob_code_begin = HOTSPOT_NO_FIELD;
        vs.blob_code_offset = 24;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), 0);
        CHECK_INT_EQ(rt.hotspot.code_offsets, 1);
        CHECK_INT_EQ(rt.hotspot.blob_code_begin, 24);

        /* what the slot cannot hold */
        vs = jdk17();
        vs.n_heaps = PROFD_HOTSPOT_HEAPS + 1;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), -EPROTONOSUPPORT);
        vs = jdk17();
        vs.blob_name = 128; /* past what the walker reads of a blob */
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), -EPROTONOSUPPORT);
        vs = jdk17();
        vs.blob_frame_complete_offset = HOTSPOT_NO_FIELD;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), -EPROTONOSUPPORT);
        vs = jdk17();
        vs.const_method_size = 70000;
        CHECK_INT_EQ(hotspot_runtime_make(&vs, &rt, &lo, &hi), -EPROTONOSUPPORT);
}

static void test_pending(void) {
        struct hotspot_vmstructs vs = jdk17();

        /* the launcher's JVM before CodeCache::initialize */
        CHECK(hotspot_vmstructs_pending(-EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeCache::_low_bound", NULL));
        CHECK(hotspot_vmstructs_pending(-EIO, HOTSPOT_VMSTRUCTS_READ_VALUE, "CodeCache::_heaps", NULL));
        CHECK(hotspot_vmstructs_pending(-EIO, HOTSPOT_VMSTRUCTS_READ_VALUE, "CodeHeap::_memory", NULL));
        /* libjvm mapped, its static initialisers not run yet: strides of 0 */
        CHECK(hotspot_vmstructs_pending(-EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, "gHotSpotVMStructs", NULL));
        /* tables that lack a field stay so; memory is not the JVM's doing */
        CHECK(!hotspot_vmstructs_pending(-EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_heaps", NULL));
        CHECK(!hotspot_vmstructs_pending(-ENOMEM, HOTSPOT_VMSTRUCTS_OK, NULL, NULL));
        /* read, every heap in place */
        CHECK(!hotspot_vmstructs_pending(0, HOTSPOT_VMSTRUCTS_OK, NULL, &vs));
        /* read between two heaps' set-up */
        vs.n_heaps = 2;
        CHECK(hotspot_vmstructs_pending(0, HOTSPOT_VMSTRUCTS_OK, NULL, &vs));
}

int main(void) {
        test_encoding();
        test_segmap();
        test_runtime_make();
        test_pending();
        TESTS_DONE();
}
