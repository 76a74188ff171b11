/* HotSpot's naming hooks on a memory image built here with JDK 17's
 * offsets: the Method of fuzz-hotspot-names' seed (com.example.Outer$Inner
 * .spin, the page test-hotspot-names builds), an nmethod of it whose debug
 * info has spin inlined in itself, and a stub. Named as the daemon names
 * them (the hooks of hotspot_runtime and hotspot_code_runtime), the reuse
 * checks (another compile id at the nmethod's address), the identities
 * the store keeps, and hostile variants of the nmethod, each failing or
 * falling back to the method alone with its reason. */
#include <errno.h>
#include <stdlib.h>

#include "hotspot-code.h"
#include "hotspot-jdk17.h"
#include "hotspot.h"
#include "macro.h"
#include "tests.h"

#define METHOD UINT64_C(0x1000)        /* the seed's page: the Method first */
#define NMETHOD UINT64_C(0x10000)
#define STUB UINT64_C(0x12000)
#define NAMES UINT64_C(0x14000)
#define IMAGE_END UINT64_C(0x15000)

/* The nmethod's layout, from the blob: code, then metadata, scopes data,
 * PcDescs, dependencies. */
#define CODE_BEGIN 0x200
#define METADATA 0x300

static uint8_t image[IMAGE_END];
static uint32_t deps_offset;   /* the nmethod's _dependencies_offset as made */

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        (void) userdata;
        if (addr < 0x1000 || addr > IMAGE_END || size > IMAGE_END - addr)
                return -EIO;
        memcpy(buf, image + addr, size);
        return 0;
}

static void put(uint64_t addr, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                image[addr + i] = (uint8_t) (v >> (8 * i));
}

/* JDK 17's CompressedWriteStream::write_int. */
static size_t put_int(uint64_t addr, uint32_t v) {
        size_t n = 0;

        for (int i = 0;; i++) {
                if (v < 192 || i == 4) {
                        image[addr + n++] = (uint8_t) v;
                        return n;
                }
                v -= 192;
                image[addr + n++] = (uint8_t) (192 + v % 64);
                v >>= 6;
        }
}

/* JDK 17's offsets, as test-hotspot-jvm reads them. */
static const struct hotspot_vmstructs vs = {
        .version_major = 17,
        .blob_size = 104,
        .blob_name = 96,
        .blob_code_begin = 32,
        .blob_code_offset = HOTSPOT_NO_FIELD,
        .nmethod_size = 352,
        .nmethod_method = 112,
        .nmethod_compile_id = 304,
        .nmethod_comp_level = 308,
        .nmethod_metadata_offset = 260,
        .nmethod_scopes_pcs_offset = 268,
        .nmethod_dependencies_offset = 272,
        .nmethod_scopes_data_begin = 120,
        .nmethod_scopes_data_offset = HOTSPOT_NO_FIELD,
        .pc_desc_size = 16,
        .pc_desc_pc_offset = 0,
        .pc_desc_scope_decode_offset = 4,
        HOTSPOT_JDK17_NAME_FIELDS,
};

/* spin at bci 4 inlining spin at bci 10; PcDescs at -1, 0x10 (the outer
 * scope alone), 0x20 (the two), 0x30 (none), the end. */
static void image_make(const char *seed) {
        FILE *f = fopen(seed, "re");
        uint64_t data, pcs, at;
        uint32_t outer, inner;

        memset(image, 0, sizeof image);
        CHECK(f && fread(image + METHOD, 1, 4096, f) == 4096);
        if (f)
                fclose(f);
        memcpy(image + NAMES, "nmethod", 8);
        memcpy(image + NAMES + 16, "StubRoutines (1)", 17);

        put(NMETHOD + vs.blob_name, NAMES, 8);
        put(NMETHOD + vs.blob_code_begin, NMETHOD + CODE_BEGIN, 8);
        put(NMETHOD + vs.nmethod_method, METHOD, 8);
        put(NMETHOD + vs.nmethod_compile_id, 7, 4);
        put(NMETHOD + vs.nmethod_comp_level, 4, 4);
        put(NMETHOD + vs.nmethod_metadata_offset, METADATA, 4);
        put(NMETHOD + METADATA, METHOD, 8);
        data = METADATA + 8;
        put(NMETHOD + vs.nmethod_scopes_data_begin, NMETHOD + data, 8);
        at = NMETHOD + data;
        image[at++] = 0xff;
        outer = (uint32_t) (at - NMETHOD - data);
        for (uint32_t v, i = 0; i < 6; i++)
                v = (uint32_t[]) { 0, 1, 4 + 1, 0, 0, 0 }[i], at += put_int(at, v);
        inner = (uint32_t) (at - NMETHOD - data);
        for (uint32_t v, i = 0; i < 6; i++)
                v = (uint32_t[]) { outer, 1, 10 + 1, 0, 0, 0 }[i], at += put_int(at, v);
        pcs = (at - NMETHOD + 3) & ~3ULL;
        put(NMETHOD + vs.nmethod_scopes_pcs_offset, pcs, 4);
        for (unsigned i = 0; i < 5; i++) {
                static const int32_t pc[] = { -1, 0x10, 0x20, 0x30, INT32_MAX };
                const uint32_t decode[] = { 0, outer, inner, 0, 0 };

                put(NMETHOD + pcs + 16 * i, (uint32_t) pc[i], 4);
                put(NMETHOD + pcs + 16 * i + 4, decode[i], 4);
        }
        deps_offset = (uint32_t) (pcs + 16 * 5);
        put(NMETHOD + vs.nmethod_dependencies_offset, deps_offset, 4);

        put(STUB + vs.blob_name, NAMES + 16, 8);
        put(STUB + vs.blob_code_begin, STUB + 0x80, 8);
}

static const struct unwind_runtime_found *found_make(void) {
        static struct unwind_runtime_found found = { .id = UNWIND_RUNTIME_HOTSPOT };
        struct hotspot_found_names names;

        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                names.symbols[s] = 0x7000 + 8 * s;
        memcpy(found.names, &names, sizeof names);
        hotspot_code_put_tables(names.symbols, &vs);
        return &found;
}

static int blob_read(uint64_t addr, unwind_runtime_code **code, unsigned *reason) {
        size_t bytes = 0;

        *code = NULL;
        *reason = 99;
        return hotspot_code_runtime.code_read(found_make(), 0, image_read, NULL, addr, code, &bytes, reason);
}

static void test_method(void) {
        unwind_runtime_code *code = NULL;
        struct unwind_runtime_name name;
        unsigned reason = 99;
        size_t bytes = 0;

        CHECK_INT_EQ(hotspot_runtime.code_read(found_make(), 0, image_read, NULL, METHOD, &code, &bytes, &reason), 0);
        if (!code)
                return;
        hotspot_runtime.code_name(code, 4, &name, &reason);
        CHECK_STR_EQ(name.function, "com.example.Outer$Inner.spin");
        CHECK_STR_EQ(name.file, "Outer.java");
        CHECK_STR_EQ(name.module, "Outer.java");
        CHECK_INT_EQ(name.line, 11);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        /* stable across processes and profd versions: pinned (FNV-1a over
         * "com.example.Outer$Inner\0spin\0(I)I\0", then splitmix64's finalizer,
         * computed apart from the code) */
        CHECK(name.identity == hotspot_method_identity("com.example.Outer$Inner", "spin", "(I)I"));
        CHECK(hotspot_method_identity("com.example.Outer$Inner", "spin", "(I)I") == UINT64_C(0x21d1fa27d74c5513));
        CHECK_INT_EQ(hotspot_runtime.code_same(found_make(), 0, image_read, NULL, METHOD, code), 1);
        /* another method there (its name index moved): not the same */
        image[METHOD + 0x60 + 34] ^= 1;
        CHECK_INT_EQ(hotspot_runtime.code_same(found_make(), 0, image_read, NULL, METHOD, code), 0);
        image[METHOD + 0x60 + 34] ^= 1;
        hotspot_runtime.code_free(code);
        /* nothing there */
        CHECK(hotspot_runtime.code_read(found_make(), 0, image_read, NULL, 0x9000, &code, &bytes, &reason) < 0);
        CHECK(reason == HOTSPOT_CODE_READ_METHOD || reason == HOTSPOT_CODE_BAD_METHOD);
}

static void test_nmethod(void) {
        unwind_runtime_code *code;
        struct unwind_runtime_name name, alone;
        unsigned reason;

        CHECK_INT_EQ(blob_read(NMETHOD, &code, &reason), 0);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        if (!code)
                return;
        /* at the PcDesc of the two, and before it (a leaf between two) */
        for (uint32_t off = CODE_BEGIN + 0x11; off <= CODE_BEGIN + 0x20; off += 0xf) {
                hotspot_code_runtime.code_name(code, off, &name, &reason);
                CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
                CHECK_STR_EQ(name.function, "com.example.Outer$Inner.spin");
                CHECK_INT_EQ(name.n_lines, 2);
                CHECK_STR_EQ(name.lines[0].function, "com.example.Outer$Inner.spin");
                CHECK_INT_EQ(name.lines[0].line, 13);
                CHECK_INT_EQ(name.lines[1].line, 11);
                CHECK_INT_EQ(name.line, 11);
                /* a chain is a location of its own */
                CHECK(name.identity != hotspot_method_identity("com.example.Outer$Inner", "spin", "(I)I"));
        }
        /* the outer scope alone: the method's location at its line */
        hotspot_code_runtime.code_name(code, CODE_BEGIN + 0x10, &name, &reason);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        CHECK_INT_EQ(name.n_lines, 0);
        CHECK_INT_EQ(name.line, 11);
        CHECK(name.identity == hotspot_method_identity("com.example.Outer$Inner", "spin", "(I)I"));
        /* no scope at the pc: the method alone, counted, its own location */
        hotspot_code_runtime.code_name(code, CODE_BEGIN + 0x21, &alone, &reason);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_NO_SCOPE);
        CHECK_STR_EQ(alone.function, "com.example.Outer$Inner.spin");
        CHECK_INT_EQ(alone.n_lines, 0);
        CHECK_INT_EQ(alone.line, 0);
        CHECK(alone.identity != name.identity);
        /* before the code: the sentinel's, as the JVM; past 64 KiB */
        hotspot_code_runtime.code_name(code, 0, &name, &reason);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_NO_SCOPE);
        hotspot_code_runtime.code_name(code, 0xffff, &name, &reason);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_FAR_OFFSET);
        CHECK_STR_EQ(name.function, "com.example.Outer$Inner.spin");

        /* reuse: the same head is the same; a recompile there is not */
        CHECK_INT_EQ(hotspot_code_runtime.code_same(found_make(), 0, image_read, NULL, NMETHOD, code), 1);
        put(NMETHOD + vs.nmethod_compile_id, 8, 4);
        CHECK_INT_EQ(hotspot_code_runtime.code_same(found_make(), 0, image_read, NULL, NMETHOD, code), 0);
        put(NMETHOD + vs.nmethod_compile_id, 7, 4);
        hotspot_code_runtime.code_free(code);
}

static void test_stub(void) {
        unwind_runtime_code *code;
        struct unwind_runtime_name name;
        unsigned reason;

        CHECK_INT_EQ(blob_read(STUB, &code, &reason), 0);
        if (!code)
                return;
        hotspot_code_runtime.code_name(code, 0x90, &name, &reason);
        CHECK_STR_EQ(name.function, "[jvm] StubRoutines (1)");
        CHECK_STR_EQ(name.module, "[jvm]");
        CHECK(!name.file);
        CHECK_INT_EQ(reason, HOTSPOT_CODE_OK);
        CHECK_INT_EQ(hotspot_code_runtime.code_same(found_make(), 0, image_read, NULL, STUB, code), 1);
        hotspot_code_runtime.code_free(code);
}

/* Hostile heads: a reason, never a name that is not one. */
static void expect_blob_fails(const char *what, unsigned want) {
        unwind_runtime_code *code;
        unsigned reason;
        int r = blob_read(NMETHOD, &code, &reason);

        if (r >= 0 || reason != want)
                fprintf(stderr, "%s: %d %s\n", what, r, hotspot_code_reason_name(reason));
        CHECK(r < 0);
        CHECK(!code);
        CHECK_INT_EQ(reason, want);
        if (code)
                hotspot_code_runtime.code_free(code);
}

/* Hostile debug info: the method alone, with the reason. */
static void expect_alone(const char *what, uint32_t off, unsigned want) {
        unwind_runtime_code *code;
        struct unwind_runtime_name name;
        unsigned reason;

        CHECK_INT_EQ(blob_read(NMETHOD, &code, &reason), 0);
        if (!code)
                return;
        hotspot_code_runtime.code_name(code, off, &name, &reason);
        if (reason != want)
                fprintf(stderr, "%s: %s\n", what, hotspot_code_reason_name(reason));
        CHECK_INT_EQ(reason, want);
        CHECK_STR_EQ(name.function, "com.example.Outer$Inner.spin");
        CHECK_INT_EQ(name.n_lines, 0);
        CHECK_INT_EQ(name.line, 0);
        hotspot_code_runtime.code_free(code);
}

static void test_hostile(const char *seed) {
        unwind_runtime_code *code;
        unsigned reason;

        image_make(seed);
        put(NMETHOD + vs.blob_name, 0, 8);
        expect_blob_fails("NULL name", HOTSPOT_CODE_BAD_BLOB);
        put(NMETHOD + vs.blob_name, 0x900000, 8);
        expect_blob_fails("unmapped name", HOTSPOT_CODE_READ_BLOB);
        put(NMETHOD + vs.blob_name, NAMES + 1, 8);
        memcpy(image + NAMES + 1, "me\tthod", 8);
        expect_blob_fails("unprintable name", HOTSPOT_CODE_BAD_BLOB);
        image_make(seed);
        put(NMETHOD + vs.blob_code_begin, NMETHOD + 8, 8);
        expect_blob_fails("code inside the header", HOTSPOT_CODE_BAD_BLOB);
        put(NMETHOD + vs.blob_code_begin, NMETHOD - 8, 8);
        expect_blob_fails("code before the blob", HOTSPOT_CODE_BAD_BLOB);
        image_make(seed);
        put(NMETHOD + vs.nmethod_method, 0x9000, 8);
        expect_blob_fails("no Method", HOTSPOT_CODE_READ_METHOD);
        put(NMETHOD + vs.nmethod_method, NMETHOD, 8);
        CHECK(blob_read(NMETHOD, &code, &reason) < 0);
        CHECK(reason == HOTSPOT_CODE_READ_METHOD || reason == HOTSPOT_CODE_BAD_METHOD);
        /* an nmethod at the image's end: its head does not read whole */
        CHECK(hotspot_code_runtime.code_read(found_make(), 0, image_read, NULL, IMAGE_END - 200, &code,
                                             &(size_t) { 0 }, &reason) < 0);

        /* debug info out of order, too large, unreadable, not decoding */
        image_make(seed);
        put(NMETHOD + vs.nmethod_scopes_pcs_offset, METADATA - 8, 4);
        expect_alone("pcs before data", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
        put(NMETHOD + vs.nmethod_dependencies_offset, 0x7fffffff, 4);
        expect_alone("huge", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
        put(NMETHOD + vs.nmethod_dependencies_offset, 0x5000, 4);
        expect_alone("past the image", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
        put(NMETHOD + vs.nmethod_dependencies_offset, deps_offset - 1, 4);
        expect_alone("partial PcDesc", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
        put(NMETHOD + METADATA, 0x9000, 8);    /* the scopes' method: not the nmethod's */
        expect_alone("another root", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
        put(NMETHOD + vs.nmethod_scopes_data_begin, NMETHOD + METADATA + 4, 8);
        expect_alone("metadata not words", CODE_BEGIN + 0x20, HOTSPOT_CODE_BAD_SCOPE);
        image_make(seed);
}

int main(int argc, char **argv) {
        const char *seed = argc > 1 ? argv[1] : "jdk17-method";

        image_make(seed);
        test_method();
        test_nmethod();
        test_stub();
        test_hostile(seed);
        CHECK_STR_EQ(hotspot_code_reason_name(HOTSPOT_CODE_NO_SCOPE), "no-scope");
        CHECK(hotspot_code_reason_unnamed(HOTSPOT_CODE_BAD_BLOB) && !hotspot_code_reason_unnamed(HOTSPOT_CODE_NO_LINE));
        TESTS_DONE();
}
