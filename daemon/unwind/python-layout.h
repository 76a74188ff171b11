/* CPython's in-memory layouts that a frame walker and the code reader need, per minor version. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A field this version does not have (3.11's is_entry from 3.12 on, the
 * _PyCFrame indirection from 3.13 on). */
#define PYTHON_NO_FIELD UINT32_MAX

/* PY_VERSION_HEX of a minor version, as Py_Version holds it (patch level,
 * release level and serial left zero). */
#define PYTHON_VERSION(major, minor) ((uint32_t) (major) << 24 | (uint32_t) (minor) << 16)
#define PYTHON_MINOR(version) ((version) & UINT32_C(0xffff0000))

/* Byte offsets, all for 64-bit little-endian builds (x86_64, aarch64) with
 * the GIL. The walk they serve:
 *   tstate = the thread's PyThreadState (TSS key, or runtime → interpreters
 *            → threads list);
 *   frame  = tstate_cframe == PYTHON_NO_FIELD
 *            ? *(tstate + current_frame)
 *            : *(*(tstate + tstate_cframe) + current_frame);
 *   then, per frame, python_layout_frame_role() says what it is, and
 *   frame_previous leads to the next one. */
struct python_layout {
        uint32_t version;              /* PY_VERSION_HEX the layout is for (minor) */

        /* _PyRuntime, PyInterpreterState, PyThreadState */
        uint32_t runtime_interpreters_head;
        uint32_t runtime_tss_key;      /* pthread_key_t of the thread's state; PYTHON_NO_FIELD: unknown */
        uint32_t interp_threads_head;
        uint32_t tstate_next;
        uint32_t tstate_native_thread_id;
        uint32_t tstate_cframe;        /* 3.11, 3.12: PyThreadState.cframe */
        uint32_t current_frame;        /* in _PyCFrame (3.11, 3.12) or PyThreadState (3.13) */

        /* _PyInterpreterFrame */
        uint32_t frame_code;           /* f_code (3.11, 3.12), f_executable (3.13) */
        uint32_t frame_previous;
        uint32_t frame_instr;          /* prev_instr (3.11, 3.12), instr_ptr (3.13) */
        uint32_t frame_owner;          /* char */
        uint32_t frame_is_entry;       /* bool, 3.11 only */
        uint32_t frame_size;           /* bytes a walker reads to see all of the above */
        uint8_t owner_cstack;          /* 3.12+: owner of the C stack's entry shim; 0xff: none */

        /* PyCodeObject */
        uint32_t code_firstlineno;     /* int */
        uint32_t code_filename;
        uint32_t code_name;
        uint32_t code_qualname;
        uint32_t code_linetable;       /* a bytes object */
        uint32_t code_adaptive;        /* co_code_adaptive: the first code unit */

        /* Objects */
        uint32_t object_type;          /* ob_type */
        uint32_t bytes_size;           /* ob_size (Py_ssize_t) */
        uint32_t bytes_data;           /* ob_sval */
        uint32_t unicode_length;       /* code points (Py_ssize_t) */
        uint32_t unicode_state;        /* the state bit field (uint32) */
        uint32_t unicode_ascii_data;   /* sizeof(PyASCIIObject): a compact ASCII string's bytes */
        uint32_t unicode_compact_data; /* sizeof(PyCompactUnicodeObject): other compact strings */
};

/* What a frame on the chain is to the walker of one C-level eval call. */
enum python_frame_role {
        PYTHON_FRAME_CODE,             /* a Python frame; go on to frame_previous */
        PYTHON_FRAME_ENTRY,            /* a Python frame, the last of this C call (3.11's is_entry) */
        PYTHON_FRAME_SHIM,             /* no Python frame: the C stack's entry (3.12+); stop */
};

/* The layout of the interpreter whose Py_Version is `version`. 3.11 and 3.12
 * come from tables; from 3.13 on, `runtime_head` must hold the first
 * `runtime_head_size` bytes of _PyRuntime (its _Py_DebugOffsets, from the
 * file's .data or the process). Returns 0; -EPROTONOSUPPORT for a version
 * with neither a table nor a self-description profd understands (before
 * 3.11, 3.14 on); -ENODATA when 3.13+ and too few bytes were given;
 * -EBADMSG when those bytes are not a sane description of this version. */
int python_layout_get(uint32_t version, const void *runtime_head, size_t runtime_head_size,
                      struct python_layout *ret);

/* Bytes of _PyRuntime that python_layout_get needs for `version` (0 when a
 * table is enough). */
size_t python_layout_runtime_head_size(uint32_t version);

/* Its role, from a frame's first layout->frame_size bytes. */
enum python_frame_role python_layout_frame_role(const struct python_layout *layout, const uint8_t *frame);

/* The instruction offset, in code units, of a frame whose code object is at
 * `code` and whose instruction pointer is `instr`. -ERANGE when the pointer
 * is not after the code object's header (a frame being set up, or garbage),
 * or too far to be an offset in a code object. */
int python_layout_instr_offset(const struct python_layout *layout, uint64_t code, uint64_t instr,
                               uint32_t *ret_offset);
