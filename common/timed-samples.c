/* The samples of a "timeline" answer: the set, the line encoder and the
 * decoder (timed-samples.h). */
#include "timed-samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int timed_set_init(struct timed_set *s, uint64_t max_samples) {
        *s = (struct timed_set) {
                .max_samples = max_samples ?: TIMED_MAX_SAMPLES,
                .omitted_from_ns = UINT64_MAX,
        };
        s->index = hashmap_new_u64();
        return s->index ? 0 : -ENOMEM;
}

void timed_set_done(struct timed_set *s) {
        free(s->entries);
        hashmap_free(s->index);
        free(s->stack_ids);
        free(s->stack_values);
        *s = (struct timed_set) {};
}

int timed_set_stack(struct timed_set *s, int64_t stack_id, uint32_t *ret) {
        void *v;
        int r;

        if (hashmap_get(s->index, UINT64_TO_KEY((uint64_t) stack_id), &v) >= 0) {
                *ret = (uint32_t) ((uintptr_t) v - 1);
                return 0;
        }
        if (s->n_stacks == s->stacks_cap) {
                size_t cap = MAX(s->stacks_cap * 2, (size_t) 256);
                int64_t *ids = realloc(s->stack_ids, cap * sizeof(*ids));
                if (!ids)
                        return -ENOMEM;
                s->stack_ids = ids;
                uint64_t *values = realloc(s->stack_values, cap * sizeof(*values));
                if (!values)
                        return -ENOMEM;
                s->stack_values = values;
                s->stacks_cap = cap;
        }
        r = hashmap_put(s->index, UINT64_TO_KEY((uint64_t) stack_id), (void *) (uintptr_t) (s->n_stacks + 1));
        if (r < 0)
                return r;
        s->stack_ids[s->n_stacks] = stack_id;
        s->stack_values[s->n_stacks] = 0;
        *ret = (uint32_t) s->n_stacks++;
        return 0;
}

int timed_set_add(struct timed_set *s, uint64_t t_ns, int64_t stack_id, uint32_t hz) {
        struct timed_entry *last = s->n_entries ? &s->entries[s->n_entries - 1] : NULL;
        uint64_t t_ms = t_ns / NSEC_PER_MSEC;
        uint32_t stack;
        int r;

        if (s->samples >= s->max_samples) {
                s->omitted++;
                s->omitted_from_ns = MIN(s->omitted_from_ns, t_ns);
                return 0;
        }
        r = timed_set_stack(s, stack_id, &stack);
        if (r < 0)
                return r;
        s->samples++;
        s->stack_values[stack]++;
        /* a thread's run of samples in one millisecond: one entry now,
         * fewer to sort */
        if (last && last->t_ms == t_ms && last->stack == stack && last->hz == hz && last->n < UINT32_MAX) {
                last->n++;
                return 0;
        }
        if (s->n_entries == s->cap) {
                size_t cap = MAX(s->cap * 2, (size_t) 1024);
                struct timed_entry *e = realloc(s->entries, cap * sizeof(*e));
                if (!e)
                        return -ENOMEM;
                s->entries = e;
                s->cap = cap;
        }
        s->entries[s->n_entries++] = (struct timed_entry) { .t_ms = t_ms, .stack = stack, .n = 1, .hz = hz };
        return 0;
}

static int entry_cmp(const void *a, const void *b) {
        const struct timed_entry *x = a, *y = b;

        if (x->t_ms != y->t_ms)
                return x->t_ms < y->t_ms ? -1 : 1;
        if (x->stack != y->stack)
                return x->stack < y->stack ? -1 : 1;
        return x->hz < y->hz ? -1 : x->hz > y->hz;
}

/* qsort_r: stack indexes by their ids */
static int stack_id_cmp(const void *a, const void *b, void *userdata) {
        const int64_t *ids = userdata;
        int64_t x = ids[*(const uint32_t *) a], y = ids[*(const uint32_t *) b];

        return x < y ? -1 : x > y;
}

/* The stacks in the order of their ids, the entries renumbered: a range's
 * rounding gives ties to the earlier stack, as a query's does. */
static int timed_set_order_stacks(struct timed_set *s) {
        _cleanup_free_ uint32_t *order = NULL, *index = NULL;
        _cleanup_free_ int64_t *ids = NULL;
        _cleanup_free_ uint64_t *values = NULL;

        if (s->n_stacks < 2)
                return 0;
        order = malloc(s->n_stacks * sizeof(*order));
        index = malloc(s->n_stacks * sizeof(*index));
        ids = malloc(s->n_stacks * sizeof(*ids));
        values = malloc(s->n_stacks * sizeof(*values));
        if (!order || !index || !ids || !values)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_stacks; i++)
                order[i] = (uint32_t) i;
        qsort_r(order, s->n_stacks, sizeof(*order), stack_id_cmp, s->stack_ids);
        for (size_t i = 0; i < s->n_stacks; i++) {
                index[order[i]] = (uint32_t) i;
                ids[i] = s->stack_ids[order[i]];
                values[i] = s->stack_values[order[i]];
        }
        memcpy(s->stack_ids, ids, s->n_stacks * sizeof(*ids));
        memcpy(s->stack_values, values, s->n_stacks * sizeof(*values));
        for (size_t i = 0; i < s->n_entries; i++)
                s->entries[i].stack = index[s->entries[i].stack];
        /* the index is not read after finish: dropped, not renumbered */
        s->index = hashmap_free(s->index);
        return 0;
}

int timed_set_finish(struct timed_set *s) {
        size_t out = 0;
        int r;

        r = timed_set_order_stacks(s);
        if (r < 0)
                return r;
        if (s->n_entries > 1)
                qsort(s->entries, s->n_entries, sizeof(*s->entries), entry_cmp);
        for (size_t i = 0; i < s->n_entries; i++) {
                struct timed_entry *prev = out ? &s->entries[out - 1] : NULL;

                if (prev && prev->t_ms == s->entries[i].t_ms && prev->stack == s->entries[i].stack &&
                    prev->hz == s->entries[i].hz && (uint64_t) prev->n + s->entries[i].n <= UINT32_MAX)
                        prev->n += s->entries[i].n;
                else
                        s->entries[out++] = s->entries[i];
        }
        s->n_entries = out;
        return 0;
}

static uint64_t get_dt(const void *e, uint64_t t0) {
        return ((const struct timed_entry *) e)->t_ms - t0;
}

static uint64_t get_stack(const void *e, uint64_t t0 _unused_) {
        return ((const struct timed_entry *) e)->stack;
}

static uint64_t get_n(const void *e, uint64_t t0 _unused_) {
        return ((const struct timed_entry *) e)->n;
}

static uint64_t get_hz(const void *e, uint64_t t0 _unused_) {
        return ((const struct timed_entry *) e)->hz;
}

int timed_line_append(struct stackline_buf *b, const struct timed_entry *e, size_t n) {
        static const struct timed_column_out columns[] = {
                { PROTO_KEY_DT_MS, get_dt },
                { PROTO_KEY_STACK, get_stack },
                { PROTO_KEY_N, get_n },
                { PROTO_KEY_HZ, get_hz },
        };
        bool rated = false;

        if (n == 0 || n > TIMED_LINE_ENTRIES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && e[i].t_ms < e[i - 1].t_ms)
                        return -EINVAL;
                rated = rated || e[i].hz != 0;
        }
        /* the common line, of the base rate only, without the rates */
        return timed_line_write(b, rated ? PROTO_TYPE_RATED_SAMPLES : PROTO_TYPE_SAMPLES, PROTO_KEY_T0_MS, e[0].t_ms,
                                columns, ELEMENTSOF(columns) - !rated, e, sizeof(*e), n);
}

int timed_line_parse(const json_t *line, uint64_t n_stacks, timed_entry_fn fn, void *userdata,
                     const char **ret_error) {
        struct timed_column columns[] = {
                { .key = PROTO_KEY_DT_MS, .max = INT64_MAX },
                { .key = PROTO_KEY_STACK, .max = UINT32_MAX },
                { .key = PROTO_KEY_N, .max = UINT32_MAX },
                { .key = PROTO_KEY_HZ, .max = UINT32_MAX },
        };
        const json_t *type = json_object_get(line, PROTO_KEY_TYPE);
        bool rated = json_is_string(type) && streq(json_string_value(type), PROTO_TYPE_RATED_SAMPLES);
        size_t n_columns = ELEMENTSOF(columns) - !rated;
        uint64_t t0, prev = 0;
        size_t n;
        int r;

        r = timed_columns_parse(line, PROTO_KEY_T0_MS, columns, n_columns, &t0, &n,
                                "its \"" PROTO_KEY_T0_MS "\" is not an unsigned integer",
                                rated ? "its \"" PROTO_KEY_DT_MS "\", \"" PROTO_KEY_STACK "\", \"" PROTO_KEY_N
                                        "\" and \"" PROTO_KEY_HZ "\" are not arrays of one length (1 to 1000)"
                                      : "its \"" PROTO_KEY_DT_MS "\", \"" PROTO_KEY_STACK "\" and \"" PROTO_KEY_N
                                        "\" are not arrays of one length (1 to 1000)",
                                ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct timed_entry e = {};
                uint64_t v[ELEMENTSOF(columns)] = {};

                if (!timed_columns_at(columns, n_columns, i, v)) {
                        *ret_error = "an entry's columns are not unsigned integers in range";
                        return -EBADMSG;
                }
                if (v[1] >= n_stacks) {
                        *ret_error = "an entry names a stack no \"stack\" line gave";
                        return -EBADMSG;
                }
                if (v[2] == 0) {
                        *ret_error = "an entry counts 0 samples";
                        return -EBADMSG;
                }
                if (v[0] < prev || __builtin_add_overflow(t0, v[0], &e.t_ms) || e.t_ms > UINT64_MAX / NSEC_PER_MSEC) {
                        *ret_error = "its times go back or overflow";
                        return -EBADMSG;
                }
                prev = v[0];
                e.stack = (uint32_t) v[1];
                e.n = (uint32_t) v[2];
                e.hz = (uint32_t) v[3];
                r = fn(&e, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
