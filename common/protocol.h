/* The wire protocol between profd and profctl, defined once (docs/protocol.md):
 * op and key names, the frame and stack a "stack" line carries, the one
 * encoder of a stack line, and the folded-text writer with its one
 * sanitizer. The daemon, profctl's fleet answers and
 * profctl's readers all link this file, so a key spelled here is spelled the
 * same on both sides. Pure: no I/O but the caller's FILE; unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Names are string-literal macros, not const char arrays, so the encoder can
 * paste them into the literal text it writes ("{\"" PROTO_KEY_NAME "\":")
 * and still have one spelling. */

/* Request ops ("op"). */
#define PROTO_OP_STATUS "status"
#define PROTO_OP_FLUSH  "flush"
#define PROTO_OP_QUERY  "query"
#define PROTO_OP_SERIES "series"
/* on-CPU samples with their own times (profctl heatmap) */
#define PROTO_OP_TIMELINE "timeline"

/* Captures (issue 44): "op":"capture" with an "action" (docs/protocol.md). */
#define PROTO_OP_CAPTURE        "capture"
#define PROTO_KEY_ACTION        "action"
#define PROTO_KEY_CONDITION     "condition"
#define PROTO_KEY_ID            "id"
#define PROTO_CAPTURE_START     "start"
#define PROTO_CAPTURE_LIST      "list"
#define PROTO_CAPTURE_UNPIN     "unpin"
#define PROTO_CAPTURE_STOP      "stop"
#define PROTO_TYPE_CAPTURE      "capture" /* the answer line's type */
/* A series or timeline request with "events":true gets, before its end
 * line, an "event" line per capture overlapping the window
 * (common/capture-event.h); the end line counts them. */
#define PROTO_KEY_EVENTS        "events"
#define PROTO_TYPE_EVENT        "event"
#define PROTO_EVENT_CAPTURE     "capture" /* an event line's "kind" */
#define PROTO_KEY_CAUSE         "cause"
#define PROTO_KEY_TRIGGER_NS    "trigger_ns"
#define PROTO_KEY_EVENTS_OMITTED "events_omitted"

/* Request keys. */
#define PROTO_KEY_OP        "op"
#define PROTO_KEY_KIND      "kind"
#define PROTO_KEY_SINCE     "since"
#define PROTO_KEY_UNTIL     "until"
#define PROTO_KEY_FROM      "from"
#define PROTO_KEY_TO        "to"
#define PROTO_KEY_LAST      "last"
#define PROTO_KEY_PID       "pid"
#define PROTO_KEY_TID       "tid"
#define PROTO_KEY_COMM      "comm"
#define PROTO_KEY_EXE       "exe"
#define PROTO_KEY_UID       "uid"
#define PROTO_KEY_CGROUP    "cgroup"
#define PROTO_KEY_UNIT      "unit"
#define PROTO_KEY_CONTAINER "container"
#define PROTO_KEY_STATE     "state"
#define PROTO_KEY_RAW_NAMES "raw_names"
#define PROTO_KEY_FORMAT    "format"
#define PROTO_KEY_LINES     "lines"
#define PROTO_KEY_GROUP     "group"
#define PROTO_KEY_STEP      "step"
#define PROTO_KEY_MAX_SAMPLES "max_samples" /* timeline: fewer samples than TIMED_MAX_SAMPLES */
/* fleet requests only: profctl answers them from ClickHouse (client/fleet/fleet.c) */
#define PROTO_KEY_HOST      "host"
#define PROTO_KEY_QUALITY_BY_HOST "quality_by_host" /* their "end" line: each host's report */

/* "format" values and "group" values. */
#define PROTO_FORMAT_FRAMES  "frames"
#define PROTO_FORMAT_FOLDED  "folded"
#define PROTO_GROUP_PROCESS  "process"
#define PROTO_GROUP_UNIT     "unit"
#define PROTO_GROUP_THREAD   "thread"

/* Answer lines: "type" and the keys of a "stack" line and its frames. */
#define PROTO_KEY_TYPE      "type"
#define PROTO_TYPE_STACK    "stack"
#define PROTO_TYPE_END      "end"
#define PROTO_TYPE_ERROR    "error"
#define PROTO_KEY_ERROR     "error"    /* an "error" line's message */
#define PROTO_KEY_VALUE     "value"
#define PROTO_KEY_FRAMES    "frames"
#define PROTO_KEY_FOLDED    "folded"
/* PROTO_KEY_GROUP above is also the stack line's group */
#define PROTO_KEY_NAME      "name"
#define PROTO_KEY_MODULE    "module"
#define PROTO_KEY_KERNEL    "kernel"
#define PROTO_KEY_RESOLVED  "resolved"
#define PROTO_KEY_ADDRESS   "address"
#define PROTO_KEY_BUILD_ID  "build_id"
#define PROTO_KEY_JIT       "jit"
#define PROTO_KEY_FILE      "file"
#define PROTO_KEY_LINE      "line"
#define PROTO_KEY_INLINED   "inlined"
#define PROTO_KEY_RAW_NAME  "raw_name"

/* A series answer: a "point" line per step that has a value, then the
 * "end" line. */
#define PROTO_TYPE_POINT    "point"
#define PROTO_KEY_T_NS      "t_ns"     /* the step's start, Unix-epoch ns */
#define PROTO_KEY_COMPLETE  "complete" /* the part of "value" (or "total") with complete stacks */
/* The "end" line of a query or a series: what the answer was and checks of
 * what came before it ("stacks" or "points", "total"). */
#define PROTO_KEY_WEIGHT_UNIT "unit"   /* "samples" or "ns": the request's "unit" filter is another field */
#define PROTO_KEY_STACKS    "stacks"
#define PROTO_KEY_STEP_NS   "step_ns"
#define PROTO_KEY_POINTS    "points"
#define PROTO_KEY_TOTAL     "total"
#define PROTO_KEY_FROM_NS   "from_ns"
#define PROTO_KEY_TO_NS     "to_ns"
#define PROTO_KEY_ROWS      "rows"     /* fleet table answers: how many "row" lines */
#define PROTO_KEY_QUALITY   "quality"  /* common/quality.h */
#define PROTO_KEY_UNCONVERTED_DRAINS "unconverted_drains"
/* end of a cpu query: true, samples selected by their own time (the
 * timeline); false, by the drains overlapping the window (the timeline
 * does not reach back to its start) */
#define PROTO_KEY_TIMELINE "timeline"
#define PROTO_KEY_BY_DRAINS "by_drains"

/* A timeline answer: "stack" lines (as a query's, the value the stack's
 * samples in the answer), "samples" lines (common/timed-samples.h), then
 * the "end" line with "stacks", "total" and these. */
#define PROTO_TYPE_SAMPLES  "samples"
#define PROTO_KEY_T0_MS     "t0_ms"
#define PROTO_KEY_DT_MS     "dt_ms"
#define PROTO_KEY_STACK     "stack"
#define PROTO_KEY_N         "n"
/* samples a raised rate took (issue 44): a "samples" line with an "hz"
 * column; the end line then says the base rate they count in */
#define PROTO_TYPE_RATED_SAMPLES "rated_samples"
#define PROTO_KEY_HZ        "hz"
#define PROTO_KEY_BASE_HZ   "base_hz"
#define PROTO_KEY_ENTRIES   "entries"  /* the (millisecond, stack) entries of the "samples" lines */
#define PROTO_KEY_OMITTED   "omitted"  /* samples of the window beyond the answer's cap, not sent */
#define PROTO_KEY_OMITTED_FROM_NS "omitted_from_ns" /* the earliest omitted sample's time */
#define PROTO_KEY_OLDEST_NS "oldest_ns" /* the timeline's oldest time */
/* A timeline answer of kind offcpu carries "spans" lines instead
 * (common/timed-spans.h); its "omitted" counts blocks, and this their ns */
#define PROTO_TYPE_SPANS    "spans"
#define PROTO_KEY_T0_US     "t0_us"
#define PROTO_KEY_DT_US     "dt_us"
#define PROTO_KEY_NS        "ns"
#define PROTO_KEY_OMITTED_NS "omitted_ns"

/* The query model profd's store and profctl's fleet answers share. The
 * names keep the store's prefix: the store defined them first and fills
 * them; profctl reads them back from ClickHouse's copy of the same rows. */

/* Why a user frame has no function (locations.unresolved, schema 6). The
 * writer knows it when it symbolizes (daemon/writer.c, user_frame). */
enum store_unresolved {
        STORE_UNRESOLVED_NONE = 0,            /* has a function, or a kernel or [lost] frame, or not known */
        STORE_UNRESOLVED_NO_SYMBOLS = 1,      /* the file was read, no symbol covers the address */
        STORE_UNRESOLVED_NO_FILE = 2,         /* the mapping's file could not be opened or read as ELF */
        STORE_UNRESOLVED_JIT_WITHOUT_MAP = 3, /* anonymous executable memory no perf map names */
        STORE_UNRESOLVED_UNKNOWN_MAPPING = 4, /* in no known mapping, or the process was never read */
        /* Python frames ("[python]" at the code object's address) */
        STORE_UNRESOLVED_PYTHON_NO_RUNTIME = 5, /* no event told which interpreter the process runs */
        STORE_UNRESOLVED_PYTHON_EXITED = 6,     /* the process exited before the code object was read */
        STORE_UNRESOLVED_PYTHON_READ_CODE = 7,  /* the code object's memory could not be read */
        STORE_UNRESOLVED_PYTHON_NOT_CODE = 8,   /* not a code object there (freed, reused) */
        STORE_UNRESOLVED_PYTHON_READ_STRING = 9, /* a name's memory could not be read */
        STORE_UNRESOLVED_PYTHON_BAD_STRING = 10, /* a name is not a string profd reads (legacy, too long, bad) */
        /* HotSpot frames ("[hotspot]" at the Method* or CodeBlob*) */
        STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME = 11, /* no event told that the process runs a JVM profd reads */
        STORE_UNRESOLVED_HOTSPOT_EXITED = 12,     /* the process exited before the method or blob was read */
        STORE_UNRESOLVED_HOTSPOT_READ = 13,       /* its memory, or the JVM's tables, could not be read */
        STORE_UNRESOLVED_HOTSPOT_BAD = 14,        /* not a method or a code blob there (freed, reused) */
        /* a compiled Java frame named after its method alone: the calls
         * inlined at its pc are not known (the JVM records no scope there,
         * or its debug info did not read). The one reason stored on a
         * frame with a function. */
        STORE_UNRESOLVED_HOTSPOT_NO_SCOPE = 15,
        _STORE_UNRESOLVED_MAX,
};

/* How a Python frame is stored and answered (issue 41): a named one has
 * this build_id prefix (then 16 hex digits of a hash of qualname, file and
 * first line; the module is the .py file, the address its line); one whose
 * code object could not be read has module STORE_PYTHON_MODULE and no
 * function. Every view tells Python frames apart by these alone, so a
 * fleet answer (ClickHouse keeps build_id and module) does as a local one. */
#define STORE_PYTHON_BUILD_ID_PREFIX "python-"
#define STORE_PYTHON_MODULE "[python]"

/* How a Java frame is stored (issue 42), as a Python one: a named one
 * has this build_id prefix (then 16 hex digits of a hash of the method,
 * or of the chain of methods inlined at a compiled frame's pc), the
 * module its source file ("[java]" without one, "[jvm]" for the JVM's
 * stubs), the address its line; one that could not be read has module
 * STORE_HOTSPOT_MODULE and no function. Every view tells them apart by
 * these alone (store_frame_is_hotspot), as Python frames. */
#define STORE_HOTSPOT_BUILD_ID_PREFIX "hotspot-"
#define STORE_HOTSPOT_MODULE "[hotspot]"

/* Whether a frame of this build_id and module is a Python frame, named or
 * not; NULL reads as "". */
static inline bool store_frame_is_python(const char *build_id, const char *module) {
        return (build_id && strncmp(build_id, STORE_PYTHON_BUILD_ID_PREFIX,
                                    sizeof(STORE_PYTHON_BUILD_ID_PREFIX) - 1) == 0) ||
               (module && strcmp(module, STORE_PYTHON_MODULE) == 0);
}

/* Whether a frame of this build_id and module is a Java frame (a method
 * or one of the JVM's stubs), named or not; NULL reads as "". */
static inline bool store_frame_is_hotspot(const char *build_id, const char *module) {
        return (build_id && strncmp(build_id, STORE_HOTSPOT_BUILD_ID_PREFIX,
                                    sizeof(STORE_HOTSPOT_BUILD_ID_PREFIX) - 1) == 0) ||
               (module && strcmp(module, STORE_HOTSPOT_MODULE) == 0);
}

/* How a stack's user part ended (stacks.user_end, schema 6): one of enum
 * profd_stack_end (bpf/profd.h; 0 complete, also for a stack without user
 * frames), or one of these. */
#define STORE_END_LOST 64      /* the user stack was not recorded ([lost]): walk failed, stack map full */
#define STORE_END_UNKNOWN (-1) /* stored before schema 6 (NULL in the store) */

/* How query answers keep stacks apart (the "group" request field). */
enum store_group {
        STORE_GROUP_NONE,    /* stacks of all matching processes merged */
        STORE_GROUP_PROCESS, /* per process: group "comm-pid" */
        STORE_GROUP_UNIT,    /* per systemd unit: group the unit, "-" when none */
        STORE_GROUP_THREAD,  /* per thread name: group the thread's comm (its
                              * process's when the thread's is not known) */
};

/* A frame as queries return it. An address with inlined calls becomes
 * several frames, outermost first. The store fills it (hence the name:
 * store.h includes this header), profd's answers and profctl's fleet answers
 * encode it, the quality report and the export read it. */
struct store_frame_out {
        const char *name;     /* function, or "module+0xoffset" when unresolved */
        const char *raw_name; /* as in the symbol table */
        const char *module;   /* mapping path */
        const char *file;     /* source file, or NULL */
        const char *build_id; /* hex build-id of the module, NULL when unknown */
        uint64_t address;     /* file offset (user) or address (kernel), if has_address */
        unsigned line;        /* 0: unknown */
        bool has_address;     /* false for [lost] */
        bool kernel;
        bool resolved;
        bool inlined;         /* an inlined call: the caller is the frame before */
        bool jit;             /* JIT code: perf map entry or unmapped anonymous code */
        uint8_t unresolved;   /* enum store_unresolved of an unresolved user frame (NONE: not known) */
};

/* One answer line of a stack query. */
struct store_stack_out {
        const struct store_frame_out *frames; /* root first */
        size_t n_frames;
        uint64_t value;
        const char *group; /* with STORE_GROUP_PROCESS/UNIT/THREAD: the group's name; else NULL */
        int user_end;      /* how its user part ended: enum profd_stack_end, STORE_END_LOST, STORE_END_UNKNOWN */
};

/* A growing text buffer, reused from line to line so a long answer does not
 * allocate per stack. */
struct stackline_buf {
        char *data;
        size_t len, cap;
};

/* How a stack line is written, from the request and who asks. */
struct stack_style {
        bool collapse_kernel; /* unprivileged caller: each run of kernel frames is one "[kernel]" */
        bool raw_names;       /* symbol-table names instead of demangled ones */
        bool folded;          /* "folded":"root;..;leaf" instead of "frames" */
        bool lines;           /* folded: "name (file:line)" where debug info placed a frame */
};

/* The "stack" line written as JSON text directly, without building jansson
 * objects: a day's answer has hundreds of thousands of frames, and making
 * and freeing an object per frame was most of what a query cost the daemon
 * (docs/performance.md, Queries). Appends the line, newline included, to b.
 * Strings are written as jansson writes them with JSON_ENSURE_ASCII
 * (tests/unit/test-stackline.c checks it against jansson); a byte sequence
 * that is not UTF-8 (a symbol name is whatever bytes the ELF file has)
 * becomes U+FFFD rather than failing the whole answer. Returns 0 or -ENOMEM
 * (b keeps what it had). */
int stackline_append(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style);

/* Reads a folded stack line as stackline_append() writes it for a stack
 * without a group whose folded text is plain (printable ASCII, no '"' or
 * '\\': every frame name of most answers), without a JSON parser: line
 * (len bytes, no newline) is exactly {"type":"stack","value":N,"folded":"TEXT"}.
 * Returns true with N and TEXT (in line, not NUL-terminated); false for any
 * other line, which the caller reads as JSON. A folded answer is tens of
 * megabytes of such lines, and a general parser's byte-by-byte work was
 * half of what profctl spent on one. */
bool stackline_parse_plain_folded(const char *line, size_t len, uint64_t *ret_value, const char **ret_text,
                                  size_t *ret_text_len);

/* The folded string of a stack (no weight, no newline): the grouping root
 * when there is one, then the frames joined by ';', each written by
 * folded_append_frame(). Appends to b without a terminating NUL; returns 0
 * or -ENOMEM (b keeps what it had). */
int stackline_folded(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style);

/* Decodes the UTF-8 sequence at s (n > 0 bytes left) as every writer of
 * profd's text does: the code point in *ret and its length, or 0 for a
 * byte that starts no valid sequence (overlong forms, surrogates and code
 * points above U+10FFFF included, as jansson refuses them). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret);

/* Whether every byte of str starts or continues a sequence utf8_decode()
 * accepts: the string a JSON writer would keep as it is. */
bool utf8_valid(const char *str);

/* One frame of folded text, the only place names are sanitized for it:
 * ';' in a name becomes ':', control characters and bytes that are not
 * UTF-8 become '?', an empty or NULL name "[unknown]"; then " (file:line)"
 * with the file's last path component when file is set and line is not 0;
 * then "_[k]" (flamegraph.pl's colouring) for a kernel frame. Spaces stay:
 * C++ and Rust names have them, and readers split the weight off at the
 * last space. Returns 0 or -ENOMEM (b keeps what it had). */
int folded_append_frame(struct stackline_buf *b, const char *name, const char *file, unsigned line, bool kernel);

/* Appends n bytes of s to b. Returns 0 or -ENOMEM (b keeps what it had). */
int stackline_buf_append(struct stackline_buf *b, const char *s, size_t n);
void stackline_buf_done(struct stackline_buf *b);
