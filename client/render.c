/* Turning profd's status and flushed lines, and the top table
 * (top-table.c), into text for a person. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "profile.h"
#include "status-keys.h"
#include "util.h"

void write_sanitized(FILE *f, const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

const char *module_display_name(const char *module, bool kernel) {
        const char *slash;

        if (!*module)
                return kernel ? "[kernel]" : "-";
        /* the full path rarely helps in a table; the file name tells which */
        slash = strrchr(module, '/');
        return slash && slash[1] ? slash + 1 : module;
}

double percent(uint64_t part, uint64_t total) {
        return total ? 100.0 * (double) part / (double) total : 0.0;
}

/* Longer names are printed whole; they just push their module to the right
 * instead of widening the column for every row. */
#define TOP_FUNCTION_WIDTH_MAX 60

const char *format_time_short(char *buf, size_t size, uint64_t ns) {
        if (ns >= 1000000000ULL)
                snprintf(buf, size, "%.2fs", (double) ns / 1e9);
        else if (ns >= 1000000ULL)
                snprintf(buf, size, "%.1fms", (double) ns / 1e6);
        else
                snprintf(buf, size, "%.0fus", (double) ns / 1e3);
        return buf;
}

const char *format_weight(char *buf, size_t size, uint64_t v, bool nanoseconds) {
        if (nanoseconds)
                return format_time_short(buf, size, v);
        snprintf(buf, size, "%" PRIu64, v);
        return buf;
}

void window_header_write(FILE *f, const char *kind, uint64_t total, uint64_t from_ns, uint64_t to_ns) {
        char cell[32], from[64], to[64], span[64];

        format_local_time(from, sizeof(from), from_ns);
        format_local_time(to, sizeof(to), to_ns);
        format_duration(span, sizeof(span), to_ns > from_ns ? to_ns - from_ns : 0);
        if (!streq(kind, "cpu"))
                fprintf(f, "%s %s from %s to %s (%s)\n", format_time_short(cell, sizeof(cell), total),
                        streq(kind, "wakeup") ? "of blocked time ended by wakers" : "off-CPU",
                        from, to, span);
        else
                fprintf(f, "%" PRIu64 " samples from %s to %s (%s)\n", total, from, to, span);
}

/* 12 significant digits: shares are rounded to 0.01 and rates to 0.001
 * before, and 17 digits would print 33.8 as 33.799999999999997. */
int json_document_write(FILE *f, const json_t *doc) {
        if (json_dumpf(doc, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) < 0 || fputc('\n', f) == EOF)
                return -EIO;
        return ferror(f) ? -EIO : 0;
}

int top_table_write(const top_table *t, FILE *f, const struct top_table_info *info) {
        bool nanoseconds = !streq(info->kind, "cpu"), by_module = top_table_by(t) == TOP_BY_MODULE;
        _cleanup_free_ struct top_row *rows = NULL;
        char cell[32];
        size_t n, name_width;
        int self_width = (int) strlen("SELF"), r;
        const char *name_header = by_module ? "MODULE" : top_table_by(t) == TOP_BY_LINE ? "LINE" : "FUNCTION";

        r = top_table_rows(t, info->children, &rows, &n);
        if (r < 0)
                return r;
        if (info->limit > 0 && info->limit < n)
                n = info->limit;

        name_width = strlen(name_header);
        for (size_t i = 0; i < n; i++) {
                int w = (int) strlen(format_weight(cell, sizeof(cell), rows[i].self, nanoseconds));
                self_width = MAX(self_width, w);
                name_width = MAX(name_width, MIN(strlen(rows[i].name), (size_t) TOP_FUNCTION_WIDTH_MAX));
        }

        window_header_write(f, info->kind, info->total, info->from_ns, info->to_ns);
        fputc('\n', f);
        if (by_module)
                fprintf(f, "%6s  %6s  %*s  %s\n", "SELF%", "TOTAL%", self_width, "SELF", name_header);
        else
                fprintf(f, "%6s  %6s  %*s  %-*s  %s\n", "SELF%", "TOTAL%", self_width, "SELF",
                        (int) name_width, name_header, "MODULE");

        for (size_t i = 0; i < n; i++) {
                const struct top_row *row = &rows[i];
                size_t l = strlen(row->name);

                fprintf(f, "%5.1f%%  %5.1f%%  %*s  ", percent(row->self, info->total),
                        percent(row->total, info->total), self_width,
                        format_weight(cell, sizeof(cell), row->self, nanoseconds));
                write_sanitized(f, row->name);
                if (!by_module) {
                        fprintf(f, "%*s  ", (int) (l < name_width ? name_width - l : 0), "");
                        write_sanitized(f, module_display_name(row->module, row->kernel));
                }
                fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}

/* Two decimals are what a person compares; the counts are there for exact
 * arithmetic. */
static json_t *json_percent(uint64_t part, uint64_t total) {
        return json_real(round(percent(part, total) * 100.0) / 100.0);
}

int top_table_write_json(const top_table *t, FILE *f, const struct top_table_info *info) {
        _cleanup_free_ struct top_row *rows = NULL;
        _cleanup_json_ json_t *doc = NULL, *array = NULL;
        size_t n;
        int r;

        r = top_table_rows(t, info->children, &rows, &n);
        if (r < 0)
                return r;
        if (info->limit > 0 && info->limit < n)
                n = info->limit;

        array = json_array();
        if (!array)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *row = json_pack("{ss, ss, sb, sI, sI, so, so}",
                                        "name", rows[i].name,
                                        "module", rows[i].module,
                                        "kernel", rows[i].kernel,
                                        "self", (json_int_t) rows[i].self,
                                        "total", (json_int_t) rows[i].total,
                                        "self_pct", json_percent(rows[i].self, info->total),
                                        "total_pct", json_percent(rows[i].total, info->total));
                if (!row || json_array_append_new(array, row) < 0)
                        return -ENOMEM;
        }
        doc = json_pack("{ss, ss, ss, ss, sI, sI, sI, sb, sO}",
                        "view", "table",
                        "kind", info->kind,
                        "unit", streq(info->kind, "cpu") ? "samples" : "ns",
                        "by", top_by_to_string(top_table_by(t)),
                        "total", (json_int_t) info->total,
                        "from_ns", (json_int_t) info->from_ns,
                        "to_ns", (json_int_t) info->to_ns,
                        "children", info->children,
                        "rows", array);
        if (!doc)
                return -ENOMEM;
        if (info->quality && json_object_set_new(doc, "quality", quality_to_json(info->quality)) < 0)
                return -ENOMEM;
        if (info->quality_by_host && json_object_set(doc, "quality_by_host", (json_t *) info->quality_by_host) < 0)
                return -ENOMEM;
        return json_document_write(f, doc);
}

/* The reasons docs/protocol.md defines, in its order; all are printed, zero
 * ones too, so a reader sees that nothing is left out. */
static const char *const drop_reasons[] = {
        "map_full",
        "user_stack_error",
        "kernel_stack_error",
        "stack_map_full",
        "ringbuf_full",
        "task_storage_full",
        "process_vanished",
        "store_write_failed",
        "switch_missed",
};

static bool drop_reason_known(const char *reason) {
        for (size_t i = 0; i < ELEMENTSOF(drop_reasons); i++)
                if (streq(reason, drop_reasons[i]))
                        return true;
        return false;
}

/* Checks every count before anything is printed, so a faulty status line
 * gives an error, not half a summary. */
static int drops_check(const json_t *drops) {
        const char *reason;
        json_t *count;
        uint64_t c;
        int r;

        if (!json_is_object(drops))
                return cli_error(-EBADMSG, "profd sent a 'status' line without a valid \"drops\" "
                                 "(expected an object)");
        for (size_t i = 0; i < ELEMENTSOF(drop_reasons); i++) {
                r = response_get_u64(drops, "status", drop_reasons[i], &c);
                if (r < 0)
                        return r;
        }
        json_object_foreach((json_t *) drops, reason, count) {
                r = response_get_u64(drops, "status", reason, &c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void drops_write(FILE *f, const json_t *drops) {
        size_t width = 0;
        int count_width = 1;
        const char *reason;
        json_t *count;

        /* drops_check() saw every reason (known ones included) in this loop */
        json_object_foreach((json_t *) drops, reason, count) {
                width = MAX(width, strlen(reason));
                count_width = MAX(count_width, snprintf(NULL, 0, "%" JSON_INTEGER_FORMAT,
                                                        json_integer_value(count)));
        }

        fputs("drops since the store was created:\n", f);
        for (size_t i = 0; i < ELEMENTSOF(drop_reasons); i++)
                fprintf(f, "  %-*s  %*" JSON_INTEGER_FORMAT "\n", (int) width, drop_reasons[i],
                        count_width, json_integer_value(json_object_get(drops, drop_reasons[i])));
        /* a newer profd may count reasons this profctl doesn't know yet */
        json_object_foreach((json_t *) drops, reason, count) {
                if (drop_reason_known(reason))
                        continue;
                fputs("  ", f);
                write_sanitized(f, reason);
                fprintf(f, "%*s  %*" JSON_INTEGER_FORMAT "\n", (int) (width - strlen(reason)), "",
                        count_width, json_integer_value(count));
        }
}

/* JVMs (issue 42), once there was one: those given HotSpot's walker, and
 * why a JVM or a frame of its code cache was not walked. */
static void hotspot_write(FILE *f, const json_t *unwind) {
        const json_t *hs = json_object_get(unwind, "hotspot");
        const json_t *tables = json_object_get(hs, "tables");
        json_int_t failed = 0;
        const char *k;
        json_t *v;

        json_object_foreach((json_t *) tables, k, v)
                failed += json_integer_value(v);
        if (!json_is_object(hs) || (json_integer_value(json_object_get(hs, "jvms")) == 0 && failed == 0))
                return;
        fprintf(f, "hotspot:   %" JSON_INTEGER_FORMAT " JVMs walked, %" JSON_INTEGER_FORMAT " not",
                json_integer_value(json_object_get(hs, "jvms")), failed);
        if (failed > 0) {
                fputs(" (tables:", f);
                json_object_foreach((json_t *) tables, k, v) {
                        if (json_integer_value(v) == 0)
                                continue;
                        fputc(' ', f);
                        write_sanitized(f, k);
                        fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
                }
                fputc(')', f);
        }
        fprintf(f, "; %" JSON_INTEGER_FORMAT " stacks met a code cache, %" JSON_INTEGER_FORMAT " Java frames",
                json_integer_value(json_object_get(hs, "walks")), json_integer_value(json_object_get(hs, "frames")));
        fputs("; frames not stepped:", f);
        json_object_foreach((json_t *) hs, k, v) {
                if (!json_is_integer(v) || strcmp(k, "jvms") == 0 || strcmp(k, "retries") == 0 ||
                    strcmp(k, "walks") == 0 || strcmp(k, "frames") == 0)
                        continue;
                fputc(' ', f);
                write_sanitized(f, k);
                fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
        }
        fputc('\n', f);
}

/* The runtime walks (CPython's), once there were any or a runtime was
 * found that profd cannot walk: hand-overs, Python frames, why one gave
 * none, and the interpreter files not walked. */
static void runtime_write(FILE *f, const json_t *unwind) {
        const json_t *rt = json_object_get(unwind, STATUS_KEY_RUNTIME);
        const json_t *fail = json_object_get(unwind, STATUS_KEY_FAILURES);
        json_int_t unsupported = json_integer_value(json_object_get(fail, "runtime_unsupported"));
        json_int_t no_slot = json_integer_value(json_object_get(fail, "runtime_slots_full"));
        const char *k;
        json_t *v;

        if (!json_is_object(rt) ||
            (json_integer_value(json_object_get(rt, "walks")) == 0 && unsupported == 0 && no_slot == 0))
                return;
        fprintf(f, "python:    %" JSON_INTEGER_FORMAT " stacks handed over to the Python walker, %" JSON_INTEGER_FORMAT
                " Python frames; none given:", json_integer_value(json_object_get(rt, "walks")),
                json_integer_value(json_object_get(rt, "frames")));
        json_object_foreach((json_t *) rt, k, v) {
                if (strcmp(k, "walks") == 0 || strcmp(k, "frames") == 0)
                        continue;
                fputc(' ', f);
                write_sanitized(f, k);
                fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
        }
        fprintf(f, "; interpreters not walked: unsupported version %" JSON_INTEGER_FORMAT ", no slot %"
                JSON_INTEGER_FORMAT "\n", unsupported, no_slot);
}

/* User stacks cut short, by reason, and the unwinder's tables, when the
 * daemon reports them. */
static void unwind_write(FILE *f, const json_t *status) {
        const json_t *t = json_object_get(status, STATUS_KEY_TRUNCATED);
        const json_t *u = json_object_get(status, STATUS_KEY_UNWIND);
        char a[32];
        const char *k;
        json_t *v;

        if (json_is_object(u)) {
                const json_t *fail = json_object_get(u, STATUS_KEY_FAILURES);

                fprintf(f, "unwind:    tables of %" JSON_INTEGER_FORMAT " processes, %" JSON_INTEGER_FORMAT
                        " files (%" JSON_INTEGER_FORMAT " unused), %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                        " rows, %s in the kernel; %" JSON_INTEGER_FORMAT " built in %" JSON_INTEGER_FORMAT " ms\n"
                        "           tables evicted for room: %" JSON_INTEGER_FORMAT " unused, %" JSON_INTEGER_FORMAT
                        " of live processes not sampled lately; left without room: %" JSON_INTEGER_FORMAT
                        " not built, %" JSON_INTEGER_FORMAT " sampled (every other table sampled lately)\n",
                        json_integer_value(json_object_get(u, STATUS_KEY_PROCESSES)),
                        json_integer_value(json_object_get(u, STATUS_KEY_FILES)),
                        json_integer_value(json_object_get(u, STATUS_KEY_FILES_UNUSED)),
                        json_integer_value(json_object_get(u, STATUS_KEY_ROWS_USED)),
                        json_integer_value(json_object_get(u, STATUS_KEY_ROWS_CAPACITY)),
                        format_bytes(a, sizeof(a),
                                     (uint64_t) json_integer_value(json_object_get(u, STATUS_KEY_KERNEL_BYTES))),
                        json_integer_value(json_object_get(u, STATUS_KEY_TABLES_BUILT)),
                        json_integer_value(json_object_get(u, STATUS_KEY_BUILD_MS)),
                        json_integer_value(json_object_get(u, STATUS_KEY_TABLES_EVICTED)),
                        json_integer_value(json_object_get(u, STATUS_KEY_TABLES_EVICTED_COLD)),
                        json_integer_value(json_object_get(u, STATUS_KEY_TABLES_NO_ROOM)),
                        json_integer_value(json_object_get(u, STATUS_KEY_TABLES_KEPT_HOT)));
                if (json_is_object(fail)) {
                        fputs("           walked by frame pointers instead:", f);
                        json_object_foreach((json_t *) fail, k, v) {
                                if (strncmp(k, "runtime_", 8) == 0)
                                        continue; /* a file's runtime: below */
                                fputc(' ', f);
                                write_sanitized(f, k);
                                fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
                        }
                        fputc('\n', f);
                }
                runtime_write(f, u);
                hotspot_write(f, u);
        }
        if (json_is_object(t)) {
                fprintf(f, "user stacks: %" JSON_INTEGER_FORMAT " walked since profd started; cut short since the "
                        "store was created:", json_integer_value(json_object_get(u, STATUS_KEY_USER_WALKS)));
                json_object_foreach((json_t *) t, k, v) {
                        fputc(' ', f);
                        write_sanitized(f, k);
                        fprintf(f, " %" JSON_INTEGER_FORMAT, json_integer_value(v));
                }
                fputc('\n', f);
        }
}

/* The off-CPU settings and what the threshold left out, when present. */
static uint64_t u64_of(const json_t *o, const char *key);

static void offcpu_write(FILE *f, const json_t *status) {
        const json_t *o = json_object_get(status, STATUS_KEY_OFFCPU);
        const json_t *kinds = json_object_get(status, STATUS_KEY_KINDS);
        char min[64], max[64], filtered[64];
        const json_t *k;
        size_t i;

        if (json_is_array(kinds)) {
                fputs("kinds:    ", f);
                json_array_foreach(kinds, i, k)
                        fprintf(f, " %s", json_is_string(k) ? json_string_value(k) : "?");
                fputc('\n', f);
        }
        if (!json_is_object(o))
                return;
        format_duration(min, sizeof(min), (uint64_t) json_integer_value(json_object_get(o, STATUS_KEY_MIN_NS)));
        if (json_is_integer(json_object_get(o, STATUS_KEY_MAX_NS)))
                format_duration(max, sizeof(max), (uint64_t) json_integer_value(json_object_get(o, STATUS_KEY_MAX_NS)));
        else
                snprintf(max, sizeof(max), "no maximum");
        fprintf(f, "off-CPU:   blocks from %s (%s) are attributed to stacks; %" JSON_INTEGER_FORMAT
                " others (%s in all) were only counted\n",
                min, max, json_integer_value(json_object_get(o, STATUS_KEY_FILTERED_BLOCKS)),
                format_duration(filtered, sizeof(filtered),
                                (uint64_t) json_integer_value(json_object_get(o, STATUS_KEY_FILTERED_NS))));
        if (json_is_integer(json_object_get(o, STATUS_KEY_SAMPLE_NS))) {
                char sample[64], unsampled[64];

                format_duration(sample, sizeof(sample), u64_of(o, STATUS_KEY_SAMPLE_NS));
                format_duration(unsampled, sizeof(unsampled), u64_of(o, STATUS_KEY_UNSAMPLED_NS));
                fprintf(f, "           blocks under %s walked by a draw (offcpu_sample%s); %" PRIu64
                        " not drawn (%s in all), %" PRIu64 " wake-ups' wakers not drawn\n", sample,
                        json_is_true(json_object_get(o, STATUS_KEY_SAMPLE_AUTO)) ? " auto: the on-CPU period" : "",
                        u64_of(o, STATUS_KEY_UNSAMPLED_BLOCKS), unsampled,
                        u64_of(o, STATUS_KEY_UNSAMPLED_WAKEUPS));
        }
        if (u64_of(o, STATUS_KEY_SELF_WAKEUPS) > 0)
                fprintf(f, "           profd's own blocks kept as [unwalked]; %" PRIu64
                        " wake-ups of its threads not walked (offcpu_self_stacks off)\n",
                        u64_of(o, STATUS_KEY_SELF_WAKEUPS));
        {
                const json_t *m = json_object_get(o, STATUS_KEY_KERNEL_STACK_MEMO);
                uint64_t hits = u64_of(m, STATUS_KEY_HITS), walks = u64_of(m, STATUS_KEY_WALKS);

                if (json_is_object(m) && hits + walks > 0) {
                        fprintf(f, "           kernel stacks: %" PRIu64 " from the memo, %" PRIu64 " walked (%.0f%%)",
                                hits, walks, 100.0 * (double) hits / (double) (hits + walks));
                        if (u64_of(m, STATUS_KEY_MISMATCHES) > 0)
                                fprintf(f, "; %" PRIu64 " hits differed from their walk (verify)",
                                        u64_of(m, STATUS_KEY_MISMATCHES));
                        fputc('\n', f);
                }
        }
}

static uint64_t u64_of(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t) json_integer_value(v) : 0;
}

/* Memory, tables and unresolved frames, when the daemon reports them. */
static void extras_write(FILE *f, const json_t *status) {
        json_t *rss = json_object_get(status, STATUS_KEY_RSS_BYTES);
        json_t *cache = json_object_get(status, STATUS_KEY_SYMBOL_CACHE_BYTES);
        json_t *procs = json_object_get(status, STATUS_KEY_PROCESSES_TRACKED);
        json_t *clients = json_object_get(status, STATUS_KEY_CLIENTS);
        json_t *unres = json_object_get(status, STATUS_KEY_UNRESOLVED);
        json_t *names = json_object_get(status, STATUS_KEY_RUNTIME_NAMES);
        json_t *deferred = json_object_get(status, STATUS_KEY_DWARF_DEFERRED);
        json_t *queries = json_object_get(status, STATUS_KEY_QUERIES);
        char a[32], b[32];

        if (json_is_integer(rss) && json_is_integer(cache)) {
                const json_t *mem = json_object_get(status, STATUS_KEY_MEMORY);
                char c[32], d[32];

                fprintf(f, "memory:    %s resident, %s of it symbols and debug info\n",
                        format_bytes(a, sizeof(a), (uint64_t) json_integer_value(rss)),
                        format_bytes(b, sizeof(b), (uint64_t) json_integer_value(cache)));
                if (json_is_object(mem))
                        fprintf(f, "           %s anonymous, %s file pages; malloc holds %s, %s of it SQLite's\n",
                                format_bytes(a, sizeof(a), u64_of(mem, STATUS_KEY_ANON_BYTES)),
                                format_bytes(b, sizeof(b), u64_of(mem, STATUS_KEY_FILE_BYTES)),
                                format_bytes(c, sizeof(c), u64_of(mem, STATUS_KEY_HEAP_IN_USE_BYTES)),
                                format_bytes(d, sizeof(d), u64_of(mem, STATUS_KEY_SQLITE_BYTES)));
        }
        if (json_is_integer(procs) && json_is_integer(clients))
                fprintf(f, "tracking:  %" JSON_INTEGER_FORMAT " processes, %" JSON_INTEGER_FORMAT " clients connected\n",
                        json_integer_value(procs), json_integer_value(clients));
        if (json_is_object(queries))
                fprintf(f, "queries:   %" PRIu64 " running, %" PRIu64 " queued, %" PRIu64 " parked on clients that "
                        "do not read (%" PRIu64 " times since start); %" PRIu64 " worker threads\n",
                        u64_of(queries, STATUS_KEY_RUNNING), u64_of(queries, STATUS_KEY_QUEUED),
                        u64_of(queries, STATUS_KEY_PARKED),
                        u64_of(queries, STATUS_KEY_PARKED_TOTAL), u64_of(queries, STATUS_KEY_WORKERS));
        if (json_is_object(unres)) {
                const char *k;
                json_t *v;

                fputs("unresolved user frames:", f);
                json_object_foreach(unres, k, v)
                        /* Python's reasons only once they happened: most hosts run none */
                        if (strncmp(k, "python_", 7) != 0 || json_integer_value(v) != 0)
                                fprintf(f, " %s %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
                fputc('\n', f);
        }
        if (json_is_object(deferred) && u64_of(deferred, STATUS_KEY_FRAMES) > 0)
                fprintf(f, "debug info deferred: %" PRIu64 " frames stored by their symbol alone (files with fewer "
                        "than %" PRIu64 " samples), %" PRIu64 " given their lines since, %" PRIu64 " not kept for "
                        "it\n",
                        u64_of(deferred, STATUS_KEY_FRAMES), u64_of(deferred, STATUS_KEY_MIN_SAMPLES),
                        u64_of(deferred, STATUS_KEY_LINES_ADDED), u64_of(deferred, STATUS_KEY_NOT_KEPT));
        if (json_is_object(names) && u64_of(names, STATUS_KEY_READS) + u64_of(names, STATUS_KEY_SHARED_HITS) > 0) {
                const json_t *no_line = json_object_get(names, STATUS_KEY_NO_LINE);
                const char *k;
                json_t *v;

                fprintf(f, "runtime names: %" PRIu64 " code objects of %" PRIu64 " processes kept, %" PRIu64
                        " of them shared by file (%s); %" PRIu64 " read, %" PRIu64 " spared by a file's, %" PRIu64
                        " found reused, %" PRIu64 " evicted since start\n",
                        u64_of(names, STATUS_KEY_CODES), u64_of(names, STATUS_KEY_PROCESSES),
                        u64_of(names, STATUS_KEY_SHARED), format_bytes(a, sizeof(a), u64_of(names, STATUS_KEY_BYTES)),
                        u64_of(names, STATUS_KEY_READS), u64_of(names, STATUS_KEY_SHARED_HITS),
                        u64_of(names, STATUS_KEY_REUSED), u64_of(names, STATUS_KEY_EVICTED));
                if (json_is_object(no_line)) {
                        fputs("python frames without line:", f);
                        json_object_foreach((json_t *) no_line, k, v)
                                fprintf(f, " %s %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
                        fputc('\n', f);
                }
        }
}

/* "at TIME (N ago)" for a Unix-epoch ns time, or "never". */
static const char *when_write(char *buf, size_t size, uint64_t t_ns, uint64_t now_ns) {
        char at[64], ago[64];

        if (t_ns == 0)
                snprintf(buf, size, "never");
        else if (now_ns >= t_ns)
                snprintf(buf, size, "%s (%s ago)", format_local_time(at, sizeof(at), t_ns),
                         format_duration(ago, sizeof(ago), (now_ns - t_ns) / NSEC_PER_SEC * NSEC_PER_SEC));
        else
                snprintf(buf, size, "%s", format_local_time(at, sizeof(at), t_ns));
        return buf;
}

/* The timeline of on-CPU samples (issue 44), when the daemon reports it. */
static void timeline_write(FILE *f, const json_t *status, uint64_t now_ns) {
        const json_t *o = json_object_get(status, STATUS_KEY_TIMELINE);
        const json_t *oldest;
        char bytes[32], when[128];
        bool off;

        if (!json_is_object(o))
                return;
        oldest = json_object_get(o, STATUS_KEY_TIMELINE_OLDEST_NS);
        /* absent from an older profd: it had no way to turn it off */
        off = json_is_false(json_object_get(o, STATUS_KEY_TIMELINE_ON));
        if (off)
                fprintf(f, "timeline:  off (setting timeline): no new sample or off-CPU block is stored with its "
                        "time; windows are answered by whole drains, and profctl heatmap has nothing new\n");
        fprintf(f, "%s%" PRIu64 " samples with their time in %" PRIu64 " blocks (%s), oldest %s; "
                "%" PRIu64 " samples untimed since profd started\n",
                off ? "           " : "timeline:  ",
                u64_of(o, STATUS_KEY_TIMELINE_SAMPLES), u64_of(o, STATUS_KEY_TIMELINE_BLOCKS),
                format_bytes(bytes, sizeof(bytes), u64_of(o, STATUS_KEY_TIMELINE_BYTES)),
                json_is_integer(oldest) ? when_write(when, sizeof(when), (uint64_t) json_integer_value(oldest), now_ns)
                                        : "none",
                u64_of(o, STATUS_KEY_TIMELINE_UNTIMED));
        o = json_object_get(o, STATUS_KEY_OFFTIME);
        if (!json_is_object(o))
                return;
        oldest = json_object_get(o, STATUS_KEY_OFFTIME_OLDEST_NS);
        fprintf(f, "           %" PRIu64 " off-CPU blocks with their start and end (%s), oldest %s; since profd "
                "started %" PRIu64 " logged, %" PRIu64 " shorter than %.3g ms (%.3f s) and %" PRIu64
                " unlogged (%.3f s) kept untimed\n",
                u64_of(o, STATUS_KEY_OFFTIME_BLOCKS),
                format_bytes(bytes, sizeof(bytes), u64_of(o, STATUS_KEY_OFFTIME_BYTES)),
                json_is_integer(oldest) ? when_write(when, sizeof(when), (uint64_t) json_integer_value(oldest), now_ns)
                                        : "none",
                u64_of(o, STATUS_KEY_OFFTIME_LOGGED), u64_of(o, STATUS_KEY_OFFTIME_SHORT),
                u64_of(o, STATUS_KEY_OFFTIME_MIN_NS) / 1e6, u64_of(o, STATUS_KEY_OFFTIME_SHORT_NS) / 1e9,
                u64_of(o, STATUS_KEY_OFFTIME_UNLOGGED), u64_of(o, STATUS_KEY_OFFTIME_UNLOGGED_NS) / 1e9);
}

/* Captures (issue 44): how many, what they pin, what the cool-down and
 * the budget refused, the newest ones with their causes. */
static void captures_write(FILE *f, const json_t *status, uint64_t now_ns) {
        const json_t *o = json_object_get(status, STATUS_KEY_CAPTURES), *refused, *last, *c;
        char bytes[32], budget[32], when[128];
        size_t i;

        if (!json_is_object(o))
                return;
        refused = json_object_get(o, STATUS_KEY_CAPTURE_REFUSED);
        fprintf(f, "captures:  %" PRIu64 " recorded, %" PRIu64 " pinning %s of %s; %" PRIu64
                " triggers watched; refused since start: %" PRIu64 " in the cool-down (%" PRIu64 " s), %" PRIu64
                " over the budget; %" PRIu64 " failed\n",
                u64_of(o, STATUS_KEY_CAPTURE_COUNT), u64_of(o, STATUS_KEY_CAPTURE_PINNING),
                format_bytes(bytes, sizeof(bytes), u64_of(o, STATUS_KEY_CAPTURE_PINNED_BYTES)),
                format_bytes(budget, sizeof(budget), u64_of(o, STATUS_KEY_CAPTURE_MAX_PINNED)),
                u64_of(o, STATUS_KEY_CAPTURE_TRIGGERS), u64_of(refused, "cooling_down"),
                u64_of(o, STATUS_KEY_CAPTURE_COOLDOWN_S), u64_of(refused, "over_budget"),
                u64_of(o, STATUS_KEY_CAPTURE_FAILED));
        last = json_object_get(o, STATUS_KEY_CAPTURE_LAST);
        json_array_foreach(last, i, c) {
                fprintf(f, "  capture %" PRIu64 " %s: ", u64_of(c, "id"),
                        when_write(when, sizeof(when), u64_of(c, "trigger_ns"), now_ns));
                write_sanitized(f, json_string_value(json_object_get(c, "cause")));
                fprintf(f, " (%s), %s, %s", json_string_value(json_object_get(c, "origin")) ?: "?",
                        json_string_value(json_object_get(c, "state")) ?: "?",
                        format_bytes(bytes, sizeof(bytes), u64_of(c, "pinned_bytes")));
                if (u64_of(c, "frequency_hz") > 0)
                        fprintf(f, ", %" PRIu64 " Hz", u64_of(c, "frequency_hz"));
                fputc('\n', f);
        }
}

/* The ClickHouse export, when profd runs one (docs/clickhouse.md, Status). */
static void export_write(FILE *f, const json_t *status, uint64_t now_ns) {
        const json_t *e = json_object_get(status, STATUS_KEY_EXPORT), *errors, *v;
        char a[128], b[128], size[32];
        const char *k;

        if (!json_is_object(e))
                return;
        fputs("export:    ClickHouse ", f);
        write_sanitized(f, json_string_value(json_object_get(e, STATUS_KEY_URL)));
        fputs(" as ", f);
        write_sanitized(f, json_string_value(json_object_get(e, STATUS_KEY_HOST)));
        fputs(", ", f);
        write_sanitized(f, json_string_value(json_object_get(e, STATUS_KEY_STATE)));
        fprintf(f, "; backlog %" PRIu64 " drains", u64_of(e, STATUS_KEY_BACKLOG_DRAINS));
        if (u64_of(e, STATUS_KEY_BACKLOG_OLDEST_NS))
                fprintf(f, ", oldest from %s",
                        when_write(a, sizeof(a), u64_of(e, STATUS_KEY_BACKLOG_OLDEST_NS), now_ns));
        fprintf(f, "\n           last success %s\n",
                when_write(b, sizeof(b), u64_of(e, STATUS_KEY_LAST_SUCCESS_NS), now_ns));
        fprintf(f, "           sent %" PRIu64 " drains: %" PRIu64 " sample rows, %" PRIu64 " stacks, %" PRIu64
                " frames (%s); %" PRIu64 " found stored already, %" PRIu64 " lost to retention\n",
                u64_of(e, STATUS_KEY_EXPORTED_DRAINS), u64_of(e, STATUS_KEY_EXPORTED_SAMPLES),
                u64_of(e, STATUS_KEY_EXPORTED_STACKS), u64_of(e, STATUS_KEY_EXPORTED_FRAMES),
                format_bytes(size, sizeof(size), u64_of(e, STATUS_KEY_BYTES_SENT)),
                u64_of(e, STATUS_KEY_ALREADY_STORED), u64_of(e, STATUS_KEY_LOST_BY_RETENTION));
        fprintf(f, "           captures: %" PRIu64 " states sent, %" PRIu64 " found stored already, %" PRIu64
                " waiting\n", u64_of(e, STATUS_KEY_EXPORTED_CAPTURES), u64_of(e, STATUS_KEY_CAPTURES_ALREADY_STORED),
                u64_of(e, STATUS_KEY_CAPTURES_BACKLOG));
        if (u64_of(e, STATUS_KEY_DAMAGED_BLOCKS))
                fprintf(f, "           %" PRIu64 " damaged blocks of samples could not be read: their samples not sent\n",
                        u64_of(e, STATUS_KEY_DAMAGED_BLOCKS));
        errors = json_object_get(e, STATUS_KEY_ERRORS);
        if (json_is_object(errors)) {
                fputs("           errors:", f);
                json_object_foreach((json_t *) errors, k, v)
                        fprintf(f, " %s %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
                fputc('\n', f);
        }
        if (json_is_string(json_object_get(e, STATUS_KEY_LAST_ERROR))) {
                const char *kind = json_string_value(json_object_get(e, STATUS_KEY_ERROR));

                fprintf(f, "           %s error%s%s, %s: ", kind ? "current" : "last",
                        kind ? " " : "", kind ? kind : "",
                        when_write(a, sizeof(a), u64_of(e, STATUS_KEY_LAST_ERROR_NS), now_ns));
                write_sanitized(f, json_string_value(json_object_get(e, STATUS_KEY_LAST_ERROR)));
                fputc('\n', f);
        }
}

/* The store's integrity check, run after start (docs/protocol.md, status). */
static void check_write(FILE *f, const json_t *c, uint64_t now_ns) {
        const char *state;
        char a[128], took[64];
        uint64_t started, finished;

        if (!json_is_object(c))
                return;
        state = json_string_value(json_object_get(c, STATUS_KEY_STATE));
        if (!state)
                return;
        if (streq(state, "running")) {
                fprintf(f, "           integrity check running since %s\n",
                        when_write(a, sizeof(a), u64_of(c, STATUS_KEY_STARTED_NS), now_ns));
                return;
        }
        started = u64_of(c, STATUS_KEY_STARTED_NS);
        finished = u64_of(c, STATUS_KEY_FINISHED_NS);
        /* whole milliseconds: nanoseconds are noise here */
        format_duration(took, sizeof(took),
                        finished > started ? (finished - started) / NSEC_PER_MSEC * NSEC_PER_MSEC : 0);
        fprintf(f, "           integrity check %s", streq(state, "ok") ? "ok" : "FAILED");
        fprintf(f, " at %s, took %s", when_write(a, sizeof(a), u64_of(c, STATUS_KEY_FINISHED_NS), now_ns), took);
        if (json_is_string(json_object_get(c, STATUS_KEY_MESSAGE))) {
                fputs(": ", f);
                write_sanitized(f, json_string_value(json_object_get(c, STATUS_KEY_MESSAGE)));
        }
        fputc('\n', f);
}

/* Schema 8's conversion of an older store's samples, while it lasts. */
static void migration_write(FILE *f, const json_t *m, uint64_t now_ns) {
        uint64_t pending = u64_of(m, STATUS_KEY_PENDING_ROWS), done = u64_of(m, STATUS_KEY_DONE_ROWS);
        char a[128];

        if (!json_is_object(m))
                return;
        fprintf(f, "           converting schema 7 samples: %" PRIu64 " of %" PRIu64 " rows done (%.1f%%), %" PRIu64
                " drains left%s\n", done, done + pending, done + pending ? 100.0 * (double) done / (double) (done + pending) : 100.0,
                u64_of(m, STATUS_KEY_PENDING_DRAINS),
                json_is_false(json_object_get(m, STATUS_KEY_RUNNING)) ? " (paused: no writer)" : "");
        if (u64_of(m, STATUS_KEY_COMPLETE_AFTER_NS))
                fprintf(f, "           answers miss the drains up to %s until then\n",
                        when_write(a, sizeof(a), u64_of(m, STATUS_KEY_COMPLETE_AFTER_NS), now_ns));
}

int status_write(FILE *f, const json_t *status, uint64_t now_ns) {
        const char *version, *event, *store_path;
        uint64_t pid, uptime_s, frequency_hz, interval_ms, store_bytes, drains, last_drain_ns = 0,
                samples, stacks, processes, samples_seen, idle_samples;
        char uptime[64], interval[64], size[32], last[64], ago[64], early_text[96] = "";
        uint64_t early;
        json_t *last_drain;
        int r;

        struct {
                const char *key;
                uint64_t *value;
        } numbers[] = {
                { STATUS_KEY_PID, &pid },
                { STATUS_KEY_UPTIME_S, &uptime_s },
                { STATUS_KEY_FREQUENCY_HZ, &frequency_hz },
                { STATUS_KEY_INTERVAL_MS, &interval_ms },
                { STATUS_KEY_STORE_BYTES, &store_bytes },
                { STATUS_KEY_DRAINS, &drains },
                { STATUS_KEY_SAMPLES, &samples },
                { STATUS_KEY_STACKS, &stacks },
                { STATUS_KEY_PROCESSES, &processes },
                { STATUS_KEY_SAMPLES_SEEN, &samples_seen },
                { STATUS_KEY_IDLE_SAMPLES, &idle_samples },
        };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                r = response_get_u64(status, "status", numbers[i].key, numbers[i].value);
                if (r < 0)
                        return r;
        }
        if ((r = response_get_string(status, "status", STATUS_KEY_VERSION, &version)) < 0 ||
            (r = response_get_string(status, "status", STATUS_KEY_STORE_PATH, &store_path)) < 0)
                return r;
        /* no event: on-CPU sampling is off */
        event = json_string_value(json_object_get(status, STATUS_KEY_EVENT));
        /* before the first drain there is no time to give: 0 or null */
        last_drain = json_object_get(status, STATUS_KEY_LAST_DRAIN_NS);
        if (!json_is_null(last_drain)) {
                r = response_get_u64(status, "status", STATUS_KEY_LAST_DRAIN_NS, &last_drain_ns);
                if (r < 0)
                        return r;
        }
        r = drops_check(json_object_get(status, STATUS_KEY_DROPS));
        if (r < 0)
                return r;

        fprintf(f, "profd %s (pid %" PRIu64 "), up %s\n", version, pid,
                format_duration(uptime, sizeof(uptime),
                                uptime_s <= UINT64_MAX / NSEC_PER_SEC ? uptime_s * NSEC_PER_SEC : UINT64_MAX));
        format_duration(interval, sizeof(interval),
                        interval_ms <= UINT64_MAX / NSEC_PER_MSEC ? interval_ms * NSEC_PER_MSEC : UINT64_MAX);
        if (event && u64_of(status, STATUS_KEY_RAISED_UNTIL_NS) > 0) {
                /* a capture's raise: answers still count at frequency_hz */
                char until[64], now_interval[64];
                uint64_t now_ms = u64_of(status, STATUS_KEY_INTERVAL_NOW_MS);

                format_duration(now_interval, sizeof(now_interval),
                                now_ms <= UINT64_MAX / NSEC_PER_MSEC ? now_ms * NSEC_PER_MSEC : UINT64_MAX);
                fprintf(f, "sampling:  %" PRIu64 " Hz on %s, raised by a capture until %s (base %" PRIu64
                           " Hz), drained every %s (base %s)\n",
                        u64_of(status, STATUS_KEY_SAMPLING_HZ), event,
                        format_local_time(until, sizeof(until), u64_of(status, STATUS_KEY_RAISED_UNTIL_NS)),
                        frequency_hz, now_interval, interval);
        } else if (event)
                fprintf(f, "sampling:  %" PRIu64 " Hz on %s, drained every %s\n", frequency_hz, event, interval);
        else
                fprintf(f, "sampling:  off (on-CPU kind disabled), drained every %s\n", interval);
        offcpu_write(f, status);
        /* drains made before the interval ended: a kernel map was nearly
         * full (absent from daemons before it: 0) */
        early = u64_of(status, STATUS_KEY_DRAINS_EARLY);
        if (early > 0)
                snprintf(early_text, sizeof(early_text), " (%" PRIu64 " early: a kernel map was nearly full)", early);
        if (last_drain_ns == 0)
                fprintf(f, "drains:    %" PRIu64 ", none yet\n", drains);
        else if (now_ns >= last_drain_ns)
                fprintf(f, "drains:    %" PRIu64 "%s, last at %s (%s ago)\n", drains, early_text,
                        format_local_time(last, sizeof(last), last_drain_ns),
                        /* whole seconds: "3s417ms ago" is noise */
                        format_duration(ago, sizeof(ago),
                                        (now_ns - last_drain_ns) / NSEC_PER_SEC * NSEC_PER_SEC));
        else
                fprintf(f, "drains:    %" PRIu64 "%s, last at %s\n", drains, early_text,
                        format_local_time(last, sizeof(last), last_drain_ns));
        fprintf(f, "stored:    %" PRIu64 " samples in %" PRIu64 " stacks from %" PRIu64 " processes\n",
                samples, stacks, processes);
        fprintf(f, "seen:      %" PRIu64 " samples since profd started, %" PRIu64 " of them idle "
                "(idle samples are not stored)\n", samples_seen, idle_samples);
        fprintf(f, "store:     %s (%s)\n", store_path, format_bytes(size, sizeof(size), store_bytes));
        check_write(f, json_object_get(status, STATUS_KEY_STORE_CHECK), now_ns);
        migration_write(f, json_object_get(status, STATUS_KEY_STORE_MIGRATION), now_ns);
        timeline_write(f, status, now_ns);
        captures_write(f, status, now_ns);
        extras_write(f, status);
        unwind_write(f, status);
        export_write(f, status, now_ns);

        drops_write(f, json_object_get(status, STATUS_KEY_DROPS));
        return ferror(f) ? -EIO : 0;
}

int flushed_write(FILE *f, const json_t *flushed) {
        uint64_t drain_id, samples;
        int r;

        if ((r = response_get_u64(flushed, "flushed", "drain_id", &drain_id)) < 0 ||
            (r = response_get_u64(flushed, "flushed", "samples", &samples)) < 0)
                return r;
        fprintf(f, "drain %" PRIu64 " stored: %" PRIu64 " samples\n", drain_id, samples);
        return ferror(f) ? -EIO : 0;
}
