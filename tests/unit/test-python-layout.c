/* The layout tables against CPython's own headers (offsetof, when the
 * build found them: -DLAYOUT_HEADERS), the 3.13 _Py_DebugOffsets reader
 * against synthetic bytes, and the frame roles and instruction offsets. */
#ifdef LAYOUT_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif
#include <errno.h>
#include <stddef.h>

#include "python-layout.h"
#include "tests.h"

#ifdef LAYOUT_HEADERS
/* The table of the headers' minor version, field by field. */
static void test_table_matches_headers(void) {
        struct python_layout l;

        CHECK_INT_EQ(python_layout_get(PY_VERSION_HEX, NULL, 0, &l), 0);
        CHECK_INT_EQ(l.version, PY_VERSION_HEX & 0xffff0000);
        CHECK_INT_EQ(l.runtime_interpreters_head, offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030C0000
        CHECK_INT_EQ(l.runtime_tss_key, offsetof(_PyRuntimeState, gilstate.autoTSSkey._key));
#else
        CHECK_INT_EQ(l.runtime_tss_key, offsetof(_PyRuntimeState, autoTSSkey._key));
#endif
        CHECK_INT_EQ(l.interp_threads_head, offsetof(PyInterpreterState, threads.head));
        CHECK_INT_EQ(l.tstate_next, offsetof(PyThreadState, next));
        CHECK_INT_EQ(l.tstate_native_thread_id, offsetof(PyThreadState, native_thread_id));
        CHECK_INT_EQ(l.tstate_cframe, offsetof(PyThreadState, cframe));
        CHECK_INT_EQ(l.current_frame, offsetof(_PyCFrame, current_frame));
        CHECK_INT_EQ(l.frame_code, offsetof(_PyInterpreterFrame, f_code));
        CHECK_INT_EQ(l.frame_previous, offsetof(_PyInterpreterFrame, previous));
        CHECK_INT_EQ(l.frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
        CHECK_INT_EQ(l.frame_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
        CHECK_INT_EQ(l.frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
        CHECK_INT_EQ(l.owner_cstack, 0xff);
#else
        CHECK_INT_EQ(l.frame_is_entry, PYTHON_NO_FIELD);
        CHECK_INT_EQ(l.owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
        CHECK(l.frame_size >= l.frame_owner + 1);
        CHECK(l.frame_size <= offsetof(_PyInterpreterFrame, localsplus));
        CHECK_INT_EQ(l.code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
        CHECK_INT_EQ(l.code_filename, offsetof(PyCodeObject, co_filename));
        CHECK_INT_EQ(l.code_name, offsetof(PyCodeObject, co_name));
        CHECK_INT_EQ(l.code_qualname, offsetof(PyCodeObject, co_qualname));
        CHECK_INT_EQ(l.code_linetable, offsetof(PyCodeObject, co_linetable));
        CHECK_INT_EQ(l.code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
        CHECK_INT_EQ(l.object_type, offsetof(PyObject, ob_type));
        CHECK_INT_EQ(l.bytes_size, offsetof(PyVarObject, ob_size));
        CHECK_INT_EQ(l.bytes_data, offsetof(PyBytesObject, ob_sval));
        CHECK_INT_EQ(l.unicode_length, offsetof(PyASCIIObject, length));
        CHECK_INT_EQ(l.unicode_state, offsetof(PyASCIIObject, state));
        CHECK_INT_EQ(l.unicode_ascii_data, sizeof(PyASCIIObject));
        CHECK_INT_EQ(l.unicode_compact_data, sizeof(PyCompactUnicodeObject));
        CHECK_INT_EQ(sizeof(_Py_CODEUNIT), 2);
}
#endif

/* A 3.13 _Py_DebugOffsets, word by word, little-endian: the offsets a
 * walker uses are 3.13.0's (the headers' offsetof); the others only need
 * to be sane. test-python-discover reads the real one from a 3.13 file. */
static void put(uint8_t *b, size_t word, uint64_t v) {
        for (int i = 0; i < 8; i++)
                b[word * 8 + i] = (uint8_t) (v >> (8 * i));
}

static void debug_offsets_313(uint8_t *b) {
        static const uint64_t words[] = {
                0, 0x030d00f0, 0,                                       /* cookie, version, free_threaded */
                2600, 40, 632,                                          /* runtime_state */
                101000, 0, 8, 7344, 9000, 9100, 9200, 9300, 9400, 9500, 0, 9600, 9608, /* interpreter_state */
                344, 0, 8, 16, 72, 136, 160, 168, 24,                   /* thread_state */
                80, 8, 0, 56, 72, 70,                                   /* interpreter_frame */
                208, 112, 120, 128, 136, 68, 52, 96, 104, 200,          /* code_object */
                16, 8,                                                  /* pyobject */
                416, 24, 88, 168,                                       /* type_object */
                32, 24, 16,                                             /* tuple */
                40, 24, 16,                                             /* list */
                48, 32, 40,                                             /* dict */
                24, 16,                                                 /* float */
                32, 16, 24,                                             /* long */
                40, 16, 32,                                             /* bytes */
                72, 32, 16, 40,                                         /* unicode */
                700, 8,                                                 /* gc */
        };

        _Static_assert(sizeof words == 584, "73 words");
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                put(b, i, words[i]);
        memcpy(b, "xdebugpy", 8);
}

static void test_debug_offsets(void) {
        uint8_t b[584];
        struct python_layout l;

        CHECK_INT_EQ(python_layout_runtime_head_size(0x030d00f0), sizeof b);
        debug_offsets_313(b);
        CHECK_INT_EQ(python_layout_get(0x030d03f0, b, sizeof b, &l), 0);
        CHECK_INT_EQ(l.version, 0x030d0000);
        CHECK_INT_EQ(l.runtime_interpreters_head, 632);
        CHECK_INT_EQ(l.runtime_tss_key, PYTHON_NO_FIELD);
        CHECK_INT_EQ(l.interp_threads_head, 7344);
        CHECK_INT_EQ(l.tstate_next, 8);
        CHECK_INT_EQ(l.tstate_native_thread_id, 160);
        CHECK_INT_EQ(l.tstate_cframe, PYTHON_NO_FIELD);
        CHECK_INT_EQ(l.current_frame, 72);
        CHECK_INT_EQ(l.frame_code, 0);
        CHECK_INT_EQ(l.frame_previous, 8);
        CHECK_INT_EQ(l.frame_instr, 56);
        CHECK_INT_EQ(l.frame_owner, 70);
        CHECK_INT_EQ(l.frame_is_entry, PYTHON_NO_FIELD);
        CHECK_INT_EQ(l.frame_size, 71);
        CHECK_INT_EQ(l.owner_cstack, 3);
        CHECK_INT_EQ(l.code_firstlineno, 68);
        CHECK_INT_EQ(l.code_filename, 112);
        CHECK_INT_EQ(l.code_name, 120);
        CHECK_INT_EQ(l.code_qualname, 128);
        CHECK_INT_EQ(l.code_linetable, 136);
        CHECK_INT_EQ(l.code_adaptive, 200);
        CHECK_INT_EQ(l.object_type, 8);
        CHECK_INT_EQ(l.bytes_size, 16);
        CHECK_INT_EQ(l.bytes_data, 32);
        CHECK_INT_EQ(l.unicode_length, 16);
        CHECK_INT_EQ(l.unicode_state, 32);
        CHECK_INT_EQ(l.unicode_ascii_data, 40);
        CHECK_INT_EQ(l.unicode_compact_data, 56);

        /* Too few bytes, or none. */
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b - 1, &l), -ENODATA);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, NULL, 0, &l), -ENODATA);
        /* Another minor version's description, or none at all. */
        CHECK_INT_EQ(python_layout_get(0x030e00f0, b, sizeof b, &l), -EPROTONOSUPPORT);
        put(b, 1, 0x030c0000);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EBADMSG);
        debug_offsets_313(b);
        b[0] = 'X';
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EBADMSG);
        /* A free-threaded build. */
        debug_offsets_313(b);
        put(b, 2, 1);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EPROTONOSUPPORT);
        /* An offset past its structure's size (qualname in a 100-byte code
         * object), and a size of zero. */
        debug_offsets_313(b);
        put(b, 34, 100);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EBADMSG);
        debug_offsets_313(b);
        put(b, 3, 0);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EBADMSG);
        /* An offset so large that offset + width wraps. */
        debug_offsets_313(b);
        put(b, 35, UINT64_MAX - 2);
        CHECK_INT_EQ(python_layout_get(0x030d00f0, b, sizeof b, &l), -EBADMSG);
}

static void test_unsupported(void) {
        struct python_layout l;

        CHECK_INT_EQ(python_layout_get(0x030a0df0, NULL, 0, &l), -EPROTONOSUPPORT);
        CHECK_INT_EQ(python_layout_get(0x020712f0, NULL, 0, &l), -EPROTONOSUPPORT);
        CHECK_INT_EQ(python_layout_get(0x030e00f0, NULL, 0, &l), -EPROTONOSUPPORT);
        CHECK_INT_EQ(python_layout_get(0x030b02f0, NULL, 0, &l), 0);
        CHECK_INT_EQ(python_layout_get(0x030c01f0, NULL, 0, &l), 0);
}

static void test_frame_roles(void) {
        struct python_layout l311, l312;
        uint8_t frame[128] = {};

        CHECK_INT_EQ(python_layout_get(0x030b0000, NULL, 0, &l311), 0);
        CHECK_INT_EQ(python_layout_get(0x030c0000, NULL, 0, &l312), 0);
        CHECK_INT_EQ(python_layout_frame_role(&l311, frame), PYTHON_FRAME_CODE);
        frame[l311.frame_is_entry] = 1;
        CHECK_INT_EQ(python_layout_frame_role(&l311, frame), PYTHON_FRAME_ENTRY);
        memset(frame, 0, sizeof frame);
        CHECK_INT_EQ(python_layout_frame_role(&l312, frame), PYTHON_FRAME_CODE);
        frame[l312.frame_owner] = 2;   /* owned by a frame object: still Python */
        CHECK_INT_EQ(python_layout_frame_role(&l312, frame), PYTHON_FRAME_CODE);
        frame[l312.frame_owner] = 3;
        CHECK_INT_EQ(python_layout_frame_role(&l312, frame), PYTHON_FRAME_SHIM);
}

static void test_instr_offset(void) {
        struct python_layout l;
        uint32_t off = 99;

        CHECK_INT_EQ(python_layout_get(0x030b0000, NULL, 0, &l), 0);
        CHECK_INT_EQ(python_layout_instr_offset(&l, 0x1000, 0x1000 + 184, &off), 0);
        CHECK_INT_EQ(off, 0);
        CHECK_INT_EQ(python_layout_instr_offset(&l, 0x1000, 0x1000 + 184 + 2 * 37, &off), 0);
        CHECK_INT_EQ(off, 37);
        /* Before the first code unit (a frame being set up), odd, wrapping. */
        CHECK_INT_EQ(python_layout_instr_offset(&l, 0x1000, 0x1000 + 182, &off), -ERANGE);
        CHECK_INT_EQ(python_layout_instr_offset(&l, 0x1000, 0x1000 + 185, &off), -ERANGE);
        CHECK_INT_EQ(python_layout_instr_offset(&l, UINT64_MAX - 8, 0x10, &off), -ERANGE);
        CHECK_INT_EQ(python_layout_instr_offset(&l, 0x1000, UINT64_MAX - 1, &off), -ERANGE);
}

int main(void) {
#ifdef LAYOUT_HEADERS
        test_table_matches_headers();
#endif
        test_debug_offsets();
        test_unsupported();
        test_frame_roles();
        test_instr_offset();
        TESTS_DONE();
}
