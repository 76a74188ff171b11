/* Flame graph SVG: stacks merged into a tree, laid out alphabetically, then
 * written as rectangles with their names; the behaviour (zoom, tooltips,
 * search) is the script in flame.js, embedded at build time. */
#include "flame.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flame-js.h"
#include "hashmap.h"
#include "svg-text.h"

/* node flags beyond PROFILE_FRAME_*: the synthetic root and group roots */
#define FLAME_NODE_ROOT  (1u << 16)
#define FLAME_NODE_GROUP (1u << 17)
/* frames are merged when these agree (and name and module) */
#define FLAME_MERGE_FLAGS (PROFILE_FRAME_KERNEL | PROFILE_FRAME_INLINED | PROFILE_FRAME_JIT | \
                           PROFILE_FRAME_PYTHON | PROFILE_FRAME_JAVA | FLAME_NODE_ROOT | FLAME_NODE_GROUP)

/* Geometry, in pixels. The font is 12 px Verdana-like; its average glyph is
 * taken as 0.59 em wide to decide how much of a name fits a frame. */
#define FLAME_WIDTH_DEFAULT 1200
#define FLAME_FRAME_HEIGHT_DEFAULT 16
/* flamegraph.pl's default: narrower frames are invisible anyway and only
 * make the file larger */
#define FLAME_MIN_WIDTH_DEFAULT 0.1
#define FLAME_PAD 10
#define FLAME_HEADER 76  /* title, subtitle, reset/search row, legend */
/* a subtitle wider than the picture wraps onto more lines, each moving
 * the legend and the frames down by a line; beyond this many lines (a
 * summary with every reason takes 9 at 600 px) the text is cut with "…" */
#define FLAME_SUBTITLE_LINE 15
#define FLAME_SUBTITLE_LINES_MAX 12
#define FLAME_FOOTER 30  /* the details line */
#define FLAME_FONT_SIZE 12
#define FLAME_CHAR_WIDTH (FLAME_FONT_SIZE * 0.59)

struct flame_node {
        /* the merge key: first, so the map's key can point at the node */
        const struct flame_node *parent;
        const char *name;
        const char *module;
        unsigned flags;        /* FLAME_MERGE_FLAGS part is the key; the rest is OR-ed */

        uint32_t depth;
        uint64_t value, self;           /* the profile drawn (the current one of a diff) */
        uint64_t base_value, base_self; /* the baseline of a diff */
        uint64_t offset;                /* left edge on the value axis */
        bool drawn;

        struct flame_node **children;
        size_t n_children, children_allocated;
};

struct flame_tree {
        hashmap *nodes;        /* struct flame_node* (its key part) -> the node */
        struct flame_node *root;
        uint32_t max_depth;    /* of drawn nodes */
};

static uint64_t node_key_hash(const void *k) {
        const struct flame_node *n = k;
        uint64_t v[] = {
                (uintptr_t) n->parent,
                hash_bytes(n->name, strlen(n->name)),
                hash_bytes(n->module, strlen(n->module)),
                n->flags & FLAME_MERGE_FLAGS,
        };

        return hash_bytes(v, sizeof(v));
}

static bool node_key_eq(const void *a, const void *b) {
        const struct flame_node *x = a, *y = b;

        /* by text: a diff merges two profiles, each with its own strings */
        return x->parent == y->parent && (x->flags & FLAME_MERGE_FLAGS) == (y->flags & FLAME_MERGE_FLAGS) &&
               strcmp(x->name, y->name) == 0 && strcmp(x->module, y->module) == 0;
}

static void flame_tree_done(struct flame_tree *t) {
        size_t state = 0;
        void *v;

        if (t->nodes) {
                while (hashmap_iterate(t->nodes, &state, NULL, &v)) {
                        free(((struct flame_node *) v)->children);
                        free(v);
                }
                hashmap_free(t->nodes);
        }
        if (t->root) {
                free(t->root->children);
                free(t->root);
        }
}

static int flame_tree_init(struct flame_tree *t) {
        t->nodes = hashmap_new(node_key_hash, node_key_eq);
        t->root = calloc(1, sizeof(*t->root));
        if (!t->nodes || !t->root)
                return -ENOMEM;
        t->root->name = "all";
        t->root->module = "";
        t->root->flags = FLAME_NODE_ROOT;
        return 0;
}

/* The child of parent for this frame, made when new. Returns NULL on ENOMEM. */
static struct flame_node *node_child(struct flame_tree *t, struct flame_node *parent, const char *name,
                                     const char *module, unsigned flags) {
        struct flame_node key = { .parent = parent, .name = name, .module = module, .flags = flags };
        struct flame_node *n;
        void *v;

        if (hashmap_get(t->nodes, &key, &v) >= 0) {
                n = v;
                n->flags |= flags;
                return n;
        }
        if (parent->n_children == parent->children_allocated) {
                size_t a = MAX(parent->children_allocated * 2, (size_t) 4);
                struct flame_node **c = reallocarray(parent->children, a, sizeof(*c));

                if (!c)
                        return NULL;
                parent->children = c;
                parent->children_allocated = a;
        }
        n = malloc(sizeof(*n));
        if (!n)
                return NULL;
        *n = key;
        n->depth = parent->depth + 1;
        if (hashmap_put(t->nodes, n, n) < 0) {
                free(n);
                return NULL;
        }
        parent->children[parent->n_children++] = n;
        return n;
}

/* Adds every stack of p along its path: into value/self, or into
 * base_value/base_self for a diff's baseline. Returns 0 or -ENOMEM. */
static int flame_tree_add(struct flame_tree *t, const profile *p, bool baseline) {
        for (size_t i = 0; i < p->n_stacks; i++) {
                const struct profile_stack *s = &p->stacks[i];
                struct flame_node *n = t->root, *path_end;
                uint64_t v = s->value;

                if (*s->group) {
                        n = node_child(t, n, s->group, "", FLAME_NODE_GROUP);
                        if (!n)
                                return -ENOMEM;
                }
                /* a stack without frames is "[unknown]" as in the table and folded output */
                if (s->n_frames == 0) {
                        n = node_child(t, n, "[unknown]", "", PROFILE_FRAME_UNRESOLVED);
                        if (!n)
                                return -ENOMEM;
                }
                for (size_t j = 0; j < s->n_frames; j++) {
                        const struct profile_frame *f = &p->frames[s->frames[j]];

                        n = node_child(t, n, f->name, f->module, f->flags);
                        if (!n)
                                return -ENOMEM;
                }
                path_end = n;
                for (; n; n = (struct flame_node *) n->parent) {
                        if (baseline)
                                n->base_value += v;
                        else
                                n->value += v;
                }
                if (baseline)
                        path_end->base_self += v;
                else
                        path_end->self += v;
        }
        return 0;
}

static int node_compare(const void *a, const void *b) {
        const struct flame_node *x = *(struct flame_node *const *) a, *y = *(struct flame_node *const *) b;
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        c = strcmp(x->module, y->module);
        if (c != 0)
                return c;
        return (int) (x->flags & FLAME_MERGE_FLAGS) - (int) (y->flags & FLAME_MERGE_FLAGS);
}

/* Sorts siblings by name, gives each node its offset, marks what is wide
 * enough to draw. Iterative: stacks can be deep. Returns 0 or -ENOMEM. */
static int flame_tree_layout(struct flame_tree *t, double scale, double min_width) {
        _cleanup_free_ struct flame_node **todo = NULL;
        size_t n_todo = 0, allocated = 0;

        allocated = 64;
        todo = malloc(allocated * sizeof(*todo));
        if (!todo)
                return -ENOMEM;
        todo[n_todo++] = t->root;
        t->root->offset = 0;
        t->max_depth = 0;
        while (n_todo > 0) {
                struct flame_node *n = todo[--n_todo];
                uint64_t offset = n->offset;

                n->drawn = n->value > 0 && (double) n->value * scale >= min_width &&
                           (!n->parent || n->parent->drawn);
                if (!n->drawn)
                        continue;
                t->max_depth = MAX(t->max_depth, n->depth);
                if (n->n_children > 0) /* a leaf's children array is NULL */
                        qsort(n->children, n->n_children, sizeof(*n->children), node_compare);
                if (n_todo + n->n_children > allocated) {
                        size_t a = MAX(allocated * 2, n_todo + n->n_children);
                        struct flame_node **p = reallocarray(todo, a, sizeof(*p));

                        if (!p)
                                return -ENOMEM;
                        todo = p;
                        allocated = a;
                }
                for (size_t i = 0; i < n->n_children; i++) {
                        n->children[i]->offset = offset;
                        offset += n->children[i]->value;
                        todo[n_todo++] = n->children[i];
                }
        }
        return 0;
}

/* --- text --- */

/* The label that fits a frame w pixels wide: whole, or cut with "..", or
 * nothing below 3 characters (the script does the same on zoom). */
static void write_label(FILE *f, const char *name, double w) {
        double room = floor((w - 6) / FLAME_CHAR_WIDTH);
        size_t fit, n;

        if (room < 3)
                return;
        fit = (size_t) room;
        n = svg_char_count(name);
        if (n <= fit)
                svg_xml_write(f, name, SIZE_MAX);
        else {
                svg_xml_write(f, name, fit - 2);
                fputs("..", f);
        }
}

static const char *format_percent(char *buf, size_t size, uint64_t part, uint64_t total) {
        size_t n;

        /* room for the '%' that follows */
        svg_fixed2(buf, size - 1, total ? 100.0 * (double) part / (double) total : 0);
        n = strlen(buf);
        buf[n] = '%';
        buf[n + 1] = '\0';
        return buf;
}

/* --- colours --- */

struct rgb {
        unsigned r, g, b;
};

static struct rgb hsl(double h, double s, double l) {
        double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h < 0 ? h + 360 : h, 360) / 60;
        double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2, r = 0, g = 0, b = 0;

        if (hp < 1) { r = c; g = x; }
        else if (hp < 2) { r = x; g = c; }
        else if (hp < 3) { g = c; b = x; }
        else if (hp < 4) { g = x; b = c; }
        else if (hp < 5) { r = x; b = c; }
        else { r = c; b = x; }
        return (struct rgb) { (unsigned) lround((r + m) * 255), (unsigned) lround((g + m) * 255),
                              (unsigned) lround((b + m) * 255) };
}

/* Two numbers in [0, 1) from a name: a function keeps its shade everywhere. */
static void name_shades(const char *s, double *a, double *b) {
        uint64_t h = hash_bytes(s, strlen(s));

        *a = (double) (h & 0xffff) / 65536.0;
        *b = (double) ((h >> 16) & 0xffff) / 65536.0;
}

enum flame_kind {
        FLAME_KIND_USER,
        FLAME_KIND_KERNEL,
        FLAME_KIND_JIT,
        FLAME_KIND_PYTHON,
        FLAME_KIND_JAVA,
        FLAME_KIND_INLINED,
        FLAME_KIND_UNRESOLVED,
        FLAME_KIND_GROUP,
        FLAME_KIND_ROOT,
};

static enum flame_kind node_kind(const struct flame_node *n) {
        if (n->flags & FLAME_NODE_ROOT)
                return FLAME_KIND_ROOT;
        if (n->flags & FLAME_NODE_GROUP)
                return FLAME_KIND_GROUP;
        if (n->flags & (PROFILE_FRAME_UNRESOLVED | PROFILE_FRAME_LOST))
                return FLAME_KIND_UNRESOLVED;
        if (n->flags & PROFILE_FRAME_INLINED)
                return FLAME_KIND_INLINED;
        /* an unnamed one is grey above: what matters is that it has no name */
        if (n->flags & PROFILE_FRAME_PYTHON)
                return FLAME_KIND_PYTHON;
        if (n->flags & PROFILE_FRAME_JAVA)
                return FLAME_KIND_JAVA;
        if (n->flags & PROFILE_FRAME_JIT)
                return FLAME_KIND_JIT;
        if (n->flags & PROFILE_FRAME_KERNEL)
                return FLAME_KIND_KERNEL;
        return FLAME_KIND_USER;
}

/* The legend and the palette in one table; shades spread over hue_span. */
static const struct {
        const char *label;
        double hue, hue_span, saturation, lightness;
} kind_colours[] = {
        [FLAME_KIND_USER] = { "user", 350, 25, 0.75, 0.62 },
        [FLAME_KIND_KERNEL] = { "kernel", 32, 20, 0.85, 0.55 },
        [FLAME_KIND_JIT] = { "JIT", 95, 40, 0.55, 0.55 },
        /* blue, the hue no other kind uses (only diffs, drawn without kinds) */
        [FLAME_KIND_PYTHON] = { "Python", 205, 25, 0.60, 0.62 },
        /* green as Java is in flamegraph.pl's java palette, darker and
         * bluer than JIT's */
        [FLAME_KIND_JAVA] = { "Java", 140, 20, 0.60, 0.45 },
        [FLAME_KIND_INLINED] = { "inlined", 175, 20, 0.60, 0.55 },
        [FLAME_KIND_UNRESOLVED] = { "unresolved", 0, 0, 0.00, 0.72 },
        [FLAME_KIND_GROUP] = { "process/unit", 270, 20, 0.45, 0.72 },
        [FLAME_KIND_ROOT] = { "all", 0, 0, 0.00, 0.80 },
};

static struct rgb node_colour(const struct flame_node *n, enum flame_palette palette) {
        enum flame_kind k = node_kind(n);
        double a, b;

        if (palette == FLAME_PALETTE_MODULE && (k == FLAME_KIND_USER || k == FLAME_KIND_KERNEL ||
                                                k == FLAME_KIND_JIT || k == FLAME_KIND_PYTHON ||
                                                k == FLAME_KIND_JAVA || k == FLAME_KIND_INLINED)) {
                name_shades(n->module, &a, &b);
                return hsl(a * 360, 0.55 + 0.2 * b, 0.62);
        }
        name_shades(n->name, &a, &b);
        return hsl(kind_colours[k].hue + a * kind_colours[k].hue_span, kind_colours[k].saturation,
                   kind_colours[k].lightness + (kind_colours[k].saturation > 0 ? 0.08 * (b - 0.5) : 0));
}

/* Change of a node's self share, current minus baseline, in [-1, 1]. */
static double node_self_delta(const struct flame_node *n, uint64_t total, uint64_t base_total) {
        double now = total ? (double) n->self / (double) total : 0;
        double was = base_total ? (double) n->base_self / (double) base_total : 0;

        return now - was;
}

/* White at no change to full red (growth) or blue (shrinkage) at the
 * largest change in the graph. */
static struct rgb diff_colour(double delta, double max_delta) {
        double i = max_delta > 0 ? fabs(delta) / max_delta : 0;
        unsigned strong = (unsigned) lround(250 - 200 * i);

        if (delta > 0)
                return (struct rgb) { 250, strong, strong };
        if (delta < 0)
                return (struct rgb) { strong, strong, 250 };
        return (struct rgb) { 250, 250, 250 };
}

/* --- writing --- */

struct flame_writer {
        FILE *f;
        const struct flame_opts *o;
        const struct flame_tree *t;
        uint64_t total, base_total;
        bool diff, ns;
        const char *unit;
        double width, avail, scale, min_width, frame_height, height;
        double max_delta;
        double header;       /* FLAME_HEADER, with the subtitle's extra lines */
        char *subtitle;      /* the whole line, not escaped; NULL if out of memory */
        size_t sub_start[FLAME_SUBTITLE_LINES_MAX], sub_chars[FLAME_SUBTITLE_LINES_MAX], n_sub;
        bool sub_cut;        /* its last line ends with an ellipsis */
        size_t legend_rows;  /* the legend's rows, as the width needs */
};

static const char *kind_description(const struct flame_node *n) {
        switch (node_kind(n)) {
        case FLAME_KIND_KERNEL: return "kernel";
        case FLAME_KIND_JIT: return "JIT";
        case FLAME_KIND_PYTHON: return "Python";
        case FLAME_KIND_JAVA: return "Java";
        case FLAME_KIND_INLINED: return (n->flags & PROFILE_FRAME_KERNEL) ? "inlined, kernel" : "inlined";
        case FLAME_KIND_UNRESOLVED: return "unresolved";
        case FLAME_KIND_GROUP: return "group";
        default: return "";
        }
}

/* The <title>: name, then weight and share, then where the code is. The
 * script shows the same lines; the first must be the bare name. */
static void write_title(struct flame_writer *w, const struct flame_node *n) {
        char v[64], pct[32], self[64], spct[32], was[32], swas[32], d[32];
        const char *kind = kind_description(n);

        fputs("<title>", w->f);
        svg_xml_write(w->f, n->name, SIZE_MAX);
        fprintf(w->f, "\n%s, %s", svg_format_value(v, sizeof(v), n->value, w->unit, w->ns),
                format_percent(pct, sizeof(pct), n->value, w->total));
        if (!w->diff && n->self > 0 && n->n_children > 0)
                fprintf(w->f, " (self %s, %s)", svg_format_value(self, sizeof(self), n->self, w->unit, w->ns),
                        format_percent(spct, sizeof(spct), n->self, w->total));
        if (w->diff)
                fprintf(w->f, ", baseline %s\nself %s, baseline %s: %s%s points",
                        format_percent(was, sizeof(was), n->base_value, w->base_total),
                        format_percent(spct, sizeof(spct), n->self, w->total),
                        format_percent(swas, sizeof(swas), n->base_self, w->base_total),
                        node_self_delta(n, w->total, w->base_total) > 0 ? "+" : "",
                        svg_fixed2(d, sizeof(d), 100 * node_self_delta(n, w->total, w->base_total)));
        if (*n->module || *kind) {
                fputc('\n', w->f);
                svg_xml_write(w->f, n->module, SIZE_MAX);
                if (*kind)
                        fprintf(w->f, "%s(%s)", *n->module ? " " : "", kind);
        }
        fputs("</title>", w->f);
}

static void write_frame(struct flame_writer *w, const struct flame_node *n) {
        char x[32], y[32], wd[32], h[32], tx[32], ty[32];
        double px = FLAME_PAD + (double) n->offset * w->scale, pw = (double) n->value * w->scale;
        double py = w->o->icicle ? w->header + (double) n->depth * w->frame_height
                                 : w->height - FLAME_FOOTER - (double) (n->depth + 1) * w->frame_height;
        struct rgb c = w->diff ? diff_colour(node_self_delta(n, w->total, w->base_total), w->max_delta)
                               : node_colour(n, w->o->palette);

        fprintf(w->f, "<g class=\"fr\" data-o=\"%" PRIu64 "\" data-v=\"%" PRIu64 "\" data-d=\"%" PRIu32 "\">",
                n->offset, n->value, n->depth);
        write_title(w, n);
        fprintf(w->f, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
                svg_fixed2(x, sizeof(x), px), svg_fixed2(y, sizeof(y), py), svg_fixed2(wd, sizeof(wd), pw),
                svg_fixed2(h, sizeof(h), w->frame_height - 1), c.r, c.g, c.b);
        fprintf(w->f, "<text x=\"%s\" y=\"%s\">", svg_fixed2(tx, sizeof(tx), px + 3),
                svg_fixed2(ty, sizeof(ty), py + w->frame_height - 4.5));
        write_label(w->f, n->name, pw);
        fputs("</text></g>\n", w->f);
}

static int write_frames(struct flame_writer *w) {
        _cleanup_free_ const struct flame_node **todo = NULL;
        size_t n_todo = 0, allocated = 64;

        todo = malloc(allocated * sizeof(*todo));
        if (!todo)
                return -ENOMEM;
        todo[n_todo++] = w->t->root;
        /* depth first, left to right: the file reads like the tree */
        while (n_todo > 0) {
                const struct flame_node *n = todo[--n_todo];

                if (!n->drawn)
                        continue;
                write_frame(w, n);
                if (n_todo + n->n_children > allocated) {
                        size_t a = MAX(allocated * 2, n_todo + n->n_children);
                        const struct flame_node **p = reallocarray(todo, a, sizeof(*p));

                        if (!p)
                                return -ENOMEM;
                        todo = p;
                        allocated = a;
                }
                for (size_t i = n->n_children; i-- > 0;)
                        todo[n_todo++] = n->children[i];
        }
        return 0;
}

/* The legend's items: a swatch and a label each, or one line saying the
 * colours follow the module. */
struct legend_item {
        const char *label;
        struct rgb c;
        bool stroke;
};

#define LEGEND_ITEMS_MAX 9
#define LEGEND_ROW 16

static size_t legend_items(const struct flame_writer *w, struct legend_item items[static LEGEND_ITEMS_MAX]) {
        static const enum flame_kind shown[] = {
                FLAME_KIND_USER, FLAME_KIND_KERNEL, FLAME_KIND_JIT, FLAME_KIND_PYTHON, FLAME_KIND_JAVA,
                FLAME_KIND_INLINED,
                FLAME_KIND_UNRESOLVED, FLAME_KIND_GROUP,
        };
        size_t n = 0;

        if (w->diff) {
                items[n++] = (struct legend_item) { "self share grew", { 250, 50, 50 }, true };
                items[n++] = (struct legend_item) { "shrank", { 50, 50, 250 }, true };
                items[n++] = (struct legend_item) { "unchanged", { 250, 250, 250 }, true };
        } else if (w->o->palette == FLAME_PALETTE_KIND)
                for (size_t i = 0; i < ELEMENTSOF(shown); i++)
                        items[n++] = (struct legend_item) {
                                kind_colours[shown[i]].label,
                                hsl(kind_colours[shown[i]].hue + kind_colours[shown[i]].hue_span / 2,
                                    kind_colours[shown[i]].saturation, kind_colours[shown[i]].lightness),
                                false,
                        };
        return n;
}

/* Where each item goes: side by side, each as wide as its swatch and label
 * and a gap, on as many rows as the picture's width needs. Fills xs and
 * rows; returns the number of rows (1 for no items). */
static size_t legend_place(const struct flame_writer *w, const struct legend_item *items, size_t n,
                           double xs[], size_t rows[]) {
        double x = FLAME_PAD;
        size_t row = 0;

        for (size_t i = 0; i < n; i++) {
                double width = 16 + (double) strlen(items[i].label) * FLAME_CHAR_WIDTH;

                if (x > FLAME_PAD && x + width > w->width - FLAME_PAD) {
                        x = FLAME_PAD;
                        row++;
                }
                xs[i] = x;
                rows[i] = row;
                x += width + 24;
        }
        return row + 1;
}

static void write_legend(struct flame_writer *w) {
        struct legend_item items[LEGEND_ITEMS_MAX];
        size_t n = legend_items(w, items), rows[LEGEND_ITEMS_MAX];
        double xs[LEGEND_ITEMS_MAX], top = w->header - 22 - (double) (w->legend_rows - 1) * LEGEND_ROW;
        char x[32], y[32], tx[32], ty[32];

        (void) legend_place(w, items, n, xs, rows);
        fputs("<g id=\"legend\">", w->f);
        for (size_t i = 0; i < n; i++) {
                double yi = top + (double) rows[i] * LEGEND_ROW;

                fprintf(w->f, "<rect x=\"%s\" y=\"%s\" width=\"12\" height=\"12\" fill=\"rgb(%u,%u,%u)\"%s/>"
                        "<text x=\"%s\" y=\"%s\">%s</text>",
                        svg_fixed2(x, sizeof(x), xs[i]), svg_fixed2(y, sizeof(y), yi), items[i].c.r, items[i].c.g,
                        items[i].c.b, items[i].stroke ? " stroke=\"#999\"" : "",
                        svg_fixed2(tx, sizeof(tx), xs[i] + 16), svg_fixed2(ty, sizeof(ty), yi + 11), items[i].label);
        }
        if (n == 0)
                fprintf(w->f, "<text x=\"%d\" y=\"%s\">colour: module</text>", FLAME_PAD,
                        svg_fixed2(ty, sizeof(ty), top + 11));
        fputs("</g>\n", w->f);
}

/* The subtitle's text, not escaped: the caller's, or the kind (or the
 * baseline), total and window of the profile, then its quality. */
static void compose_subtitle(FILE *f, const struct flame_writer *w, const profile *base, const profile *cur) {
        char v[64], from[64], to[64];

        if (w->o->subtitle) {
                fputs(w->o->subtitle, f);
                return;
        }
        if (base) {
                fprintf(f, "baseline %s", svg_format_value(v, sizeof(v), base->total, w->unit, w->ns));
                if (base->to_ns)
                        fprintf(f, " (%s to %s)", svg_format_utc(from, sizeof(from), base->from_ns),
                                svg_format_utc(to, sizeof(to), base->to_ns));
                fputs(", current ", f);
        } else {
                fputs(cur->kind, f);
                fputs(": ", f);
        }
        fputs(svg_format_value(v, sizeof(v), cur->total, w->unit, w->ns), f);
        if (cur->to_ns)
                fprintf(f, " (%s to %s)", svg_format_utc(from, sizeof(from), cur->from_ns),
                        svg_format_utc(to, sizeof(to), cur->to_ns));
        /* how far to trust the picture, next to it (of the current profile) */
        if (cur->have_quality) {
                _cleanup_free_ char *q = quality_summary(&cur->quality);

                if (q) {
                        fputs(" \u2014 ", f);
                        fputs(q, f);
                }
        }
}

/* The tree t (w's) of cur and, for a diff, base, laid out, and what the
 * picture's size and colours follow from it. Returns 0 or -ENOMEM. */
static int flame_build(struct flame_writer *w, struct flame_tree *t, const profile *base, const profile *cur) {
        int r;

        r = flame_tree_init(t);
        if (r < 0)
                return r;
        r = flame_tree_add(t, cur, false);
        if (r < 0)
                return r;
        if (base) {
                r = flame_tree_add(t, base, true);
                if (r < 0)
                        return r;
        }
        r = flame_tree_layout(t, w->scale, w->min_width);
        if (r < 0)
                return r;
        if (w->diff) {
                size_t state = 0;
                void *v;

                /* the strongest colour is the largest change among drawn frames */
                while (hashmap_iterate(t->nodes, &state, NULL, &v)) {
                        const struct flame_node *n = v;

                        if (n->drawn)
                                w->max_delta = MAX(w->max_delta, fabs(node_self_delta(n, w->total, w->base_total)));
                }
        }
        /* an empty profile still makes a valid image, with a note */
        w->height = w->header + (double) (t->max_depth + 1) * w->frame_height + FLAME_FOOTER;
        return 0;
}

/* The <svg> element with the figures the script reads, the style, the
 * script and the background. */
static void write_head(struct flame_writer *w) {
        FILE *f = w->f;
        char buf[64], buf2[64];

        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\" "
                "viewBox=\"0 0 %s %s\" ",
                svg_fixed2(buf, sizeof(buf), w->width), svg_fixed2(buf2, sizeof(buf2), w->height),
                svg_fixed2(buf, sizeof(buf), w->width), svg_fixed2(buf2, sizeof(buf2), w->height));
        fprintf(f, "data-total=\"%" PRIu64 "\" data-pad=\"%d\" ", w->total, FLAME_PAD);
        fprintf(f, "data-avail=\"%s\" ", svg_fixed2(buf, sizeof(buf), w->avail));
        /* the script hides what the writer would have left out */
        fprintf(f, "data-minw=\"%s\" ", svg_fixed2(buf, sizeof(buf), w->min_width));
        fprintf(f, "data-cw=\"%s\">\n", svg_fixed2(buf, sizeof(buf), FLAME_CHAR_WIDTH));
        fputs("<!-- written by profctl (profd); the script below is profctl's own -->\n", f);
        fprintf(f, "<style>\n"
                "text { font-family: Verdana, \"DejaVu Sans\", sans-serif; font-size: %dpx; fill: #000; }\n"
                "#title { font-size: 17px; text-anchor: middle; }\n"
                "#subtitle { fill: #555; text-anchor: middle; }\n"
                "#frames text { pointer-events: none; }\n"
                /* a diff's unchanged frames are white: they need an outline */
                "#frames rect { stroke: %s; stroke-width: 0.5; }\n"
                "g.fr:hover rect { stroke: #000; stroke-width: 1; }\n"
                "g.fr { cursor: pointer; }\n"
                "g.parent { opacity: 0.5; }\n"
                "#reset { cursor: pointer; fill: #06c; }\n"
                "#tip rect { fill: #ffffe8; stroke: #888; }\n"
                "#tip { pointer-events: none; }\n"
                "</style>\n", FLAME_FONT_SIZE, w->diff ? "#999" : "rgba(255,255,255,0.6)");
        fputs("<script type=\"text/ecmascript\"><![CDATA[\n", f);
        fputs(flame_js, f);
        fputs("]]></script>\n", f);
        fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n",
                svg_fixed2(buf, sizeof(buf), w->width), svg_fixed2(buf2, sizeof(buf2), w->height),
                w->diff ? "#f8f8f8" : "#fbf7ee");
}

/* Where a text of s's characters breaks into lines of at most `room`
 * characters: greedily at the last space that fits (the space is dropped),
 * or inside a word longer than a line. Fills the lines' byte offsets and
 * character counts, at most max lines; *ret_cut says whether the text did
 * not fit them (the last line then leaves room for an ellipsis). Returns
 * the number of lines (at least one). */
static size_t wrap_lines(const char *s, size_t room, size_t starts[], size_t chars[], size_t max, bool *ret_cut) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = 0, start = 0, count = 0, at = 0, space_at = SIZE_MAX, space_count = 0;

        *ret_cut = false;
        room = MAX(room, (size_t) 2);
        while (p[at] && n + 1 < max) {
                bool allowed;
                size_t l = svg_utf8_sequence(p + at, &allowed);

                if (count == room) {
                        starts[n] = start;
                        if (p[at] == ' ') {
                                /* the line ends just before a space */
                                chars[n++] = count;
                                start = at + 1;
                                count = 0;
                                at++;
                        } else if (space_at != SIZE_MAX) {
                                chars[n++] = space_count;
                                /* the next line holds what was counted after the space */
                                start = space_at + 1;
                                count -= space_count + 1;
                        } else {
                                chars[n++] = count;
                                start = at;
                                count = 0;
                        }
                        space_at = SIZE_MAX;
                        continue;
                }
                if (p[at] == ' ' && count > 0) {
                        space_at = at;
                        space_count = count;
                }
                count++;
                at += l;
        }
        starts[n] = start;
        chars[n++] = room;
        for (bool allowed; p[at] && count <= room; count++)
                at += svg_utf8_sequence(p + at, &allowed);
        if (count > room) {
                /* more than fits: the last line ends with an ellipsis */
                chars[n - 1] = room - 1;
                *ret_cut = true;
        }
        return n;
}

/* The header's layout: the subtitle, composed and broken into the lines
 * that fit the picture's width (a long quality summary would otherwise run
 * past both edges), and the legend's rows; the header grows by both. */
static void header_layout(struct flame_writer *w, const profile *base, const profile *cur) {
        size_t size = 0;
        FILE *f = open_memstream(&w->subtitle, &size);

        w->n_sub = 0;
        if (f) {
                compose_subtitle(f, w, base, cur);
                if (fclose(f) != 0) {
                        free(w->subtitle);
                        w->subtitle = NULL;
                }
        }
        if (w->subtitle)
                w->n_sub = wrap_lines(w->subtitle, (size_t) floor(w->avail / FLAME_CHAR_WIDTH), w->sub_start,
                                      w->sub_chars, FLAME_SUBTITLE_LINES_MAX, &w->sub_cut);
        {
                struct legend_item items[LEGEND_ITEMS_MAX];
                size_t n = legend_items(w, items), rows[LEGEND_ITEMS_MAX];
                double xs[LEGEND_ITEMS_MAX];

                w->legend_rows = legend_place(w, items, n, xs, rows);
        }
        w->header = FLAME_HEADER + (double) (w->n_sub > 1 ? w->n_sub - 1 : 0) * FLAME_SUBTITLE_LINE +
                    (double) (w->legend_rows - 1) * LEGEND_ROW;
}

/* The subtitle's lines, as tspans of the subtitle's text element. */
static void write_subtitle(struct flame_writer *w) {
        char x[32];

        svg_fixed2(x, sizeof(x), w->width / 2);
        for (size_t i = 0; i < w->n_sub; i++) {
                fprintf(w->f, "<tspan x=\"%s\" dy=\"%d\">", x, i ? FLAME_SUBTITLE_LINE : 0);
                svg_xml_write(w->f, w->subtitle + w->sub_start[i], w->sub_chars[i]);
                if (w->sub_cut && i + 1 == w->n_sub)
                        fputs("\u2026", w->f);
                fputs("</tspan>", w->f);
        }
}

/* The title and subtitle, and the controls: reset, search, match count. */
static void write_titles(struct flame_writer *w, const profile *base, const profile *cur) {
        const struct flame_opts *o = w->o;
        FILE *f = w->f;
        char buf[64], buf2[64];
        const char *title;

        title = o->title ? o->title
                : w->diff ? "Differential Flame Graph"
                : o->icicle ? "Icicle Graph" : "Flame Graph";

        /* centred, unless the search box (220 px at the right) would cover
         * it: then from the left edge */
        if (w->width / 2 + strlen(title) * 17 * 0.59 / 2 > w->width - FLAME_PAD - 230)
                fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" style=\"text-anchor:start\">", FLAME_PAD);
        else
                fprintf(f, "<text id=\"title\" x=\"%s\" y=\"24\">", svg_fixed2(buf, sizeof(buf), w->width / 2));
        svg_xml_write(f, title, SIZE_MAX);
        fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%s\" y=\"42\">", svg_fixed2(buf, sizeof(buf), w->width / 2));
        write_subtitle(w);
        fputs("</text>\n", f);
        fprintf(f, "<text id=\"reset\" x=\"%d\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n", FLAME_PAD);
        /* an HTML input inside the SVG: browsers show it, other viewers skip it */
        fprintf(f, "<foreignObject x=\"%s\" y=\"8\" width=\"220\" height=\"26\">"
                "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
                "placeholder=\"search (regex, Ctrl-F)\" style=\"width:210px;font-size:12px\"/>"
                "</foreignObject>\n", svg_fixed2(buf, sizeof(buf), w->width - FLAME_PAD - 220));
        fprintf(f, "<text id=\"matched\" x=\"%s\" y=\"%s\" style=\"text-anchor:end\"></text>\n",
                svg_fixed2(buf, sizeof(buf), w->width - FLAME_PAD), svg_fixed2(buf2, sizeof(buf2), w->height - 10));
}

/* The picture, laid out (flame_build): header, legend, frames, the
 * details line and the tip. Returns 0, or -EIO when writing failed. */
static int write_picture(struct flame_writer *w, const profile *base, const profile *cur) {
        char buf[64], buf2[64];
        int r;

        write_head(w);
        write_titles(w, base, cur);
        write_legend(w);
        if (w->total == 0)
                fprintf(w->f, "<text x=\"%s\" y=\"%s\" style=\"text-anchor:middle\">no samples in this "
                        "window</text>\n", svg_fixed2(buf, sizeof(buf), w->width / 2),
                        svg_fixed2(buf2, sizeof(buf2), w->header + 12));
        fputs("<g id=\"frames\">\n", w->f);
        r = write_frames(w);
        if (r < 0)
                return r;
        fputs("</g>\n", w->f);
        fprintf(w->f, "<text id=\"details\" x=\"%d\" y=\"%s\"> </text>\n", FLAME_PAD,
                svg_fixed2(buf, sizeof(buf), w->height - 10));
        fputs("<g id=\"tip\" style=\"display:none\"><rect id=\"tipbox\" x=\"0\" y=\"0\" width=\"10\" "
              "height=\"10\" rx=\"3\"/><text id=\"tiptext\"></text></g>\n", w->f);
        fputs("</svg>\n", w->f);
        if (fflush(w->f) != 0 || ferror(w->f))
                return -EIO;
        return 0;
}

static int flame_write(FILE *f, const profile *base, const profile *cur, const struct flame_opts *opts) {
        static const struct flame_opts defaults = {};
        const struct flame_opts *o = opts ? opts : &defaults;
        _cleanup_(flame_tree_done) struct flame_tree t = {};
        struct flame_writer w = {
                .f = f,
                .o = o,
                .t = &t,
                .total = cur->total,
                .base_total = base ? base->total : 0,
                .diff = base != NULL,
                .width = o->width > 0 ? o->width : FLAME_WIDTH_DEFAULT,
                .frame_height = o->frame_height > 0 ? o->frame_height : FLAME_FRAME_HEIGHT_DEFAULT,
                .min_width = o->min_width == 0 ? FLAME_MIN_WIDTH_DEFAULT : MAX(o->min_width, 0.0),
        };
        int r;

        /* "ns" values are shown as times unless the caller names a unit */
        w.ns = !o->unit && streq(cur->unit, "ns");
        w.unit = o->unit ? o->unit : cur->unit;
        w.avail = MAX(w.width - 2 * FLAME_PAD, 1.0);
        w.scale = w.total ? w.avail / (double) w.total : 0;

        header_layout(&w, base, cur);
        r = flame_build(&w, &t, base, cur);
        if (r >= 0)
                r = write_picture(&w, base, cur);
        free(w.subtitle);
        return r;
}

int flame_svg_write(FILE *f, const profile *p, const struct flame_opts *o) {
        return flame_write(f, NULL, p, o);
}

int flame_svg_write_diff(FILE *f, const profile *baseline, const profile *current, const struct flame_opts *o) {
        return flame_write(f, baseline, current, o);
}
