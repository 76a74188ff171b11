/* Spreading drains over buckets. A drain of 10 s and value 100 with 1 s
 * steps gives 10 per second; one straddling bucket edges gives each bucket
 * its share of the overlap, rounded so the shares sum to the value. */
#include "series.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

struct series {
        uint64_t step;
        series_point_fn fn;
        void *userdata;
        /* buckets not emitted yet: pending[i] is bucket base + i */
        uint64_t base;
        struct bucket *pending;
        size_t n_pending, cap;
        uint64_t points;
        /* per-drain scratch for the remainders */
        struct share *shares;
        size_t shares_cap;
};

struct bucket {
        uint64_t complete, rest; /* value = complete + rest */
};

struct share {
        size_t index;
        uint64_t rem;
};

series *series_new(uint64_t step_ns, series_point_fn fn, void *userdata) {
        series *s;

        if (step_ns == 0)
                return NULL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->step = step_ns;
        s->fn = fn;
        s->userdata = userdata;
        return s;
}

series *series_free(series *s) {
        if (s) {
                free(s->pending);
                free(s->shares);
                free(s);
        }
        return NULL;
}

uint64_t series_points(const series *s) {
        return s->points;
}

/* Emits and drops the pending buckets before bucket `upto`. */
static int flush_before(series *s, uint64_t upto) {
        size_t n = 0;
        int r = 0;

        while (n < s->n_pending && s->base + n < upto) {
                const struct bucket *b = &s->pending[n];
                if (b->complete + b->rest > 0) {
                        r = s->fn((s->base + n) * s->step, b->complete + b->rest, b->complete, s->userdata);
                        s->points++;
                }
                n++;
                if (r < 0)
                        break;
        }
        if (n > 0 && n < s->n_pending)
                memmove(s->pending, s->pending + n, (s->n_pending - n) * sizeof(*s->pending));
        s->n_pending -= n;
        s->base += n;
        if (s->n_pending == 0)
                s->base = upto;
        return r;
}

/* Makes pending cover bucket `last`. */
static int extend_to(series *s, uint64_t last) {
        size_t need = (size_t) (last - s->base + 1);

        if (need <= s->n_pending)
                return 0;
        if (need > s->cap) {
                size_t cap = MAX(s->cap * 2, need);
                struct bucket *p = realloc(s->pending, cap * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                s->pending = p;
                s->cap = cap;
        }
        memset(s->pending + s->n_pending, 0, (need - s->n_pending) * sizeof(*s->pending));
        s->n_pending = need;
        return 0;
}

static int share_compare(const void *a, const void *b) {
        const struct share *x = a, *y = b;

        /* largest remainder first; ties to the earlier bucket */
        if (x->rem != y->rem)
                return x->rem > y->rem ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

static uint64_t *bucket_part(struct bucket *b, bool complete) {
        return complete ? &b->complete : &b->rest;
}

/* Spreads value over the buckets first..last (pending), into their
 * complete part or the rest. */
static int spread(series *s, uint64_t start_ns, uint64_t end_ns, uint64_t first, uint64_t last, uint64_t value,
                  bool complete) {
        uint64_t len, given = 0;
        size_t n;

#define FIELD(i) (*bucket_part(&s->pending[(i)], complete))
        if (value == 0)
                return 0;
        if (end_ns <= start_ns || first == last) {
                FIELD(first - s->base) += value;
                return 0;
        }

        n = (size_t) (last - first + 1);
        if (n > s->shares_cap) {
                struct share *sh = realloc(s->shares, n * sizeof(*sh));
                if (!sh)
                        return -ENOMEM;
                s->shares = sh;
                s->shares_cap = n;
        }
        len = end_ns - start_ns;
        for (size_t i = 0; i < n; i++) {
                uint64_t b_start = (first + i) * s->step, b_end = b_start + s->step;
                uint64_t lo = MAX(b_start, start_ns), hi = MIN(b_end, end_ns);
                uint64_t overlap = hi > lo ? hi - lo : 0;
                unsigned __int128 exact = (unsigned __int128) value * overlap;
                uint64_t whole = (uint64_t) (exact / len);

                FIELD(first - s->base + i) += whole;
                given += whole;
                s->shares[i] = (struct share) { .index = i, .rem = (uint64_t) (exact % len) };
        }
        /* what rounding down left over (fewer units than buckets) goes to
         * the buckets that lost the largest fractions */
        if (given < value) {
                qsort(s->shares, n, sizeof(*s->shares), share_compare);
                for (size_t i = 0; i < n && given < value; i++, given++)
                        FIELD(first - s->base + s->shares[i].index)++;
        }
#undef FIELD
        return 0;
}

int series_add(series *s, uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete) {
        uint64_t first = start_ns / s->step, last;
        int r;

        if (complete > value)
                return -EINVAL;
        last = end_ns > start_ns ? (end_ns - 1) / s->step : first;
        if (last - first >= SERIES_MAX_POINTS)
                return -E2BIG;
        /* drains come by start time: no later one reaches before `first` */
        if (s->n_pending == 0 || first > s->base) {
                r = flush_before(s, first);
                if (r < 0)
                        return r;
        }
        if (first < s->base) {
                /* out of order (the clock was set back): all of it goes to
                 * the oldest bucket still open, so the total stays right */
                r = extend_to(s, s->base);
                if (r < 0)
                        return r;
                s->pending[0].complete += complete;
                s->pending[0].rest += value - complete;
                return 0;
        }
        r = extend_to(s, last);
        if (r < 0)
                return r;
        r = spread(s, start_ns, end_ns, first, last, complete, true);
        if (r >= 0)
                r = spread(s, start_ns, end_ns, first, last, value - complete, false);
        return r;
}

int series_finish(series *s) {
        return flush_before(s, UINT64_MAX);
}
