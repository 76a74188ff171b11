/* The quality report of an answer (profctl query --quality). */
#include "view-private.h"

#include <inttypes.h>

#include "util.h"

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
