/* The samples of a "timeline" answer (docs/protocol.md): on-CPU samples
 * with their own times, grouped by (millisecond, stack). The set profd
 * gathers them in, bounded by a cap whose excess is counted; the encoder of
 * the "samples" lines that carry them; the decoder profctl reads them with.
 * Pure: no I/O, no SQLite; unit-tested (tests/unit/test-timed-samples.c).
 *
 * A "samples" line: {"type":"samples","t0_ms":T,"dt_ms":[...],
 * "stack":[...],"n":[...]}: entry i is n[i] samples of stack stack[i] (the
 * index of a "stack" line of the same answer, 0 the first) taken in the
 * millisecond T + dt_ms[i] (Unix-epoch ms). Entries come in (time, stack)
 * order, one per pair, at most TIMED_LINE_ENTRIES a line. A millisecond
 * keeps every range a heatmap can select (its rows are whole milliseconds
 * or more) exact, at a fraction of the bytes of the timeline's µs.
 *
 * Samples a capture took at a raised rate (issue 44) are worth less than
 * the base rate's: their entries are apart from the base rate's, and a
 * line holding any is a "rated_samples" line, a "samples" line with one
 * more column, "hz":[...], each entry's drain's rate (0: the base rate).
 * An older profctl, which would count them as taken, stops at the
 * unknown line type instead. The stack lines come in the store's order
 * of stacks (their ids), which is the order a query's rounding gives ties
 * in (rate-weight.h), so that a range profctl weighs gets the query's. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "protocol.h"
#include "timed-line.h"

/* Samples one answer carries at most: 24 bytes each while profd gathers
 * them, so a worker holds 24 MiB at worst. An hour of 4 busy CPUs at
 * the default 49 Hz (706,000) fits, far more than a page shows readably
 * (an incident's heatmap is minutes); a longer one is cut, and says so. A request may ask for
 * fewer ("max_samples"). */
#define TIMED_MAX_SAMPLES 1000000ULL

struct timed_entry {
        uint64_t t_ms;  /* Unix-epoch milliseconds */
        uint32_t stack; /* index into the set's stacks */
        uint32_t n;     /* samples */
        uint32_t hz;    /* the rate they were taken at; 0: the base rate */
};

/* What profd gathers for one answer. */
struct timed_set {
        uint64_t max_samples;
        struct timed_entry *entries;
        size_t n_entries, cap;
        hashmap *index;         /* stack id -> index + 1 */
        int64_t *stack_ids;     /* the store's stack of each index */
        uint64_t *stack_values; /* samples of each index kept */
        size_t n_stacks, stacks_cap;
        uint64_t samples;       /* kept: at most max_samples */
        uint64_t omitted;       /* beyond max_samples: counted, not kept */
        uint64_t omitted_from_ns; /* the earliest omitted sample's time; UINT64_MAX: none */
};

/* max_samples 0: TIMED_MAX_SAMPLES. Returns 0 or -ENOMEM. */
int timed_set_init(struct timed_set *s, uint64_t max_samples);
void timed_set_done(struct timed_set *s);

/* One sample of stack_id at t_ns, taken at hz (0: the base rate): kept
 * while the set has room, else counted in omitted. Returns 0 or
 * -ENOMEM. */
int timed_set_add(struct timed_set *s, uint64_t t_ns, int64_t stack_id, uint32_t hz);

/* The index of stack_id in s (added, value 0, when new): the stacks of a
 * "spans" answer (timed-spans.h) are kept the same way. Returns 0 or
 * -ENOMEM. */
int timed_set_stack(struct timed_set *s, int64_t stack_id, uint32_t *ret);

/* Numbers the stacks in the order of their ids, sorts the entries by
 * (time, stack, rate) and merges equal ones: call once, after the last
 * add. Returns 0 or -ENOMEM. */
int timed_set_finish(struct timed_set *s);

/* Appends one "samples" line (newline included) of the n entries e
 * (1 <= n <= TIMED_LINE_ENTRIES, in time order) to b: a "rated_samples"
 * line when one of them has a rate. Returns 0, -EINVAL for n out of range
 * or entries out of order, -ENOMEM (b keeps what it had). */
int timed_line_append(struct stackline_buf *b, const struct timed_entry *e, size_t n);

/* Called for each entry of a "samples" line; a negative return stops the
 * parse and is passed on. */
typedef int (*timed_entry_fn)(const struct timed_entry *e, void *userdata);

/* Reads a "samples" or "rated_samples" line as timed_line_append writes
 * it, trusting nothing: arrays of one length (1 to TIMED_LINE_ENTRIES),
 * unsigned integers, every stack below n_stacks, every n above 0, rates
 * of at most UINT32_MAX, times that do not go back or overflow. Returns 0, fn's negative errno, or -EBADMSG with *ret_error (a
 * static sentence) saying what is wrong. */
int timed_line_parse(const json_t *line, uint64_t n_stacks, timed_entry_fn fn, void *userdata,
                     const char **ret_error);
