/* A heatmap's samples counted at the base rate (heatmap-weight.h). */
#include "heatmap-weight.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "rate-weight.h"

uint64_t heatmap_weight_fixed(uint64_t n, unsigned hz, unsigned base_hz) {
        uint64_t one = rate_weight_fixed(1, hz, base_hz), v;

        if (__builtin_mul_overflow(n, one, &v))
                return UINT64_MAX;
        return v;
}

int heatmap_weigh_cells(struct heatmap *h) {
        size_t n_cells = (size_t) h->columns * h->rows, n = 0;
        _cleanup_free_ uint64_t *fixed = NULL, *whole = NULL;
        _cleanup_free_ size_t *where = NULL;
        int r;

        for (size_t i = 0; i < n_cells; i++)
                n += h->cells[i] > 0;
        /* only the cells that hold samples: a day of 1 ms rows is 86
         * million cells, an answer's samples at most a million */
        fixed = calloc(MAX(n, (size_t) 1), sizeof(*fixed));
        whole = calloc(MAX(n, (size_t) 1), sizeof(*whole));
        where = malloc(MAX(n, (size_t) 1) * sizeof(*where));
        if (!fixed || !whole || !where)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < n_cells; i++)
                if (h->cells[i] > 0) {
                        where[n] = i;
                        fixed[n++] = h->cells[i];
                }
        r = rate_weight_apportion(fixed, n, whole);
        if (r < 0)
                return r;
        h->total = h->max = 0;
        for (size_t i = 0; i < n; i++) {
                h->cells[where[i]] = whole[i];
                h->total += whole[i];
                h->max = MAX(h->max, whole[i]);
        }
        h->outside = rate_weight_round(h->outside);
        return 0;
}

int heatmap_range_weigh(const struct heatmap_sample *samples, size_t n_samples, size_t n_rows, uint64_t from_ns,
                        uint64_t to_ns, uint64_t *ret) {
        _cleanup_free_ uint64_t *fixed = calloc(MAX(n_rows, (size_t) 1), sizeof(*fixed));

        if (!fixed)
                return -ENOMEM;
        for (size_t i = 0; i < n_samples; i++) {
                const struct heatmap_sample *s = &samples[i];

                if (s->row >= n_rows)
                        return -EINVAL;
                if (s->span_ns == 0 && s->t_ns >= from_ns && s->t_ns < to_ns)
                        fixed[s->row] = fixed[s->row] > UINT64_MAX - s->weight ? UINT64_MAX : fixed[s->row] + s->weight;
        }
        return rate_weight_apportion(fixed, n_rows, ret);
}
