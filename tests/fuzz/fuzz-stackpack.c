/* libFuzzer target: a stack's frames as read back from the store
 * (stack_unpack), whose blobs a damaged or hostile store file may hold.
 * What it accepts must name ids >= 1 and be that blob's one encoding: a
 * packed blob packs again to the same bytes, a blob of the form before
 * schema 15 is those ids as little-endian 64-bit integers. */
#include <endian.h>
#include <errno.h>

#include "fuzz.h"
#include "stack-pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct varint_out o = {};
        int64_t *ids = NULL;
        size_t cap = 0, n = 0;
        int r;

        r = stack_unpack(data, size, &ids, &cap, &n);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0) {
                for (size_t i = 0; i < n; i++)
                        FUZZ_CHECK(ids[i] >= 1);
                if (size > 0 && data[size - 1] == STACK_PACK_MARK) {
                        FUZZ_CHECK(stack_pack(ids, n, &o) == 0);
                        FUZZ_CHECK(o.size == size && memcmp(o.data, data, size) == 0);
                } else {
                        FUZZ_CHECK(n * sizeof(int64_t) == size);
                        for (size_t i = 0; i < n; i++) {
                                uint64_t v;

                                memcpy(&v, data + i * sizeof(v), sizeof(v));
                                FUZZ_CHECK((int64_t) le64toh(v) == ids[i]);
                        }
                }
        }
        free(o.data);
        free(ids);
        return 0;
}
