/* Flame graphs as one self-contained SVG file (no network, no Perl): frames
 * sized by weight, a tooltip with name and share, click to zoom, a search box
 * that highlights matches and shows their share. Its script is inline and
 * optional: without it the SVG still shows every frame and label.
 *
 * Layout: stacks are merged into a tree whose nodes are a function (name,
 * module, and whether it is kernel, inlined, JIT, Python or Java code) under a given path,
 * as flamegraph.pl merges folded lines; siblings are sorted by name, so the
 * x axis is alphabetical, not time. The bottom frame "all" is the total.
 * Stacks of a grouped answer ("group") get the group as their root frame.
 * Frames narrower than min_width pixels are left out, with all they hold
 * (zooming does not bring them back: the file does not contain them).
 *
 * Colours (palette FLAME_PALETTE_KIND), a legend in the image repeats them:
 *   user code      warm red      (hue 350..15)
 *   kernel         orange/yellow (hue 32..52)
 *   JIT            green         (hue 95..135)
 *   Python         blue          (hue 205..230): a CPython frame, named
 *                                 qualname, module its .py file
 *   Java           green         (hue 140..160, darker than JIT): a HotSpot
 *                                 frame, package.Class.method, module its
 *                                 .java file
 *   inlined        aqua          (hue 175..195), whatever its module
 *   unresolved     grey          (a "module+0xOFF" name, [unknown], [lost])
 *   group root     violet        (comm-pid or unit of a grouped answer)
 * the shade within a hue comes from a hash of the name, so a function keeps
 * its colour from one graph to the next. FLAME_PALETTE_MODULE colours by a
 * hash of the module instead (one hue per library).
 *
 * Differential graphs (flame_svg_write_diff): the layout and widths are
 * those of the current profile; a node's colour is the change of its SELF
 * share, current self / current total - baseline self / baseline total (the
 * baseline node being the same path in the baseline profile), so two windows
 * with different sample counts compare. Red = the share grew, blue = it
 * shrank, white = unchanged; the strongest colour is the largest change in
 * the graph. This is what difffolded.pl -n followed by flamegraph.pl draws.
 * Paths found only in the baseline have no width in the current profile and
 * are not drawn: their loss shows as blue in no frame, only as a smaller
 * total for their parent; the tooltip of every frame gives both its
 * inclusive shares, and `profctl diff` (the table) lists what vanished. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

enum flame_palette {
        FLAME_PALETTE_KIND,   /* by kind of code: user, kernel, JIT, Python, Java, inlined (default) */
        FLAME_PALETTE_MODULE, /* one hue per module */
};

struct flame_opts {
        const char *title;    /* NULL: "Flame Graph", "Icicle Graph" or "Differential Flame Graph" */
        const char *subtitle; /* NULL: kind, total and window of the profile (UTC) */
        bool icicle;          /* root at the top, callees below it */
        unsigned width;       /* image width in pixels; 0: 1200 */
        unsigned frame_height;/* pixels; 0: 16 */
        double min_width;     /* frames narrower than this (pixels) are left out; 0: 0.1, < 0: none */
        const char *unit;     /* what a value counts ("samples"); NULL: from the profile,
                               * and "ns" values are shown as times */
        enum flame_palette palette;
};

/* Writes the flame graph of p to f. Returns 0, -ENOMEM or -EIO. */
int flame_svg_write(FILE *f, const profile *p, const struct flame_opts *o);

/* Writes the differential flame graph of current against baseline (see
 * above). Returns 0, -ENOMEM or -EIO. */
int flame_svg_write_diff(FILE *f, const profile *baseline, const profile *current, const struct flame_opts *o);
