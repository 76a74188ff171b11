-- profd's fleet tables in ClickHouse (18.16 and later), version 5: what every
-- shard holds. Run on each shard once (profctl --clickhouse URL init does);
-- an older shard is upgraded in place by the CREATE TABLE IF NOT EXISTS of
-- the tables versions 2 (drops), 3 (timeline) and 4 (captures) added, and
-- by upgrade.sql's columns (versions 2 and 5).
-- Statements end with ';' at the end of a line; '--' comments only.
-- docs/clickhouse.md describes every column and why.

CREATE DATABASE IF NOT EXISTS profd;

-- The schema version this cluster holds: profd refuses to export to
-- another one (a newer init adds a row: the largest version is the one).
CREATE TABLE IF NOT EXISTS profd.schema_version (
        version UInt32
) ENGINE = ReplacingMergeTree ORDER BY version;

-- One row per sample row of a host's store: a (process, thread, cgroup,
-- kind, state, peer, stack) and its value within one drain. A drain is
-- inserted as one block into one partition, so it is there whole or not at
-- all; (host, drain_end) is its key: profd asks for it before re-sending a
-- drain whose earlier attempt may have landed. Empty strings stand for
-- what the local store holds as NULL, uid -1 for an unknown uid.
CREATE TABLE IF NOT EXISTS profd.samples_local (
        host String,                    -- host_name of the exporting profd
        drain_start UInt64,             -- the drain's bucket, Unix-epoch ns, as in the local store
        drain_end UInt64,
        time DateTime,                  -- drain_end in seconds: sort order, windows
        day Date,                       -- drain_end's day in UTC: the partition
        pid UInt32,
        process_start UInt64,           -- boot-time ns: (host, pid, process_start) is a process instance
        comm String,
        exe String,
        uid Int64,                      -- effective uid; -1: unknown
        cgroup String,                  -- cgroup v2 path
        unit String,                    -- systemd unit derived from cgroup
        container String,               -- container id derived from cgroup
        tid UInt32,
        cgroup_id UInt64,
        kind UInt8,                     -- 0 cpu (value: samples), 1 offcpu, 2 wakeup (value: ns)
        state UInt8,                    -- 0 for cpu; 1 R, 2 S, 3 D, 4 T, 5 I, 6 other
        peer_tid UInt32,                -- wakeup: the thread whose blocked time the waker ended
        stack UInt64,                   -- stacks.id
        value UInt64
) ENGINE = MergeTree
PARTITION BY day
ORDER BY (kind, host, time);

-- Stacks by content: id is a 64-bit hash of frames and user_end, so every host names the
-- same stack alike and a stack is stored once per day however many hosts
-- sent it. `day` is the day of the samples that use it: each host sends a
-- stack again on the first day it uses it, so dropping a day's partitions
-- of samples, stacks and frames together leaves every other day whole.
-- Until a merge collapses them, the same id may appear more than once in a
-- day: read with GROUP BY id and any(frames).
CREATE TABLE IF NOT EXISTS profd.stacks_local (
        day Date,
        id UInt64,
        frames Array(UInt64),           -- frames.id, root first, as a local query answer lists them
        user_end UInt8 DEFAULT 255      -- how its user part ended, the store's stacks.user_end (schema/0006):
                                        -- 0 complete, 1-8 truncated, 64 lost; 255 unknown (rows of version 1)
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY id;

-- Frames by content, as a local query answers them (docs/protocol.md, stack
-- lines): an address with inlined calls is several frames. id is a 64-bit
-- hash of all the other columns but day. Same day and duplicate rules as
-- stacks.
CREATE TABLE IF NOT EXISTS profd.frames_local (
        day Date,
        id UInt64,
        name String,                    -- function, or module+0xoffset when unresolved
        raw_name String,                -- as in the symbol table
        module String,                  -- mapping path, [kernel.kallsyms], [jit], [lost], ...
        build_id String,                -- hex; '' when unknown
        file String,                    -- source file; '' when unknown
        address UInt64,                 -- file offset (user) or address (kernel)
        line UInt32,                    -- 0: unknown
        has_address UInt8,              -- 0 for [lost]
        kernel UInt8,
        resolved UInt8,
        inlined UInt8,                  -- an inlined call: the caller is the frame before
        jit UInt8,
        unresolved UInt8 DEFAULT 0      -- why an unresolved user frame has no name, the store's
                                        -- locations.unresolved: 1 no symbols, 2 no file, 3 JIT without
                                        -- map, 4 unknown mapping; 0 not known (and every other frame)
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY id;

-- Data lost host-wide in a drain interval (the store's drops table): one row
-- per reason with a non-zero count, for the quality report of fleet queries.
-- Inserted as one block per batch before its samples; profd looks (host,
-- drain_end) up here as in samples before sending a drain's drops again.
CREATE TABLE IF NOT EXISTS profd.drops_local (
        host String,
        drain_start UInt64,
        drain_end UInt64,
        time DateTime,                  -- drain_end in seconds
        day Date,                       -- drain_end's day in UTC: the partition
        reason String,                  -- as profctl status names it: map_full, ringbuf_full, ...
        value UInt64                    -- events lost
) ENGINE = MergeTree
PARTITION BY day
ORDER BY (host, time);

-- The timeline (version 3): one row per on-CPU sample whose own time the
-- host's store kept (its timeline_blocks, schema 11), for heatmaps and
-- windows finer than a drain. The sample is one of the drain's rows of
-- profd.samples (kind 0): the same process columns, thread and stack.
-- Inserted as one block per batch, before its samples; profd looks (host,
-- drain_end) up here as in samples before sending a drain's timeline
-- again. t is Unix-epoch ns, to the µs the store keeps; time is t in
-- seconds (windows, sort order); day is the drain's, as in samples, so a
-- day's partitions of every table go together.
CREATE TABLE IF NOT EXISTS profd.timeline_local (
        host String,
        drain_start UInt64,
        drain_end UInt64,
        day Date,
        t UInt64,
        time DateTime,
        pid UInt32,
        process_start UInt64,
        comm String,
        exe String,
        uid Int64,
        cgroup String,
        unit String,
        container String,
        tid UInt32,
        stack UInt64,                   -- stacks.id
        -- version 5 (issue 44): a capture's raise. A sample of a drain taken
        -- at another rate than the one its drain's rows of profd.samples
        -- were weighted to (the exporting profd's frequency) counts
        -- base_hz / frequency_hz of a sample there: both rates, or 0 and 0
        -- for a sample at that base (and every row exported before)
        frequency_hz UInt32 DEFAULT 0,
        base_hz UInt32 DEFAULT 0
) ENGINE = MergeTree
PARTITION BY day
ORDER BY (host, time);

-- Captures (version 4, issue 44): the events of the host's store table
-- captures (schema 12), one row per state each capture was exported in:
-- 'active' when it fired, 'pinned' when its time after the trigger ended
-- (pinned_bytes measured then), 'unpinned' when its data went back to
-- retention. A capture's current state is its row with the largest state.
-- Inserted one block per export pass; (host, id, state) is the key profd
-- looks up before sending a row again, so each state arrives once. day
-- and time are the trigger's: the capture goes with that day's partitions.
CREATE TABLE IF NOT EXISTS profd.captures_local (
        host String,
        id UInt64,                      -- the capture's id in the host's store
        state UInt8,                    -- 0 active, 1 pinned, 2 unpinned
        day Date,                       -- trigger_ns's day in UTC: the partition
        time DateTime,                  -- trigger_ns in seconds
        trigger_ns UInt64,              -- Unix-epoch ns, as the host's drains
        from_ns UInt64,                 -- the pinned range: capture_before before the trigger ...
        to_ns UInt64,                   -- ... to capture_duration after it
        cause String,                   -- the condition: "manual", "oom", "cpu:pid=42>80", "psi:..."
        origin String,                  -- 'setting' (capture_on) or 'request' (profctl capture start)
        uid UInt32,                     -- who armed it: the requester's uid, 0 for the setting
        value_centi Int64,              -- the value that crossed the threshold, in hundredths; -1: none (manual, oom)
        pinned_bytes UInt64             -- estimated when it fired, measured when it ended
) ENGINE = MergeTree
PARTITION BY day
ORDER BY (host, id, state);

-- Last: a version row says every table above is there (profctl's init
-- inserts it after cluster.sql and upgrade.sql).
INSERT INTO profd.schema_version (version) VALUES (5);
