/* The differential stacks view (profctl diff --folded, --json): each
 * distinct folded stack with its baseline and current values. */
#include "view-private.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "hashmap.h"
#include "util.h"

/* One distinct folded stack of either profile. */
struct diff_stack {
        char *folded;                      /* frames as a folded line has them (the key) */
        const profile *p;                  /* a profile that has it, and which of its stacks */
        const struct profile_stack *stack;
        uint64_t baseline, current;
};

struct diff {
        hashmap *stacks;          /* char* folded -> struct diff_stack* */
        struct diff_stack **sorted;
        size_t n;
};

static void diff_done(struct diff *d) {
        for (size_t i = 0; i < d->n; i++) {
                free(d->sorted[i]->folded);
                free(d->sorted[i]);
        }
        free(d->sorted);
        hashmap_free(d->stacks);
}

/* The frames of a stack as one folded line writes them, without the count:
 * the escaping and the kernel suffix of query --folded, so equal lines of
 * the two windows meet. */
static int stack_folded_key(const profile *p, const struct profile_stack *st, bool lines,
                            struct folded_frame **buf, size_t *buf_n, char ***owned, char **ret) {
        char *text = NULL, *space;
        size_t size = 0;
        FILE *m;
        int r = 0;

        if (st->n_frames > *buf_n) {
                struct folded_frame *b = reallocarray(*buf, st->n_frames, sizeof(*b));
                char **o = reallocarray(*owned, st->n_frames, sizeof(*o));
                if (b)
                        *buf = b;
                if (o)
                        *owned = o;
                if (!b || !o)
                        return -ENOMEM;
                *buf_n = st->n_frames;
        }
        for (size_t i = 0; i < st->n_frames; i++) {
                const struct profile_frame *fr = &p->frames[st->frames[i]];
                const char *name;

                (*owned)[i] = NULL;
                if (r >= 0)
                        r = view_frame_name(fr, lines, &name, &(*owned)[i]);
                (*buf)[i] = (struct folded_frame) {
                        .name = r >= 0 ? name : "",
                        .kernel = fr->flags & PROFILE_FRAME_KERNEL,
                };
        }
        m = r >= 0 ? open_memstream(&text, &size) : NULL;
        if (m) {
                if (folded_write_line(m, *buf, st->n_frames, 0) < 0)
                        r = -EIO;
                if (fclose(m) != 0)
                        r = -ENOMEM;
        } else
                r = -ENOMEM;
        for (size_t i = 0; i < st->n_frames; i++)
                free((*owned)[i]);
        if (r < 0) {
                free(text);
                return r;
        }
        /* "a;b 0\n" -> "a;b" */
        space = strrchr(text, ' ');
        if (space)
                *space = '\0';
        *ret = text;
        return 0;
}

static int diff_add(struct diff *d, const profile *p, bool is_baseline, bool lines) {
        _cleanup_free_ struct folded_frame *buf = NULL;
        _cleanup_free_ char **owned = NULL;
        size_t buf_n = 0;
        int r;

        for (size_t s = 0; s < p->n_stacks; s++) {
                const struct profile_stack *st = &p->stacks[s];
                _cleanup_free_ char *key = NULL;
                struct diff_stack *ds;
                void *v;

                r = stack_folded_key(p, st, lines, &buf, &buf_n, &owned, &key);
                if (r < 0)
                        return r;
                if (hashmap_get(d->stacks, key, &v) >= 0)
                        ds = v;
                else {
                        if ((d->n & (d->n - 1)) == 0) {
                                struct diff_stack **a = reallocarray(d->sorted, MAX(d->n * 2, (size_t) 1),
                                                                     sizeof(*a));
                                if (!a)
                                        return -ENOMEM;
                                d->sorted = a;
                        }
                        ds = calloc(1, sizeof(*ds));
                        if (!ds)
                                return -ENOMEM;
                        *ds = (struct diff_stack) { .folded = TAKE_PTR(key), .p = p, .stack = st };
                        r = hashmap_put(d->stacks, ds->folded, ds);
                        if (r < 0) {
                                free(ds->folded);
                                free(ds);
                                return r;
                        }
                        d->sorted[d->n++] = ds;
                }
                *(is_baseline ? &ds->baseline : &ds->current) += st->value;
        }
        return 0;
}

static int diff_stack_compare(const void *a, const void *b) {
        return strcmp((*(struct diff_stack *const *) a)->folded, (*(struct diff_stack *const *) b)->folded);
}

static int diff_build(struct diff *d, const profile *baseline, const profile *current, bool lines) {
        int r;

        *d = (struct diff) {};
        d->stacks = hashmap_new_string();
        if (!d->stacks)
                return -ENOMEM;
        r = diff_add(d, baseline, true, lines);
        if (r >= 0)
                r = diff_add(d, current, false, lines);
        if (r < 0)
                return r;
        if (d->n > 0)
                qsort(d->sorted, d->n, sizeof(*d->sorted), diff_stack_compare);
        return 0;
}

/* v scaled by to/from, rounded; v when from is 0 (nothing to scale to). */
static uint64_t scale(uint64_t v, uint64_t from, uint64_t to) {
        if (from == 0)
                return v;
        /* long double keeps 64 bits of mantissa on x86: exact for counts */
        return (uint64_t) llroundl((long double) v * (long double) to / (long double) from);
}

static uint64_t to_us(uint64_t ns) {
        return ns / 1000 + (ns % 1000 >= 500);
}

int diff_write_folded(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o) {
        _cleanup_(diff_done) struct diff d = {};
        bool ns = !streq(current->kind, "cpu");
        int r;

        r = diff_build(&d, baseline, current, o->lines);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d.n; i++) {
                const struct diff_stack *s = d.sorted[i];
                uint64_t b = scale(s->baseline, baseline->total, current->total), c = s->current;

                if (ns) {
                        b = to_us(b);
                        c = to_us(c);
                }
                fprintf(f, "%s %" PRIu64 " %" PRIu64 "\n", s->folded, b, c);
        }
        return ferror(f) ? -EIO : 0;
}

int diff_write_json(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o) {
        _cleanup_(diff_done) struct diff d = {};
        _cleanup_json_ json_t *doc = NULL, *stacks = NULL;
        int r;

        r = diff_build(&d, baseline, current, o->lines);
        if (r < 0)
                return r;
        stacks = json_array();
        if (!stacks)
                return -ENOMEM;
        for (size_t i = 0; i < d.n; i++) {
                const struct diff_stack *s = d.sorted[i];
                _cleanup_json_ json_t *frames = json_array();
                json_t *js;

                if (!frames)
                        return -ENOMEM;
                for (size_t k = 0; k < s->stack->n_frames; k++) {
                        const struct profile_frame *fr = &s->p->frames[s->stack->frames[k]];
                        _cleanup_free_ char *owned = NULL;
                        const char *name;

                        r = view_frame_name(fr, o->lines, &name, &owned);
                        if (r < 0)
                                return r;
                        if (json_array_append_new(frames, json_pack("{ss, ss, sb}", "name", name, "module",
                                                                    fr->module, "kernel",
                                                                    (fr->flags & PROFILE_FRAME_KERNEL) != 0)) < 0)
                                return -ENOMEM;
                }
                js = json_pack("{sO, sI, sI, sI}", "frames", frames,
                               "baseline", (json_int_t) s->baseline,
                               "current", (json_int_t) s->current,
                               "baseline_scaled", (json_int_t) scale(s->baseline, baseline->total, current->total));
                if (!js || json_array_append_new(stacks, js) < 0)
                        return -ENOMEM;
        }
        doc = view_diff_doc_new("diff", baseline, current);
        if (!doc || json_object_set(doc, "stacks", stacks) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}
