-- profd store, version 9: blocks that span drains (issue 14). On a busy
-- host a block of one (drain, kind, process) held 2-3 entries and cost
-- about 35 bytes besides them (key, bases, widths, record header, cell).
-- Retention now packs each closed run of 30 raw drain ids into one block
-- per (kind, process), keyed by the run's first drain
-- (retention.c, step_span); a seventh field of the entries, the span
-- offset (4 bits in `widths` from bit 24; base 0; at most one byte), says
-- which drain an entry belongs to: the block's drain_id plus the offset.
-- Blocks of one drain have offset width 0, so every schema 8 block reads
-- the same in schema 9. A drain whose samples are in a span names the
-- span's key in drains.span; NULL: in blocks keyed by its own id.
ALTER TABLE drains ADD COLUMN span INTEGER;

-- What retention looks for: the oldest raw drains not in a span yet.
CREATE INDEX drains_unspanned ON drains(id) WHERE span IS NULL AND resolution_ns = 0;

-- The samples as rows again, for ad-hoc SQL and tests, now with each
-- entry's own drain: decodes every block (slow on a large store: profd
-- itself reads the blocks in C). The hex digits are a BLOB, so each
-- substr() finds its byte at once; on TEXT it counts characters from the
-- start, which made a span's large blocks cost the square of their size.
DROP VIEW samples;
CREATE VIEW samples AS
WITH RECURSIVE e(drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
                 cgroup_base, value_base, h, i) AS (
        SELECT drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
               cgroup_base, value_base, CAST(hex(entries) AS BLOB), 0
        FROM sample_blocks WHERE n > 0
        UNION ALL
        SELECT drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
               cgroup_base, value_base, h, i + 1
        FROM e WHERE i + 1 < n),
w AS (
        SELECT *, widths & 15 AS w0, (widths >> 4) & 15 AS w1, (widths >> 8) & 15 AS w2,
               (widths >> 12) & 15 AS w3, (widths >> 16) & 15 AS w4, (widths >> 20) & 15 AS w5,
               (widths >> 24) & 15 AS w6
        FROM e),
o AS (
        SELECT *, i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) AS o0,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 AS o1,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 + w1 AS o2,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 + w1 + w2 AS o3,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 + w1 + w2 + w3 AS o4,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 + w1 + w2 + w3 + w4 AS o5,
               i * (w0 + w1 + w2 + w3 + w4 + w5 + w6) + w0 + w1 + w2 + w3 + w4 + w5 AS o6
        FROM w),
d AS (
        SELECT drain_id, process_id, kind,
               stack_base + CASE WHEN w0 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w0 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w0 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w0 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w0 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w0 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w0 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w0 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o0 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o0 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS stack_id,
               tid_base + CASE WHEN w1 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w1 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w1 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w1 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w1 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w1 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w1 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w1 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o1 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o1 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS tid,
               state_base + CASE WHEN w2 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w2 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w2 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w2 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w2 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w2 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w2 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w2 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o2 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o2 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS state,
               peer_base + CASE WHEN w3 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w3 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w3 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w3 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w3 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w3 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w3 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w3 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o3 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o3 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS peer_tid,
               cgroup_base + CASE WHEN w4 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w4 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w4 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w4 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w4 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w4 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w4 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w4 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o4 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o4 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS cgroup_id,
               value_base + CASE WHEN w5 > 0 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 0) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 0) + 2, 1)) - 1) << 0 ELSE 0 END
                 + CASE WHEN w5 > 1 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 1) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 1) + 2, 1)) - 1) << 8 ELSE 0 END
                 + CASE WHEN w5 > 2 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 2) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 2) + 2, 1)) - 1) << 16 ELSE 0 END
                 + CASE WHEN w5 > 3 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 3) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 3) + 2, 1)) - 1) << 24 ELSE 0 END
                 + CASE WHEN w5 > 4 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 4) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 4) + 2, 1)) - 1) << 32 ELSE 0 END
                 + CASE WHEN w5 > 5 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 5) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 5) + 2, 1)) - 1) << 40 ELSE 0 END
                 + CASE WHEN w5 > 6 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 6) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 6) + 2, 1)) - 1) << 48 ELSE 0 END
                 + CASE WHEN w5 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS value,
               CASE WHEN w6 > 0 THEN (instr('0123456789ABCDEF', substr(h, 2 * o6 + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * o6 + 2, 1)) - 1 ELSE 0 END AS span
        FROM o)
SELECT drain_id + span AS drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, stack_id, value FROM d;
