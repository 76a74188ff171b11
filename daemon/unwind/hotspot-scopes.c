/* The nmethod debug-info decoder: PcDesc lookup and the scope chain, every offset, number and loop bounded. */
#include "hotspot-scopes.h"

#include <errno.h>
#include <stdbool.h>

#include "bytecursor.h"
#include "macro.h"

const char *hotspot_scopes_reason_name(enum hotspot_scopes_reason reason) {
        static const char *const names[_HOTSPOT_SCOPES_REASON_MAX] = {
                [HOTSPOT_SCOPES_OK] = "ok",
                [HOTSPOT_SCOPES_NO_LAYOUT] = "no-layout",
                [HOTSPOT_SCOPES_BAD_PCS] = "bad-pcs",
                [HOTSPOT_SCOPES_NO_PC] = "no-pc",
                [HOTSPOT_SCOPES_NO_SCOPE] = "no-scope",
                [HOTSPOT_SCOPES_BAD_SCOPE] = "bad-scope",
                [HOTSPOT_SCOPES_BAD_METHOD] = "bad-method",
        };

        return (unsigned) reason < _HOTSPOT_SCOPES_REASON_MAX ? names[reason] : "unknown";
}

static uint64_t le_at(const uint8_t *p, size_t n) {
        struct bytecursor c = bytecursor_make(p, n);

        return bytecursor_fixed_le(&c, n);
}

/* The scope decode offset of the PcDesc for pc_offset: the first, in the
 * array's (pc) order, whose pc is at or after it. The array must be in
 * order up to there: a PcDesc before the one found with a larger pc than
 * its successor means the bytes are not PcDescs. */
static int find_pc_desc(const struct hotspot_scopes *s, int64_t pc_offset, uint32_t *ret_decode,
                        enum hotspot_scopes_reason *ret_reason) {
        int64_t prev = INT64_MIN;

        for (size_t at = 0; at + s->pc_desc_size <= s->pcs_size; at += s->pc_desc_size) {
                int32_t pc = (int32_t) le_at(s->pcs + at + s->pc_desc_pc_offset, 4);

                if (pc < prev) {
                        *ret_reason = HOTSPOT_SCOPES_BAD_PCS;
                        return -EBADMSG;
                }
                prev = pc;
                if (pc >= pc_offset) {
                        *ret_decode = (uint32_t) le_at(s->pcs + at + s->pc_desc_scope_decode_offset, 4);
                        return 0;
                }
        }
        *ret_reason = HOTSPOT_SCOPES_NO_PC;
        return -ENOENT;
}

/* Whether the layout is a PcDesc's: JDK 17's is 16 bytes of four ints;
 * one that puts an int outside it, or is not a few ints, is not one. */
static bool layout_ok(const struct hotspot_scopes *s) {
        return s->pc_desc_size >= 8 && s->pc_desc_size <= 64 && s->pc_desc_pc_offset <= s->pc_desc_size - 4 &&
                s->pc_desc_scope_decode_offset <= s->pc_desc_size - 4;
}

int hotspot_scopes_chain(const struct hotspot_scopes *s, uint32_t decode, uint64_t root_method,
                         struct hotspot_scope *ret, size_t max, size_t *ret_n, size_t *ret_depth,
                         enum hotspot_scopes_reason *ret_reason) {
        struct hotspot_scope chain[HOTSPOT_SCOPES_DEPTH_MAX];
        size_t depth = 0, n_metadata = s->metadata_size / 8, keep;

        *ret_reason = HOTSPOT_SCOPES_OK;
        *ret_n = *ret_depth = 0;
        if (max == 0) {
                *ret_reason = HOTSPOT_SCOPES_NO_LAYOUT;
                return -EPROTONOSUPPORT;
        }
        /* DebugInformationRecorder::serialized_null: the sentinels at both
         * ends of the array, and PcDescs of pcs with no debug info. */
        if (decode == 0) {
                *ret_reason = HOTSPOT_SCOPES_NO_SCOPE;
                return -ENOENT;
        }
        /* The recorder writes the caller's scope before its callee's (and
         * shares only scopes written before), so each sender's offset is
         * below the scope's: the walk ends, at 0, within the data. */
        while (decode != 0) {
                uint32_t sender, index, bci1;
                size_t pos = decode;
                uint64_t method;

                if (decode >= s->data_size || depth == HOTSPOT_SCOPES_DEPTH_MAX ||
                    hotspot_unsigned5_read(s->data, s->data_size, &pos, s->format, &sender) < 0 ||
                    hotspot_unsigned5_read(s->data, s->data_size, &pos, s->format, &index) < 0 ||
                    hotspot_unsigned5_read(s->data, s->data_size, &pos, s->format, &bci1) < 0 ||
                    sender >= decode ||
                    /* a bci is inside a method's 65,535 bytes of bytecode,
                     * or the entry's -1 */
                    bci1 > UINT16_MAX) {
                        *ret_reason = HOTSPOT_SCOPES_BAD_SCOPE;
                        return -EBADMSG;
                }
                /* metadata_at(index): 1-based, 0 is NULL */
                if (index == 0 || index > n_metadata ||
                    (method = le_at(s->metadata + 8 * (size_t) (index - 1), 8)) == 0) {
                        *ret_reason = HOTSPOT_SCOPES_BAD_METHOD;
                        return -EBADMSG;
                }
                chain[depth++] = (struct hotspot_scope) { .method = method, .bci = (int32_t) bci1 - 1 };
                decode = sender;
        }
        if (root_method != 0 && chain[depth - 1].method != root_method) {
                *ret_reason = HOTSPOT_SCOPES_BAD_METHOD;
                return -EBADMSG;
        }
        keep = MIN(depth, max);
        for (size_t i = 0; i < keep; i++)
                ret[i] = chain[depth - keep + i];
        *ret_n = keep;
        *ret_depth = depth;
        return 0;
}

int hotspot_scopes_at(const struct hotspot_scopes *s, int64_t pc_offset, uint64_t root_method,
                      struct hotspot_scope *ret, size_t max, size_t *ret_n, size_t *ret_depth,
                      enum hotspot_scopes_reason *ret_reason) {
        uint32_t decode;
        int r;

        *ret_reason = HOTSPOT_SCOPES_OK;
        *ret_n = *ret_depth = 0;
        if (!layout_ok(s) || max == 0) {
                *ret_reason = HOTSPOT_SCOPES_NO_LAYOUT;
                return -EPROTONOSUPPORT;
        }
        if (s->pcs_size % s->pc_desc_size != 0) {
                *ret_reason = HOTSPOT_SCOPES_BAD_PCS;
                return -EBADMSG;
        }
        r = find_pc_desc(s, pc_offset, &decode, ret_reason);
        if (r < 0)
                return r;
        return hotspot_scopes_chain(s, decode, root_method, ret, max, ret_n, ret_depth, ret_reason);
}

int hotspot_scopes_pc_desc(const struct hotspot_scopes *s, size_t i, int32_t *ret_pc, uint32_t *ret_decode) {
        size_t at;

        if (!layout_ok(s) || s->pcs_size % s->pc_desc_size != 0)
                return -EBADMSG;
        if (i >= s->pcs_size / s->pc_desc_size)
                return -ENOENT;
        at = i * s->pc_desc_size;
        *ret_pc = (int32_t) le_at(s->pcs + at + s->pc_desc_pc_offset, 4);
        *ret_decode = (uint32_t) le_at(s->pcs + at + s->pc_desc_scope_decode_offset, 4);
        return 0;
}
