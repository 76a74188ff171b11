/* The writer thread: turns drained kernel data into symbolized stacks and
 * stores them, one transaction per drain, off the event loop, so reading
 * symbols of a huge binary or a slow disk never delays queries or the next
 * flip. It owns the process table, the symbolizer and a store connection of
 * its own, and takes jobs in order: process snapshots, then drains. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "collector.h"
#include "conf.h"
#include "macro.h"
#include "proctable.h"
#include "mapfile.h"
#include "hotspot-code.h"
#include "python-code.h"
#include "retention.h"
#include "runtime-names.h"
#include "runtime.h"

typedef struct writer writer;

/* What became of a drain job. */
struct writer_result {
        uint64_t seq;      /* from writer_drain */
        int error;         /* 0, or a negative errno: the drain was not stored */
        int64_t drain_id;
        uint64_t samples, keys;
        /* the files the drain's user frames are in, each once (the
         * caller frees it): the unwinder's record of which tables
         * samples use (unwinder_note_sampled) */
        struct file_ident *sampled;
        size_t n_sampled;
};

/* User frames stored without a function name since profd started, by
 * reason. Each unresolved frame of each stored key (one stack of one thread,
 * kind and state in one drain) counts once, whatever the key's value: how
 * many stored stacks each reason damaged, not how many samples. */
struct writer_unresolved {
        uint64_t no_symbols;      /* the file was read, no symbol covers the address */
        uint64_t no_file;         /* the mapping's file could not be opened or read as ELF ([vdso] too) */
        uint64_t jit_without_map; /* anonymous executable memory that no perf map entry names */
        uint64_t unknown_mapping; /* in no executable mapping, or the process was never read */
        /* Python pseudo-frames (runtime-names.h) stored without a name: */
        uint64_t python_no_runtime; /* no code event told which interpreter the process runs */
        uint64_t python_exited;     /* the process exited before the code object was read */
        /* by enum python_code_reason: without a name (reading the code
         * object or its names failed: READ_CODE to STRING_BAD), or named
         * without a line (the line table: READ_LINETABLE on) */
        uint64_t python[_PYTHON_CODE_REASON_MAX];
        /* HotSpot pseudo-frames (interpreted and compiled) stored without
         * a name, or with less than a name can have: */
        uint64_t hotspot_no_runtime; /* no code event told that the process runs a JVM profd reads */
        uint64_t hotspot_exited;     /* the process exited before the method or blob was read */
        /* by enum hotspot_code_reason: without a name (NO_TABLES to
         * BAD_BLOB), or named without a line or without the calls inlined
         * at the pc (NO_LINE on) */
        uint64_t hotspot[_HOTSPOT_CODE_REASON_MAX];
};

/* The status names of python_no_runtime, python_exited and of each reason
 * of writer_unresolved.python (NULL for PYTHON_CODE_OK): status shows the
 * name reasons under "unresolved", the line ones under
 * "runtime_names"."no_line". */
#define WRITER_PYTHON_NO_RUNTIME "python_no_runtime"
#define WRITER_PYTHON_EXITED "python_exited"
extern const char *const writer_python_reason_names[_PYTHON_CODE_REASON_MAX];

/* The same for HotSpot's: hotspot_no_runtime, hotspot_exited, each reason
 * of writer_unresolved.hotspot (NULL for HOTSPOT_CODE_OK); status shows
 * the unnamed ones under "unresolved", the others under
 * "runtime_names"."no_line" (hotspot_code_reason_unnamed). */
#define WRITER_HOTSPOT_NO_RUNTIME "hotspot_no_runtime"
#define WRITER_HOTSPOT_EXITED "hotspot_exited"
extern const char *const writer_hotspot_reason_names[_HOTSPOT_CODE_REASON_MAX];

/* Whether a reason of enum python_code_reason leaves a frame without a
 * name (else, named, without a line). */
static inline bool writer_python_reason_unnamed(unsigned reason) {
        return reason != PYTHON_CODE_OK && reason < PYTHON_CODE_READ_LINETABLE;
}

/* Frames of files whose DWARF was deferred (dwarf_min_samples;
 * daemon/symbols/dwarf-defer.h). */
struct writer_deferred {
        uint64_t frames;      /* new frames stored by their symbol alone, kept to be given their lines */
        uint64_t lines_added; /* of those, given their function and lines (inlined calls) since */
        uint64_t not_kept;    /* stored by their symbol alone and not kept: another path of the file, or
                               * past DWARF_DEFER_PENDING_MAX; they keep their symbol alone */
};

struct writer_stats {
        uint64_t samples_seen, idle_samples;          /* BPF's, of the drains written or refused */
        uint64_t failed_drains;                       /* not yet stored as drops */
        uint64_t pending_drops[PROFD_COUNTER__MAX];   /* drop counts of those drains */
        uint64_t processes_tracked;
        uint64_t symbol_cache_bytes;   /* what the symbolizer holds now (heap) */
        uint64_t symbol_mapped_bytes;  /* DWARF copies mapped now (file pages) */
        uint64_t symbol_peak_bytes;    /* the most of both together, at the end of a drain */
        uint64_t kallsyms_reads;       /* /proc/kallsyms read (the first drain's, and after kernel code came) */
        uint64_t kallsyms_kept;        /* drains after kernel code came whose frames the table still named */
        struct writer_unresolved unresolved;
        struct writer_deferred deferred;
        uint64_t jit_map_entries_dropped;             /* perf map entries over the per-process bound */
        struct runtime_names_stats runtime_names;     /* the cache of Python code objects */
        bool retention_on;                            /* retention runs (its connection is open) */
        struct retention_totals retention;
};

/* Opens its own connection to the store at store_path (already created and
 * migrated) and starts the thread. symbol_cache_budget bounds the symbols and
 * debug info kept in memory (bytes; evicted least recently used first);
 * debuginfod: ask debuginfod servers (as the environment names them) for
 * debug files found nowhere on the host. Returns 0 or a negative errno, logged. */
int writer_new(const char *store_path, const char *proc_root, uint64_t symbol_cache_budget, bool debuginfod,
               writer **ret);
/* Finishes every queued job, stops the thread and frees it. NULL is fine. */
writer *writer_free(writer *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(writer *, writer_free)

/* Readable when results are waiting for writer_result_pop. */
int writer_fd(const writer *w);
bool writer_result_pop(writer *w, struct writer_result *ret);

/* Queues a process snapshot; takes ownership. Returns 0 or -ENOMEM. */
int writer_learn(writer *w, struct proc *snapshot);

/* Queues a drained batch; takes ownership of its contents. vanished is the
 * number of processes that exited before they could be read, since start.
 * Returns 0 and the job's sequence number, or -ENOMEM. */
int writer_drain(writer *w, struct drain_batch *b, uint64_t start_ns, uint64_t end_ns, uint64_t vanished,
                 uint64_t *ret_seq);

/* A runtime's code object met by a walk (PROFD_EVENT_RUNTIME_CODE):
 * process (pid, start_ns) runs the runtime found (copied) in a file
 * loaded at bias; code is the object's address, of runtime rt_id (the
 * event's: HotSpot's Method* or CodeBlob*; 0: found's own). Read at once, on the
 * caller's thread (/proc/PID/mem, a few small reads), and queued for the
 * writer's naming cache, before the next drain's frames. Returns 0,
 * -EPROTONOSUPPORT (a runtime profd does not name) or -ENOMEM. */
int writer_runtime_code(writer *w, uint32_t pid, uint64_t start_ns, uint64_t bias, unsigned rt_id, uint64_t code,
                        const struct unwind_runtime_found *found);

void writer_get_stats(writer *w, struct writer_stats *ret);

/* Where profd's own BPF programs run (collector_own_code): kernel frames
 * there do not need /proc/kallsyms read again when other kernel code comes
 * or goes. Takes ownership of ranges (sorted by start). */
void writer_set_own_code(writer *w, struct kernel_range *ranges, size_t n);

/* Queues the settings that may change while it runs (symbol_cache,
 * debug_dirs, retention*, max_store_size), applied in order with the other jobs: the symbol
 * cache budget from the next drain, the debug directories to files loaded
 * afterwards, retention from its next step. The first call also starts
 * retention (opening its connection; an older store is switched to
 * incremental vacuum there, once). Copies what it needs. Returns 0 or
 * -ENOMEM. */
int writer_configure(writer *w, const struct conf *settings);

/* Names of the drop reasons (NULL for counters that are not drops), as
 * stored and shown by `profctl status`. Those starting with
 * TRUNCATED_PREFIX are not drops but user stacks that ended early, one per
 * enum profd_stack_end: status shows them apart, without the prefix. */
extern const char *const drop_reason_names[PROFD_COUNTER__MAX];
#define TRUNCATED_PREFIX "truncated_"
#define DROP_PROCESS_VANISHED "process_vanished"
#define DROP_STORE_WRITE_FAILED "store_write_failed"
