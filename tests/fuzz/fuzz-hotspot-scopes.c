/* libFuzzer target: the nmethod debug-info decoder on bytes the JVM
 * controls. The input's first 12 bytes say the pc offset (int32), the
 * bytes of PcDescs and of metadata (u16 each), the format (1 byte), the
 * root check (1 byte), the cap (1 byte) and one byte spare; then come the
 * PcDescs (JDK 17's 16-byte layout), the metadata and the scopes data, each
 * in a buffer of its own exactly as long, so ASan sees any read past one.
 * Invariants: every failure a named reason with no chain; a chain within
 * the cap, its methods from the metadata, never NULL, bcis in range, the
 * outermost the root when checked; the same chain whatever the cap keeps
 * of it. */
#include <errno.h>

#include "fuzz.h"
#include "hotspot-scopes.h"

static uint8_t *copy(const uint8_t *p, size_t n) {
        uint8_t *b = malloc(n ? n : 1);

        if (!b)
                abort();
        memcpy(b, p, n);
        return b;
}

static bool in_metadata(const uint8_t *metadata, size_t size, uint64_t method) {
        for (size_t i = 0; i + 8 <= size; i += 8) {
                uint64_t v = 0;

                for (int k = 7; k >= 0; k--)
                        v = v << 8 | metadata[i + (size_t) k];
                if (v == method)
                        return true;
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct hotspot_scope chain[HOTSPOT_SCOPES_DEPTH_MAX], all[HOTSPOT_SCOPES_DEPTH_MAX];
        enum hotspot_scopes_reason reason = _HOTSPOT_SCOPES_REASON_MAX, reason_all;
        size_t n_pcs, n_meta, n = 99, depth = 99, n_all, depth_all, max;
        uint8_t *pcs, *meta, *rest;
        struct hotspot_scopes s;
        enum hotspot_lines_format format;
        uint64_t root = 0;
        bool check_root;
        int32_t pc;
        int r, r_all;

        if (size < 12)
                return 0;
        pc = (int32_t) ((uint32_t) data[0] | (uint32_t) data[1] << 8 | (uint32_t) data[2] << 16 |
                        (uint32_t) data[3] << 24);
        n_pcs = data[4] | (size_t) data[5] << 8;
        n_meta = data[6] | (size_t) data[7] << 8;
        format = data[8] & 1 ? HOTSPOT_LINES_UNSIGNED5_NO_ZERO : HOTSPOT_LINES_UNSIGNED5;
        check_root = data[9] & 1;
        max = data[10] % 20;
        data += 12;
        size -= 12;
        n_pcs = n_pcs < size ? n_pcs : size;
        n_meta = n_meta < size - n_pcs ? n_meta : size - n_pcs;
        pcs = copy(data, n_pcs);
        meta = copy(data + n_pcs, n_meta);
        rest = copy(data + n_pcs + n_meta, size - n_pcs - n_meta);
        /* the root: the metadata's first Metadata * when asked */
        if (check_root && n_meta >= 8)
                for (int k = 7; k >= 0; k--)
                        root = root << 8 | meta[k];
        s = (struct hotspot_scopes) {
                .pcs = pcs,
                .pcs_size = n_pcs,
                .pc_desc_size = 16,
                .pc_desc_pc_offset = 0,
                .pc_desc_scope_decode_offset = 4,
                .data = rest,
                .data_size = size - n_pcs - n_meta,
                .metadata = meta,
                .metadata_size = n_meta,
                .format = format,
        };

        r = hotspot_scopes_at(&s, pc, root, chain, max, &n, &depth, &reason);
        FUZZ_CHECK((unsigned) reason < _HOTSPOT_SCOPES_REASON_MAX);
        FUZZ_CHECK(strcmp(hotspot_scopes_reason_name(reason), "unknown") != 0);
        if (r < 0) {
                FUZZ_CHECK(r == -ENOENT || r == -EBADMSG || r == -EPROTONOSUPPORT);
                FUZZ_CHECK(reason != HOTSPOT_SCOPES_OK);
                FUZZ_CHECK(n == 0 && depth == 0);
        } else {
                FUZZ_CHECK(r == 0 && reason == HOTSPOT_SCOPES_OK);
                FUZZ_CHECK(n >= 1 && n <= max && n <= depth && depth <= HOTSPOT_SCOPES_DEPTH_MAX);
                for (size_t i = 0; i < n; i++) {
                        FUZZ_CHECK(chain[i].method != 0 && in_metadata(meta, n_meta, chain[i].method));
                        FUZZ_CHECK(chain[i].bci >= HOTSPOT_BCI_ENTRY && chain[i].bci <= UINT16_MAX - 1);
                }
                FUZZ_CHECK(root == 0 || chain[n - 1].method == root);
        }
        /* the whole chain: the capped one is its outermost part */
        r_all = hotspot_scopes_at(&s, pc, root, all, HOTSPOT_SCOPES_DEPTH_MAX, &n_all, &depth_all, &reason_all);
        if (max > 0) {
                FUZZ_CHECK(r_all == r && reason_all == reason);
                if (r == 0) {
                        FUZZ_CHECK(depth_all == depth && n_all == depth);
                        for (size_t i = 0; i < n; i++)
                                FUZZ_CHECK(chain[i].method == all[depth - n + i].method &&
                                           chain[i].bci == all[depth - n + i].bci);
                }
        }
        free(pcs);
        free(meta);
        free(rest);
        return 0;
}
