-- profd store, version 13: the timeline of off-CPU blocks (issue 44). A
-- drain keeps, besides its summed off-CPU time, when each block it logged
-- (offcpu_log, blocks of timeline_offcpu_min or more) began and how long
-- it lasted: one row per drain, its blob packed by
-- daemon/store/offtime-pack.c (varints: the keys (process id, stack id,
-- tid, state) the blocks name, then each block's start in µs since
-- start_ns, as a delta, its duration in µs and its key's index). A key
-- names the stored samples of the drain (sample_blocks of drain_id, kind
-- offcpu, process_id, with that stack, thread and state). Retention treats
-- these rows as timeline_blocks' (timeline_retention, timeline_max_size,
-- and at the latest with the aggregates of their time).
CREATE TABLE offcpu_timeline (
        drain_id INTEGER PRIMARY KEY,  -- the drain it was written with
        start_ns INTEGER NOT NULL,     -- Unix-epoch ns of time 0 (the first block's start, to the µs)
        end_ns INTEGER NOT NULL,       -- of the last block's end
        n INTEGER NOT NULL,            -- blocks
        data BLOB NOT NULL
);
CREATE INDEX offcpu_timeline_end ON offcpu_timeline (end_ns);
