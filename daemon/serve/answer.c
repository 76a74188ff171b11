/* Query and series answers: request -> store query -> JSON lines. */
#include "answer.h"
#include "answer-events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "macro.h"
#include "quality-sum.h"
#include "series.h"
#include "timed-spans.h"
#include "timestamp.h"

static const char *const kind_names[] = {
        [PROFD_KIND_CPU] = "cpu", [PROFD_KIND_OFFCPU] = "offcpu", [PROFD_KIND_WAKEUP] = "wakeup",
};

static const char *kind_unit(int kind) {
        return kind == PROFD_KIND_CPU ? "samples" : "ns";
}

int answer_store_query(const struct query_request *rq, const struct answer_caller *who, uint64_t now_ns,
                       struct store_query *ret, char **ret_error) {
        struct store_query q = {
                .kind = rq->kind,
                .pid = rq->pid,
                .tid = rq->tid,
                .comm = rq->comm,
                .exe = rq->exe,
                .have_uid = rq->have_uid,
                .filter_uid = rq->uid,
                .cgroup = rq->cgroup,
                .unit = rq->unit,
                .container = rq->container,
                .state_mask = rq->state_mask,
                .group = rq->group,
                /* enforced here, not in profctl: a caller that is not root
                 * or an admin sees only processes that ran with its uid,
                 * whatever it filters or groups by */
                .only_uid = !who->privileged,
                .uid = who->uid,
        };
        int r;

        *ret_error = NULL;
        if (!rq->last) {
                r = request_window(rq, now_ns, &q.from_ns, &q.to_ns, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = q;
        return 0;
}

struct stack_ctx {
        const struct answer_context *ctx;
        struct stack_style style;
        struct quality quality;
};

static int emit_stack(const struct store_stack_out *stack, void *userdata) {
        struct stack_ctx *sc = userdata;

        quality_add_stack(&sc->quality, stack);
        return sc->ctx->emit_stack(stack, &sc->style, sc->ctx->userdata);
}

struct series_ctx {
        const struct answer_context *ctx;
        series *series;
        uint64_t total, complete;
};

static int emit_point(uint64_t t_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct series_ctx *sc = userdata;
        json_t *line = json_pack("{s:s, s:I, s:I, s:I}", PROTO_KEY_TYPE, PROTO_TYPE_POINT, PROTO_KEY_T_NS,
                                 (json_int_t) t_ns, PROTO_KEY_VALUE, (json_int_t) value, PROTO_KEY_COMPLETE,
                                 (json_int_t) complete);

        if (!line)
                return -ENOMEM;
        return sc->ctx->emit(line, sc->ctx->userdata);
}

static int add_drain(uint64_t start_ns, uint64_t end_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct series_ctx *sc = userdata;

        sc->total += value;
        sc->complete += complete;
        return series_add(sc->series, start_ns, end_ns, value, complete);
}

static int add_drop(const char *reason, uint64_t count, void *userdata) {
        quality_add_drop(userdata, reason, count);
        return 0;
}

static int emit_error(const struct answer_context *ctx, const char *message) {
        return ctx->emit(json_pack("{s:s, s:s}", PROTO_KEY_TYPE, PROTO_TYPE_ERROR, PROTO_KEY_ERROR, message),
                         ctx->userdata);
}

/* The timeline's error: the window starts before what it holds. */
static int emit_not_covered(const struct answer_context *ctx, uint64_t from_ns, uint64_t oldest_ns, bool empty) {
        _cleanup_free_ char *msg = NULL;
        char a[64], b[64];

        if (empty)
                msg = strdup("the timeline holds no samples yet (it fills as profd drains, every drain "
                             "interval; profctl flush stores the samples held now)");
        else if (asprintf(&msg, "the window starts at %s, before the oldest sample the timeline holds (%s): "
                                "it has nothing earlier (its retention, timeline_retention and timeline_max_size, "
                                "took it, or profd was not sampling); start the window at that time or later, or "
                                "use profctl query, which falls back to whole drains",
                          format_timestamp(a, sizeof(a), from_ns), format_timestamp(b, sizeof(b), oldest_ns)) < 0)
                msg = NULL;
        if (!msg)
                return -ENOMEM;
        return emit_error(ctx, msg);
}

/* The off-CPU timeline's error: the window starts before its oldest block. */
static int emit_offtime_not_covered(const struct answer_context *ctx, uint64_t from_ns, uint64_t oldest_ns,
                                    bool empty) {
        _cleanup_free_ char *msg = NULL;
        char a[64], b[64];

        if (empty)
                msg = strdup("the off-CPU timeline holds no blocks yet (it keeps blocks of timeline_offcpu_min "
                             "or longer and fills as profd drains, every drain interval; profctl flush stores "
                             "the blocks held now)");
        else if (asprintf(&msg, "the window starts at %s, before the oldest block the off-CPU timeline holds (%s): "
                                "it has nothing earlier (its retention, timeline_retention and timeline_max_size, "
                                "took it, or profd was not logging blocks); start the window at that time or later, "
                                "or use profctl query --kind offcpu, which falls back to whole drains",
                          format_timestamp(a, sizeof(a), from_ns), format_timestamp(b, sizeof(b), oldest_ns)) < 0)
                msg = NULL;
        if (!msg)
                return -ENOMEM;
        return emit_error(ctx, msg);
}

/* The error of a timeline request the timeline does not cover while it is
 * off: the setting is the answer, not the retention. */
static int emit_timeline_off(const struct answer_context *ctx, bool offcpu) {
        return emit_error(ctx, offcpu ? "profd's timeline is off (setting timeline = off, or profd --no-timeline): "
                                        "it stores no off-CPU block's start and end, so there is no heatmap of this "
                                        "window; turn it on (timeline = on in profd.conf) and restart profd, or use "
                                        "profctl query --kind offcpu, which answers from whole drains"
                                      : "profd's timeline is off (setting timeline = off, or profd --no-timeline): "
                                        "it stores no sample's time, so there is no heatmap of this window; turn it "
                                        "on (timeline = on in profd.conf) and restart profd, or use profctl query, "
                                        "which answers from whole drains");
}

/* The timeline's error for a window it covers only in part: a drain in it
 * has samples (or blocks) but no timeline row. */
static int emit_timeline_gap(const struct answer_context *ctx, bool offcpu, uint64_t start_ns, uint64_t end_ns) {
        _cleanup_free_ char *msg = NULL;
        char a[64], b[64];

        if (asprintf(&msg, "the %s timeline has a gap in the window: the drain from %s to %s has %s but no times "
                           "of them (profd's timeline was off then, setting timeline, or retention took them while "
                           "a capture kept older ones); pick a window without it, or use profctl query%s, which "
                           "falls back to whole drains",
                     offcpu ? "off-CPU" : "on-CPU", format_timestamp(a, sizeof(a), start_ns),
                     format_timestamp(b, sizeof(b), end_ns), offcpu ? "off-CPU blocks" : "samples",
                     offcpu ? " --kind offcpu" : "") < 0)
                return -ENOMEM;
        return emit_error(ctx, msg);
}

/* Whether the timeline of a kind covers the window from its oldest row
 * (oldest_ns, r from store_*_oldest) on: 0 and an answer may follow, or 1
 * with the error emitted (or the emit's negative errno), or a negative
 * errno. */
static int timeline_refuse(const struct answer_context *ctx, const struct query_request *rq, struct store_query *q,
                           int r, uint64_t oldest) {
        bool offcpu = rq->kind == PROFD_KIND_OFFCPU;
        uint64_t gap_start, gap_end;

        if (r < 0 && r != -ENOENT)
                return r;
        /* no start given: the default window (since 10m) reaches back as
         * far as the timeline does, rather than failing on a young store */
        if (r >= 0 && !rq->have_since && !rq->have_from && q->from_ns < oldest && oldest <= q->to_ns)
                q->from_ns = oldest;
        if (r >= 0 && q->from_ns >= oldest) {
                r = store_timeline_gap(ctx->store, offcpu ? 1 : 0, q->from_ns, q->to_ns, &gap_start, &gap_end);
                if (r <= 0)
                        return r;
        }
        if (ctx->timeline_off)
                r = emit_timeline_off(ctx, offcpu);
        else if (r == -ENOENT)
                r = offcpu ? emit_offtime_not_covered(ctx, q->from_ns, 0, true) : emit_not_covered(ctx, q->from_ns, 0, true);
        else if (r == 1)
                r = emit_timeline_gap(ctx, offcpu, gap_start, gap_end);
        else
                r = offcpu ? emit_offtime_not_covered(ctx, q->from_ns, oldest, false)
                           : emit_not_covered(ctx, q->from_ns, oldest, false);
        return r < 0 ? r : 1;
}

/* A timeline answer of kind offcpu: the stacks (value their blocked ns),
 * then the blocks with their starts (in "spans" lines of up to
 * TIMED_LINE_ENTRIES), then "end" with the total in ns and the blocks
 * the cap left out. */
static int answer_offtime(const struct answer_context *ctx, const struct query_request *rq, struct store_query *q) {
        _cleanup_(timed_span_set_done) struct timed_span_set set = {};
        struct stackline_buf b = {};
        struct stack_ctx sc = {
                .ctx = ctx,
                .style = { .collapse_kernel = !ctx->caller.privileged, .raw_names = rq->raw_names,
                           .folded = rq->folded, .lines = rq->lines },
        };
        uint64_t oldest = 0;
        json_t *end, *report;
        int r;

        /* oldest is read after the call sets it: two statements */
        r = store_offtime_oldest(ctx->store, &oldest);
        r = timeline_refuse(ctx, rq, q, r, oldest);
        if (r != 0)
                return r < 0 ? r : 0;
        r = timed_span_set_init(&set, rq->max_samples);
        if (r < 0)
                return r;
        r = store_query_spans(ctx->store, q, &set, emit_stack, &sc);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < set.n_spans; i += TIMED_LINE_ENTRIES) {
                b.len = 0;
                r = timed_spans_line_append(&b, set.spans + i, MIN(set.n_spans - i, (size_t) TIMED_LINE_ENTRIES));
                if (r >= 0)
                        r = ctx->emit_text(b.data, b.len, ctx->userdata);
        }
        stackline_buf_done(&b);
        if (r >= 0)
                r = store_query_drops(ctx->store, q, add_drop, &sc.quality);
        if (r < 0)
                return r;
        report = quality_to_json(&sc.quality);
        if (!report)
                return -ENOMEM;
        end = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", PROTO_KEY_TYPE, PROTO_TYPE_END,
                        PROTO_KEY_KIND, kind_names[rq->kind], PROTO_KEY_WEIGHT_UNIT, kind_unit(rq->kind),
                        PROTO_KEY_STACKS, (json_int_t) set.stacks.n_stacks, PROTO_KEY_TOTAL, (json_int_t) set.ns,
                        PROTO_KEY_ENTRIES, (json_int_t) set.n_spans, PROTO_KEY_OMITTED, (json_int_t) set.omitted,
                        PROTO_KEY_FROM_NS, (json_int_t) q->from_ns, PROTO_KEY_TO_NS, (json_int_t) q->to_ns,
                        PROTO_KEY_OLDEST_NS, (json_int_t) oldest, PROTO_KEY_QUALITY, report);
        if (end && set.omitted > 0 &&
            (json_object_set_new(end, PROTO_KEY_OMITTED_FROM_NS, json_integer((json_int_t) set.omitted_from_ns)) < 0 ||
             json_object_set_new(end, PROTO_KEY_OMITTED_NS, json_integer((json_int_t) set.omitted_ns)) < 0)) {
                json_decref(end);
                return -ENOMEM;
        }
        return ctx->emit(end, ctx->userdata);
}

/* A timeline answer: the stacks, then the samples with their times (in
 * "samples" lines of up to TIMED_LINE_ENTRIES), then "end". */
static int answer_timeline(const struct answer_context *ctx, const struct query_request *rq, struct store_query *q) {
        _cleanup_(timed_set_done) struct timed_set set = {};
        struct stackline_buf b = {};
        struct answer_events events;
        struct stack_ctx sc = {
                .ctx = ctx,
                .style = { .collapse_kernel = !ctx->caller.privileged, .raw_names = rq->raw_names,
                           .folded = rq->folded, .lines = rq->lines },
        };
        uint64_t oldest = 0;
        json_t *end, *report;
        int r;

        if (rq->kind == PROFD_KIND_OFFCPU)
                return answer_offtime(ctx, rq, q);
        /* oldest is read after the call sets it: two statements */
        r = store_timeline_oldest(ctx->store, &oldest);
        r = timeline_refuse(ctx, rq, q, r, oldest);
        if (r != 0)
                return r < 0 ? r : 0;
        r = timed_set_init(&set, rq->max_samples);
        if (r < 0)
                return r;
        r = store_query_timed(ctx->store, q, &set, emit_stack, &sc);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < set.n_entries; i += TIMED_LINE_ENTRIES) {
                b.len = 0;
                r = timed_line_append(&b, set.entries + i, MIN(set.n_entries - i, (size_t) TIMED_LINE_ENTRIES));
                if (r >= 0)
                        r = ctx->emit_text(b.data, b.len, ctx->userdata);
        }
        stackline_buf_done(&b);
        if (r >= 0)
                r = store_query_drops(ctx->store, q, add_drop, &sc.quality);
        if (r >= 0)
                r = answer_events_emit(ctx, rq, q->from_ns, q->to_ns, &events); /* captures, issue 44 */
        if (r < 0)
                return r;
        report = quality_to_json(&sc.quality);
        if (!report)
                return -ENOMEM;
        end = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", PROTO_KEY_TYPE, PROTO_TYPE_END,
                        PROTO_KEY_KIND, kind_names[rq->kind], PROTO_KEY_WEIGHT_UNIT, kind_unit(rq->kind),
                        PROTO_KEY_STACKS, (json_int_t) set.n_stacks, PROTO_KEY_TOTAL, (json_int_t) set.samples,
                        PROTO_KEY_ENTRIES, (json_int_t) set.n_entries, PROTO_KEY_OMITTED, (json_int_t) set.omitted,
                        PROTO_KEY_FROM_NS, (json_int_t) q->from_ns, PROTO_KEY_TO_NS, (json_int_t) q->to_ns,
                        PROTO_KEY_OLDEST_NS, (json_int_t) oldest, PROTO_KEY_QUALITY, report);
        if (end && set.omitted > 0)
                json_object_set_new(end, PROTO_KEY_OMITTED_FROM_NS, json_integer((json_int_t) set.omitted_from_ns));
        /* the rate a "rated_samples" line's entries count in (issue 44) */
        if (end && q->base_hz > 0)
                json_object_set_new(end, PROTO_KEY_BASE_HZ, json_integer((json_int_t) q->base_hz));
        if (answer_events_end(end, &events) < 0) {
                json_decref(end);
                return -ENOMEM;
        }
        return ctx->emit(end, ctx->userdata);
}

int answer_request(const struct answer_context *ctx, const struct request *req) {
        const struct query_request *rq = &req->query;
        _cleanup_free_ char *error = NULL;
        uint64_t total = 0, stacks = 0;
        struct answer_events events;
        struct store_query q;
        json_t *end, *report;
        int r;

        r = answer_store_query(rq, &ctx->caller, ctx->now_ns, &q, &error);
        if (r == -EINVAL)
                return emit_error(ctx, error);
        if (r < 0)
                return r;
        q.base_hz = ctx->base_hz;
        if (req->op == REQUEST_TIMELINE)
                return answer_timeline(ctx, rq, &q);
        if (rq->last) {
                r = store_last_drain(ctx->store, &q.drain_id, &q.from_ns, &q.to_ns);
                if (r == -ENOENT)
                        /* no drain yet: nothing matches, which is not an error */
                        q.drain_id = -1;
                else if (r < 0)
                        return r;
        }

        if (req->op == REQUEST_SERIES) {
                uint64_t step = rq->step_ns ?: ctx->default_step_ns;
                struct series_ctx sc = { .ctx = ctx };

                if (step == 0)
                        step = NSEC_PER_SEC;
                /* refuse before the work, not after a million lines */
                if ((q.to_ns - q.from_ns) / step >= SERIES_MAX_POINTS) {
                        char msg[256];
                        snprintf(msg, sizeof(msg), "field 'step': the window would have more than %llu points; "
                                                   "use a longer step or a shorter window",
                                 (unsigned long long) SERIES_MAX_POINTS);
                        return emit_error(ctx, msg);
                }
                sc.series = series_new(step, emit_point, &sc);
                if (!sc.series)
                        return -ENOMEM;
                if (q.drain_id >= 0)
                        r = store_query_drains(ctx->store, &q, add_drain, &sc);
                if (r >= 0)
                        r = series_finish(sc.series);
                stacks = series_points(sc.series);
                series_free(sc.series);
                if (r == -E2BIG)
                        return emit_error(ctx, "field 'step': a drain would be spread over more than a million "
                                               "points; use a longer step");
                if (r < 0)
                        return r;
                /* the whole report needs every stack; a series carries the
                 * complete part (per point and in all) and the losses */
                struct quality quality = { .total = sc.total, .complete = sc.complete, .partial = true };
                if (q.drain_id >= 0)
                        r = store_query_drops(ctx->store, &q, add_drop, &quality);
                if (r >= 0)
                        r = answer_events_emit(ctx, rq, q.from_ns, q.to_ns, &events); /* captures, issue 44 */
                if (r < 0)
                        return r;
                report = quality_to_json(&quality);
                if (!report)
                        return -ENOMEM;
                end = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                                PROTO_KEY_TYPE, PROTO_TYPE_END,
                                PROTO_KEY_KIND, kind_names[rq->kind], PROTO_KEY_WEIGHT_UNIT, kind_unit(rq->kind),
                                PROTO_KEY_STEP_NS, (json_int_t) step, PROTO_KEY_POINTS, (json_int_t) stacks,
                                PROTO_KEY_TOTAL, (json_int_t) sc.total, PROTO_KEY_COMPLETE, (json_int_t) sc.complete,
                                PROTO_KEY_FROM_NS, (json_int_t) q.from_ns, PROTO_KEY_TO_NS, (json_int_t) q.to_ns,
                                PROTO_KEY_QUALITY, report);
                if (answer_events_end(end, &events) < 0) {
                        json_decref(end);
                        return -ENOMEM;
                }
        } else {
                struct stack_ctx sc = {
                        .ctx = ctx,
                        .style = { .collapse_kernel = !ctx->caller.privileged, .raw_names = rq->raw_names,
                                   .folded = rq->folded, .lines = rq->lines },
                };

                /* by_drains: as the fleet answers, whole drains */
                if (q.drain_id >= 0 && !rq->by_drains)
                        r = store_query_timeline_covers(ctx->store, &q, &q.timeline);
                if (r >= 0 && q.drain_id >= 0)
                        r = store_query_stacks(ctx->store, &q, emit_stack, &sc, &total, &stacks);
                if (r >= 0 && q.drain_id >= 0)
                        r = store_query_drops(ctx->store, &q, add_drop, &sc.quality);
                if (r < 0)
                        return r;
                report = quality_to_json(&sc.quality);
                if (!report)
                        return -ENOMEM;
                end = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o}", PROTO_KEY_TYPE, PROTO_TYPE_END,
                                PROTO_KEY_KIND, kind_names[rq->kind], PROTO_KEY_WEIGHT_UNIT, kind_unit(rq->kind),
                                PROTO_KEY_STACKS, (json_int_t) stacks, PROTO_KEY_TOTAL, (json_int_t) total,
                                PROTO_KEY_FROM_NS, (json_int_t) q.from_ns, PROTO_KEY_TO_NS, (json_int_t) q.to_ns,
                                PROTO_KEY_QUALITY, report);
                /* a window of cpu samples or off-CPU blocks says how they
                 * were selected */
                if (end && (rq->kind == 0 || rq->kind == 1) && q.drain_id == 0) /* PROFD_KIND_CPU, _OFFCPU */
                        json_object_set_new(end, PROTO_KEY_TIMELINE, json_boolean(q.timeline));
        }
        /* an older store's drains that schema 8's conversion has not
         * reached yet are not in the answer: said, not hidden */
        if (end && q.drain_id >= 0) {
                uint64_t unconverted = 0;

                r = store_query_unconverted(ctx->store, &q, &unconverted);
                if (r < 0) {
                        json_decref(end);
                        return r;
                }
                if (unconverted > 0)
                        json_object_set_new(end, PROTO_KEY_UNCONVERTED_DRAINS, json_integer((json_int_t) unconverted));
        }
        return ctx->emit(end, ctx->userdata);
}
