/* The names of schema/clickhouse/'s tables and columns that fleet queries
 * read, in one place (docs/clickhouse.md describes them). The version
 * profctl reads is clickhouse_schema_version (clickhouse-schema.h). */
#pragma once

/* The Distributed tables over every shard's local tables. */
#define FS_TABLE_SAMPLES "profd.samples"
#define FS_TABLE_STACKS  "profd.stacks"
#define FS_TABLE_FRAMES  "profd.frames"
#define FS_TABLE_VERSION "profd.schema_version"
#define FS_TABLE_DROPS   "profd.drops"
#define FS_TABLE_TIMELINE "profd.timeline"
#define FS_TABLE_CAPTURES "profd.captures"

/* profd.samples */
#define FS_DAY       "day"          /* Date: drain_end's day in UTC, the partition */
#define FS_TIME      "time"         /* DateTime: drain_end in seconds, the sort key after kind, host */
#define FS_HOST      "host"
#define FS_START_NS  "drain_start"
#define FS_END_NS    "drain_end"
#define FS_PID       "pid"
#define FS_TID       "tid"
#define FS_COMM      "comm"
#define FS_EXE       "exe"          /* '' where profd's store has NULL, as cgroup, unit, container */
#define FS_UID       "uid"          /* Int64, -1 unknown */
#define FS_CGROUP    "cgroup"
#define FS_UNIT      "unit"
#define FS_CONTAINER "container"
#define FS_KIND      "kind"
#define FS_STATE     "state"
#define FS_STACK_ID  "stack"
#define FS_VALUE     "value"
/* How long a drain (or a bucket retention merged) may last: the time and
 * day columns are its end, and a drain that ends this long after the
 * window may still have started in it. Retention's widest bucket is 10
 * minutes; a day is far beyond any drain interval. */
#define FS_DRAIN_MAX_S 86400

/* profd.stacks */
#define FST_ID     "id"
#define FST_FRAMES "frames"
#define FST_USER_END "user_end"     /* UInt8: the store's stacks.user_end; FST_END_UNKNOWN unknown */
#define FST_END_UNKNOWN 255         /* stored before version 2, or by a store that did not know */

/* profd.timeline (version 3): host, drain_start, drain_end, day, the
 * process columns, tid and stack as profd.samples; time is the sample's
 * own time in seconds (not its drain's end) */
#define FSL_T "t"                   /* UInt64: the sample's own time, Unix-epoch ns (to the µs) */
#define FSL_FREQUENCY_HZ "frequency_hz" /* UInt32 (version 5): its drain's raised rate; 0: the base */
#define FSL_BASE_HZ "base_hz"       /* UInt32 (version 5): the rate its drain's samples rows count at; 0: none */

/* profd.captures (version 4): one row per capture (host, id) and state it
 * was exported in; the largest state is its latest */
#define FSC_ID         "id"
#define FSC_STATE      "state"      /* UInt8: 0 active, 1 pinned, 2 unpinned (FSC_STATE_NAMES) */
#define FSC_STATE_NAMES { "active", "pinned", "unpinned" } /* as profd's event lines name them */
#define FSC_CAUSE      "cause"
#define FSC_TRIGGER_NS "trigger_ns"
#define FSC_FROM_NS    "from_ns"
#define FSC_TO_NS      "to_ns"

/* profd.drops: host, drain_start, drain_end, time, day as profd.samples */
#define FSD_REASON "reason"
#define FSD_VALUE  "value"

/* profd.frames: the fields of a stack line's frame */
#define FSF_UNRESOLVED "unresolved" /* UInt8: the store's locations.unresolved; 0 not known */
#define FSF_ID "id"
