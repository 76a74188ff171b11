/* Samples taken at one rate counted in another: the weights and their
 * rounding (rate-weight.h). */
#include "rate-weight.h"

#include <errno.h>
#include <stdlib.h>

uint64_t rate_weight_fixed(uint64_t value, unsigned drain_hz, unsigned base_hz) {
        unsigned __int128 x;

        if (drain_hz == 0 || base_hz == 0 || drain_hz == base_hz)
                return value << RATE_WEIGHT_SHIFT;
        /* 128 bits: value * base_hz << 20 passes 64 bits from about 2^34
         * samples at 1 kHz */
        x = ((unsigned __int128) value * base_hz << RATE_WEIGHT_SHIFT) + drain_hz / 2;
        x /= drain_hz;
        return x > UINT64_MAX ? UINT64_MAX : (uint64_t) x;
}

uint64_t rate_weight_round(uint64_t fixed) {
        return (fixed >> RATE_WEIGHT_SHIFT) + ((fixed >> (RATE_WEIGHT_SHIFT - 1)) & 1);
}

/* qsort_r: row indexes by fraction, largest first, then by index */
static int fraction_cmp(const void *a, const void *b, void *userdata) {
        const uint64_t *fixed = userdata;
        size_t x = *(const size_t *) a, y = *(const size_t *) b;
        uint64_t fx = fixed[x] & (RATE_WEIGHT_ONE - 1), fy = fixed[y] & (RATE_WEIGHT_ONE - 1);

        if (fx != fy)
                return fx > fy ? -1 : 1;
        return x < y ? -1 : x > y;
}

int rate_weight_apportion(const uint64_t *fixed, size_t n, uint64_t *whole) {
        unsigned __int128 sum = 0;
        uint64_t given = 0, target, left;
        size_t *order;

        for (size_t i = 0; i < n; i++) {
                sum += fixed[i];
                whole[i] = fixed[i] >> RATE_WEIGHT_SHIFT;
                given += whole[i];
        }
        target = (uint64_t) ((sum + RATE_WEIGHT_ONE / 2) >> RATE_WEIGHT_SHIFT);
        /* the fractions add up to less than n, so fewer than n are left */
        left = target - given;
        if (left == 0)
                return 0;
        order = malloc(n * sizeof(*order));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        qsort_r(order, n, sizeof(*order), fraction_cmp, (void *) fixed);
        for (size_t i = 0; i < left && i < n; i++)
                whole[order[i]]++;
        free(order);
        return 0;
}

uint64_t rate_weight(uint64_t value, unsigned drain_hz, unsigned base_hz) {
        if (drain_hz == 0 || base_hz == 0 || drain_hz == base_hz)
                return value;
        return rate_weight_round(rate_weight_fixed(value, drain_hz, base_hz));
}

int rate_map_add(struct rate_map *m, int64_t drain_id, unsigned hz) {
        if (m->n == m->cap) {
                size_t cap = m->cap ? m->cap * 2 : 16;
                struct rate_map_entry *e = realloc(m->entries, cap * sizeof(*e));

                if (!e)
                        return -ENOMEM;
                m->entries = e;
                m->cap = cap;
        }
        m->entries[m->n++] = (struct rate_map_entry) { drain_id, hz };
        return 0;
}

static int entry_cmp(const void *a, const void *b) {
        const struct rate_map_entry *x = a, *y = b;

        return x->drain_id < y->drain_id ? -1 : x->drain_id > y->drain_id;
}

void rate_map_sort(struct rate_map *m) {
        if (m->n > 1)
                qsort(m->entries, m->n, sizeof(*m->entries), entry_cmp);
}

unsigned rate_map_hz(const struct rate_map *m, int64_t drain_id) {
        const struct rate_map_entry *e;

        if (m->n == 0)
                return 0;
        e = bsearch(&(struct rate_map_entry) { .drain_id = drain_id }, m->entries, m->n, sizeof(*m->entries),
                    entry_cmp);
        return e ? e->hz : 0;
}

void rate_map_done(struct rate_map *m) {
        free(m->entries);
        *m = (struct rate_map) {};
}

uint32_t rate_weight_rebase_hz(uint64_t hz, uint64_t row_base_hz, unsigned base_hz) {
        unsigned __int128 scaled;

        if (hz == 0 || row_base_hz == 0 || hz == row_base_hz || base_hz == 0)
                return 0;
        if (row_base_hz == base_hz)
                return hz > UINT32_MAX ? UINT32_MAX : (uint32_t) hz;
        /* 128 bits: two rates of up to 64 bits read from a server */
        scaled = ((unsigned __int128) hz * base_hz + row_base_hz / 2) / row_base_hz;
        if (scaled == 0)
                scaled = 1;
        if (scaled == base_hz)
                return 0;
        return scaled > UINT32_MAX ? UINT32_MAX : (uint32_t) scaled;
}
