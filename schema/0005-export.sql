-- profd store, version 5: the store as the outbox of the ClickHouse export
-- (daemon/export/exporter.c, docs/clickhouse.md).
--
-- One row per export target (host_name and URL): the last drain ClickHouse
-- acknowledged. The exporter sends the drains as drained (resolution_ns 0)
-- with a larger id, in id order, and moves drain_id forward only after
-- ClickHouse stored the drain. SQLite gives a new drain an id larger than
-- any row's, and retention deletes the newest drain only when it deletes
-- every drain (all older than `retention`), so drains after the cursor are
-- exactly those not yet acknowledged; a cursor above every id (ids started
-- over in an emptied table) goes back to 0.
CREATE TABLE export_cursors (
        target TEXT PRIMARY KEY,        -- "HOST_NAME URL"
        drain_id INTEGER NOT NULL,      -- acknowledged up to here; 0: nothing yet
        -- drains that retention merged or deleted before they were exported
        -- (daemon/store/retention.c counts them): the backlog is bounded by
        -- retention_raw, and what it lost is visible in profctl status
        lost_drains INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
