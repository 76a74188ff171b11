/* libFuzzer target: a JVM's VM-structs tables as profd reads them from the
 * process. The input is a memory image mapped at 0x1000 whose first bytes
 * are the layout variables and table pointers, one 8-byte slot per symbol
 * in enum hotspot_symbol order; everything else the reader follows is
 * wherever those point. Invariants: no read outside the image, every
 * failure a named reason, and what a success returns is bounded as the
 * header promises. */
#include <errno.h>

#include "fuzz.h"
#include "hotspot-vmstructs.h"

#define IMAGE_BASE UINT64_C(0x1000)

struct image {
        const uint8_t *bytes;
        size_t size;
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        const struct image *m = userdata;

        if (addr < IMAGE_BASE || addr - IMAGE_BASE > m->size || size > m->size - (addr - IMAGE_BASE))
                return -EFAULT;
        memcpy(buf, m->bytes + (addr - IMAGE_BASE), size);
        return 0;
}

static void check_offset(uint32_t off) {
        FUZZ_CHECK(off == HOTSPOT_NO_FIELD || off < HOTSPOT_VMSTRUCTS_OFFSET_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint64_t symbols[_HOTSPOT_SYM_MAX];
        struct image m = { data, size };
        struct hotspot_vmstructs vs;
        enum hotspot_vmstructs_reason reason = _HOTSPOT_VMSTRUCTS_REASON_MAX;
        const char *what = NULL;
        int r;

        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                symbols[s] = IMAGE_BASE + 8 * s;
        r = hotspot_vmstructs_read(symbols, image_read, &m, &vs, &reason, &what);
        FUZZ_CHECK((unsigned) reason < _HOTSPOT_VMSTRUCTS_REASON_MAX);
        FUZZ_CHECK(strcmp(hotspot_vmstructs_reason_name(reason), "unknown") != 0);
        if (r < 0) {
                FUZZ_CHECK(r == -EIO || r == -EBADMSG || r == -EPROTONOSUPPORT);
                FUZZ_CHECK(reason != HOTSPOT_VMSTRUCTS_OK);
                FUZZ_CHECK(!what || strlen(what) < HOTSPOT_VMSTRUCTS_NAME_MAX);
                return 0;
        }
        FUZZ_CHECK(reason == HOTSPOT_VMSTRUCTS_OK);
        FUZZ_CHECK(vs.n_heaps >= 1 && vs.n_heaps <= HOTSPOT_CODE_HEAPS_MAX);
        FUZZ_CHECK(vs.code_low < vs.code_high);
        for (uint32_t i = 0; i < vs.n_heaps; i++) {
                FUZZ_CHECK(vs.heaps[i].low < vs.heaps[i].high);
                FUZZ_CHECK(vs.heaps[i].low >= vs.code_low && vs.heaps[i].high <= vs.code_high);
                FUZZ_CHECK(hotspot_vmstructs_in_code(&vs, vs.heaps[i].low));
        }
        FUZZ_CHECK(!hotspot_vmstructs_in_code(&vs, vs.code_high));
        FUZZ_CHECK(vs.log2_segment_size <= 20);
        check_offset(vs.blob_name);
        check_offset(vs.blob_frame_size);
        check_offset(vs.nmethod_method);
        check_offset(vs.method_const_method);
        check_offset(vs.const_method_constants);
        check_offset(vs.constant_pool_holder);
        check_offset(vs.klass_name);
        check_offset(vs.symbol_length);
        check_offset(vs.symbol_body);
        FUZZ_CHECK(vs.blob_name != HOTSPOT_NO_FIELD && vs.symbol_body != HOTSPOT_NO_FIELD);
        return 0;
}
