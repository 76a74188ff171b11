-- Version 1 of schema/clickhouse/cluster.sql, as profd 1 created it: the
-- starting point of the upgrade test (test_clickhouse_query.py). Do not edit.
-- profd's fleet tables in ClickHouse, version 1: the tables profd inserts
-- into and profctl queries, each a Distributed table over the shards'
-- local tables (shard.sql) of the cluster named in remote_servers. Run on
-- every server profd or profctl talks to, after shard.sql; {cluster} is
-- replaced by the cluster's name. docs/clickhouse.md.

-- By host: a host's samples live on one shard, so a drain inserted through
-- this table is one block on one shard (with insert_distributed_sync=1).
CREATE TABLE IF NOT EXISTS profd.samples AS profd.samples_local
ENGINE = Distributed({cluster}, profd, samples_local, sipHash64(host));

-- By id: every copy of a stack or frame lands on the same shard, where
-- ReplacingMergeTree collapses it.
CREATE TABLE IF NOT EXISTS profd.stacks AS profd.stacks_local
ENGINE = Distributed({cluster}, profd, stacks_local, id);

CREATE TABLE IF NOT EXISTS profd.frames AS profd.frames_local
ENGINE = Distributed({cluster}, profd, frames_local, id);
