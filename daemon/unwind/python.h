/* CPython, a runtime walker (runtime.h): discovery of an interpreter in a
 * mapped file, for the BPF walker's hand-over (bpf/python.bpf.h), and the
 * naming of its pseudo-frames. */
#pragma once

#include "python-discover.h"
#include "python-layout.h"
#include "runtime.h"

/* glibc's struct pthread, x86-64: the offset of specific_1stblock (2.26
 * to 2.40 alike: the members before it have not moved since). */
#define PYTHON_GLIBC_SPECIFIC 0x310

/* What CPython keeps in struct unwind_runtime_found.names. */
struct python_names {
        struct python_layout layout;
        uint64_t code_type;            /* file address of PyCode_Type; 0: not exported */
};

/* Discovery (python_discover) and naming: a code object read from
 * /proc/PID/mem with python_code_read, with the layout of struct
 * python_names and PyCode_Type at code_type + the file's bias; the reuse
 * check compares the head fields naming reads (type, names, line table,
 * first line); a line from python_code_line. */
extern const struct unwind_runtime python_runtime;

/* The 64-bit identity of a Python function, stable across processes and
 * profd versions: the store's build_id of its frames is "python-" and
 * these 16 hex digits (rules.md's convention, docs/architecture.md). */
uint64_t python_code_identity(const char *qualname, const char *filename, int32_t firstlineno);

/* Fills *ret from what python_discover_elf found and the version's
 * layout. Returns 0, or -EPROTONOSUPPORT when the version's layout says
 * nothing a walker can use (no TSS key: the thread's state cannot be
 * found). Pure: for tests. */
int python_found_make(const struct python_binary *bin, const struct python_layout *layout,
                      struct unwind_runtime_found *ret);
