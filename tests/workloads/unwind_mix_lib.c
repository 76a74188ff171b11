/* The shared-library half of the mixed-stack workload (unwind_mix.c, issue
 * 12): mix_lib_enter -> mix_lib_middle -> the caller's callback, through a
 * function pointer. Built twice (tests/workloads/meson.build): as
 * libunwind_mix_nofp.so (-O2 -fomit-frame-pointer), loaded by the
 * frame-pointer build of the program, and as libunwind_mix_fp.so
 * (-fno-omit-frame-pointer), loaded by the build without frame pointers, so
 * each stack crosses the boundary twice: program -> library -> program. */
#include <stdint.h>

#include "unwind_workload.h"


typedef uint64_t (*mix_callback)(uint64_t n, uint64_t x);

uint64_t mix_lib_enter(mix_callback cb, uint64_t n, uint64_t x);
/* Hidden: called directly, not through the PLT, and still a named symbol. */
__attribute__((visibility("hidden"))) uint64_t mix_lib_middle(mix_callback cb, uint64_t n, uint64_t x);

NOINLINE uint64_t mix_lib_middle(mix_callback cb, uint64_t n, uint64_t x) {
        uint64_t r = cb(n, x ^ 0x5bd1e995);
        KEEP_FRAME();
        return r + 1;
}

NOINLINE uint64_t mix_lib_enter(mix_callback cb, uint64_t n, uint64_t x) {
        uint64_t r = mix_lib_middle(cb, n, x + 7);
        KEEP_FRAME();
        return r ^ 3;
}
