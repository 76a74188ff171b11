-- profd store, version 3: retention and downsampling (daemon/retention.c).
-- Drains older than retention_raw are merged into 1-minute buckets, those
-- older than retention_1m into 10-minute buckets; a merged bucket is one
-- drains row whose samples are re-aggregated per (process, thread, cgroup,
-- kind, state, peer, stack).

-- The bucket width a drains row was merged to: 0 for a drain as drained,
-- 60000000000 (1 min) or 600000000000 (10 min) for merged buckets.
ALTER TABLE drains ADD COLUMN resolution_ns INTEGER NOT NULL DEFAULT 0;
CREATE INDEX drains_resolution ON drains(resolution_ns, end_ns);

-- Finds whether a stack is still referenced once samples were deleted, so
-- unreferenced stacks can be removed without scanning every sample.
CREATE INDEX samples_stack ON samples(stack_id);

-- What retention did over the store's life, as profctl status shows it:
-- merged_drains, deleted_drains, deleted_for_size, ...
CREATE TABLE retention_totals (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
) WITHOUT ROWID;
