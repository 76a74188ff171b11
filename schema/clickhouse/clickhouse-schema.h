/* profd's ClickHouse schema, embedded at build time from schema/clickhouse/
 * (shard.sql, cluster.sql) by embed.py; docs/clickhouse.md describes it.
 * Each array holds one statement per element, ending with NULL. */
#pragma once

/* On every shard: the profd database, the local tables, the version row. */
extern const char *const clickhouse_schema_shard[];
/* On every server profd or profctl talks to, after the shard statements:
 * the Distributed tables. "{cluster}" stands for the cluster's name. */
extern const char *const clickhouse_schema_cluster[];
/* The version shard.sql writes to profd.schema_version; profd exports only
 * to a cluster whose largest version is this one. */
extern const unsigned clickhouse_schema_version;
