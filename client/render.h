/* What profctl prints from profd's answers: the status summary, the flush
 * line, and the top-functions table (aggregated by top-table.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "folded.h"
#include "macro.h"
#include "quality.h"
#include "top-table.h"

/* What a table shows beyond its rows. */
struct top_table_info {
        const char *kind;            /* "cpu", "offcpu", "wakeup" */
        uint64_t total;              /* percentages are of it */
        uint64_t from_ns, to_ns;
        size_t limit;                /* rows at most, 0 for all */
        bool children;               /* sort by total */
        const struct quality *quality; /* the answer's quality report; NULL: none */
        const json_t *quality_by_host; /* a fleet answer's reports per host; NULL: none */
};

/* Writes the header (total samples and the window) and the rows in the
 * order of top_table_rows(). Returns 0, -ENOMEM or -EIO. */
int top_table_write(const top_table *t, FILE *f, const struct top_table_info *info);

/* The same as one JSON document (docs/profctl.md). Returns 0, -ENOMEM or
 * -EIO. */
int top_table_write_json(const top_table *t, FILE *f, const struct top_table_info *info);

/* Helpers the other views share with the table. */
double percent(uint64_t part, uint64_t total);
/* A time in the largest unit that keeps it readable: "2.31s", "12.5ms", "840us". */
const char *format_time_short(char *buf, size_t size, uint64_t ns);
/* A sample count, or a time for nanoseconds. */
const char *format_weight(char *buf, size_t size, uint64_t v, bool nanoseconds);
/* Names come from binaries and /proc: a stray escape sequence must not reach
 * the terminal. One byte in, one byte out, so widths still hold. */
void write_sanitized(FILE *f, const char *s);
/* A module as a table shows it: its file name; "[kernel]" or "-" if none. */
const char *module_display_name(const char *module, bool kernel);
/* "1000 samples from <time> to <time> (10m)\n", or the off-CPU time. */
void window_header_write(FILE *f, const char *kind, uint64_t total, uint64_t from_ns, uint64_t to_ns);
/* Writes a json_t document followed by a newline. Returns 0 or -EIO. */
int json_document_write(FILE *f, const json_t *doc);

/* The human summary of a "status" line, now_ns being the current Unix-epoch
 * time (for "12s ago"). Reports a missing field; returns 0, -EBADMSG or
 * -EIO. */
int status_write(FILE *f, const json_t *status, uint64_t now_ns);

/* "drain 42 stored: 980 samples" for a "flushed" line. Returns 0, -EBADMSG
 * or -EIO. */
int flushed_write(FILE *f, const json_t *flushed);
