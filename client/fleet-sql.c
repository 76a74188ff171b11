/* Fleet queries as ClickHouse SQL, and ClickHouse's TabSeparated answers
 * read back (see fleet-sql.h). */
#include "fleet-sql.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bpf/profd.h"
#include "fleet-schema.h"
#include "macro.h"
#include "protocol.h"

int fleet_sql_quote(FILE *f, const char *s) {
        fputc('\'', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '\\' || *p == '\'')
                        fprintf(f, "\\%c", *p);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\x%02X", *p);
                else
                        fputc(*p, f);
        }
        fputc('\'', f);
        return ferror(f) ? -EIO : 0;
}

/* RE2's special characters outside a set: escaped to stand for themselves. */
static bool regex_special(char c) {
        return strchr("\\.+*?()|[]{}^$", c) != NULL;
}

/* Writes the set starting at glob[i] ('[') and returns the index past its
 * ']', or 0 when the set is not terminated. */
static size_t glob_set(FILE *f, const char *glob, size_t i) {
        size_t j = i + 1;

        /* SQLite: '^' first negates; a ']' first (after it) is a member */
        if (glob[j] == '^')
                j++;
        if (glob[j] == ']')
                j++;
        while (glob[j] && glob[j] != ']')
                j++;
        if (!glob[j])
                return 0;
        fputc('[', f);
        j = i + 1;
        if (glob[j] == '^') {
                fputc('^', f);
                j++;
        }
        for (bool first = true; glob[j] != ']' || first; j++, first = false) {
                char c = glob[j];

                /* a '-' between two members is a range, as in RE2; anything
                 * else that is not alphanumeric is escaped (RE2 takes "\x"
                 * for any punctuation x, inside a set too) */
                if (c == '-' && !first && glob[j + 1] != ']')
                        fputc('-', f);
                else if (c == '\\' || c == ']' || c == '[' || c == '^' || c == '-')
                        fprintf(f, "\\%c", c);
                else
                        fputc(c, f);
        }
        fputc(']', f);
        return j + 1;
}

char *fleet_glob_to_regex(const char *glob) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        /* (?s): '*' and '?' match newlines too, as GLOB does */
        fputs("^(?s)", f);
        for (size_t i = 0; glob[i];) {
                char c = glob[i];
                size_t next;

                if (c == '*') {
                        fputs(".*", f);
                        i++;
                } else if (c == '?') {
                        fputc('.', f);
                        i++;
                } else if (c == '[' && (next = glob_set(f, glob, i)) > 0)
                        i = next;
                else {
                        if (regex_special(c))
                                fputc('\\', f);
                        fputc(c, f);
                        i++;
                }
        }
        fputc('$', f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* " AND col = 'value'" or, for a glob, " AND match(col, 'regex')". */
static int where_string(FILE *f, const char *column, const char *value) {
        if (request_is_glob(value)) {
                _cleanup_free_ char *re = fleet_glob_to_regex(value);

                if (!re)
                        return -ENOMEM;
                fprintf(f, " AND match(%s, ", column);
                fleet_sql_quote(f, re);
                fputc(')', f);
        } else {
                fprintf(f, " AND %s = ", column);
                fleet_sql_quote(f, value);
        }
        return ferror(f) ? -EIO : 0;
}

/* "YYYY-MM-DD" of a Unix time in UTC, as the day column holds it. */
static const char *utc_day(char buf[static 16], uint64_t t) {
        time_t tt = (time_t) MIN(t, (uint64_t) 253402300799); /* 9999-12-31: Date's end is far before */
        struct tm tm;

        gmtime_r(&tt, &tm);
        strftime(buf, 16, "%Y-%m-%d", &tm);
        return buf;
}

/* " AND day >= ... AND day <= ...": the days whose partitions hold the
 * window's drains (by their end), and the stacks and frames they use. */
static void where_days(FILE *f, const struct fleet_scope *s) {
        char from_day[16], to_day[16];

        fprintf(f, " AND " FS_DAY " >= '%s' AND " FS_DAY " <= '%s'", utc_day(from_day, s->from_ns / NSEC_PER_SEC),
                utc_day(to_day, s->to_ns / NSEC_PER_SEC + FS_DRAIN_MAX_S));
}

int fleet_sql_where(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        int r = 0;

        fprintf(f, " WHERE " FS_KIND " = %d", q->kind);
        /* every drain interval that overlaps the window, as profd's store
         * (store.c, sql_add_filters); the day column prunes partitions */
        fprintf(f, " AND " FS_END_NS " >= %" PRIu64 " AND " FS_START_NS " <= %" PRIu64, s->from_ns, s->to_ns);
        /* the sort key's time and the partitions' day (both the drain's
         * end) let ClickHouse skip what cannot overlap */
        fprintf(f, " AND " FS_TIME " >= toDateTime(%" PRIu64 ") AND " FS_TIME " <= toDateTime(%" PRIu64 ")",
                (uint64_t) (s->from_ns / NSEC_PER_SEC), (uint64_t) (s->to_ns / NSEC_PER_SEC + FS_DRAIN_MAX_S));
        where_days(f, s);
        if (s->host)
                r = where_string(f, FS_HOST, s->host);
        if (r >= 0 && q->tid)
                fprintf(f, " AND " FS_TID " = %" PRIu32, q->tid);
        if (r >= 0 && q->state_mask) {
                bool first = true;

                fputs(" AND " FS_STATE " IN (", f);
                for (int st = 0; st < 32; st++)
                        if (q->state_mask & (1u << st)) {
                                fprintf(f, "%s%d", first ? "" : ", ", st);
                                first = false;
                        }
                fputc(')', f);
        }
        if (r >= 0 && q->pid)
                fprintf(f, " AND " FS_PID " = %" PRIu32, q->pid);
        /* a process without the attribute (NULL in profd's store, '' here)
         * matches no filter on it, a glob of '*' included */
        if (r >= 0 && q->comm)
                r = where_string(f, FS_COMM, q->comm);
        if (r >= 0 && q->exe) {
                fputs(" AND " FS_EXE " != ''", f);
                r = where_string(f, FS_EXE, q->exe);
        }
        if (r >= 0 && q->have_uid)
                fprintf(f, " AND " FS_UID " = %" PRIu32, q->uid);
        if (r >= 0 && q->cgroup) {
                fputs(" AND " FS_CGROUP " != ''", f);
                if (request_is_glob(q->cgroup)) {
                        /* the matching cgroups and their subtrees ('*' matches '/') */
                        _cleanup_free_ char *dir = NULL, *re = NULL, *re_dir = NULL;

                        if (asprintf(&dir, "%s/*", q->cgroup) < 0)
                                return -ENOMEM;
                        re = fleet_glob_to_regex(q->cgroup);
                        re_dir = fleet_glob_to_regex(dir);
                        if (!re || !re_dir)
                                return -ENOMEM;
                        fputs(" AND (match(" FS_CGROUP ", ", f);
                        fleet_sql_quote(f, re);
                        fputs(") OR match(" FS_CGROUP ", ", f);
                        fleet_sql_quote(f, re_dir);
                        fputs("))", f);
                } else {
                        /* that cgroup and below, not its siblings that share
                         * a prefix (/a.service must not match /a.service-2);
                         * "/" is the root, everything is below it */
                        size_t n = strlen(q->cgroup);
                        _cleanup_free_ char *dir = NULL;

                        if (asprintf(&dir, "%s%s", q->cgroup, n > 0 && q->cgroup[n - 1] == '/' ? "" : "/") < 0)
                                return -ENOMEM;
                        fputs(" AND (" FS_CGROUP " = ", f);
                        fleet_sql_quote(f, q->cgroup);
                        fputs(" OR startsWith(" FS_CGROUP ", ", f);
                        fleet_sql_quote(f, dir);
                        fputs("))", f);
                }
        }
        if (r >= 0 && q->unit) {
                fputs(" AND " FS_UNIT " != ''", f);
                r = where_string(f, FS_UNIT, q->unit);
        }
        if (r >= 0 && q->container) {
                fputs(" AND startsWith(" FS_CONTAINER ", ", f);
                fleet_sql_quote(f, q->container);
                fputc(')', f);
        }
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}

/* The stacks' sums per group and stack, and per host too when by_host. */
static int sql_stacks(FILE *f, const struct query_request *q, const struct fleet_scope *s, bool by_host) {
        int r;

        fputs("SELECT " FS_STACK_ID ", sum(" FS_VALUE ") AS v, ", f);
        switch (s->group) {
        case FLEET_GROUP_PROCESS:
                /* by name and pid, as profd's root frame shows it */
                fputs("concat(" FS_COMM ", '-', toString(" FS_PID "))", f);
                break;
        case FLEET_GROUP_UNIT:
                fputs("if(" FS_UNIT " = '', '-', " FS_UNIT ")", f);
                break;
        case FLEET_GROUP_HOST:
                fputs(FS_HOST, f);
                break;
        default:
                fputs("''", f);
        }
        fputs(" AS grp", f);
        if (by_host)
                fputs(", " FS_HOST, f);
        fputs(" FROM " FS_TABLE_SAMPLES, f);
        r = fleet_sql_where(f, q, s);
        if (r < 0)
                return r;
        fputs(" GROUP BY grp, " FS_STACK_ID, f);
        if (by_host)
                fputs(", " FS_HOST " ORDER BY grp, " FS_STACK_ID ", " FS_HOST " FORMAT TabSeparated", f);
        else
                fputs(" ORDER BY grp, " FS_STACK_ID " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_stacks(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        return sql_stacks(f, q, s, false);
}

int fleet_sql_stacks_by_host(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        return sql_stacks(f, q, s, true);
}

int fleet_sql_drains(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        int r;

        /* the complete part: samples whose stack ended complete (user_end
         * 0), the stacks of the window's days looked up once on the server
         * that asks and sent along to the shards (GLOBAL) */
        fputs("SELECT " FS_START_NS ", " FS_END_NS ", sum(" FS_VALUE "), sumIf(" FS_VALUE ", " FS_STACK_ID
              " GLOBAL IN (SELECT " FST_ID " FROM " FS_TABLE_STACKS " WHERE " FST_USER_END " = 0", f);
        where_days(f, s);
        fputs(")), " FS_HOST " FROM " FS_TABLE_SAMPLES, f);
        r = fleet_sql_where(f, q, s);
        if (r < 0)
                return r;
        /* one row per drain of each host: two hosts' drains of the same
         * interval add up, which is what a series of their sum shows */
        fputs(" GROUP BY " FS_HOST ", " FS_START_NS ", " FS_END_NS " ORDER BY " FS_START_NS ", " FS_END_NS
              " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_host_stacks(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        int r;

        fputs("SELECT " FS_HOST ", " FS_STACK_ID ", sum(" FS_VALUE ") FROM " FS_TABLE_SAMPLES, f);
        r = fleet_sql_where(f, q, s);
        if (r < 0)
                return r;
        fputs(" GROUP BY " FS_HOST ", " FS_STACK_ID " ORDER BY " FS_HOST " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_drops(FILE *f, const struct query_request *q _unused_, const struct fleet_scope *s) {
        int r = 0;

        /* the drains that overlap the window, as fleet_sql_where's (and as
         * profd's store_query_drops): host-wide, no other filter */
        fprintf(f, "SELECT " FS_HOST ", " FSD_REASON ", sum(" FSD_VALUE ") FROM " FS_TABLE_DROPS " WHERE " FS_END_NS
                " >= %" PRIu64 " AND " FS_START_NS " <= %" PRIu64 " AND " FS_TIME " >= toDateTime(%" PRIu64 ") AND "
                FS_TIME " <= toDateTime(%" PRIu64 ")", s->from_ns, s->to_ns, (uint64_t) (s->from_ns / NSEC_PER_SEC),
                (uint64_t) (s->to_ns / NSEC_PER_SEC + FS_DRAIN_MAX_S));
        where_days(f, s);
        if (s->host)
                r = where_string(f, FS_HOST, s->host);
        if (r < 0)
                return r;
        fputs(" GROUP BY " FS_HOST ", " FSD_REASON " ORDER BY " FS_HOST ", " FSD_REASON " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_stack_frames(FILE *f, const struct query_request *q _unused_, const struct fleet_scope *s) {
        /* rows are deduplicated by ClickHouse in the background only: one
         * per id here; only the window's days, where its samples' stacks
         * were sent; binary, as arrays of numbers are most of the bytes */
        fputs("SELECT " FST_ID ", any(" FST_FRAMES "), any(" FST_USER_END ") FROM " FS_TABLE_STACKS " WHERE " FST_ID
              " IN " FLEET_SQL_IDS_TABLE, f);
        where_days(f, s);
        fputs(" GROUP BY " FST_ID " FORMAT RowBinary", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_frames(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        /* a folded answer shows names (and file:line with lines) only:
         * what it does not show is not sent ('' and 0 in its place), a
         * third of the bytes of a large answer's frames */
        bool folded = q && q->folded;
        const char *name = folded && q->raw_names ? "''" : "any(name)";
        const char *raw_name = folded && !q->raw_names ? "''" : "any(raw_name)";
        const char *file = folded && !q->lines ? "''" : "any(file)";
        const char *line = folded && !q->lines ? "0" : "any(line)";
        const char *full = folded ? "''" : NULL;

        fprintf(f, "SELECT " FSF_ID ", %s, %s, %s, %s, %s, %s, %s, any(has_address), any(kernel), any(resolved), "
                "any(inlined), any(jit), any(" FSF_UNRESOLVED ") FROM " FS_TABLE_FRAMES " WHERE " FSF_ID " IN " FLEET_SQL_IDS_TABLE,
                name, raw_name, full ?: "any(module)", full ?: "any(build_id)", file, line,
                folded ? "0" : "any(address)");
        where_days(f, s);
        fputs(" GROUP BY " FSF_ID " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

/* The frames of the stacks in the ids table, one row per frame of each
 * stack: stack, n (its frame count), pos (1 from the root), fid; a stack
 * without frames is one row with n 0 and fid 0. extra: more columns of the
 * ids table to carry along ("" or ", v"). */
static void sql_stack_frames(FILE *f, const struct fleet_scope *s, const char *extra) {
        /* stacks wait for a merge to be one row per id: any(); the ids
         * table goes along to the shards, where the stacks are */
        fprintf(f, "SELECT stack%s, length(fr) AS n, pos, fid FROM (SELECT stack%s, fr FROM (SELECT " FST_ID
                " AS stack, any(" FST_FRAMES ") AS fr FROM " FS_TABLE_STACKS " WHERE " FST_ID " IN (SELECT id FROM "
                FLEET_SQL_IDS_TABLE ")", extra, extra);
        where_days(f, s);
        fprintf(f, " GROUP BY " FST_ID ") ANY INNER JOIN (SELECT id AS stack%s FROM " FLEET_SQL_IDS_TABLE
                ") USING stack) LEFT ARRAY JOIN fr AS fid, arrayEnumerate(fr) AS pos", extra);
}

/* The frames of those stacks, one row per id with its columns as f_NAME
 * (duplicates waiting for a merge are one: any()). Sent to the shards as
 * a set made once (GLOBAL IN). */
static void sql_frames_of_stacks(FILE *f, const struct fleet_scope *s) {
        fputs("SELECT " FSF_ID " AS fid, any(name) AS f_name, any(raw_name) AS f_raw_name, any(module) AS f_module, "
              "any(file) AS f_file, any(line) AS f_line, any(kernel) AS f_kernel, any(resolved) AS f_resolved, "
              "any(has_address) AS f_has_address, any(" FSF_UNRESOLVED ") AS f_unresolved FROM " FS_TABLE_FRAMES
              " WHERE " FSF_ID " GLOBAL IN (SELECT arrayJoin(" FST_FRAMES ") FROM " FS_TABLE_STACKS " WHERE " FST_ID
              " IN (SELECT id FROM " FLEET_SQL_IDS_TABLE ")", f);
        where_days(f, s);
        fputc(')', f);
        where_days(f, s);
        fputs(" GROUP BY " FSF_ID, f);
}

/* The name a stack line shows for a frame (stackline.c, put_frame):
 * raw_names takes the symbol table's name where there is one. */
static const char *sql_frame_name(const struct query_request *q) {
        return q->raw_names ? "if(f_raw_name != '', f_raw_name, f_name)" : "f_name";
}

/* One name as the folded writer writes it (put_folded_name), but for what
 * fleet_folded_sanitize() does: ';' is the frames' separator. */
static void sql_folded_name(FILE *f, const char *expr) {
        fprintf(f, "if(%s = '', '[unknown]', replaceAll(%s, ';', ':'))", expr, expr);
}

int fleet_sql_stack_info(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        fputs("SELECT stack, any(n), sum(found), any(s_end), groupBitOr(bit)", f);
        if (q->folded)
                /* the frames in their order (pos), joined */
                fputs(", arrayStringConcat(arrayMap(x -> x.2, arraySort(groupArray((pos, part)))), ';')", f);
        /* a row per frame of each stack (one for a stack without frames,
         * fid 0: LEFT), joined with the frame (found 0: not there) */
        fputs(" FROM (SELECT stack, length(fr) AS n, pos, fid, s_end FROM (SELECT " FST_ID " AS stack, any(" FST_FRAMES
              ") AS fr, any(" FST_USER_END ") AS s_end FROM " FS_TABLE_STACKS " WHERE " FST_ID " IN (SELECT id FROM "
              FLEET_SQL_IDS_TABLE ")", f);
        where_days(f, s);
        fputs(" GROUP BY " FST_ID ") LEFT ARRAY JOIN fr AS fid, arrayEnumerate(fr) AS pos) ANY LEFT JOIN (SELECT fid, "
              "1 AS found, ", f);
        /* the reasons of unresolved user frames (quality-sum.c: not
         * resolved, not kernel, with an address), as bits */
        fprintf(f, "if(NOT f_resolved AND NOT f_kernel AND f_has_address, bitShiftLeft(toUInt8(1), if(f_unresolved "
                ">= 1 AND f_unresolved <= %d, f_unresolved, 0)), 0) AS bit", FLEET_UNRESOLVED_MAX);
        if (q->folded) {
                fputs(", concat(", f);
                sql_folded_name(f, sql_frame_name(q));
                if (q->lines) {
                        /* " (file's base name:line)" where both are known */
                        fputs(", if(f_file != '' AND f_line != 0, concat(' (', ", f);
                        sql_folded_name(f, "splitByChar('/', f_file)[-1]");
                        fputs(", ':', toString(f_line), ')'), '')", f);
                }
                fputs(", if(f_kernel, '_[k]', '')) AS part", f);
        }
        fputs(" FROM (", f);
        sql_frames_of_stacks(f, s);
        fputs(")) USING fid GROUP BY stack FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

/* UTF-8 as profd's stack lines require it (stackline.c, utf8_decode):
 * ClickHouse's ICU conversion changes exactly the strings that are not. */
static void sql_not_utf8(FILE *f, const char *expr) {
        fprintf(f, "convertCharset(%s, 'UTF-8', 'UTF-8') != %s", expr, expr);
}

/* The key of the table's row of a stack without frames, as
 * sql_table_keys() hashes keys. */
#define SQL_UNKNOWN_KEY "cityHash64('[unknown]', '', toUInt8(0))"

/* Each frame of the stacks in the ids table as a key of the table:
 * fid, k_name, k_module, k_kernel, k_id (their hash), k_not_utf8. */
static int sql_table_keys(FILE *f, const struct fleet_scope *s, const struct fleet_table *t, const char *shown) {
        /* by module: the module, or the frame's name where it has none */
        if (t->by == FLEET_TABLE_BY_MODULE)
                fprintf(f, "SELECT fid, if(f_module != '', f_module, %s) AS k_name, '' AS k_module, ", shown);
        else
                fprintf(f, "SELECT fid, %s AS k_name, f_module AS k_module, ", shown);
        fputs("f_kernel AS k_kernel, cityHash64(k_name, k_module, k_kernel) AS k_id, (", f);
        sql_not_utf8(f, "k_name");
        fputs(") OR (", f);
        sql_not_utf8(f, "k_module");
        fputs(") AS k_not_utf8 FROM (", f);
        sql_frames_of_stacks(f, s);
        fputc(')', f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_table(FILE *f, const struct query_request *q, const struct fleet_scope *s, const struct fleet_table *t) {
        const char *name = sql_frame_name(q);
        _cleanup_free_ char *shown = NULL;
        int r;

        /* the name client/render.c's stack_parse() gives a frame: with
         * lines (or by line) "name (base:line)", the base name being the
         * file's after its last '/' unless that is empty */
        if (t->lines || t->by == FLEET_TABLE_BY_LINE) {
                if (asprintf(&shown, "if(f_file != '' AND f_line > 0, concat(%s, ' (', if(splitByChar('/', f_file)[-1] "
                             "!= '', splitByChar('/', f_file)[-1], f_file), ':', toString(f_line), ')'), %s)",
                             name, name) < 0)
                        return -ENOMEM;
        } else if (!(shown = strdup(name)))
                return -ENOMEM;

        /* Summed by a number, the key's 64-bit hash (as a frame's id is
         * one), and named at the end: a key is a few strings, and there
         * are far fewer keys than frames of stacks. */
        fputs("SELECT kname, kmodule, kkernel, sum(k_self) AS self, sum(k_total) AS total, max(k_bad) FROM (", f);
        /* per key, from one row per stack and key: its value once, and
         * whether it is the stack's leaf */
        fputs("SELECT kid, sum(v * leaf) AS k_self, sum(v) AS k_total FROM (SELECT stack, kid, any(v) AS v, max(pos = n) "
              "AS leaf FROM (SELECT stack, v, n, pos, if(n = 0, " SQL_UNKNOWN_KEY ", k_id) AS kid FROM (", f);
        sql_stack_frames(f, s, ", v");
        fputs(") ANY LEFT JOIN (SELECT fid, k_id FROM (", f);
        r = sql_table_keys(f, s, t, shown);
        if (r < 0)
                return r;
        fputs(")) USING fid) GROUP BY stack, kid) GROUP BY kid) ANY LEFT JOIN (SELECT k_id AS kid, any(k_name) AS kname, "
              "any(k_module) AS kmodule, any(k_kernel) AS kkernel, max(k_not_utf8) AS k_bad FROM (", f);
        r = sql_table_keys(f, s, t, shown);
        if (r < 0)
                return r;
        /* a stack without frames: "[unknown]" (top_table_add) */
        fputs(") GROUP BY k_id UNION ALL SELECT " SQL_UNKNOWN_KEY ", '[unknown]', '', toUInt8(0), toUInt8(0)) USING kid "
              "GROUP BY kname, kmodule, kkernel WITH TOTALS", f);
        /* top_table_rows()'s order: strings compare as bytes, as strcmp */
        if (t->children)
                fputs(" ORDER BY total DESC, self DESC, kname, kmodule, kkernel", f);
        else
                fputs(" ORDER BY self DESC, total DESC, kname, kmodule, kkernel", f);
        if (t->limit > 0)
                fprintf(f, " LIMIT %" PRIu64, t->limit);
        fputs(" FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

void fleet_folded_sanitize(char *text, size_t len) {
        unsigned char *s = (unsigned char *) text;

        for (size_t i = 0; i < len;) {
                uint32_t c;
                size_t n;

                if (s[i] < 0x80) {
                        if (s[i] < 0x20 || s[i] == 0x7f)
                                s[i] = '?';
                        i++;
                } else if ((n = utf8_decode(s + i, len - i, &c)) > 0)
                        i += n;
                else
                        s[i++] = '?';
        }
}

/* Unescapes s in place (TabSeparated escapes, see fleet_tsv_row). */
static void tsv_unescape(char *s) {
        char *w = s;

        if (streq(s, "\\N")) {
                *s = '\0';
                return;
        }
        for (char *p = s; *p; p++) {
                if (*p != '\\' || !p[1]) {
                        *w++ = *p;
                        continue;
                }
                p++;
                switch (*p) {
                case 't': *w++ = '\t'; break;
                case 'n': *w++ = '\n'; break;
                case 'r': *w++ = '\r'; break;
                case 'b': *w++ = '\b'; break;
                case 'f': *w++ = '\f'; break;
                case '0': *w++ = '\0'; break;
                case 'a': *w++ = '\a'; break;
                case 'v': *w++ = '\v'; break;
                case 'x': {
                        char hex[3] = { p[1], p[1] ? p[2] : 0, 0 };
                        char *end;
                        unsigned long v = strtoul(hex, &end, 16);

                        if (end == hex + 2) {
                                *w++ = (char) v;
                                p += 2;
                        } else
                                *w++ = 'x';
                        break;
                }
                default: *w++ = *p; /* \\ \' and anything else: the character */
                }
        }
        *w = '\0';
}

int fleet_tsv_row(char *text, size_t len, size_t *pos, char **fields, size_t max) {
        size_t start = *pos, n = 0;
        char *nl, *p;

        if (start >= len)
                return 0;
        nl = memchr(text + start, '\n', len - start);
        if (!nl)
                return -EBADMSG;
        *nl = '\0';
        *pos = (size_t) (nl - text) + 1;
        for (p = text + start;;) {
                char *tab = strchr(p, '\t');

                if (n == max)
                        return -EBADMSG;
                if (tab)
                        *tab = '\0';
                tsv_unescape(p);
                fields[n++] = p;
                if (!tab)
                        break;
                p = tab + 1;
        }
        return (int) n;
}

int fleet_tsv_u64(const char *field, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!field[0] || field[0] == '-' || field[0] == '+' || field[0] == ' ')
                return -EBADMSG;
        errno = 0;
        v = strtoull(field, &end, 10);
        if (errno != 0 || *end)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* ClickHouse's RowBinary: an array's length as unsigned LEB128, numbers
 * little-endian. */
static int rowbinary_varint(const uint8_t *data, size_t len, size_t *pos, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                uint8_t b;

                if (*pos >= len)
                        return -EBADMSG;
                b = data[(*pos)++];
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

static uint64_t rowbinary_u64(const uint8_t *p) {
        uint64_t v = 0;

        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

int fleet_rowbinary_stack(const uint8_t *data, size_t len, size_t *pos, uint64_t *ret_id, uint64_t **ret_frames,
                          size_t *ret_n, int *ret_user_end) {
        _cleanup_free_ uint64_t *frames = NULL;
        uint64_t n;

        if (*pos == len)
                return 0;
        if (len - *pos < 8)
                return -EBADMSG;
        *ret_id = rowbinary_u64(data + *pos);
        *pos += 8;
        /* the frames, then user_end's byte */
        if (rowbinary_varint(data, len, pos, &n) < 0 || len - *pos < 1 || n > (len - *pos - 1) / 8)
                return -EBADMSG;
        frames = malloc(MAX(n, (uint64_t) 1) * sizeof(*frames));
        if (!frames)
                return -ENOMEM;
        for (uint64_t i = 0; i < n; i++, *pos += 8)
                frames[i] = rowbinary_u64(data + *pos);
        *ret_user_end = data[(*pos)++];
        *ret_frames = TAKE_PTR(frames);
        *ret_n = (size_t) n;
        return 1;
}
