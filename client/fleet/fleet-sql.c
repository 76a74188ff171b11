/* Fleet queries as ClickHouse SQL, and ClickHouse's TabSeparated answers
 * read back (see fleet-sql.h). */
#include "fleet-sql.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../bpf/profd.h"
#include "fleet-schema.h"
#include "macro.h"
#include "protocol.h"
#include "timed-samples.h"

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

static int where_filters(FILE *f, const struct query_request *q, const struct fleet_scope *s);

int fleet_sql_where(FILE *f, const struct query_request *q, const struct fleet_scope *s) {

        if (s->timeline) {
                /* each sample by its own time, as profd's timeline; the sort
                 * key's time is that time in seconds, the partition's day
                 * its drain's end (at most FS_DRAIN_MAX_S later) */
                fprintf(f, " PREWHERE " FSL_T " >= %" PRIu64 " AND " FSL_T " <= %" PRIu64, s->from_ns, s->to_ns);
                fprintf(f, " WHERE " FS_TIME " >= toDateTime(%" PRIu64 ") AND " FS_TIME " <= toDateTime(%" PRIu64 ")",
                        (uint64_t) (s->from_ns / NSEC_PER_SEC), (uint64_t) (s->to_ns / NSEC_PER_SEC));
                where_days(f, s);
                return where_filters(f, q, s);
        }
        /* every drain interval that overlaps the window, as profd's store
         * (store.c, sql_add_filters). PREWHERE: ClickHouse reads these two
         * columns first and the others only where a row passes, so the
         * day after a window that the sort key cannot rule out (a drain
         * ending then may have started in the window: FS_DRAIN_MAX_S)
         * costs two columns, not all of them */
        fprintf(f, " PREWHERE " FS_END_NS " >= %" PRIu64 " AND " FS_START_NS " <= %" PRIu64, s->from_ns, s->to_ns);
        fprintf(f, " WHERE " FS_KIND " = %d", q->kind);
        /* the sort key's time and the partitions' day (both the drain's
         * end) let ClickHouse skip what cannot overlap */
        fprintf(f, " AND " FS_TIME " >= toDateTime(%" PRIu64 ") AND " FS_TIME " <= toDateTime(%" PRIu64 ")",
                (uint64_t) (s->from_ns / NSEC_PER_SEC), (uint64_t) (s->to_ns / NSEC_PER_SEC + FS_DRAIN_MAX_S));
        where_days(f, s);
        return where_filters(f, q, s);
}

/* The request's filters, " AND ..." each: host, thread, state (not in
 * the timeline), process attributes. */
static int where_filters(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        int r = 0;

        if (s->host)
                r = where_string(f, FS_HOST, s->host);
        if (r >= 0 && q->tid)
                fprintf(f, " AND " FS_TID " = %" PRIu32, q->tid);
        if (r >= 0 && q->state_mask && !s->timeline) {
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

int fleet_sql_stacks_by_host(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        int r;

        /* the timeline: a row per sample */
        fputs(s->timeline ? "SELECT " FS_STACK_ID ", count() AS v, " : "SELECT " FS_STACK_ID ", sum(" FS_VALUE ") AS v, ",
              f);
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
        fputs(" AS grp, " FS_HOST " FROM ", f);
        fputs(s->timeline ? FS_TABLE_TIMELINE : FS_TABLE_SAMPLES, f);
        r = fleet_sql_where(f, q, s);
        if (r < 0)
                return r;
        /* a host's samples are on one shard (cluster.sql shards by host),
         * so each shard's groups are whole: the server that asks passes
         * them on without merging, unordered (a group split across shards
         * would be two rows, which profctl adds up as it adds hosts up) */
        fputs(" GROUP BY grp, " FS_STACK_ID ", " FS_HOST " SETTINGS distributed_group_by_no_merge = 1 "
              "FORMAT RowBinary", f);
        return ferror(f) ? -EIO : 0;
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

int fleet_sql_timeline_samples(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        struct fleet_scope t = *s;
        int r;

        t.timeline = true;
        /* a raise's samples apart, with their rates (version 5) */
        fputs("SELECT intDiv(" FSL_T ", 1000000) AS ms, " FS_STACK_ID ", " FSL_FREQUENCY_HZ ", " FSL_BASE_HZ
              ", count() FROM " FS_TABLE_TIMELINE, f);
        r = fleet_sql_where(f, q, &t);
        if (r < 0)
                return r;
        fprintf(f, " GROUP BY ms, " FS_STACK_ID ", " FSL_FREQUENCY_HZ ", " FSL_BASE_HZ " ORDER BY ms, " FS_STACK_ID
                ", " FSL_FREQUENCY_HZ ", " FSL_BASE_HZ " LIMIT %" PRIu64 " FORMAT TabSeparated",
                (uint64_t) ((q->max_samples ? q->max_samples : TIMED_MAX_SAMPLES) + 1));
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

int fleet_sql_captures(FILE *f, const struct query_request *q _unused_, const struct fleet_scope *s) {
        int r = 0;

        /* each capture in its latest state (the largest; a host's rows are
         * all on one shard, where LIMIT BY sees them together), if its
         * pinned range overlaps the window, as profd's store_capture_window;
         * the other filters do not apply to events, as in profd's answer.
         * No day bound: the table holds a row per capture and state, one
         * capture per cool-down at most */
        fprintf(f, "SELECT " FS_HOST ", " FSC_ID ", " FSC_STATE ", " FSC_CAUSE ", " FSC_TRIGGER_NS ", " FSC_FROM_NS
                ", " FSC_TO_NS " FROM (SELECT " FS_HOST ", " FSC_ID ", " FSC_STATE ", " FSC_CAUSE ", " FSC_TRIGGER_NS
                ", " FSC_FROM_NS ", " FSC_TO_NS " FROM " FS_TABLE_CAPTURES " WHERE " FSC_FROM_NS " <= %" PRIu64
                " AND " FSC_TO_NS " >= %" PRIu64, s->to_ns, s->from_ns);
        if (s->host)
                r = where_string(f, FS_HOST, s->host);
        if (r < 0)
                return r;
        fputs(" ORDER BY " FS_HOST ", " FSC_ID ", " FSC_STATE " DESC LIMIT 1 BY " FS_HOST ", " FSC_ID ") ORDER BY "
              FSC_TRIGGER_NS ", " FS_HOST ", " FSC_ID " FORMAT TabSeparated", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_stack_frames(FILE *f, const struct query_request *q _unused_, const struct fleet_scope *s) {
        /* rows are deduplicated by ClickHouse in the background only (and
         * a window over two days finds a stack in both): one per id here,
         * any copy (the id is a hash of the content), which LIMIT BY takes
         * at a third of GROUP BY's cost (every copy of an id is on one
         * shard); only the window's days, where its samples' stacks were
         * sent; binary, as arrays of numbers are most of the bytes */
        fputs("SELECT " FST_ID ", " FST_FRAMES ", " FST_USER_END " FROM " FS_TABLE_STACKS " WHERE " FST_ID
              " IN " FLEET_SQL_IDS_TABLE, f);
        where_days(f, s);
        fputs(" LIMIT 1 BY " FST_ID " FORMAT RowBinary", f);
        return ferror(f) ? -EIO : 0;
}

int fleet_sql_frames(FILE *f, const struct query_request *q, const struct fleet_scope *s) {
        /* a folded answer shows names (and file:line with lines) only,
         * the table's rows names and modules (and file:line by line or
         * with lines): what they do not show is not sent ('' and 0 in its
         * place), a third to two thirds of the bytes of a large answer's
         * frames. The name stays with raw names: a frame without a raw
         * name shows it. */
        bool folded = q && q->folded, table = s->table, trim = folded || table;
        bool lines = q && (q->lines || (table && (s->table->lines || s->table->by == FLEET_TABLE_BY_LINE)));
        const char *raw_name = trim && !(q && q->raw_names) ? "''" : "raw_name";
        const char *file = trim && !lines ? "''" : "file";
        const char *line = trim && !lines ? "toUInt32(0)" : "line";

        /* one row per id, as fleet_sql_stack_frames() */
        fprintf(f, "SELECT " FSF_ID ", name, %s, %s, %s, %s, %s, %s, has_address, kernel, resolved, inlined, jit, "
                FSF_UNRESOLVED " FROM " FS_TABLE_FRAMES " WHERE " FSF_ID " IN " FLEET_SQL_IDS_TABLE,
                raw_name, folded ? "''" : "module", trim ? "''" : "build_id", file, line,
                trim ? "toUInt64(0)" : "address");
        where_days(f, s);
        /* binary: no escaping to write and undo, numbers as they are */
        fputs(" LIMIT 1 BY " FSF_ID " FORMAT RowBinary", f);
        return ferror(f) ? -EIO : 0;
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

static int rowbinary_string(const uint8_t *data, size_t len, size_t *pos, struct fleet_string *ret) {
        uint64_t n;

        if (rowbinary_varint(data, len, pos, &n) < 0 || n > len - *pos)
                return -EBADMSG;
        *ret = (struct fleet_string) { (const char *) data + *pos, (size_t) n };
        *pos += (size_t) n;
        return 0;
}

int fleet_rowbinary_sum(const uint8_t *data, size_t len, size_t *pos, struct fleet_sum_row *ret) {
        size_t p = *pos;

        if (p == len)
                return 0;
        if (len - p < 16)
                return -EBADMSG;
        ret->stack_id = rowbinary_u64(data + p);
        ret->value = rowbinary_u64(data + p + 8);
        p += 16;
        if (rowbinary_string(data, len, &p, &ret->group) < 0 || rowbinary_string(data, len, &p, &ret->host) < 0)
                return -EBADMSG;
        *pos = p;
        return 1;
}

int fleet_rowbinary_frame(const uint8_t *data, size_t len, size_t *pos, struct fleet_frame_row *ret) {
        size_t p = *pos;

        if (p == len)
                return 0;
        if (len - p < 8)
                return -EBADMSG;
        ret->id = rowbinary_u64(data + p);
        p += 8;
        for (size_t i = 0; i < ELEMENTSOF(ret->strings); i++)
                if (rowbinary_string(data, len, &p, &ret->strings[i]) < 0)
                        return -EBADMSG;
        /* line UInt32, address UInt64, then six UInt8 */
        if (len - p < 4 + 8 + ELEMENTSOF(ret->flags))
                return -EBADMSG;
        ret->line = (uint32_t) data[p] | (uint32_t) data[p + 1] << 8 | (uint32_t) data[p + 2] << 16 |
                    (uint32_t) data[p + 3] << 24;
        ret->address = rowbinary_u64(data + p + 4);
        p += 12;
        memcpy(ret->flags, data + p, ELEMENTSOF(ret->flags));
        p += ELEMENTSOF(ret->flags);
        *pos = p;
        return 1;
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
