/* The top-functions table: stack lines flattened and summed per function,
 * line or module (see top-table.h). */
#include "top-table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "profile.h"
#include "util.h"

static void stack_free_owned(struct stack *s) {
        for (size_t i = 0; s->owned && i < s->n_frames; i++) {
                free(s->owned[i]);
                s->owned[i] = NULL;
        }
}

int stack_reserve(struct stack *s, size_t n) {
        size_t a;

        stack_free_owned(s);
        s->n_frames = 0;
        if (n <= s->allocated)
                return 0;
        a = MAX(n, s->allocated * 2);
        struct folded_frame *f = reallocarray(s->frames, a, sizeof(*f));
        if (!f)
                return -ENOMEM;
        s->frames = f;
        const char **m = reallocarray(s->modules, a, sizeof(*m));
        if (!m)
                return -ENOMEM;
        s->modules = m;
        char **o = reallocarray(s->owned, a, sizeof(*o));
        if (!o)
                return -ENOMEM;
        for (size_t i = s->allocated; i < a; i++)
                o[i] = NULL;
        s->owned = o;
        s->allocated = a;
        return 0;
}

int frame_name_with_line(const char *name, const char *file, uint64_t line, char **ret) {
        const char *base;

        *ret = NULL;
        if (!file || !*file || line == 0)
                return 0;
        base = strrchr(file, '/');
        if (asprintf(ret, "%s (%s:%" PRIu64 ")", name, base && base[1] ? base + 1 : file, line) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int stack_parse(struct stack *s, const json_t *line, bool with_lines) {
        struct profile_stack_line l;
        int r;

        stack_free_owned(s);

        r = profile_stack_line_decode(line, &l);
        if (r < 0)
                return r;
        s->value = l.value;
        s->group = l.group;
        if (stack_reserve(s, l.n_frames) < 0)
                return cli_error(-ENOMEM, "%m");

        for (size_t i = 0; i < l.n_frames; i++) {
                struct profile_frame f;

                r = profile_frame_decode(json_array_get(l.frames, i), i, &f);
                if (r < 0)
                        return r;
                s->frames[i] = (struct folded_frame) {
                        .name = f.name,
                        .kernel = f.flags & PROFILE_FRAME_KERNEL,
                };
                /* a [lost] frame may come without a module: "" */
                s->modules[i] = f.module;
                if (with_lines) {
                        r = frame_name_with_line(f.name, f.file, f.line, &s->owned[i]);
                        if (r < 0)
                                return cli_error(r, "%m");
                        if (s->owned[i])
                                s->frames[i].name = s->owned[i];
                }
                /* counted as we go, so an error above frees what was made */
                s->n_frames = i + 1;
        }
        s->n_frames = l.n_frames;
        return 0;
}

int frame_shown_name(const struct store_frame_out *fr, bool with_lines, bool raw_names, const char **ret,
                     char **ret_owned) {
        const char *name = raw_names && fr->raw_name ? fr->raw_name : fr->name;

        *ret_owned = NULL;
        if (with_lines && frame_name_with_line(name, fr->file, fr->line, ret_owned) < 0)
                return -ENOMEM;
        *ret = *ret_owned ?: name;
        return 0;
}

void stack_done(struct stack *s) {
        stack_free_owned(s);
        free(s->owned);
        free(s->frames);
        free(s->modules);
        *s = (struct stack) {};
}

struct top_func {
        struct func_key key; /* first: the map's key points here */
        uint64_t self;
        uint64_t total;
        uint64_t last_stack; /* the stack that last added to total, see below */
        char strings[];      /* name and module the key points at */
};

struct top_table {
        TopBy by;
        hashmap *funcs;    /* struct func_key* -> struct top_func* (same object) */
        uint64_t n_stacks; /* numbers the stacks from 1, for last_stack */
};

static const char *const top_by_names[] = {
        [TOP_BY_FUNCTION] = "function",
        [TOP_BY_LINE] = "line",
        [TOP_BY_MODULE] = "module",
};

const char *top_by_to_string(TopBy by) {
        return by < ELEMENTSOF(top_by_names) ? top_by_names[by] : NULL;
}

int top_by_from_string(const char *s, TopBy *ret) {
        for (size_t i = 0; i < ELEMENTSOF(top_by_names); i++)
                if (streq(s, top_by_names[i])) {
                        *ret = (TopBy) i;
                        return 0;
                }
        return -EINVAL;
}

uint64_t func_key_hash(const void *p) {
        const struct func_key *k = p;

        return hash_u64(hash_bytes(k->name, strlen(k->name)) ^
                        (hash_bytes(k->module, strlen(k->module)) * 0x9e3779b97f4a7c15ULL) ^
                        (uint64_t) k->kernel);
}

bool func_key_eq(const void *a, const void *b) {
        const struct func_key *x = a, *y = b;

        return x->kernel == y->kernel && streq(x->name, y->name) && streq(x->module, y->module);
}

top_table *top_table_new(TopBy by) {
        top_table *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->by = by;
        t->funcs = hashmap_new(func_key_hash, func_key_eq);
        if (!t->funcs) {
                free(t);
                return NULL;
        }
        return t;
}

top_table *top_table_free(top_table *t) {
        size_t state = 0;
        void *v;

        if (!t)
                return NULL;
        while (hashmap_iterate(t->funcs, &state, NULL, &v))
                free(v);
        hashmap_free(t->funcs);
        free(t);
        return NULL;
}

static int top_table_get(top_table *t, const struct func_key *key, struct top_func **ret) {
        struct top_func *f;
        size_t ln, lm;
        void *v;
        int r;

        if (hashmap_get(t->funcs, key, &v) >= 0) {
                *ret = v;
                return 0;
        }

        /* The key's strings live in the json line, which is freed after this
         * stack; the table keeps its own copy. */
        ln = strlen(key->name);
        lm = strlen(key->module);
        f = calloc(1, sizeof(*f) + ln + 1 + lm + 1);
        if (!f)
                return -ENOMEM;
        memcpy(f->strings, key->name, ln + 1);
        memcpy(f->strings + ln + 1, key->module, lm + 1);
        f->key = (struct func_key) {
                .name = f->strings,
                .module = f->strings + ln + 1,
                .kernel = key->kernel,
        };
        r = hashmap_put(t->funcs, &f->key, f);
        if (r < 0) {
                free(f);
                return r;
        }
        *ret = f;
        return 0;
}

struct func_key top_table_key(const top_table *t, const char *name, const char *module, bool kernel) {
        if (t->by == TOP_BY_MODULE)
                /* a frame without a module ([lost], [unknown]) is its own row */
                return (struct func_key) { .name = *module ? module : name, .module = "", .kernel = kernel };
        return (struct func_key) { .name = name, .module = module, .kernel = kernel };
}

int top_table_func(top_table *t, const struct func_key *key, struct top_func **ret) {
        return top_table_get(t, key, ret);
}

/* Counts value for f, a function of the stack being added: once in its
 * TOTAL however often the stack holds it, and in its SELF at the leaf. */
static void count(top_table *t, struct top_func *f, uint64_t value, bool leaf) {
        /* recursion puts a function in a stack more than once (and a
         * module is there many times); its TOTAL is the share of samples
         * it was anywhere on, so count each stack once */
        if (f->last_stack != t->n_stacks) {
                f->total += value;
                f->last_stack = t->n_stacks;
        }
        if (leaf)
                f->self += value;
}

int top_table_add(top_table *t, const struct stack *s) {
        /* a stack without frames still has samples: show them, don't drop them */
        static const struct folded_frame unknown_frame = { .name = "[unknown]" };
        static const char *const unknown_module = "";
        const struct folded_frame *frames = s->n_frames > 0 ? s->frames : &unknown_frame;
        const char *const *modules = s->n_frames > 0 ? s->modules : &unknown_module;
        size_t n = MAX(s->n_frames, (size_t) 1);

        t->n_stacks++;
        for (size_t i = 0; i < n; i++) {
                struct func_key key = top_table_key(t, frames[i].name, modules[i], frames[i].kernel);
                struct top_func *f;
                int r;

                r = top_table_get(t, &key, &f);
                if (r < 0)
                        return r;
                count(t, f, s->value, i == n - 1);
        }
        return 0;
}

int top_table_add_funcs(top_table *t, struct top_func *const *funcs, size_t n, uint64_t value) {
        t->n_stacks++;
        for (size_t i = 0; i < n; i++)
                count(t, funcs[i], value, i == n - 1);
        return 0;
}

int top_table_add_row(top_table *t, const struct func_key *key, uint64_t self, uint64_t total) {
        struct top_func *f;
        int r;

        r = top_table_get(t, key, &f);
        if (r < 0)
                return r;
        f->self += self;
        f->total += total;
        return 0;
}

static int func_key_compare(const struct func_key *x, const struct func_key *y) {
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        /* the rest only makes the order the same from run to run */
        c = strcmp(x->module, y->module);
        if (c != 0)
                return c;
        return (int) x->kernel - (int) y->kernel;
}

static int func_stat_compare_self(const void *a, const void *b) {
        const struct top_func *x = *(struct top_func *const *) a, *y = *(struct top_func *const *) b;

        if (x->self != y->self)
                return x->self > y->self ? -1 : 1;
        if (x->total != y->total)
                return x->total > y->total ? -1 : 1;
        return func_key_compare(&x->key, &y->key);
}

static int func_stat_compare_total(const void *a, const void *b) {
        const struct top_func *x = *(struct top_func *const *) a, *y = *(struct top_func *const *) b;

        if (x->total != y->total)
                return x->total > y->total ? -1 : 1;
        if (x->self != y->self)
                return x->self > y->self ? -1 : 1;
        return func_key_compare(&x->key, &y->key);
}

int top_table_rows(const top_table *t, bool children, struct top_row **ret, size_t *ret_n) {
        _cleanup_free_ struct top_func **stats = NULL;
        struct top_row *rows;
        size_t n = 0, state = 0;
        void *v;

        stats = malloc(MAX(hashmap_size(t->funcs), (size_t) 1) * sizeof(*stats));
        rows = malloc(MAX(hashmap_size(t->funcs), (size_t) 1) * sizeof(*rows));
        if (!stats || !rows) {
                free(rows);
                return -ENOMEM;
        }
        while (hashmap_iterate(t->funcs, &state, NULL, &v))
                stats[n++] = v;
        qsort(stats, n, sizeof(*stats), children ? func_stat_compare_total : func_stat_compare_self);
        for (size_t i = 0; i < n; i++)
                rows[i] = (struct top_row) {
                        .name = stats[i]->key.name,
                        .module = stats[i]->key.module,
                        .kernel = stats[i]->key.kernel,
                        .self = stats[i]->self,
                        .total = stats[i]->total,
                };
        *ret = rows;
        *ret_n = n;
        return 0;
}

TopBy top_table_by(const top_table *t) {
        return t->by;
}
