/* The off-CPU blocks of a timeline answer: the set, the "spans" line
 * encoder and its decoder (timed-spans.h). */
#include "timed-spans.h"

#include <errno.h>
#include <stdlib.h>

#include "macro.h"

int timed_span_set_init(struct timed_span_set *s, uint64_t max_spans) {
        int r;

        *s = (struct timed_span_set) {
                .max_spans = max_spans ?: TIMED_MAX_SPANS,
                .omitted_from_ns = UINT64_MAX,
        };
        r = timed_set_init(&s->stacks, 0);
        if (r < 0)
                timed_set_done(&s->stacks);
        return r;
}

void timed_span_set_done(struct timed_span_set *s) {
        timed_set_done(&s->stacks);
        free(s->spans);
        *s = (struct timed_span_set) {};
}

int timed_span_set_add(struct timed_span_set *s, uint64_t start_ns, uint64_t ns, int64_t stack_id) {
        uint32_t stack;
        int r;

        if (ns == 0)
                return 0;
        if (s->n_spans >= s->max_spans) {
                s->omitted++;
                s->omitted_ns += ns;
                s->omitted_from_ns = MIN(s->omitted_from_ns, start_ns);
                return 0;
        }
        r = timed_set_stack(&s->stacks, stack_id, &stack);
        if (r < 0)
                return r;
        if (s->n_spans == s->cap) {
                size_t cap = MAX(s->cap * 2, (size_t) 1024);
                struct timed_span *e = realloc(s->spans, cap * sizeof(*e));

                if (!e)
                        return -ENOMEM;
                s->spans = e;
                s->cap = cap;
        }
        s->spans[s->n_spans++] = (struct timed_span) { .start_us = start_ns / NSEC_PER_USEC, .ns = ns, .stack = stack };
        s->stacks.stack_values[stack] += ns;
        s->ns += ns;
        return 0;
}

static int span_cmp(const void *a, const void *b) {
        const struct timed_span *x = a, *y = b;

        if (x->start_us != y->start_us)
                return x->start_us < y->start_us ? -1 : 1;
        if (x->stack != y->stack)
                return x->stack < y->stack ? -1 : 1;
        return x->ns < y->ns ? -1 : x->ns > y->ns;
}

void timed_span_set_finish(struct timed_span_set *s) {
        if (s->n_spans > 1)
                qsort(s->spans, s->n_spans, sizeof(*s->spans), span_cmp);
}

static uint64_t get_dt(const void *e, uint64_t t0) {
        return ((const struct timed_span *) e)->start_us - t0;
}

static uint64_t get_ns(const void *e, uint64_t t0 _unused_) {
        return ((const struct timed_span *) e)->ns;
}

static uint64_t get_stack(const void *e, uint64_t t0 _unused_) {
        return ((const struct timed_span *) e)->stack;
}

int timed_spans_line_append(struct stackline_buf *b, const struct timed_span *e, size_t n) {
        static const struct timed_column_out columns[] = {
                { PROTO_KEY_DT_US, get_dt },
                { PROTO_KEY_NS, get_ns },
                { PROTO_KEY_STACK, get_stack },
        };

        if (n == 0 || n > TIMED_LINE_ENTRIES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (e[i].ns == 0 || (i > 0 && e[i].start_us < e[i - 1].start_us))
                        return -EINVAL;
        return timed_line_write(b, PROTO_TYPE_SPANS, PROTO_KEY_T0_US, e[0].start_us, columns, ELEMENTSOF(columns),
                                e, sizeof(*e), n);
}

int timed_spans_line_parse(const json_t *line, uint64_t n_stacks, timed_span_fn fn, void *userdata,
                           const char **ret_error) {
        struct timed_column columns[] = {
                { .key = PROTO_KEY_DT_US, .max = INT64_MAX },
                { .key = PROTO_KEY_NS, .max = INT64_MAX },
                { .key = PROTO_KEY_STACK, .max = UINT32_MAX },
        };
        uint64_t t0, prev = 0;
        size_t n;
        int r;

        r = timed_columns_parse(line, PROTO_KEY_T0_US, columns, ELEMENTSOF(columns), &t0, &n,
                                "its \"" PROTO_KEY_T0_US "\" is not an unsigned integer",
                                "its \"" PROTO_KEY_DT_US "\", \"" PROTO_KEY_NS "\" and \"" PROTO_KEY_STACK
                                "\" are not arrays of one length (1 to 1000)",
                                ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct timed_span e = {};
                uint64_t v[ELEMENTSOF(columns)], end;

                if (!timed_columns_at(columns, ELEMENTSOF(columns), i, v)) {
                        *ret_error = "an entry is not three unsigned integers in range";
                        return -EBADMSG;
                }
                e.ns = v[1];
                if (v[2] >= n_stacks) {
                        *ret_error = "an entry names a stack no \"stack\" line gave";
                        return -EBADMSG;
                }
                if (e.ns == 0) {
                        *ret_error = "an entry is a block of 0 ns";
                        return -EBADMSG;
                }
                if (v[0] < prev || __builtin_add_overflow(t0, v[0], &e.start_us) ||
                    e.start_us > UINT64_MAX / NSEC_PER_USEC ||
                    __builtin_add_overflow(e.start_us * NSEC_PER_USEC, e.ns, &end)) {
                        *ret_error = "its starts go back, or a start or an end overflows";
                        return -EBADMSG;
                }
                prev = v[0];
                e.stack = (uint32_t) v[2];
                r = fn(&e, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
