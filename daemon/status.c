/* The status answer from the parts' stats (status.h). */
#include "status.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "helpers.h"
#include "macro.h"
#include "status-keys.h"

void status_rss_read(struct status_rss *ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        unsigned long kib;

        *ret = (struct status_rss) {};
        while (f && fgets(line, sizeof(line), f)) {
                if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
                        ret->total = (uint64_t) kib * 1024;
                else if (sscanf(line, "RssAnon: %lu kB", &kib) == 1)
                        ret->anon = (uint64_t) kib * 1024;
                else if (sscanf(line, "RssFile: %lu kB", &kib) == 1)
                        ret->file = (uint64_t) kib * 1024;
        }
}

/* Where the resident memory is: anonymous and file pages, what malloc
 * holds in use and free, and SQLite's part of what is in use. */
static json_t *status_memory(const struct status_stats *s) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
                         STATUS_KEY_RSS_BYTES, (json_int_t) s->rss.total,
                         STATUS_KEY_ANON_BYTES, (json_int_t) s->rss.anon,
                         STATUS_KEY_FILE_BYTES, (json_int_t) s->rss.file,
                         STATUS_KEY_HEAP_IN_USE_BYTES, (json_int_t) s->heap_in_use_bytes,
                         "heap_free_bytes", (json_int_t) s->heap_free_bytes,
                         STATUS_KEY_SQLITE_BYTES, (json_int_t) s->sqlite_bytes);
}

/* The settings that can change on a reload, and what retention did: so a
 * reload, and every setting, can be checked from profctl status. */
static void status_add_settings(const struct status_stats *s, json_t *o) {
        const struct conf *c = s->conf;
        const struct writer_stats *ws = &s->writer;
        json_t *dirs = json_array();

        for (size_t i = 0; dirs && c->debug_dirs && c->debug_dirs[i]; i++)
                json_array_append_new(dirs, json_string(c->debug_dirs[i]));
        json_object_set_new(o, "max_clients", json_integer(c->max_clients));
        json_object_set_new(o, "client_timeout_ms", json_integer((json_int_t) (c->client_timeout_ns / NSEC_PER_MSEC)));
        json_object_set_new(o, "symbol_cache_limit_bytes", json_integer((json_int_t) c->symbol_cache_bytes));
        json_object_set_new(o, "debug_dirs", dirs);
        json_object_set_new(o, "retention", json_pack("{s:b, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                "active", ws->retention_on,
                "raw_s", (json_int_t) (c->retention_raw_ns / NSEC_PER_SEC),
                "minute_s", (json_int_t) (c->retention_1m_ns / NSEC_PER_SEC),
                "all_s", (json_int_t) (c->retention_ns / NSEC_PER_SEC),
                "max_store_size", c->max_store_size ? json_integer((json_int_t) c->max_store_size) : json_null(),
                "fold_ppm", (json_int_t) c->retention_fold_ppm,
                "merged_drains", (json_int_t) ws->retention.merged_drains,
                "merged_for_size", (json_int_t) ws->retention.merged_for_size,
                "deleted_drains", (json_int_t) ws->retention.deleted_drains,
                "deleted_for_size", (json_int_t) ws->retention.deleted_for_size,
                "deleted_stacks", (json_int_t) ws->retention.deleted_stacks,
                "deleted_processes", (json_int_t) ws->retention.deleted_processes,
                "deleted_locations", (json_int_t) ws->retention.deleted_locations,
                "vacuumed_bytes", (json_int_t) ws->retention.vacuumed_bytes,
                "spanned_drains", (json_int_t) ws->retention.spanned_drains,
                "damaged_blocks", (json_int_t) ws->retention.damaged_blocks,
                "grouped_processes", (json_int_t) ws->retention.grouped_processes,
                "folded_stacks", (json_int_t) ws->retention.folded_stacks,
                "fold_buckets_big", (json_int_t) ws->retention.fold_buckets_big));
}

/* The timeline (issue 44): what the store holds of it, its own retention,
 * and the on-CPU samples that are in the aggregates without a time. */
static json_t *status_timeline(const struct status_stats *s) {
        const struct conf *c = s->conf;

        json_t *offtime = json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
                                    STATUS_KEY_OFFTIME_BLOCKS, (json_int_t) s->store.offtime_blocks,
                                    STATUS_KEY_OFFTIME_BYTES, (json_int_t) s->store.offtime_bytes,
                                    STATUS_KEY_OFFTIME_OLDEST_NS,
                                    s->store.offtime_rows ? json_integer((json_int_t) s->store.offtime_oldest_ns)
                                                          : json_null(),
                                    STATUS_KEY_OFFTIME_LOGGED, (json_int_t) s->offtime_logged,
                                    STATUS_KEY_OFFTIME_SHORT, (json_int_t) s->offtime_short,
                                    STATUS_KEY_OFFTIME_SHORT_NS, (json_int_t) s->offtime_short_ns,
                                    STATUS_KEY_OFFTIME_UNLOGGED, (json_int_t) s->offtime_unlogged,
                                    STATUS_KEY_OFFTIME_UNLOGGED_NS, (json_int_t) s->offtime_unlogged_ns,
                                    STATUS_KEY_OFFTIME_MIN_NS, (json_int_t) c->timeline_offcpu_min_ns);

        return json_pack("{s:b, s:I, s:I, s:I, s:o, s:I, s:I, s:o, s:I, s:o*}",
                         STATUS_KEY_TIMELINE_ON, (int) c->timeline,
                         STATUS_KEY_TIMELINE_BYTES, (json_int_t) s->store.timeline_bytes,
                         STATUS_KEY_TIMELINE_BLOCKS, (json_int_t) s->store.timeline_blocks,
                         STATUS_KEY_TIMELINE_SAMPLES, (json_int_t) s->store.timeline_samples,
                         STATUS_KEY_TIMELINE_OLDEST_NS,
                         s->store.timeline_blocks ? json_integer((json_int_t) s->store.timeline_oldest_ns) : json_null(),
                         STATUS_KEY_TIMELINE_UNTIMED, (json_int_t) s->timeline_untimed,
                         "retention_s", (json_int_t) (c->timeline_retention_ns / NSEC_PER_SEC),
                         "max_size", c->timeline_max_size ? json_integer((json_int_t) c->timeline_max_size) : json_null(),
                         "deleted_blocks", (json_int_t) s->writer.retention.deleted_timeline,
                         STATUS_KEY_OFFTIME, offtime);
}

/* Captures (issue 44); null when no capture manager runs. */
static json_t *status_captures(const struct status_stats *s) {
        const struct capture_status *c = &s->captures;
        json_t *o, *refused = json_object(), *last = json_array();

        if (!c->running) {
                json_decref(refused);
                json_decref(last);
                return json_null();
        }
        for (unsigned v = 0; refused && v < _CAPTURE_VERDICT_MAX; v++)
                if (v != CAPTURE_GRANTED)
                        json_object_set_new(refused, capture_verdict_name(v), json_integer((json_int_t) c->refused[v]));
        for (size_t i = 0; last && i < c->n_last; i++)
                json_array_append_new(last, capture_json(&c->last[i]));
        o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:o}",
                      STATUS_KEY_CAPTURE_COUNT, (json_int_t) c->totals.count,
                      STATUS_KEY_CAPTURE_PINNING, (json_int_t) c->totals.pinning,
                      STATUS_KEY_CAPTURE_PINNED_BYTES, (json_int_t) c->totals.pinned_bytes,
                      STATUS_KEY_CAPTURE_MAX_PINNED, (json_int_t) c->budget_bytes,
                      STATUS_KEY_CAPTURE_COOLDOWN_S, (json_int_t) (c->cooldown_ns / NSEC_PER_SEC),
                      "before_s", (json_int_t) (c->before_ns / NSEC_PER_SEC),
                      "duration_s", (json_int_t) (c->duration_ns / NSEC_PER_SEC),
                      STATUS_KEY_CAPTURE_REFUSED, refused ? refused : json_null(),
                      STATUS_KEY_CAPTURE_FAILED, (json_int_t) c->failed,
                      STATUS_KEY_CAPTURE_TRIGGERS, (json_int_t) c->triggers,
                      "read_errors", (json_int_t) c->read_errors,
                      STATUS_KEY_CAPTURE_LAST, last ? last : json_null());
        return o;
}

/* Adds n to the count of a stored reason: a drop, or a truncation (by its
 * name without TRUNCATED_PREFIX). */
static void status_count_add(json_t *drops, json_t *truncated, const char *reason, uint64_t n) {
        bool is_trunc = strncmp(reason, TRUNCATED_PREFIX, strlen(TRUNCATED_PREFIX)) == 0;
        json_t *to = is_trunc ? truncated : drops, *cur;
        const char *key = is_trunc ? reason + strlen(TRUNCATED_PREFIX) : reason;

        cur = json_object_get(to, key);
        json_object_set_new(to, key, json_integer((json_int_t) n + (cur ? json_integer_value(cur) : 0)));
}

/* The drops and truncations: those the store holds, and those of drains
 * it could not take yet (the writer's pending counts). Fills *ret_drops
 * and *ret_truncated, either NULL when out of memory. */
static void status_drops(const struct status_stats *s, json_t **ret_drops, json_t **ret_truncated) {
        json_t *drops = json_object(), *truncated = json_object();

        for (int i = 0; drops && truncated && i < PROFD_COUNTER__MAX; i++)
                if (drop_reason_names[i])
                        /* not yet in the store: drops of drains it could not take */
                        status_count_add(drops, truncated, drop_reason_names[i], s->writer.pending_drops[i]);
        if (drops && truncated) {
                json_object_set_new(drops, DROP_PROCESS_VANISHED, json_integer(0));
                json_object_set_new(drops, DROP_STORE_WRITE_FAILED, json_integer((json_int_t) s->writer.failed_drains));
                for (size_t i = 0; i < s->store.n_drops; i++)
                        status_count_add(drops, truncated, s->store.drops[i].reason, s->store.drops[i].count);
        }
        *ret_drops = drops;
        *ret_truncated = truncated;
}

const char *const status_runtime_names[STATUS_RUNTIME__MAX] = {
        "walks", "frames", "no_thread_state", "read_fault", "no_frame",
};
_Static_assert(PROFD_RT_NO_FRAME - PROFD_CNT_RT_WALKS + 1 == STATUS_RUNTIME__MAX, "one name per runtime counter");

const char *const status_hotspot_names[STATUS_HOTSPOT__MAX] = {
        "walks", "frames", "no_heap", "no_blob", "bad_segmap", "bad_frame", "read_fault", "code_range",
};
_Static_assert(PROFD_RT_CODE_RANGE - PROFD_HS_WALKS + 1 == STATUS_HOTSPOT__MAX, "one name per HotSpot counter");

/* The runtime walks (CPython's): hand-overs, pseudo-frames emitted, and
 * why one gave none (the interpreter's native frames kept). */
static json_t *status_runtime(const struct status_stats *s) {
        json_t *o = json_object();

        for (int i = 0; o && i < STATUS_RUNTIME__MAX; i++)
                json_object_set_new(o, status_runtime_names[i], json_integer((json_int_t) s->runtime[i]));
        return o;
}

/* JVMs (issue 42): those given HotSpot's walker, the reads of one whose
 * code cache was not set up yet, why one's VM structs did not read (by
 * reason), and why the walker left a frame of a code cache to the native
 * walk (its BPF counters). */
static json_t *status_hotspot(const struct status_stats *s) {
        const struct unwinder_stats *us = &s->unwind;
        json_t *tables = json_object(), *o;

        for (int i = 1; tables && i < _HOTSPOT_VMSTRUCTS_REASON_MAX; i++) {
                char key[32];

                /* "read-layout" as status spells its keys: read_layout */
                snprintf(key, sizeof(key), "%s", hotspot_vmstructs_reason_name((enum hotspot_vmstructs_reason) i));
                for (char *c = key; *c; c++)
                        if (*c == '-')
                                *c = '_';
                json_object_set_new(tables, key, json_integer((json_int_t) us->hotspot_tables[i]));
        }
        o = json_pack("{s:I, s:I, s:o*}", "jvms", (json_int_t) us->hotspot_jvms, "retries",
                      (json_int_t) us->hotspot_retries, "tables", tables);
        for (int i = 0; o && i < STATUS_HOTSPOT__MAX; i++)
                json_object_set_new(o, status_hotspot_names[i], json_integer((json_int_t) s->hotspot[i]));
        return o;
}

/* What the unwinder holds and did: tables, kernel memory, failures. */
static json_t *status_unwind(const struct status_stats *s) {
        const struct unwinder_stats *us = &s->unwind;
        json_t *fail = json_object(), *o;

        for (int i = 0; fail && i < UNWINDER_FAIL__MAX; i++)
                json_object_set_new(fail, unwinder_failure_names[i], json_integer((json_int_t) us->failures[i]));
        o = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o*, s:o*}",
                      "active", s->unwinder_running,
                      STATUS_KEY_PROCESSES, (json_int_t) us->processes,
                      STATUS_KEY_FILES, (json_int_t) us->files,
                      STATUS_KEY_FILES_UNUSED, (json_int_t) us->files_unused,
                      STATUS_KEY_ROWS_USED, (json_int_t) us->rows_used,
                      STATUS_KEY_ROWS_CAPACITY, (json_int_t) us->rows_capacity,
                      "mappings_used", (json_int_t) us->mappings_used,
                      "mappings_capacity", (json_int_t) us->mappings_capacity,
                      STATUS_KEY_KERNEL_BYTES, (json_int_t) us->kernel_bytes,
                      "mapped_bytes", (json_int_t) us->mapped_bytes,
                      STATUS_KEY_TABLES_BUILT, (json_int_t) us->tables_built,
                      STATUS_KEY_BUILD_MS, (json_int_t) (us->build_ns / NSEC_PER_MSEC),
                      STATUS_KEY_TABLES_EVICTED, (json_int_t) us->tables_evicted,
                      STATUS_KEY_TABLES_EVICTED_COLD, (json_int_t) us->tables_evicted_cold,
                      STATUS_KEY_TABLES_NO_ROOM, (json_int_t) us->tables_no_room,
                      STATUS_KEY_TABLES_KEPT_HOT, (json_int_t) us->tables_kept_hot,
                      "tables_queued", (json_int_t) us->tables_queued,
                      "loads", (json_int_t) us->requests,
                      "maps_given", (json_int_t) us->maps_given,
                      "maps_read", (json_int_t) us->maps_read,
                      "misses", (json_int_t) us->misses,
                      STATUS_KEY_USER_WALKS, (json_int_t) s->user_walks,
                      STATUS_KEY_FAILURES, fail,
                      STATUS_KEY_RUNTIME, status_runtime(s),
                      "hotspot", status_hotspot(s));
        return o;
}

/* The ClickHouse export: where to, how far behind, and what went wrong
 * (docs/clickhouse.md, Status). */
static json_t *status_export(const struct status_stats *s) {
        const struct exporter_status *es = &s->export;
        json_t *errors = json_object();

        for (int i = 0; errors && i < _EXPORTER_ERROR_MAX; i++)
                json_object_set_new(errors, exporter_error_names[i], json_integer((json_int_t) es->errors[i]));
        return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}",
                         STATUS_KEY_URL, s->conf->clickhouse_url,
                         STATUS_KEY_HOST, s->conf->host_name,
                         STATUS_KEY_STATE, es->state,
                         "acknowledged_drain_id", (json_int_t) es->acknowledged_drain_id,
                         STATUS_KEY_BACKLOG_DRAINS, (json_int_t) es->backlog_drains,
                         STATUS_KEY_BACKLOG_OLDEST_NS, es->backlog_oldest_ns ? json_integer((json_int_t) es->backlog_oldest_ns)
                                                                    : json_null(),
                         STATUS_KEY_LAST_SUCCESS_NS, es->last_success_ns ? json_integer((json_int_t) es->last_success_ns)
                                                                : json_null(),
                         STATUS_KEY_EXPORTED_DRAINS, (json_int_t) es->exported_drains,
                         STATUS_KEY_EXPORTED_SAMPLES, (json_int_t) es->exported_samples,
                         STATUS_KEY_EXPORTED_STACKS, (json_int_t) es->exported_stacks,
                         STATUS_KEY_EXPORTED_FRAMES, (json_int_t) es->exported_frames,
                         STATUS_KEY_EXPORTED_TIMELINE, (json_int_t) es->exported_timeline,
                         STATUS_KEY_TIMELINE_UNMATCHED, (json_int_t) es->timeline_unmatched,
                         STATUS_KEY_EXPORTED_CAPTURES, (json_int_t) es->exported_captures,
                         STATUS_KEY_CAPTURES_BACKLOG, (json_int_t) es->captures_backlog,
                         STATUS_KEY_CAPTURES_ALREADY_STORED, (json_int_t) es->captures_already_stored,
                         STATUS_KEY_BYTES_SENT, (json_int_t) es->bytes_sent,
                         STATUS_KEY_ALREADY_STORED, (json_int_t) es->already_stored,
                         STATUS_KEY_LOST_BY_RETENTION, (json_int_t) es->lost_by_retention,
                         STATUS_KEY_DAMAGED_BLOCKS, (json_int_t) es->damaged_blocks,
                         STATUS_KEY_ERRORS, errors ? errors : json_null(),
                         STATUS_KEY_ERROR, es->last_error_kind >= 0 ? json_string(exporter_error_names[es->last_error_kind])
                                                           : json_null(),
                         STATUS_KEY_LAST_ERROR, es->last_error[0] ? json_string(es->last_error) : json_null(),
                         STATUS_KEY_LAST_ERROR_NS, es->last_error_ns ? json_integer((json_int_t) es->last_error_ns) : json_null());
}

/* The query workers (docs/protocol.md, status): answers being made, parked
 * on clients that do not read, and requests waiting for a worker. */
static json_t *status_queries(const struct status_stats *s) {
        const struct query_pool_stats *qs = &s->queries;

        return json_pack("{s:I, s:I, s:I, s:I, s:I}",
                         STATUS_KEY_WORKERS, (json_int_t) qs->threads,
                         STATUS_KEY_RUNNING, (json_int_t) qs->running,
                         STATUS_KEY_PARKED, (json_int_t) qs->parked,
                         STATUS_KEY_QUEUED, (json_int_t) qs->queued,
                         STATUS_KEY_PARKED_TOTAL, (json_int_t) qs->parks);
}

/* The store's integrity check (docs/protocol.md, status); null when it
 * could not start (logged then). */
static json_t *status_store_check(const struct status_stats *s) {
        const struct store_check_status *cs = &s->check;

        if (!s->check_running)
                return json_null();
        return json_pack("{s:s, s:I, s:o, s:o}",
                         STATUS_KEY_STATE, store_check_state_name(cs->state),
                         STATUS_KEY_STARTED_NS, (json_int_t) cs->started_ns,
                         STATUS_KEY_FINISHED_NS, cs->finished_ns ? json_integer((json_int_t) cs->finished_ns) : json_null(),
                         STATUS_KEY_MESSAGE, cs->state == STORE_CHECK_FAILED ? json_string(cs->message) : json_null());
}

/* Schema 8's conversion of an older store's samples (store-migrate.c):
 * null when there is nothing (left) to convert. */
static json_t *status_store_migration(const struct status_stats *s) {
        const struct store_migration *mg = &s->migration;

        if (!s->migration_read || !mg->active)
                return json_null();
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}",
                         STATUS_KEY_PENDING_ROWS, (json_int_t) mg->pending_rows,
                         STATUS_KEY_PENDING_DRAINS, (json_int_t) mg->pending_drains,
                         STATUS_KEY_DONE_ROWS, (json_int_t) mg->done_rows,
                         "done_drains", (json_int_t) mg->done_drains,
                         STATUS_KEY_COMPLETE_AFTER_NS, (json_int_t) mg->complete_after_ns,
                         /* serve-only runs no writer: nothing converts */
                         STATUS_KEY_RUNNING, s->writer_running);
}

/* User frames without a name, by reason: native ones, then Python
 * pseudo-frames (writer_unresolved). */
static json_t *status_unresolved(const struct writer_stats *ws) {
        const struct writer_unresolved *u = &ws->unresolved;
        json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
                              "no_symbols", (json_int_t) u->no_symbols,
                              "no_file", (json_int_t) u->no_file,
                              "jit_without_map", (json_int_t) u->jit_without_map,
                              "unknown_mapping", (json_int_t) u->unknown_mapping,
                              WRITER_PYTHON_NO_RUNTIME, (json_int_t) u->python_no_runtime,
                              WRITER_PYTHON_EXITED, (json_int_t) u->python_exited);

        for (unsigned i = 0; o && i < _PYTHON_CODE_REASON_MAX; i++)
                if (writer_python_reason_names[i] && writer_python_reason_unnamed(i))
                        json_object_set_new(o, writer_python_reason_names[i], json_integer((json_int_t) u->python[i]));
        /* HotSpot pseudo-frames, likewise */
        if (o) {
                json_object_set_new(o, WRITER_HOTSPOT_NO_RUNTIME, json_integer((json_int_t) u->hotspot_no_runtime));
                json_object_set_new(o, WRITER_HOTSPOT_EXITED, json_integer((json_int_t) u->hotspot_exited));
        }
        for (unsigned i = 0; o && i < _HOTSPOT_CODE_REASON_MAX; i++)
                if (writer_hotspot_reason_names[i] && hotspot_code_reason_unnamed(i))
                        json_object_set_new(o, writer_hotspot_reason_names[i], json_integer((json_int_t) u->hotspot[i]));
        return o;
}

/* The cache of Python code objects (runtime-names.h), and the named
 * Python frames stored without a line, by reason. */
static json_t *status_python_names(const struct writer_stats *ws) {
        const struct runtime_names_stats *n = &ws->runtime_names;
        json_t *no_line = json_object();

        for (unsigned i = 0; no_line && i < _PYTHON_CODE_REASON_MAX; i++)
                if (writer_python_reason_names[i] && !writer_python_reason_unnamed(i))
                        json_object_set_new(no_line, writer_python_reason_names[i],
                                            json_integer((json_int_t) ws->unresolved.python[i]));
        /* HotSpot's named frames without a line, or without their inlined calls */
        for (unsigned i = 0; no_line && i < _HOTSPOT_CODE_REASON_MAX; i++)
                if (writer_hotspot_reason_names[i] && !hotspot_code_reason_unnamed(i))
                        json_object_set_new(no_line, writer_hotspot_reason_names[i],
                                            json_integer((json_int_t) ws->unresolved.hotspot[i]));
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o?}",
                         STATUS_KEY_PROCESSES, (json_int_t) n->processes,
                         STATUS_KEY_CODES, (json_int_t) n->codes,
                         STATUS_KEY_BYTES, (json_int_t) n->bytes,
                         STATUS_KEY_READS, (json_int_t) n->reads,
                         STATUS_KEY_REUSED, (json_int_t) n->reused,
                         STATUS_KEY_EVICTED, (json_int_t) n->evicted,
                         STATUS_KEY_SHARED, (json_int_t) n->shared,
                         STATUS_KEY_SHARED_HITS, (json_int_t) n->shared_hits,
                         STATUS_KEY_NO_LINE, no_line);
}

/* The keys after the first ones, in the order profctl and the tests have
 * always seen them. */
static void status_add_parts(const struct status_stats *s, json_t *o) {
        const struct conf *c = s->conf;
        const struct writer_stats *ws = &s->writer;
        json_t *kinds = json_array();

        if (c->kind_cpu)
                json_array_append_new(kinds, json_string("cpu"));
        if (c->kind_offcpu)
                json_array_append_new(kinds, json_string("offcpu"));
        if (c->kind_wakeup)
                json_array_append_new(kinds, json_string("wakeup"));
        json_object_set_new(o, STATUS_KEY_KINDS, kinds);
        json_object_set_new(o, STATUS_KEY_PROCESSES_TRACKED, json_integer((json_int_t) ws->processes_tracked));
        json_object_set_new(o, STATUS_KEY_SYMBOL_CACHE_BYTES, json_integer((json_int_t) ws->symbol_cache_bytes));
        json_object_set_new(o, "symbol_mapped_bytes", json_integer((json_int_t) ws->symbol_mapped_bytes));
        json_object_set_new(o, "symbol_peak_bytes", json_integer((json_int_t) ws->symbol_peak_bytes));
        json_object_set_new(o, STATUS_KEY_UNRESOLVED, status_unresolved(ws));
        json_object_set_new(o, STATUS_KEY_RUNTIME_NAMES, status_python_names(ws));
        json_object_set_new(o, STATUS_KEY_DWARF_DEFERRED,
                            json_pack("{s:I, s:I, s:I, s:I}",
                                      STATUS_KEY_MIN_SAMPLES, (json_int_t) c->dwarf_min_samples,
                                      STATUS_KEY_FRAMES, (json_int_t) ws->deferred.frames,
                                      STATUS_KEY_LINES_ADDED, (json_int_t) ws->deferred.lines_added,
                                      STATUS_KEY_NOT_KEPT, (json_int_t) ws->deferred.not_kept));
}

json_t *status_build(const struct status_stats *s) {
        const struct conf *c = s->conf;
        json_t *drops, *truncated, *o;

        status_drops(s, &drops, &truncated);
        o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:s?, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                      "type", "status",
                      STATUS_KEY_VERSION, PROFD_VERSION,
                      STATUS_KEY_PID, (json_int_t) s->pid,
                      STATUS_KEY_UPTIME_S, (json_int_t) s->uptime_s,
                      STATUS_KEY_FREQUENCY_HZ, (json_int_t) (c->kind_cpu ? c->frequency_hz : 0),
                      STATUS_KEY_EVENT, s->event,
                      STATUS_KEY_INTERVAL_MS, (json_int_t) (c->interval_ns / NSEC_PER_MSEC),
                      STATUS_KEY_STORE_PATH, c->store_path,
                      STATUS_KEY_STORE_BYTES, (json_int_t) s->store.file_bytes,
                      STATUS_KEY_DRAINS, (json_int_t) s->store.drains,
                      STATUS_KEY_DRAINS_EARLY, (json_int_t) s->drains_early,
                      STATUS_KEY_LAST_DRAIN_NS, (json_int_t) s->store.last_drain_ns,
                      STATUS_KEY_SAMPLES, (json_int_t) s->store.samples,
                      STATUS_KEY_STACKS, (json_int_t) s->store.stacks,
                      STATUS_KEY_PROCESSES, (json_int_t) s->store.processes,
                      STATUS_KEY_SAMPLES_SEEN, (json_int_t) s->samples_seen,
                      STATUS_KEY_IDLE_SAMPLES, (json_int_t) s->idle_samples,
                      STATUS_KEY_DROPS, drops);
        if (!o) {
                json_decref(truncated);
                return NULL;
        }
        status_add_parts(s, o);
        json_object_set_new(o, STATUS_KEY_SAMPLING_HZ, json_integer((json_int_t) (c->kind_cpu ? s->sampling_hz : 0)));
        json_object_set_new(o, STATUS_KEY_RAISED_UNTIL_NS, json_integer((json_int_t) s->raised_until_ns));
        json_object_set_new(o, STATUS_KEY_INTERVAL_NOW_MS,
                            json_integer((json_int_t) ((s->interval_now_ns ?: c->interval_ns) / NSEC_PER_MSEC)));
        json_object_set_new(o, STATUS_KEY_TRUNCATED, truncated ? truncated : json_object());
        json_object_set_new(o, STATUS_KEY_UNWIND, status_unwind(s));
        json_object_set_new(o, "jit_map_entries_dropped", json_integer((json_int_t) s->writer.jit_map_entries_dropped));
        json_object_set_new(o, STATUS_KEY_CLIENTS, json_integer((json_int_t) s->clients));
        json_object_set_new(o, STATUS_KEY_QUERIES, status_queries(s));
        json_object_set_new(o, STATUS_KEY_STORE_CHECK, status_store_check(s));
        json_object_set_new(o, STATUS_KEY_STORE_MIGRATION, status_store_migration(s));
        json_object_set_new(o, STATUS_KEY_RSS_BYTES, json_integer((json_int_t) s->rss.total));
        json_object_set_new(o, STATUS_KEY_MEMORY, status_memory(s));
        json_object_set_new(o, "heap_trims", json_integer((json_int_t) s->heap_trims));
        json_object_set_new(o, "heap_trim_ms", json_integer((json_int_t) (s->heap_trim_ns / NSEC_PER_MSEC)));
        json_object_set_new(o, "snapshots", json_pack("{s:I, s:I, s:I, s:I}",
                                                      "cgroups_named", (json_int_t) s->snapshots.cgroups_named,
                                                      "cgroups_read", (json_int_t) s->snapshots.cgroups_read,
                                                      "files_known", (json_int_t) s->snapshots.files_known,
                                                      "files_opened", (json_int_t) s->snapshots.files_opened));
        json_object_set_new(o, "kallsyms_reads", json_integer((json_int_t) s->writer.kallsyms_reads));
        json_object_set_new(o, "kallsyms_kept", json_integer((json_int_t) s->writer.kallsyms_kept));
        {
                json_t *v = json_object();

                for (size_t i = 0; v && i < s->n_verified; i++)
                        json_object_set_new(v, s->verified[i].name, json_integer((json_int_t) s->verified[i].insns));
                json_object_set_new(o, "bpf_verified_insns", v);
        }
        json_object_set_new(o, STATUS_KEY_OFFCPU, json_pack("{s:I, s:o, s:I, s:I, s:o, s:b, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I}}",
                STATUS_KEY_MIN_NS, (json_int_t) c->offcpu_min_ns,
                STATUS_KEY_MAX_NS, c->offcpu_max_ns == UINT64_MAX ? json_null() : json_integer((json_int_t) c->offcpu_max_ns),
                STATUS_KEY_FILTERED_BLOCKS, (json_int_t) s->offcpu_filtered,
                STATUS_KEY_FILTERED_NS, (json_int_t) s->offcpu_filtered_ns,
                STATUS_KEY_SAMPLE_NS, s->offcpu_sample_ns ? json_integer((json_int_t) s->offcpu_sample_ns) : json_null(),
                STATUS_KEY_SAMPLE_AUTO, c->offcpu_sample_ns == CONF_OFFCPU_SAMPLE_AUTO,
                STATUS_KEY_UNSAMPLED_BLOCKS, (json_int_t) s->offcpu_unsampled,
                STATUS_KEY_UNSAMPLED_NS, (json_int_t) s->offcpu_unsampled_ns,
                STATUS_KEY_UNSAMPLED_WAKEUPS, (json_int_t) s->wakeup_unsampled,
                STATUS_KEY_SELF_WAKEUPS, (json_int_t) s->wakeup_self,
                STATUS_KEY_KERNEL_STACK_MEMO,
                STATUS_KEY_HITS, (json_int_t) s->kstack_memo_hits,
                STATUS_KEY_WALKS, (json_int_t) s->kstack_memo_walks,
                STATUS_KEY_MISMATCHES, (json_int_t) s->kstack_memo_mismatches));
        json_object_set_new(o, STATUS_KEY_TIMELINE, status_timeline(s));
        json_object_set_new(o, STATUS_KEY_CAPTURES, status_captures(s));
        status_add_settings(s, o);
        if (s->exporter_running)
                json_object_set_new(o, STATUS_KEY_EXPORT, status_export(s));
        return o;
}
