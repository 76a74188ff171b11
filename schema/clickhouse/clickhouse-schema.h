/* profd's ClickHouse schema, embedded at build time from schema/clickhouse/
 * (shard.sql, cluster.sql, upgrade.sql) by embed.py; docs/clickhouse.md describes it.
 * Each array holds one statement per element, ending with NULL. */
#pragma once

/* On every shard: the profd database, the local tables, the version row. */
extern const char *const clickhouse_schema_shard[];
/* On every server profd or profctl talks to, after the shard statements:
 * the Distributed tables. "{cluster}" stands for the cluster's name. */
extern const char *const clickhouse_schema_cluster[];
/* What takes a server of version 1 to this version: each statement is
 * "ALTER TABLE profd.TABLE ADD COLUMN NAME ...", to run only when the table
 * lacks the column (ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS). */
extern const char *const clickhouse_schema_upgrade[];
/* The version shard.sql writes to profd.schema_version; profd exports only
 * to a cluster whose largest version is this one (it writes its columns). */
extern const unsigned clickhouse_schema_version;
