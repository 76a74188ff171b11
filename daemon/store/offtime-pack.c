/* A drain's off-CPU timeline packed as varints and unpacked with every
 * bound checked. */
#include "offtime-pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "varint.h"

static int key_cmp(const struct offtime_key *x, const struct offtime_key *y) {
        if (x->process_id != y->process_id)
                return x->process_id < y->process_id ? -1 : 1;
        if (x->stack_id != y->stack_id)
                return x->stack_id < y->stack_id ? -1 : 1;
        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        return x->state < y->state ? -1 : x->state > y->state;
}

/* Keys sorted with their old index, to renumber the blocks' keys. */
struct key_at {
        struct offtime_key key;
        uint32_t old;
};

static int key_at_cmp(const void *a, const void *b) {
        const struct key_at *x = a, *y = b;
        int c = key_cmp(&x->key, &y->key);

        return c ? c : (x->old < y->old ? -1 : x->old > y->old);
}

static int block_cmp(const void *a, const void *b) {
        const struct offtime_block *x = a, *y = b;

        if (x->start_us != y->start_us)
                return x->start_us < y->start_us ? -1 : 1;
        if (x->duration_us != y->duration_us)
                return x->duration_us < y->duration_us ? -1 : 1;
        return x->key < y->key ? -1 : x->key > y->key;
}

int offtime_pack(const struct offtime_key *keys, size_t n_keys, const struct offtime_block *blocks,
                 size_t n_blocks, uint8_t **ret_data, size_t *ret_size) {
        _cleanup_free_ struct key_at *ka = NULL;
        _cleanup_free_ uint32_t *renumber = NULL;
        _cleanup_free_ struct offtime_block *s = NULL;
        struct varint_out o = {};
        uint64_t prev_start = 0;
        int64_t prev_proc = 0, prev_stack = 0;

        if (n_keys > UINT32_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n_keys; i++)
                if (keys[i].process_id < 0 || keys[i].stack_id < 0)
                        return -EINVAL;
        for (size_t i = 0; i < n_blocks; i++)
                if (blocks[i].key >= n_keys || blocks[i].duration_us > UINT64_MAX - blocks[i].start_us)
                        return -EINVAL;

        ka = malloc(MAX(n_keys, (size_t) 1) * sizeof(*ka));
        renumber = malloc(MAX(n_keys, (size_t) 1) * sizeof(*renumber));
        s = malloc(MAX(n_blocks, (size_t) 1) * sizeof(*s));
        if (!ka || !renumber || !s)
                return -ENOMEM;
        for (size_t i = 0; i < n_keys; i++)
                ka[i] = (struct key_at) { keys[i], (uint32_t) i };
        qsort(ka, n_keys, sizeof(*ka), key_at_cmp);
        for (size_t i = 0; i < n_keys; i++)
                renumber[ka[i].old] = (uint32_t) i;
        for (size_t i = 0; i < n_blocks; i++)
                s[i] = (struct offtime_block) { blocks[i].start_us, blocks[i].duration_us, renumber[blocks[i].key] };
        qsort(s, n_blocks, sizeof(*s), block_cmp);

        varint_put(&o, n_keys);
        varint_put(&o, n_blocks);
        varint_put(&o, n_blocks ? s[n_blocks - 1].start_us : 0);
        for (size_t i = 0; i < n_keys; i++) {
                const struct offtime_key *k = &ka[i].key;

                varint_put(&o, (uint64_t) (k->process_id - prev_proc));
                varint_put(&o, (uint64_t) (k->process_id == prev_proc && i > 0 ? k->stack_id - prev_stack
                                                                                : k->stack_id));
                varint_put(&o, k->tid);
                varint_put(&o, k->state);
                prev_proc = k->process_id;
                prev_stack = k->stack_id;
        }
        for (size_t i = 0; i < n_blocks; i++) {
                varint_put(&o, s[i].start_us - prev_start);
                varint_put(&o, s[i].duration_us);
                varint_put(&o, s[i].key);
                prev_start = s[i].start_us;
        }
        if (o.oom) {
                free(o.data);
                return -ENOMEM;
        }
        *ret_data = o.data;
        *ret_size = o.size;
        return 0;
}

int offtime_unpack(const uint8_t *data, size_t size, struct offtime_set *ret) {
        const uint8_t *p = data, *end = data + size;
        _cleanup_free_ struct offtime_key *keys = NULL;
        _cleanup_free_ struct offtime_block *blocks = NULL;
        uint64_t n_keys, n_blocks, span, start = 0;
        int64_t proc = 0, stack = 0;
        int r;

        if (!data && size > 0)
                return -EINVAL;
        if ((r = varint_get(&p, end, &n_keys)) < 0 || (r = varint_get(&p, end, &n_blocks)) < 0 ||
            (r = varint_get(&p, end, &span)) < 0)
                return r;
        /* a key takes 4 bytes at least, a block 3: a count the bytes left
         * cannot hold is a lie, refused before it sizes an allocation */
        if (n_keys > (size_t) (end - p) / 4 || n_blocks > ((size_t) (end - p) - 4 * n_keys) / 3)
                return -EBADMSG;
        if (n_blocks > 0 && n_keys == 0)
                return -EBADMSG;
        if (n_blocks == 0 && span != 0)
                return -EBADMSG;
        keys = malloc(MAX(n_keys, (uint64_t) 1) * sizeof(*keys));
        blocks = malloc(MAX(n_blocks, (uint64_t) 1) * sizeof(*blocks));
        if (!keys || !blocks)
                return -ENOMEM;

        for (uint64_t i = 0; i < n_keys; i++) {
                uint64_t dp, s, tid, state;

                if ((r = varint_get(&p, end, &dp)) < 0 || (r = varint_get(&p, end, &s)) < 0 ||
                    (r = varint_get(&p, end, &tid)) < 0 || (r = varint_get(&p, end, &state)) < 0)
                        return r;
                if (dp > (uint64_t) (INT64_MAX - proc) || tid > UINT32_MAX || state > UINT8_MAX)
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
                keys[i] = (struct offtime_key) { proc, stack, (uint32_t) tid, (uint8_t) state };
        }
        for (uint64_t i = 0; i < n_blocks; i++) {
                uint64_t ds, d, k;

                if ((r = varint_get(&p, end, &ds)) < 0 || (r = varint_get(&p, end, &d)) < 0 ||
                    (r = varint_get(&p, end, &k)) < 0)
                        return r;
                if (ds > span - start || k >= n_keys)
                        return -EBADMSG;
                start += ds;
                if (d > UINT64_MAX - start)
                        return -EBADMSG;
                blocks[i] = (struct offtime_block) { start, d, (uint32_t) k };
        }
        if (p != end || start != span)
                return -EBADMSG;

        *ret = (struct offtime_set) {
                .keys = TAKE_PTR(keys), .n_keys = n_keys, .blocks = TAKE_PTR(blocks), .n_blocks = n_blocks,
                .span_us = span,
        };
        return 0;
}

void offtime_set_done(struct offtime_set *b) {
        free(b->keys);
        free(b->blocks);
        *b = (struct offtime_set) {};
}

uint64_t offtime_clip(uint64_t start, uint64_t duration, uint64_t from, uint64_t to, uint64_t *ret_at) {
        uint64_t end = duration > UINT64_MAX - start ? UINT64_MAX : start + duration; /* exclusive */
        uint64_t lo = MAX(start, from), hi;

        if (to == UINT64_MAX)
                hi = end;
        else
                hi = MIN(end, to + 1);
        if (hi <= lo)
                return 0;
        *ret_at = lo;
        return hi - lo;
}
