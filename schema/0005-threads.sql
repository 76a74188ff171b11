-- profd store, version 5: thread names, for `profctl query --root thread`.
-- A thread's name (its comm: pthread_setname_np, prctl PR_SET_NAME) as
-- /proc/PID/task/TID/comm gave it when a drain with its samples was
-- stored; the latest one seen. A thread whose name could not be read (it
-- ended before the drain) has no row: its process's comm stands in.
-- Rows go with their process (retention, daemon/store/retention.c).
CREATE TABLE threads (
        process_id INTEGER NOT NULL REFERENCES processes(id),
        tid INTEGER NOT NULL,
        comm TEXT NOT NULL,
        PRIMARY KEY (process_id, tid)
) WITHOUT ROWID;
