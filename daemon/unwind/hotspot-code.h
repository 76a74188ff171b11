/* HotSpot's pseudo-frames named: interpreted frames by their Method*, compiled frames and stubs by their CodeBlob*. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "hotspot-names.h"
#include "hotspot-scopes.h"
#include "hotspot-vmstructs.h"
#include "runtime.h"

/* Why a HotSpot frame has no name, or a name with less than it could
 * have: one reason space for both runtimes (reason_name), one counter
 * each in the writer's status and, for those that leave the frame
 * unnamed or without its inlined calls, the quality report. */
enum hotspot_code_reason {
        HOTSPOT_CODE_OK,
        /* unnamed */
        HOTSPOT_CODE_NO_TABLES,        /* the JVM's VM-structs tables could not be read */
        HOTSPOT_CODE_READ_METHOD,      /* a Method, or what names it (pool, class, Symbols), could not be read */
        HOTSPOT_CODE_BAD_METHOD,       /* what is there is not a method (freed, reused, garbage) */
        HOTSPOT_CODE_READ_BLOB,        /* the code blob (or its name) could not be read */
        HOTSPOT_CODE_BAD_BLOB,         /* what is there is not a code blob: a name that is not one, a
                                        * code start outside it, nmethod offsets out of order */
        /* named, with less */
        HOTSPOT_CODE_NO_LINE,          /* the method has no line table, or no row at the bci */
        HOTSPOT_CODE_NO_SCOPE,         /* compiled: the JVM records no scope at the pc; named after the
                                        * nmethod's own method, its inlined calls not shown */
        HOTSPOT_CODE_BAD_SCOPE,        /* compiled: the debug info could not be read, did not decode, or
                                        * names a method that could not be read; the method alone */
        HOTSPOT_CODE_FAR_OFFSET,       /* compiled: the pc is 64 KiB or more into the blob (the frame's
                                        * offset saturated); the method alone */
        _HOTSPOT_CODE_REASON_MAX,
};

/* "no-tables", "read-method", ...: the names the status uses. */
const char *hotspot_code_reason_name(enum hotspot_code_reason reason);

/* Whether the reason leaves the frame without a name. */
static inline bool hotspot_code_reason_unnamed(unsigned reason) {
        return reason != HOTSPOT_CODE_OK && reason < HOTSPOT_CODE_NO_LINE;
}

/* Bytes of an nmethod's debug info (its PcDescs, scopes and metadata
 * together) read, at most: C2's largest methods have some tens of KiB;
 * more is garbage, or a method named without its inlined calls. */
#define HOTSPOT_DEBUG_INFO_MAX (1024u * 1024u)
/* Methods named per nmethod, at most: its own and those it inlined
 * (C2 inlines up to a few hundred calls into a large method). */
#define HOTSPOT_CODE_METHODS_MAX 512u
/* Bytes of a blob's name read, at most: HotSpot's longest are stub names
 * under 64 ("MethodHandles adapters", "I2C/C2I adapters",
 * "_complete_monitor_locking_Java"). */
#define HOTSPOT_BLOB_NAME_MAX 128u

/* id HOTSPOT: an interpreted frame, a Method* and its bci. Discovery is
 * hotspot_discover (hotspot.h); naming reads the Method
 * (hotspot_method_read) with the offsets of the JVM's tables, read once
 * per libjvm build; the reuse check re-reads the method's key. */
extern const struct unwind_runtime hotspot_runtime;
/* id HOTSPOT_CODE: a frame in compiled code or a stub, a CodeBlob* and
 * pc - blob. An nmethod is read whole at once (its method, compile id,
 * debug info, the methods it inlined, named), so that naming a pc is
 * pure; the reuse check re-reads the blob's head (name, code start,
 * method, compile id, debug info's offsets). A stub is named after its
 * blob ("[jvm] StubRoutines (1)"). */
extern const struct unwind_runtime hotspot_code_runtime;

/* The 64-bit identity of a Java method, stable across processes and
 * profd versions: the store's build_id of its frames is "hotspot-" and
 * these 16 hex digits. Of the class (external form), the method's name
 * and signature. */
uint64_t hotspot_method_identity(const char *class_name, const char *method_name, const char *signature);

/* Forgets the VM-structs tables cached (for tests that read another JVM
 * build at the same addresses). */
void hotspot_code_forget_tables(void);
/* Caches `vs` as the tables of the build whose symbols' file addresses are
 * `symbols` (for tests of the hooks on a memory image, which has no
 * tables to read). */
void hotspot_code_put_tables(const uint64_t symbols[_HOTSPOT_SYM_MAX], const struct hotspot_vmstructs *vs);
