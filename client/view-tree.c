/* The caller/callee tree (profctl query --tree): frames merged per
 * function, focused on a function or from the roots. */
#include "view-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "util.h"

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
