/* Runtime walkers: the place where a language runtime's frames (CPython's
 * interpreter, HotSpot's JIT code) will join the native walk. Declarations
 * only: no runtime is implemented yet, and nothing calls these yet. Each
 * runtime will be one file pair in daemon/unwind/ (python.c, then
 * hotspot.c) defining one const struct unwind_runtime, beside its BPF
 * walker in bpf/.
 *
 * The walk as it will be (docs/architecture.md, "Runtime walkers"): the
 * native BPF walker, finding a frame's pc in a hand-over range of a
 * mapping, runs the runtime's BPF walker, which emits pseudo-frames
 * (struct unwind_runtime_frame) and hands back to the native walk, so a
 * stack interleaves native and runtime frames in their true order. The
 * daemon does two things for it, one per hook below: it finds the runtime
 * in a mapped file (discover, in the unwinder, with the file's table) and
 * names the pseudo-frames of a drained stack (name, on the writer's path,
 * where native frames are symbolized). */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "mapfile.h"
#include "profd.h"

/* Which runtime a pseudo-frame or a hand-over belongs to: the BPF walker
 * and the stacks in the store carry this number, so it never changes
 * meaning. 0 is no runtime (a native frame). */
enum unwind_runtime_id {
        UNWIND_RUNTIME_NONE = PROFD_RUNTIME_NONE,
        UNWIND_RUNTIME_PYTHON = PROFD_RUNTIME_PYTHON,
        UNWIND_RUNTIME_HOTSPOT = PROFD_RUNTIME_HOTSPOT,
};

/* The most bytes a runtime keeps for naming its frames (CPython: its
 * struct python_layout and PyCode_Type's address), beside what its BPF
 * walker gets (struct profd_runtime in bpf/profd.h). */
#define UNWIND_RUNTIME_NAMES_MAX 256

/* What discovery found in one mapped file: what the BPF walker needs to
 * hand the walk over. Addresses are ELF addresses of the file, as the
 * native rows' are: the process's entry adds the load bias of the
 * mapping (struct profd_unwind_proc.rt_*), so the result is the file's,
 * cached with its table (struct ufile, by struct file_key) and shared by
 * every process mapping the file. */
struct unwind_runtime_found {
        enum unwind_runtime_id id;
        /* Where the native walk hands over: a frame whose pc is in
         * [lo, hi) or [cold_lo, cold_hi) (CPython: _PyEval_EvalFrameDefault
         * and its cold part outside the symbol's range). lo == hi: none in
         * the file. */
        uint64_t lo, hi, cold_lo, cold_hi;
        /* Hand over in the process's anonymous executable mappings too
         * (HotSpot: its code cache is anonymous; the file found is
         * libjvm.so, whose tables describe it). */
        bool anonymous_code;
        /* What the runtime's BPF walker gets: a slot of unwind_runtimes. */
        struct profd_runtime bpf;
        /* The runtime's own, for naming (name hooks below). */
        uint8_t names[UNWIND_RUNTIME_NAMES_MAX];
};

/* A pseudo-frame as the runtime's BPF walker emits it into a stack: the
 * code object (PyCodeObject *, Method *) in the process and the
 * instruction offset within it. */
struct unwind_runtime_frame {
        enum unwind_runtime_id id;
        uint64_t code;
        uint32_t offset;
};

/* A pseudo-frame named: what a native frame gets from the symbolizer. */
struct unwind_runtime_name {
        char *function;            /* qualified name (co_qualname; class.method) */
        char *file;                /* NULL: unknown */
        uint32_t line;             /* 0: unknown */
};

static inline void unwind_runtime_name_done(struct unwind_runtime_name *n) {
        free(n->function);
        free(n->file);
        *n = (struct unwind_runtime_name) {};
}

struct unwind_runtime {
        const char *name;          /* "python", "hotspot": status and logs */
        enum unwind_runtime_id id;

        /* Discovery. Called by the unwinder for each file it reads, once
         * per file identity, with the ELF it builds the file's table from
         * (file_read in unwind-files.c), whether the table was built or
         * not. It reads the file only (its exported symbols and
         * self-description: CPython's .dynsym and _Py_DebugOffsets,
         * HotSpot's gHotSpotVM* tables), never a process. Returns 1 with
         * *ret filled when the runtime is in this file, 0 when not, or a
         * negative errno (counted, the file walked natively). */
        int (*discover)(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret);

        /* Naming. Called on the writer's path for each pseudo-frame of a
         * drained stack of process pid (instance start_ns), with what
         * discovery found for the file the walk handed over in. Reads the
         * process's memory (the code object's names and line table); the
         * caller caches the answer by (pid, start_ns, code) with a
         * checksum against reuse. Returns 0 with *ret (freed with
         * unwind_runtime_name_done), -ESRCH when the process is gone,
         * -ENOENT when no code object is at frame->code any more, or
         * another negative errno. */
        int (*name_frame)(uint32_t pid, uint64_t start_ns, const struct unwind_runtime_found *found,
                          const struct unwind_runtime_frame *frame, struct unwind_runtime_name *ret);
};
