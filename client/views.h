/* The views of profctl that need a whole answer (client/profile.h) or a
 * series: the caller/callee tree, the differential views between two
 * profiles, the time series, one file each (view-*.c). Pure: they take
 * profiles and FILE*s, so unit tests feed them fixtures. The JSON shapes
 * are in docs/profctl.md. */
#pragma once

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"
#include "profile.h"
#include "render.h"

/* ---- caller/callee tree (like pprof -focus, perf report -G) ---- */

struct tree_opts {
        const regex_t *focus;  /* NULL: one top-down tree from the roots */
        const char *focus_text;/* the expression, for the header */
        const regex_t *hide;   /* frames whose name matches are dropped, NULL: none */
        size_t max_depth;      /* levels shown below (and above) the root, 0: all */
        bool lines;            /* frames named "function (file:line)" */
        bool root_group;       /* a stack's group (--root) as its root frame */
};

typedef struct view_tree view_tree;

/* Builds the tree of p. With a focus, a stack counts if any of its frames'
 * names matches; its outermost matching frame roots both trees: the frames
 * below it (callees) and, reversed, the frames above it (callers). Without
 * a focus, all stacks make one tree from their roots. Returns 0 or -ENOMEM. */
int view_tree_build(const profile *p, const struct tree_opts *o, view_tree **ret);
view_tree *view_tree_free(view_tree *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(view_tree *, view_tree_free);
#define _cleanup_view_tree_ _cleanup_(view_tree_freep)

/* The value of the stacks the focus matched (all of them without a focus). */
uint64_t view_tree_matched(const view_tree *t);

/* Indented text: a line per node, children by total, percentages of the
 * profile's total. Returns 0 or -EIO. */
int view_tree_write(const view_tree *t, FILE *f);
/* Returns 0, -ENOMEM or -EIO. */
int view_tree_write_json(const view_tree *t, FILE *f);

/* ---- differential views between a baseline and a current profile ---- */

struct diff_opts {
        bool lines;            /* frames named "function (file:line)" */
        TopBy by;              /* table rows */
        bool children;         /* table: compare totals, not self */
        size_t limit;          /* table rows at most, 0: all */
};

/* difffolded.pl's output: per distinct folded stack of either profile
 * "stack BASELINE CURRENT", BASELINE scaled by current total / baseline total
 * (rounded) so the two compare although their sample counts differ; sorted
 * by stack. Time kinds are written in microseconds, as query --folded does.
 * Returns 0, -ENOMEM or -EIO. */
int diff_write_folded(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o);
/* The same stacks as JSON, unscaled and scaled. Returns 0, -ENOMEM or -EIO. */
int diff_write_json(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o);

/* Per function (line, module): its share of the baseline, of the current
 * profile, and the change in percentage points, sorted by the size of the
 * change. Returns 0, -ENOMEM or -EIO. */
int diff_table_write(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o);
int diff_table_write_json(FILE *f, const profile *baseline, const profile *current, const struct diff_opts *o);

/* ---- time series ---- */

struct series_point {
        uint64_t t_ns;  /* bucket start, Unix-epoch ns */
        uint64_t value; /* samples, or nanoseconds for the time kinds */
        uint64_t complete; /* the part with complete stacks */
};

struct series {
        char *kind, *unit;
        uint64_t step_ns, total, from_ns, to_ns;
        struct series_point *points;
        size_t n_points, allocated;
        bool have_complete;      /* every point said its complete part (profd before: no) */
        struct quality quality;  /* partial: total, complete, lost */
        bool have_quality;
        json_t *end;             /* the "end" line (a reference of its own), for its optional keys */
        json_t *events;          /* the captures' "event" lines, by trigger time; NULL: none */
};

void series_done(struct series *s);
/* Adds a "point" line; points must come in time order. Reports a faulty
 * line on stderr; returns 0, -EBADMSG or -ENOMEM. */
int series_add_point_line(struct series *s, const json_t *line);
/* Takes the "end" line and checks its "points" and "total" against what
 * was added. Returns 0, -EBADMSG or -ENOMEM. */
int series_set_end(struct series *s, const json_t *end);

/* One line per step from the first point to the last (steps without data
 * as 0), the rate per second (samples/s, or ms/s of blocked time), the share
 * of the step with complete stacks and a bar scaled to the largest; each
 * capture of the window a line "capture ID (CAUSE) at TIME" after the step
 * of its trigger.
 * Returns 0 or -EIO. */
int series_write(FILE *f, const struct series *s);
/* Returns 0, -ENOMEM or -EIO. */
int series_write_json(FILE *f, const struct series *s);

/* ---- quality report ---- */

/* The whole report of an answer (profctl query --quality): each share with
 * its weight, every reason listed, then the losses. unit: "samples" or
 * "ns". Returns 0 or -EIO. */
int quality_write_report(FILE *f, const struct quality *q, const char *kind, const char *unit, uint64_t from_ns,
                         uint64_t to_ns);
