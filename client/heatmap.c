/* Heatmaps of profile time: the grid, and its text and SVG writers (see
 * heatmap.h). */
#include "heatmap.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "heatmap-js.h"
#include "macro.h"
#include "svg-text.h"

/* SVG geometry, in pixels */
#define HEATMAP_WIDTH_DEFAULT 1200
#define HEATMAP_CELL_HEIGHT_DEFAULT 8
#define HEATMAP_LEFT 64     /* the offsets' labels */
#define HEATMAP_RIGHT 16
#define HEATMAP_TOP 58      /* title, subtitle */
#define HEATMAP_BOTTOM 64   /* the times' labels, the scale */
#define HEATMAP_CELL_WIDTH_MAX 40.0
#define HEATMAP_LABEL_GAP 72.0 /* "HH:MM:SS" and some room */
#define HEATMAP_LEVELS 10

static const char text_shades[] = " .:-=+*#%@";

static uint64_t bucket_ns(const struct heatmap *h) {
        return NSEC_PER_SEC / h->rows;
}

int heatmap_init(struct heatmap *h, uint64_t from_ns, uint64_t to_ns, unsigned rows, bool ns) {
        uint64_t start, end, columns;

        *h = (struct heatmap) {};
        if (rows == 0)
                rows = HEATMAP_ROWS_DEFAULT;
        if (to_ns <= from_ns || rows > HEATMAP_ROWS_MAX || (NSEC_PER_SEC / NSEC_PER_USEC) % rows != 0)
                return -EINVAL;
        start = from_ns - from_ns % NSEC_PER_SEC;
        end = to_ns % NSEC_PER_SEC ? to_ns - to_ns % NSEC_PER_SEC + NSEC_PER_SEC : to_ns;
        if (end < to_ns) /* the last second of the clock */
                return -EINVAL;
        columns = (end - start) / NSEC_PER_SEC;
        if (columns > HEATMAP_COLUMNS_MAX)
                return -EINVAL;
        h->cells = calloc(columns * rows, sizeof(*h->cells));
        if (!h->cells)
                return -ENOMEM;
        h->start_ns = start;
        h->from_ns = from_ns;
        h->to_ns = to_ns;
        h->columns = (unsigned) columns;
        h->rows = rows;
        h->ns = ns;
        return 0;
}

void heatmap_done(struct heatmap *h) {
        free(h->cells);
        *h = (struct heatmap) {};
}

static void cell_add(struct heatmap *h, uint64_t index, uint64_t v) {
        h->cells[index] += v;
        h->max = MAX(h->max, h->cells[index]);
        h->total += v;
}

void heatmap_add(struct heatmap *h, uint64_t t_ns, uint64_t weight) {
        if (t_ns < h->from_ns || t_ns >= h->to_ns) {
                h->outside += weight;
                return;
        }
        /* column-major: one second's rows follow each other, as the
         * bucket index since start_ns does */
        cell_add(h, (t_ns - h->start_ns) / bucket_ns(h), weight);
}

void heatmap_add_span(struct heatmap *h, uint64_t start_ns, uint64_t end_ns) {
        uint64_t b = bucket_ns(h), s, e;

        if (end_ns <= start_ns)
                return;
        s = MAX(start_ns, h->from_ns);
        e = MIN(end_ns, h->to_ns);
        if (e <= s) {
                h->outside += end_ns - start_ns;
                return;
        }
        h->outside += (s - start_ns) + (end_ns - e);
        for (uint64_t t = s; t < e;) {
                uint64_t index = (t - h->start_ns) / b, cell_end = h->start_ns + (index + 1) * b;
                uint64_t part = MIN(e, cell_end) - t;

                cell_add(h, index, part);
                t += part;
        }
}

uint64_t heatmap_cell(const struct heatmap *h, unsigned c, unsigned r) {
        return c < h->columns && r < h->rows ? h->cells[(size_t) c * h->rows + r] : 0;
}

static unsigned level_of(uint64_t value, uint64_t max, unsigned levels) {
        if (value == 0 || max == 0 || levels < 2)
                return 0;
        if (value >= max)
                return levels - 1;
        /* 1 for the faintest value, levels - 1 only for the hottest */
        return 1 + (unsigned) floor((levels - 2) * sqrt((double) value / (double) max));
}

unsigned heatmap_level(const struct heatmap *h, uint64_t value, unsigned levels) {
        return level_of(value, h->max, levels);
}

static const char *value_unit(const struct heatmap *h) {
        return h->ns ? "blocked" : "samples";
}

/* --- text --- */

/* The marks of [from_ns, to_ns) at the end of that second's line:
 * "  <- capture 3 (oom) at 14:02:03.250". */
static void text_marks_write(FILE *f, const struct heatmap *h, uint64_t from_ns, uint64_t to_ns) {
        char hms[32];

        for (size_t i = 0; i < h->n_marks; i++)
                if (h->marks[i].t_ns >= from_ns && h->marks[i].t_ns < to_ns)
                        fprintf(f, "  <- %s at %s.%03" PRIu64, h->marks[i].label,
                                svg_format_hms(hms, sizeof(hms), h->marks[i].t_ns),
                                (uint64_t) (h->marks[i].t_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
}

int heatmap_write_text(FILE *f, const struct heatmap *h, unsigned width) {
        unsigned group, chars;
        uint64_t fold_max = 0;
        char from[64], to[64], v[64], hms[32];

        if (width == 0)
                width = HEATMAP_ROWS_DEFAULT;
        group = (h->rows + width - 1) / width;
        chars = (h->rows + group - 1) / group;
        for (unsigned c = 0; c < h->columns; c++)
                for (unsigned k = 0; k < chars; k++) {
                        uint64_t sum = 0;

                        for (unsigned r = k * group; r < MIN(h->rows, (k + 1) * group); r++)
                                sum += heatmap_cell(h, c, r);
                        fold_max = MAX(fold_max, sum);
                }
        fprintf(f, "%s by time, %s to %s, one line per second, %" PRIu64 " ms per character\n",
                h->ns ? "Blocked time" : "CPU samples", svg_format_utc(from, sizeof(from), h->from_ns),
                svg_format_utc(to, sizeof(to), h->to_ns), (uint64_t) (bucket_ns(h) * group / NSEC_PER_MSEC));
        fprintf(f, "scale \"%s\": a character's shade grows with the square root of its value, '@' = %s\n",
                text_shades, svg_format_value(v, sizeof(v), fold_max, value_unit(h), h->ns));
        for (unsigned c = 0; c < h->columns; c++) {
                uint64_t line_total = 0;

                fprintf(f, "%s |", svg_format_hms(hms, sizeof(hms), h->start_ns + c * NSEC_PER_SEC));
                for (unsigned k = 0; k < chars; k++) {
                        uint64_t sum = 0;

                        for (unsigned r = k * group; r < MIN(h->rows, (k + 1) * group); r++)
                                sum += heatmap_cell(h, c, r);
                        line_total += sum;
                        fputc(text_shades[level_of(sum, fold_max, sizeof(text_shades) - 1)], f);
                }
                fprintf(f, "| %s", svg_format_value(v, sizeof(v), line_total, value_unit(h), h->ns));
                text_marks_write(f, h, h->start_ns + c * NSEC_PER_SEC, h->start_ns + (c + 1) * NSEC_PER_SEC);
                fputc('\n', f);
        }
        if (h->outside)
                fprintf(f, "outside the window: %s\n", svg_format_value(v, sizeof(v), h->outside, value_unit(h), h->ns));
        /* a capture whose pins overlap the window but whose trigger is
         * outside it is still said */
        for (size_t i = 0; i < h->n_marks; i++)
                if (h->marks[i].t_ns < h->start_ns || h->marks[i].t_ns >= h->start_ns + (uint64_t) h->columns * NSEC_PER_SEC)
                        fprintf(f, "%s at %s, outside the window\n", h->marks[i].label,
                                svg_format_utc(from, sizeof(from), h->marks[i].t_ns));
        return ferror(f) ? -EIO : 0;
}

/* --- SVG --- */

/* White (nothing) to dark red (the hottest), as FlameScope. */
static void level_colour(unsigned level, char *buf, size_t size) {
        double x = (double) level / (HEATMAP_LEVELS - 1);
        unsigned r = (unsigned) lround(255 - 55 * x), gb = (unsigned) lround(245 * (1 - x));

        if (level == 0)
                snprintf(buf, size, "#ffffff");
        else
                snprintf(buf, size, "#%02x%02x%02x", r, gb, gb);
}

/* Seconds between two time labels: the first of a round series that
 * leaves HEATMAP_LABEL_GAP pixels between them. */
static unsigned label_step(double cell_width) {
        static const unsigned steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600 };

        for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                if (steps[i] * cell_width >= HEATMAP_LABEL_GAP)
                        return steps[i];
        return 43200;
}

/* The marks inside the window: a dashed line down the column of each
 * (pointer-events none, so that a drag over it still selects cells) and a
 * marker above the grid, its tooltip the label and the time. */
static void svg_marks_write(FILE *f, const struct heatmap *h, double cell_width, double grid_height) {
        char num[32], num2[32], num3[32], hms[32];

        for (size_t i = 0; i < h->n_marks; i++) {
                const struct heatmap_mark *m = &h->marks[i];
                double x;

                if (m->t_ns < h->from_ns || m->t_ns >= h->to_ns)
                        continue;
                x = HEATMAP_LEFT + ((m->t_ns - h->start_ns) / NSEC_PER_SEC + 0.5) * cell_width;
                fprintf(f, "<g class=\"event\" data-event-t=\"%" PRIu64 "\">", (uint64_t) ((m->t_ns - h->start_ns) / NSEC_PER_MSEC));
                fputs("<title>", f);
                svg_xml_write(f, m->label, SIZE_MAX);
                fprintf(f, " at %s.%03" PRIu64 " UTC</title>", svg_format_hms(hms, sizeof(hms), m->t_ns),
                        (uint64_t) (m->t_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
                fprintf(f, "<line x1=\"%s\" y1=\"%u\" x2=\"%s\" y2=\"%s\" stroke=\"#1f5fbf\" "
                        "stroke-width=\"2\" stroke-dasharray=\"4,3\" pointer-events=\"none\"/>",
                        svg_fixed2(num, sizeof(num), x), HEATMAP_TOP, num,
                        svg_fixed2(num2, sizeof(num2), HEATMAP_TOP + grid_height));
                fprintf(f, "<path d=\"M%s %u L%s %u L%s %u Z\" fill=\"#1f5fbf\"/></g>\n",
                        svg_fixed2(num, sizeof(num), x - 6), HEATMAP_TOP - 10, svg_fixed2(num2, sizeof(num2), x + 6),
                        HEATMAP_TOP - 10, svg_fixed2(num3, sizeof(num3), x), HEATMAP_TOP);
        }
}

/* The <svg> element (without the XML declaration, for the page too). */
static int write_svg_element(FILE *f, const struct heatmap *h, const struct heatmap_svg_opts *o) {
        static const struct heatmap_svg_opts defaults = {};
        unsigned width, cell_height, step, first, offsets_step_ms;
        double cell_width, grid_width, grid_height, x, y;
        char num[32], num2[32], from[64], to[64], v[64], hms[32], colour[16];

        if (!o)
                o = &defaults;
        width = o->width ? o->width : HEATMAP_WIDTH_DEFAULT;
        cell_height = o->cell_height ? o->cell_height : HEATMAP_CELL_HEIGHT_DEFAULT;
        cell_width = MIN(HEATMAP_CELL_WIDTH_MAX, (double) (width - HEATMAP_LEFT - HEATMAP_RIGHT) / h->columns);
        grid_width = cell_width * h->columns;
        grid_height = (double) cell_height * h->rows;

        fprintf(f, "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
                "viewBox=\"0 0 %u %u\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n",
                width, (unsigned) ceil(HEATMAP_TOP + grid_height + HEATMAP_BOTTOM),
                width, (unsigned) ceil(HEATMAP_TOP + grid_height + HEATMAP_BOTTOM));
        fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
        fprintf(f, "<text x=\"%u\" y=\"22\" font-size=\"16\">", HEATMAP_LEFT);
        svg_xml_write(f, o->title ? o->title : h->ns ? "Blocked time by time" : "CPU samples by time", SIZE_MAX);
        fprintf(f, "</text>\n<text x=\"%u\" y=\"42\" fill=\"#555555\">", HEATMAP_LEFT);
        if (o->subtitle)
                svg_xml_write(f, o->subtitle, SIZE_MAX);
        else
                fprintf(f, "%s to %s: %s; a column is a second, a row %" PRIu64 " ms", svg_format_utc(from, sizeof(from), h->from_ns),
                        svg_format_utc(to, sizeof(to), h->to_ns), svg_format_value(v, sizeof(v), h->total, value_unit(h), h->ns),
                        (uint64_t) (bucket_ns(h) / NSEC_PER_MSEC));
        fprintf(f, "</text>\n");

        /* the grid: its frame, then the cells that hold something */
        fprintf(f, "<g id=\"grid\" transform=\"translate(%u,%u)\" data-columns=\"%u\" data-rows=\"%u\">\n",
                HEATMAP_LEFT, HEATMAP_TOP, h->columns, h->rows);
        fprintf(f, "<rect id=\"grid-frame\" width=\"%s\" height=\"%s\" fill=\"#ffffff\" stroke=\"#cccccc\"/>\n",
                svg_fixed2(num, sizeof(num), grid_width), svg_fixed2(num2, sizeof(num2), grid_height));
        for (unsigned c = 0; c < h->columns; c++)
                for (unsigned r = 0; r < h->rows; r++) {
                        uint64_t value = heatmap_cell(h, c, r), t = (uint64_t) c * NSEC_PER_SEC + r * bucket_ns(h);

                        if (!value)
                                continue;
                        level_colour(heatmap_level(h, value, HEATMAP_LEVELS), colour, sizeof(colour));
                        fprintf(f, "<rect x=\"%s\" y=\"%u\" width=\"%s\" height=\"%u\" fill=\"%s\" data-t=\"%" PRIu64 "\" data-v=\"%" PRIu64 "\">",
                                svg_fixed2(num, sizeof(num), c * cell_width), r * cell_height,
                                svg_fixed2(num2, sizeof(num2), cell_width), cell_height, colour,
                                (uint64_t) (t / NSEC_PER_MSEC), value);
                        fprintf(f, "<title>%s.%03" PRIu64 " +%" PRIu64 " ms: %s</title></rect>\n",
                                svg_format_hms(hms, sizeof(hms), h->start_ns + t), (uint64_t) (t % NSEC_PER_SEC / NSEC_PER_MSEC),
                                (uint64_t) (bucket_ns(h) / NSEC_PER_MSEC), svg_format_value(v, sizeof(v), value, value_unit(h), h->ns));
                }
        fprintf(f, "</g>\n");

        svg_marks_write(f, h, cell_width, grid_height);

        /* the offsets within a second, downwards */
        offsets_step_ms = grid_height >= 300 ? 100 : grid_height >= 120 ? 250 : 500;
        for (unsigned ms = 0; ms <= 1000; ms += offsets_step_ms) {
                y = HEATMAP_TOP + grid_height * ms / 1000.0;
                fprintf(f, "<text x=\"%u\" y=\"%s\" text-anchor=\"end\" dominant-baseline=\"middle\">%u ms</text>\n",
                        HEATMAP_LEFT - 6, svg_fixed2(num, sizeof(num), y), ms);
        }
        /* the seconds, left to right, as UTC wall-clock times */
        step = label_step(cell_width);
        y = HEATMAP_TOP + grid_height;
        first = (unsigned) ((step - (h->start_ns / NSEC_PER_SEC) % step) % step);
        if (first >= h->columns)
                first = 0; /* a window shorter than a step: its first second */
        for (unsigned c = first; c < h->columns; c += step) {
                uint64_t t = h->start_ns + (uint64_t) c * NSEC_PER_SEC;

                x = HEATMAP_LEFT + c * cell_width;
                fprintf(f, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#999999\"/>\n",
                        svg_fixed2(num, sizeof(num), x), svg_fixed2(num2, sizeof(num2), y), num,
                        svg_fixed2(v, sizeof(v), y + 5));
                fprintf(f, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n", num,
                        svg_fixed2(num2, sizeof(num2), y + 18), svg_format_hms(hms, sizeof(hms), t));
        }
        fprintf(f, "<text x=\"%u\" y=\"%s\" fill=\"#555555\">UTC</text>\n", HEATMAP_LEFT,
                svg_fixed2(num, sizeof(num), y + 34));

        /* the scale */
        x = HEATMAP_LEFT + 40;
        for (unsigned l = 0; l < HEATMAP_LEVELS; l++) {
                level_colour(l, colour, sizeof(colour));
                fprintf(f, "<rect x=\"%s\" y=\"%s\" width=\"14\" height=\"10\" fill=\"%s\" stroke=\"#cccccc\"/>\n",
                        svg_fixed2(num, sizeof(num), x + 16 * l), svg_fixed2(num2, sizeof(num2), y + 25), colour);
        }
        fprintf(f, "<text x=\"%s\" y=\"%s\">0 to %s a cell</text>\n", svg_fixed2(num, sizeof(num), x + 16 * HEATMAP_LEVELS + 6),
                svg_fixed2(num2, sizeof(num2), y + 34), svg_format_value(v, sizeof(v), h->max, value_unit(h), h->ns));
        fprintf(f, "</svg>\n");
        return ferror(f) ? -EIO : 0;
}

int heatmap_write_svg(FILE *f, const struct heatmap *h, const struct heatmap_svg_opts *o) {
        fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", f);
        return write_svg_element(f, h, o);
}

/* --- HTML --- */

/* The page's data as JSON: "</" is written "<\/" (JSON_ESCAPE_SLASH), so
 * no name from a binary can end the script element it is in. */
static int write_data(FILE *f, const struct heatmap *h, const struct heatmap_page *p) {
        _cleanup_(json_decrefp) json_t *names = json_array();
        _cleanup_free_ char *names_text = NULL;

        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_stacks; i++) {
                const char *name = p->stacks[i] ? p->stacks[i] : "";
                json_t *v = json_string(name);

                if (!v) {
                        /* not UTF-8 (a name from a binary): its other bytes stay */
                        _cleanup_free_ char *ascii = strdup(name);

                        if (!ascii)
                                return -ENOMEM;
                        for (char *c = ascii; *c; c++)
                                if ((unsigned char) *c >= 0x80)
                                        *c = '?';
                        v = json_string(ascii);
                }
                if (json_array_append_new(names, v) < 0)
                        return -ENOMEM;
        }
        names_text = json_dumps(names, JSON_COMPACT | JSON_ESCAPE_SLASH);
        if (!names_text)
                return -ENOMEM;
        fprintf(f, "{\"bucket_ms\":%" PRIu64 ",\"unit\":\"%s\",\"one\":%" PRIu64 ",\"stacks\":%s,\"rows\":[",
                (uint64_t) (bucket_ns(h) / NSEC_PER_MSEC), h->ns ? "ns blocked" : "samples", p->one ?: 1,
                names_text);
        for (size_t i = 0; i < (p->row_stack ? p->n_rows : p->n_stacks); i++)
                fprintf(f, "%s%" PRIu32, i ? "," : "", p->row_stack ? p->row_stack[i] : (uint32_t) i);
        fputs("],\"samples\":[", f);
        for (size_t i = 0, n = 0; i < p->n_samples; i++) {
                const struct heatmap_sample *s = &p->samples[i];
                uint64_t end = s->t_ns + s->span_ns;

                if (end < h->from_ns || s->t_ns >= h->to_ns || (s->span_ns == 0 && s->t_ns < h->from_ns))
                        continue;
                fprintf(f, "%s[%" PRId64 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 "]", n++ ? "," : "",
                        ((int64_t) s->t_ns - (int64_t) h->start_ns) / (int64_t) NSEC_PER_USEC,
                        p->row_stack ? s->row : s->stack, s->weight, (uint64_t) (s->span_ns / NSEC_PER_USEC));
        }
        fputs("]}", f);
        return 0;
}

int heatmap_write_html(FILE *f, const struct heatmap *h, const struct heatmap_page *p,
                       const struct heatmap_svg_opts *o) {
        int r;

        for (size_t i = 0; i < p->n_samples; i++)
                if (p->row_stack ? p->samples[i].row >= p->n_rows : p->samples[i].stack >= p->n_stacks)
                        return -EINVAL;
        for (size_t i = 0; p->row_stack && i < p->n_rows; i++)
                if (p->row_stack[i] >= p->n_stacks)
                        return -EINVAL;
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
        svg_xml_write(f, o && o->title ? o->title : h->ns ? "Blocked time by time" : "CPU samples by time", SIZE_MAX);
        fputs("</title>\n<style>\n"
              "body { font-family: Verdana, sans-serif; font-size: 12px; margin: 8px; }\n"
              "#grid { cursor: crosshair; }\n"
              "#flame { position: relative; width: 100%; margin-top: 8px; }\n"
              ".frame { position: absolute; height: 16px; overflow: hidden; white-space: nowrap; "
              "font-size: 11px; line-height: 16px; padding-left: 2px; box-sizing: border-box; }\n"
              "#folded { font-size: 11px; max-height: 20em; overflow: auto; background: #f6f6f6; }\n"
              "</style>\n</head>\n<body>\n", f);
        r = write_svg_element(f, h, o);
        if (r < 0)
                return r;
        fputs("<p id=\"selection\">Drag over the cells to select a time range: its flame graph and folded stacks "
              "appear below.</p>\n<div id=\"flame\"></div>\n<pre id=\"folded\"></pre>\n"
              "<script type=\"application/json\" id=\"heatmap-data\">", f);
        r = write_data(f, h, p);
        if (r < 0)
                return r;
        fputs("</script>\n<script>\n", f);
        fputs(heatmap_js, f);
        fputs("</script>\n</body>\n</html>\n", f);
        return ferror(f) ? -EIO : 0;
}
