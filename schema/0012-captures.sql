-- profd store, version 12: captures (issue 44). A capture keeps the
-- minutes before an incident and the time after it: its row is the
-- event (what fired, for whom, when) and, while its state is 'active' or
-- 'pinned', a pin: retention (daemon/store/retention.c) neither merges
-- nor deletes the raw drains whose time overlaps [from_ns, to_ns], nor
-- the timeline blocks written with them. 'unpinned' returns that data to
-- retention; the row stays as the record of the capture.
CREATE TABLE captures (
        id INTEGER PRIMARY KEY,
        cause TEXT NOT NULL,           -- the condition, as capture_cond_format writes it ("manual", "cpu:pid=42>80")
        origin TEXT NOT NULL,          -- 'setting' (capture_on) or 'request' (profctl capture start)
        uid INTEGER NOT NULL,          -- who asked: the requester's uid, 0 for the setting
        value_centi INTEGER,           -- the value that crossed the threshold, in hundredths; NULL: manual, oom
        trigger_ns INTEGER NOT NULL,   -- Unix-epoch ns, the clock drains are stamped with
        from_ns INTEGER NOT NULL,      -- the pinned range: trigger_ns - capture_before ...
        to_ns INTEGER NOT NULL,        -- ... to trigger_ns + capture_duration
        pinned_bytes INTEGER NOT NULL, -- estimated at the trigger, measured when the capture ends
        state TEXT NOT NULL CHECK (state IN ('active', 'pinned', 'unpinned'))
);
