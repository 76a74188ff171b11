/* libFuzzer target: a timeline block as read back from the store
 * (daemon/store/timeline-pack.c), which a damaged or crafted file controls.
 * What the decoder accepts must keep its promises (indexes in range, times
 * sorted up to the span), and packed again must decode to the same samples. */
#include <errno.h>

#include "fuzz.h"
#include "macro.h"
#include "timeline-pack.h"

/* A sample with its key spelt out, to compare two blocks' samples whatever
 * their keys' numbering. */
struct flat {
        uint64_t time;
        int64_t process, stack;
        uint32_t tid;
};

static int flat_cmp(const void *a, const void *b) {
        const struct flat *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        if (x->process != y->process)
                return x->process < y->process ? -1 : 1;
        if (x->stack != y->stack)
                return x->stack < y->stack ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static struct flat *flatten(const struct timeline_block *b) {
        struct flat *f = malloc((b->n_samples ? b->n_samples : 1) * sizeof(*f));

        if (!f)
                abort();
        for (size_t i = 0; i < b->n_samples; i++) {
                const struct timeline_key *k = &b->keys[b->samples[i].key];
                f[i] = (struct flat) { b->samples[i].time_us, k->process_id, k->stack_id, k->tid };
        }
        qsort(f, b->n_samples, sizeof(*f), flat_cmp);
        return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct timeline_block b = {}, again = {};
        _cleanup_free_ uint8_t *packed = NULL;
        _cleanup_free_ struct flat *f1 = NULL, *f2 = NULL;
        size_t packed_size = 0;
        int r;

        r = timeline_unpack(data, size, &b);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0)
                return 0;
        /* every byte is a key or sample field at least */
        FUZZ_CHECK(3 * b.n_keys + 2 * b.n_samples <= size);
        for (size_t i = 0; i < b.n_keys; i++)
                FUZZ_CHECK(b.keys[i].process_id >= 0 && b.keys[i].stack_id >= 0);
        for (size_t i = 0; i < b.n_samples; i++) {
                FUZZ_CHECK(b.samples[i].key < b.n_keys);
                FUZZ_CHECK(b.samples[i].time_us <= b.span_us);
                FUZZ_CHECK(i == 0 || b.samples[i - 1].time_us <= b.samples[i].time_us);
        }
        FUZZ_CHECK(b.n_samples == 0 ? b.span_us == 0 : b.samples[b.n_samples - 1].time_us == b.span_us);

        FUZZ_CHECK(timeline_pack(b.keys, b.n_keys, b.samples, b.n_samples, &packed, &packed_size) == 0);
        FUZZ_CHECK(timeline_unpack(packed, packed_size, &again) == 0);
        FUZZ_CHECK(again.n_keys == b.n_keys && again.n_samples == b.n_samples && again.span_us == b.span_us);
        /* the shortest form: never longer than what was accepted */
        FUZZ_CHECK(packed_size <= size);
        f1 = flatten(&b);
        f2 = flatten(&again);
        FUZZ_CHECK(memcmp(f1, f2, b.n_samples * sizeof(*f1)) == 0);
        timeline_block_done(&again);
        timeline_block_done(&b);
        return 0;
}
