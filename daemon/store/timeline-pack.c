/* A drain's timeline packed as varints and unpacked with every bound checked. */
#include "timeline-pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "varint.h"

static int key_cmp(const void *a, const void *b) {
        const struct timeline_key *x = a, *y = b;

        if (x->process_id != y->process_id)
                return x->process_id < y->process_id ? -1 : 1;
        if (x->stack_id != y->stack_id)
                return x->stack_id < y->stack_id ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Keys sorted with their old index, to renumber the samples' keys. */
struct key_at {
        struct timeline_key key;
        uint32_t old;
};

static int key_at_cmp(const void *a, const void *b) {
        const struct key_at *x = a, *y = b;
        int c = key_cmp(&x->key, &y->key);

        return c ? c : (x->old < y->old ? -1 : x->old > y->old);
}

static int sample_cmp(const void *a, const void *b) {
        const struct timeline_sample *x = a, *y = b;

        if (x->time_us != y->time_us)
                return x->time_us < y->time_us ? -1 : 1;
        return x->key < y->key ? -1 : x->key > y->key;
}

int timeline_pack(const struct timeline_key *keys, size_t n_keys, const struct timeline_sample *samples,
                  size_t n_samples, uint8_t **ret_data, size_t *ret_size) {
        _cleanup_free_ struct key_at *ka = NULL;
        _cleanup_free_ uint32_t *renumber = NULL;
        _cleanup_free_ struct timeline_sample *s = NULL;
        struct varint_out o = {};
        uint64_t prev_time = 0;
        int64_t prev_proc = 0, prev_stack = 0;

        if (n_keys > UINT32_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n_keys; i++)
                if (keys[i].process_id < 0 || keys[i].stack_id < 0)
                        return -EINVAL;
        for (size_t i = 0; i < n_samples; i++)
                if (samples[i].key >= n_keys)
                        return -EINVAL;

        ka = malloc(MAX(n_keys, (size_t) 1) * sizeof(*ka));
        renumber = malloc(MAX(n_keys, (size_t) 1) * sizeof(*renumber));
        s = malloc(MAX(n_samples, (size_t) 1) * sizeof(*s));
        if (!ka || !renumber || !s)
                return -ENOMEM;
        for (size_t i = 0; i < n_keys; i++)
                ka[i] = (struct key_at) { keys[i], (uint32_t) i };
        qsort(ka, n_keys, sizeof(*ka), key_at_cmp);
        for (size_t i = 0; i < n_keys; i++)
                renumber[ka[i].old] = (uint32_t) i;
        for (size_t i = 0; i < n_samples; i++)
                s[i] = (struct timeline_sample) { samples[i].time_us, renumber[samples[i].key] };
        qsort(s, n_samples, sizeof(*s), sample_cmp);

        varint_put(&o, n_keys);
        varint_put(&o, n_samples);
        varint_put(&o, n_samples ? s[n_samples - 1].time_us : 0);
        for (size_t i = 0; i < n_keys; i++) {
                const struct timeline_key *k = &ka[i].key;

                varint_put(&o, (uint64_t) (k->process_id - prev_proc));
                varint_put(&o, (uint64_t) (k->process_id == prev_proc && i > 0 ? k->stack_id - prev_stack
                                                                                : k->stack_id));
                varint_put(&o, k->tid);
                prev_proc = k->process_id;
                prev_stack = k->stack_id;
        }
        for (size_t i = 0; i < n_samples; i++) {
                varint_put(&o, s[i].time_us - prev_time);
                varint_put(&o, s[i].key);
                prev_time = s[i].time_us;
        }
        if (o.oom) {
                free(o.data);
                return -ENOMEM;
        }
        *ret_data = o.data;
        *ret_size = o.size;
        return 0;
}

int timeline_unpack(const uint8_t *data, size_t size, struct timeline_block *ret) {
        const uint8_t *p = data, *end = data + size;
        _cleanup_free_ struct timeline_key *keys = NULL;
        _cleanup_free_ struct timeline_sample *samples = NULL;
        uint64_t n_keys, n_samples, span, time = 0;
        int64_t proc = 0, stack = 0;
        int r;

        if (!data && size > 0)
                return -EINVAL;
        if ((r = varint_get(&p, end, &n_keys)) < 0 || (r = varint_get(&p, end, &n_samples)) < 0 ||
            (r = varint_get(&p, end, &span)) < 0)
                return r;
        /* a key takes 3 bytes at least, a sample 2: a count the bytes left
         * cannot hold is a lie, refused before it sizes an allocation */
        if (n_keys > (size_t) (end - p) / 3 || n_samples > ((size_t) (end - p) - 3 * n_keys) / 2)
                return -EBADMSG;
        if (n_samples > 0 && n_keys == 0)
                return -EBADMSG;
        if (n_samples == 0 && span != 0)
                return -EBADMSG;
        keys = malloc(MAX(n_keys, (uint64_t) 1) * sizeof(*keys));
        samples = malloc(MAX(n_samples, (uint64_t) 1) * sizeof(*samples));
        if (!keys || !samples)
                return -ENOMEM;

        for (uint64_t i = 0; i < n_keys; i++) {
                uint64_t dp, s, tid;

                if ((r = varint_get(&p, end, &dp)) < 0 || (r = varint_get(&p, end, &s)) < 0 ||
                    (r = varint_get(&p, end, &tid)) < 0)
                        return r;
                if (dp > (uint64_t) (INT64_MAX - proc) || tid > UINT32_MAX)
                        return -EBADMSG;
                if (i > 0 && dp == 0) {
                        if (s > (uint64_t) (INT64_MAX - stack))
                                return -EBADMSG;
                        stack += (int64_t) s;
                } else {
                        if (s > (uint64_t) INT64_MAX)
                                return -EBADMSG;
                        stack = (int64_t) s;
                }
                proc += (int64_t) dp;
                keys[i] = (struct timeline_key) { proc, stack, (uint32_t) tid };
        }
        for (uint64_t i = 0; i < n_samples; i++) {
                uint64_t dt, k;

                if ((r = varint_get(&p, end, &dt)) < 0 || (r = varint_get(&p, end, &k)) < 0)
                        return r;
                if (dt > span - time || k >= n_keys)
                        return -EBADMSG;
                time += dt;
                samples[i] = (struct timeline_sample) { time, (uint32_t) k };
        }
        if (p != end || time != span)
                return -EBADMSG;

        *ret = (struct timeline_block) {
                .keys = TAKE_PTR(keys), .n_keys = n_keys, .samples = TAKE_PTR(samples), .n_samples = n_samples,
                .span_us = span,
        };
        return 0;
}

void timeline_block_done(struct timeline_block *b) {
        free(b->keys);
        free(b->samples);
        *b = (struct timeline_block) {};
}
