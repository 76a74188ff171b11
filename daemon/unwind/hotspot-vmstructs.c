/* The HotSpot VM-structs reader: bounded walks of a JVM's untrusted self-description tables. */
#include "hotspot-vmstructs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytecursor.h"
#include "macro.h"
#include "runtime-elf.h"

static const char *const symbol_names[_HOTSPOT_SYM_MAX] = {
        [HOTSPOT_SYM_STRUCTS] = "gHotSpotVMStructs",
        [HOTSPOT_SYM_STRUCT_TYPE_NAME] = "gHotSpotVMStructEntryTypeNameOffset",
        [HOTSPOT_SYM_STRUCT_FIELD_NAME] = "gHotSpotVMStructEntryFieldNameOffset",
        [HOTSPOT_SYM_STRUCT_TYPE_STRING] = "gHotSpotVMStructEntryTypeStringOffset",
        [HOTSPOT_SYM_STRUCT_IS_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
        [HOTSPOT_SYM_STRUCT_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
        [HOTSPOT_SYM_STRUCT_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
        [HOTSPOT_SYM_STRUCT_STRIDE] = "gHotSpotVMStructEntryArrayStride",
        [HOTSPOT_SYM_TYPES] = "gHotSpotVMTypes",
        [HOTSPOT_SYM_TYPE_TYPE_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
        [HOTSPOT_SYM_TYPE_SUPERCLASS_NAME] = "gHotSpotVMTypeEntrySuperclassNameOffset",
        [HOTSPOT_SYM_TYPE_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
        [HOTSPOT_SYM_TYPE_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
        [HOTSPOT_SYM_INT_CONSTANTS] = "gHotSpotVMIntConstants",
        [HOTSPOT_SYM_INT_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
        [HOTSPOT_SYM_INT_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
        [HOTSPOT_SYM_INT_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
        [HOTSPOT_SYM_LONG_CONSTANTS] = "gHotSpotVMLongConstants",
        [HOTSPOT_SYM_LONG_NAME] = "gHotSpotVMLongConstantEntryNameOffset",
        [HOTSPOT_SYM_LONG_VALUE] = "gHotSpotVMLongConstantEntryValueOffset",
        [HOTSPOT_SYM_LONG_STRIDE] = "gHotSpotVMLongConstantEntryArrayStride",
};

const char *hotspot_symbol_name(enum hotspot_symbol sym) {
        return (unsigned) sym < _HOTSPOT_SYM_MAX ? symbol_names[sym] : NULL;
}

int hotspot_symbols_elf(Elf *elf, uint64_t ret[_HOTSPOT_SYM_MAX], const char **ret_missing) {
        struct runtime_dynsym_want want[_HOTSPOT_SYM_MAX];
        GElf_Ehdr ehdr;
        int n_found;

        if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
                return -ENOENT;
        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                want[s] = (struct runtime_dynsym_want) { .name = symbol_names[s] };
        /* Every one starts so; most of libjvm's 30,000 symbols do not. */
        n_found = runtime_dynsym_find(elf, "gHotSpotVM", want, _HOTSPOT_SYM_MAX);
        if (n_found == 0 || n_found == -ENOENT)
                return -ENOENT;
        if (n_found < 0)
                return n_found;
        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++) {
                if (!want[s].found) {
                        if (ret_missing)
                                *ret_missing = symbol_names[s];
                        return -EPROTONOSUPPORT;
                }
                ret[s] = want[s].sym.st_value;
        }
        /* The entry layouts are read as 64-bit little-endian words. */
        if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
                if (ret_missing)
                        *ret_missing = NULL;
                return -EPROTONOSUPPORT;
        }
        return 0;
}

const char *hotspot_vmstructs_reason_name(enum hotspot_vmstructs_reason reason) {
        static const char *const names[_HOTSPOT_VMSTRUCTS_REASON_MAX] = {
                [HOTSPOT_VMSTRUCTS_OK] = "ok",
                [HOTSPOT_VMSTRUCTS_READ_LAYOUT] = "read-layout",
                [HOTSPOT_VMSTRUCTS_BAD_LAYOUT] = "bad-layout",
                [HOTSPOT_VMSTRUCTS_READ_ENTRY] = "read-entry",
                [HOTSPOT_VMSTRUCTS_NO_END] = "no-end",
                [HOTSPOT_VMSTRUCTS_READ_STRING] = "read-string",
                [HOTSPOT_VMSTRUCTS_BAD_STRING] = "bad-string",
                [HOTSPOT_VMSTRUCTS_MISSING] = "missing",
                [HOTSPOT_VMSTRUCTS_BAD_VALUE] = "bad-value",
                [HOTSPOT_VMSTRUCTS_READ_VALUE] = "read-value",
        };

        return (unsigned) reason < _HOTSPOT_VMSTRUCTS_REASON_MAX ? names[reason] : "unknown";
}

/* What the tables are read into: the result, and the statics' addresses
 * and GrowableArray's layout, which only lead to values. */
struct reading {
        struct hotspot_vmstructs vs;
        uint64_t code_heaps_addr, code_low_addr, code_high_addr, call_stub_addr;
        uint64_t major_addr, minor_addr, security_addr, build_addr;
        uint32_t array_len, array_data;
};

enum want_kind {
        WANT_FIELD,     /* a non-static field's offset (uint32_t) */
        WANT_STATIC,    /* a static variable's address (uint64_t) */
        WANT_SIZE,      /* a type's size, from the types table (uint32_t) */
        WANT_INT,       /* an int constant (int32_t) */
};

/* Needed by the walker: without it, reading fails with HOTSPOT_VMSTRUCTS_MISSING. */
#define REQ true

struct want {
        enum want_kind kind;
        const char *type;       /* a class; its superclasses' fields count too */
        const char *name;       /* field or constant; NULL for WANT_SIZE */
        size_t dest;            /* offsetof(struct reading, ...) */
        bool required;
};

#define F(t, n, d, req) { WANT_FIELD, t, n, offsetof(struct reading, vs.d), req }
#define S(t, n, d, req) { WANT_STATIC, t, n, offsetof(struct reading, d), req }
#define Z(t, d, req) { WANT_SIZE, t, NULL, offsetof(struct reading, vs.d), req }
#define I(n, d) { WANT_INT, NULL, n, offsetof(struct reading, vs.d), false }

/* Everything read, one row each, by the names HotSpot gives them. A field
 * JDKs named differently has a row per name; the first found is kept.
 * Alternatives where one of two must exist (code begin as an address or an
 * offset) are optional here and checked after. */
static const struct want wants[] = {
        S("Abstract_VM_Version", "_vm_major_version", major_addr, false),
        S("Abstract_VM_Version", "_vm_minor_version", minor_addr, false),
        S("Abstract_VM_Version", "_vm_security_version", security_addr, false),
        S("Abstract_VM_Version", "_vm_build_number", build_addr, false),

        S("CodeCache", "_heaps", code_heaps_addr, REQ),
        S("CodeCache", "_low_bound", code_low_addr, REQ),
        S("CodeCache", "_high_bound", code_high_addr, REQ),
        S("StubRoutines", "_call_stub_return_address", call_stub_addr, false),
        /* GrowableArray<CodeHeap*> is not described; every GrowableArray<T*>
         * has GrowableArray<int>'s layout (a length, then a data pointer). */
        { WANT_FIELD, "GrowableArrayBase", "_len", offsetof(struct reading, array_len), false },
        { WANT_FIELD, "GenericGrowableArray", "_len", offsetof(struct reading, array_len), false },
        { WANT_FIELD, "GrowableArray<int>", "_data", offsetof(struct reading, array_data), REQ },
        F("CodeHeap", "_memory", code_heap_memory, REQ),
        F("CodeHeap", "_segmap", code_heap_segmap, REQ),
        F("CodeHeap", "_log2_segment_size", code_heap_log2_segment_size, REQ),
        F("VirtualSpace", "_low_boundary", virtual_space_low_boundary, REQ),
        F("VirtualSpace", "_high_boundary", virtual_space_high_boundary, REQ),
        Z("HeapBlock", heap_block_size, REQ),

        Z("CodeBlob", blob_size, REQ),
        F("CodeBlob", "_name", blob_name, REQ),
        F("CodeBlob", "_frame_size", blob_frame_size, REQ),
        F("CodeBlob", "_frame_complete_offset", blob_frame_complete_offset, false),
        F("CodeBlob", "_code_begin", blob_code_begin, false),
        F("CodeBlob", "_code_end", blob_code_end, false),
        F("CodeBlob", "_code_offset", blob_code_offset, false),
        F("CodeBlob", "_data_offset", blob_data_offset, false),

        Z("nmethod", nmethod_size, REQ),
        F("nmethod", "_method", nmethod_method, REQ),
        F("nmethod", "_compile_id", nmethod_compile_id, false),
        F("nmethod", "_comp_level", nmethod_comp_level, false),
        F("nmethod", "_orig_pc_offset", nmethod_orig_pc_offset, false),
        F("nmethod", "_metadata_offset", nmethod_metadata_offset, false),
        F("nmethod", "_scopes_pcs_offset", nmethod_scopes_pcs_offset, false),
        F("nmethod", "_dependencies_offset", nmethod_dependencies_offset, false),
        F("nmethod", "_scopes_data_begin", nmethod_scopes_data_begin, false),
        F("nmethod", "_scopes_data_offset", nmethod_scopes_data_offset, false),
        F("nmethod", "_deopt_handler_begin", nmethod_deopt_handler_begin, false),
        Z("PcDesc", pc_desc_size, false),
        F("PcDesc", "_pc_offset", pc_desc_pc_offset, false),
        F("PcDesc", "_scope_decode_offset", pc_desc_scope_decode_offset, false),

        F("Method", "_constMethod", method_const_method, REQ),
        Z("ConstMethod", const_method_size, REQ),
        F("ConstMethod", "_constants", const_method_constants, REQ),
        F("ConstMethod", "_flags", const_method_flags, false),
        F("ConstMethod", "_flags._flags", const_method_flags, false),
        F("ConstMethod", "_code_size", const_method_code_size, REQ),
        F("ConstMethod", "_name_index", const_method_name_index, REQ),
        F("ConstMethod", "_signature_index", const_method_signature_index, REQ),
        I("ConstMethod::_has_linenumber_table", const_method_has_linenumber_table),
        /* JDK 21+: the flags moved to ConstMethodFlags. */
        I("ConstMethodFlags::_misc_has_linenumber_table", const_method_has_linenumber_table),
        Z("ConstantPool", constant_pool_size, REQ),
        F("ConstantPool", "_pool_holder", constant_pool_holder, REQ),
        F("ConstantPool", "_source_file_name_index", constant_pool_source_file_name_index, false),
        /* For the name decoder's checks (hotspot-names.c), not the walker. */
        F("ConstantPool", "_length", constant_pool_length, false),
        F("ConstantPool", "_tags", constant_pool_tags, false),
        F("Array<int>", "_length", array_length, false),
        F("Array<u1>", "_data", array_u1_data, false),
        F("InstanceKlass", "_constants", instance_klass_constants, false),
        F("Klass", "_name", klass_name, REQ),
        F("Symbol", "_length", symbol_length, false),
        F("Symbol", "_length_and_refcount", symbol_length, false),
        /* JDK 11's length is the high half of this u4: kept apart too. */
        F("Symbol", "_length_and_refcount", symbol_length_and_refcount, false),
        F("Symbol", "_body", symbol_body, REQ),

        I("frame::interpreter_frame_sender_sp_offset", interp_sender_sp),
        I("frame::interpreter_frame_last_sp_offset", interp_last_sp),
        I("frame::interpreter_frame_method_offset", interp_method),
        I("frame::interpreter_frame_mirror_offset", interp_mirror),
        I("frame::interpreter_frame_mdp_offset", interp_mdp),
        I("frame::interpreter_frame_cache_offset", interp_cache),
        I("frame::interpreter_frame_locals_offset", interp_locals),
        I("frame::interpreter_frame_bcp_offset", interp_bcp),
        I("frame::interpreter_frame_initial_sp_offset", interp_initial_sp),
};

#undef F
#undef S
#undef Z
#undef I

/* Superclasses followed from a wanted class: JDK 17's deepest chain a
 * walker uses is nmethod → CompiledMethod → CodeBlob; more is a loop. */
#define CHAIN_MAX 8

struct type_entry {
        uint64_t name, super;   /* hashes of the names; super 0: none */
        uint64_t size;
};

/* Where one table's entries are, and where in an entry each field is. */
struct table {
        const char *what;       /* the table's symbol, for *ret_what */
        uint64_t base, stride;
        uint64_t name;          /* type name (structs, types) or constant name */
        uint64_t name2;         /* field name (structs), superclass name (types) */
        uint64_t value;         /* offset (structs), size (types), value (constants) */
        uint64_t address;       /* static address (structs) */
        uint64_t is_static;     /* int32 (structs) */
};

struct reader {
        hotspot_read_fn read;
        void *userdata;
        enum hotspot_vmstructs_reason reason;
        const char *what;
        struct reading *out;
        bool found[ELEMENTSOF(wants)];
        /* per want, the hashes of its class and superclasses (0: none) */
        uint64_t chain[ELEMENTSOF(wants)][CHAIN_MAX];
        /* per want, its class's size from the types table (0: unknown) */
        uint64_t class_size[ELEMENTSOF(wants)];
};

static int fail(struct reader *rd, int r, enum hotspot_vmstructs_reason reason, const char *what) {
        rd->reason = reason;
        rd->what = what;
        return r;
}

/* FNV-1a: the types table's graph is kept as hashes of names, so garbage
 * of any length costs 24 bytes an entry. */
static uint64_t name_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * UINT64_C(0x100000001b3);
        return h ? h : 1;
}

static uint64_t le(const uint8_t *p, size_t n) {
        struct bytecursor c = bytecursor_make(p, n);

        return bytecursor_fixed_le(&c, n);
}

static int read_u64(struct reader *rd, uint64_t addr, uint64_t *ret) {
        uint8_t b[8];

        if (addr == 0 || rd->read(rd->userdata, addr, b, sizeof b) < 0)
                return -EIO;
        *ret = le(b, sizeof b);
        return 0;
}

/* The NUL-terminated name at `addr` into buf (HOTSPOT_VMSTRUCTS_NAME_MAX
 * bytes), read a piece at a time that never crosses a page, so a short
 * name at the end of a mapping reads. */
static int read_name(struct reader *rd, uint64_t addr, char *buf, const char *what) {
        size_t n = 0;

        if (addr == 0)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_STRING, what);
        while (n < HOTSPOT_VMSTRUCTS_NAME_MAX) {
                uint64_t a = addr + n;
                size_t piece = MIN(HOTSPOT_VMSTRUCTS_NAME_MAX - n, 4096 - (a & 4095));
                char *nul;

                if (a < addr)
                        return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_STRING, what);
                if (rd->read(rd->userdata, a, buf + n, piece) < 0)
                        return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_STRING, what);
                nul = memchr(buf + n, '\0', piece);
                if (nul) {
                        for (const char *p = buf; p < nul; p++)
                                if (*p < 0x20 || *p > 0x7e)
                                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_STRING, what);
                        return 0;
                }
                n += piece;
        }
        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_STRING, what);
}

/* Reads the layout variables of one table and checks that its fields, of
 * the widths given (0: the field is not used), lie in an entry. */
static int table_layout(struct reader *rd, const uint64_t *symbols, enum hotspot_symbol base,
                        const enum hotspot_symbol fields[], const unsigned widths[], size_t n_fields,
                        enum hotspot_symbol stride, struct table *ret) {
        uint64_t *dest[] = { &ret->name, &ret->name2, &ret->value, &ret->address, &ret->is_static };

        ret->what = symbol_names[base];
        /* The table symbol is a pointer to the array. */
        if (read_u64(rd, symbols[base], &ret->base) < 0)
                return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_LAYOUT, symbol_names[base]);
        if (read_u64(rd, symbols[stride], &ret->stride) < 0)
                return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_LAYOUT, symbol_names[stride]);
        if (ret->base == 0)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, symbol_names[base]);
        if (ret->stride == 0 || ret->stride > HOTSPOT_VMSTRUCTS_STRIDE_MAX)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, symbol_names[stride]);
        /* The whole array's addresses must not wrap. */
        if (ret->base > UINT64_MAX - (uint64_t) HOTSPOT_VMSTRUCTS_ENTRIES_MAX * ret->stride)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, symbol_names[base]);
        for (size_t i = 0; i < n_fields; i++) {
                if (widths[i] == 0)
                        continue;
                if (read_u64(rd, symbols[fields[i]], dest[i]) < 0)
                        return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_LAYOUT, symbol_names[fields[i]]);
                if (*dest[i] > ret->stride || widths[i] > ret->stride - *dest[i])
                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, symbol_names[fields[i]]);
        }
        return 0;
}

/* Entry i of `t` into buf: 1 when read, 0 at the terminating entry (a NULL
 * name), negative at a failure. */
static int table_entry(struct reader *rd, const struct table *t, uint32_t i, uint8_t *buf) {
        if (i >= HOTSPOT_VMSTRUCTS_ENTRIES_MAX)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_NO_END, t->what);
        if (rd->read(rd->userdata, t->base + i * t->stride, buf, t->stride) < 0)
                return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_ENTRY, t->what);
        return le(buf + t->name, 8) != 0;
}

static void *dest_of(struct reader *rd, const struct want *w) {
        return (uint8_t *) rd->out + w->dest;
}

static bool in_chain(const uint64_t chain[CHAIN_MAX], uint64_t h) {
        for (unsigned i = 0; i < CHAIN_MAX && chain[i]; i++)
                if (chain[i] == h)
                        return true;
        return false;
}

/* The types table: sizes of the wanted types, and the superclass chains
 * that say whose fields a class has. */
static int read_types(struct reader *rd, const uint64_t *symbols) {
        static const enum hotspot_symbol fields[] = {
                HOTSPOT_SYM_TYPE_TYPE_NAME, HOTSPOT_SYM_TYPE_SUPERCLASS_NAME, HOTSPOT_SYM_TYPE_SIZE,
        };
        static const unsigned widths[] = { 8, 8, 8 };
        _cleanup_free_ struct type_entry *types = NULL;
        uint8_t entry[HOTSPOT_VMSTRUCTS_STRIDE_MAX];
        char name[HOTSPOT_VMSTRUCTS_NAME_MAX];
        struct table t = {};
        size_t n = 0, allocated = 0;
        int r;

        r = table_layout(rd, symbols, HOTSPOT_SYM_TYPES, fields, widths, ELEMENTSOF(fields),
                         HOTSPOT_SYM_TYPE_STRIDE, &t);
        if (r < 0)
                return r;
        for (uint32_t i = 0;; i++) {
                struct type_entry e = {};
                uint64_t super;

                r = table_entry(rd, &t, i, entry);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = read_name(rd, le(entry + t.name, 8), name, t.what);
                if (r < 0)
                        return r;
                e.name = name_hash(name);
                e.size = le(entry + t.value, 8);
                super = le(entry + t.name2, 8);
                if (super != 0) {
                        r = read_name(rd, super, name, t.what);
                        if (r < 0)
                                return r;
                        e.super = name_hash(name);
                }
                if (n == allocated) {
                        size_t more = MAX(allocated * 2, (size_t) 1024);
                        struct type_entry *p = realloc(types, more * sizeof *types);

                        if (!p)
                                return fail(rd, -ENOMEM, HOTSPOT_VMSTRUCTS_OK, NULL);
                        types = p;
                        allocated = more;
                }
                types[n++] = e;
        }

        for (size_t w = 0; w < ELEMENTSOF(wants); w++) {
                uint64_t h;

                if (!wants[w].type)
                        continue;
                h = name_hash(wants[w].type);
                /* A class the types table does not name is its own chain. */
                for (unsigned depth = 0; depth < CHAIN_MAX && h; depth++) {
                        const struct type_entry *found = NULL;

                        rd->chain[w][depth] = h;
                        for (size_t i = 0; i < n && !found; i++)
                                if (types[i].name == h)
                                        found = &types[i];
                        if (!found)
                                break;
                        if (depth == 0)
                                rd->class_size[w] = found->size;
                        if (depth == 0 && wants[w].kind == WANT_SIZE && !rd->found[w]) {
                                if (found->size == 0 || found->size > HOTSPOT_VMSTRUCTS_OFFSET_MAX)
                                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, wants[w].type);
                                *(uint32_t *) dest_of(rd, &wants[w]) = (uint32_t) found->size;
                                rd->found[w] = true;
                        }
                        h = found->super;
                }
        }
        return 0;
}

static int read_structs(struct reader *rd, const uint64_t *symbols) {
        static const enum hotspot_symbol fields[] = {
                HOTSPOT_SYM_STRUCT_TYPE_NAME, HOTSPOT_SYM_STRUCT_FIELD_NAME, HOTSPOT_SYM_STRUCT_OFFSET,
                HOTSPOT_SYM_STRUCT_ADDRESS, HOTSPOT_SYM_STRUCT_IS_STATIC,
        };
        static const unsigned widths[] = { 8, 8, 8, 8, 4 };
        uint8_t entry[HOTSPOT_VMSTRUCTS_STRIDE_MAX];
        char type[HOTSPOT_VMSTRUCTS_NAME_MAX], field[HOTSPOT_VMSTRUCTS_NAME_MAX];
        struct table t = {};
        uint64_t last_type = 0, type_h = 0;
        bool wanted = false;
        int r;

        r = table_layout(rd, symbols, HOTSPOT_SYM_STRUCTS, fields, widths, ELEMENTSOF(fields),
                         HOTSPOT_SYM_STRUCT_STRIDE, &t);
        if (r < 0)
                return r;
        for (uint32_t i = 0;; i++) {
                uint64_t type_addr;
                bool is_static;

                r = table_entry(rd, &t, i, entry);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                /* A class's entries are together and share one string:
                 * its name is read once. */
                type_addr = le(entry + t.name, 8);
                if (type_addr != last_type) {
                        r = read_name(rd, type_addr, type, t.what);
                        if (r < 0)
                                return r;
                        last_type = type_addr;
                        type_h = name_hash(type);
                        wanted = false;
                        for (size_t w = 0; w < ELEMENTSOF(wants) && !wanted; w++)
                                wanted = (wants[w].kind == WANT_FIELD || wants[w].kind == WANT_STATIC) &&
                                        in_chain(rd->chain[w], type_h);
                }
                if (!wanted)
                        continue;
                r = read_name(rd, le(entry + t.name2, 8), field, t.what);
                if (r < 0)
                        return r;
                is_static = le(entry + t.is_static, 4) != 0;
                for (size_t w = 0; w < ELEMENTSOF(wants); w++) {
                        const struct want *want = &wants[w];

                        if (rd->found[w] || !streq(want->name, field) || !in_chain(rd->chain[w], type_h))
                                continue;
                        if (want->kind == WANT_STATIC && is_static) {
                                uint64_t addr = le(entry + t.address, 8);

                                if (addr == 0)
                                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, want->name);
                                *(uint64_t *) dest_of(rd, want) = addr;
                                rd->found[w] = true;
                        } else if (want->kind == WANT_FIELD && !is_static) {
                                uint64_t off = le(entry + t.value, 8), size = rd->class_size[w];

                                /* A field inside its object: within the
                                 * class's size when the types table gives it. */
                                if (off >= HOTSPOT_VMSTRUCTS_OFFSET_MAX || (size && off >= size))
                                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, want->name);
                                *(uint32_t *) dest_of(rd, want) = (uint32_t) off;
                                rd->found[w] = true;
                        }
                }
        }
        return 0;
}

/* Walks a constants table (entries of name and value; table_layout's
 * slots are name, name2, value, with no name2 here), every name read and
 * checked. The int constants' values are kept where a want names them; the
 * long ones hold nothing the walker needs in JDK 17, but their table is
 * walked all the same, so a JVM whose tables are not all sane is not
 * trusted. */
static int read_constants(struct reader *rd, const uint64_t *symbols, bool longs) {
        const enum hotspot_symbol name = longs ? HOTSPOT_SYM_LONG_NAME : HOTSPOT_SYM_INT_NAME;
        const enum hotspot_symbol fields[] = {
                name, name, longs ? HOTSPOT_SYM_LONG_VALUE : HOTSPOT_SYM_INT_VALUE,
        };
        const unsigned widths[] = { 8, 0, longs ? 8 : 4 };
        uint8_t entry[HOTSPOT_VMSTRUCTS_STRIDE_MAX];
        char text[HOTSPOT_VMSTRUCTS_NAME_MAX];
        struct table t = {};
        int r;

        r = table_layout(rd, symbols, longs ? HOTSPOT_SYM_LONG_CONSTANTS : HOTSPOT_SYM_INT_CONSTANTS, fields,
                         widths, ELEMENTSOF(fields), longs ? HOTSPOT_SYM_LONG_STRIDE : HOTSPOT_SYM_INT_STRIDE, &t);
        if (r < 0)
                return r;
        for (uint32_t i = 0;; i++) {
                r = table_entry(rd, &t, i, entry);
                if (r <= 0)
                        return r;
                r = read_name(rd, le(entry + t.name, 8), text, t.what);
                if (r < 0)
                        return r;
                if (longs)
                        continue;
                for (size_t w = 0; w < ELEMENTSOF(wants); w++)
                        if (wants[w].kind == WANT_INT && !rd->found[w] && streq(wants[w].name, text)) {
                                *(int32_t *) dest_of(rd, &wants[w]) = (int32_t) le(entry + t.value, 4);
                                rd->found[w] = true;
                        }
        }
}

static int read_static(struct reader *rd, uint64_t addr, size_t size, const char *what, uint64_t *ret) {
        uint8_t b[8];

        if (addr == 0 || rd->read(rd->userdata, addr, b, size) < 0)
                return fail(rd, -EIO, HOTSPOT_VMSTRUCTS_READ_VALUE, what);
        *ret = le(b, size);
        return 0;
}

/* The code cache's bounds and heaps, through the statics the tables point at. */
static int read_code_cache(struct reader *rd) {
        struct reading *o = rd->out;
        struct hotspot_vmstructs *vs = &o->vs;
        uint64_t array, len, data;
        int r;

        r = read_static(rd, o->code_low_addr, 8, "CodeCache::_low_bound", &vs->code_low);
        if (r < 0)
                return r;
        r = read_static(rd, o->code_high_addr, 8, "CodeCache::_high_bound", &vs->code_high);
        if (r < 0)
                return r;
        if (vs->code_low == 0 || vs->code_low >= vs->code_high)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeCache::_low_bound");

        r = read_static(rd, o->code_heaps_addr, 8, "CodeCache::_heaps", &array);
        if (r < 0)
                return r;
        if (read_static(rd, array + o->array_len, 4, "CodeCache::_heaps", &len) < 0 ||
            read_static(rd, array + o->array_data, 8, "CodeCache::_heaps", &data) < 0)
                return -EIO;
        if (len == 0 || len > HOTSPOT_CODE_HEAPS_MAX)
                return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeCache::_heaps");
        for (uint32_t i = 0; i < len; i++) {
                struct hotspot_code_heap *h = &vs->heaps[i];
                uint64_t heap, log2;

                if (read_static(rd, data + 8 * i, 8, "CodeHeap", &heap) < 0 ||
                    read_static(rd, heap + vs->code_heap_memory + vs->virtual_space_low_boundary, 8,
                                "CodeHeap::_memory", &h->low) < 0 ||
                    read_static(rd, heap + vs->code_heap_memory + vs->virtual_space_high_boundary, 8,
                                "CodeHeap::_memory", &h->high) < 0 ||
                    read_static(rd, heap + vs->code_heap_segmap + vs->virtual_space_low_boundary, 8,
                                "CodeHeap::_segmap", &h->segmap_low) < 0 ||
                    read_static(rd, heap + vs->code_heap_log2_segment_size, 4,
                                "CodeHeap::_log2_segment_size", &log2) < 0)
                        return -EIO;
                /* A heap is inside the code cache; segments are at least a
                 * cache line and well under a megabyte (64 or 128 bytes). */
                if (h->low >= h->high || h->low < vs->code_low || h->high > vs->code_high)
                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeHeap::_memory");
                if (h->segmap_low == 0 || log2 < 4 || log2 > 20 || (i > 0 && log2 != vs->log2_segment_size))
                        return fail(rd, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeHeap::_log2_segment_size");
                vs->log2_segment_size = (uint32_t) log2;
        }
        vs->n_heaps = (uint32_t) len;
        return 0;
}

int hotspot_vmstructs_read(const uint64_t symbols[_HOTSPOT_SYM_MAX], hotspot_read_fn read, void *userdata,
                           struct hotspot_vmstructs *ret, enum hotspot_vmstructs_reason *ret_reason,
                           const char **ret_what) {
        _cleanup_free_ struct reader *rd = NULL;
        struct reading out = {};
        struct hotspot_vmstructs *vs = &out.vs;
        uint64_t v;
        int r;

        *ret_reason = HOTSPOT_VMSTRUCTS_OK;
        if (ret_what)
                *ret_what = NULL;
        /* Its superclass chains and sizes take 5 KiB: not for the stack of a worker. */
        rd = calloc(1, sizeof *rd);
        if (!rd)
                return -ENOMEM;
        *rd = (struct reader) { .read = read, .userdata = userdata, .out = &out };
        for (size_t w = 0; w < ELEMENTSOF(wants); w++) {
                void *d = dest_of(rd, &wants[w]);

                if (wants[w].kind == WANT_FIELD || wants[w].kind == WANT_SIZE)
                        *(uint32_t *) d = HOTSPOT_NO_FIELD;
                else if (wants[w].kind == WANT_INT)
                        *(int32_t *) d = HOTSPOT_NO_SLOT;
        }

        r = read_types(rd, symbols);
        if (r >= 0)
                r = read_structs(rd, symbols);
        if (r >= 0)
                r = read_constants(rd, symbols, false);
        if (r >= 0)
                r = read_constants(rd, symbols, true);
        if (r >= 0)
                for (size_t w = 0; w < ELEMENTSOF(wants); w++)
                        if (wants[w].required && !rd->found[w]) {
                                r = fail(rd, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING,
                                         wants[w].name ?: wants[w].type);
                                break;
                        }
        /* One of each pair of alternatives. */
        if (r >= 0 && out.array_len == HOTSPOT_NO_FIELD)
                r = fail(rd, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_len");
        if (r >= 0 && vs->symbol_length == HOTSPOT_NO_FIELD)
                r = fail(rd, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_length");
        if (r >= 0 && vs->blob_code_begin == HOTSPOT_NO_FIELD && vs->blob_code_offset == HOTSPOT_NO_FIELD)
                r = fail(rd, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_code_begin");
        if (r >= 0 && vs->blob_code_end == HOTSPOT_NO_FIELD && vs->blob_data_offset == HOTSPOT_NO_FIELD)
                r = fail(rd, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_code_end");
        if (r >= 0)
                r = read_code_cache(rd);
        /* Optional statics: an unreadable one stays 0. */
        if (r >= 0) {
                const struct { uint64_t addr; int32_t *dest; } ints[] = {
                        { out.major_addr, &vs->version_major },
                        { out.minor_addr, &vs->version_minor },
                        { out.security_addr, &vs->version_security },
                        { out.build_addr, &vs->version_build },
                };

                for (size_t i = 0; i < ELEMENTSOF(ints); i++)
                        if (ints[i].addr && read_static(rd, ints[i].addr, 4, NULL, &v) >= 0)
                                *ints[i].dest = (int32_t) v;
                if (out.call_stub_addr && read_static(rd, out.call_stub_addr, 8, NULL, &v) >= 0)
                        vs->call_stub_return_address = v;
        }
        if (r < 0) {
                *ret_reason = rd->reason;
                if (ret_what)
                        *ret_what = rd->what;
                return r;
        }
        *ret = *vs;
        return 0;
}

bool hotspot_vmstructs_in_code(const struct hotspot_vmstructs *vs, uint64_t addr) {
        for (uint32_t i = 0; i < vs->n_heaps && i < HOTSPOT_CODE_HEAPS_MAX; i++)
                if (addr >= vs->heaps[i].low && addr < vs->heaps[i].high)
                        return true;
        return false;
}
