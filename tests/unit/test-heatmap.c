/* Unit test of the heatmap grid and its writers (client/heatmap.c): which
 * cell a time falls in at the window's edges, spans spread over cells,
 * the shade scale, the text lines and the SVG's cells, labels and
 * escaping. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heatmap.h"
#include "heatmap-weight.h"
#include "macro.h"
#include "rate-weight.h"
#include "tests.h"

#define S(x) ((uint64_t) (x) * NSEC_PER_SEC)
#define MS(x) ((uint64_t) (x) * NSEC_PER_MSEC)

enum writer { TEXT, SVG };

/* What a writer wrote of h, NUL-terminated, to free. */
static char *capture(enum writer w, const struct heatmap *h, unsigned width, const struct heatmap_svg_opts *o) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CHECK(f);
        CHECK_INT_EQ(w == TEXT ? heatmap_write_text(f, h, width) : heatmap_write_svg(f, h, o), 0);
        fclose(f);
        return buf;
}

static char *capture_text(const struct heatmap *h, unsigned width) {
        return capture(TEXT, h, width, NULL);
}

static char *capture_svg(const struct heatmap *h, const struct heatmap_svg_opts *o) {
        return capture(SVG, h, 0, o);
}

static size_t count(const char *s, const char *needle) {
        size_t n = 0;

        for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* The line of the text output that starts with prefix. */
static const char *line_of(const char *text, const char *prefix) {
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, prefix, strlen(prefix)) == 0)
                        return p;
        return NULL;
}

static void test_init(void) {
        struct heatmap h;

        CHECK_INT_EQ(heatmap_init(&h, S(10), S(10), 0, false), -EINVAL);
        CHECK_INT_EQ(heatmap_init(&h, S(11), S(10), 0, false), -EINVAL);
        CHECK_INT_EQ(heatmap_init(&h, S(10), S(11), 3, false), -EINVAL);    /* 333.3 ms rows */
        CHECK_INT_EQ(heatmap_init(&h, S(10), S(11), 2000, false), -EINVAL); /* beyond 1 ms */
        CHECK_INT_EQ(heatmap_init(&h, S(10), S(10) + S(86401), 0, false), -EINVAL);
        CHECK_INT_EQ(heatmap_init(&h, S(10), S(10) + S(86400), 0, false), 0);
        CHECK_INT_EQ(h.columns, 86400);
        heatmap_done(&h);

        /* columns on whole seconds around the window */
        CHECK_INT_EQ(heatmap_init(&h, S(1000) + MS(250), S(1003) + MS(100), 0, false), 0);
        CHECK_INT_EQ(h.start_ns, S(1000));
        CHECK_INT_EQ(h.columns, 4);
        CHECK_INT_EQ(h.rows, HEATMAP_ROWS_DEFAULT);
        heatmap_done(&h);
        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1002), 1000, false), 0);
        CHECK_INT_EQ(h.columns, 2);
        heatmap_done(&h);
}

static void test_cells(void) {
        struct heatmap h;

        CHECK_INT_EQ(heatmap_init(&h, S(1000) + MS(250), S(1003) + MS(100), 50, false), 0);
        heatmap_add(&h, S(1000) + MS(250), 1);          /* the window's first ns */
        heatmap_add(&h, S(1000) + MS(250) - 1, 7);      /* just before it */
        heatmap_add(&h, S(1003) + MS(100), 7);          /* its end: outside */
        heatmap_add(&h, S(1003) + MS(100) - 1, 2);      /* its last ns */
        heatmap_add(&h, S(1001) + MS(39) + 999999, 3);  /* the end of row 1 */
        heatmap_add(&h, S(1001) + MS(40), 4);           /* the start of row 2 */
        CHECK_INT_EQ(heatmap_cell(&h, 0, 12), 1);
        CHECK_INT_EQ(heatmap_cell(&h, 3, 4), 2);
        CHECK_INT_EQ(heatmap_cell(&h, 1, 1), 3);
        CHECK_INT_EQ(heatmap_cell(&h, 1, 2), 4);
        CHECK_INT_EQ(heatmap_cell(&h, 4, 0), 0); /* past the grid */
        CHECK_INT_EQ(heatmap_cell(&h, 0, 50), 0);
        CHECK_INT_EQ(h.total, 10);
        CHECK_INT_EQ(h.outside, 14);
        CHECK_INT_EQ(h.max, 4);
        heatmap_done(&h);
}

static void test_spans(void) {
        struct heatmap h;
        uint64_t sum = 0;

        CHECK_INT_EQ(heatmap_init(&h, S(1000) + MS(250), S(1003) + MS(100), 50, true), 0);
        /* 1001.010 to 1001.050: 10 ms of row 0, all 20 of row 1, 10 of row 2 */
        heatmap_add_span(&h, S(1001) + MS(10), S(1001) + MS(50));
        CHECK_INT_EQ(heatmap_cell(&h, 1, 0), MS(10));
        CHECK_INT_EQ(heatmap_cell(&h, 1, 1), MS(20));
        CHECK_INT_EQ(heatmap_cell(&h, 1, 2), MS(10));
        CHECK_INT_EQ(heatmap_cell(&h, 1, 3), 0);
        /* across the window's start: its first 50 ms are outside */
        heatmap_add_span(&h, S(1000) + MS(200), S(1000) + MS(300));
        CHECK_INT_EQ(heatmap_cell(&h, 0, 12), MS(10)); /* 240-260 ms, from 250 */
        CHECK_INT_EQ(heatmap_cell(&h, 0, 13), MS(20));
        CHECK_INT_EQ(heatmap_cell(&h, 0, 14), MS(20));
        CHECK_INT_EQ(heatmap_cell(&h, 0, 15), 0);
        CHECK_INT_EQ(h.outside, MS(50));
        /* wholly outside, and empty */
        heatmap_add_span(&h, S(1004), S(1005));
        heatmap_add_span(&h, S(1002), S(1002));
        CHECK_INT_EQ(h.outside, MS(50) + S(1));
        /* across a second's boundary and the window's end: 2.5 s in all */
        heatmap_add_span(&h, S(1000) + MS(600), S(1004));
        for (unsigned c = 0; c < h.columns; c++)
                for (unsigned r = 0; r < h.rows; r++)
                        sum += heatmap_cell(&h, c, r);
        CHECK_INT_EQ(sum, h.total);
        CHECK_INT_EQ(h.total, MS(40) + MS(50) + S(2) + MS(500));
        CHECK_INT_EQ(h.outside, MS(50) + S(1) + MS(900));
        heatmap_done(&h);
}

static void test_levels(void) {
        struct heatmap h;

        CHECK_INT_EQ(heatmap_init(&h, S(1), S(2), 0, false), 0);
        heatmap_add(&h, S(1), 100);
        CHECK_INT_EQ(heatmap_level(&h, 0, 10), 0);
        CHECK_INT_EQ(heatmap_level(&h, 1, 10), 1);
        CHECK_INT_EQ(heatmap_level(&h, 25, 10), 5); /* 1 + floor(8 * 0.5) */
        CHECK_INT_EQ(heatmap_level(&h, 99, 10), 8);
        CHECK_INT_EQ(heatmap_level(&h, 100, 10), 9);
        heatmap_done(&h);
}

static void test_text(void) {
        struct heatmap h;
        const char *line;
        char *text;

        /* 1970-01-01 00:16:40 UTC is 1000 s */
        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1003), 50, false), 0);
        for (unsigned ms = 300; ms < 600; ms += 10) /* a 300 ms burst in the second second */
                heatmap_add(&h, S(1001) + MS(ms), 2);
        heatmap_add(&h, S(1002) + MS(990), 1);
        heatmap_add(&h, S(2000), 5);
        text = capture_text(&h, 0);
        CHECK(strstr(text, "CPU samples by time, 1970-01-01 00:16:40 UTC to 1970-01-01 00:16:43 UTC"));
        CHECK(strstr(text, "20 ms per character"));
        CHECK(strstr(text, "'@' = 4 samples"));
        CHECK(line_of(text, "00:16:40 |"));
        line = line_of(text, "00:16:41 |");
        CHECK(line);
        if (line) {
                /* cells 15..29 are the burst, 4 samples each */
                CHECK(strncmp(line + 10, "               @@@@@@@@@@@@@@@                    | 60 samples\n", 63) == 0);
        }
        line = line_of(text, "00:16:42 |");
        /* 1 of 4: the square root scale's middle shade */
        CHECK(line && line[10 + 49] == '+' && strncmp(line + 10 + 50, "| 1 samples", 11) == 0);
        CHECK(strstr(text, "outside the window: 5 samples"));
        CHECK_INT_EQ(count(text, "\n"), 2 + 3 + 1);
        free(text);

        /* folded to 25 characters: two rows each */
        text = capture_text(&h, 25);
        CHECK(strstr(text, "40 ms per character"));
        CHECK(strstr(text, "'@' = 8 samples"));
        line = line_of(text, "00:16:41 |");
        /* 280-320 ms holds half the burst's first 40 ms */
        CHECK(line && strncmp(line + 10, "       *@@@@@@@          | 60 samples", 37) == 0);
        free(text);
        heatmap_done(&h);

        /* blocked time reads as time */
        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1001), 50, true), 0);
        heatmap_add_span(&h, S(1000), S(1000) + MS(250));
        text = capture_text(&h, 0);
        CHECK(strstr(text, "Blocked time by time"));
        CHECK(strstr(text, "'@' = 20.00 ms\n"));
        CHECK(strstr(text, "00:16:40 |@@@@@@@@@@@@*                                     | 250.00 ms\n"));
        free(text);
        heatmap_done(&h);
}

static void test_svg(void) {
        struct heatmap h;
        char *svg;

        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1003), 50, false), 0);
        for (unsigned ms = 300; ms < 600; ms += 10)
                heatmap_add(&h, S(1001) + MS(ms), 2);
        heatmap_add(&h, S(1002) + MS(990), 1);
        svg = capture_svg(&h, &(struct heatmap_svg_opts) { .title = "a <b> & \"c\"\x01" });
        CHECK(strstr(svg, "<?xml") == svg);
        CHECK(strstr(svg, ">a &lt;b&gt; &amp; &quot;c&quot;?</text>"));
        /* background, grid frame, 16 cells that hold something, the scale */
        CHECK_INT_EQ(count(svg, "<rect"), 2 + 16 + 10);
        CHECK_INT_EQ(count(svg, "data-t="), 16);
        CHECK(strstr(svg, "data-t=\"1300\" data-v=\"4\"><title>00:16:41.300 +20 ms: 4 samples</title>"));
        CHECK(strstr(svg, "data-t=\"2980\" data-v=\"1\"><title>00:16:42.980 +20 ms: 1 samples</title>"));
        /* the hottest cells are the darkest colour, the faint one the lightest */
        CHECK(strstr(svg, "fill=\"#c80000\" data-t=\"1300\""));
        CHECK(strstr(svg, "fill=\"#e06d6d\" data-t=\"2980\""));
        /* columns of 40 px at most: a label every other second, and the offsets */
        CHECK(strstr(svg, ">00:16:40</text>") && !strstr(svg, ">00:16:41</text>") && strstr(svg, ">00:16:42</text>"));
        CHECK(strstr(svg, "width=\"1200\""));
        CHECK(strstr(svg, ">0 ms</text>") && strstr(svg, ">500 ms</text>") && strstr(svg, ">1000 ms</text>"));
        CHECK(strstr(svg, "61 samples; a column is a second, a row 20 ms"));
        CHECK(strstr(svg, "0 to 4 samples a cell"));
        CHECK(strstr(svg, "</svg>\n"));
        free(svg);
        heatmap_done(&h);

        /* an hour: labels every few minutes, not every second */
        CHECK_INT_EQ(heatmap_init(&h, S(3600), S(7200), 50, false), 0);
        heatmap_add(&h, S(3601), 1);
        svg = capture_svg(&h, NULL);
        CHECK(strstr(svg, ">01:00:00</text>"));
        CHECK(!strstr(svg, ">01:00:01</text>"));
        CHECK(count(svg, "text-anchor=\"middle\">") <= 16);
        CHECK(strstr(svg, "CPU samples by time"));
        free(svg);
        heatmap_done(&h);
}

static char *capture_html(const struct heatmap *h, const struct heatmap_sample *samples, size_t n,
                          const char *const *stacks, size_t n_stacks, int expect) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CHECK(f);
        CHECK_INT_EQ(heatmap_write_html(f, h,
                                        &(struct heatmap_page) { .samples = samples, .n_samples = n,
                                                                 .stacks = stacks, .n_stacks = n_stacks },
                                        NULL),
                     expect);
        fclose(f);
        return buf;
}

/* The page test_heatmap_page.py loads in Chromium: a 300 ms burst in
 * main;burst from 1001.300 s, main;idle_loop every 100 ms, one sample of a
 * stack whose name would end the script element, and 400 ms of blocked
 * time in main;wait from 1002.200 s. */
static const char *const page_stacks[] = { "main;burst", "main;idle_loop", "main;a</script>b", "main;wait\xff" };

static size_t page_samples(struct heatmap *h, struct heatmap_sample *s) {
        size_t n = 0;

        for (uint64_t t = S(1001) + MS(300); t < S(1001) + MS(600); t += MS(10))
                s[n++] = (struct heatmap_sample) { .t_ns = t, .weight = 1, .stack = 0 };
        for (uint64_t t = S(1000); t < S(1003); t += MS(100))
                s[n++] = (struct heatmap_sample) { .t_ns = t, .weight = 1, .stack = 1 };
        s[n++] = (struct heatmap_sample) { .t_ns = S(1002) + MS(500), .weight = 1, .stack = 2 };
        s[n++] = (struct heatmap_sample) { .t_ns = S(999), .weight = 1, .stack = 2 }; /* outside */
        for (size_t i = 0; i < n; i++)
                heatmap_add(h, s[i].t_ns, s[i].weight);
        s[n++] = (struct heatmap_sample) { .t_ns = S(1002) + MS(200), .span_ns = MS(400), .weight = MS(400), .stack = 3 };
        return n;
}

static void test_html(const char *dir) {
        struct heatmap_sample samples[128];
        struct heatmap h;
        size_t n;
        char *page;

        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1003), 50, false), 0);
        n = page_samples(&h, samples);
        CHECK(n < ELEMENTSOF(samples));
        page = capture_html(&h, samples, n, page_stacks, ELEMENTSOF(page_stacks), 0);
        CHECK(strstr(page, "<!DOCTYPE html>") == page);
        CHECK(strstr(page, "<title>CPU samples by time</title>"));
        CHECK(strstr(page, "<svg version=\"1.1\""));
        CHECK(!strstr(page, "<?xml"));
        /* the data: stacks escaped so that none ends the script, bad UTF-8
         * replaced, samples in microseconds after the first column */
        CHECK(strstr(page, "\"stacks\":[\"main;burst\",\"main;idle_loop\",\"main;a<\\/script>b\",\"main;wait?\"]"));
        CHECK_INT_EQ(count(page, "</script>"), 2);
        CHECK(strstr(page, "\"samples\":[[1300000,0,1,0],"));
        CHECK(strstr(page, ",[2200000,3,400000000,400000]]}"));
        CHECK(!strstr(page, "[-1000000,"));
        CHECK(strstr(page, "\"bucket_ms\":20,\"unit\":\"samples\""));
        CHECK(strstr(page, "#range=")); /* the script is in */
        free(page);

        if (dir) {
                /* a capture's mark in the burst's column: the page still
                 * selects and folds under it (test_heatmap_page.py) */
                static const struct heatmap_mark mark = { .t_ns = S(1001) + MS(400), .label = "capture 1 (manual)" };
                char path[4096];
                FILE *f;

                h.marks = &mark;
                h.n_marks = 1;

                snprintf(path, sizeof(path), "%s/heatmap.html", dir);
                f = fopen(path, "we");
                CHECK(f);
                if (f) {
                        CHECK_INT_EQ(heatmap_write_html(f, &h,
                                                        &(struct heatmap_page) {
                                                                .samples = samples,
                                                                .n_samples = n,
                                                                .stacks = page_stacks,
                                                                .n_stacks = ELEMENTSOF(page_stacks),
                                                        },
                                                        NULL),
                                     0);
                        CHECK_INT_EQ(fclose(f), 0);
                }
        }

        /* a stack out of range is refused before anything is written */
        samples[0].stack = ELEMENTSOF(page_stacks);
        page = capture_html(&h, samples, n, page_stacks, ELEMENTSOF(page_stacks), -EINVAL);
        CHECK_INT_EQ(strlen(page), 0);
        free(page);
        heatmap_done(&h);
}

/* The page of a capture's raise (issue 44), which test_heatmap_page.py
 * loads: 1000 s at the base rate, 49 Hz; 1001 s raised to 499 Hz, the
 * burst on two stack lines that read the same (an unprivileged caller's
 * "[kernel]") and idle_loop; at 1002.5 s one raised sample on each of six
 * stacks, 0.59 of a base sample together, which round to one on the
 * first. Beside it, heatmap-raised.json: the folded stacks C's
 * heatmap_range_weigh gives each range the script is asked for. */
static const char *const raised_stacks[] = { "main;burst", "main;idle_loop", "main;r0", "main;r1", "main;r2",
                                             "main;r3", "main;r4", "main;r5" };
static const uint32_t raised_rows[] = { 0, 1, 0, 2, 3, 4, 5, 6, 7 };

static size_t raised_samples(struct heatmap_sample *s) {
        size_t n = 0;

        for (unsigned i = 0; i < 49; i++)
                s[n++] = (struct heatmap_sample) { .t_ns = S(1000) + i * (NSEC_PER_SEC / 49), .row = 0 };
        for (unsigned i = 0; i < 499; i++)
                s[n++] = (struct heatmap_sample) { .t_ns = S(1001) + i * (NSEC_PER_SEC / 499), .row = i % 5 == 4 ? 1 : i % 2 ? 2 : 0,
                                                   .hz = 499 };
        for (uint32_t row = 3; row < 9; row++)
                s[n++] = (struct heatmap_sample) { .t_ns = S(1002) + MS(500), .row = row, .hz = 499 };
        for (size_t i = 0; i < n; i++) {
                s[i].stack = raised_rows[s[i].row];
                s[i].weight = heatmap_weight_fixed(1, s[i].hz, 49);
        }
        return n;
}

static void write_raised_page(const char *dir) {
        static const uint64_t ranges[][2] = { { 0, 3000 }, { 1300, 1620 }, { 2400, 2600 } };
        static struct heatmap_sample s[1024];
        _cleanup_(json_decrefp) json_t *expected = json_object();
        size_t n = raised_samples(s);
        struct heatmap h;
        char path[4096];
        FILE *f;

        CHECK(n < ELEMENTSOF(s));
        CHECK(expected);
        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1003), 50, false), 0);
        for (size_t i = 0; i < n; i++)
                heatmap_add(&h, s[i].t_ns, s[i].weight);
        CHECK_INT_EQ(heatmap_weigh_cells(&h), 0);
        /* 49 at the base rate, 49 for the raised second, 1 for the six */
        CHECK_INT_EQ(h.total, 99);
        snprintf(path, sizeof(path), "%s/heatmap-raised.html", dir);
        f = fopen(path, "we");
        CHECK(f);
        if (f) {
                CHECK_INT_EQ(heatmap_write_html(f, &h,
                                                &(struct heatmap_page) {
                                                        .samples = s,
                                                        .n_samples = n,
                                                        .stacks = raised_stacks,
                                                        .n_stacks = ELEMENTSOF(raised_stacks),
                                                        .row_stack = raised_rows,
                                                        .n_rows = ELEMENTSOF(raised_rows),
                                                        .one = RATE_WEIGHT_ONE,
                                                },
                                                NULL),
                             0);
                CHECK_INT_EQ(fclose(f), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
                uint64_t rows[ELEMENTSOF(raised_rows)], texts[ELEMENTSOF(raised_stacks)] = {};
                char key[64], *text = NULL;
                size_t size = 0;
                FILE *m = open_memstream(&text, &size);

                CHECK(m);
                CHECK_INT_EQ(heatmap_range_weigh(s, n, ELEMENTSOF(raised_rows), S(1000) + MS(ranges[i][0]),
                                                 S(1000) + MS(ranges[i][1]), rows),
                             0);
                for (size_t r = 0; r < ELEMENTSOF(raised_rows); r++)
                        texts[raised_rows[r]] += rows[r];
                /* the stacks' names are in sorted order already */
                for (size_t t = 0, k = 0; t < ELEMENTSOF(raised_stacks); t++)
                        if (texts[t])
                                fprintf(m, "%s%s %" PRIu64, k++ ? "\n" : "", raised_stacks[t], texts[t]);
                fclose(m);
                snprintf(key, sizeof(key), "%" PRIu64 "-%" PRIu64, ranges[i][0], ranges[i][1]);
                CHECK_INT_EQ(json_object_set_new(expected, key, json_string(text)), 0);
                free(text);
        }
        snprintf(path, sizeof(path), "%s/heatmap-raised.json", dir);
        CHECK_INT_EQ(json_dump_file(expected, path, JSON_SORT_KEYS), 0);
        heatmap_done(&h);
}

/* Events (captures' triggers): a mark at the end of its second's text
 * line, one outside the columns said after the grid; in the SVG a line and
 * a marker whose tooltip is the label, escaped, only for marks inside the
 * window. */
static void test_marks(void) {
        const struct heatmap_mark marks[] = {
                { .t_ns = S(1001) + MS(250), .label = "capture 3 (cpu:pid=7>50)" },
                { .t_ns = S(990), .label = "capture 2 (oom)" },
        };
        struct heatmap h;
        const char *line;
        char *text;

        CHECK_INT_EQ(heatmap_init(&h, S(1000), S(1003), 50, false), 0);
        heatmap_add(&h, S(1001) + MS(300), 1);
        h.marks = marks;
        h.n_marks = ELEMENTSOF(marks);
        text = capture_text(&h, 0);
        line = line_of(text, "00:16:41 |");
        CHECK(line && strstr(line, "| 1 samples  <- capture 3 (cpu:pid=7>50) at 00:16:41.250\n") == line + 60);
        CHECK_INT_EQ(count(text, "<- capture"), 1);
        CHECK(strstr(text, "\ncapture 2 (oom) at 1970-01-01 00:16:30 UTC, outside the window\n"));
        free(text);

        text = capture(SVG, &h, 0, NULL);
        CHECK_INT_EQ(count(text, "<g class=\"event\""), 1);
        CHECK(strstr(text, "data-event-t=\"1250\"><title>capture 3 (cpu:pid=7&gt;50) at 00:16:41.250 UTC</title>"));
        CHECK(strstr(text, "pointer-events=\"none\""));
        CHECK(!strstr(text, "capture 2"));
        free(text);
        heatmap_done(&h);
}

/* Usage: test-heatmap [DIR] (DIR: where to write heatmap.html for
 * test_heatmap_page.py) */
int main(int argc, char **argv) {
        test_init();
        test_cells();
        test_spans();
        test_levels();
        test_text();
        test_svg();
        test_marks();
        test_html(argc > 1 ? argv[1] : NULL);
        if (argc > 1)
                write_raised_page(argv[1]);
        TESTS_DONE();
}
