/* The data-quality report every query answer carries (docs/protocol.md,
 * "quality"; docs/profctl.md): how much of the answer's weight has complete
 * user stacks, how much was truncated and why, how much has frames without
 * a name and why, and what was lost in the window. profd fills it
 * (common/quality-sum.c), profctl reads it back and prints it; both take
 * the names from here, so each reason is named once. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Why a user stack is not complete. */
enum quality_truncated {
        QUALITY_TRUNC_NO_TABLE,    /* the process or the mapping had no unwind table yet */
        QUALITY_TRUNC_NO_MAPPING,  /* an address in no mapping the unwinder knew */
        QUALITY_TRUNC_UNSUPPORTED, /* an unwind rule BPF cannot evaluate */
        QUALITY_TRUNC_READ_FAULT,  /* reading the user stack failed */
        QUALITY_TRUNC_DEPTH,       /* more frames than profd walks (127) */
        QUALITY_TRUNC_FP_END,      /* the frame-pointer fallback met an implausible frame pointer */
        QUALITY_TRUNC_CFA_STUCK,   /* the stack did not grow (sigaltstack, coroutines, corruption) */
        QUALITY_TRUNC_STACK_LOST,  /* no user stack at all: walk failed or the stack map was full */
        _QUALITY_TRUNC_MAX,
};

/* Why a user frame has no function name. */
enum quality_unresolved {
        QUALITY_UNRES_NO_SYMBOLS,      /* the file was read, no symbol covers the address */
        QUALITY_UNRES_NO_FILE,         /* the file could not be opened or read */
        QUALITY_UNRES_JIT_WITHOUT_MAP, /* anonymous code no perf map names */
        QUALITY_UNRES_UNKNOWN_MAPPING, /* in no known mapping */
        /* Python frames (enum store_unresolved says more) */
        QUALITY_UNRES_PYTHON_NO_RUNTIME,  /* no event told the process's interpreter */
        QUALITY_UNRES_PYTHON_EXITED,      /* the process exited before the code object was read */
        QUALITY_UNRES_PYTHON_READ_CODE,   /* the code object could not be read */
        QUALITY_UNRES_PYTHON_NOT_CODE,    /* no code object there (freed, reused) */
        QUALITY_UNRES_PYTHON_READ_STRING, /* a name could not be read */
        QUALITY_UNRES_PYTHON_BAD_STRING,  /* a name profd does not read */
        /* Java frames (enum store_unresolved says more) */
        QUALITY_UNRES_HOTSPOT_NO_RUNTIME, /* no event told the process's JVM */
        QUALITY_UNRES_HOTSPOT_EXITED,     /* the process exited before the method or blob was read */
        QUALITY_UNRES_HOTSPOT_READ,       /* the method or blob (or the JVM's tables) could not be read */
        QUALITY_UNRES_HOTSPOT_BAD,        /* no method or blob there (freed, reused) */
        /* named after its method, the calls inlined at its pc not known:
         * counted in unresolved_by, not in unresolved (it has a name) */
        QUALITY_UNRES_HOTSPOT_NO_SCOPE,
        QUALITY_UNRES_UNKNOWN,         /* stored before profd recorded why */
        _QUALITY_UNRES_MAX,
};

/* Data lost before it reached the store, counted host-wide per drain (the
 * drop reasons of `profctl status`). */
enum quality_lost {
        QUALITY_LOST_MAP_FULL,           /* samples/blocks: the aggregation map was full */
        QUALITY_LOST_STACK_MAP_FULL,     /* stacks: the frames map was full (sample kept, stack [lost]) */
        QUALITY_LOST_USER_STACK_ERROR,   /* user stack walks that could not start */
        QUALITY_LOST_KERNEL_STACK_ERROR, /* kernel stack walks that failed */
        QUALITY_LOST_RINGBUF_FULL,       /* process events: new processes not named */
        QUALITY_LOST_TASK_STORAGE_FULL,  /* blocks: no per-task storage at switch-out */
        QUALITY_LOST_PROCESS_VANISHED,   /* processes that exited before profd read them */
        QUALITY_LOST_STORE_WRITE_FAILED, /* drains that could not be stored */
        QUALITY_LOST_SWITCH_MISSED,      /* blocks: a switch-in profd never saw */
        _QUALITY_LOST_MAX,
};

struct quality_name {
        const char *key;   /* JSON key */
        const char *label; /* in profctl's summary line */
};
extern const struct quality_name quality_truncated_names[_QUALITY_TRUNC_MAX];
extern const struct quality_name quality_unresolved_names[_QUALITY_UNRES_MAX];
extern const struct quality_name quality_lost_names[_QUALITY_LOST_MAX];

/* Weights are the answer's unit (samples, or ns); lost counts are events. */
struct quality {
        uint64_t total;       /* weight of the answer */
        uint64_t complete;    /* user stack complete, or no user stack (kernel threads) */
        uint64_t unknown;     /* stacks stored before profd recorded how they ended */
        uint64_t truncated[_QUALITY_TRUNC_MAX];
        uint64_t unresolved;  /* with at least one user frame without a name */
        uint64_t unresolved_by[_QUALITY_UNRES_MAX]; /* a stack with two reasons counts in both */
        uint64_t lost[_QUALITY_LOST_MAX];           /* host-wide, in the drains of the window */
        bool partial;         /* a series' report: only total, complete and lost are known */
};

uint64_t quality_truncated_total(const struct quality *q);

/* Adds q to into, field by field (a fleet's report is its hosts' added up);
 * partial when either is. */
void quality_add(struct quality *into, const struct quality *q);

/* The report as the "quality" object of an answer's "end" line. Returns a
 * new object, or NULL on out of memory. */
json_t *quality_to_json(const struct quality *q);

/* Reads an answer's "quality" object back. Absent keys read as 0 (an older
 * profd); a key that is not an unsigned integer is -EBADMSG. Returns 0 or
 * -EBADMSG. */
int quality_from_json(const json_t *o, struct quality *ret);

/* Checks a fleet answer's "quality_by_host": an object whose every value
 * is a report quality_from_json() reads. Returns 0 or -EBADMSG. */
int quality_by_host_check(const json_t *o);

/* The one-line summary, e.g. "quality: 97.8% complete stacks; 1.9% truncated
 * (no table yet 1.2%, depth 0.7%); 0.3% unresolved (no symbols 0.3%); lost:
 * none". Shares are of q->total, one decimal, "<0.1%" for a share that is
 * not zero but rounds to it; a partial report says what is not complete
 * without the reasons. Returns a string to free, or NULL on out of memory. */
char *quality_summary(const struct quality *q);
