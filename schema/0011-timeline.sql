-- profd store, version 11: the timeline of on-CPU samples (issue 44). A
-- drain keeps, besides its summed samples, when each sample it logged was
-- taken: one row per drain, its blob packed by daemon/store/timeline-pack.c
-- (varints: the keys (process id, stack id, tid) the samples name, then
-- each sample's time in µs since start_ns, as a delta, and its key's index).
-- A key names the stored samples of the drain (sample_blocks of drain_id,
-- kind cpu, process_id, with that stack and thread), so a query turns
-- (time, key) back into (thread, stack) without the drain's row, which
-- retention merges long before it deletes it. The stacks and processes a
-- timeline names are held by the drain's blocks (or the merged blocks
-- after them): retention deletes a timeline at the latest with the
-- aggregates of its time, and earlier by its own settings
-- (timeline_retention, timeline_max_size).
CREATE TABLE timeline_blocks (
        drain_id INTEGER PRIMARY KEY,  -- the drain it was written with
        start_ns INTEGER NOT NULL,     -- Unix-epoch ns of time 0 (the first sample, to the µs)
        end_ns INTEGER NOT NULL,       -- of the last sample
        n INTEGER NOT NULL,            -- samples
        data BLOB NOT NULL
);
CREATE INDEX timeline_blocks_end ON timeline_blocks (end_ns);
