-- profd's fleet tables in ClickHouse: the columns versions 2 and 5 added to
-- tables of earlier versions, so that profctl --clickhouse URL init
-- upgrades a server of any earlier version in place. ClickHouse 18.16 has
-- no ADD COLUMN IF NOT EXISTS: init runs a statement only when system.columns lacks its column, so each is
-- exactly "ALTER TABLE profd.TABLE ADD COLUMN NAME TYPE ...". Rows stored
-- before read the default: stacks of unknown end (255), frames of unknown
-- reason (0). The Distributed tables (cluster.sql) have columns of their
-- own. A new table of version 2 (drops), 3 (timeline) or 4 (captures) is
-- created by shard.sql and cluster.sql themselves (CREATE TABLE IF NOT
-- EXISTS) with every column of this version: the ALTERs of its columns
-- then find them there and do nothing. Versions 3 and 4 add no column.

ALTER TABLE profd.stacks_local ADD COLUMN user_end UInt8 DEFAULT 255;
ALTER TABLE profd.frames_local ADD COLUMN unresolved UInt8 DEFAULT 0;
ALTER TABLE profd.stacks ADD COLUMN user_end UInt8 DEFAULT 255;
ALTER TABLE profd.frames ADD COLUMN unresolved UInt8 DEFAULT 0;

-- Version 5 (issue 44): a timeline row's rates while a capture raised its
-- drain's. Rows exported before read 0 and 0: at the base rate, as their
-- profd counted them (a raise before version 5 stays uncounted: see
-- docs/clickhouse.md).
ALTER TABLE profd.timeline_local ADD COLUMN frequency_hz UInt32 DEFAULT 0;
ALTER TABLE profd.timeline_local ADD COLUMN base_hz UInt32 DEFAULT 0;
ALTER TABLE profd.timeline ADD COLUMN frequency_hz UInt32 DEFAULT 0;
ALTER TABLE profd.timeline ADD COLUMN base_hz UInt32 DEFAULT 0;
