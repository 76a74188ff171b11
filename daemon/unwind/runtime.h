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
 * (PROFD_RT_FRAME, bpf/profd.h) and hands back to the native walk, so a
 * stack interleaves native and runtime frames in their true order. The
 * daemon does two things for it, hooks below: it finds the runtime in a
 * mapped file (discover, in the unwinder, with the file's table) and names
 * the pseudo-frames of a drained stack (code_*, on the writer's path,
 * where native frames are symbolized, through runtime-names.h's cache). */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
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
        UNWIND_RUNTIME_HOTSPOT = PROFD_RUNTIME_HOTSPOT,            /* interpreted: Method*, bci */
        UNWIND_RUNTIME_HOTSPOT_CODE = PROFD_RUNTIME_HOTSPOT_CODE,  /* compiled or a stub: CodeBlob*, pc - blob */
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

/* Reads `size` bytes at `addr` of one process (the naming cache's reader,
 * daemon/unwind/runtime-names.h): 0 when all were read, a negative errno
 * otherwise. */
typedef int (*unwind_runtime_read_fn)(void *userdata, uint64_t addr, void *buf, size_t size);

/* A code object (PyCodeObject, Method) as a runtime read it from a
 * process: the runtime's own, kept by the naming cache by (process,
 * address) until evicted. */
typedef struct unwind_runtime_code unwind_runtime_code;

/* Levels of an inline chain a runtime frame gives, at most: the writer's
 * MAX_INLINE, what a native frame keeps. */
#define UNWIND_RUNTIME_INLINE_MAX 16

/* One level of a runtime frame's inline chain. */
struct unwind_runtime_line {
        const char *function;
        const char *file;          /* NULL: unknown */
        uint32_t line;             /* 0: unknown */
};

/* A pseudo-frame named: what a native frame gets from the symbolizer.
 * Strings are the code's (live as long as it is). */
struct unwind_runtime_name {
        const char *function;      /* qualified name (co_qualname; package.Class.method) */
        const char *file;          /* as the code object gives it; NULL: none */
        /* what the store's frame is in (its module); NULL: file */
        const char *module;
        uint32_t line;             /* 0: unknown (the reason says why) */
        /* Names the function across processes and restarts: the digits of
         * the frame's build_id in the store (rules in runtime-names.h).
         * With an inline chain, names the chain (another chain at the same
         * line is another location). */
        uint64_t identity;
        /* Compiled code (HotSpot's nmethods): the calls inlined at the
         * instruction, innermost first, the last being function, file and
         * line themselves; n_lines 0: none (the frame is its function). */
        struct unwind_runtime_line lines[UNWIND_RUNTIME_INLINE_MAX];
        size_t n_lines;
};

struct unwind_runtime {
        const char *name;          /* "python", "hotspot": status and logs */
        enum unwind_runtime_id id;
        /* Whose discovery the naming hooks' `found` comes from (0: id's
         * own): HotSpot's compiled frames (id HOTSPOT_CODE) are named
         * with what HotSpot's discovery found in libjvm.so. */
        enum unwind_runtime_id found_id;

        /* Discovery. Called by the unwinder for each file it reads, once
         * per file identity, with the ELF it builds the file's table from
         * (file_read in unwind-files.c), whether the table was built or
         * not. It reads the file only (its exported symbols and
         * self-description: CPython's .dynsym and _Py_DebugOffsets,
         * HotSpot's gHotSpotVM* tables), never a process. Returns 1 with
         * *ret filled when the runtime is in this file, 0 when not, or a
         * negative errno (counted, the file walked natively). */
        int (*discover)(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret);

        /* Naming, on the writer's thread (runtime-names.h caches what
         * these give by (process, code address)). `found` is what discovery
         * found in the file the process's walks hand over in, `bias` the
         * file's load bias in that process; `read` reads the process's
         * memory. Reasons are the runtime's own (reason_name names them;
         * 0 is none).
         *
         * code_read: reads the code object at `addr` in full. Returns 0
         * with *ret (its heap bytes in *ret_bytes, for the cache's
         * budget); -ENOMEM; or another negative errno with *ret_reason
         * (nothing a name can be made of is there). */
        int (*code_read)(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                         void *userdata, uint64_t addr, unwind_runtime_code **ret, size_t *ret_bytes,
                         unsigned *ret_reason);
        /* code_same: whether the object at `addr` is still the one read
         * (the runtime may have freed it and put another there): reads as
         * little as tells, the object's head. Returns 1 the same, 0 not
         * (or unreadable now), or a negative errno when reading failed. */
        int (*code_same)(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                         void *userdata, uint64_t addr, const unwind_runtime_code *code);
        /* code_name: the name of the instruction at `offset` (the
         * pseudo-frame's, in the runtime's units). Pure. *ret_reason: why
         * ret->line is 0 (0 when it is not). */
        void (*code_name)(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                          unsigned *ret_reason);
        void (*code_free)(unwind_runtime_code *code);
        /* A code object in a file mapping is the same object, named the
         * same, at the same offset of that file in every process that maps
         * the file, wherever it is mapped, and is never freed while mapped
         * (HotSpot: a Method of a class in the CDS archive, classes.jsa;
         * CPython 3.11+: a code object deep-frozen into the interpreter's
         * data):
         * the naming cache reads it once for all those processes and never
         * checks it against reuse. */
        bool code_in_files_shared;
        /* "read-code", ...: a reason's name; reasons_max: how many there are
         * (0 included). */
        const char *(*reason_name)(unsigned reason);
        unsigned reasons_max;
};
