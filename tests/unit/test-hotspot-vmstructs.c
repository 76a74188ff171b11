/* The VM-structs reader without a JVM: builds a process image from a
 * capture of JDK 17's tables (argv[1], written by test-hotspot-jvm) and
 * checks the values read, by name; then the same image made hostile, one
 * way at a time: each fails with its reason and names what, never crashes
 * or reads outside the image. */
#include <errno.h>
#include <stdlib.h>

#include "hotspot-vmstructs.h"
#include "macro.h"
#include "tests.h"

#define NAME_LEN 256
#define LAYOUT_BASE UINT64_C(0x10000)
#define TABLES_BASE UINT64_C(0x100000)
#define TABLES_SIZE (256u * 1024u)
#define MEMS_MAX 128

enum { T_STRUCTS, T_TYPES, T_INTS, T_LONGS, T_MAX };

struct record {
        int table;
        char a[NAME_LEN], b[NAME_LEN];  /* type and field, type and superclass, constant name */
        uint64_t is_static, value, address;
};

struct mem {
        uint64_t addr;
        uint8_t bytes[8];
        size_t size;
};

/* The capture, parsed: entry layouts (stride, then the fields' offsets in
 * the order the capture writes them), entries in table order, statics. */
struct fixture {
        uint64_t layout[T_MAX][6];
        struct record records[1024];
        size_t n_records;
        struct mem mems[MEMS_MAX];
        size_t n_mems;
};

struct region {
        uint64_t addr;
        uint8_t *bytes;
        size_t size;
};

struct image {
        struct region regions[2 + MEMS_MAX];
        size_t n_regions;
        uint8_t layout[8 * _HOTSPOT_SYM_MAX];
        uint8_t *tables;
        uint64_t symbols[_HOTSPOT_SYM_MAX];
        uint64_t table_base[T_MAX], table_entries[T_MAX];
        uint64_t strings_end;   /* the tables region's names end here; the arrays follow */
        uint64_t layout_base, tables_base;
        uint64_t struct_stride;
        uint64_t loop_from;     /* non-0: reads from here on repeat the struct table */
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        const struct image *m = userdata;

        if (m->loop_from && addr >= m->loop_from) {
                uint64_t len = m->table_entries[T_STRUCTS] * m->struct_stride;

                addr = m->table_base[T_STRUCTS] + (addr - m->loop_from) % len;
        }
        for (size_t i = 0; i < m->n_regions; i++) {
                const struct region *r = &m->regions[i];

                if (addr >= r->addr && addr - r->addr <= r->size && size <= r->size - (addr - r->addr)) {
                        memcpy(buf, r->bytes + (addr - r->addr), size);
                        return 0;
                }
        }
        return -EFAULT;
}

static void put(uint8_t *p, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t get(const uint8_t *p, size_t n) {
        uint64_t v = 0;

        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

static int fixture_load(const char *path, struct fixture *f) {
        static const char *const layouts[T_MAX] = { "structs", "types", "ints", "longs" };
        _cleanup_fclose_ FILE *in = fopen(path, "re");
        char line[1024], word[16], name[64];

        if (!in)
                return -errno;
        *f = (struct fixture) {};
        while (fgets(line, sizeof line, in)) {
                struct record *r = &f->records[f->n_records];
                char hex[32];
                unsigned long long v[6] = {};
                long long value;

                if (line[0] == '#' || sscanf(line, "%15s", word) != 1)
                        continue;
                if (streq(word, "layout")) {
                        int n = sscanf(line, "layout %63s %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1],
                                       &v[2], &v[3], &v[4], &v[5]);

                        for (int t = 0; t < T_MAX; t++)
                                if (streq(name, layouts[t]))
                                        for (int i = 0; i + 1 < n; i++)
                                                f->layout[t][i] = v[i];
                        continue;
                }
                if (streq(word, "mem")) {
                        struct mem *m = &f->mems[f->n_mems];

                        if (f->n_mems == MEMS_MAX || sscanf(line, "mem %llx %31s", &v[0], hex) != 2)
                                return -EBADMSG;
                        m->addr = v[0];
                        m->size = strlen(hex) / 2;
                        for (size_t i = 0; i < m->size && i < 8; i++)
                                sscanf(hex + 2 * i, "%2hhx", &m->bytes[i]);
                        f->n_mems++;
                        continue;
                }
                if (f->n_records == ELEMENTSOF(f->records))
                        return -E2BIG;
                *r = (struct record) {};
                if (streq(word, "type")) {
                        r->table = T_TYPES;
                        if (sscanf(line, "type %255s %255s %llu", r->a, r->b, &v[0]) != 3)
                                return -EBADMSG;
                        if (streq(r->b, "-"))
                                r->b[0] = '\0';
                        r->value = v[0];
                } else if (streq(word, "struct")) {
                        r->table = T_STRUCTS;
                        if (sscanf(line, "struct %255s %255s %*s %llu %llu %llx", r->a, r->b, &v[0], &v[1], &v[2]) != 5)
                                return -EBADMSG;
                        r->is_static = v[0];
                        r->value = v[1];
                        r->address = v[2];
                } else if (streq(word, "int") || streq(word, "long")) {
                        r->table = word[0] == 'i' ? T_INTS : T_LONGS;
                        if (sscanf(line, "%*s %255s %lld", r->a, &value) != 2)
                                return -EBADMSG;
                        r->value = (uint64_t) value;
                } else
                        return -EBADMSG;
                f->n_records++;
        }
        return 0;
}

/* The names' addresses: one string per distinct name, as the compiler
 * makes them (a class's entries share its name). */
static uint64_t intern(struct image *m, const char *s) {
        size_t n = strlen(s) + 1;

        for (uint64_t a = m->tables_base; a < m->tables_base + m->strings_end;) {
                const char *have = (const char *) m->tables + (a - m->tables_base);

                if (streq(have, s))
                        return a;
                a += strlen(have) + 1;
        }
        if (m->strings_end + n > TABLES_SIZE)
                abort();
        memcpy(m->tables + m->strings_end, s, n);
        m->strings_end += n;
        return m->tables_base + m->strings_end - n;
}

static void image_done(struct image *m) {
        free(m->tables);
        m->tables = NULL;
}

/* The image: the layout variables at LAYOUT_BASE (symbols point there),
 * names then the four arrays at TABLES_BASE, the statics where the JVM
 * had them. */
static void image_build_at(const struct fixture *f, struct image *m, uint64_t layout_base, uint64_t tables_base) {
        static const enum hotspot_symbol slots[T_MAX][6] = {
                [T_STRUCTS] = { HOTSPOT_SYM_STRUCT_STRIDE, HOTSPOT_SYM_STRUCT_TYPE_NAME, HOTSPOT_SYM_STRUCT_FIELD_NAME,
                                HOTSPOT_SYM_STRUCT_IS_STATIC, HOTSPOT_SYM_STRUCT_OFFSET, HOTSPOT_SYM_STRUCT_ADDRESS },
                [T_TYPES] = { HOTSPOT_SYM_TYPE_STRIDE, HOTSPOT_SYM_TYPE_TYPE_NAME, HOTSPOT_SYM_TYPE_SUPERCLASS_NAME,
                              HOTSPOT_SYM_TYPE_SIZE },
                [T_INTS] = { HOTSPOT_SYM_INT_STRIDE, HOTSPOT_SYM_INT_NAME, HOTSPOT_SYM_INT_VALUE },
                [T_LONGS] = { HOTSPOT_SYM_LONG_STRIDE, HOTSPOT_SYM_LONG_NAME, HOTSPOT_SYM_LONG_VALUE },
        };
        static const unsigned n_slots[T_MAX] = { 6, 4, 3, 3 };
        static const enum hotspot_symbol bases[T_MAX] = {
                HOTSPOT_SYM_STRUCTS, HOTSPOT_SYM_TYPES, HOTSPOT_SYM_INT_CONSTANTS, HOTSPOT_SYM_LONG_CONSTANTS,
        };
        /* The types table first: the reader reads it first, so cutting the
         * struct table's end leaves what comes before it readable. */
        static const int order[T_MAX] = { T_TYPES, T_STRUCTS, T_INTS, T_LONGS };
        uint64_t at;

        *m = (struct image) { .tables = calloc(1, TABLES_SIZE), .layout_base = layout_base, .tables_base = tables_base };
        if (!m->tables)
                abort();
        for (size_t i = 0; i < f->n_records; i++) {
                intern(m, f->records[i].a);
                if (f->records[i].b[0])
                        intern(m, f->records[i].b);
        }
        at = (m->strings_end + 15) & ~UINT64_C(15);
        for (int o = 0; o < T_MAX; o++) {
                int t = order[o];
                uint64_t stride = f->layout[t][0];

                m->table_base[t] = tables_base + at;
                for (size_t i = 0; i < f->n_records; i++) {
                        const struct record *r = &f->records[i];
                        uint8_t *e = m->tables + at;

                        if (r->table != t)
                                continue;
                        if (at + 2 * stride > TABLES_SIZE)
                                abort();
                        put(e + f->layout[t][1], intern(m, r->a), 8);
                        switch (t) {
                        case T_STRUCTS:
                                put(e + f->layout[t][2], intern(m, r->b), 8);
                                put(e + f->layout[t][3], r->is_static, 4);
                                put(e + f->layout[t][4], r->value, 8);
                                put(e + f->layout[t][5], r->address, 8);
                                break;
                        case T_TYPES:
                                put(e + f->layout[t][2], r->b[0] ? intern(m, r->b) : 0, 8);
                                put(e + f->layout[t][3], r->value, 8);
                                break;
                        default:
                                put(e + f->layout[t][2], r->value, t == T_INTS ? 4 : 8);
                        }
                        at += stride;
                        m->table_entries[t]++;
                }
                at += stride;   /* the terminating entry, all zero */
        }
        m->struct_stride = f->layout[T_STRUCTS][0];

        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                m->symbols[s] = layout_base + 8 * s;
        for (int t = 0; t < T_MAX; t++) {
                put(m->layout + 8 * bases[t], m->table_base[t], 8);
                for (unsigned i = 0; i < n_slots[t]; i++)
                        put(m->layout + 8 * slots[t][i], f->layout[t][i], 8);
        }
        m->regions[m->n_regions++] = (struct region) { layout_base, m->layout, sizeof m->layout };
        m->regions[m->n_regions++] = (struct region) { tables_base, m->tables, at };
        for (size_t i = 0; i < f->n_mems; i++)
                m->regions[m->n_regions++] = (struct region) {
                        f->mems[i].addr, (uint8_t *) f->mems[i].bytes, f->mems[i].size,
                };
}

static void image_build(const struct fixture *f, struct image *m) {
        image_build_at(f, m, LAYOUT_BASE, TABLES_BASE);
}

/* The cluster of the read nearest `v`, within 64 bytes (a CodeHeap's
 * first field read is 8 bytes in); SIZE_MAX when none is. */
static size_t cluster_of(const struct fixture *f, const size_t *cluster, uint64_t v) {
        for (size_t i = 0; i < f->n_mems; i++)
                if (v + 64 >= f->mems[i].addr && v < f->mems[i].addr + f->mems[i].size + 64)
                        return cluster[i];
        return SIZE_MAX;
}

/* Moves the statics the capture holds next to `to`: the reads cluster
 * (libjvm's data, the C heap), each cluster moves as one, and every 8-byte
 * value and static address that points near a read moves with its
 * cluster. Returns the end of the last cluster. */
static uint64_t fixture_relocate(struct fixture *f, uint64_t to) {
        uint64_t lo[MEMS_MAX], hi[MEMS_MAX], delta[MEMS_MAX], addr[MEMS_MAX], value[MEMS_MAX];
        size_t cluster[MEMS_MAX], n = 0;

        for (size_t i = 0; i < f->n_mems; i++)
                cluster[i] = SIZE_MAX;
        for (;;) {
                size_t first = SIZE_MAX;

                /* The lowest not yet placed starts a cluster. */
                for (size_t i = 0; i < f->n_mems; i++)
                        if (cluster[i] == SIZE_MAX && (first == SIZE_MAX || f->mems[i].addr < f->mems[first].addr))
                                first = i;
                if (first == SIZE_MAX)
                        break;
                lo[n] = hi[n] = f->mems[first].addr;
                for (bool grew = true; grew;) {
                        grew = false;
                        for (size_t i = 0; i < f->n_mems; i++)
                                if (cluster[i] == SIZE_MAX && f->mems[i].addr >= lo[n] &&
                                    f->mems[i].addr <= hi[n] + 4096) {
                                        hi[n] = MAX(hi[n], f->mems[i].addr + f->mems[i].size);
                                        cluster[i] = n;
                                        grew = true;
                                }
                }
                delta[n] = to + 64 - lo[n];
                to += (hi[n] - lo[n] + 128 + 15) & ~UINT64_C(15);
                n++;
        }
        /* Decided on the addresses as captured, then moved. */
        for (size_t i = 0; i < f->n_mems; i++) {
                size_t c = f->mems[i].size == 8 ? cluster_of(f, cluster, get(f->mems[i].bytes, 8)) : SIZE_MAX;

                addr[i] = f->mems[i].addr + delta[cluster[i]];
                value[i] = c == SIZE_MAX ? 0 : get(f->mems[i].bytes, 8) + delta[c];
        }
        for (size_t i = 0; i < f->n_records; i++) {
                size_t c = f->records[i].address ? cluster_of(f, cluster, f->records[i].address) : SIZE_MAX;

                if (c != SIZE_MAX)
                        f->records[i].address += delta[c];
        }
        for (size_t i = 0; i < f->n_mems; i++) {
                f->mems[i].addr = addr[i];
                if (value[i])
                        put(f->mems[i].bytes, value[i], 8);
        }
        return to;
}

/* The whole capture in one piece from `base`: the layout variables, the
 * tables, then the statics moved next to them. As fuzz-hotspot maps its
 * input, and what its seed (tests/fuzz/corpus/hotspot/jdk17-tables) is. */
static size_t compact_build(const struct fixture *f0, uint64_t base, uint8_t **ret) {
        _cleanup_free_ struct fixture *f = malloc(sizeof *f);
        struct image m;
        uint64_t tables_end, end;
        uint8_t *blob;

        if (!f)
                abort();
        *f = *f0;
        image_build_at(f, &m, base, base + sizeof m.layout);
        tables_end = base + sizeof m.layout + m.regions[1].size;
        image_done(&m);
        end = fixture_relocate(f, tables_end);
        image_build_at(f, &m, base, base + sizeof m.layout);
        blob = calloc(1, end - base);
        if (!blob)
                abort();
        memcpy(blob, m.layout, sizeof m.layout);
        memcpy(blob + sizeof m.layout, m.tables, m.regions[1].size);
        for (size_t i = 0; i < f->n_mems; i++)
                memcpy(blob + (f->mems[i].addr - base), f->mems[i].bytes, f->mems[i].size);
        image_done(&m);
        *ret = blob;
        return end - base;
}

static void write_seed(const struct fixture *f, const char *path) {
        _cleanup_fclose_ FILE *out = fopen(path, "we");
        _cleanup_free_ uint8_t *blob = NULL;
        size_t size = compact_build(f, 0x1000, &blob);

        CHECK(out);
        if (!out)
                return;
        CHECK(fwrite(blob, size, 1, out) == 1);
        printf("seed written to %s\n", path);
}

static void layout_set(struct image *m, enum hotspot_symbol s, uint64_t v) {
        put(m->layout + 8 * s, v, 8);
}

/* The table entry `i` of table t, in the image. */
static uint8_t *entry_at(struct image *m, int t, const struct fixture *f, size_t i) {
        return m->tables + (m->table_base[t] - m->tables_base) + i * f->layout[t][0];
}

static struct record *record_find(struct fixture *f, const char *a, const char *b) {
        for (size_t i = 0; i < f->n_records; i++)
                if (streq(f->records[i].a, a) && (!b || streq(f->records[i].b, b)))
                        return &f->records[i];
        return NULL;
}

static struct mem *mem_find(struct fixture *f, uint64_t addr) {
        for (size_t i = 0; i < f->n_mems; i++)
                if (f->mems[i].addr == addr)
                        return &f->mems[i];
        return NULL;
}

static uint64_t mem_value(const struct mem *m) {
        return get(m->bytes, m->size);
}

static int read_image(struct image *m, struct hotspot_vmstructs *vs, enum hotspot_vmstructs_reason *reason,
                      const char **what) {
        int r = hotspot_vmstructs_read(m->symbols, image_read, m, vs, reason, what);

        CHECK((unsigned) *reason < _HOTSPOT_VMSTRUCTS_REASON_MAX);
        CHECK((r == 0) == (*reason == HOTSPOT_VMSTRUCTS_OK));
        CHECK(r == 0 || r == -EIO || r == -EBADMSG || r == -EPROTONOSUPPORT);
        return r;
}

/* Reads the image and expects a failure: its errno, reason and what. */
static void expect_fail(const char *test, struct image *m, int error, enum hotspot_vmstructs_reason reason,
                        const char *what) {
        struct hotspot_vmstructs vs;
        enum hotspot_vmstructs_reason got;
        const char *got_what = NULL;
        int r = read_image(m, &vs, &got, &got_what);

        printf("%s: %s (%s)\n", test, hotspot_vmstructs_reason_name(got), got_what ?: "-");
        CHECK_INT_EQ(r, error);
        CHECK_STR_EQ(hotspot_vmstructs_reason_name(got), hotspot_vmstructs_reason_name(reason));
        if (what)
                CHECK_STR_EQ(got_what, what);
        image_done(m);
}

static void test_jdk17(const struct fixture *f) {
        struct hotspot_vmstructs vs = {};
        enum hotspot_vmstructs_reason reason;
        struct image m;
        const char *what = NULL;

        image_build(f, &m);
        CHECK_INT_EQ(read_image(&m, &vs, &reason, &what), 0);
        image_done(&m);

        CHECK_INT_EQ(vs.version_major, 17);
        CHECK_INT_EQ(vs.version_minor, 0);
        CHECK_INT_EQ(vs.version_security, 15);
        CHECK_INT_EQ(vs.n_heaps, 3);
        CHECK_INT_EQ(vs.log2_segment_size, 7);
        CHECK_INT_EQ(vs.heap_block_size, 16);
        CHECK(vs.code_low < vs.code_high);
        for (uint32_t i = 0; i < vs.n_heaps; i++)
                CHECK(vs.heaps[i].low >= vs.code_low && vs.heaps[i].high <= vs.code_high);
        CHECK(hotspot_vmstructs_in_code(&vs, vs.call_stub_return_address));
        CHECK(!hotspot_vmstructs_in_code(&vs, vs.code_high));
        CHECK_INT_EQ(vs.code_heap_memory, 8);
        CHECK_INT_EQ(vs.code_heap_segmap, 120);
        CHECK_INT_EQ(vs.code_heap_log2_segment_size, 256);
        CHECK_INT_EQ(vs.virtual_space_low_boundary, 0);
        CHECK_INT_EQ(vs.virtual_space_high_boundary, 8);

        CHECK_INT_EQ(vs.blob_size, 104);
        CHECK_INT_EQ(vs.blob_name, 96);
        CHECK_INT_EQ(vs.blob_frame_size, 28);
        CHECK_INT_EQ(vs.blob_frame_complete_offset, 20);
        CHECK_INT_EQ(vs.blob_code_begin, 32);
        CHECK_INT_EQ(vs.blob_code_end, 40);
        CHECK_INT_EQ(vs.blob_code_offset, HOTSPOT_NO_FIELD);
        CHECK_INT_EQ(vs.blob_data_offset, 24);

        /* nmethod's own fields, and CompiledMethod's through the superclass. */
        CHECK_INT_EQ(vs.nmethod_size, 352);
        CHECK_INT_EQ(vs.nmethod_method, 112);
        CHECK_INT_EQ(vs.nmethod_scopes_data_begin, 120);
        CHECK_INT_EQ(vs.nmethod_scopes_data_offset, HOTSPOT_NO_FIELD);
        CHECK_INT_EQ(vs.nmethod_deopt_handler_begin, 128);
        CHECK_INT_EQ(vs.nmethod_compile_id, 304);
        CHECK_INT_EQ(vs.nmethod_scopes_pcs_offset, 268);
        CHECK_INT_EQ(vs.nmethod_dependencies_offset, 272);
        CHECK_INT_EQ(vs.nmethod_metadata_offset, 260);
        CHECK_INT_EQ(vs.nmethod_orig_pc_offset, 300);
        CHECK_INT_EQ(vs.pc_desc_size, 16);
        CHECK_INT_EQ(vs.pc_desc_pc_offset, 0);
        CHECK_INT_EQ(vs.pc_desc_scope_decode_offset, 4);

        CHECK_INT_EQ(vs.method_const_method, 8);
        CHECK_INT_EQ(vs.const_method_size, 48);
        CHECK_INT_EQ(vs.const_method_constants, 8);
        CHECK_INT_EQ(vs.const_method_flags, 28);
        CHECK_INT_EQ(vs.const_method_code_size, 32);
        CHECK_INT_EQ(vs.const_method_name_index, 34);
        CHECK_INT_EQ(vs.const_method_signature_index, 36);
        CHECK_INT_EQ(vs.const_method_has_linenumber_table, 1);
        CHECK_INT_EQ(vs.constant_pool_size, 72);
        CHECK_INT_EQ(vs.constant_pool_holder, 24);
        CHECK_INT_EQ(vs.constant_pool_source_file_name_index, 54);
        CHECK_INT_EQ(vs.klass_name, 24);
        CHECK_INT_EQ(vs.symbol_length, 4);
        CHECK_INT_EQ(vs.symbol_body, 6);

        CHECK_INT_EQ(vs.interp_sender_sp, -1);
        CHECK_INT_EQ(vs.interp_last_sp, -2);
        CHECK_INT_EQ(vs.interp_method, HOTSPOT_NO_SLOT);
        CHECK_INT_EQ(vs.interp_bcp, HOTSPOT_NO_SLOT);
}

/* The capture in one piece, statics moved, as the fuzzer's seed is: the
 * same offsets, the same code cache. */
static void test_compact(const struct fixture *f) {
        _cleanup_free_ uint8_t *blob = NULL;
        size_t size = compact_build(f, 0x1000, &blob);
        struct hotspot_vmstructs vs = {}, want = {};
        enum hotspot_vmstructs_reason reason;
        struct image m = {}, full;

        image_build(f, &full);
        CHECK_INT_EQ(read_image(&full, &want, &reason, NULL), 0);
        image_done(&full);
        m.regions[m.n_regions++] = (struct region) { 0x1000, blob, size };
        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                m.symbols[s] = 0x1000 + 8 * s;
        CHECK_INT_EQ(read_image(&m, &vs, &reason, NULL), 0);
        printf("compact image: %zu bytes, %s\n", size, hotspot_vmstructs_reason_name(reason));
        CHECK(memcmp(&vs, &want, sizeof vs) == 0);
}

/* A class whose superclass chain loops is followed CHAIN_MAX deep, no more. */
static void test_superclass_loop(const struct fixture *f0) {
        _cleanup_free_ struct fixture *f = malloc(sizeof *f);
        struct hotspot_vmstructs vs = {};
        enum hotspot_vmstructs_reason reason;
        struct record *r;
        struct image m;

        *f = *f0;
        r = record_find(f, "CodeBlob", NULL);
        CHECK(r && r->table == T_TYPES);
        if (r)
                strcpy(r->b, "nmethod");
        image_build(f, &m);
        CHECK_INT_EQ(read_image(&m, &vs, &reason, NULL), 0);
        CHECK_INT_EQ(vs.nmethod_method, 112);
        CHECK_INT_EQ(vs.blob_frame_size, 28);
        image_done(&m);
}

static void test_hostile_tables(const struct fixture *f0) {
        _cleanup_free_ struct fixture *f = malloc(sizeof *f);
        struct image m;
        struct record *r;
        uint8_t *e;

        /* The struct table cut in the middle of an entry. */
        image_build(f0, &m);
        m.regions[1].size = m.table_base[T_STRUCTS] - TABLES_BASE + 10 * f0->layout[T_STRUCTS][0] + 7;
        expect_fail("truncated", &m, -EIO, HOTSPOT_VMSTRUCTS_READ_ENTRY, "gHotSpotVMStructs");

        image_build(f0, &m);
        layout_set(&m, HOTSPOT_SYM_STRUCT_STRIDE, UINT64_C(1) << 20);
        expect_fail("huge stride", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, "gHotSpotVMStructEntryArrayStride");

        image_build(f0, &m);
        layout_set(&m, HOTSPOT_SYM_TYPE_STRIDE, 0);
        expect_fail("zero stride", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, "gHotSpotVMTypeEntryArrayStride");

        image_build(f0, &m);
        layout_set(&m, HOTSPOT_SYM_STRUCT_ADDRESS, f0->layout[T_STRUCTS][0] - 4);
        expect_fail("field past its entry", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT,
                    "gHotSpotVMStructEntryAddressOffset");

        image_build(f0, &m);
        layout_set(&m, HOTSPOT_SYM_INT_CONSTANTS, 0);
        expect_fail("NULL table", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_LAYOUT, "gHotSpotVMIntConstants");

        image_build(f0, &m);
        m.symbols[HOTSPOT_SYM_TYPES] = 0xdead0000;
        expect_fail("unreadable layout", &m, -EIO, HOTSPOT_VMSTRUCTS_READ_LAYOUT, "gHotSpotVMTypes");

        /* A table with no end: past its last entry it starts over. */
        image_build(f0, &m);
        m.loop_from = m.table_base[T_STRUCTS] + m.table_entries[T_STRUCTS] * m.struct_stride;
        expect_fail("no terminator", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_NO_END, "gHotSpotVMStructs");

        /* A name longer than any HotSpot gives. */
        *f = *f0;
        memset(f->records[0].a, 'A', 200);
        f->records[0].a[200] = '\0';
        image_build(f, &m);
        expect_fail("unterminated name", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_STRING, "gHotSpotVMTypes");

        /* A name that runs off the end of readable memory. */
        image_build(f0, &m);
        memset(m.tables + m.regions[1].size - 3, 'x', 3);
        put(entry_at(&m, T_TYPES, f0, 2) + f0->layout[T_TYPES][1], TABLES_BASE + m.regions[1].size - 3, 8);
        expect_fail("name off the end", &m, -EIO, HOTSPOT_VMSTRUCTS_READ_STRING, "gHotSpotVMTypes");

        /* A name with a control character: not one of HotSpot's. */
        image_build(f0, &m);
        e = entry_at(&m, T_STRUCTS, f0, 0);
        m.tables[get(e + f0->layout[T_STRUCTS][2], 8) - TABLES_BASE + 1] = '\x01';
        expect_fail("control character", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_STRING, "gHotSpotVMStructs");

        /* A field the walker needs, absent (a JDK that renamed it). */
        *f = *f0;
        r = record_find(f, "Symbol", "_body");
        CHECK(r);
        if (r)
                strcpy(r->b, "_bodyx");
        image_build(f, &m);
        expect_fail("missing field", &m, -EPROTONOSUPPORT, HOTSPOT_VMSTRUCTS_MISSING, "_body");

        /* An offset past the end of its class. */
        *f = *f0;
        r = record_find(f, "Klass", "_name");
        CHECK(r);
        if (r)
                r->value = 4096;
        image_build(f, &m);
        expect_fail("offset past its class", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "_name");

        /* A type's size beyond any HotSpot class. */
        *f = *f0;
        r = record_find(f, "ConstMethod", NULL);
        CHECK(r && r->table == T_TYPES);
        if (r)
                r->value = UINT64_C(1) << 40;
        image_build(f, &m);
        expect_fail("huge type", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "ConstMethod");
}

static void test_hostile_statics(const struct fixture *f0) {
        _cleanup_free_ struct fixture *f = malloc(sizeof *f);
        struct record *low, *high, *heaps;
        struct mem *m_low, *m_high, *m_heaps, *m_len;
        struct image m;

        *f = *f0;
        low = record_find(f, "CodeCache", "_low_bound");
        high = record_find(f, "CodeCache", "_high_bound");
        heaps = record_find(f, "CodeCache", "_heaps");
        CHECK(low && high && heaps);
        if (!low || !high || !heaps)
                return;
        m_low = mem_find(f, low->address);
        m_high = mem_find(f, high->address);
        m_heaps = mem_find(f, heaps->address);
        CHECK(m_low && m_high && m_heaps);
        if (!m_low || !m_high || !m_heaps)
                return;
        /* GrowableArrayBase::_len is at 0 in JDK 17. */
        m_len = mem_find(f, mem_value(m_heaps));
        CHECK(m_len);

        put(m_high->bytes, mem_value(m_low) - 4096, 8);
        image_build(f, &m);
        expect_fail("inverted bounds", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeCache::_low_bound");

        *f = *f0;
        f->mems[m_low - f->mems].addr = 0xdead0000;
        image_build(f, &m);
        expect_fail("unreadable static", &m, -EIO, HOTSPOT_VMSTRUCTS_READ_VALUE, "CodeCache::_low_bound");

        if (m_len) {
                *f = *f0;
                put(f->mems[m_len - f->mems].bytes, 100000, 4);
                image_build(f, &m);
                expect_fail("too many heaps", &m, -EBADMSG, HOTSPOT_VMSTRUCTS_BAD_VALUE, "CodeCache::_heaps");
        }
}

/* Garbage anywhere: each byte of the layout variables and of the first
 * entries of each table set to values a bad pointer or size would have;
 * and the tables cut everywhere. Whatever it does, it says why. */
static void test_garbage(const struct fixture *f) {
        static const uint8_t values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
        struct hotspot_vmstructs vs;
        enum hotspot_vmstructs_reason reason;
        unsigned ok = 0, failed = 0;
        struct image m;

        image_build(f, &m);
        for (size_t i = 0; i < sizeof m.layout; i++)
                for (size_t v = 0; v < ELEMENTSOF(values); v++) {
                        uint8_t saved = m.layout[i];

                        m.layout[i] = values[v];
                        if (read_image(&m, &vs, &reason, NULL) == 0)
                                ok++;
                        else
                                failed++;
                        m.layout[i] = saved;
                }
        for (int t = 0; t < T_MAX; t++)
                for (size_t i = 0; i < 3 * f->layout[t][0]; i++) {
                        uint8_t *p = entry_at(&m, t, f, 0) + i, saved = *p;

                        *p = 0x80;
                        if (read_image(&m, &vs, &reason, NULL) == 0)
                                ok++;
                        else
                                failed++;
                        *p = saved;
                }
        for (size_t cut = 0; cut < m.regions[1].size; cut += 61) {
                size_t size = m.regions[1].size;

                m.regions[1].size = cut;
                CHECK(read_image(&m, &vs, &reason, NULL) < 0);
                m.regions[1].size = size;
        }
        printf("garbage: %u read, %u refused\n", ok, failed);
        CHECK(failed > 0);
        image_done(&m);
}

int main(int argc, char **argv) {
        _cleanup_free_ struct fixture *f = malloc(sizeof *f);
        int r;

        CHECK(f && argc > 1);
        if (!f || argc < 2)
                return 1;
        CHECK_STR_EQ(hotspot_symbol_name(HOTSPOT_SYM_STRUCTS), "gHotSpotVMStructs");
        CHECK(hotspot_symbol_name(_HOTSPOT_SYM_MAX) == NULL);
        CHECK_STR_EQ(hotspot_vmstructs_reason_name(_HOTSPOT_VMSTRUCTS_REASON_MAX), "unknown");
        for (unsigned i = 0; i < _HOTSPOT_VMSTRUCTS_REASON_MAX; i++)
                CHECK(hotspot_vmstructs_reason_name(i) != NULL);
        r = fixture_load(argv[1], f);
        CHECK_INT_EQ(r, 0);
        if (r < 0)
                TESTS_DONE();
        if (getenv("PROFD_HOTSPOT_SEED"))
                write_seed(f, getenv("PROFD_HOTSPOT_SEED"));
        test_jdk17(f);
        test_compact(f);
        test_superclass_loop(f);
        test_hostile_tables(f);
        test_hostile_statics(f);
        test_garbage(f);
        TESTS_DONE();
}
