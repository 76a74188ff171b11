/* The keys of profd's "status" answer that profctl reads (docs/protocol.md,
 * status), defined once: the daemon's status builder writes them and
 * profctl's status text (client/render.c) reads them. A key is listed once,
 * under the first object that has it ("processes", "running", "state" and
 * others are keys of several objects); keys only profctl status --json shows
 * are written as the daemon spells them and are not here. */
#pragma once

/* The status line's own keys. */
#define STATUS_KEY_PID                  "pid"
#define STATUS_KEY_UPTIME_S             "uptime_s"
#define STATUS_KEY_FREQUENCY_HZ         "frequency_hz"   /* the base rate: what answers count samples at */
#define STATUS_KEY_SAMPLING_HZ          "sampling_hz"    /* the rate now */
#define STATUS_KEY_RAISED_UNTIL_NS      "raised_until_ns" /* a capture's raise ends then; 0: not raised */
#define STATUS_KEY_INTERVAL_NOW_MS      "interval_now_ms"
#define STATUS_KEY_INTERVAL_MS          "interval_ms"
#define STATUS_KEY_EVENT                "event"
#define STATUS_KEY_VERSION              "version"
#define STATUS_KEY_STORE_PATH           "store_path"
#define STATUS_KEY_STORE_BYTES          "store_bytes"
#define STATUS_KEY_DRAINS               "drains"
#define STATUS_KEY_DRAINS_EARLY         "drains_early"
#define STATUS_KEY_LAST_DRAIN_NS        "last_drain_ns"
#define STATUS_KEY_SAMPLES              "samples"
#define STATUS_KEY_STACKS               "stacks"
#define STATUS_KEY_PROCESSES            "processes"
#define STATUS_KEY_SAMPLES_SEEN         "samples_seen"
#define STATUS_KEY_IDLE_SAMPLES         "idle_samples"
#define STATUS_KEY_DROPS                "drops"
/* the timeline of on-CPU samples (issue 44) */
#define STATUS_KEY_TIMELINE             "timeline"
#define STATUS_KEY_TIMELINE_BYTES       "bytes"
#define STATUS_KEY_TIMELINE_BLOCKS      "blocks"
#define STATUS_KEY_TIMELINE_SAMPLES     "samples"
#define STATUS_KEY_TIMELINE_OLDEST_NS   "oldest_ns"
#define STATUS_KEY_TIMELINE_UNTIMED     "untimed"
/* false: the setting timeline is off, nothing new is timed */
#define STATUS_KEY_TIMELINE_ON          "on"
/* timeline: the off-CPU blocks (schema 13): in the store, and since
 * profd started, logged with their times or counted without */
#define STATUS_KEY_OFFTIME              "offcpu"
#define STATUS_KEY_OFFTIME_BLOCKS       "blocks"
#define STATUS_KEY_OFFTIME_BYTES        "bytes"
#define STATUS_KEY_OFFTIME_OLDEST_NS    "oldest_ns"
#define STATUS_KEY_OFFTIME_LOGGED       "logged"
#define STATUS_KEY_OFFTIME_SHORT        "short"
#define STATUS_KEY_OFFTIME_SHORT_NS     "short_ns"
#define STATUS_KEY_OFFTIME_UNLOGGED     "unlogged"
#define STATUS_KEY_OFFTIME_UNLOGGED_NS  "unlogged_ns"
#define STATUS_KEY_OFFTIME_MIN_NS       "min_ns"
#define STATUS_KEY_TRUNCATED            "truncated"
#define STATUS_KEY_KINDS                "kinds"
#define STATUS_KEY_PROCESSES_TRACKED    "processes_tracked"
#define STATUS_KEY_SYMBOL_CACHE_BYTES   "symbol_cache_bytes"
#define STATUS_KEY_UNRESOLVED           "unresolved"
#define STATUS_KEY_RUNTIME_NAMES        "runtime_names"
#define STATUS_KEY_DWARF_DEFERRED       "dwarf_deferred"
#define STATUS_KEY_MIN_SAMPLES          "min_samples"
#define STATUS_KEY_FRAMES               "frames"
#define STATUS_KEY_LINES_ADDED          "lines_added"
#define STATUS_KEY_NOT_KEPT             "not_kept"
#define STATUS_KEY_UNWIND               "unwind"
#define STATUS_KEY_CLIENTS              "clients"
#define STATUS_KEY_QUERIES              "queries"
#define STATUS_KEY_STORE_CHECK          "store_check"
#define STATUS_KEY_STORE_MIGRATION      "store_migration"
#define STATUS_KEY_RSS_BYTES            "rss_bytes"
#define STATUS_KEY_MEMORY               "memory"
#define STATUS_KEY_OFFCPU               "offcpu"
#define STATUS_KEY_EXPORT               "export"

/* "unwind": the unwinder's tables and failures. */
#define STATUS_KEY_FAILURES             "failures"
#define STATUS_KEY_RUNTIME              "runtime"
#define STATUS_KEY_FILES                "files"
#define STATUS_KEY_FILES_UNUSED         "files_unused"
#define STATUS_KEY_ROWS_USED            "rows_used"
#define STATUS_KEY_ROWS_CAPACITY        "rows_capacity"
#define STATUS_KEY_KERNEL_BYTES         "kernel_bytes"
#define STATUS_KEY_TABLES_BUILT         "tables_built"
#define STATUS_KEY_BUILD_MS             "build_ms"
#define STATUS_KEY_TABLES_EVICTED       "tables_evicted"
#define STATUS_KEY_TABLES_NO_ROOM       "tables_no_room"
#define STATUS_KEY_TABLES_EVICTED_COLD  "tables_evicted_cold"
#define STATUS_KEY_TABLES_KEPT_HOT      "tables_kept_hot"
#define STATUS_KEY_USER_WALKS           "user_walks"

/* "runtime_names": the writer's cache of runtime code objects (Python's,
 * HotSpot's; daemon/unwind/runtime-names.h), "shared" those kept for every
 * process that maps their file and "shared_hits" the reads that spared;
 * "no_line": named runtime frames stored without a line, by reason. */
#define STATUS_KEY_CODES                "codes"
#define STATUS_KEY_BYTES                "bytes"
#define STATUS_KEY_READS                "reads"
#define STATUS_KEY_REUSED               "reused"
#define STATUS_KEY_EVICTED              "evicted"
#define STATUS_KEY_SHARED               "shared"
#define STATUS_KEY_SHARED_HITS          "shared_hits"
#define STATUS_KEY_NO_LINE              "no_line"

/* "memory": where the resident memory is. */
#define STATUS_KEY_ANON_BYTES           "anon_bytes"
#define STATUS_KEY_FILE_BYTES           "file_bytes"
#define STATUS_KEY_HEAP_IN_USE_BYTES    "heap_in_use_bytes"
#define STATUS_KEY_SQLITE_BYTES         "sqlite_bytes"

/* "queries": the query workers. */
#define STATUS_KEY_WORKERS              "workers"
#define STATUS_KEY_RUNNING              "running"
#define STATUS_KEY_QUEUED               "queued"
#define STATUS_KEY_PARKED               "parked"
#define STATUS_KEY_PARKED_TOTAL         "parked_total"

/* "offcpu": the off-CPU filter and what it dropped. */
#define STATUS_KEY_MIN_NS               "min_ns"
#define STATUS_KEY_MAX_NS               "max_ns"
#define STATUS_KEY_FILTERED_BLOCKS      "filtered_blocks"
#define STATUS_KEY_FILTERED_NS          "filtered_ns"
/* offcpu_sample (null: none), and the kept blocks and wake-ups its draw
 * left unwalked */
#define STATUS_KEY_SAMPLE_NS            "sample_ns"
#define STATUS_KEY_SAMPLE_AUTO          "sample_auto"
#define STATUS_KEY_UNSAMPLED_BLOCKS     "unsampled_blocks"
#define STATUS_KEY_UNSAMPLED_NS         "unsampled_ns"
#define STATUS_KEY_UNSAMPLED_WAKEUPS    "unsampled_wakeups"
/* wake-ups of profd's own threads, their wakers not walked (offcpu_self_stacks off) */
#define STATUS_KEY_SELF_WAKEUPS         "self_wakeups"
#define STATUS_KEY_KERNEL_STACK_MEMO    "kernel_stack_memo"
#define STATUS_KEY_HITS                 "hits"
#define STATUS_KEY_WALKS                "walks"
#define STATUS_KEY_MISMATCHES           "mismatches"

/* "store_check": the store's integrity check. */
#define STATUS_KEY_STATE                "state"
#define STATUS_KEY_STARTED_NS           "started_ns"
#define STATUS_KEY_FINISHED_NS          "finished_ns"
#define STATUS_KEY_MESSAGE              "message"

/* "store_migration": schema 8's conversion of older samples. */
#define STATUS_KEY_PENDING_ROWS         "pending_rows"
#define STATUS_KEY_PENDING_DRAINS       "pending_drains"
#define STATUS_KEY_DONE_ROWS            "done_rows"
#define STATUS_KEY_COMPLETE_AFTER_NS    "complete_after_ns"

/* "export": the ClickHouse export (docs/clickhouse.md, Status). */
#define STATUS_KEY_URL                  "url"
#define STATUS_KEY_HOST                 "host"
#define STATUS_KEY_BACKLOG_DRAINS       "backlog_drains"
#define STATUS_KEY_BACKLOG_OLDEST_NS    "backlog_oldest_ns"
#define STATUS_KEY_LAST_SUCCESS_NS      "last_success_ns"
#define STATUS_KEY_EXPORTED_DRAINS      "exported_drains"
#define STATUS_KEY_EXPORTED_SAMPLES     "exported_samples"
#define STATUS_KEY_EXPORTED_STACKS      "exported_stacks"
#define STATUS_KEY_EXPORTED_FRAMES      "exported_frames"
#define STATUS_KEY_EXPORTED_TIMELINE    "exported_timeline"
#define STATUS_KEY_TIMELINE_UNMATCHED   "timeline_unmatched"
#define STATUS_KEY_EXPORTED_CAPTURES    "exported_captures"
#define STATUS_KEY_CAPTURES_BACKLOG     "captures_backlog"
#define STATUS_KEY_CAPTURES_ALREADY_STORED "captures_already_stored"
#define STATUS_KEY_BYTES_SENT           "bytes_sent"
#define STATUS_KEY_ALREADY_STORED       "already_stored"
#define STATUS_KEY_LOST_BY_RETENTION    "lost_by_retention"
#define STATUS_KEY_DAMAGED_BLOCKS       "damaged_blocks"
#define STATUS_KEY_ERRORS               "errors"
#define STATUS_KEY_ERROR                "error"
#define STATUS_KEY_LAST_ERROR           "last_error"
#define STATUS_KEY_LAST_ERROR_NS        "last_error_ns"

/* "captures" (issue 44): the captures recorded and pinned, what the gate
 * refused since start, the triggers watched, the newest captures. */
#define STATUS_KEY_CAPTURES             "captures"
#define STATUS_KEY_CAPTURE_COUNT        "count"
#define STATUS_KEY_CAPTURE_PINNING      "pinning"
#define STATUS_KEY_CAPTURE_PINNED_BYTES "pinned_bytes"
#define STATUS_KEY_CAPTURE_MAX_PINNED   "max_pinned_bytes"
#define STATUS_KEY_CAPTURE_COOLDOWN_S   "cooldown_s"
#define STATUS_KEY_CAPTURE_REFUSED      "refused"
#define STATUS_KEY_CAPTURE_FAILED       "failed"
#define STATUS_KEY_CAPTURE_TRIGGERS     "triggers"
#define STATUS_KEY_CAPTURE_LAST         "last"
