-- profd's fleet tables in ClickHouse, version 5: the tables profd inserts
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

CREATE TABLE IF NOT EXISTS profd.drops AS profd.drops_local
ENGINE = Distributed({cluster}, profd, drops_local, sipHash64(host));

CREATE TABLE IF NOT EXISTS profd.timeline AS profd.timeline_local
ENGINE = Distributed({cluster}, profd, timeline_local, sipHash64(host));

CREATE TABLE IF NOT EXISTS profd.captures AS profd.captures_local
ENGINE = Distributed({cluster}, profd, captures_local, sipHash64(host));
