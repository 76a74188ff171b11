/* Discovery of a CPython interpreter in an ELF file: version, runtime, the eval loop and its cold part. */
#pragma once

#include <gelf.h>
#include <stdint.h>

/* Bytes of _PyRuntime's head kept from the file: 3.13's _Py_DebugOffsets
 * is 584 bytes, and later ones stay well below this. */
#define PYTHON_RUNTIME_HEAD_MAX 1024

/* What the file says, everything from .dynsym, the file's own sections
 * and .eh_frame (never a debug package). Addresses are the file's (ELF
 * virtual addresses, before a shared object's load bias). */
struct python_binary {
        uint32_t version;              /* Py_Version: PY_VERSION_HEX */
        uint64_t runtime, runtime_size;        /* _PyRuntime */
        uint64_t code_type;            /* PyCode_Type (0: not exported) */
        uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault */
        uint64_t cold_start, cold_end; /* its cold part; both 0 when it has none */
        uint8_t runtime_head[PYTHON_RUNTIME_HEAD_MAX];
        size_t runtime_head_size;      /* initial bytes of _PyRuntime, for python_layout_get */
};

/* Is `elf` a CPython interpreter (an executable with the interpreter linked
 * in, or libpython3.X.so)? Returns 0 with *ret filled; -ENOENT when it is
 * not one (no _PyEval_EvalFrameDefault or _PyRuntime defined in .dynsym:
 * pyenv's stub `python3.11` executable is not, its libpython is);
 * -EPROTONOSUPPORT when it is one profd cannot describe (no Py_Version,
 * which 3.11 introduced; not 64-bit little-endian); -EBADMSG when a
 * symbol's value cannot be read from the file. */
int python_discover_elf(Elf *elf, struct python_binary *ret);

/* The same, opening `path`. Also -errno from open(). */
int python_discover_file(const char *path, struct python_binary *ret);

/* The cold part of the function [start, end) in `elf`, as
 * python_discover_elf finds it for the eval loop (the rule is in
 * python-discover.c): 0 with [*ret_start, *ret_end); -ENOENT when none is
 * found (or the file is not x86_64); -EBADMSG on unreadable code. */
int python_discover_cold(Elf *elf, uint64_t start, uint64_t end, uint64_t *ret_start, uint64_t *ret_end);
