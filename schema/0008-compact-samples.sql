-- profd store, version 8: a compact store (issue 14). Samples are kept as
-- blocks: one row per (drain, kind, process) whose blob holds its samples
-- as fixed-width little-endian fields (daemon/store/sample-pack.h): per
-- field the block's smallest value (a *_base column) and the width in
-- bytes of the largest offset from it (4 bits each in `widths`: stack id,
-- tid, state, peer tid, cgroup id, value, the stack's lowest). Entry i
-- starts at byte i times the sum of the widths. A sample row of version 7
-- took about 84 bytes with its three indexes; an entry takes 5-14.

CREATE TABLE sample_blocks (
        drain_id INTEGER NOT NULL REFERENCES drains(id),
        kind INTEGER NOT NULL,          -- 0 cpu, 1 offcpu, 2 wakeup
        process_id INTEGER NOT NULL REFERENCES processes(id),
        n INTEGER NOT NULL,             -- entries in the blob
        widths INTEGER NOT NULL,
        stack_base INTEGER NOT NULL,
        tid_base INTEGER NOT NULL,
        state_base INTEGER NOT NULL,
        peer_base INTEGER NOT NULL,
        cgroup_base INTEGER NOT NULL,
        value_base INTEGER NOT NULL,
        entries BLOB,                   -- NULL when every field is its base
        -- what queries seek: the blocks of a window's drains, of one kind,
        -- of the filtered processes (as samples_query did for rows); the
        -- key of the table itself, so no index repeats it
        PRIMARY KEY (drain_id, kind, process_id)
) WITHOUT ROWID;

-- How many blocks hold each stack, and each process: one whose count fell
-- to 0 is no longer referred to (retention removes it). Kept by the writer
-- and by retention's merges and deletes; a row missing counts 0. Counts,
-- not indexes on the blocks: an index on process_id would repeat the key
-- of every block, and stack ids are inside the blobs.
CREATE TABLE stack_refs (
        stack_id INTEGER PRIMARY KEY,
        blocks INTEGER NOT NULL
);
CREATE TABLE process_refs (
        process_id INTEGER PRIMARY KEY,
        blocks INTEGER NOT NULL
);

-- The old table is converted by C code after profd is READY, a few
-- drains per step between drains, newest first (store-migrate.c,
-- store_migrate_step: SQL cannot pack blobs), and dropped when empty.
ALTER TABLE samples RENAME TO samples_v7;

-- The samples as rows again, for ad-hoc SQL and tests: decodes every block
-- (slow on a large store: profd itself reads the blocks in C).
CREATE VIEW samples AS
WITH RECURSIVE e(drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
                 cgroup_base, value_base, h, i) AS (
        SELECT drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
               cgroup_base, value_base, hex(entries), 0
        FROM sample_blocks WHERE n > 0
        UNION ALL
        SELECT drain_id, process_id, kind, n, widths, stack_base, tid_base, state_base, peer_base,
               cgroup_base, value_base, h, i + 1
        FROM e WHERE i + 1 < n),
w AS (
        SELECT *, widths & 15 AS w0, (widths >> 4) & 15 AS w1, (widths >> 8) & 15 AS w2,
               (widths >> 12) & 15 AS w3, (widths >> 16) & 15 AS w4, (widths >> 20) & 15 AS w5
        FROM e),
o AS (
        SELECT *, i * (w0 + w1 + w2 + w3 + w4 + w5) AS o0,
               i * (w0 + w1 + w2 + w3 + w4 + w5) + w0 AS o1,
               i * (w0 + w1 + w2 + w3 + w4 + w5) + w0 + w1 AS o2,
               i * (w0 + w1 + w2 + w3 + w4 + w5) + w0 + w1 + w2 AS o3,
               i * (w0 + w1 + w2 + w3 + w4 + w5) + w0 + w1 + w2 + w3 AS o4,
               i * (w0 + w1 + w2 + w3 + w4 + w5) + w0 + w1 + w2 + w3 + w4 AS o5
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
                 + CASE WHEN w5 > 7 THEN ((instr('0123456789ABCDEF', substr(h, 2 * (o5 + 7) + 1, 1)) - 1) * 16 + instr('0123456789ABCDEF', substr(h, 2 * (o5 + 7) + 2, 1)) - 1) << 56 ELSE 0 END AS value
        FROM o)
SELECT drain_id, process_id, tid, cgroup_id, kind, state, peer_tid, stack_id, value FROM d;
