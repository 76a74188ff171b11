/* Reads a HotSpot JVM's self-description (gHotSpotVMStructs and friends) into what a frame walker needs. */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads `size` bytes at `addr` of the process (in the daemon,
 * /proc/PID/mem): 0 when all were read, a negative errno otherwise. */
typedef int (*hotspot_read_fn)(void *userdata, uint64_t addr, void *buf, size_t size);

/* The symbols libjvm.so exports for its serviceability agent. The four
 * tables are pointers to arrays; the others are uint64_t variables the
 * JVM's static initialisers fill (they are .bss in the file, so they are
 * read from the process), saying where each entry's fields are. */
enum hotspot_symbol {
        HOTSPOT_SYM_STRUCTS,
        HOTSPOT_SYM_STRUCT_TYPE_NAME,
        HOTSPOT_SYM_STRUCT_FIELD_NAME,
        HOTSPOT_SYM_STRUCT_TYPE_STRING, /* the field's C++ type: not read, named for tools */
        HOTSPOT_SYM_STRUCT_IS_STATIC,
        HOTSPOT_SYM_STRUCT_OFFSET,
        HOTSPOT_SYM_STRUCT_ADDRESS,
        HOTSPOT_SYM_STRUCT_STRIDE,
        HOTSPOT_SYM_TYPES,
        HOTSPOT_SYM_TYPE_TYPE_NAME,
        HOTSPOT_SYM_TYPE_SUPERCLASS_NAME,
        HOTSPOT_SYM_TYPE_SIZE,
        HOTSPOT_SYM_TYPE_STRIDE,
        HOTSPOT_SYM_INT_CONSTANTS,
        HOTSPOT_SYM_INT_NAME,
        HOTSPOT_SYM_INT_VALUE,
        HOTSPOT_SYM_INT_STRIDE,
        HOTSPOT_SYM_LONG_CONSTANTS,
        HOTSPOT_SYM_LONG_NAME,
        HOTSPOT_SYM_LONG_VALUE,
        HOTSPOT_SYM_LONG_STRIDE,
        _HOTSPOT_SYM_MAX,
};

/* "gHotSpotVMStructs", ...: the symbol's name in libjvm.so's .dynsym. */
const char *hotspot_symbol_name(enum hotspot_symbol sym);

/* The file addresses (before the load bias) of every symbol in `elf`'s
 * .dynsym. Returns 0; -ENOENT when the file exports none of them (not a
 * JVM, or one built without the serviceability tables), -EPROTONOSUPPORT
 * when only some (*ret_missing names the first absent) or the file is not
 * 64-bit little-endian; -EBADMSG on an unreadable symbol table. */
int hotspot_symbols_elf(Elf *elf, uint64_t ret[_HOTSPOT_SYM_MAX], const char **ret_missing);

/* Why a JVM's tables could not be read: one counter each in the quality
 * report. */
enum hotspot_vmstructs_reason {
        HOTSPOT_VMSTRUCTS_OK,
        HOTSPOT_VMSTRUCTS_READ_LAYOUT,     /* a table pointer or an entry-layout variable could not be read */
        HOTSPOT_VMSTRUCTS_BAD_LAYOUT,      /* a stride of 0 or too large, a field outside its entry, a NULL table */
        HOTSPOT_VMSTRUCTS_READ_ENTRY,      /* an entry's memory could not be read */
        HOTSPOT_VMSTRUCTS_NO_END,          /* no terminating entry within HOTSPOT_VMSTRUCTS_ENTRIES_MAX */
        HOTSPOT_VMSTRUCTS_READ_STRING,     /* a name's memory could not be read */
        HOTSPOT_VMSTRUCTS_BAD_STRING,      /* a name without a NUL within HOTSPOT_VMSTRUCTS_NAME_MAX, or not printable */
        HOTSPOT_VMSTRUCTS_MISSING,         /* a field the walker needs is not described (*ret_what names it) */
        HOTSPOT_VMSTRUCTS_BAD_VALUE,       /* a described offset or size makes no sense (*ret_what) */
        HOTSPOT_VMSTRUCTS_READ_VALUE,      /* a static variable the tables point at could not be read (*ret_what) */
        _HOTSPOT_VMSTRUCTS_REASON_MAX,
};

/* "read-layout", "bad-layout", ...: the names the quality report uses. */
const char *hotspot_vmstructs_reason_name(enum hotspot_vmstructs_reason reason);

/* Entries read per table, at most: JDK 17's largest has 788 (structs);
 * 1 << 14 leaves room for later JDKs and still bounds a walk over garbage
 * to a few milliseconds. */
#define HOTSPOT_VMSTRUCTS_ENTRIES_MAX (1u << 14)
/* Bytes of an entry, at most: JDK 17's are 48 (structs), 40 (types), 16
 * (constants); any layout over 256 is not one of these. */
#define HOTSPOT_VMSTRUCTS_STRIDE_MAX 256u
/* Bytes of a type, field or constant name, NUL included: the longest in
 * JDK 17 has 62 characters (a vmClasses field). */
#define HOTSPOT_VMSTRUCTS_NAME_MAX 128u
/* Code heaps kept: JDK 17 has 3 (non-nmethods, profiled, non-profiled)
 * with a segmented code cache, 1 without. */
#define HOTSPOT_CODE_HEAPS_MAX 8u
/* A struct or field offset above this is garbage: the largest HotSpot
 * type a walker reads (InstanceKlass) is under 500 bytes. */
#define HOTSPOT_VMSTRUCTS_OFFSET_MAX (64u * 1024u)

/* An offset the tables do not describe (a field of another JDK). */
#define HOTSPOT_NO_FIELD UINT32_MAX
/* An interpreter frame slot the int constants do not describe. */
#define HOTSPOT_NO_SLOT INT32_MIN

/* One code heap, as CodeCache::_heaps holds it: its reserved range and the
 * segment map that leads from any address in it to the start of its blob. */
struct hotspot_code_heap {
        uint64_t low, high;            /* VirtualSpace _low_boundary, _high_boundary of _memory */
        uint64_t segmap_low;           /* the segment map's first byte (_segmap._low_boundary) */
};

/* Byte offsets in the JVM's objects and the values of its statics, all
 * from the process's own tables. Offsets the tables do not describe are
 * HOTSPOT_NO_FIELD. */
struct hotspot_vmstructs {
        /* Abstract_VM_Version (0 when not described) */
        int32_t version_major, version_minor, version_security, version_build;

        /* CodeCache statics: the bounds of every code heap together, the heaps */
        uint64_t code_low, code_high;
        struct hotspot_code_heap heaps[HOTSPOT_CODE_HEAPS_MAX];
        uint32_t n_heaps;
        uint32_t code_heap_memory, code_heap_segmap, code_heap_log2_segment_size;
        uint32_t virtual_space_low_boundary, virtual_space_high_boundary;
        uint32_t heap_block_size;      /* sizeof(HeapBlock): a blob starts this far into its block */
        uint32_t log2_segment_size;    /* of the first heap, as read */

        /* StubRoutines::_call_stub_return_address: where Java frames return to C++ (0: not described) */
        uint64_t call_stub_return_address;

        /* CodeBlob */
        uint32_t blob_size;            /* sizeof(CodeBlob) */
        uint32_t blob_name;            /* const char * */
        uint32_t blob_frame_size;      /* int, in words */
        uint32_t blob_frame_complete_offset;
        uint32_t blob_code_begin, blob_code_end;       /* address (JDK 9 to 22) */
        uint32_t blob_code_offset, blob_data_offset;   /* int, from the blob (JDK 8, JDK 23+) */

        /* nmethod, with the fields of its superclasses (CompiledMethod in JDK 17) */
        uint32_t nmethod_size;
        uint32_t nmethod_method;       /* Method * */
        uint32_t nmethod_compile_id, nmethod_comp_level;
        uint32_t nmethod_orig_pc_offset;
        uint32_t nmethod_metadata_offset, nmethod_scopes_pcs_offset, nmethod_dependencies_offset;
        uint32_t nmethod_scopes_data_begin;    /* address (JDK 9 to 22) */
        uint32_t nmethod_scopes_data_offset;   /* int (JDK 8, JDK 23+) */
        uint32_t nmethod_deopt_handler_begin;

        /* PcDesc: one per safepoint of compiled code, scopes_pcs_offset to dependencies_offset */
        uint32_t pc_desc_size, pc_desc_pc_offset, pc_desc_scope_decode_offset;

        /* Method, ConstMethod, ConstantPool, Klass, Symbol */
        uint32_t method_const_method;
        uint32_t const_method_size;    /* the bytecodes follow the ConstMethod */
        uint32_t const_method_constants, const_method_flags, const_method_code_size;
        uint32_t const_method_name_index, const_method_signature_index;
        int32_t const_method_has_linenumber_table;     /* flag bit in _flags; HOTSPOT_NO_SLOT when not described */
        uint32_t constant_pool_size;   /* the pool's slots follow the ConstantPool */
        uint32_t constant_pool_holder, constant_pool_source_file_name_index;
        uint32_t constant_pool_length; /* int: slots in the pool, index 0 unused */
        uint32_t constant_pool_tags;   /* Array<u1> *: one JVM_CONSTANT_* tag per slot */
        uint32_t array_length;         /* Array<T>'s int _length (described as Array<int>'s) */
        uint32_t array_u1_data;        /* Array<u1>'s first element */
        uint32_t instance_klass_constants;     /* ConstantPool *: the holder's pool, back from its methods' */
        uint32_t klass_name;
        uint32_t symbol_length;        /* u2 _length; or, where there is none, _length_and_refcount */
        uint32_t symbol_length_and_refcount;   /* u4, the length in its high 16 bits (JDK 11);
                                                * HOTSPOT_NO_FIELD where _length is its own field (JDK 8, 17) */
        uint32_t symbol_body;

        /* frame::interpreter_frame_*_offset, in words from the frame pointer
         * (HOTSPOT_NO_SLOT when not exported: JDK 17 on x86_64 exports only
         * sender_sp and last_sp) */
        int32_t interp_sender_sp, interp_last_sp, interp_method, interp_mirror, interp_mdp,
                interp_cache, interp_locals, interp_bcp, interp_initial_sp;
};

/* Reads the tables of the JVM whose symbols are at `symbols` (process
 * addresses: the file's plus the load bias) through `read`. Returns 0 with
 * *ret filled; -EIO when memory could not be read, -EBADMSG when what was
 * read is not a sane description, -EPROTONOSUPPORT when it lacks a field
 * the walker needs; *ret_reason says which and *ret_what, when not NULL,
 * names the field or the table (a static string). -ENOMEM is not the
 * process's doing (*ret_reason HOTSPOT_VMSTRUCTS_OK). */
int hotspot_vmstructs_read(const uint64_t symbols[_HOTSPOT_SYM_MAX], hotspot_read_fn read, void *userdata,
                           struct hotspot_vmstructs *ret, enum hotspot_vmstructs_reason *ret_reason,
                           const char **ret_what);

/* Whether `addr` is in one of the code heaps read. */
bool hotspot_vmstructs_in_code(const struct hotspot_vmstructs *vs, uint64_t addr);
