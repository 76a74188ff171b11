/* Fleet answers from ClickHouse (see fleet.h): the request is parsed and
 * its window resolved by profd's own request.c, the SQL is fleet-sql.c's,
 * and the lines are written by profd's stackline.c and series.c, so a fleet
 * answer has exactly the shape of profd's. */
#include "fleet-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "capture-event.h"
#include "fleet-schema.h"
#include "fleet-sql.h"
#include "hashmap.h"
#include "helpers.h"
#include "protocol.h"
#include "quality-sum.h"
#include "quality.h"
#include "rate-weight.h"
#include "request.h"
#include "series.h"
#include "timed-samples.h"
#include "top-table.h"
#include "util.h"

static const char *const kind_names[] = {
        [PROFD_KIND_CPU] = "cpu", [PROFD_KIND_OFFCPU] = "offcpu", [PROFD_KIND_WAKEUP] = "wakeup",
};

/* The answer being made: lines appended to a memstream. */
struct answer {
        FILE *out;
        char *text;
        size_t len;
};

static int answer_error(struct answer *a, const char *message) {
        _cleanup_json_ json_t *line = json_pack("{s:s, s:s}", PROTO_KEY_TYPE, PROTO_TYPE_ERROR, PROTO_KEY_ERROR,
                                                message);
        _cleanup_free_ char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;

        if (!text)
                return cli_error(-ENOMEM, "%m");
        fprintf(a->out, "%s\n", text);
        return 0;
}

/* A stack of the answer, as ClickHouse summed it. */
struct row {
        uint64_t stack_id, value;
        char *group;
};

/* A frame as profd's answer shows it, its strings owned here. */
struct frame {
        struct store_frame_out out;
        bool utf8;     /* every string of out is UTF-8 (profd's line would have U+FFFD in its place) */
        struct top_func *func; /* its row in the table being made (write_table_rows), once found */
        char strings[]; /* name..file, in the same allocation */
};

/* A stack's value on one host: what the host's quality report is made of. */
struct host_row {
        size_t host; /* index in answer_data.hosts */
        uint64_t stack_id, value;
};

/* A host of the answer (with samples or drops in the window) and its
 * quality report, as its profd would answer it. */
struct host_quality {
        char *host;
        struct quality q;
};

struct answer_data {
        struct row *rows;
        size_t n_rows;
        struct host_row *host_rows;
        size_t n_host_rows;
        struct host_quality *hosts;
        size_t n_hosts;
        hashmap *stacks; /* stack id -> struct stack_frames* */
        hashmap *frames; /* frame id -> struct frame* */
        hashmap *host_indexes; /* host name (hosts[i].host) -> i */
        char *bodies[8];
};

struct stack_frames {
        uint64_t *ids;
        size_t n;
        int user_end; /* as the store's: STORE_END_UNKNOWN for FST_END_UNKNOWN */
        int unresolved_mask; /* quality_unresolved_mask() of its frames; -1 until stack_quality() */
        struct frame **frames; /* ids' frames, once stack_out() looked them up */
        bool utf8;             /* every string of those frames is UTF-8 (when frames is set) */
};

static void answer_data_done(struct answer_data *d) {
        const void *k;
        void *v;
        size_t st = 0;

        for (size_t i = 0; i < d->n_rows; i++)
                free(d->rows[i].group);
        free(d->rows);
        free(d->host_rows);
        for (size_t i = 0; i < d->n_hosts; i++)
                free(d->hosts[i].host);
        free(d->hosts);
        hashmap_free(d->host_indexes);
        while (d->stacks && hashmap_iterate(d->stacks, &st, &k, &v)) {
                struct stack_frames *sf = v;
                free(sf->ids);
                free(sf->frames);
                free(sf);
        }
        hashmap_free(d->stacks);
        st = 0;
        while (d->frames && hashmap_iterate(d->frames, &st, &k, &v)) {
                free(v);
        }
        hashmap_free(d->frames);
        for (size_t i = 0; i < ELEMENTSOF(d->bodies); i++)
                free(d->bodies[i]);
}

static int bad_answer(fleet *f, const char *what) {
        return cli_error(-EBADMSG, "ClickHouse at %s sent a malformed %s", f->url, what);
}

/* Runs the query that write makes of the request. */
static int fleet_run(fleet *f, int (*write)(FILE *, const struct query_request *, const struct fleet_scope *),
                     const struct query_request *q, const struct fleet_scope *s, char **ret_body, size_t *ret_len) {
        _cleanup_free_ char *sql = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&sql, &size);
        int r;

        if (!m)
                return cli_error(-ENOMEM, "%m");
        r = write(m, q, s);
        if (r < 0) {
                fclose(m);
                return cli_error(r, "cannot write the query: %m");
        }
        return fleet_http_memstream(f, m, &sql, ret_body, ret_len);
}

/* The index of host in d->hosts, added when new. Returns it, or -ENOMEM. */
static ssize_t host_index(struct answer_data *d, const char *host) {
        struct host_quality *n;
        void *v;

        if (!d->host_indexes && !(d->host_indexes = hashmap_new_string()))
                return -ENOMEM;
        if (hashmap_get(d->host_indexes, host, &v) >= 0)
                return (ssize_t) (uintptr_t) v;
        n = reallocarray(d->hosts, d->n_hosts + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        d->hosts = n;
        n[d->n_hosts] = (struct host_quality) { .host = strdup(host) };
        if (!n[d->n_hosts].host)
                return -ENOMEM;
        /* the key is the host's own copy */
        if (hashmap_put(d->host_indexes, n[d->n_hosts].host, (void *) (uintptr_t) d->n_hosts) < 0) {
                free(n[d->n_hosts].host);
                return -ENOMEM;
        }
        return (ssize_t) d->n_hosts++;
}

/* The drop counters of the window, each host's into its report. */
static int fetch_drops(fleet *f, const struct query_request *q, const struct fleet_scope *s, struct answer_data *d) {
        size_t len, pos = 0;
        char *fields[3];
        int r;

        r = fleet_run(f, fleet_sql_drops, q, s, &d->bodies[4], &len);
        if (r < 0)
                return r;
        while ((r = fleet_tsv_row(d->bodies[4], len, &pos, fields, 3)) > 0) {
                uint64_t count;
                ssize_t h;

                if (r != 3 || fleet_tsv_u64(fields[2], &count) < 0)
                        return bad_answer(f, "drop row");
                h = host_index(d, fields[0]);
                if (h < 0)
                        return cli_error(-ENOMEM, "%m");
                quality_add_drop(&d->hosts[h].q, fields[1], count);
        }
        if (r < 0)
                return bad_answer(f, "drop row");
        return 0;
}

/* Runs the query fn writes with list (TabSeparated rows of structure) as
 * the external table FLEET_SQL_IDS_TABLE. */
static int fetch_with_table(fleet *f, const char *structure, const char *list, size_t list_size,
                            int (*fn)(FILE *, const struct query_request *, const struct fleet_scope *),
                            const struct query_request *q, const struct fleet_scope *s, char **ret_body,
                            size_t *ret_len) {
        _cleanup_free_ char *sql = NULL;
        size_t size = 0;
        FILE *m;
        int r;

        m = open_memstream(&sql, &size);
        if (!m)
                return cli_error(-ENOMEM, "%m");
        r = fn(m, q, s);
        if (fclose(m) != 0 || r < 0)
                return cli_error(-ENOMEM, "cannot write the query: %m");
        return fleet_http_ids(f, sql, structure, list, list_size, false, ret_body, ret_len);
}

/* Runs the query fn writes for the ids of map's keys. */
static int fetch_by_ids(fleet *f, hashmap *ids,
                        int (*fn)(FILE *, const struct query_request *, const struct fleet_scope *),
                        const struct query_request *q, const struct fleet_scope *s, char **ret_body, size_t *ret_len) {
        _cleanup_free_ char *list = NULL;
        size_t st = 0, list_size = 0;
        const void *k;
        void *v;
        FILE *l;

        l = open_memstream(&list, &list_size);
        if (!l)
                return cli_error(-ENOMEM, "%m");
        while (hashmap_iterate(ids, &st, &k, &v))
                fprintf(l, "%" PRIu64 "\n", KEY_TO_UINT64(k));
        if (fclose(l) != 0)
                return cli_error(-ENOMEM, "%m");
        return fetch_with_table(f, FLEET_SQL_IDS_STRUCTURE, list, list_size, fn, q, s, ret_body, ret_len);
}

static int fetch_stacks(fleet *f, const struct query_request *q, const struct fleet_scope *s,
                        struct answer_data *d) {
        size_t len, pos = 0;
        int r;

        d->stacks = hashmap_new_u64();
        d->frames = hashmap_new_u64();
        if (!d->stacks || !d->frames)
                return cli_error(-ENOMEM, "%m");
        for (size_t i = 0; i < d->n_rows + d->n_host_rows; i++) {
                uint64_t id = i < d->n_rows ? d->rows[i].stack_id : d->host_rows[i - d->n_rows].stack_id;

                r = hashmap_put(d->stacks, UINT64_TO_KEY(id), NULL);
                if (r < 0 && r != -EEXIST)
                        return cli_error(r, "%m");
        }
        if (hashmap_size(d->stacks) == 0)
                return 0;
        r = fetch_by_ids(f, d->stacks, fleet_sql_stack_frames, q, s, &d->bodies[1], &len);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_free_ struct stack_frames *sf = calloc(1, sizeof(*sf));
                uint64_t id;
                void **slot;

                if (!sf)
                        return cli_error(-ENOMEM, "%m");
                r = fleet_rowbinary_stack((const uint8_t *) d->bodies[1], len, &pos, &id, &sf->ids, &sf->n,
                                          &sf->user_end);
                if (r > 0 && sf->user_end == FST_END_UNKNOWN)
                        sf->user_end = STORE_END_UNKNOWN;
                sf->unresolved_mask = -1;
                if (r == 0)
                        break;
                if (r == -ENOMEM)
                        return cli_error(r, "%m");
                if (r < 0)
                        return bad_answer(f, "stack");
                slot = hashmap_value(d->stacks, UINT64_TO_KEY(id));
                if (!slot || *slot) {
                        free(sf->ids);
                        return bad_answer(f, "stack (not asked for, or twice)");
                }
                for (size_t i = 0; i < sf->n; i++) {
                        r = hashmap_put(d->frames, UINT64_TO_KEY(sf->ids[i]), NULL);
                        if (r < 0 && r != -EEXIST) {
                                free(sf->ids);
                                return cli_error(r, "%m");
                        }
                }
                /* the puts above went to the frames map: slot is still valid */
                *slot = TAKE_PTR(sf);
        }
        if (r < 0)
                return bad_answer(f, "stack");
        return 0;
}

static int fetch_frames(fleet *f, const struct query_request *q, const struct fleet_scope *s,
                        struct answer_data *d) {
        size_t len, pos = 0;
        int r;

        if (hashmap_size(d->frames) == 0)
                return 0;
        r = fetch_by_ids(f, d->frames, fleet_sql_frames, q, s, &d->bodies[2], &len);
        if (r < 0)
                return r;
        for (;;) {
                struct fleet_frame_row row;
                struct frame *fr;
                size_t total = 0;
                char *p;
                void **slot;

                r = fleet_rowbinary_frame((const uint8_t *) d->bodies[2], len, &pos, &row);
                if (r <= 0)
                        break;
                /* has_address, kernel, resolved, inlined, jit */
                for (size_t i = 0; i < 5; i++)
                        if (row.flags[i] > 1)
                                return bad_answer(f, "frame");
                slot = hashmap_value(d->frames, UINT64_TO_KEY(row.id));
                if (!slot || *slot)
                        return bad_answer(f, "frame (not asked for, or twice)");
                for (size_t i = 0; i < ELEMENTSOF(row.strings); i++) {
                        /* a C string each: a NUL inside would cut it */
                        if (memchr(row.strings[i].s, '\0', row.strings[i].n))
                                return bad_answer(f, "frame (a NUL in a string)");
                        total += row.strings[i].n + 1;
                }
                fr = calloc(1, sizeof(*fr) + total);
                if (!fr)
                        return cli_error(-ENOMEM, "%m");
                p = fr->strings;
                const char **dst[5] = { &fr->out.name, &fr->out.raw_name, &fr->out.module, &fr->out.build_id,
                                        &fr->out.file };
                for (size_t i = 0; i < 5; i++) {
                        memcpy(p, row.strings[i].s, row.strings[i].n);
                        p[row.strings[i].n] = '\0';
                        *dst[i] = p;
                        p += row.strings[i].n + 1;
                }
                /* profd leaves these out of its lines when it has none */
                if (!*fr->out.raw_name)
                        fr->out.raw_name = NULL;
                if (!*fr->out.build_id)
                        fr->out.build_id = NULL;
                if (!*fr->out.file)
                        fr->out.file = NULL;
                fr->out.line = row.line;
                fr->out.address = row.address;
                fr->out.has_address = row.flags[0];
                fr->out.kernel = row.flags[1];
                fr->out.resolved = row.flags[2];
                fr->out.inlined = row.flags[3];
                fr->out.jit = row.flags[4];
                fr->out.unresolved = row.flags[5];
                fr->utf8 = utf8_valid(fr->out.name) && utf8_valid(fr->out.raw_name ?: "") &&
                           utf8_valid(fr->out.module) && utf8_valid(fr->out.file ?: "");
                *slot = fr;
        }
        if (r < 0)
                return bad_answer(f, "frame");
        return 0;
}

/* stack_id's stack, its frames looked up on its first use. Returns 0, or
 * -EBADMSG/-ENOMEM after saying why. */
static int stack_get(fleet *f, const struct answer_data *d, uint64_t stack_id, struct stack_frames **ret) {
        struct stack_frames *sf;
        void *v;

        if (hashmap_get(d->stacks, UINT64_TO_KEY(stack_id), &v) < 0 || !v)
                return cli_error(-EBADMSG, "ClickHouse at %s has samples of stack %" PRIu64 " but not the "
                                 "stack (exported incompletely?)", f->url, stack_id);
        sf = v;
        if (!sf->frames && sf->n > 0) {
                _cleanup_free_ struct frame **fr = calloc(sf->n, sizeof(*fr));

                if (!fr)
                        return cli_error(-ENOMEM, "%m");
                sf->utf8 = true;
                for (size_t j = 0; j < sf->n; j++) {
                        if (hashmap_get(d->frames, UINT64_TO_KEY(sf->ids[j]), &v) < 0 || !v)
                                return cli_error(-EBADMSG, "ClickHouse at %s has stack %" PRIu64 " but not its "
                                                 "frame %" PRIu64 " (exported incompletely?)", f->url, stack_id,
                                                 sf->ids[j]);
                        fr[j] = v;
                        sf->utf8 = sf->utf8 && fr[j]->utf8;
                }
                sf->frames = TAKE_PTR(fr);
        } else if (sf->n == 0)
                sf->utf8 = true;
        *ret = sf;
        return 0;
}

/* Fills so's frames and user_end with sf's, in *frames (grown as needed).
 * Returns 0 or -ENOMEM after saying why. */
static int stack_out(const struct stack_frames *sf, struct store_frame_out **frames, size_t *frames_cap,
                     struct store_stack_out *so) {
        if (sf->n > *frames_cap) {
                struct store_frame_out *n = reallocarray(*frames, sf->n, sizeof(*n));

                if (!n)
                        return cli_error(-ENOMEM, "%m");
                *frames = n;
                *frames_cap = sf->n;
        }
        for (size_t j = 0; j < sf->n; j++)
                (*frames)[j] = sf->frames[j]->out;
        so->frames = *frames;
        so->n_frames = sf->n;
        so->user_end = sf->user_end;
        return 0;
}

/* stack_id's stack, its unresolved_mask worked out on first use. */
static int stack_quality(fleet *f, const struct answer_data *d, uint64_t stack_id, struct store_frame_out **frames,
                         size_t *frames_cap, struct stack_frames **ret) {
        struct stack_frames *sf;
        int r;

        r = stack_get(f, d, stack_id, &sf);
        if (r < 0)
                return r;
        if (sf->unresolved_mask < 0) {
                struct store_stack_out so = {};

                r = stack_out(sf, frames, frames_cap, &so);
                if (r < 0)
                        return r;
                sf->unresolved_mask = (int) quality_unresolved_mask(&so);
        }
        *ret = sf;
        return 0;
}

/* Writes the end line's "quality" (the fleet's: its hosts' added up) and
 * "quality_by_host" (each host's report, as its profd would answer it). */
static int write_quality(struct answer *a, const struct answer_data *d, bool partial) {
        _cleanup_json_ json_t *by_host = json_object(), *total = NULL;
        _cleanup_free_ char *t = NULL, *h = NULL;
        struct quality sum = { .partial = partial };

        if (!by_host)
                return cli_error(-ENOMEM, "%m");
        for (size_t i = 0; i < d->n_hosts; i++) {
                quality_add(&sum, &d->hosts[i].q);
                if (json_object_set_new(by_host, d->hosts[i].host, quality_to_json(&d->hosts[i].q)) < 0)
                        return cli_error(-ENOMEM, "%m");
        }
        total = quality_to_json(&sum);
        t = total ? json_dumps(total, JSON_COMPACT) : NULL;
        h = json_dumps(by_host, JSON_COMPACT | JSON_SORT_KEYS);
        if (!t || !h)
                return cli_error(-ENOMEM, "%m");
        fprintf(a->out, ",\"" PROTO_KEY_QUALITY "\":%s,\"" PROTO_KEY_QUALITY_BY_HOST "\":%s", t, h);
        return 0;
}

/* A row of fleet_sql_stacks_by_host(): its group in the answer's body. */
struct group_stack_host {
        uint64_t stack_id, value;
        struct fleet_string group;
        size_t host; /* index in answer_data.hosts */
};

static int group_stack_compare(const void *a, const void *b) {
        const struct group_stack_host *x = a, *y = b;
        /* as strcmp() orders the groups */
        int c = memcmp(x->group.s, y->group.s, MIN(x->group.n, y->group.n));

        if (c == 0 && x->group.n != y->group.n)
                c = x->group.n < y->group.n ? -1 : 1;
        return c != 0 ? c : x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* group_stack_compare() of rows whose groups are all "" */
static int stack_compare(const void *a, const void *b) {
        const struct group_stack_host *x = a, *y = b;

        return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static bool group_eq(const char *group, struct fleet_string g) {
        return strlen(group) == g.n && memcmp(group, g.s, g.n) == 0;
}

/* The summed stacks of the request (d->rows, one per group and stack, in
 * order of group and stack) and each host's part of them (d->host_rows),
 * from one scan. */
static int fetch_rows_by_host(fleet *f, const struct query_request *q, const struct fleet_scope *s,
                              struct answer_data *d) {
        _cleanup_free_ struct group_stack_host *in = NULL;
        _cleanup_free_ char *host = NULL;
        size_t len, pos = 0, cap = 0, n = 0, in_cap = 0, host_cap = 0, host_size = 0;
        int r;

        r = fleet_run(f, fleet_sql_stacks_by_host, q, s, &d->bodies[0], &len);
        if (r < 0)
                return r;
        for (;;) {
                struct fleet_sum_row row;
                ssize_t h;

                r = fleet_rowbinary_sum((const uint8_t *) d->bodies[0], len, &pos, &row);
                if (r <= 0)
                        break;
                if (memchr(row.group.s, '\0', row.group.n) || memchr(row.host.s, '\0', row.host.n))
                        return bad_answer(f, "stack row (a NUL in a string)");
                /* the host's name as a C string, for its index */
                if (array_grow((void **) &host, &host_size, row.host.n + 1, 1) < 0)
                        return cli_error(-ENOMEM, "%m");
                memcpy(host, row.host.s, row.host.n);
                host[row.host.n] = '\0';
                h = host_index(d, host);
                if (h < 0)
                        return cli_error(-ENOMEM, "%m");
                if (array_grow((void **) &in, &in_cap, n + 1, sizeof(*in)) < 0)
                        return cli_error(-ENOMEM, "%m");
                in[n++] = (struct group_stack_host) { row.stack_id, row.value, row.group, (size_t) h };
        }
        if (r < 0)
                return bad_answer(f, "stack row");
        /* a stack's rows (its hosts') next to each other, stacks in a
         * stable order: the answer is the same from run to run */
        if (n > 0)
                qsort(in, n, sizeof(*in), s->group == FLEET_GROUP_NONE ? stack_compare : group_stack_compare);
        for (size_t i = 0; i < n; i++) {
                struct row *last = d->n_rows > 0 ? &d->rows[d->n_rows - 1] : NULL;
                struct host_row hr = { .host = in[i].host, .stack_id = in[i].stack_id, .value = in[i].value };

                /* the same group and stack as the row before: another host's part */
                if (last && last->stack_id == hr.stack_id && group_eq(last->group ?: "", in[i].group)) {
                        if (__builtin_add_overflow(last->value, hr.value, &last->value))
                                return cli_error(-EOVERFLOW, "a stack's values add up to more than 2^64");
                } else {
                        struct row row = { .stack_id = hr.stack_id, .value = hr.value };

                        if (array_grow((void **) &d->rows, &cap, d->n_rows + 1, sizeof(*d->rows)) < 0)
                                return cli_error(-ENOMEM, "%m");
                        if (s->group != FLEET_GROUP_NONE && !(row.group = strndup(in[i].group.s, in[i].group.n)))
                                return cli_error(-ENOMEM, "%m");
                        d->rows[d->n_rows++] = row;
                }
                if (array_grow((void **) &d->host_rows, &host_cap, d->n_host_rows + 1, sizeof(*d->host_rows)) < 0)
                        return cli_error(-ENOMEM, "%m");
                d->host_rows[d->n_host_rows++] = hr;
        }
        return 0;
}

/* The table view's rows ("row" lines: a function's self and total over
 * d->rows, at most t->limit in the view's order), as profctl would make
 * them of the stack lines (top-table.c, the same code). Returns 1 when
 * written, 0 when a string the table shows is not UTF-8 (the caller
 * answers with stacks, as profd would: with U+FFFD in its place), or a
 * negative errno after saying why. */
static int write_table_rows(fleet *f, const struct answer_data *d, const struct query_request *q,
                            const struct fleet_table *t, struct answer *a, size_t *ret_rows) {
        static const TopBy by[] = {
                [FLEET_TABLE_BY_FUNCTION] = TOP_BY_FUNCTION,
                [FLEET_TABLE_BY_LINE] = TOP_BY_LINE,
                [FLEET_TABLE_BY_MODULE] = TOP_BY_MODULE,
        };
        _cleanup_top_table_ top_table *table = top_table_new(by[t->by]);
        _cleanup_free_ struct top_row *rows = NULL;
        _cleanup_free_ struct top_func **funcs = NULL;
        bool with_lines = t->lines || t->by == FLEET_TABLE_BY_LINE;
        size_t n, funcs_cap = 0;
        int r;

        if (!table)
                return cli_error(-ENOMEM, "%m");
        for (size_t i = 0; i < d->n_rows; i++) {
                struct stack_frames *sf;

                r = stack_get(f, d, d->rows[i].stack_id, &sf);
                if (r < 0)
                        return r;
                if (!sf->utf8)
                        return 0;
                if (array_grow((void **) &funcs, &funcs_cap, MAX(sf->n, (size_t) 1), sizeof(*funcs)) < 0)
                        return cli_error(-ENOMEM, "%m");
                if (sf->n == 0) {
                        /* as top_table_add() counts a stack without frames */
                        struct func_key key = top_table_key(table, "[unknown]", "", false);

                        if (top_table_func(table, &key, &funcs[0]) < 0)
                                return cli_error(-ENOMEM, "%m");
                }
                /* each frame's row found once, whatever the stacks it is in */
                for (size_t j = 0; j < sf->n; j++) {
                        struct frame *fr = sf->frames[j];

                        if (!fr->func) {
                                _cleanup_free_ char *owned = NULL;
                                struct func_key key;
                                const char *name;

                                if (frame_shown_name(&fr->out, with_lines, q->raw_names, &name, &owned) < 0)
                                        return cli_error(-ENOMEM, "%m");
                                key = top_table_key(table, name, fr->out.module ?: "", fr->out.kernel);
                                if (top_table_func(table, &key, &fr->func) < 0)
                                        return cli_error(-ENOMEM, "%m");
                        }
                        funcs[j] = fr->func;
                }
                top_table_add_funcs(table, funcs, MAX(sf->n, (size_t) 1), d->rows[i].value);
        }
        if (top_table_rows(table, t->children, &rows, &n) < 0)
                return cli_error(-ENOMEM, "%m");
        if (t->limit > 0 && n > t->limit)
                n = (size_t) t->limit;
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *line = NULL;
                _cleanup_free_ char *text = NULL;

                line = json_pack("{s:s, s:s, s:s, s:b, s:I, s:I}", "type", "row", "name", rows[i].name, "module",
                                 rows[i].module, "kernel", (int) rows[i].kernel, "self", (json_int_t) rows[i].self,
                                 "total", (json_int_t) rows[i].total);
                text = line ? json_dumps(line, JSON_COMPACT) : NULL;
                if (!text)
                        return cli_error(-ENOMEM, "%m");
                fprintf(a->out, "%s\n", text);
        }
        *ret_rows = n;
        return 1;
}

/* One stack line of the answer, as profd's writer writes it: the stack's
 * frames looked up (stack_get, stack_out), its value and group. */
static int write_stack_line(fleet *f, const struct answer_data *d, uint64_t stack_id, uint64_t value, const char *group,
                            const struct stack_style *style, struct store_frame_out **frames, size_t *frames_cap,
                            struct stackline_buf *b, struct answer *a) {
        struct store_stack_out so = { .value = value, .group = group };
        struct stack_frames *sf;
        int r;

        r = stack_get(f, d, stack_id, &sf);
        if (r < 0)
                return r;
        r = stack_out(sf, frames, frames_cap, &so);
        if (r < 0)
                return r;
        b->len = 0;
        r = stackline_append(b, &so, style);
        if (r < 0)
                return cli_error(r, "%m");
        fwrite(b->data, 1, b->len, a->out);
        return 0;
}

static int answer_query(fleet *f, const struct query_request *q, const struct fleet_scope *s,
                        const struct fleet_table *t, struct answer *a) {
        _cleanup_(answer_data_done) struct answer_data d = {};
        _cleanup_free_ struct store_frame_out *frames = NULL;
        _cleanup_(stackline_buf_done) struct stackline_buf b = {};
        struct stack_style style = { .raw_names = q->raw_names, .folded = q->folded, .lines = q->lines };
        size_t frames_cap = 0, n_table_rows = 0;
        uint64_t total = 0;
        bool have_rows = false;
        /* the table without a group is answered as its rows (below): only
         * what they show of the frames is asked for */
        struct fleet_scope frames_scope = *s;
        int r;

        frames_scope.table = s->group == FLEET_GROUP_NONE ? t : NULL;

        if ((r = fetch_rows_by_host(f, q, s, &d)) < 0 ||
            (r = fetch_drops(f, q, s, &d)) < 0 || (r = fetch_stacks(f, q, s, &d)) < 0 ||
            (r = fetch_frames(f, q, &frames_scope, &d)) < 0)
                return r;
        /* each host's report from its stacks, as its profd adds them up:
         * a stack's class (its end, the reasons of its unnamed frames) is
         * worked out once, however many hosts have it */
        for (size_t i = 0; i < d.n_host_rows; i++) {
                struct stack_frames *sf = NULL;

                r = stack_quality(f, &d, d.host_rows[i].stack_id, &frames, &frames_cap, &sf);
                if (r < 0)
                        return r;
                quality_add_class(&d.hosts[d.host_rows[i].host].q, d.host_rows[i].value, sf->user_end,
                                  (unsigned) sf->unresolved_mask);
        }
        for (size_t i = 0; i < d.n_rows; i++)
                if (__builtin_add_overflow(total, d.rows[i].value, &total))
                        return cli_error(-EOVERFLOW, "the fleet's stack values add up to more than 2^64");
        /* the table without a group: its rows, made here, not every stack
         * with its frames for profctl to parse again */
        if (frames_scope.table) {
                r = write_table_rows(f, &d, q, t, a, &n_table_rows);
                if (r < 0)
                        return r;
                have_rows = r > 0;
        }
        for (size_t i = 0; i < d.n_rows && !have_rows; i++) {
                r = write_stack_line(f, &d, d.rows[i].stack_id, d.rows[i].value, d.rows[i].group, &style, &frames,
                                     &frames_cap, &b, a);
                if (r < 0)
                        return r;
        }
        fprintf(a->out,
                "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_END "\",\"" PROTO_KEY_KIND "\":\"%s\",\"" PROTO_KEY_WEIGHT_UNIT
                "\":\"%s\",\"" PROTO_KEY_STACKS "\":%zu,\"" PROTO_KEY_TOTAL "\":%" PRIu64 ",\"" PROTO_KEY_FROM_NS
                "\":%" PRIu64 ",\"" PROTO_KEY_TO_NS "\":%" PRIu64,
                kind_names[q->kind], q->kind == PROFD_KIND_CPU ? "samples" : "ns", d.n_rows, total, s->from_ns,
                s->to_ns);
        if (have_rows)
                fprintf(a->out, ",\"" PROTO_KEY_ROWS "\":%zu", n_table_rows);
        r = write_quality(a, &d, false);
        if (r < 0)
                return r;
        fputs("}\n", a->out);
        return 0;
}

/* A stack of a timeline answer: its row in d->rows and what the cap kept of it. */
/* The events of an answer: how many lines went out, how many more there were. */
struct fleet_events {
        bool asked;
        uint64_t sent, omitted;
};

/* The captures of the window as profd's "event" lines, for a series or
 * timeline request with "events" (common/capture-event.h: the same lines,
 * so profctl marks them as a local answer's), each with its "host" (ids are
 * per host). Every capture of the scope's hosts: the fleet answers whoever
 * may read ClickHouse, which has no caller to match a capture's uid
 * against, as it shows every user's samples (docs/clickhouse.md). Returns 0
 * or a negative errno (reported). */
static int write_events(fleet *f, const struct query_request *q, const struct fleet_scope *s, struct answer *a,
                        struct fleet_events *ret) {
        static const char *const state_names[] = FSC_STATE_NAMES;
        _cleanup_free_ char *body = NULL;
        size_t len, pos = 0;
        char *fields[7];
        int r;

        *ret = (struct fleet_events) { .asked = q->events };
        if (!q->events)
                return 0;
        r = fleet_run(f, fleet_sql_captures, q, s, &body, &len);
        if (r < 0)
                return r;
        while ((r = fleet_tsv_row(body, len, &pos, fields, 7)) > 0) {
                _cleanup_json_ json_t *line = NULL;
                _cleanup_free_ char *text = NULL;
                struct capture_event e = {};
                uint64_t id, state;

                if (r != 7 || fleet_tsv_u64(fields[1], &id) < 0 || id > INT64_MAX ||
                    fleet_tsv_u64(fields[2], &state) < 0 || state >= ELEMENTSOF(state_names) ||
                    fleet_tsv_u64(fields[4], &e.trigger_ns) < 0 || fleet_tsv_u64(fields[5], &e.from_ns) < 0 ||
                    fleet_tsv_u64(fields[6], &e.to_ns) < 0 || e.from_ns > e.trigger_ns || e.trigger_ns > e.to_ns)
                        return bad_answer(f, "capture row");
                /* profd's cap, the rest counted */
                if (ret->sent >= CAPTURE_EVENTS_MAX) {
                        ret->omitted++;
                        continue;
                }
                e.id = (int64_t) id;
                e.cause = fields[3];
                e.state = state_names[state];
                /* NULL too for a cause or host that is not UTF-8 */
                line = capture_event_to_json(&e);
                if (!line || json_object_set_new(line, PROTO_KEY_HOST, json_string(fields[0])) < 0)
                        return bad_answer(f, "capture row (not UTF-8)");
                text = json_dumps(line, JSON_COMPACT);
                if (!text)
                        return cli_error(-ENOMEM, "%m");
                fprintf(a->out, "%s\n", text);
                ret->sent++;
        }
        if (r < 0)
                return bad_answer(f, "capture row");
        return 0;
}

/* The end line's "events" and "events_omitted", as profd's answer_events_end. */
static void write_events_end(struct answer *a, const struct fleet_events *ev) {
        if (!ev->asked)
                return;
        fprintf(a->out, ",\"" PROTO_KEY_EVENTS "\":%" PRIu64, ev->sent);
        if (ev->omitted > 0)
                fprintf(a->out, ",\"" PROTO_KEY_EVENTS_OMITTED "\":%" PRIu64, ev->omitted);
}

struct timeline_stack {
        size_t row;
        uint64_t kept;
        uint32_t index;  /* its stack line's (0 the first), once it has one */
};

DEFINE_TRIVIAL_CLEANUP_FUNC(hashmap *, hashmap_free)

static int timed_entry_compare(const void *a, const void *b) {
        const struct timed_entry *x = a, *y = b;

        if (x->t_ms != y->t_ms)
                return x->t_ms < y->t_ms ? -1 : 1;
        if (x->stack != y->stack)
                return x->stack < y->stack ? -1 : 1;
        return x->hz < y->hz ? -1 : x->hz > y->hz;
}

/* A "timeline" request answered from profd.timeline, as profd answers it
 * from its own (daemon/serve/answer.c): the stacks with the samples kept
 * of each, the samples by (millisecond, stack) in "samples" lines, and the
 * end line; the cap keeps the earliest samples and counts the rest. The
 * quality report and the drops are of every sample of the window, hosts
 * apart, as a fleet query's; "oldest_ns" is 0: each host's timeline
 * reaches back as far as its profd kept it, and profd exported it. A
 * capture's raise (version 5) goes on "rated_samples" lines with the end
 * line's "base_hz", as profd's, so profctl heatmap weighs it as a fleet
 * query does (the base: rate_weight_rebase_hz). */
static int answer_timeline(fleet *f, const struct query_request *q, const struct fleet_scope *scope, struct answer *a) {
        _cleanup_(answer_data_done) struct answer_data d = {};
        _cleanup_free_ struct store_frame_out *frames = NULL;
        _cleanup_free_ struct timeline_stack *ts = NULL;
        _cleanup_free_ struct timed_entry *entries = NULL;
        _cleanup_(stackline_buf_done) struct stackline_buf b = {};
        _cleanup_(hashmap_freep) hashmap *by_id = NULL;
        struct stack_style style = { .raw_names = q->raw_names, .folded = q->folded, .lines = q->lines };
        struct fleet_scope s = *scope;
        struct fleet_events events;
        uint64_t cap = q->max_samples ? q->max_samples : TIMED_MAX_SAMPLES, kept = 0, all = 0, omitted_from = 0;
        unsigned base_hz = 0; /* the first raised row's base: the answer's (rate_weight_rebase_hz) */
        size_t frames_cap = 0, len, pos = 0, n_entries = 0, entries_cap = 0, n_stacks = 0;
        char *fields[5];
        int r;

        if (q->kind != PROFD_KIND_CPU)
                return answer_error(a, "the fleet's timeline has on-CPU samples only: ClickHouse holds no off-CPU "
                                       "blocks with their start and end; a heatmap of blocked time is drawn from "
                                       "one host's profd (profctl heatmap --kind offcpu without --clickhouse)");
        if (s.group != FLEET_GROUP_NONE)
                return answer_error(a, "a timeline answer is not grouped");
        s.timeline = true;
        if ((r = fetch_rows_by_host(f, q, &s, &d)) < 0 || (r = fetch_drops(f, q, &s, &d)) < 0 ||
            (r = fetch_stacks(f, q, &s, &d)) < 0 || (r = fetch_frames(f, q, &s, &d)) < 0)
                return r;
        for (size_t i = 0; i < d.n_host_rows; i++) {
                struct stack_frames *sf = NULL;

                r = stack_quality(f, &d, d.host_rows[i].stack_id, &frames, &frames_cap, &sf);
                if (r < 0)
                        return r;
                quality_add_class(&d.hosts[d.host_rows[i].host].q, d.host_rows[i].value, sf->user_end,
                                  (unsigned) sf->unresolved_mask);
                all += d.host_rows[i].value;
        }
        by_id = hashmap_new_u64();
        ts = calloc(MAX(d.n_rows, (size_t) 1), sizeof(*ts));
        if (!by_id || !ts)
                return cli_error(-ENOMEM, "%m");
        for (size_t i = 0; i < d.n_rows; i++) {
                ts[i].row = i;
                r = hashmap_put(by_id, UINT64_TO_KEY(d.rows[i].stack_id), &ts[i]);
                if (r < 0)
                        return cli_error(r, "%m");
        }
        /* the samples by millisecond, the earliest cap of them */
        r = fleet_run(f, fleet_sql_timeline_samples, q, &s, &d.bodies[5], &len);
        if (r < 0)
                return r;
        while ((r = fleet_tsv_row(d.bodies[5], len, &pos, fields, 5)) > 0) {
                uint64_t ms, id, hz, row_base_hz, n;
                struct timeline_stack *t;
                void *v;

                if (r != 5 || fleet_tsv_u64(fields[0], &ms) < 0 || fleet_tsv_u64(fields[1], &id) < 0 ||
                    fleet_tsv_u64(fields[2], &hz) < 0 || fleet_tsv_u64(fields[3], &row_base_hz) < 0 ||
                    fleet_tsv_u64(fields[4], &n) < 0 || n == 0 || n > UINT32_MAX || hz > UINT32_MAX ||
                    row_base_hz > UINT32_MAX)
                        return bad_answer(f, "timeline row");
                if (hashmap_get(by_id, UINT64_TO_KEY(id), &v) < 0)
                        continue; /* a host inserted it after the stacks were summed: not in this answer */
                t = v;
                if (kept >= cap) {
                        omitted_from = omitted_from ?: ms * NSEC_PER_MSEC;
                        break;
                }
                if (kept + n > cap) {
                        omitted_from = ms * NSEC_PER_MSEC;
                        n = cap - kept;
                }
                if (array_grow((void **) &entries, &entries_cap, n_entries + 1, sizeof(*entries)) < 0)
                        return cli_error(-ENOMEM, "%m");
                if (base_hz == 0 && hz > 0 && row_base_hz > 0 && hz != row_base_hz)
                        base_hz = (unsigned) row_base_hz;
                entries[n_entries++] = (struct timed_entry) { .t_ms = ms, .stack = (uint32_t) t->row, .n = (uint32_t) n,
                                                              .hz = rate_weight_rebase_hz(hz, row_base_hz, base_hz) };
                t->kept += n;
                kept += n;
        }
        if (r < 0)
                return bad_answer(f, "timeline row");
        /* the stacks with samples kept, in the answer's stable order: their
         * lines, and the entries renumbered to them */
        for (size_t i = 0; i < d.n_rows; i++) {
                if (ts[i].kept == 0)
                        continue;
                ts[i].index = (uint32_t) n_stacks++;
                r = write_stack_line(f, &d, d.rows[i].stack_id, ts[i].kept, NULL, &style, &frames, &frames_cap, &b,
                                     a);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_entries; i++)
                entries[i].stack = ts[entries[i].stack].index;
        if (n_entries > 0) {
                size_t m = 0;

                qsort(entries, n_entries, sizeof(*entries), timed_entry_compare);
                /* one entry per (ms, stack, rate), as profd's: rows of two
                 * bases may have scaled to one rate */
                for (size_t i = 1; i < n_entries; i++)
                        if (timed_entry_compare(&entries[m], &entries[i]) == 0 &&
                            (uint64_t) entries[m].n + entries[i].n <= UINT32_MAX)
                                entries[m].n += entries[i].n;
                        else
                                entries[++m] = entries[i];
                n_entries = m + 1;
        }
        for (size_t i = 0; i < n_entries; i += TIMED_LINE_ENTRIES) {
                b.len = 0;
                r = timed_line_append(&b, entries + i, MIN(n_entries - i, (size_t) TIMED_LINE_ENTRIES));
                if (r < 0)
                        return cli_error(r, "%m");
                fwrite(b.data, 1, b.len, a->out);
        }
        r = write_events(f, q, &s, a, &events); /* captures, issue 44 */
        if (r < 0)
                return r;
        fprintf(a->out,
                "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_END "\",\"" PROTO_KEY_KIND "\":\"cpu\",\"" PROTO_KEY_WEIGHT_UNIT
                "\":\"samples\",\"" PROTO_KEY_STACKS "\":%zu,\"" PROTO_KEY_TOTAL "\":%" PRIu64 ",\"" PROTO_KEY_ENTRIES
                "\":%zu,\"" PROTO_KEY_OMITTED "\":%" PRIu64 ",\"" PROTO_KEY_FROM_NS "\":%" PRIu64 ",\"" PROTO_KEY_TO_NS
                "\":%" PRIu64 ",\"" PROTO_KEY_OLDEST_NS "\":0",
                n_stacks, kept, n_entries, all > kept ? all - kept : 0, s.from_ns, s.to_ns);
        if (all > kept)
                fprintf(a->out, ",\"" PROTO_KEY_OMITTED_FROM_NS "\":%" PRIu64, omitted_from ?: s.to_ns);
        /* the rate "rated_samples" lines count in, as profd's end line */
        if (base_hz > 0)
                fprintf(a->out, ",\"" PROTO_KEY_BASE_HZ "\":%u", base_hz);
        write_events_end(a, &events);
        r = write_quality(a, &d, false);
        if (r < 0)
                return r;
        fputs("}\n", a->out);
        return 0;
}

static int emit_point(uint64_t t_ns, uint64_t value, uint64_t complete, void *userdata) {
        struct answer *a = userdata;

        fprintf(a->out, "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_POINT "\",\"" PROTO_KEY_T_NS "\":%" PRIu64 ",\""
                PROTO_KEY_VALUE "\":%" PRIu64 ",\"" PROTO_KEY_COMPLETE "\":%" PRIu64 "}\n", t_ns, value, complete);
        return 0;
}

/* Series without a step: profd takes its drain interval; a fleet has one
 * per host, so the default is profd's default drain interval. */
#define FLEET_SERIES_STEP_DEFAULT_NS (10 * NSEC_PER_SEC)

static int answer_series(fleet *f, const struct query_request *q, const struct fleet_scope *s, struct answer *a) {
        _cleanup_(answer_data_done) struct answer_data d = {};
        _cleanup_free_ char *body = NULL;
        size_t len, pos = 0;
        uint64_t step = q->step_ns ?: FLEET_SERIES_STEP_DEFAULT_NS, total = 0, complete_all = 0;
        struct fleet_events events = {};
        series *se;
        char *fields[5];
        int r;

        if ((s->to_ns - s->from_ns) / step >= SERIES_MAX_POINTS)
                return answer_error(a, "field 'step': the window would have more than 1000000 points; use a "
                                       "longer step or a shorter window");
        r = fleet_run(f, fleet_sql_drains, q, s, &body, &len);
        if (r < 0)
                return r;
        se = series_new(step, emit_point, a);
        if (!se)
                return cli_error(-ENOMEM, "%m");
        while ((r = fleet_tsv_row(body, len, &pos, fields, 5)) > 0) {
                uint64_t start, end, value, complete;
                ssize_t h;

                if (r != 5 || fleet_tsv_u64(fields[0], &start) < 0 || fleet_tsv_u64(fields[1], &end) < 0 ||
                    fleet_tsv_u64(fields[2], &value) < 0 || fleet_tsv_u64(fields[3], &complete) < 0 ||
                    complete > value) {
                        r = -EBADMSG;
                        break;
                }
                h = host_index(&d, fields[4]);
                if (h < 0) {
                        r = -ENOMEM;
                        break;
                }
                /* a series' report is partial, as profd's: total, complete, lost */
                d.hosts[h].q.total += value;
                d.hosts[h].q.complete += complete;
                total += value;
                complete_all += complete;
                r = series_add(se, start, end, value, complete);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = series_finish(se);
        if (r >= 0) {
                r = fetch_drops(f, q, s, &d);
                if (r >= 0)
                        r = write_events(f, q, s, a, &events); /* captures, issue 44 */
                if (r < 0) {
                        series_free(se);
                        return r;
                }
        }
        for (size_t i = 0; i < d.n_hosts; i++)
                d.hosts[i].q.partial = true;
        fprintf(a->out,
                "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_END "\",\"" PROTO_KEY_KIND "\":\"%s\",\"" PROTO_KEY_WEIGHT_UNIT
                "\":\"%s\",\"" PROTO_KEY_STEP_NS "\":%" PRIu64 ",\"" PROTO_KEY_POINTS "\":%" PRIu64 ",\"" PROTO_KEY_TOTAL
                "\":%" PRIu64 ",\"" PROTO_KEY_COMPLETE "\":%" PRIu64 ",\"" PROTO_KEY_FROM_NS "\":%" PRIu64 ",\""
                PROTO_KEY_TO_NS "\":%" PRIu64,
                kind_names[q->kind], q->kind == PROFD_KIND_CPU ? "samples" : "ns", step, series_points(se), total,
                complete_all, s->from_ns, s->to_ns);
        write_events_end(a, &events);
        series_free(se);
        if (r >= 0)
                r = write_quality(a, &d, true);
        fputs("}\n", a->out);
        if (r == -EBADMSG)
                return bad_answer(f, "drain row");
        if (r == -E2BIG)
                return cli_error(r, "a drain would be spread over more than a million points; use a longer --step");
        if (r < 0)
                return cli_error(r, "%m");
        return 0;
}

/* The fleet's "table" field: {"by": "function"|"line"|"module",
 * "children": bool, "lines": bool, "limit": rows (0: all)}, each
 * optional: profctl's table view, whose rows ClickHouse sums. */
static int request_take_table(json_t *req, struct fleet_table *t, bool *ret_have, char **ret_error) {
        json_t *table = json_object_get(req, "table"), *by, *children, *lines, *limit;
        const char *key;
        json_t *v;

        if (!table)
                return 0;
        if (!json_is_object(table))
                return asprintf(ret_error, "field 'table' must be an object") < 0 ? -ENOMEM : -EINVAL;
        json_object_foreach(table, key, v)
                if (!streq(key, "by") && !streq(key, "children") && !streq(key, "lines") && !streq(key, "limit"))
                        return asprintf(ret_error, "field 'table' has an unknown field '%s'", key) < 0 ? -ENOMEM :
                                                                                                          -EINVAL;
        by = json_object_get(table, "by");
        children = json_object_get(table, "children");
        lines = json_object_get(table, "lines");
        limit = json_object_get(table, "limit");
        *t = (struct fleet_table) {};
        if (by) {
                const char *b = json_is_string(by) ? json_string_value(by) : "";

                if (streq(b, "function"))
                        t->by = FLEET_TABLE_BY_FUNCTION;
                else if (streq(b, "line"))
                        t->by = FLEET_TABLE_BY_LINE;
                else if (streq(b, "module"))
                        t->by = FLEET_TABLE_BY_MODULE;
                else
                        return asprintf(ret_error, "field 'table.by' must be \"function\", \"line\" or "
                                        "\"module\"") < 0 ? -ENOMEM : -EINVAL;
        }
        if (children) {
                if (!json_is_boolean(children))
                        return asprintf(ret_error, "field 'table.children' must be true or false") < 0 ? -ENOMEM :
                                                                                                      -EINVAL;
                t->children = json_is_true(children);
        }
        if (lines) {
                if (!json_is_boolean(lines))
                        return asprintf(ret_error, "field 'table.lines' must be true or false") < 0 ? -ENOMEM : -EINVAL;
                t->lines = json_is_true(lines);
        }
        if (limit) {
                if (!json_is_integer(limit) || json_integer_value(limit) < 0)
                        return asprintf(ret_error, "field 'table.limit' must be an integer, 0 or more") < 0 ?
                                       -ENOMEM : -EINVAL;
                t->limit = (uint64_t) json_integer_value(limit);
        }
        json_object_del(req, "table");
        *ret_have = true;
        return 0;
}

/* Takes the fleet's own fields out of a copy of the request. */
static int request_take_fleet_fields(json_t *req, struct fleet_scope *s, char **ret_host, char **ret_error) {
        json_t *host = json_object_get(req, "host"), *group = json_object_get(req, "group");

        if (host) {
                if (!json_is_string(host) || !*json_string_value(host))
                        return asprintf(ret_error, "field 'host' must be a non-empty string") < 0 ? -ENOMEM : -EINVAL;
                *ret_host = strdup(json_string_value(host));
                if (!*ret_host)
                        return -ENOMEM;
                json_object_del(req, "host");
        }
        if (json_is_string(group)) {
                const char *g = json_string_value(group);

                s->group = streq(g, "host") ? FLEET_GROUP_HOST : streq(g, "process") ? FLEET_GROUP_PROCESS :
                           streq(g, "unit") ? FLEET_GROUP_UNIT : FLEET_GROUP_NONE;
                if (s->group == FLEET_GROUP_HOST)
                        json_object_del(req, "group");
        }
        return 0;
}

int fleet_answer(fleet *f, const json_t *request, uint64_t now_ns, char **ret_text, size_t *ret_len) {
        _cleanup_json_ json_t *req = json_deep_copy(request);
        _cleanup_free_ char *text = NULL, *error = NULL, *host = NULL;
        struct answer a = {};
        struct fleet_scope s = {};
        struct request parsed = {};
        struct fleet_table table = {};
        bool have_table = false;
        int r;

        if (!req)
                return cli_error(-ENOMEM, "%m");
        a.out = open_memstream(&a.text, &a.len);
        if (!a.out)
                return cli_error(-ENOMEM, "%m");
        r = request_take_fleet_fields(req, &s, &host, &error);
        s.host = host;
        if (r >= 0)
                r = request_take_table(req, &table, &have_table, &error);
        if (r >= 0) {
                text = json_dumps(req, JSON_COMPACT);
                r = text ? request_parse(text, strlen(text), &parsed, &error) : -ENOMEM;
        }
        if (r >= 0 && parsed.op == REQUEST_STATUS)
                /* what profctl asks profd's status for: the sampling
                 * frequency of pprof's cpu period, unknown for a fleet */
                fputs("{\"type\":\"status\",\"frequency_hz\":0}\n", a.out);
        else if (r >= 0 && parsed.op == REQUEST_FLUSH)
                r = answer_error(&a, "flush is a request for one profd, not for a fleet");
        else if (r >= 0 && parsed.query.last)
                r = answer_error(&a, "--last is the most recent drain of one profd; ask a fleet for a window "
                                     "(--since, --from/--to)");
        else if (r >= 0) {
                r = request_window(&parsed.query, now_ns, &s.from_ns, &s.to_ns, &error);
                if (r >= 0)
                        r = parsed.op == REQUEST_SERIES   ? answer_series(f, &parsed.query, &s, &a) :
                            parsed.op == REQUEST_TIMELINE ? answer_timeline(f, &parsed.query, &s, &a) :
                                                            answer_query(f, &parsed.query, &s, have_table ? &table : NULL, &a);
        }
        if (r == -EINVAL)
                r = answer_error(&a, error ? error : "invalid request");
        else if (r == -ENOMEM)
                r = cli_error(r, "%m");
        request_done(&parsed);
        if (fclose(a.out) != 0 && r >= 0)
                r = cli_error(-ENOMEM, "%m");
        if (r < 0) {
                free(a.text);
                return r;
        }
        *ret_text = a.text;
        *ret_len = a.len;
        return 0;
}
