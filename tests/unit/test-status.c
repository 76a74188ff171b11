/* The status answer from the parts' stats: every key profctl and the
 * end-to-end tests read, in the order they have always come, with the
 * values of the stats it was given; every drop and truncation counter,
 * summed from the writer's pending counts and the store's; and the parts
 * a profd does not run shown as absent, inactive or null. */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "status.h"
#include "tests.h"

/* The names status shows as keys, part of the protocol: the writer's and
 * the unwinder's tables (writer.c, unwinder.c) must keep them. */
static const char *const drop_names[PROFD_COUNTER__MAX] = {
        [PROFD_DROP_MAP_FULL] = "map_full",
        [PROFD_DROP_USER_STACK_ERROR] = "user_stack_error",
        [PROFD_DROP_KERNEL_STACK_ERROR] = "kernel_stack_error",
        [PROFD_DROP_STACK_MAP_FULL] = "stack_map_full",
        [PROFD_DROP_RINGBUF_FULL] = "ringbuf_full",
        [PROFD_DROP_TASK_STORAGE] = "task_storage_full",
        [PROFD_DROP_SWITCH_MISSED] = "switch_missed",
        [PROFD_TRUNC_NO_PROCESS] = TRUNCATED_PREFIX "no_process",
        [PROFD_TRUNC_PENDING] = TRUNCATED_PREFIX "pending",
        [PROFD_TRUNC_NO_MAPPING] = TRUNCATED_PREFIX "no_mapping",
        [PROFD_TRUNC_UNSUPPORTED] = TRUNCATED_PREFIX "unsupported",
        [PROFD_TRUNC_READ_FAULT] = TRUNCATED_PREFIX "read_fault",
        [PROFD_TRUNC_DEPTH] = TRUNCATED_PREFIX "depth",
        [PROFD_TRUNC_FP_END] = TRUNCATED_PREFIX "fp_end",
        [PROFD_TRUNC_CFA_STUCK] = TRUNCATED_PREFIX "cfa_stuck",
};

static const char *const failure_names[UNWINDER_FAIL__MAX] = {
        "no_cfi", "unreadable", "above_4g", "bad_cfi", "budget_full", "maps_full", "procs_full",
        "runtime_unsupported", "runtime_slots_full", "hotspot_tables",
};

static const char *const hotspot_walk_names[STATUS_HOTSPOT__MAX] = {
        "walks", "frames", "no_heap", "no_blob", "bad_segmap", "bad_frame", "read_fault", "code_range",
};

static const char *const runtime_walk_names[STATUS_RUNTIME__MAX] = {
        "walks", "frames", "no_thread_state", "read_fault", "no_frame",
};

/* enum python_code_reason's names in status, beside the writer's table */
static const char *const python_names[_PYTHON_CODE_REASON_MAX] = {
        [PYTHON_CODE_READ_CODE] = "python_read_code",
        [PYTHON_CODE_NOT_CODE] = "python_not_code",
        [PYTHON_CODE_READ_STRING] = "python_read_string",
        [PYTHON_CODE_STRING_NOT_COMPACT] = "python_string_not_compact",
        [PYTHON_CODE_STRING_TOO_LONG] = "python_string_too_long",
        [PYTHON_CODE_STRING_BAD] = "python_string_bad",
        [PYTHON_CODE_READ_LINETABLE] = "python_read_linetable",
        [PYTHON_CODE_LINETABLE_TOO_BIG] = "python_linetable_too_big",
        [PYTHON_CODE_LINETABLE_BAD] = "python_linetable_bad",
        [PYTHON_CODE_NO_LINE] = "python_no_line",
        [PYTHON_CODE_OFFSET_PAST_TABLE] = "python_offset_past_table",
};

static char *debug_dirs[] = { "/usr/lib/debug", "/opt/debug", NULL };

static struct conf test_conf(void) {
        return (struct conf) {
                .store_path = "/var/lib/profd/profd.db",
                .frequency_hz = 99,
                .interval_ns = 10 * NSEC_PER_SEC,
                .kind_cpu = true,
                .kind_offcpu = true,
                .timeline = true,
                .offcpu_min_ns = 1000000,
                .offcpu_max_ns = UINT64_MAX,
                .max_clients = 64,
                .client_timeout_ns = 30 * NSEC_PER_SEC,
                .symbol_cache_bytes = 256 << 20,
                .dwarf_min_samples = 20,
                .retention_raw_ns = 3600 * NSEC_PER_SEC,
                .retention_1m_ns = 86400 * NSEC_PER_SEC,
                .retention_ns = 7 * 86400 * NSEC_PER_SEC,
                .retention_fold_ppm = 1234,
                .timeline_retention_ns = 3600 * NSEC_PER_SEC,
                .timeline_max_size = 256 << 20,
                .timeline_offcpu_min_ns = 1000000,
                .debug_dirs = debug_dirs,
                .clickhouse_url = "http://ch:8123",
                .host_name = "web1",
        };
}

/* A profd that runs every part, each counter a distinct value so a value
 * under the wrong key shows. */
static struct store_drop_total stored_drops[] = {
        { "map_full", 1000 },
        { "truncated_depth", 2000 },
        { "process_vanished", 3000 },
        { "store_write_failed", 4000 },
};

static struct status_stats full_stats(const struct conf *c) {
        struct status_stats s = {
                .conf = c,
                .pid = 4242,
                .uptime_s = 3601,
                .event = "cpu-clock",
                /* a capture's raise: 999 Hz, drained every 991 ms, until then */
                .sampling_hz = 999, .raised_until_ns = 1764680553250000000ULL, .interval_now_ns = 991000000,
                .samples_seen = 11, .idle_samples = 12,
                .offcpu_filtered = 13, .offcpu_filtered_ns = 14,
                .offcpu_unsampled = 15, .offcpu_unsampled_ns = 16, .wakeup_unsampled = 17, .wakeup_self = 77,
                .kstack_memo_hits = 18, .kstack_memo_walks = 19, .kstack_memo_mismatches = 20,
                .user_walks = 15,
                .drains_early = 26,
                .timeline_untimed = 16,
                .offtime_logged = 17, .offtime_short = 18, .offtime_short_ns = 19,
                .offtime_unlogged = 20, .offtime_unlogged_ns = 31,
                .clients = 3,
                .writer_running = true,
                .store = { .drains = 21, .samples = 22, .stacks = 23, .processes = 24, .last_drain_ns = 25,
                           .offtime_rows = 2, .offtime_blocks = 32, .offtime_bytes = 33, .offtime_oldest_ns = 34,
                           .timeline_blocks = 27, .timeline_bytes = 28, .timeline_samples = 29,
                           .timeline_oldest_ns = 30,
                           .file_bytes = 26, .drops = stored_drops, .n_drops = ELEMENTSOF(stored_drops) },
                .unwinder_running = true,
                .unwind = { .processes = 31, .files = 32, .files_unused = 33, .rows_used = 34, .rows_capacity = 35,
                            .mappings_used = 36, .mappings_capacity = 37, .kernel_bytes = 38, .mapped_bytes = 39,
                            .tables_built = 40, .build_ns = 41 * NSEC_PER_MSEC, .tables_evicted = 42,
                            .tables_evicted_cold = 47, .tables_kept_hot = 48,
                            .tables_no_room = 43, .tables_queued = 44, .requests = 45, .misses = 46,
                            .maps_given = 141, .maps_read = 142 },
                .exporter_running = true,
                .export = { .state = "retrying", .backlog_drains = 51, .acknowledged_drain_id = 52,
                            .backlog_oldest_ns = 53, .last_success_ns = 0, .exported_drains = 54,
                            .exported_samples = 55, .exported_stacks = 56, .exported_frames = 57,
                            .exported_timeline = 63, .timeline_unmatched = 64,
                            .exported_captures = 65, .captures_backlog = 66, .captures_already_stored = 67,
                            .bytes_sent = 58, .already_stored = 59, .lost_by_retention = 60, .damaged_blocks = 61,
                            .last_error_kind = EXPORTER_ERROR_AUTH, .last_error = "wrong password",
                            .last_error_ns = 62 },
                .queries = { .threads = 5, .running = 1, .parked = 2, .queued = 3, .parks = 71 },
                .check_running = true,
                .check = { .state = STORE_CHECK_FAILED, .started_ns = 81, .finished_ns = 82, .message = "page 3" },
                .migration_read = true,
                .migration = { .active = true, .pending_rows = 91, .pending_drains = 92, .complete_after_ns = 93,
                               .done_rows = 94, .done_drains = 95 },
                .rss = { .total = 101, .anon = 102, .file = 103 },
                .heap_in_use_bytes = 104, .heap_free_bytes = 105, .sqlite_bytes = 106,
                .heap_trims = 107, .heap_trim_ns = 108 * NSEC_PER_MSEC,
                .captures = { .running = true,
                              .totals = { .count = 141, .pinning = 142, .pinned_bytes = 143, .last_trigger_ns = 144 },
                              .budget_bytes = 145, .cooldown_ns = 146 * NSEC_PER_SEC, .before_ns = 147 * NSEC_PER_SEC,
                              .duration_ns = 148 * NSEC_PER_SEC, .refused = { 0, 149, 150 }, .failed = 151,
                              .triggers = 152, .read_errors = 153,
                              .last = { { .id = 154, .cause = "cpu:pid=42>80", .origin = "request", .uid = 1000,
                                          .has_value = true, .value_centi = 9950, .trigger_ns = 155, .from_ns = 156,
                                          .to_ns = 157, .pinned_bytes = 158, .state = STORE_CAPTURE_PINNED } },
                              .n_last = 1 },
        };

        for (int i = 0; i < PROFD_COUNTER__MAX; i++)
                s.writer.pending_drops[i] = 200 + (uint64_t) i;
        s.writer.failed_drains = 7;
        s.writer.processes_tracked = 111;
        s.writer.symbol_cache_bytes = 112;
        s.writer.symbol_mapped_bytes = 113;
        s.writer.symbol_peak_bytes = 114;
        s.writer.unresolved = (struct writer_unresolved) { .no_symbols = 115, .no_file = 116, .jit_without_map = 117,
                                                           .unknown_mapping = 118, .python_no_runtime = 131,
                                                           .python_exited = 132 };
        for (int i = 0; i < _PYTHON_CODE_REASON_MAX; i++)
                s.writer.unresolved.python[i] = 140 + (uint64_t) i;
        s.writer.unresolved.hotspot_no_runtime = 161;
        s.writer.unresolved.hotspot_exited = 162;
        for (int i = 0; i < _HOTSPOT_CODE_REASON_MAX; i++)
                s.writer.unresolved.hotspot[i] = 170 + (uint64_t) i;
        s.writer.runtime_names = (struct runtime_names_stats) { .processes = 151, .codes = 152, .bytes = 153,
                                                                .reads = 154, .reused = 155, .evicted = 156,
                                                                .shared = 157, .shared_hits = 158 };
        s.writer.deferred = (struct writer_deferred) { .frames = 181, .lines_added = 182, .not_kept = 183 };
        s.writer.jit_map_entries_dropped = 119;
        s.writer.kallsyms_reads = 3;
        s.writer.kallsyms_kept = 5;
        s.snapshots = (struct snapshot_memo_counts) { .cgroups_named = 211, .cgroups_read = 212, .files_known = 213,
                                                      .files_opened = 214 };
        s.verified[0] = (struct collector_verified) { .name = "profd_oncpu", .insns = 296197 };
        s.verified[1] = (struct collector_verified) { .name = "profd_switch", .insns = 53636 };
        s.n_verified = 2;
        s.writer.retention_on = true;
        s.writer.retention = (struct retention_totals) { 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134 };
        for (int i = 0; i < UNWINDER_FAIL__MAX; i++)
                s.unwind.failures[i] = 300 + (uint64_t) i;
        for (int i = 0; i < STATUS_RUNTIME__MAX; i++)
                s.runtime[i] = 350 + (uint64_t) i;
        for (int i = 0; i < STATUS_HOTSPOT__MAX; i++)
                s.hotspot[i] = 370 + (uint64_t) i;
        s.unwind.hotspot_jvms = 380;
        s.unwind.hotspot_retries = 381;
        for (int i = 0; i < _HOTSPOT_VMSTRUCTS_REASON_MAX; i++)
                s.unwind.hotspot_tables[i] = 390 + (uint64_t) i;
        for (int i = 0; i < _EXPORTER_ERROR_MAX; i++)
                s.export.errors[i] = 400 + (uint64_t) i;
        return s;
}

static long long num(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v)) {
                fprintf(stderr, "key %s: not an integer\n", key);
                return -1;
        }
        return json_integer_value(v);
}

static const char *str(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* The object's keys, in order, joined by spaces. */
static void check_keys(json_t *o, const char *expected) {
        char got[2048] = "";
        size_t len = 0;

        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
                len += (size_t) snprintf(got + len, sizeof(got) - len, "%s%s", len ? " " : "",
                                         json_object_iter_key(it));
        CHECK_STR_EQ(got, expected);
}

static void test_keys_in_order(void) {
        struct conf c = test_conf();
        struct status_stats s = full_stats(&c);
        json_t *o = status_build(&s);

        CHECK(o != NULL);
        check_keys(o, "type version pid uptime_s frequency_hz event interval_ms store_path store_bytes drains "
                      "drains_early last_drain_ns samples stacks processes samples_seen idle_samples drops kinds "
                      "processes_tracked symbol_cache_bytes symbol_mapped_bytes symbol_peak_bytes unresolved "
                      "runtime_names dwarf_deferred sampling_hz raised_until_ns interval_now_ms truncated unwind jit_map_entries_dropped clients queries store_check store_migration "
                      "rss_bytes memory heap_trims heap_trim_ms snapshots kallsyms_reads kallsyms_kept bpf_verified_insns offcpu timeline captures "
                      "max_clients client_timeout_ms "
                      "symbol_cache_limit_bytes debug_dirs retention export");
        check_keys(json_object_get(o, "unwind"), "active processes files files_unused rows_used rows_capacity "
                   "mappings_used mappings_capacity kernel_bytes mapped_bytes tables_built build_ms "
                   "tables_evicted tables_evicted_cold tables_no_room tables_kept_hot tables_queued loads maps_given maps_read misses "
                   "user_walks failures runtime hotspot");
        check_keys(json_object_get(o, "export"), "url host state acknowledged_drain_id backlog_drains "
                   "backlog_oldest_ns last_success_ns exported_drains exported_samples exported_stacks "
                   "exported_frames exported_timeline timeline_unmatched exported_captures captures_backlog "
                   "captures_already_stored bytes_sent already_stored lost_by_retention damaged_blocks errors error "
                   "last_error last_error_ns");
        check_keys(json_object_get(o, "retention"), "active raw_s minute_s all_s max_store_size fold_ppm merged_drains "
                   "merged_for_size deleted_drains deleted_for_size deleted_stacks deleted_processes deleted_locations "
                   "vacuumed_bytes spanned_drains damaged_blocks grouped_processes folded_stacks fold_buckets_big");
        check_keys(json_object_get(o, "memory"), "rss_bytes anon_bytes file_bytes heap_in_use_bytes "
                   "heap_free_bytes sqlite_bytes");
        check_keys(json_object_get(o, "queries"), "workers running parked queued parked_total");
        check_keys(json_object_get(o, "store_check"), "state started_ns finished_ns message");
        check_keys(json_object_get(o, "store_migration"), "pending_rows pending_drains done_rows done_drains "
                   "complete_after_ns running");
        check_keys(json_object_get(o, "offcpu"),
                   "min_ns max_ns filtered_blocks filtered_ns sample_ns sample_auto unsampled_blocks unsampled_ns "
                   "unsampled_wakeups "
                   "self_wakeups kernel_stack_memo");
        check_keys(json_object_get(json_object_get(o, "offcpu"), "kernel_stack_memo"), "hits walks mismatches");
        check_keys(json_object_get(o, "timeline"), "on bytes blocks samples oldest_ns untimed retention_s max_size "
                   "deleted_blocks offcpu");
        check_keys(json_object_get(json_object_get(o, "timeline"), "offcpu"), "blocks bytes oldest_ns logged short "
                   "short_ns unlogged unlogged_ns min_ns");
        check_keys(json_object_get(o, "captures"), "count pinning pinned_bytes max_pinned_bytes cooldown_s before_s "
                   "duration_s refused failed triggers read_errors last");
        check_keys(json_object_get(o, "unresolved"), "no_symbols no_file jit_without_map unknown_mapping "
                   "python_no_runtime python_exited python_read_code python_not_code python_read_string "
                   "python_string_not_compact python_string_too_long python_string_bad "
                   "hotspot_no_runtime hotspot_exited hotspot_no_tables hotspot_read_method hotspot_bad_method "
                   "hotspot_read_blob hotspot_bad_blob");
        check_keys(json_object_get(o, "runtime_names"), "processes codes bytes reads reused evicted shared shared_hits no_line");
        check_keys(json_object_get(json_object_get(o, "runtime_names"), "no_line"),
                   "python_read_linetable python_linetable_too_big python_linetable_bad python_no_line "
                   "python_offset_past_table hotspot_no_line hotspot_no_scope hotspot_bad_scope "
                   "hotspot_far_offset");
        json_decref(o);
}

static void test_values(void) {
        struct conf c = test_conf();
        struct status_stats s = full_stats(&c);
        json_t *o = status_build(&s), *x;

        CHECK_STR_EQ(str(o, "type"), "status");
        CHECK_STR_EQ(str(o, "version"), PROFD_VERSION);
        CHECK_INT_EQ(num(o, "pid"), 4242);
        CHECK_INT_EQ(num(o, "uptime_s"), 3601);
        CHECK_INT_EQ(num(o, "frequency_hz"), 99);
        CHECK_STR_EQ(str(o, "event"), "cpu-clock");
        CHECK_INT_EQ(num(o, "interval_ms"), 10000);
        /* raised: the rate and interval now beside the base ones */
        CHECK_INT_EQ(num(o, "sampling_hz"), 999);
        CHECK_INT_EQ(num(o, "raised_until_ns"), 1764680553250000000LL);
        CHECK_INT_EQ(num(o, "interval_now_ms"), 991);
        CHECK_STR_EQ(str(o, "store_path"), "/var/lib/profd/profd.db");
        CHECK_INT_EQ(num(o, "store_bytes"), 26);
        CHECK_INT_EQ(num(o, "drains"), 21);
        CHECK_INT_EQ(num(o, "drains_early"), 26);
        CHECK_INT_EQ(num(o, "last_drain_ns"), 25);
        CHECK_INT_EQ(num(o, "samples"), 22);
        CHECK_INT_EQ(num(o, "stacks"), 23);
        CHECK_INT_EQ(num(o, "processes"), 24);
        CHECK_INT_EQ(num(o, "samples_seen"), 11);
        CHECK_INT_EQ(num(o, "idle_samples"), 12);
        x = json_object_get(o, "timeline");
        CHECK(json_is_true(json_object_get(x, "on")));
        CHECK_INT_EQ(num(x, "blocks"), 27);
        CHECK_INT_EQ(num(x, "bytes"), 28);
        CHECK_INT_EQ(num(x, "samples"), 29);
        CHECK_INT_EQ(num(x, "oldest_ns"), 30);
        CHECK_INT_EQ(num(x, "untimed"), 16);
        CHECK_INT_EQ(num(x, "retention_s"), 3600);
        CHECK_INT_EQ(num(x, "max_size"), 256 << 20);
        CHECK_INT_EQ(num(x, "deleted_blocks"), 130);
        x = json_object_get(x, "offcpu");
        CHECK_INT_EQ(num(x, "blocks"), 32);
        CHECK_INT_EQ(num(x, "bytes"), 33);
        CHECK_INT_EQ(num(x, "oldest_ns"), 34);
        CHECK_INT_EQ(num(x, "logged"), 17);
        CHECK_INT_EQ(num(x, "short"), 18);
        CHECK_INT_EQ(num(x, "short_ns"), 19);
        CHECK_INT_EQ(num(x, "unlogged"), 20);
        CHECK_INT_EQ(num(x, "unlogged_ns"), 31);
        CHECK_INT_EQ(num(x, "min_ns"), 1000000);
        x = json_object_get(o, "captures");
        CHECK_INT_EQ(num(x, "count"), 141);
        CHECK_INT_EQ(num(x, "pinning"), 142);
        CHECK_INT_EQ(num(x, "pinned_bytes"), 143);
        CHECK_INT_EQ(num(x, "max_pinned_bytes"), 145);
        CHECK_INT_EQ(num(x, "cooldown_s"), 146);
        CHECK_INT_EQ(num(x, "before_s"), 147);
        CHECK_INT_EQ(num(x, "duration_s"), 148);
        CHECK_INT_EQ(num(json_object_get(x, "refused"), "cooling_down"), 149);
        CHECK_INT_EQ(num(json_object_get(x, "refused"), "over_budget"), 150);
        CHECK_INT_EQ(num(x, "failed"), 151);
        CHECK_INT_EQ(num(x, "triggers"), 152);
        CHECK_INT_EQ(num(x, "read_errors"), 153);
        CHECK(json_array_size(json_object_get(x, "last")) == 1);
        {
                json_t *l = json_array_get(json_object_get(x, "last"), 0);

                check_keys(l, "id cause origin uid value_percent trigger_ns from_ns to_ns pinned_bytes state frequency_hz");
                CHECK_INT_EQ(num(l, "id"), 154);
                CHECK_STR_EQ(str(l, "cause"), "cpu:pid=42>80");
                CHECK_STR_EQ(str(l, "origin"), "request");
                CHECK_INT_EQ(num(l, "uid"), 1000);
                CHECK(json_real_value(json_object_get(l, "value_percent")) == 99.5);
                CHECK_INT_EQ(num(l, "trigger_ns"), 155);
                CHECK_INT_EQ(num(l, "from_ns"), 156);
                CHECK_INT_EQ(num(l, "to_ns"), 157);
                CHECK_INT_EQ(num(l, "pinned_bytes"), 158);
                CHECK_STR_EQ(str(l, "state"), "pinned");
        }
        x = json_object_get(o, "kinds");
        CHECK(json_array_size(x) == 2);
        CHECK_STR_EQ(json_string_value(json_array_get(x, 0)), "cpu");
        CHECK_STR_EQ(json_string_value(json_array_get(x, 1)), "offcpu");
        CHECK_INT_EQ(num(o, "processes_tracked"), 111);
        CHECK_INT_EQ(num(o, "symbol_cache_bytes"), 112);
        CHECK_INT_EQ(num(o, "symbol_mapped_bytes"), 113);
        CHECK_INT_EQ(num(o, "symbol_peak_bytes"), 114);
        x = json_object_get(o, "unresolved");
        CHECK_INT_EQ(num(x, "no_symbols"), 115);
        CHECK_INT_EQ(num(x, "no_file"), 116);
        CHECK_INT_EQ(num(x, "jit_without_map"), 117);
        CHECK_INT_EQ(num(x, "unknown_mapping"), 118);
        CHECK_INT_EQ(num(x, "python_no_runtime"), 131);
        CHECK_INT_EQ(num(x, "python_exited"), 132);
        /* the writer's table names each reason of enum python_code_reason */
        for (int i = 1; i < _PYTHON_CODE_REASON_MAX; i++)
                CHECK_STR_EQ(writer_python_reason_names[i], python_names[i]);
        CHECK(writer_python_reason_names[PYTHON_CODE_OK] == NULL);
        for (int i = 1; i < _PYTHON_CODE_REASON_MAX; i++) {
                json_t *where = writer_python_reason_unnamed((unsigned) i)
                        ? x : json_object_get(json_object_get(o, "runtime_names"), "no_line");

                CHECK_INT_EQ(num(where, python_names[i]), 140 + i);
        }
        /* and of enum hotspot_code_reason, "hotspot_" and its name */
        CHECK_INT_EQ(num(x, "hotspot_no_runtime"), 161);
        CHECK_INT_EQ(num(x, "hotspot_exited"), 162);
        CHECK(writer_hotspot_reason_names[HOTSPOT_CODE_OK] == NULL);
        for (int i = 1; i < _HOTSPOT_CODE_REASON_MAX; i++) {
                json_t *where = hotspot_code_reason_unnamed((unsigned) i)
                        ? x : json_object_get(json_object_get(o, "runtime_names"), "no_line");
                char want[64];

                snprintf(want, sizeof want, "hotspot_%s", hotspot_code_reason_name((enum hotspot_code_reason) i));
                for (char *p = want; *p; p++)
                        if (*p == '-')
                                *p = '_';
                CHECK_STR_EQ(writer_hotspot_reason_names[i], want);
                CHECK_INT_EQ(num(where, writer_hotspot_reason_names[i]), 170 + i);
        }
        CHECK_INT_EQ(num(json_object_get(o, "runtime_names"), "codes"), 152);
        CHECK_INT_EQ(num(json_object_get(o, "runtime_names"), "reused"), 155);
        CHECK_INT_EQ(num(json_object_get(o, "runtime_names"), "shared"), 157);
        CHECK_INT_EQ(num(json_object_get(o, "runtime_names"), "shared_hits"), 158);
        check_keys(json_object_get(o, "dwarf_deferred"), "min_samples frames lines_added not_kept");
        CHECK_INT_EQ(num(json_object_get(o, "dwarf_deferred"), "min_samples"), 20);
        CHECK_INT_EQ(num(json_object_get(o, "dwarf_deferred"), "frames"), 181);
        CHECK_INT_EQ(num(json_object_get(o, "dwarf_deferred"), "lines_added"), 182);
        CHECK_INT_EQ(num(json_object_get(o, "dwarf_deferred"), "not_kept"), 183);
        CHECK_INT_EQ(num(o, "jit_map_entries_dropped"), 119);
        CHECK_INT_EQ(num(o, "clients"), 3);
        x = json_object_get(o, "queries");
        CHECK_INT_EQ(num(x, "workers"), 5);
        CHECK_INT_EQ(num(x, "running"), 1);
        CHECK_INT_EQ(num(x, "parked"), 2);
        CHECK_INT_EQ(num(x, "queued"), 3);
        CHECK_INT_EQ(num(x, "parked_total"), 71);
        x = json_object_get(o, "store_check");
        CHECK_STR_EQ(str(x, "state"), "failed");
        CHECK_INT_EQ(num(x, "started_ns"), 81);
        CHECK_INT_EQ(num(x, "finished_ns"), 82);
        CHECK_STR_EQ(str(x, "message"), "page 3");
        x = json_object_get(o, "store_migration");
        CHECK_INT_EQ(num(x, "pending_rows"), 91);
        CHECK_INT_EQ(num(x, "pending_drains"), 92);
        CHECK_INT_EQ(num(x, "done_rows"), 94);
        CHECK_INT_EQ(num(x, "done_drains"), 95);
        CHECK_INT_EQ(num(x, "complete_after_ns"), 93);
        CHECK(json_is_true(json_object_get(x, "running")));
        CHECK_INT_EQ(num(o, "rss_bytes"), 101);
        x = json_object_get(o, "memory");
        CHECK_INT_EQ(num(x, "rss_bytes"), 101);
        CHECK_INT_EQ(num(x, "anon_bytes"), 102);
        CHECK_INT_EQ(num(x, "file_bytes"), 103);
        CHECK_INT_EQ(num(x, "heap_in_use_bytes"), 104);
        CHECK_INT_EQ(num(x, "heap_free_bytes"), 105);
        CHECK_INT_EQ(num(x, "sqlite_bytes"), 106);
        CHECK_INT_EQ(num(o, "heap_trims"), 107);
        CHECK_INT_EQ(num(o, "heap_trim_ms"), 108);
        CHECK_INT_EQ(num(o, "kallsyms_reads"), 3);
        CHECK_INT_EQ(num(o, "kallsyms_kept"), 5);
        CHECK_INT_EQ(num(json_object_get(o, "snapshots"), "cgroups_named"), 211);
        CHECK_INT_EQ(num(json_object_get(o, "snapshots"), "cgroups_read"), 212);
        CHECK_INT_EQ(num(json_object_get(o, "snapshots"), "files_known"), 213);
        CHECK_INT_EQ(num(json_object_get(o, "snapshots"), "files_opened"), 214);
        x = json_object_get(o, "bpf_verified_insns");
        check_keys(x, "profd_oncpu profd_switch");
        CHECK_INT_EQ(num(x, "profd_oncpu"), 296197);
        CHECK_INT_EQ(num(x, "profd_switch"), 53636);
        x = json_object_get(o, "offcpu");
        CHECK_INT_EQ(num(x, "min_ns"), 1000000);
        CHECK(json_is_null(json_object_get(x, "max_ns")));
        CHECK_INT_EQ(num(x, "filtered_blocks"), 13);
        CHECK_INT_EQ(num(x, "filtered_ns"), 14);
        CHECK(json_is_null(json_object_get(x, "sample_ns")));
        CHECK(json_is_false(json_object_get(x, "sample_auto")));
        CHECK_INT_EQ(num(x, "unsampled_blocks"), 15);
        CHECK_INT_EQ(num(x, "unsampled_ns"), 16);
        CHECK_INT_EQ(num(x, "unsampled_wakeups"), 17);
        CHECK_INT_EQ(num(x, "self_wakeups"), 77);
        CHECK_INT_EQ(num(json_object_get(x, "kernel_stack_memo"), "hits"), 18);
        CHECK_INT_EQ(num(json_object_get(x, "kernel_stack_memo"), "walks"), 19);
        CHECK_INT_EQ(num(json_object_get(x, "kernel_stack_memo"), "mismatches"), 20);
        CHECK_INT_EQ(num(o, "max_clients"), 64);
        CHECK_INT_EQ(num(o, "client_timeout_ms"), 30000);
        CHECK_INT_EQ(num(o, "symbol_cache_limit_bytes"), 256 << 20);
        x = json_object_get(o, "debug_dirs");
        CHECK(json_array_size(x) == 2);
        CHECK_STR_EQ(json_string_value(json_array_get(x, 1)), "/opt/debug");
        x = json_object_get(o, "retention");
        CHECK(json_is_true(json_object_get(x, "active")));
        CHECK_INT_EQ(num(x, "raw_s"), 3600);
        CHECK_INT_EQ(num(x, "minute_s"), 86400);
        CHECK_INT_EQ(num(x, "all_s"), 7 * 86400);
        CHECK(json_is_null(json_object_get(x, "max_store_size")));
        CHECK_INT_EQ(num(x, "fold_ppm"), 1234);
        CHECK_INT_EQ(num(x, "merged_drains"), 121);
        CHECK_INT_EQ(num(x, "deleted_drains"), 122);
        CHECK_INT_EQ(num(x, "deleted_for_size"), 123);
        CHECK_INT_EQ(num(x, "deleted_stacks"), 124);
        CHECK_INT_EQ(num(x, "deleted_processes"), 125);
        CHECK_INT_EQ(num(x, "deleted_locations"), 126);
        CHECK_INT_EQ(num(x, "vacuumed_bytes"), 127);
        CHECK_INT_EQ(num(x, "spanned_drains"), 128);
        CHECK_INT_EQ(num(x, "damaged_blocks"), 129);
        CHECK_INT_EQ(num(x, "grouped_processes"), 131);
        CHECK_INT_EQ(num(x, "merged_for_size"), 132);
        CHECK_INT_EQ(num(x, "folded_stacks"), 133);
        CHECK_INT_EQ(num(x, "fold_buckets_big"), 134);
        json_decref(o);
}

/* offcpu_sample = auto: sample_ns is the draw's length now (the
 * collector's, from the rate sampled at), not the setting's sentinel. */
static void test_offcpu_sample_auto(void) {
        struct conf c = test_conf();
        struct status_stats s;
        json_t *o, *x;

        c.offcpu_sample_ns = CONF_OFFCPU_SAMPLE_AUTO;
        s = full_stats(&c);
        s.offcpu_sample_ns = 1001 * NSEC_PER_USEC;
        o = status_build(&s);
        x = json_object_get(o, "offcpu");
        CHECK_INT_EQ(num(x, "sample_ns"), 1001 * NSEC_PER_USEC);
        CHECK(json_is_true(json_object_get(x, "sample_auto")));
        json_decref(o);
}

/* Every BPF counter with a name is a drop or (by its name without the
 * prefix) a truncation: the writer's pending count plus what the store
 * holds under that name. */
static void test_every_drop_counter(void) {
        struct conf c = test_conf();
        struct status_stats s = full_stats(&c);
        json_t *o = status_build(&s);
        json_t *drops = json_object_get(o, "drops"), *trunc = json_object_get(o, "truncated");
        size_t n_drops = 0, n_trunc = 0;

        for (int i = 0; i < PROFD_COUNTER__MAX; i++) {
                const char *name = drop_names[i];
                long long want = 200 + i;

                if (!name)
                        continue;
                if (strncmp(name, TRUNCATED_PREFIX, strlen(TRUNCATED_PREFIX)) == 0) {
                        if (strcmp(name, "truncated_depth") == 0)
                                want += 2000;
                        CHECK_INT_EQ(num(trunc, name + strlen(TRUNCATED_PREFIX)), want);
                        n_trunc++;
                } else {
                        if (strcmp(name, "map_full") == 0)
                                want += 1000;
                        CHECK_INT_EQ(num(drops, name), want);
                        n_drops++;
                }
        }
        /* not BPF counters: the writer's own, plus the store's */
        CHECK_INT_EQ(num(drops, "process_vanished"), 3000);
        CHECK_INT_EQ(num(drops, "store_write_failed"), 7 + 4000);
        CHECK_INT_EQ(json_object_size(drops), n_drops + 2);
        CHECK_INT_EQ(json_object_size(trunc), n_trunc);
        CHECK_INT_EQ(n_drops, 7);
        CHECK_INT_EQ(n_trunc, 8);
        check_keys(trunc, "no_process pending no_mapping unsupported read_fault depth fp_end cfa_stuck");
        json_decref(o);
}

static void test_unwind_and_export(void) {
        struct conf c = test_conf();
        struct status_stats s = full_stats(&c);
        json_t *o = status_build(&s), *u, *e;

        u = json_object_get(o, "unwind");
        CHECK(json_is_true(json_object_get(u, "active")));
        CHECK_INT_EQ(num(u, "processes"), 31);
        CHECK_INT_EQ(num(u, "files"), 32);
        CHECK_INT_EQ(num(u, "files_unused"), 33);
        CHECK_INT_EQ(num(u, "rows_used"), 34);
        CHECK_INT_EQ(num(u, "rows_capacity"), 35);
        CHECK_INT_EQ(num(u, "mappings_used"), 36);
        CHECK_INT_EQ(num(u, "mappings_capacity"), 37);
        CHECK_INT_EQ(num(u, "kernel_bytes"), 38);
        CHECK_INT_EQ(num(u, "mapped_bytes"), 39);
        CHECK_INT_EQ(num(u, "tables_built"), 40);
        CHECK_INT_EQ(num(u, "build_ms"), 41);
        CHECK_INT_EQ(num(u, "tables_evicted"), 42);
        CHECK_INT_EQ(num(u, "tables_no_room"), 43);
        CHECK_INT_EQ(num(u, "tables_evicted_cold"), 47);
        CHECK_INT_EQ(num(u, "tables_kept_hot"), 48);
        CHECK_INT_EQ(num(u, "tables_queued"), 44);
        CHECK_INT_EQ(num(u, "loads"), 45);
        CHECK_INT_EQ(num(u, "maps_given"), 141);
        CHECK_INT_EQ(num(u, "maps_read"), 142);
        CHECK_INT_EQ(num(u, "misses"), 46);
        CHECK_INT_EQ(num(u, "user_walks"), 15);
        for (int i = 0; i < UNWINDER_FAIL__MAX; i++)
                CHECK_INT_EQ(num(json_object_get(u, "failures"), failure_names[i]), 300 + i);
        CHECK_INT_EQ(json_object_size(json_object_get(u, "failures")), UNWINDER_FAIL__MAX);
        for (int i = 0; i < STATUS_RUNTIME__MAX; i++)
                CHECK_INT_EQ(num(json_object_get(u, "runtime"), runtime_walk_names[i]), 350 + i);
        CHECK_INT_EQ(json_object_size(json_object_get(u, "runtime")), STATUS_RUNTIME__MAX);
        check_keys(json_object_get(u, "hotspot"), "jvms retries tables walks frames no_heap no_blob bad_segmap "
                   "bad_frame read_fault code_range");
        for (int i = 0; i < STATUS_HOTSPOT__MAX; i++)
                CHECK_INT_EQ(num(json_object_get(u, "hotspot"), hotspot_walk_names[i]), 370 + i);
        CHECK_INT_EQ(num(json_object_get(u, "hotspot"), "jvms"), 380);
        CHECK_INT_EQ(num(json_object_get(u, "hotspot"), "retries"), 381);
        /* the reasons but "ok" */
        CHECK_INT_EQ(json_object_size(json_object_get(json_object_get(u, "hotspot"), "tables")),
                     _HOTSPOT_VMSTRUCTS_REASON_MAX - 1);
        CHECK_INT_EQ(num(json_object_get(json_object_get(u, "hotspot"), "tables"), "read_layout"), 391);

        e = json_object_get(o, "export");
        CHECK_STR_EQ(str(e, "url"), "http://ch:8123");
        CHECK_STR_EQ(str(e, "host"), "web1");
        CHECK_STR_EQ(str(e, "state"), "retrying");
        CHECK_INT_EQ(num(e, "acknowledged_drain_id"), 52);
        CHECK_INT_EQ(num(e, "backlog_drains"), 51);
        CHECK_INT_EQ(num(e, "backlog_oldest_ns"), 53);
        CHECK(json_is_null(json_object_get(e, "last_success_ns")));
        CHECK_INT_EQ(num(e, "exported_drains"), 54);
        CHECK_INT_EQ(num(e, "exported_samples"), 55);
        CHECK_INT_EQ(num(e, "exported_stacks"), 56);
        CHECK_INT_EQ(num(e, "exported_frames"), 57);
        CHECK_INT_EQ(num(e, "exported_timeline"), 63);
        CHECK_INT_EQ(num(e, "timeline_unmatched"), 64);
        CHECK_INT_EQ(num(e, "exported_captures"), 65);
        CHECK_INT_EQ(num(e, "captures_backlog"), 66);
        CHECK_INT_EQ(num(e, "captures_already_stored"), 67);
        CHECK_INT_EQ(num(e, "bytes_sent"), 58);
        CHECK_INT_EQ(num(e, "already_stored"), 59);
        CHECK_INT_EQ(num(e, "lost_by_retention"), 60);
        CHECK_INT_EQ(num(e, "damaged_blocks"), 61);
        check_keys(json_object_get(e, "errors"), "connect timeout auth schema http local");
        for (int i = 0; i < _EXPORTER_ERROR_MAX; i++)
                CHECK_INT_EQ(num(json_object_get(e, "errors"), exporter_error_names[i]), 400 + i);
        CHECK_STR_EQ(str(e, "error"), "auth");
        CHECK_STR_EQ(str(e, "last_error"), "wrong password");
        CHECK_INT_EQ(num(e, "last_error_ns"), 62);
        json_decref(o);
}

/* --kinds none: no collector, writer, unwinder or export; a store check
 * that could not start and no migration. */
static void test_serve_only(void) {
        struct conf c = test_conf();
        struct status_stats s = {
                .conf = &c,
        };
        json_t *o, *x;

        c.kind_cpu = c.kind_offcpu = false;
        c.offcpu_max_ns = 5000;
        c.max_store_size = 1 << 30;
        o = status_build(&s);
        CHECK(o != NULL);
        CHECK_INT_EQ(num(o, "frequency_hz"), 0);
        CHECK_INT_EQ(num(o, "sampling_hz"), 0);
        CHECK_INT_EQ(num(o, "raised_until_ns"), 0);
        CHECK(json_is_null(json_object_get(o, "event")));
        CHECK_INT_EQ(json_array_size(json_object_get(o, "kinds")), 0);
        CHECK(json_object_get(o, "export") == NULL);
        CHECK(json_is_null(json_object_get(o, "store_check")));
        CHECK(json_is_null(json_object_get(o, "store_migration")));
        CHECK(json_is_false(json_object_get(json_object_get(o, "unwind"), "active")));
        CHECK(json_is_false(json_object_get(json_object_get(o, "retention"), "active")));
        CHECK_INT_EQ(num(json_object_get(o, "retention"), "max_store_size"), 1 << 30);
        CHECK_INT_EQ(num(json_object_get(o, "offcpu"), "max_ns"), 5000);
        x = json_object_get(o, "drops");
        CHECK_INT_EQ(num(x, "map_full"), 0);
        CHECK_INT_EQ(num(x, "process_vanished"), 0);
        CHECK_INT_EQ(num(x, "store_write_failed"), 0);
        CHECK_INT_EQ(num(json_object_get(o, "truncated"), "depth"), 0);
        json_decref(o);

        /* a migration that is over shows as null too */
        s.migration_read = true;
        o = status_build(&s);
        CHECK(json_is_null(json_object_get(o, "store_migration")));
        json_decref(o);
}

/* The setting timeline off: status says so, and still counts what the
 * store holds of the timeline from before. */
static void test_timeline_off(void) {
        struct conf c = test_conf();
        struct status_stats s = full_stats(&c);
        json_t *o, *x;

        c.timeline = false;
        o = status_build(&s);
        CHECK(o != NULL);
        x = json_object_get(o, "timeline");
        CHECK(json_is_false(json_object_get(x, "on")));
        CHECK_INT_EQ(num(x, "blocks"), 27);
        json_decref(o);
}

/* The one reader of the system: this process's own resident memory. */
static void test_rss_read(void) {
        struct status_rss rss;

        status_rss_read(&rss);
        CHECK(rss.total > 0);
        CHECK(rss.anon + rss.file <= rss.total + 4096 * 16);
}

/* The daemon's tables name every counter and failure as the protocol does. */
static void test_names_are_the_protocol(void) {
        for (size_t i = 0; i < PROFD_COUNTER__MAX; i++) {
                if (drop_names[i] || drop_reason_names[i])
                        CHECK_STR_EQ(drop_reason_names[i], drop_names[i]);
        }
        for (size_t i = 0; i < UNWINDER_FAIL__MAX; i++)
                CHECK_STR_EQ(unwinder_failure_names[i], failure_names[i]);
}

int main(void) {
        test_offcpu_sample_auto();
        test_names_are_the_protocol();
        test_keys_in_order();
        test_values();
        test_every_drop_counter();
        test_unwind_and_export();
        test_serve_only();
        test_timeline_off();
        test_rss_read();
        TESTS_DONE();
}
