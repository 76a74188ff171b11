/* Heatmaps of profile time, as FlameScope draws them from `perf script`:
 * one column per second of wall-clock time, each split into rows of equal
 * sub-second buckets (50 rows of 20 ms by default), a cell's value what
 * fell in it: on-CPU samples, or nanoseconds of blocked time (an off-CPU
 * block is spread over every cell it spans). A 300 ms stall shows as a hot
 * run of cells in one column, where a 10 s drain averages it away.
 *
 * Pure: times in, a grid out, and the writers: text for a terminal (one
 * line per second, read downwards), a self-contained SVG (columns of
 * seconds left to right, the sub-second offset downwards, white to red,
 * each cell's tooltip its time and value), and a self-contained HTML page
 * of that SVG where dragging over the cells selects a range and shows its
 * flame graph and folded stacks (heatmap.js). Columns start on whole UTC
 * seconds, so the axes read as wall-clock time. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define HEATMAP_ROWS_DEFAULT 50u
#define HEATMAP_ROWS_MAX 1000u      /* 1 ms buckets */
#define HEATMAP_COLUMNS_MAX 86400u  /* a day of seconds */

struct heatmap {
        uint64_t start_ns;   /* the first column's second (Unix epoch ns, a multiple of 1 s) */
        uint64_t from_ns, to_ns; /* the window asked for: cells outside it are not part of it */
        unsigned columns;    /* seconds */
        unsigned rows;       /* buckets per second */
        uint64_t *cells;     /* columns * rows, column after column */
        uint64_t total;      /* what was added inside the window */
        uint64_t outside;    /* what was added outside it (counted, not drawn) */
        uint64_t max;        /* the hottest cell */
        bool ns;             /* the values are nanoseconds of blocked time, not samples */
        /* events drawn over the grid (captures' triggers, issue 44), set
         * by the caller after heatmap_init, in time order; borrowed */
        const struct heatmap_mark *marks;
        size_t n_marks;
};

/* An event at t_ns: text marks it on that second's line, the SVG with a
 * line down its column and a marker above it whose tooltip is label. */
struct heatmap_mark {
        uint64_t t_ns;
        const char *label;   /* "capture 3 (psi:cpu.some.avg10>50)" */
};

/* A grid for [from_ns, to_ns) with rows buckets per second (0: the
 * default). -EINVAL for an empty window, rows that do not divide a second
 * into whole microseconds or more than HEATMAP_ROWS_MAX, or a window of
 * more than HEATMAP_COLUMNS_MAX seconds; -ENOMEM. */
int heatmap_init(struct heatmap *h, uint64_t from_ns, uint64_t to_ns, unsigned rows, bool ns);
void heatmap_done(struct heatmap *h);

/* Adds weight at time t_ns (a sample). */
void heatmap_add(struct heatmap *h, uint64_t t_ns, uint64_t weight);

/* Adds the span [start_ns, end_ns) (a block of blocked time): each cell
 * gets the nanoseconds of the span it holds, clipped to the window. */
void heatmap_add_span(struct heatmap *h, uint64_t start_ns, uint64_t end_ns);

/* The value of the cell of column c (seconds from start_ns) and row r. */
uint64_t heatmap_cell(const struct heatmap *h, unsigned c, unsigned r);

/* The cell's shade, 0 (nothing) to levels - 1 (the hottest), on a square
 * root scale so that a few hot cells do not wash out the rest: what both
 * writers draw. */
unsigned heatmap_level(const struct heatmap *h, uint64_t value, unsigned levels);

/* One line per second: its UTC time, its cells as characters " .:-=+*#%@"
 * (rows folded to at most `width` characters by summing neighbours; 0: 50)
 * and its total. A header says the scale. Returns 0 or -EIO. */
int heatmap_write_text(FILE *f, const struct heatmap *h, unsigned width);

struct heatmap_svg_opts {
        const char *title;    /* NULL: "CPU samples by time" or "Blocked time by time" */
        const char *subtitle; /* NULL: the window, total and scale */
        unsigned width;       /* image width in pixels; 0: 1200 */
        unsigned cell_height; /* pixels; 0: 8 */
};

/* The grid as a self-contained SVG: labelled axes (UTC times every few
 * columns, millisecond offsets), a colour scale, a tooltip per cell. Each
 * cell has data-t (its start, ms since start_ns) for a page's script.
 * Returns 0 or -EIO. */
int heatmap_write_svg(FILE *f, const struct heatmap *h, const struct heatmap_svg_opts *o);

/* What the page's selection sums: a sample at t_ns, or (span_ns > 0) a
 * span of blocked time from t_ns, weight its nanoseconds, which a range
 * counts by the part of it the range holds. An on-CPU sample's weight is
 * in rate-weight.h's fixed point when the page's are (heatmap_page.one,
 * heatmap-weight.h). */
struct heatmap_sample {
        uint64_t t_ns;
        uint64_t span_ns;
        uint64_t weight;
        uint32_t stack;   /* index into the page's stacks (folded texts) */
        uint32_t row;     /* the answer's stack line: what a range rounds by */
        uint32_t hz;      /* the rate it was taken at; 0: the base rate */
};

/* What the page's script selects from. */
struct heatmap_page {
        const struct heatmap_sample *samples;
        size_t n_samples;
        const char *const *stacks; /* stack i's folded frames */
        size_t n_stacks;
        /* the folded text of each row (a timeline answer's stack lines,
         * which may read the same); NULL: the rows are the stacks */
        const uint32_t *row_stack;
        size_t n_rows;
        /* a sample's worth in the weights: RATE_WEIGHT_ONE when on-CPU
         * weights are fixed point (samples of a raised rate, issue 44),
         * which a range apportions per row as a query does; 0: 1 */
        uint64_t one;
};

/* The page: the SVG, a line saying what is selected, the range's flame
 * graph and its folded stacks ("frame;frame;frame weight" lines, as
 * `profctl query --format folded` writes them, root first); samples
 * outside the window are left out. No network: the script and the data
 * are in the page. Returns 0, -EINVAL (a sample's row or a row's stack out
 * of range), -ENOMEM or -EIO. */
int heatmap_write_html(FILE *f, const struct heatmap *h, const struct heatmap_page *p,
                       const struct heatmap_svg_opts *o);
