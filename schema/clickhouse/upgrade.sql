-- profd's fleet tables in ClickHouse: what version 2 added to the tables of
-- version 1, so that profctl --clickhouse URL init upgrades a version-1
-- server in place. ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS: init
-- runs a statement only when system.columns lacks its column, so each is
-- exactly "ALTER TABLE profd.TABLE ADD COLUMN NAME TYPE ...". Rows stored
-- before read the default: stacks of unknown end (255), frames of unknown
-- reason (0). The Distributed tables (cluster.sql) have columns of their
-- own. A new table of version 2 (drops), 3 (timeline) or 4 (captures) is
-- created by shard.sql and cluster.sql themselves (CREATE TABLE IF NOT
-- EXISTS): versions 3 and 4 add no column.

ALTER TABLE profd.stacks_local ADD COLUMN user_end UInt8 DEFAULT 255;
ALTER TABLE profd.frames_local ADD COLUMN unresolved UInt8 DEFAULT 0;
ALTER TABLE profd.stacks ADD COLUMN user_end UInt8 DEFAULT 255;
ALTER TABLE profd.frames ADD COLUMN unresolved UInt8 DEFAULT 0;
