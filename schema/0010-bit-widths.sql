-- profd store, version 10: widths in bits (issue 14). A block's fields
-- were as wide as their largest offset needed in whole bytes; they are now
-- as wide as it needs in bits, entry after entry with no padding: on the
-- generated busy day the entries take 49.8 MiB instead of 73.8 (a span
-- offset of 0-29 takes 5 bits, not 8; a state of 0-2 two, not 8).
--
-- `widths` of such a block holds seven 7-bit widths (0-64 bits, the
-- stack's in the lowest bits, the span offset's in bits 42-48) and bit 49
-- set. Blocks written before keep their 4-bit widths in bytes and bit 49
-- clear; read as bits (8 times their width), their layout is the same, so
-- profd reads both with the same code and nothing is rewritten: the
-- retention steps that rewrite blocks (spans, merges) write the new form.
--
-- The samples view, for ad-hoc SQL and tests, decodes both forms. Field f
-- of entry i starts at bit o = i * (sum of the widths) + (widths of the
-- fields before f), so in byte o / 8 at bit o % 8, and takes
-- ceil((o % 8 + width) / 8) bytes, nine at most. The hex digits are padded
-- with nine zero bytes, so that a field at the blob's end reads zeros past
-- it. Each block's widths and its fields' places in an entry are worked
-- out once, where the recursion starts, and copied to its entries (written
-- out in each entry's expressions instead, they cost three times as much: 29 s instead of 9.6 for a 2-hour store).
DROP VIEW samples;
CREATE VIEW samples AS
WITH RECURSIVE e(drain_id, process_id, kind, n, stack_base, tid_base, state_base, peer_base, cgroup_base, value_base, h, w0, w1, w2, w3, w4, w5, w6, f0, f1, f2, f3, f4, f5, f6, eb, i) AS (
        SELECT drain_id, process_id, kind, n, stack_base, tid_base, state_base, peer_base, cgroup_base, value_base, h,
               w0, w1, w2, w3, w4, w5, w6, 0 AS f0, w0 AS f1, w0 + w1 AS f2, w0 + w1 + w2 AS f3, w0 + w1 + w2 + w3 AS f4, w0 + w1 + w2 + w3 + w4 AS f5, w0 + w1 + w2 + w3 + w4 + w5 AS f6,
               w0 + w1 + w2 + w3 + w4 + w5 + w6, 0
        FROM (SELECT drain_id, process_id, kind, n, stack_base, tid_base, state_base, peer_base, cgroup_base,
                     value_base, CAST(coalesce(hex(entries), '') || '000000000000000000' AS BLOB) AS h,
                       CASE WHEN widths >> 49 THEN (widths >> 0) & 127 ELSE ((widths >> 0) & 15) * 8 END AS w0,
                       CASE WHEN widths >> 49 THEN (widths >> 7) & 127 ELSE ((widths >> 4) & 15) * 8 END AS w1,
                       CASE WHEN widths >> 49 THEN (widths >> 14) & 127 ELSE ((widths >> 8) & 15) * 8 END AS w2,
                       CASE WHEN widths >> 49 THEN (widths >> 21) & 127 ELSE ((widths >> 12) & 15) * 8 END AS w3,
                       CASE WHEN widths >> 49 THEN (widths >> 28) & 127 ELSE ((widths >> 16) & 15) * 8 END AS w4,
                       CASE WHEN widths >> 49 THEN (widths >> 35) & 127 ELSE ((widths >> 20) & 15) * 8 END AS w5,
                       CASE WHEN widths >> 49 THEN (widths >> 42) & 127 ELSE ((widths >> 24) & 15) * 8 END AS w6
              FROM sample_blocks WHERE n > 0)
        UNION ALL
        SELECT drain_id, process_id, kind, n, stack_base, tid_base, state_base, peer_base, cgroup_base, value_base, h, w0, w1, w2, w3, w4, w5, w6, f0, f1, f2, f3, f4, f5, f6, eb, i + 1
        FROM e WHERE i + 1 < n),
b AS (
        SELECT *, (i * eb + f0) >> 3 AS b0, (i * eb + f0) & 7 AS s0, (((i * eb + f0) & 7) + w0 + 7) >> 3 AS c0,
               (i * eb + f1) >> 3 AS b1, (i * eb + f1) & 7 AS s1, (((i * eb + f1) & 7) + w1 + 7) >> 3 AS c1,
               (i * eb + f2) >> 3 AS b2, (i * eb + f2) & 7 AS s2, (((i * eb + f2) & 7) + w2 + 7) >> 3 AS c2,
               (i * eb + f3) >> 3 AS b3, (i * eb + f3) & 7 AS s3, (((i * eb + f3) & 7) + w3 + 7) >> 3 AS c3,
               (i * eb + f4) >> 3 AS b4, (i * eb + f4) & 7 AS s4, (((i * eb + f4) & 7) + w4 + 7) >> 3 AS c4,
               (i * eb + f5) >> 3 AS b5, (i * eb + f5) & 7 AS s5, (((i * eb + f5) & 7) + w5 + 7) >> 3 AS c5,
               (i * eb + f6) >> 3 AS b6, (i * eb + f6) & 7 AS s6, (((i * eb + f6) & 7) + w6 + 7) >> 3 AS c6
        FROM e),
d AS (
        SELECT drain_id, process_id, kind,
               stack_base + CASE WHEN w0 = 0 THEN 0 ELSE ((((CASE WHEN c0 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c0 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c0 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c0 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c0 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c0 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c0 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c0 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s0) & ~(-1 << (64 - s0)))
                 | CASE WHEN c0 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b0 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b0 + 8) + 2, 1)) - 1) << (64 - s0) ELSE 0 END) & ~(-1 << w0) END AS stack_id,
               tid_base + CASE WHEN w1 = 0 THEN 0 ELSE ((((CASE WHEN c1 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c1 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c1 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c1 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c1 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c1 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c1 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c1 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s1) & ~(-1 << (64 - s1)))
                 | CASE WHEN c1 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b1 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b1 + 8) + 2, 1)) - 1) << (64 - s1) ELSE 0 END) & ~(-1 << w1) END AS tid,
               state_base + CASE WHEN w2 = 0 THEN 0 ELSE ((((CASE WHEN c2 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c2 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c2 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c2 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c2 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c2 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c2 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c2 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s2) & ~(-1 << (64 - s2)))
                 | CASE WHEN c2 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b2 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b2 + 8) + 2, 1)) - 1) << (64 - s2) ELSE 0 END) & ~(-1 << w2) END AS state,
               peer_base + CASE WHEN w3 = 0 THEN 0 ELSE ((((CASE WHEN c3 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c3 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c3 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c3 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c3 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c3 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c3 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c3 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s3) & ~(-1 << (64 - s3)))
                 | CASE WHEN c3 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b3 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b3 + 8) + 2, 1)) - 1) << (64 - s3) ELSE 0 END) & ~(-1 << w3) END AS peer_tid,
               cgroup_base + CASE WHEN w4 = 0 THEN 0 ELSE ((((CASE WHEN c4 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c4 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c4 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c4 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c4 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c4 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c4 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c4 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s4) & ~(-1 << (64 - s4)))
                 | CASE WHEN c4 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b4 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b4 + 8) + 2, 1)) - 1) << (64 - s4) ELSE 0 END) & ~(-1 << w4) END AS cgroup_id,
               value_base + CASE WHEN w5 = 0 THEN 0 ELSE ((((CASE WHEN c5 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c5 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c5 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c5 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c5 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c5 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c5 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c5 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s5) & ~(-1 << (64 - s5)))
                 | CASE WHEN c5 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b5 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b5 + 8) + 2, 1)) - 1) << (64 - s5) ELSE 0 END) & ~(-1 << w5) END AS value,
               CASE WHEN w6 = 0 THEN 0 ELSE ((((CASE WHEN c6 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                   | CASE WHEN c6 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                   | CASE WHEN c6 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                   | CASE WHEN c6 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                   | CASE WHEN c6 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                   | CASE WHEN c6 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                   | CASE WHEN c6 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                   | CASE WHEN c6 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 7) + 2, 1)) - 1) << 56 ELSE 0 END) >> s6) & ~(-1 << (64 - s6)))
                 | CASE WHEN c6 > 8 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (b6 + 8) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (b6 + 8) + 2, 1)) - 1) << (64 - s6) ELSE 0 END) & ~(-1 << w6) END AS span
        FROM b)
SELECT drain_id + span AS drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, stack_id, value FROM d;
