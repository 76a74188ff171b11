/* profctl's whole-answer views: caller/callee tree, differential folded
 * stacks and table, time series. */
#include "views.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "folded.h"
#include "hashmap.h"
#include "util.h"

int view_frame_name(const struct profile_frame *f, bool lines, const char **ret, char **ret_owned) {
        int r;

        *ret_owned = NULL;
        *ret = f->name;
        if (!lines)
                return 0;
        r = frame_name_with_line(f->name, f->file, f->line, ret_owned);
        if (r < 0)
                return r;
        if (*ret_owned)
                *ret = *ret_owned;
        return 0;
}

/* ---- functions: what two frames must share to be one node or row ---- */

/* A function as the views key it (struct func_key, render.h): its shown
 * name in its module. Distinct profile frames (other addresses, lines) of one
 * function map to one. The set owns the names; modules are the profile's. */
struct func_set {
        hashmap *index;          /* struct func_key* -> index + 1 */
        struct func_key **funcs; /* each malloc'd (the map's keys point at them) */
        size_t n, allocated;
};

static int func_set_init(struct func_set *s) {
        *s = (struct func_set) {};
        s->index = hashmap_new(func_key_hash, func_key_eq);
        return s->index ? 0 : -ENOMEM;
}

static void func_set_done(struct func_set *s) {
        for (size_t i = 0; i < s->n; i++) {
                free((char *) s->funcs[i]->name);
                free(s->funcs[i]);
        }
        free(s->funcs);
        hashmap_free(s->index);
        *s = (struct func_set) {};
}

/* Returns the id of (name, module, kernel), adding it if new; name is
 * copied. Returns the id (>= 0) or -ENOMEM. */
static int64_t func_set_get(struct func_set *s, const char *name, const char *module, bool kernel) {
        struct func_key key = { .name = name, .module = module, .kernel = kernel }, *f;
        char *copy;
        void *v;

        if (hashmap_get(s->index, &key, &v) >= 0)
                return (int64_t) (uintptr_t) v - 1;
        if (s->n == s->allocated) {
                size_t a = MAX((size_t) 64, s->allocated * 2);
                struct func_key **n = reallocarray(s->funcs, a, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                s->funcs = n;
                s->allocated = a;
        }
        f = malloc(sizeof(*f));
        copy = strdup(name);
        if (!f || !copy) {
                free(f);
                free(copy);
                return -ENOMEM;
        }
        *f = (struct func_key) { .name = copy, .module = module, .kernel = kernel };
        if (hashmap_put(s->index, f, (void *) (uintptr_t) (s->n + 1)) < 0) {
                free(copy);
                free(f);
                return -ENOMEM;
        }
        s->funcs[s->n] = f;
        return (int64_t) s->n++;
}

/* The func id of every frame of p, in p's frame order. */
static int func_set_map_frames(struct func_set *s, const profile *p, bool lines, uint32_t **ret) {
        _cleanup_free_ uint32_t *ids = malloc(MAX(p->n_frames, (size_t) 1) * sizeof(*ids));

        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_frames; i++) {
                const struct profile_frame *fr = &p->frames[i];
                _cleanup_free_ char *owned = NULL;
                const char *name;
                int64_t id;
                int r;

                r = view_frame_name(fr, lines, &name, &owned);
                if (r < 0)
                        return r;
                id = func_set_get(s, name, fr->module, fr->flags & PROFILE_FRAME_KERNEL);
                if (id < 0)
                        return (int) id;
                ids[i] = (uint32_t) id;
        }
        *ret = TAKE_PTR(ids);
        return 0;
}

/* ---- tree ---- */

#define TREE_NO_FUNC UINT32_MAX

struct tree_node;
struct node_key {
        const struct tree_node *parent;
        uint32_t func;
};

struct tree_node {
        struct node_key key; /* first: the node map's key points here */
        uint64_t self, total;
        struct tree_node **children;
        size_t n_children, allocated;
};

struct view_tree {
        struct func_set funcs;
        hashmap *nodes;              /* struct node_key* -> struct tree_node* (same) */
        struct tree_node callees;    /* root of the top-down tree, or of the focus' callees */
        struct tree_node callers;    /* root of the focus' callers */
        bool focused;
        char *focus_text;
        char *kind;
        uint64_t total, matched, from_ns, to_ns;
        struct quality quality;      /* the profile's, when have_quality */
        bool have_quality;
};

static uint64_t node_key_hash(const void *p) {
        const struct node_key *k = p;

        return hash_u64((uint64_t) (uintptr_t) k->parent ^ ((uint64_t) k->func * 0x9e3779b97f4a7c15ULL));
}

static bool node_key_eq(const void *a, const void *b) {
        const struct node_key *x = a, *y = b;

        return x->parent == y->parent && x->func == y->func;
}

static void tree_node_done(struct tree_node *n) {
        for (size_t i = 0; i < n->n_children; i++) {
                tree_node_done(n->children[i]);
                free(n->children[i]);
        }
        free(n->children);
}

view_tree *view_tree_free(view_tree *t) {
        if (!t)
                return NULL;
        tree_node_done(&t->callees);
        tree_node_done(&t->callers);
        hashmap_free(t->nodes);
        func_set_done(&t->funcs);
        free(t->focus_text);
        free(t->kind);
        free(t);
        return NULL;
}

static int tree_child(view_tree *t, struct tree_node *parent, uint32_t func, struct tree_node **ret) {
        struct node_key key = { .parent = parent, .func = func };
        struct tree_node *n;
        void *v;

        if (hashmap_get(t->nodes, &key, &v) >= 0) {
                *ret = v;
                return 0;
        }
        if (parent->n_children == parent->allocated) {
                size_t a = MAX((size_t) 4, parent->allocated * 2);
                struct tree_node **c = reallocarray(parent->children, a, sizeof(*c));
                if (!c)
                        return -ENOMEM;
                parent->children = c;
                parent->allocated = a;
        }
        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->key = key;
        if (hashmap_put(t->nodes, &n->key, n) < 0) {
                free(n);
                return -ENOMEM;
        }
        parent->children[parent->n_children++] = n;
        *ret = n;
        return 0;
}

/* Walks seq[0..n) from root, step by step in direction dir (+1 or -1 from
 * start), adding value to every node's total and to the last one's self
 * when the stack ends there (not when max_depth cut it short). */
static int tree_walk(view_tree *t, struct tree_node *root, const uint32_t *seq, size_t n,
                     size_t max_depth, uint64_t value, bool backwards) {
        struct tree_node *node = root;
        size_t depth = max_depth > 0 ? MIN(n, max_depth) : n;
        int r;

        root->total += value;
        for (size_t i = 0; i < depth; i++) {
                r = tree_child(t, node, seq[backwards ? n - 1 - i : i], &node);
                if (r < 0)
                        return r;
                node->total += value;
        }
        if (depth == n)
                node->self += value;
        return 0;
}

static int tree_node_compare(const void *a, const void *b, void *userdata) {
        const struct tree_node *x = *(struct tree_node *const *) a, *y = *(struct tree_node *const *) b;
        const struct func_set *funcs = userdata;
        const struct func_key *fx = funcs->funcs[x->key.func], *fy = funcs->funcs[y->key.func];
        int c;

        if (x->total != y->total)
                return x->total > y->total ? -1 : 1;
        c = strcmp(fx->name, fy->name);
        if (c != 0)
                return c;
        c = strcmp(fx->module, fy->module);
        if (c != 0)
                return c;
        return (int) fx->kernel - (int) fy->kernel;
}

static void tree_node_sort(struct tree_node *n, struct func_set *funcs) {
        if (n->n_children == 0)
                return;
        qsort_r(n->children, n->n_children, sizeof(*n->children), tree_node_compare, funcs);
        for (size_t i = 0; i < n->n_children; i++)
                tree_node_sort(n->children[i], funcs);
}

int view_tree_build(const profile *p, const struct tree_opts *o, view_tree **ret) {
        _cleanup_(view_tree_freep) view_tree *t = NULL;
        _cleanup_free_ uint32_t *frame_funcs = NULL;
        _cleanup_free_ bool *hidden = NULL, *matches = NULL;
        _cleanup_free_ uint32_t *seq = NULL;
        size_t seq_allocated = 0;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->callees.key.func = t->callers.key.func = TREE_NO_FUNC;
        t->focused = o->focus != NULL;
        t->kind = strdup(p->kind);
        t->focus_text = o->focus_text ? strdup(o->focus_text) : NULL;
        t->nodes = hashmap_new(node_key_hash, node_key_eq);
        if (!t->kind || (o->focus_text && !t->focus_text) || !t->nodes)
                return -ENOMEM;
        r = func_set_init(&t->funcs);
        if (r < 0)
                return r;
        t->total = p->total;
        t->from_ns = p->from_ns;
        t->to_ns = p->to_ns;
        t->quality = p->quality;
        t->have_quality = p->have_quality;

        r = func_set_map_frames(&t->funcs, p, o->lines, &frame_funcs);
        if (r < 0)
                return r;
        /* a regex is matched once per function, not once per frame of every stack */
        hidden = calloc(MAX(t->funcs.n, (size_t) 1), sizeof(*hidden));
        matches = calloc(MAX(t->funcs.n, (size_t) 1), sizeof(*matches));
        if (!hidden || !matches)
                return -ENOMEM;
        for (size_t i = 0; i < t->funcs.n; i++) {
                hidden[i] = o->hide && regexec(o->hide, t->funcs.funcs[i]->name, 0, NULL, 0) == 0;
                matches[i] = o->focus && regexec(o->focus, t->funcs.funcs[i]->name, 0, NULL, 0) == 0;
        }

        for (size_t s = 0; s < p->n_stacks; s++) {
                const struct profile_stack *st = &p->stacks[s];
                size_t n = 0, focus_at = SIZE_MAX;

                if (st->n_frames + 1 > seq_allocated) {
                        size_t a = MAX(st->n_frames + 1, seq_allocated * 2);
                        uint32_t *q = reallocarray(seq, a, sizeof(*q));
                        if (!q)
                                return -ENOMEM;
                        seq = q;
                        seq_allocated = a;
                }
                if (o->root_group && st->group && *st->group) {
                        int64_t id = func_set_get(&t->funcs, st->group, "", false);
                        if (id < 0)
                                return (int) id;
                        seq[n++] = (uint32_t) id;
                }
                for (size_t i = 0; i < st->n_frames; i++) {
                        uint32_t id = frame_funcs[st->frames[i]];

                        if (hidden[id])
                                continue;
                        if (matches[id] && focus_at == SIZE_MAX)
                                focus_at = n;
                        seq[n++] = id;
                }

                if (!o->focus) {
                        t->matched += st->value;
                        r = tree_walk(t, &t->callees, seq, n, o->max_depth, st->value, false);
                } else if (focus_at != SIZE_MAX) {
                        t->matched += st->value;
                        r = tree_walk(t, &t->callees, seq + focus_at, n - focus_at, o->max_depth,
                                      st->value, false);
                        if (r >= 0)
                                r = tree_walk(t, &t->callers, seq, focus_at + 1, o->max_depth,
                                              st->value, true);
                }
                if (r < 0)
                        return r;
        }

        tree_node_sort(&t->callees, &t->funcs);
        tree_node_sort(&t->callers, &t->funcs);
        *ret = TAKE_PTR(t);
        return 0;
}

uint64_t view_tree_matched(const view_tree *t) {
        return t->matched;
}

static void tree_node_write(const view_tree *t, FILE *f, const struct tree_node *n, size_t depth,
                            bool with_self, int value_width) {
        bool ns = !streq(t->kind, "cpu");
        const struct func_key *fn = t->funcs.funcs[n->key.func];
        char cell[32];

        fprintf(f, "%6.1f%%  ", percent(n->total, t->total));
        if (with_self)
                fprintf(f, "%6.1f%%  ", percent(n->self, t->total));
        fprintf(f, "%*s  %*s", value_width, format_weight(cell, sizeof(cell), n->total, ns),
                (int) (2 * depth), "");
        write_sanitized(f, fn->name);
        fputc('\n', f);
        for (size_t i = 0; i < n->n_children; i++)
                tree_node_write(t, f, n->children[i], depth + 1, with_self, value_width);
}

static void tree_write_one(const view_tree *t, FILE *f, const struct tree_node *root, bool with_self) {
        char cell[32];
        int w = (int) strlen("TOTAL");

        /* the root's total is the widest value of the tree */
        w = MAX(w, (int) strlen(format_weight(cell, sizeof(cell), root->total, !streq(t->kind, "cpu"))));
        if (with_self)
                fprintf(f, "%7s  %7s  %*s  %s\n", "TOTAL%", "SELF%", w, "TOTAL", "FUNCTION");
        else
                fprintf(f, "%7s  %*s  %s\n", "TOTAL%", w, "TOTAL", "FUNCTION");
        for (size_t i = 0; i < root->n_children; i++)
                tree_node_write(t, f, root->children[i], 0, with_self, w);
}

int view_tree_write(const view_tree *t, FILE *f) {
        char cell[32];

        window_header_write(f, t->kind, t->total, t->from_ns, t->to_ns);
        if (!t->focused) {
                fputc('\n', f);
                tree_write_one(t, f, &t->callees, true);
                return ferror(f) ? -EIO : 0;
        }
        fputs("focus '", f);
        write_sanitized(f, t->focus_text ? t->focus_text : "");
        fprintf(f, "': %s%s (%.1f%%)\n", format_weight(cell, sizeof(cell), t->matched, !streq(t->kind, "cpu")),
                streq(t->kind, "cpu") ? " samples" : "", percent(t->matched, t->total));
        fputs("\ncallers (each function is called by those indented below it):\n", f);
        tree_write_one(t, f, &t->callers, false);
        fputs("\ncallees (each function calls those indented below it):\n", f);
        tree_write_one(t, f, &t->callees, true);
        return ferror(f) ? -EIO : 0;
}

static json_t *tree_node_json(const view_tree *t, const struct tree_node *n, bool with_self) {
        const struct func_key *fn = t->funcs.funcs[n->key.func];
        _cleanup_json_ json_t *children = json_array(), *node = NULL;

        if (!children)
                return NULL;
        for (size_t i = 0; i < n->n_children; i++) {
                json_t *c = tree_node_json(t, n->children[i], with_self);
                if (!c || json_array_append_new(children, c) < 0)
                        return NULL;
        }
        node = json_pack("{ss, ss, sb, sI}", "name", fn->name, "module", fn->module, "kernel", fn->kernel,
                         "total", (json_int_t) n->total);
        if (!node ||
            (with_self && json_object_set_new(node, "self", json_integer((json_int_t) n->self)) < 0) ||
            json_object_set(node, "children", children) < 0)
                return NULL;
        return TAKE_PTR(node);
}

static json_t *tree_roots_json(const view_tree *t, const struct tree_node *root, bool with_self) {
        _cleanup_json_ json_t *a = json_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < root->n_children; i++) {
                json_t *c = tree_node_json(t, root->children[i], with_self);
                if (!c || json_array_append_new(a, c) < 0)
                        return NULL;
        }
        return TAKE_PTR(a);
}

int view_tree_write_json(const view_tree *t, FILE *f) {
        _cleanup_json_ json_t *doc = NULL;

        doc = json_pack("{ss, ss, ss, sI, sI, sI}",
                        "view", "tree",
                        "kind", t->kind,
                        "unit", streq(t->kind, "cpu") ? "samples" : "ns",
                        "total", (json_int_t) t->total,
                        "from_ns", (json_int_t) t->from_ns,
                        "to_ns", (json_int_t) t->to_ns);
        if (!doc)
                return -ENOMEM;
        if (t->focused) {
                if (json_object_set_new(doc, "focus", json_string(t->focus_text ? t->focus_text : "")) < 0 ||
                    json_object_set_new(doc, "matched", json_integer((json_int_t) t->matched)) < 0 ||
                    json_object_set_new(doc, "callers", tree_roots_json(t, &t->callers, false)) < 0 ||
                    json_object_set_new(doc, "callees", tree_roots_json(t, &t->callees, true)) < 0)
                        return -ENOMEM;
        } else if (json_object_set_new(doc, "tree", tree_roots_json(t, &t->callees, true)) < 0)
                return -ENOMEM;
        if (t->have_quality && json_object_set_new(doc, "quality", quality_to_json(&t->quality)) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}

/* ---- diff ---- */

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

static json_t *window_json(const profile *p) {
        return json_pack("{sI, sI, sI}", "total", (json_int_t) p->total, "from_ns", (json_int_t) p->from_ns,
                         "to_ns", (json_int_t) p->to_ns);
}

static json_t *diff_doc_new(const char *view, const profile *baseline, const profile *current) {
        return json_pack("{ss, ss, ss, so, so}", "view", view, "kind", current->kind, "unit", current->unit,
                         "baseline", window_json(baseline), "current", window_json(current));
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
        doc = diff_doc_new("diff", baseline, current);
        if (!doc || json_object_set(doc, "stacks", stacks) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}

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
        doc = diff_doc_new("diff-table", baseline, current);
        if (!doc ||
            json_object_set_new(doc, "by", json_string(top_by_to_string(o->by))) < 0 ||
            json_object_set_new(doc, "children", json_boolean(o->children)) < 0 ||
            json_object_set(doc, "rows", rows) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}

/* ---- series ---- */

void series_done(struct series *s) {
        free(s->kind);
        free(s->unit);
        free(s->points);
        json_decref(s->end);
        *s = (struct series) {};
}

int series_add_point_line(struct series *s, const json_t *line) {
        struct series_point pt;
        int r;

        if ((r = response_get_u64(line, "point", "t_ns", &pt.t_ns)) < 0 ||
            (r = response_get_u64(line, "point", "value", &pt.value)) < 0)
                return r;
        if (s->n_points == 0)
                s->have_complete = true;
        pt.complete = 0;
        if (!json_object_get(line, "complete"))
                s->have_complete = false;
        else if ((r = response_get_u64(line, "point", "complete", &pt.complete)) < 0)
                return r;
        if (pt.complete > pt.value)
                return cli_error(-EBADMSG, "profd sent a 'point' whose \"complete\" exceeds its \"value\"");
        if (s->n_points > 0 && pt.t_ns <= s->points[s->n_points - 1].t_ns)
                return cli_error(-EBADMSG, "profd sent 'point' lines out of time order");
        if (s->n_points == s->allocated) {
                size_t a = MAX((size_t) 64, s->allocated * 2);
                struct series_point *p = reallocarray(s->points, a, sizeof(*p));
                if (!p)
                        return cli_error(-ENOMEM, "%m");
                s->points = p;
                s->allocated = a;
        }
        s->points[s->n_points++] = pt;
        return 0;
}

int series_set_end(struct series *s, const json_t *end) {
        const char *kind, *unit;
        uint64_t points, sum = 0;
        int r;

        if ((r = response_get_string(end, "end", "kind", &kind)) < 0 ||
            (r = response_get_string(end, "end", "unit", &unit)) < 0 ||
            (r = response_get_u64(end, "end", "step_ns", &s->step_ns)) < 0 ||
            (r = response_get_u64(end, "end", "points", &points)) < 0 ||
            (r = response_get_u64(end, "end", "total", &s->total)) < 0 ||
            (r = response_get_u64(end, "end", "from_ns", &s->from_ns)) < 0 ||
            (r = response_get_u64(end, "end", "to_ns", &s->to_ns)) < 0)
                return r;
        if (s->step_ns == 0)
                return cli_error(-EBADMSG, "profd's series answer has a step of 0");
        json_decref(s->end);
        s->end = json_incref((json_t *) end);
        for (size_t i = 0; i < s->n_points; i++)
                sum += s->points[i].value;
        /* a mismatch means points were lost on the way */
        if (points != s->n_points)
                return cli_error(-EBADMSG, "profd's series answer ends with \"points\":%" PRIu64
                                 " but it sent %zu point lines", points, s->n_points);
        if (sum != s->total)
                return cli_error(-EBADMSG, "profd's series answer ends with \"total\":%" PRIu64
                                 " but its points add up to %" PRIu64, s->total, sum);
        if (json_object_get(end, "quality")) {
                if (quality_from_json(json_object_get(end, "quality"), &s->quality) < 0)
                        return cli_error(-EBADMSG, "profd sent a series 'end' line whose \"quality\" is not a "
                                         "report of unsigned integers");
                s->have_quality = true;
        }
        free(s->kind);
        free(s->unit);
        s->kind = strdup(kind);
        s->unit = strdup(unit);
        if (!s->kind || !s->unit)
                return cli_error(-ENOMEM, "%m");
        return 0;
}

/* samples per second, or milliseconds of blocked time per second */
static double series_rate(const struct series *s, uint64_t value) {
        double per_step = streq(s->unit, "ns") ? (double) value / 1e6 : (double) value;

        return per_step * 1e9 / (double) s->step_ns;
}

static const char *series_rate_unit(const struct series *s) {
        return streq(s->unit, "ns") ? "ms/s" : "samples/s";
}

/* Wide enough to tell 2% steps apart, narrow enough for 80 columns. */
#define SERIES_BAR_WIDTH 40

/* A step's complete share in percent, to one decimal, halves away from
 * zero: the text and the JSON show the same figure (printf's %.1f would
 * round 36 of 64, exactly 56.25, to even). */
static double series_complete_pct(uint64_t complete, uint64_t value) {
        return round(1000.0 * (double) complete / (double) MAX(value, 1u)) / 10.0;
}

static void series_line_write(FILE *f, const struct series *s, uint64_t t_ns, uint64_t value, uint64_t complete,
                              double max_rate) {
        char when[64];
        double rate = series_rate(s, value);
        int bar = max_rate > 0 ? (int) lround(rate / max_rate * SERIES_BAR_WIDTH) : 0;

        format_local_time(when, sizeof(when), t_ns);
        /* steps under a second need the milliseconds to tell lines apart */
        if (s->step_ns % NSEC_PER_SEC != 0)
                fprintf(f, "%s.%03" PRIu64, when, (uint64_t) (t_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
        else
                fputs(when, f);
        fprintf(f, "  %12.1f", rate);
        /* when quality dropped: the share of the step with complete stacks */
        if (s->have_complete) {
                if (value > 0)
                        fprintf(f, "  %7.1f%%  ", series_complete_pct(complete, value));
                else
                        fprintf(f, "  %8s  ", "-");
        } else
                fputs("  ", f);
        /* a step with any data shows at least one mark: "little" is not "none" */
        if (bar == 0 && value > 0)
                bar = 1;
        for (int i = 0; i < bar; i++)
                fputc('#', f);
        fputc('\n', f);
}

int series_write(FILE *f, const struct series *s) {
        char step[64], from[64], to[64];
        double max_rate = 0;

        for (size_t i = 0; i < s->n_points; i++)
                max_rate = MAX(max_rate, series_rate(s, s->points[i].value));

        fprintf(f, "%s per %s step, %s from %s to %s\n\n", series_rate_unit(s),
                format_duration(step, sizeof(step), s->step_ns),
                streq(s->kind, "cpu") ? "on-CPU samples" :
                streq(s->kind, "wakeup") ? "blocked time by waker" : "off-CPU time",
                format_local_time(from, sizeof(from), s->from_ns), format_local_time(to, sizeof(to), s->to_ns));
        fprintf(f, "%-*s  %12s%s\n", s->step_ns % NSEC_PER_SEC != 0 ? 23 : 19, "TIME",
                streq(s->unit, "ns") ? "MS/S" : "SAMPLES/S", s->have_complete ? "  COMPLETE" : "");
        for (size_t i = 0; i < s->n_points; i++) {
                /* the steps between two points had nothing: show them as 0,
                 * a gap in a sampled series is itself a finding */
                if (i > 0)
                        for (uint64_t t = s->points[i - 1].t_ns + s->step_ns; t < s->points[i].t_ns; t += s->step_ns)
                                series_line_write(f, s, t, 0, 0, max_rate);
                series_line_write(f, s, s->points[i].t_ns, s->points[i].value, s->points[i].complete, max_rate);
        }
        return ferror(f) ? -EIO : 0;
}

int series_write_json(FILE *f, const struct series *s) {
        _cleanup_json_ json_t *doc = NULL, *points = json_array();

        if (!points)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_points; i++) {
                json_t *p = json_pack("{sI, sI, sf}", "t_ns", (json_int_t) s->points[i].t_ns,
                                      "value", (json_int_t) s->points[i].value,
                                      "rate", round(series_rate(s, s->points[i].value) * 1000.0) / 1000.0);
                if (p && s->have_complete &&
                    (json_object_set_new(p, "complete", json_integer((json_int_t) s->points[i].complete)) < 0 ||
                     json_object_set_new(p, "complete_pct",
                                         json_real(series_complete_pct(s->points[i].complete, s->points[i].value))) < 0)) {
                        json_decref(p);
                        return -ENOMEM;
                }
                if (!p || json_array_append_new(points, p) < 0)
                        return -ENOMEM;
        }
        doc = json_pack("{ss, ss, ss, ss, sI, sI, sI, sI, sO}", "view", "series", "kind", s->kind, "unit", s->unit,
                        "rate_unit", series_rate_unit(s), "step_ns", (json_int_t) s->step_ns,
                        "total", (json_int_t) s->total, "from_ns", (json_int_t) s->from_ns,
                        "to_ns", (json_int_t) s->to_ns, "points", points);
        if (!doc)
                return -ENOMEM;
        if (s->have_quality && json_object_set_new(doc, "quality", quality_to_json(&s->quality)) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}

/* ---- quality report ---- */

static void report_line(FILE *f, unsigned indent, const char *label, uint64_t v, uint64_t total, bool ns) {
        char w[64];

        fprintf(f, "%*s%-*s %7.1f%%  %s\n", (int) indent, "", 40 - (int) indent, label, percent(v, total),
                format_weight(w, sizeof(w), v, ns));
}

int quality_write_report(FILE *f, const struct quality *q, const char *kind, const char *unit, uint64_t from_ns,
                         uint64_t to_ns) {
        bool ns = streq(unit, "ns");
        char w[64], from[64], to[64];

        fprintf(f, "quality of %s %s from %s to %s\n", format_weight(w, sizeof(w), q->total, ns),
                streq(kind, "cpu") ? "on-CPU samples" : streq(kind, "wakeup") ? "of blocked time by waker"
                                                                             : "of off-CPU time",
                format_local_time(from, sizeof(from), from_ns), format_local_time(to, sizeof(to), to_ns));
        report_line(f, 0, "complete stacks", q->complete, q->total, ns);
        if (q->partial)
                report_line(f, 0, "not complete", q->total - q->complete, q->total, ns);
        else {
                report_line(f, 0, "truncated", quality_truncated_total(q), q->total, ns);
                for (size_t i = 0; i < _QUALITY_TRUNC_MAX; i++)
                        report_line(f, 2, quality_truncated_names[i].label, q->truncated[i], q->total, ns);
                report_line(f, 0, "end not recorded", q->unknown, q->total, ns);
                report_line(f, 0, "unresolved (a user frame without name)", q->unresolved, q->total, ns);
                for (size_t i = 0; i < _QUALITY_UNRES_MAX; i++)
                        report_line(f, 2, quality_unresolved_names[i].label, q->unresolved_by[i], q->total, ns);
        }
        fputs("lost in the window (host-wide counts of events)\n", f);
        for (size_t i = 0; i < _QUALITY_LOST_MAX; i++)
                fprintf(f, "  %-38s %8" PRIu64 "\n", quality_lost_names[i].label, q->lost[i]);
        return ferror(f) ? -EIO : 0;
}
