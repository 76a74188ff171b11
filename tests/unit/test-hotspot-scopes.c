/* The nmethod debug-info decoder on debug info encoded here as HotSpot's
 * DebugInformationRecorder writes it (JDK 17's CompressedWriteStream, and
 * the later JDKs' UNSIGNED5 without 0 bytes): the chain at a safepoint's
 * return address, at a leaf pc between two PcDescs, with and without
 * inlining, capped, and on hostile variants, each failing with its reason. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hotspot-scopes.h"
#include "macro.h"
#include "tests.h"

#define M0 UINT64_C(0x7f0000001000) /* the nmethod's own method */
#define M1 UINT64_C(0x7f0000002000)
#define M2 UINT64_C(0x7f0000003000)

struct stream {
        uint8_t b[4096];
        size_t n;
        enum hotspot_lines_format format;
};

/* CompressedWriteStream::write_int: low codes end a number, high codes
 * carry 6 bits each, the fifth byte whatever it is; the later format
 * shifts every byte up by one so none is 0. */
static void put(struct stream *s, uint32_t v) {
        const uint32_t x = s->format == HOTSPOT_LINES_UNSIGNED5_NO_ZERO ? 1 : 0, l = 256 - 64 - x;

        for (int i = 0;; i++) {
                if (v < l || i == 4) {
                        s->b[s->n++] = (uint8_t) (v + x);
                        return;
                }
                v -= l;
                s->b[s->n++] = (uint8_t) (l + (v % 64) + x);
                v >>= 6;
        }
}

/* One scope as DebugInformationRecorder::describe_scope writes it:
 * sender, method index, bci + 1, then the locals', expressions' and
 * monitors' offsets (0: none). Returns its decode offset. */
static uint32_t put_scope(struct stream *s, uint32_t sender, uint32_t index, int32_t bci) {
        uint32_t at = (uint32_t) s->n;

        put(s, sender);
        put(s, index);
        put(s, (uint32_t) (bci + 1));
        put(s, 0);
        put(s, 0);
        put(s, 0);
        return at;
}

struct fixture {
        struct stream data;
        uint8_t pcs[16 * 16];
        size_t n_pcs;
        uint8_t metadata[8 * 4];
        uint32_t outer, middle, inner;
};

static void put_u32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v) {
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

/* JDK 17's PcDesc: int _pc_offset, _scope_decode_offset, _obj_decode_offset, _flags. */
static void put_pc(struct fixture *f, int32_t pc, uint32_t decode) {
        uint8_t *p = f->pcs + 16 * f->n_pcs++;

        memset(p, 0, 16);
        put_u32(p, (uint32_t) pc);
        put_u32(p + 4, decode);
}

/* M0 at bci 10 calls M1 (inlined) at bci 300 (a two-byte number), which
 * calls M2 (inlined) at bci 7. PcDescs: the sentinel at -1; at 0x20 M0's
 * own scope; at 0x40 the three; at 0x60 none; the end sentinel. */
static void fixture_make(struct fixture *f, enum hotspot_lines_format format) {
        memset(f, 0, sizeof *f);
        f->data.format = format;
        /* the recorder's first byte, so no scope is at offset 0 */
        f->data.b[f->data.n++] = 0xff;
        f->outer = put_scope(&f->data, 0, 1, 10);
        f->middle = put_scope(&f->data, f->outer, 2, 300);
        f->inner = put_scope(&f->data, f->middle, 3, 7);
        put_u64(f->metadata, M0);
        put_u64(f->metadata + 8, M1);
        put_u64(f->metadata + 16, M2);
        put_u64(f->metadata + 24, UINT64_C(0x7f0000009000)); /* a Klass, say: never a scope's here */
        put_pc(f, -1, 0);
        put_pc(f, 0x20, f->outer);
        put_pc(f, 0x40, f->inner);
        put_pc(f, 0x60, 0);
        put_pc(f, INT32_MAX, 0);
}

static struct hotspot_scopes view(struct fixture *f) {
        return (struct hotspot_scopes) {
                .pcs = f->pcs,
                .pcs_size = 16 * f->n_pcs,
                .pc_desc_size = 16,
                .pc_desc_pc_offset = 0,
                .pc_desc_scope_decode_offset = 4,
                .data = f->data.b,
                .data_size = f->data.n,
                .metadata = f->metadata,
                .metadata_size = sizeof f->metadata,
                .format = f->data.format,
        };
}

static int at(struct fixture *f, int64_t pc, uint64_t root, struct hotspot_scope *chain, size_t max, size_t *n,
              size_t *depth, enum hotspot_scopes_reason *reason) {
        struct hotspot_scopes s = view(f);

        return hotspot_scopes_at(&s, pc, root, chain, max, n, depth, reason);
}

static void test_chains(enum hotspot_lines_format format) {
        struct fixture f;
        struct hotspot_scope chain[16];
        enum hotspot_scopes_reason reason;
        size_t n, depth;

        fixture_make(&f, format);
        /* a return address at the PcDesc: the three, innermost first */
        CHECK_INT_EQ(at(&f, 0x40, M0, chain, 16, &n, &depth, &reason), 0);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_OK);
        CHECK_INT_EQ(n, 3);
        CHECK_INT_EQ(depth, 3);
        CHECK(chain[0].method == M2 && chain[0].bci == 7);
        CHECK(chain[1].method == M1 && chain[1].bci == 300);
        CHECK(chain[2].method == M0 && chain[2].bci == 10);
        /* a leaf pc between two PcDescs: the next one's, as the JVM's
         * approximate lookup */
        CHECK_INT_EQ(at(&f, 0x21, M0, chain, 16, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 3);
        CHECK(chain[0].method == M2);
        /* M0's own scope, before it and at it */
        CHECK_INT_EQ(at(&f, 0x20, M0, chain, 16, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 1);
        CHECK(chain[0].method == M0 && chain[0].bci == 10);
        CHECK_INT_EQ(at(&f, 0, M0, chain, 16, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 1);
        /* the root not checked */
        CHECK_INT_EQ(at(&f, 0x40, 0, chain, 16, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 3);
        /* a cap keeps the outermost levels */
        CHECK_INT_EQ(at(&f, 0x40, M0, chain, 2, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 2);
        CHECK_INT_EQ(depth, 3);
        CHECK(chain[0].method == M1 && chain[1].method == M0);
        /* a PcDesc with no scope, and the end sentinel: no chain */
        CHECK_INT_EQ(at(&f, 0x60, M0, chain, 16, &n, &depth, &reason), -ENOENT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_SCOPE);
        CHECK_INT_EQ(n, 0);
        CHECK_INT_EQ(at(&f, 0x41, M0, chain, 16, &n, &depth, &reason), -ENOENT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_SCOPE);
        CHECK_INT_EQ(at(&f, 0x1000, M0, chain, 16, &n, &depth, &reason), -ENOENT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_SCOPE);
        /* past every PcDesc (no end sentinel) */
        f.n_pcs--;
        CHECK_INT_EQ(at(&f, 0x1000, M0, chain, 16, &n, &depth, &reason), -ENOENT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_PC);
        /* another nmethod's method as the root: not this one's chain */
        CHECK_INT_EQ(at(&f, 0x40, M1, chain, 16, &n, &depth, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_BAD_METHOD);
}

/* A scope at a method's entry: bci + 1 is 0. */
static void test_entry(void) {
        struct fixture f;
        struct hotspot_scope chain[4];
        enum hotspot_scopes_reason reason;
        uint32_t entry;
        size_t n, depth;

        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        entry = put_scope(&f.data, 0, 1, HOTSPOT_BCI_ENTRY);
        put_u32(f.pcs + 16 * 3 + 4, entry);
        CHECK_INT_EQ(at(&f, 0x60, M0, chain, 4, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 1);
        CHECK_INT_EQ(chain[0].bci, HOTSPOT_BCI_ENTRY);
}

static void expect_bad(struct fixture *f, int64_t pc, int r, enum hotspot_scopes_reason want, const char *what) {
        struct hotspot_scope chain[4];
        enum hotspot_scopes_reason reason;
        size_t n = 99, depth = 99;
        int got = at(f, pc, M0, chain, 4, &n, &depth, &reason);

        if (got != r || reason != want)
                fprintf(stderr, "%s: got %d %s\n", what, got, hotspot_scopes_reason_name(reason));
        CHECK_INT_EQ(got, r);
        CHECK_INT_EQ(reason, want);
        CHECK_INT_EQ(n, 0);
        CHECK_INT_EQ(depth, 0);
}

static void test_hostile(void) {
        struct fixture f;
        struct hotspot_scopes s;
        struct hotspot_scope chain[4];
        enum hotspot_scopes_reason reason;
        size_t n, depth;

        /* a sender at or after its callee: a loop */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        f.data.b[f.outer] = (uint8_t) f.outer;
        expect_bad(&f, 0x20, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "self sender");
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        f.data.b[f.middle] = (uint8_t) f.inner;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "later sender");
        /* a decode offset past the data */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        put_u32(f.pcs + 16 + 4, (uint32_t) f.data.n);
        expect_bad(&f, 0x20, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "offset past data");
        put_u32(f.pcs + 16 + 4, UINT32_MAX);
        expect_bad(&f, 0x20, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "offset far past data");
        /* the data cut inside the innermost scope's bci */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        f.data.n = f.inner + 2;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "cut");
        /* a number of five high bytes at the end */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        memset(f.data.b + f.inner, 0xff, 4);
        f.data.n = f.inner + 4;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "runs off");
        /* a 0 byte where the later format never writes one */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5_NO_ZERO);
        f.data.b[f.inner + 1] = 0;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "zero byte");
        /* a bci past any method's code */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        f.data.n = f.inner;
        put_scope(&f.data, f.middle, 3, 70000);
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_SCOPE, "bci");
        /* method index 0, past the metadata; a NULL Method* */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        f.data.b[f.inner + 1] = 0;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_METHOD, "index 0");
        f.data.b[f.inner + 1] = 5;
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_METHOD, "index past");
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        put_u64(f.metadata + 16, 0);
        expect_bad(&f, 0x40, -EBADMSG, HOTSPOT_SCOPES_BAD_METHOD, "NULL method");
        /* PcDescs out of order before the one found; a partial PcDesc */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        put_u32(f.pcs + 16, 0x50);
        expect_bad(&f, 0x55, -EBADMSG, HOTSPOT_SCOPES_BAD_PCS, "order");
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        s = view(&f);
        s.pcs_size -= 1;
        CHECK_INT_EQ(hotspot_scopes_at(&s, 0x40, M0, chain, 4, &n, &depth, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_BAD_PCS);
        /* layouts that are not a PcDesc's */
        s = view(&f);
        s.pc_desc_size = 4;
        CHECK_INT_EQ(hotspot_scopes_at(&s, 0x40, M0, chain, 4, &n, &depth, &reason), -EPROTONOSUPPORT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_LAYOUT);
        s = view(&f);
        s.pc_desc_scope_decode_offset = 13;
        CHECK_INT_EQ(hotspot_scopes_at(&s, 0x40, M0, chain, 4, &n, &depth, &reason), -EPROTONOSUPPORT);
        s = view(&f);
        s.pc_desc_pc_offset = UINT32_MAX;
        CHECK_INT_EQ(hotspot_scopes_at(&s, 0x40, M0, chain, 4, &n, &depth, &reason), -EPROTONOSUPPORT);
        /* nothing at all */
        s = (struct hotspot_scopes) { .pc_desc_size = 16, .pc_desc_scope_decode_offset = 4 };
        CHECK_INT_EQ(hotspot_scopes_at(&s, 0x40, M0, chain, 4, &n, &depth, &reason), -ENOENT);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_NO_PC);
}

/* A chain deeper than any JVM inlines: cut at the bound, not walked on. */
static void test_too_deep(void) {
        static struct fixture f;
        struct hotspot_scope chain[4];
        enum hotspot_scopes_reason reason;
        uint32_t prev = 0;
        size_t n, depth;

        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        for (unsigned i = 0; i <= HOTSPOT_SCOPES_DEPTH_MAX; i++)
                prev = put_scope(&f.data, prev, 1, 1);
        put_u32(f.pcs + 16 + 4, prev);
        CHECK_INT_EQ(at(&f, 0x20, M0, chain, 4, &n, &depth, &reason), -EBADMSG);
        CHECK_INT_EQ(reason, HOTSPOT_SCOPES_BAD_SCOPE);
        /* one less is a (strange) chain */
        fixture_make(&f, HOTSPOT_LINES_UNSIGNED5);
        prev = 0;
        for (unsigned i = 0; i < HOTSPOT_SCOPES_DEPTH_MAX; i++)
                prev = put_scope(&f.data, prev, 1, 1);
        put_u32(f.pcs + 16 + 4, prev);
        CHECK_INT_EQ(at(&f, 0x20, M0, chain, 4, &n, &depth, &reason), 0);
        CHECK_INT_EQ(n, 4);
        CHECK_INT_EQ(depth, HOTSPOT_SCOPES_DEPTH_MAX);
}

int main(void) {
        test_chains(HOTSPOT_LINES_UNSIGNED5);
        test_chains(HOTSPOT_LINES_UNSIGNED5_NO_ZERO);
        test_entry();
        test_hostile();
        test_too_deep();
        CHECK_STR_EQ(hotspot_scopes_reason_name(HOTSPOT_SCOPES_NO_SCOPE), "no-scope");
        CHECK_STR_EQ(hotspot_scopes_reason_name(_HOTSPOT_SCOPES_REASON_MAX), "unknown");
        TESTS_DONE();
}
