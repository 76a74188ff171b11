/* The differential table (profctl diff): per function its share of the
 * baseline and of the current profile, by the size of the change. */
#include "view-private.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "util.h"

/* A profile's top table (by o->by), through the same aggregation as
 * query's table. */
static int profile_top_table(const profile *p, const struct diff_opts *o, top_table **ret) {
        _cleanup_top_table_ top_table *t = top_table_new(o->by);
        _cleanup_(stack_done) struct stack s = {};
        int r;

        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_stacks; i++) {
                const struct profile_stack *st = &p->stacks[i];

                r = stack_reserve(&s, st->n_frames);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < st->n_frames; k++) {
                        const struct profile_frame *fr = &p->frames[st->frames[k]];
                        const char *name;

                        r = view_frame_name(fr, o->by == TOP_BY_LINE, &name, &s.owned[k]);
                        if (r < 0)
                                return r;
                        s.frames[k] = (struct folded_frame) { .name = name, .kernel = fr->flags & PROFILE_FRAME_KERNEL };
                        s.modules[k] = fr->module;
                        s.n_frames = k + 1;
                }
                s.value = st->value;
                r = top_table_add(t, &s);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

struct diff_row {
        struct func_key key; /* first: the index's key points here */
        uint64_t baseline, current; /* self, or total with children */
        double baseline_pct, current_pct, delta;
};

static int diff_row_compare(const void *a, const void *b) {
        const struct diff_row *x = a, *y = b;
        double dx = fabs(x->delta), dy = fabs(y->delta);
        int c;

        if (dx != dy)
                return dx > dy ? -1 : 1;
        if (x->current_pct != y->current_pct)
                return x->current_pct > y->current_pct ? -1 : 1;
        c = strcmp(x->key.name, y->key.name);
        if (c != 0)
                return c;
        c = strcmp(x->key.module, y->key.module);
        if (c != 0)
                return c;
        return (int) x->key.kernel - (int) y->key.kernel;
}

struct diff_table {
        top_table *baseline, *current;
        struct top_row *brows, *crows;
        struct diff_row *rows;
        size_t n;
};

static void diff_table_done(struct diff_table *d) {
        free(d->rows);
        free(d->brows);
        free(d->crows);
        top_table_free(d->baseline);
        top_table_free(d->current);
}

static int diff_table_build(struct diff_table *d, const profile *baseline, const profile *current,
                            const struct diff_opts *o) {
        hashmap *index = NULL;
        size_t nb, nc;
        int r;

        *d = (struct diff_table) {};
        if ((r = profile_top_table(baseline, o, &d->baseline)) < 0 ||
            (r = profile_top_table(current, o, &d->current)) < 0 ||
            (r = top_table_rows(d->baseline, o->children, &d->brows, &nb)) < 0 ||
            (r = top_table_rows(d->current, o->children, &d->crows, &nc)) < 0)
                return r;
        d->rows = calloc(MAX(nb + nc, (size_t) 1), sizeof(*d->rows));
        index = hashmap_new(func_key_hash, func_key_eq);
        if (!d->rows || !index) {
                hashmap_free(index);
                return -ENOMEM;
        }
        for (int side = 0; side < 2; side++) {
                const struct top_row *rows = side == 0 ? d->brows : d->crows;

                for (size_t i = 0; i < (side == 0 ? nb : nc); i++) {
                        struct diff_row key = { .key = { .name = rows[i].name, .module = rows[i].module,
                                                         .kernel = rows[i].kernel } }, *row;
                        uint64_t v = o->children ? rows[i].total : rows[i].self;
                        void *found;

                        if (hashmap_get(index, &key, &found) >= 0)
                                row = found;
                        else {
                                row = &d->rows[d->n++];
                                *row = key;
                                if (hashmap_put(index, row, row) < 0) {
                                        hashmap_free(index);
                                        return -ENOMEM;
                                }
                        }
                        *(side == 0 ? &row->baseline : &row->current) = v;
                }
        }
        hashmap_free(index);
        /* a function that is never where a sample hit (self) in either
         * window has nothing to compare: leave it out */
        for (size_t i = 0; i < d->n;)
                if (d->rows[i].baseline == 0 && d->rows[i].current == 0)
                        d->rows[i] = d->rows[--d->n];
                else
                        i++;
        for (size_t i = 0; i < d->n; i++) {
                struct diff_row *row = &d->rows[i];

                row->baseline_pct = percent(row->baseline, baseline->total);
                row->current_pct = percent(row->current, current->total);
                row->delta = row->current_pct - row->baseline_pct;
        }
        if (d->n > 0) /* rows may be NULL when both windows are empty */
                qsort(d->rows, d->n, sizeof(*d->rows), diff_row_compare);
        if (o->limit > 0 && o->limit < d->n)
                d->n = o->limit;
        return 0;
}

int diff_table_write(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o) {
        _cleanup_(diff_table_done) struct diff_table d = {};
        bool by_module = o->by == TOP_BY_MODULE;
        const char *header = by_module ? "MODULE" : o->by == TOP_BY_LINE ? "LINE" : "FUNCTION";
        size_t width = strlen(header);
        int r;

        r = diff_table_build(&d, baseline, current, o);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d.n; i++)
                width = MAX(width, MIN(strlen(d.rows[i].key.name), (size_t) 60));

        fputs("baseline: ", f);
        window_header_write(f, baseline->kind, baseline->total, baseline->from_ns, baseline->to_ns);
        fputs("current:  ", f);
        window_header_write(f, current->kind, current->total, current->from_ns, current->to_ns);
        fprintf(f, "shares of %s; DELTA in percentage points\n\n", o->children ? "TOTAL (anywhere on the stack)" :
                "SELF (where the sample hit)");
        if (by_module)
                fprintf(f, "%6s  %6s  %7s  %s\n", "BASE%", "CUR%", "DELTA", header);
        else
                fprintf(f, "%6s  %6s  %7s  %-*s  %s\n", "BASE%", "CUR%", "DELTA", (int) width, header, "MODULE");
        for (size_t i = 0; i < d.n; i++) {
                const struct diff_row *row = &d.rows[i];
                size_t l = strlen(row->key.name);

                /* -0.0 would print as "-0.0": a change that rounds away is none */
                fprintf(f, "%5.1f%%  %5.1f%%  %+7.1f  ", row->baseline_pct, row->current_pct,
                        fabs(row->delta) < 0.05 ? 0.0 : row->delta);
                write_sanitized(f, row->key.name);
                if (!by_module) {
                        fprintf(f, "%*s  ", (int) (l < width ? width - l : 0), "");
                        write_sanitized(f, module_display_name(row->key.module, row->key.kernel));
                }
                fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}

static json_t *json_pct(double v) {
        return json_real(round(v * 100.0) / 100.0);
}

int diff_table_write_json(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o) {
        _cleanup_(diff_table_done) struct diff_table d = {};
        _cleanup_json_ json_t *doc = NULL, *rows = NULL;
        int r;

        r = diff_table_build(&d, baseline, current, o);
        if (r < 0)
                return r;
        rows = json_array();
        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < d.n; i++) {
                const struct diff_row *row = &d.rows[i];
                json_t *j = json_pack("{ss, ss, sb, sI, sI, so, so, so}", "name", row->key.name, "module", row->key.module,
                                      "kernel", row->key.kernel, "baseline", (json_int_t) row->baseline,
                                      "current", (json_int_t) row->current,
                                      "baseline_pct", json_pct(row->baseline_pct),
                                      "current_pct", json_pct(row->current_pct),
                                      "delta_pct", json_pct(row->delta));
                if (!j || json_array_append_new(rows, j) < 0)
                        return -ENOMEM;
        }
        doc = view_diff_doc_new("diff-table", baseline, current);
        if (!doc ||
            json_object_set_new(doc, "by", json_string(top_by_to_string(o->by))) < 0 ||
            json_object_set_new(doc, "children", json_boolean(o->children)) < 0 ||
            json_object_set(doc, "rows", rows) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}
