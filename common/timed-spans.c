/* The off-CPU blocks of a timeline answer: the set, the "spans" line
 * encoder and its decoder (timed-spans.h). */
#include "timed-spans.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int append_array(struct stackline_buf *b, const char *key, const struct timed_span *e, size_t n,
                        uint64_t (*get)(const struct timed_span *e, uint64_t t0), uint64_t t0) {
        char num[32];
        int r, k;

        r = stackline_buf_append(b, key, strlen(key));
        for (size_t i = 0; r >= 0 && i < n; i++) {
                k = snprintf(num, sizeof(num), "%s%" PRIu64, i ? "," : "", get(&e[i], t0));
                r = stackline_buf_append(b, num, (size_t) k);
        }
        if (r >= 0)
                r = stackline_buf_append(b, "]", 1);
        return r;
}

static uint64_t get_dt(const struct timed_span *e, uint64_t t0) {
        return e->start_us - t0;
}

static uint64_t get_ns(const struct timed_span *e, uint64_t t0 _unused_) {
        return e->ns;
}

static uint64_t get_stack(const struct timed_span *e, uint64_t t0 _unused_) {
        return e->stack;
}

int timed_spans_line_append(struct stackline_buf *b, const struct timed_span *e, size_t n) {
        size_t len = b->len;
        char head[96];
        int r, k;

        if (n == 0 || n > TIMED_LINE_ENTRIES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (e[i].ns == 0 || (i > 0 && e[i].start_us < e[i - 1].start_us))
                        return -EINVAL;
        k = snprintf(head, sizeof(head), "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_SPANS "\",\"" PROTO_KEY_T0_US
                     "\":%" PRIu64, e[0].start_us);
        r = stackline_buf_append(b, head, (size_t) k);
        if (r >= 0)
                r = append_array(b, ",\"" PROTO_KEY_DT_US "\":[", e, n, get_dt, e[0].start_us);
        if (r >= 0)
                r = append_array(b, ",\"" PROTO_KEY_NS "\":[", e, n, get_ns, 0);
        if (r >= 0)
                r = append_array(b, ",\"" PROTO_KEY_STACK "\":[", e, n, get_stack, 0);
        if (r >= 0)
                r = stackline_buf_append(b, "}\n", 2);
        if (r < 0)
                b->len = len;
        return r;
}

/* Field key of line: an array of 1 to TIMED_LINE_ENTRIES elements, and of
 * *n elements when *n is not 0 (sets it when it is). */
static const json_t *array_field(const json_t *line, const char *key, size_t *n) {
        const json_t *a = json_object_get(line, key);

        if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > TIMED_LINE_ENTRIES ||
            (*n && json_array_size(a) != *n))
                return NULL;
        *n = json_array_size(a);
        return a;
}

static bool u64_at(const json_t *a, size_t i, uint64_t max, uint64_t *ret) {
        const json_t *v = json_array_get(a, i);

        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t) json_integer_value(v) > max)
                return false;
        *ret = (uint64_t) json_integer_value(v);
        return true;
}

int timed_spans_line_parse(const json_t *line, uint64_t n_stacks, timed_span_fn fn, void *userdata,
                           const char **ret_error) {
        const json_t *t0 = json_object_get(line, PROTO_KEY_T0_US), *dt, *ns, *stack;
        uint64_t prev = 0;
        size_t n = 0;
        int r;

        *ret_error = NULL;
        if (!json_is_integer(t0) || json_integer_value(t0) < 0) {
                *ret_error = "its \"" PROTO_KEY_T0_US "\" is not an unsigned integer";
                return -EBADMSG;
        }
        dt = array_field(line, PROTO_KEY_DT_US, &n);
        ns = dt ? array_field(line, PROTO_KEY_NS, &n) : NULL;
        stack = ns ? array_field(line, PROTO_KEY_STACK, &n) : NULL;
        if (!stack) {
                *ret_error = "its \"" PROTO_KEY_DT_US "\", \"" PROTO_KEY_NS "\" and \"" PROTO_KEY_STACK
                             "\" are not arrays of one length (1 to 1000)";
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                struct timed_span e;
                uint64_t d, s, end;

                if (!u64_at(dt, i, INT64_MAX, &d) || !u64_at(ns, i, INT64_MAX, &e.ns) ||
                    !u64_at(stack, i, UINT32_MAX, &s)) {
                        *ret_error = "an entry is not three unsigned integers in range";
                        return -EBADMSG;
                }
                if (s >= n_stacks) {
                        *ret_error = "an entry names a stack no \"stack\" line gave";
                        return -EBADMSG;
                }
                if (e.ns == 0) {
                        *ret_error = "an entry is a block of 0 ns";
                        return -EBADMSG;
                }
                if (d < prev || __builtin_add_overflow((uint64_t) json_integer_value(t0), d, &e.start_us) ||
                    e.start_us > UINT64_MAX / NSEC_PER_USEC ||
                    __builtin_add_overflow(e.start_us * NSEC_PER_USEC, e.ns, &end)) {
                        *ret_error = "its starts go back, or a start or an end overflows";
                        return -EBADMSG;
                }
                prev = d;
                e.stack = (uint32_t) s;
                r = fn(&e, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
