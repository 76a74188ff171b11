/* A query's answer held in memory: the distinct frames and the stacks that
 * use them, for the views that need every stack at once (tree, flame graph,
 * pprof, diff). Folded and JSON output stream instead and never build one.
 *
 * Memory is proportional to the distinct stacks and frames of the answer,
 * not to its samples: profd already merged equal stacks. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "quality.h"

enum {
        PROFILE_FRAME_KERNEL = 1 << 0,     /* "kernel": true */
        PROFILE_FRAME_INLINED = 1 << 1,    /* "inlined": true, its caller is the frame before it */
        PROFILE_FRAME_JIT = 1 << 2,        /* "jit": true (perf-map or [jit] code) */
        PROFILE_FRAME_UNRESOLVED = 1 << 3, /* "resolved": false */
        PROFILE_FRAME_LOST = 1 << 4,       /* the "[lost]" frame of a stack that could not be walked */
        PROFILE_FRAME_PYTHON = 1 << 5,     /* a CPython frame: build_id "python-..." (module the .py
                                            * file, line its line), or "[python]" when unnamed */
        PROFILE_FRAME_JAVA = 1 << 6,       /* a HotSpot frame: build_id "hotspot-..." (module the .java
                                            * file, [java] or [jvm], line its line), or "[hotspot]"
                                            * when unnamed */
};

/* One distinct frame. Strings are owned by the profile; absent ones are "" (never NULL). */
struct profile_frame {
        const char *name;     /* demangled unless the query asked for raw names */
        const char *raw_name; /* symbol-table name; equals name when profd sent none */
        const char *module;   /* file path, "[kernel.kallsyms]", "[jit]"...; "" if none */
        const char *build_id; /* lowercase hex, "" if unknown */
        const char *file;     /* source file, "" if unknown */
        uint32_t line;        /* 0 if unknown */
        uint64_t address;     /* file offset (user) or address (kernel), 0 if unknown */
        unsigned flags;       /* PROFILE_FRAME_* */
};

struct profile_stack {
        uint64_t value;       /* samples (unit "samples") or nanoseconds (unit "ns") */
        const char *group;    /* the answer's "group" of this stack (comm-pid, unit), "" if none */
        size_t n_frames;
        const uint32_t *frames; /* indexes into profile.frames, root first */
};

typedef struct profile {
        char *kind;           /* "cpu", "offcpu", "wakeup" */
        char *unit;           /* "samples" or "ns" */
        uint64_t total;       /* sum of the stacks' values */
        uint64_t from_ns, to_ns; /* the window, Unix-epoch ns */
        uint64_t period_ns;   /* cpu: ns between two samples of one CPU (1e9 / frequency_hz),
                               * 0 while unknown; see profile_set_end() */
        struct quality quality; /* the answer's quality report (common/quality.h) */
        bool have_quality;    /* false: the answer had none (an older profd, or built here) */
        json_t *quality_by_host; /* a fleet answer's reports per host (docs/profctl.md); NULL: none */

        struct profile_frame *frames;
        size_t n_frames;
        struct profile_stack *stacks;
        size_t n_stacks;

        void *priv;           /* interning tables and string storage */
} profile;

profile *profile_new(void);
profile *profile_free(profile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(profile *, profile_free);
#define _cleanup_profile_ _cleanup_(profile_freep)

/* profctl's one decoder of a "stack" line (docs/protocol.md), the
 * inverse of common/protocol.c's stackline_append(): the model below and
 * render.c's streamed stacks (top table, folded output) both read lines
 * through it, so each field is checked, and its fault worded, once.
 * Strings point into the json_t decoded. */
struct profile_stack_line {
        uint64_t value;
        const char *group;    /* NULL if none */
        const json_t *frames; /* the array, root first: decode each with profile_frame_decode() */
        size_t n_frames;
};

/* Checks the line's "value", "frames" (an array) and "group". A missing or
 * mistyped field is reported on stderr as profd's fault; returns 0 or
 * -EBADMSG. */
int profile_stack_line_decode(const json_t *line, struct profile_stack_line *ret);

/* Frame i of a stack line: every field typed and range-checked, flags set,
 * absent strings "" (never NULL), the "[lost]" stand-in recognised. A
 * malformed frame is reported on stderr naming its index and field;
 * returns 0 or -EBADMSG. */
int profile_frame_decode(const json_t *frame, size_t i, struct profile_frame *ret);

/* Adds one "stack" line of profd's answer (docs/protocol.md). Equal frames
 * (all fields equal) are stored once. A malformed line is reported on stderr
 * as profd's fault; returns 0, -EBADMSG or -ENOMEM. */
int profile_add_stack_line(profile *p, const json_t *line);

/* Takes kind, unit, from_ns, to_ns and the quality report from the
 * answer's "end" line and checks its "total" and "stacks" against what was
 * added. Also takes the
 * sampling period from its "frequency_hz" when the line has one (else
 * period_ns stays as it was: see profile_set_frequency()). Returns 0 or
 * -EBADMSG. */
int profile_set_end(profile *p, const json_t *end);

/* Sets period_ns from a sampling frequency (status "frequency_hz"); 0 Hz
 * (profd collects no cpu kind) makes it unknown again. */
void profile_set_frequency(profile *p, uint64_t frequency_hz);

/* Sets kind and unit ("cpu"/"samples", "offcpu"/"ns"...) for a profile
 * built with profile_add_stack(). Returns 0 or -ENOMEM. */
int profile_set_kind(profile *p, const char *kind, const char *unit);

/* Adds a stack directly (tests, diff); frames are copied (absent strings
 * become "", an empty raw_name the name). Returns 0, -EOVERFLOW (the total
 * would pass 2^64) or -ENOMEM. */
int profile_add_stack(profile *p, const struct profile_frame *frames, size_t n, uint64_t value,
                      const char *group);
