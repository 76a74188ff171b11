/* The time series view (profctl series): reads the answer's point and end
 * lines, writes a line per step with its rate, or JSON. */
#include "view-private.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capture-event.h"
#include "duration.h"
#include "protocol.h"
#include "util.h"

void series_done(struct series *s) {
        free(s->kind);
        free(s->unit);
        free(s->points);
        json_decref(s->end);
        json_decref(s->events);
        *s = (struct series) {};
}

int series_add_point_line(struct series *s, const json_t *line) {
        struct series_point pt;
        int r;

        if ((r = response_get_u64(line, PROTO_TYPE_POINT, PROTO_KEY_T_NS, &pt.t_ns)) < 0 ||
            (r = response_get_u64(line, PROTO_TYPE_POINT, PROTO_KEY_VALUE, &pt.value)) < 0)
                return r;
        if (s->n_points == 0)
                s->have_complete = true;
        pt.complete = 0;
        if (!json_object_get(line, PROTO_KEY_COMPLETE))
                s->have_complete = false;
        else if ((r = response_get_u64(line, PROTO_TYPE_POINT, PROTO_KEY_COMPLETE, &pt.complete)) < 0)
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

        if ((r = response_get_string(end, PROTO_TYPE_END, PROTO_KEY_KIND, &kind)) < 0 ||
            (r = response_get_string(end, PROTO_TYPE_END, PROTO_KEY_WEIGHT_UNIT, &unit)) < 0 ||
            (r = response_get_u64(end, PROTO_TYPE_END, PROTO_KEY_STEP_NS, &s->step_ns)) < 0 ||
            (r = response_get_u64(end, PROTO_TYPE_END, PROTO_KEY_POINTS, &points)) < 0 ||
            (r = response_get_u64(end, PROTO_TYPE_END, PROTO_KEY_TOTAL, &s->total)) < 0 ||
            (r = response_get_u64(end, PROTO_TYPE_END, PROTO_KEY_FROM_NS, &s->from_ns)) < 0 ||
            (r = response_get_u64(end, PROTO_TYPE_END, PROTO_KEY_TO_NS, &s->to_ns)) < 0)
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
        if (json_object_get(end, PROTO_KEY_QUALITY)) {
                if (quality_from_json(json_object_get(end, PROTO_KEY_QUALITY), &s->quality) < 0)
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

/* The capture events triggered before until_ns, from *next on, each on a
 * line of its own ("capture 3 (psi:cpu.some.avg10>50) at 14:02:03"). */
static void series_events_write(FILE *f, const struct series *s, size_t *next, uint64_t until_ns) {
        for (; *next < json_array_size(s->events); (*next)++) {
                struct capture_event e;
                const char *error;
                char when[64];

                /* the lines were checked as they were read */
                if (capture_event_from_json(json_array_get(s->events, *next), &e, &error) <= 0)
                        continue;
                if (e.trigger_ns >= until_ns)
                        return;
                format_local_time(when, sizeof(when), e.trigger_ns);
                fprintf(f, "capture %" PRId64 " (%s) at %s", e.id, e.cause, when);
                if (s->step_ns % NSEC_PER_SEC != 0)
                        fprintf(f, ".%03" PRIu64, (uint64_t) (e.trigger_ns % NSEC_PER_SEC / NSEC_PER_MSEC));
                if (e.trigger_ns < s->from_ns || e.trigger_ns > s->to_ns)
                        fputs(", outside the window (what it pins overlaps it)", f);
                fputc('\n', f);
        }
}

int series_write(FILE *f, const struct series *s) {
        char step[64], from[64], to[64];
        double max_rate = 0;
        size_t next_event = 0;

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
                        for (uint64_t t = s->points[i - 1].t_ns + s->step_ns; t < s->points[i].t_ns; t += s->step_ns) {
                                series_events_write(f, s, &next_event, t);
                                series_line_write(f, s, t, 0, 0, max_rate);
                        }
                series_events_write(f, s, &next_event, s->points[i].t_ns);
                series_line_write(f, s, s->points[i].t_ns, s->points[i].value, s->points[i].complete, max_rate);
        }
        series_events_write(f, s, &next_event, UINT64_MAX);
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
        if (json_object_set_new(doc, "events", capture_events_view_json(s->events)) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}
