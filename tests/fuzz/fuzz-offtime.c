/* libFuzzer target: an off-CPU timeline blob as read back from the store
 * (daemon/store/offtime-pack.c), which a damaged or crafted file controls.
 * What the decoder accepts must keep its promises (indexes in range,
 * starts sorted up to the span, no end that wraps), packed again must
 * decode to the same blocks, and a window never counts more of a block
 * than the block or the window holds. */
#include <errno.h>

#include "fuzz.h"
#include "macro.h"
#include "offtime-pack.h"

/* A block with its key spelt out, to compare two sets' blocks whatever
 * their keys' numbering. */
struct flat {
        uint64_t start, duration;
        int64_t process, stack;
        uint32_t tid;
        uint32_t state;
};

static int flat_cmp(const void *a, const void *b) {
        const struct flat *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->duration != y->duration)
                return x->duration < y->duration ? -1 : 1;
        if (x->process != y->process)
                return x->process < y->process ? -1 : 1;
        if (x->stack != y->stack)
                return x->stack < y->stack ? -1 : 1;
        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        return x->state < y->state ? -1 : x->state > y->state;
}

static struct flat *flatten(const struct offtime_set *b) {
        struct flat *f = calloc(b->n_blocks ? b->n_blocks : 1, sizeof(*f));

        if (!f)
                abort();
        for (size_t i = 0; i < b->n_blocks; i++) {
                const struct offtime_key *k = &b->keys[b->blocks[i].key];
                f[i] = (struct flat) { b->blocks[i].start_us, b->blocks[i].duration_us, k->process_id, k->stack_id,
                                       k->tid, k->state };
        }
        qsort(f, b->n_blocks, sizeof(*f), flat_cmp);
        return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct offtime_set b = {}, again = {};
        _cleanup_free_ uint8_t *packed = NULL;
        _cleanup_free_ struct flat *f1 = NULL, *f2 = NULL;
        size_t packed_size = 0;
        int r;

        r = offtime_unpack(data, size, &b);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(4 * b.n_keys + 3 * b.n_blocks <= size);
        for (size_t i = 0; i < b.n_keys; i++)
                FUZZ_CHECK(b.keys[i].process_id >= 0 && b.keys[i].stack_id >= 0);
        for (size_t i = 0; i < b.n_blocks; i++) {
                const struct offtime_block *k = &b.blocks[i];
                uint64_t at = 0, part;

                FUZZ_CHECK(k->key < b.n_keys);
                FUZZ_CHECK(k->start_us <= b.span_us);
                FUZZ_CHECK(k->duration_us <= UINT64_MAX - k->start_us);
                FUZZ_CHECK(i == 0 || b.blocks[i - 1].start_us <= k->start_us);
                /* a window of the span's first half */
                part = offtime_clip(k->start_us, k->duration_us, 0, b.span_us / 2, &at);
                FUZZ_CHECK(part <= k->duration_us && part <= b.span_us / 2 + 1);
                FUZZ_CHECK(part == 0 || (at >= k->start_us && at <= b.span_us / 2));
        }
        FUZZ_CHECK(b.n_blocks == 0 ? b.span_us == 0 : b.blocks[b.n_blocks - 1].start_us == b.span_us);

        FUZZ_CHECK(offtime_pack(b.keys, b.n_keys, b.blocks, b.n_blocks, &packed, &packed_size) == 0);
        FUZZ_CHECK(offtime_unpack(packed, packed_size, &again) == 0);
        FUZZ_CHECK(again.n_keys == b.n_keys && again.n_blocks == b.n_blocks && again.span_us == b.span_us);
        FUZZ_CHECK(packed_size <= size);
        f1 = flatten(&b);
        f2 = flatten(&again);
        FUZZ_CHECK(memcmp(f1, f2, b.n_blocks * sizeof(*f1)) == 0);
        offtime_set_done(&again);
        offtime_set_done(&b);
        return 0;
}
