/* The off-CPU blocks of a "timeline" answer of kind offcpu (docs/protocol.md):
 * each block of blocked time the window holds, with where it begins, how
 * long it lasts there and its stack. The set profd gathers them in, bounded
 * by a cap on blocks whose excess is counted (blocks and ns); the encoder of
 * the "spans" lines that carry them; the decoder profctl reads them with.
 * Pure: no I/O, no SQLite; unit-tested (tests/unit/test-timed-spans.c).
 *
 * A "spans" line: {"type":"spans","t0_us":T,"dt_us":[...],"ns":[...],
 * "stack":[...]}: entry i is a block of stack stack[i] (the index of a
 * "stack" line of the same answer, 0 the first) that begins in the
 * microsecond T + dt_us[i] (Unix-epoch µs) and lasts ns[i] nanoseconds.
 * Entries come in (start, stack, ns) order, at most TIMED_LINE_ENTRIES a
 * line. A block that crosses the window's edge is sent as its part inside
 * the window, so the ns of the spans add up to the answer's total exactly.
 * Starts are µs, which the store keeps (and more than a heatmap's rows
 * need); the ns are whole, so the total is the same as a query's. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"
#include "timed-samples.h"

/* Blocks one answer carries at most: 24 bytes each while profd gathers
 * them, 24 MiB at worst. Blocks are logged only from timeline_offcpu_min
 * (1 ms by default) on and at most timeline_offcpu_rate (200) per CPU and
 * second, so it holds 20 minutes of a 4-CPU host logging at that rate, and
 * far more of a typical one; an incident's heatmap is minutes. More is
 * cut, and says so. A request may ask for fewer ("max_samples", which
 * counts blocks for kind offcpu). */
#define TIMED_MAX_SPANS 1000000ULL

struct timed_span {
        uint64_t start_us; /* Unix-epoch µs */
        uint64_t ns;       /* blocked ns from start_us on, > 0 */
        uint32_t stack;    /* index into the set's stacks */
};

/* What profd gathers for one answer: the stacks (their values in ns) as a
 * timed_set keeps them, the spans. */
struct timed_span_set {
        struct timed_set stacks; /* only its stacks: no samples entries */
        uint64_t max_spans;
        struct timed_span *spans;
        size_t n_spans, cap;
        uint64_t ns;              /* kept */
        uint64_t omitted;         /* blocks beyond max_spans: counted, not kept */
        uint64_t omitted_ns;      /* and their ns */
        uint64_t omitted_from_ns; /* the earliest omitted block's start; UINT64_MAX: none */
};

/* max_spans 0: TIMED_MAX_SPANS. Returns 0 or -ENOMEM. */
int timed_span_set_init(struct timed_span_set *s, uint64_t max_spans);
void timed_span_set_done(struct timed_span_set *s);

/* A block (or its part in the window) of stack_id: ns from start_ns on.
 * Kept while the set has room, else counted in omitted; ns 0 is ignored.
 * Returns 0 or -ENOMEM. */
int timed_span_set_add(struct timed_span_set *s, uint64_t start_ns, uint64_t ns, int64_t stack_id);

/* Sorts the spans by (start, stack, ns): call once, after the last add. */
void timed_span_set_finish(struct timed_span_set *s);

/* Appends one "spans" line (newline included) of the n spans e
 * (1 <= n <= TIMED_LINE_ENTRIES, in start order) to b. Returns 0, -EINVAL
 * for n out of range, spans out of order or one of 0 ns, -ENOMEM (b keeps
 * what it had). */
int timed_spans_line_append(struct stackline_buf *b, const struct timed_span *e, size_t n);

/* Called for each span of a "spans" line; a negative return stops the
 * parse and is passed on. */
typedef int (*timed_span_fn)(const struct timed_span *e, void *userdata);

/* Reads a "spans" line as timed_spans_line_append writes it, trusting
 * nothing: arrays of one length (1 to TIMED_LINE_ENTRIES), unsigned
 * integers, every stack below n_stacks, every ns above 0, starts that do not
 * go back, no start or end past what ns since the epoch can hold. Returns
 * 0, fn's negative errno, or -EBADMSG with *ret_error (a static sentence)
 * saying what is wrong. */
int timed_spans_line_parse(const json_t *line, uint64_t n_stacks, timed_span_fn fn, void *userdata,
                           const char **ret_error);
