/* Decodes a HotSpot nmethod's debug info (PcDescs, scopes, metadata) into the inline chain at a pc. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "hotspot-names.h"

/* Levels of one inline chain decoded, at most: C2 inlines at most
 * MaxInlineLevel (15 in JDK 17) deep, C1 as deep; a chain longer than 64
 * is garbage, and the bound keeps a walk over it short. */
#define HOTSPOT_SCOPES_DEPTH_MAX 64u

/* InvocationEntryBci: a scope at a method's entry (before its first
 * bytecode: a synchronized method's lock, a stack banging check). */
#define HOTSPOT_BCI_ENTRY (-1)

/* Why no chain is given for a pc, or only part of one: one counter each
 * in the quality report, through hotspot-code's reasons. */
enum hotspot_scopes_reason {
        HOTSPOT_SCOPES_OK,
        HOTSPOT_SCOPES_NO_LAYOUT,      /* PcDesc's size or offsets are not described, or make no sense */
        HOTSPOT_SCOPES_BAD_PCS,        /* the PcDescs are not a whole number of them, or out of order */
        HOTSPOT_SCOPES_NO_PC,          /* no PcDesc at or after the pc */
        HOTSPOT_SCOPES_NO_SCOPE,       /* the pc's PcDesc records no scope (decode offset 0, a sentinel) */
        HOTSPOT_SCOPES_BAD_SCOPE,      /* a decode offset outside the data, a number that runs off it, a
                                        * sender not before its callee, a bci out of range, too deep */
        HOTSPOT_SCOPES_BAD_METHOD,     /* a method index 0 or past the metadata, a NULL Method*, or the
                                        * outermost scope not the nmethod's own method */
        _HOTSPOT_SCOPES_REASON_MAX,
};

/* "no-layout", "bad-pcs", ...: the names the quality report uses. */
const char *hotspot_scopes_reason_name(enum hotspot_scopes_reason reason);

/* What one nmethod's debug info is, as copied from the JVM: bytes only,
 * owned by the caller. */
struct hotspot_scopes {
        /* [scopes_pcs_offset, dependencies_offset) of the nmethod: PcDescs
         * of pc_desc_size bytes, in pc order, with int32 _pc_offset (from
         * code_begin) and _scope_decode_offset at the offsets given. */
        const uint8_t *pcs;
        size_t pcs_size;
        uint32_t pc_desc_size, pc_desc_pc_offset, pc_desc_scope_decode_offset;
        /* [scopes_data_begin, scopes_data_begin + size): the scopes */
        const uint8_t *data;
        size_t data_size;
        /* [metadata_offset, ...): Metadata * (8 bytes, little-endian) */
        const uint8_t *metadata;
        size_t metadata_size;
        /* the stream's encoding (hotspot_lines_format_of) */
        enum hotspot_lines_format format;
};

/* One level of a chain: the method and its bytecode index there
 * (HOTSPOT_BCI_ENTRY at its entry). */
struct hotspot_scope {
        uint64_t method;
        int32_t bci;
};

/* The inline chain at `pc_offset` (from the nmethod's code_begin), as the
 * JVM finds it for a frame: the PcDesc at the pc, or for a pc between two
 * (a sampled leaf), the first one after it (PcDescContainer's approximate
 * lookup); then that PcDesc's scope and its senders, each a stream of
 * UNSIGNED5 numbers (sender decode offset, method index into the
 * metadata, bci + 1, then what locals and monitors need, not read).
 * `root_method`: the nmethod's own Method*, which the outermost scope must
 * be (0: not checked).
 *
 * Fills ret[0..*ret_n) innermost first with the outermost `max` levels
 * (the method the code belongs to is never dropped; a deeper chain loses
 * its innermost levels, *ret_depth says how many there were). Returns 0;
 * -ENOENT (NO_PC, NO_SCOPE: the JVM has no chain there), -EBADMSG
 * (garbage: *ret_reason says which), -EPROTONOSUPPORT (NO_LAYOUT). Reads
 * nothing outside the given buffers whatever they hold. */
int hotspot_scopes_at(const struct hotspot_scopes *s, int64_t pc_offset, uint64_t root_method,
                      struct hotspot_scope *ret, size_t max, size_t *ret_n, size_t *ret_depth,
                      enum hotspot_scopes_reason *ret_reason);

/* hotspot_scopes_at's second half: the chain of the scope at decode
 * offset `decode` (a PcDesc's), with the same results. */
int hotspot_scopes_chain(const struct hotspot_scopes *s, uint32_t decode, uint64_t root_method,
                         struct hotspot_scope *ret, size_t max, size_t *ret_n, size_t *ret_depth,
                         enum hotspot_scopes_reason *ret_reason);

/* PcDesc i's pc offset and scope decode offset: 0; -ENOENT past the last;
 * -EBADMSG when the layout or the array's size is not a PcDesc's. For a
 * walk over every scope of an nmethod (the methods it inlined). */
int hotspot_scopes_pc_desc(const struct hotspot_scopes *s, size_t i, int32_t *ret_pc, uint32_t *ret_decode);
