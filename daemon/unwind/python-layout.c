/* CPython layouts: the 3.11 and 3.12 tables, and the reader of 3.13's _Py_DebugOffsets. */
#include "python-layout.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"

/* Sources of the figures (64-bit, default build with the GIL):
 * - 3.11: Debian 12's python3.11-dev 3.11.2 headers (Include/internal
 *   pycore_frame.h, pycore_runtime.h, pycore_interp.h, cpython/code.h,
 *   cpython/pystate.h, cpython/unicodeobject.h), checked with offsetof by
 *   tests/unit/test-python-layout.c against whichever 3.11 headers are
 *   installed; the same figures runtimes.md quotes from OTel and Strobelight.
 * - 3.12: CPython v3.12.0 headers as py-spy's generated bindings
 *   (src/python_bindings/v3_12_0.rs) list the members, laid out by the LP64
 *   rules, and checked with offsetof against pyenv's 3.12.1 headers by the
 *   same test when they are installed.
 * Every field here keeps its offset through a minor version's patch
 * releases: CPython freezes these structures' ABI after the first beta. */
static const struct python_layout layout_311 = {
        .version = PYTHON_VERSION(3, 11),
        .runtime_interpreters_head = 40,
        .runtime_tss_key = 596,            /* gilstate.autoTSSkey (592) + Py_tss_t._key */
        .interp_threads_head = 16,
        .tstate_next = 8,
        .tstate_native_thread_id = 160,
        .tstate_cframe = 56,
        .current_frame = 8,                /* after _PyCFrame.use_tracing */
        .frame_code = 32,
        .frame_previous = 48,
        .frame_instr = 56,
        .frame_owner = 69,
        .frame_is_entry = 68,
        .frame_size = 72,
        .owner_cstack = 0xff,
        .code_firstlineno = 72,
        .code_filename = 112,
        .code_name = 120,
        .code_qualname = 128,
        .code_linetable = 136,
        .code_adaptive = 184,
        .object_type = 8,
        .bytes_size = 16,
        .bytes_data = 32,
        .unicode_length = 16,
        .unicode_state = 32,
        .unicode_ascii_data = 48,          /* still with the wstr pointer */
        .unicode_compact_data = 72,
};

static const struct python_layout layout_312 = {
        .version = PYTHON_VERSION(3, 12),
        .runtime_interpreters_head = 40,
        .runtime_tss_key = 1548,           /* autoTSSkey (1544) + Py_tss_t._key */
        .interp_threads_head = 72,
        .tstate_next = 8,
        .tstate_native_thread_id = 144,
        .tstate_cframe = 56,
        .current_frame = 0,                /* use_tracing is gone */
        .frame_code = 0,
        .frame_previous = 8,
        .frame_instr = 56,
        .frame_owner = 70,
        .frame_is_entry = PYTHON_NO_FIELD, /* replaced by an entry frame owned by the C stack */
        .frame_size = 72,
        .owner_cstack = 3,                 /* FRAME_OWNED_BY_CSTACK */
        .code_firstlineno = 68,
        .code_filename = 112,
        .code_name = 120,
        .code_qualname = 128,
        .code_linetable = 136,
        .code_adaptive = 192,
        .object_type = 8,
        .bytes_size = 16,
        .bytes_data = 32,
        .unicode_length = 16,
        .unicode_state = 32,
        .unicode_ascii_data = 40,          /* wstr removed (PEP 623) */
        .unicode_compact_data = 56,
};

/* 3.13.0's _Py_DebugOffsets (Include/internal/pycore_runtime.h, as py-spy's
 * bindings for v3.13.0 list it): every member a uint64_t, each group
 * opening with the size of the structure it describes. Only the shape
 * matters here: the numbers are read from the interpreter. 3.14 inserted
 * members into several groups, so it needs a shape of its own. */
struct debug_offsets_313 {
        char cookie[8];
        uint64_t version, free_threaded;
        struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
        struct {
                uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
                        ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
                        gil_runtime_state_locked, gil_runtime_state_holder;
        } interpreter_state;
        struct {
                uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
                        datastack_chunk, status;
        } thread_state;
        struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
        struct {
                uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
                        localsplusnames, localspluskinds, co_code_adaptive;
        } code_object;
        struct { uint64_t size, ob_type; } pyobject;
        struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
        struct { uint64_t size, ob_item, ob_size; } tuple_object;
        struct { uint64_t size, ob_item, ob_size; } list_object;
        struct { uint64_t size, ma_keys, ma_values; } dict_object;
        struct { uint64_t size, ob_fval; } float_object;
        struct { uint64_t size, lv_tag, ob_digit; } long_object;
        struct { uint64_t size, ob_size, ob_sval; } bytes_object;
        struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
        struct { uint64_t size, collecting; } gc;
};
_Static_assert(sizeof(struct debug_offsets_313) == 584, "3.13's _Py_DebugOffsets is 73 words");

/* Bounds on what a sane description says: no structure a walker reads is
 * near 1 MiB (PyInterpreterState, the largest, is ~100 KiB in 3.13). */
#define DEBUG_STRUCT_MAX (UINT64_C(1) << 20)

struct debug_reader {
        const uint8_t *bytes;
        bool bad;
};

static uint64_t debug_word(const struct debug_reader *r, size_t at) {
        uint64_t v;

        memcpy(&v, r->bytes + at, sizeof v);
        return le64toh(v);
}

/* The offset at `at` of a field `width` bytes wide, checked against the
 * size of its structure (the word at `size_at`). */
static uint32_t debug_field(struct debug_reader *r, size_t size_at, size_t at, unsigned width) {
        uint64_t size = debug_word(r, size_at), off = debug_word(r, at);

        if (size == 0 || size > DEBUG_STRUCT_MAX || off > size || width > size - off) {
                r->bad = true;
                return 0;
        }
        return (uint32_t) off;
}

#define DBG(group, member, width) \
        debug_field(&r, offsetof(struct debug_offsets_313, group.size), \
                    offsetof(struct debug_offsets_313, group.member), width)

static int layout_from_debug_offsets_313(uint32_t version, const uint8_t *bytes, struct python_layout *ret) {
        struct debug_reader r = { .bytes = bytes };
        struct python_layout l = { .version = PYTHON_MINOR(version) };
        uint64_t described = debug_word(&r, offsetof(struct debug_offsets_313, version));

        if (memcmp(bytes, "xdebugpy", 8) != 0)
                return -EBADMSG;
        /* The description must be of this very minor version: the shape of
         * the structure itself changes between minor versions. */
        if (PYTHON_MINOR(described) != PYTHON_MINOR(version))
                return -EBADMSG;
        /* A free-threaded build lays out objects and frames otherwise (biased
         * reference counts, tagged stack references). */
        if (debug_word(&r, offsetof(struct debug_offsets_313, free_threaded)) != 0)
                return -EPROTONOSUPPORT;

        l.runtime_interpreters_head = DBG(runtime_state, interpreters_head, 8);
        l.runtime_tss_key = PYTHON_NO_FIELD;   /* not described: the walker finds threads otherwise */
        l.interp_threads_head = DBG(interpreter_state, threads_head, 8);
        l.tstate_next = DBG(thread_state, next, 8);
        l.tstate_native_thread_id = DBG(thread_state, native_thread_id, 8);
        l.tstate_cframe = PYTHON_NO_FIELD;
        l.current_frame = DBG(thread_state, current_frame, 8);
        l.frame_code = DBG(interpreter_frame, executable, 8);
        l.frame_previous = DBG(interpreter_frame, previous, 8);
        l.frame_instr = DBG(interpreter_frame, instr_ptr, 8);
        l.frame_owner = DBG(interpreter_frame, owner, 1);
        l.frame_is_entry = PYTHON_NO_FIELD;
        l.owner_cstack = 3;                    /* FRAME_OWNED_BY_CSTACK, as in 3.12 */
        l.code_firstlineno = DBG(code_object, firstlineno, 4);
        l.code_filename = DBG(code_object, filename, 8);
        l.code_name = DBG(code_object, name, 8);
        l.code_qualname = DBG(code_object, qualname, 8);
        l.code_linetable = DBG(code_object, linetable, 8);
        /* The code units follow the header: its size is the offset. */
        l.code_adaptive = DBG(code_object, co_code_adaptive, 0);
        l.object_type = DBG(pyobject, ob_type, 8);
        l.bytes_size = DBG(bytes_object, ob_size, 8);
        l.bytes_data = DBG(bytes_object, ob_sval, 0);
        l.unicode_length = DBG(unicode_object, length, 8);
        l.unicode_state = DBG(unicode_object, state, 4);
        l.unicode_ascii_data = DBG(unicode_object, asciiobject_size, 0);
        if (r.bad)
                return -EBADMSG;
        /* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject
         * (3.12 on); 3.13 does not describe it. */
        l.unicode_compact_data = l.unicode_ascii_data + 16;
        l.frame_size = MAX(MAX(l.frame_code, l.frame_previous), l.frame_instr) + 8;
        l.frame_size = MAX(l.frame_size, l.frame_owner + 1);
        *ret = l;
        return 0;
}

size_t python_layout_runtime_head_size(uint32_t version) {
        return PYTHON_MINOR(version) == PYTHON_VERSION(3, 13) ? sizeof(struct debug_offsets_313) : 0;
}

int python_layout_get(uint32_t version, const void *runtime_head, size_t runtime_head_size,
                      struct python_layout *ret) {
        switch (PYTHON_MINOR(version)) {
        case PYTHON_VERSION(3, 11):
                *ret = layout_311;
                return 0;
        case PYTHON_VERSION(3, 12):
                *ret = layout_312;
                return 0;
        case PYTHON_VERSION(3, 13):
                if (!runtime_head || runtime_head_size < sizeof(struct debug_offsets_313))
                        return -ENODATA;
                return layout_from_debug_offsets_313(version, runtime_head, ret);
        default:
                return -EPROTONOSUPPORT;
        }
}

enum python_frame_role python_layout_frame_role(const struct python_layout *layout, const uint8_t *frame) {
        if (layout->frame_is_entry != PYTHON_NO_FIELD)
                return frame[layout->frame_is_entry] ? PYTHON_FRAME_ENTRY : PYTHON_FRAME_CODE;
        if (layout->owner_cstack != 0xff && frame[layout->frame_owner] == layout->owner_cstack)
                return PYTHON_FRAME_SHIM;
        return PYTHON_FRAME_CODE;
}

/* No code object holds 2^30 code units: CPython's own jump arguments and
 * line tables stop far below. */
#define INSTR_OFFSET_MAX (UINT32_C(1) << 30)

int python_layout_instr_offset(const struct python_layout *layout, uint64_t code, uint64_t instr,
                               uint32_t *ret_offset) {
        uint64_t first = code + layout->code_adaptive, units;

        if (first < code || instr < first || (instr - first) % 2 != 0)
                return -ERANGE;
        units = (instr - first) / 2;
        if (units >= INSTR_OFFSET_MAX)
                return -ERANGE;
        *ret_offset = (uint32_t) units;
        return 0;
}
