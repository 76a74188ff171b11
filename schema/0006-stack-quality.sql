-- profd store, version 6: how far each stored stack can be trusted, for the
-- quality report every query answer carries (daemon/serve/quality.c,
-- docs/protocol.md).

-- How the stack's user part ended: 0 complete (reached the outermost
-- frame, or the stack has no user part: kernel threads), 1-8 the unwinder's
-- truncation reasons (enum profd_stack_end in bpf/profd.h: 1 no process
-- entry yet, 2 table pending, 3 no mapping, 4 unsupported row, 5 read fault,
-- 6 depth limit, 7 frame-pointer fallback ended, 8 CFA did not grow), 64 the
-- user stack was lost (walk failed or stack map full: a [lost] frame).
-- NULL: stored before version 6, answered as "unknown". Part of the stack's
-- identity: the same frames with another end are another row.
ALTER TABLE stacks ADD COLUMN user_end INTEGER;

-- Why a user frame has no function (function_id NULL): 1 the file has no
-- symbol covering it, 2 the file could not be read, 3 anonymous code that no
-- perf map names (JIT without map), 4 in no known mapping. NULL for frames
-- with a function, kernel frames, [lost], and unresolved frames stored
-- before version 6 that the rules below cannot classify ("unknown").
ALTER TABLE locations ADD COLUMN unresolved INTEGER;

-- Unresolved frames stored before: [jit] and [unknown] say why by their
-- mapping alone; a file's frame could be 1 or 2, so it stays NULL.
UPDATE locations SET unresolved = CASE
                WHEN (SELECT path FROM mappings m WHERE m.id = mapping_id) = '[jit]' THEN 3
                WHEN (SELECT path FROM mappings m WHERE m.id = mapping_id) = '[unknown]' THEN 4
        END
WHERE function_id IS NULL AND kernel = 0;
