/* Stacks recorded from a stopped child, for the walker's tests: its
 * registers (ptrace), executable mappings with the daemon's tables, stack
 * (from /proc), and the tables published into the shim's unwind maps as
 * the daemon's unwinder lays them out. */
#pragma once

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim.h"

/* A table built for one file mapping: its compact table (table-pack.h),
 * n_slots 4-byte slots, as the unwinder writes it into unwind_rows from
 * the start of a value, two slots to a value. */
struct table {
        uint32_t *slots;
        size_t n_slots;
};

struct recording {
        const char *what;
        const char *const *chain; /* the known frames, innermost first */
        bool from_leaf;           /* chain[0] is frame 0 (else libc's frames come first) */
        bool fp;                  /* built with frame pointers */
        pid_t pid;
        uint64_t start;           /* the process instance's start (made up) */
        struct pt_regs regs;
        uint64_t fsbase;          /* the thread pointer (the runtime walk reads it) */
        struct profd_unwind_proc rt; /* the entry's runtime part (rt_*) publish writes */
        uint64_t stack_base;
        uint8_t *stack;
        size_t stack_len;
        struct profd_unwind_mapping maps[64]; /* rows_off set by publish */
        struct table tables[64];              /* per mapping; slots NULL: no table (FP) */
        uint32_t rows_off[64];                /* where publish wrote them */
        bool written[64];
        char *paths[64];
        size_t n_maps;
        Dwfl *dwfl;
};

int table_build(const char *path, struct table *ret);
int mapping_bias(const char *path, uint64_t start, uint64_t offset, uint64_t *ret);
/* Reads the child's executable mappings with their tables (a file with
 * CFI: TABLE; else, the vDSO and anonymous code: FP) and its stack, from
 * the stack pointer's page to the end of the stack's mapping. */
int record_memory(struct recording *r);
extern const Dwfl_Callbacks recording_dwfl_callbacks;
/* The name of the function at pc in the recorded process, or "?". */
const char *symbolize(const struct recording *r, uint64_t pc);
/* Kills and reaps the child if it is still there; frees the recording. */
void recording_done(struct recording *r);

/* Where publish writes next, and the versions of entries it wrote. */
extern uint32_t rows_next, maps_next;
extern uint64_t versions;
enum publish_mode {
        PUBLISH_TABLES,     /* every table, in the slices written before if any */
        PUBLISH_MOVED,      /* every table, in new slices */
        PUBLISH_FIXTURE_FP, /* the fixture's own mappings without a table: other rules */
};
/* Writes the recording's tables (once, as the unwinder shares a file's
 * table between its processes, or again into new slices) and mappings,
 * then its entry under a new version, and moves the epoch: the unwinder's
 * order. Returns the version. */
uint64_t publish(struct recording *r, enum publish_mode mode);
/* Overwrites every slot published so far with rows no walk may follow: a
 * slice released and reused. */
void scribble_published(void);
