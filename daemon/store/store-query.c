/* The store's query path: the stacks, per-drain sums and drops a query's
 * filters select (SQL built from fixed fragments, every value bound), the
 * frames of each stack through a reader's location cache, and the status
 * counts. The read state (statements, the location cache) is its own,
 * made and freed through store-private.h; it calls store.c and db.c below
 * it, nothing beside or above it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "macro.h"
#include "sample-blocks.h"
#include "stack-pack.h"
#include "store-private.h"
#include "timed-samples.h"
#include "timed-spans.h"
#include "offtime-pack.h"
#include "rate-weight.h"
#include "timeline-pack.h"

enum {
        STMT_SELECT_LOCATION_INFO,
        STMT_SELECT_LOCATION_LINES,
        STMT_SELECT_STACK_FRAMES,
        _STMT_MAX,
};

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_SELECT_LOCATION_INFO] = "SELECT l.address, l.kernel, m.path, f.name, f.raw_name, m.build_id, l.unresolved "
                                      "FROM locations l "
                                      "JOIN mappings m ON m.id = l.mapping_id "
                                      "LEFT JOIN functions f ON f.id = l.function_id WHERE l.id = ?1",
        [STMT_SELECT_LOCATION_LINES] = "SELECT f.name, f.raw_name, ll.file, ll.line, ll.inlined FROM location_lines ll "
                                       "JOIN functions f ON f.id = ll.function_id "
                                       "WHERE ll.location_id = ?1 ORDER BY ll.depth DESC",
        [STMT_SELECT_STACK_FRAMES] = "SELECT frames, user_end FROM stacks WHERE id = ?1",
};

/* A connection's read state (every connection has one). */
struct store_read {
        sqlite3_stmt *stmts[_STMT_MAX];
        /* readers and the outbox: the locations loaded by earlier
         * queries, kept (see store_query_location_cache) */
        bool keep_locations;
        hashmap *locations;
        uint64_t locations_deleted;
        struct location_info **transient; /* see transient_add */
        size_t n_transient, transient_cap;
        /* the stack being read, unpacked (stack-pack.h); reused */
        int64_t *ids;
        size_t ids_cap;
};

/* A location as queries return it: one frame, or several for inlined calls.
 * Strings are owned here. */
struct location_info {
        struct store_frame_out *frames; /* outermost first */
        size_t n;
        char **strings;
        size_t n_strings;
};

static void location_info_free(struct location_info *li) {
        if (li) {
                for (size_t i = 0; i < li->n_strings; i++)
                        free(li->strings[i]);
                free(li->strings);
                free(li->frames);
                free(li);
        }
}

/* Keeps a copy of s (NULL stays NULL) owned by li. */
static int li_strdup(struct location_info *li, const char *s, const char **ret) {
        char **ns;
        char *c;

        if (!s) {
                *ret = NULL;
                return 0;
        }
        c = strdup(s);
        ns = c ? realloc(li->strings, (li->n_strings + 1) * sizeof(char *)) : NULL;
        if (!ns) {
                free(c);
                return -ENOMEM;
        }
        li->strings = ns;
        li->strings[li->n_strings++] = c;
        *ret = c;
        return 0;
}

static const char *path_basename(const char *p) {
        const char *b = strrchr(p, '/');
        return b ? b + 1 : p;
}

/* Adds the inline chain of location id to li; none when it has no lines. */
static int load_location_lines(store *s, int64_t id, const struct store_frame_out *base, struct location_info *li) {
        sqlite3_stmt *st = s->read->stmts[STMT_SELECT_LOCATION_LINES];
        int rc, r = 0;

        sqlite3_bind_int64(st, 1, id);
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_frame_out *nf = realloc(li->frames, (li->n + 1) * sizeof(*nf));
                struct store_frame_out *f;

                if (!nf) {
                        r = -ENOMEM;
                        break;
                }
                li->frames = nf;
                f = &li->frames[li->n++];
                *f = *base;
                f->resolved = true;
                f->line = (unsigned) sqlite3_column_int64(st, 3);
                f->inlined = sqlite3_column_int(st, 4);
                if ((r = li_strdup(li, (const char *) sqlite3_column_text(st, 0), &f->name)) < 0 ||
                    (r = li_strdup(li, (const char *) sqlite3_column_text(st, 1), &f->raw_name)) < 0 ||
                    (r = li_strdup(li, (const char *) sqlite3_column_text(st, 2), &f->file)) < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "location lines lookup");
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return r;
}

static int load_location(store *s, int64_t id, struct location_info **ret) {
        sqlite3_stmt *st = s->read->stmts[STMT_SELECT_LOCATION_INFO];
        struct store_frame_out base = {};
        struct location_info *li;
        char *unresolved = NULL;
        int rc, r = 0;

        li = calloc(1, sizeof(*li));
        if (!li)
                return -ENOMEM;
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                uint64_t address = (uint64_t) sqlite3_column_int64(st, 0);
                const char *module = (const char *) sqlite3_column_text(st, 2);
                const char *fn = (const char *) sqlite3_column_text(st, 3);
                const char *raw = (const char *) sqlite3_column_text(st, 4);
                const char *build_id = (const char *) sqlite3_column_text(st, 5);
                int64_t why = sqlite3_column_int64(st, 6); /* NULL reads as 0: not known */

                base.kernel = sqlite3_column_int(st, 1);
                base.address = address;
                /* a stack that could not be walked has no address to give */
                base.has_address = !module || !streq(module, "[lost]");
                /* the writer puts perf-map and anonymous code in [jit]; its
                 * build_id is a tag telling processes apart, not a build-id */
                base.jit = module && streq(module, "[jit]");
                r = li_strdup(li, module ? module : "[unknown]", &base.module);
                if (r >= 0 && build_id && build_id[0] && !base.jit)
                        r = li_strdup(li, build_id, &base.build_id);
                if (r >= 0 && fn) {
                        base.resolved = true;
                        /* a named frame's one reason (quality-sum.c) */
                        if (why == STORE_UNRESOLVED_HOTSPOT_NO_SCOPE)
                                base.unresolved = STORE_UNRESOLVED_HOTSPOT_NO_SCOPE;
                        r = li_strdup(li, fn, &base.name);
                        if (r >= 0)
                                r = li_strdup(li, raw, &base.raw_name);
                } else if (r >= 0) {
                        base.unresolved = why > 0 && why < _STORE_UNRESOLVED_MAX ? (uint8_t) why
                                                                                  : STORE_UNRESOLVED_NONE;
                        /* kept as module+0xoffset, never dropped */
                        if (asprintf(&unresolved, "%s+0x%" PRIx64, path_basename(base.module), address) < 0)
                                r = -ENOMEM;
                        else
                                r = li_strdup(li, unresolved, &base.name);
                        base.raw_name = base.name;
                }
        } else
                r = rc == SQLITE_DONE ? -ENOENT : db_fail(&s->d, rc, "location lookup");
        free(unresolved);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (r >= 0)
                r = load_location_lines(s, id, &base, li);
        if (r >= 0 && li->n == 0) {
                li->frames = malloc(sizeof(*li->frames));
                if (!li->frames)
                        r = -ENOMEM;
                else
                        li->frames[li->n++] = base;
        }
        if (r < 0) {
                location_info_free(li);
                return r;
        }
        *ret = li;
        return 0;
}

static void location_cache_free(hashmap *m) {
        void *v;
        size_t i = 0;

        if (!m)
                return;
        while (hashmap_iterate(m, &i, NULL, &v))
                location_info_free(v);
        hashmap_free(m);
}

static bool is_glob(const char *s) {
        return s && strpbrk(s, "*?[");
}

/* A statement's text, built from fixed fragments only: what varies between
 * queries is which filters apply, never their values, which are bound by
 * name (":pid") afterwards. */
struct sql_text {
        char *buf;
        size_t len, cap;
        bool oom;
};

static void sql_add(struct sql_text *t, const char *fragment) {
        size_t n = strlen(fragment);

        if (t->oom)
                return;
        if (t->len + n + 1 > t->cap) {
                size_t cap = MAX(t->cap * 2, t->len + n + 1);
                char *b = realloc(t->buf, MAX(cap, (size_t) 512));
                if (!b) {
                        t->oom = true;
                        return;
                }
                t->buf = b;
                t->cap = MAX(cap, (size_t) 512);
        }
        memcpy(t->buf + t->len, fragment, n + 1);
        t->len += n;
}

static void sql_add_process_filters(struct sql_text *t, const struct store_query *q);

/* The drains a query's window selects (alias d). */
static void sql_add_window(struct sql_text *t, const struct store_query *q) {
        if (q->drain_id > 0)
                sql_add(t, "d.id = :drain");
        else
                /* every drain interval that overlaps the window */
                sql_add(t, "d.end_ns >= :from AND d.start_ns <= :to");
}

/* The FROM and WHERE clauses a query's filters make, over blocks of
 * samples (schema/0008, 0009); the thread and state filters apply to a
 * block's entries (entry_matches), and so does the drain: a block may span
 * drains (its key is the span's, drains.span), the row's s.mask has bit i
 * set for each drain of the window at span offset i (entry_in_window).
 *
 * The plan (docs/performance.md, Queries): drains of the window first (by
 * drains_end), grouped into the keys of the blocks holding them, then
 * those blocks of the kind through the table's own key (drain, kind,
 * process): the process filters become one set of process ids, computed
 * once, so a filtered query seeks to that process's block of each key.
 * CROSS JOIN fixes that order. `with_process` joins processes for the
 * columns a grouped query shows. */
static void sql_add_filters(struct sql_text *t, const struct store_query *q, bool with_process) {
        bool process_filter = q->pid || q->comm || q->exe || q->have_uid || q->only_uid || q->cgroup || q->unit ||
                              q->container;

        sql_add(t, " FROM (SELECT coalesce(d.span, d.id) AS k, sum(1 << (d.id - coalesce(d.span, d.id))) AS mask "
                   "FROM drains d WHERE ");
        sql_add_window(t, q);
        sql_add(t, " GROUP BY k) s CROSS JOIN sample_blocks b ON b.drain_id = s.k");
        if (with_process)
                sql_add(t, " JOIN processes p ON p.id = b.process_id");
        sql_add(t, " WHERE b.kind = :kind");
        if (!process_filter)
                return;
        sql_add(t, " AND b.process_id IN (SELECT p.id FROM processes p WHERE 1");
        sql_add_process_filters(t, q);
        sql_add(t, ")");
}

/* Whether an entry at span offset `span` is in the window's mask. */
static bool entry_in_window(uint64_t mask, unsigned span) {
        return span < 64 && (mask >> span) & 1;
}

/* The filters of sql_add_filters that look inside a block. */
static bool entry_matches(const struct store_query *q, const struct sample_entry *e) {
        if (q->tid && e->tid != q->tid)
                return false;
        if (q->state_mask && (e->state >= 32 || !((1u << e->state) & q->state_mask)))
                return false;
        return true;
}

/* The conditions on processes (alias p) of sql_add_filters. */
static void sql_add_process_filters(struct sql_text *t, const struct store_query *q) {
        if (q->pid)
                sql_add(t, " AND p.pid = :pid");
        if (q->comm)
                sql_add(t, is_glob(q->comm) ? " AND p.comm GLOB :comm" : " AND p.comm = :comm");
        if (q->exe)
                sql_add(t, is_glob(q->exe) ? " AND p.exe GLOB :exe" : " AND p.exe = :exe");
        if (q->have_uid)
                sql_add(t, " AND p.uid = :uid");
        if (q->only_uid)
                sql_add(t, " AND p.uid = :own_uid");
        if (q->cgroup) {
                if (is_glob(q->cgroup))
                        /* the matching cgroups and their subtrees ('*' matches '/') */
                        sql_add(t, " AND (p.cgroup GLOB :cgroup OR p.cgroup GLOB :cgroup || '/*')");
                else
                        /* that cgroup and below, not its siblings that share a
                         * prefix (/a.service must not match /a.service-2) */
                        sql_add(t, " AND (p.cgroup = :cgroup OR substr(p.cgroup, 1, length(:cgroup_dir)) = :cgroup_dir)");
        }
        if (q->unit)
                sql_add(t, is_glob(q->unit) ? " AND p.unit GLOB :unit" : " AND p.unit = :unit");
        if (q->container)
                sql_add(t, " AND substr(p.container, 1, length(:container)) = :container");
}

static void bind_i64(sqlite3_stmt *st, const char *name, int64_t v) {
        int i = sqlite3_bind_parameter_index(st, name);
        if (i > 0)
                sqlite3_bind_int64(st, i, v);
}

static void bind_text(sqlite3_stmt *st, const char *name, const char *v) {
        int i = sqlite3_bind_parameter_index(st, name);
        if (i > 0)
                sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/* Prepares the statement t built and binds what q filters on. */
static int query_prepare(store *s, struct sql_text *t, const struct store_query *q, sqlite3_stmt **ret) {
        _cleanup_free_ char *cgroup_dir = NULL;
        sqlite3_stmt *st = NULL;
        int rc;

        if (t->oom)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->d.handle, t->buf, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing the query");
        bind_i64(st, ":kind", q->kind);
        bind_i64(st, ":drain", q->drain_id);
        bind_i64(st, ":from", (int64_t) q->from_ns);
        bind_i64(st, ":to", (int64_t) q->to_ns);
        bind_i64(st, ":pid", q->pid);
        bind_i64(st, ":tid", q->tid);
        bind_text(st, ":comm", q->comm);
        bind_text(st, ":exe", q->exe);
        bind_i64(st, ":uid", q->filter_uid);
        bind_i64(st, ":own_uid", q->uid);
        bind_text(st, ":cgroup", q->cgroup);
        if (q->cgroup && !is_glob(q->cgroup)) {
                size_t n = strlen(q->cgroup);
                /* "/" is the root: everything is below it */
                if (asprintf(&cgroup_dir, "%s%s", q->cgroup, n > 0 && q->cgroup[n - 1] == '/' ? "" : "/") < 0) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
                bind_text(st, ":cgroup_dir", cgroup_dir);
        }
        bind_text(st, ":unit", q->unit);
        bind_text(st, ":container", q->container);
        bind_i64(st, ":states", q->state_mask);
        *ret = st;
        return 0;
}

/* Appends the frames of stack sid to *out, loading (and caching) each
 * location once per query. Returns the number of frames or a negative errno. */
/* Most locations a reader keeps between queries: a day of a busy host
 * references some tens of thousands; at a few hundred bytes each this caps
 * a worker's cache near 10 MiB. Past it, a query loads what its stacks
 * need one stack at a time (transient_add), so a worker's memory does not
 * grow with the answer. */
#define QUERY_LOCATION_CACHE_MAX 32768

/* Locations of the stack being answered that did not fit in the cache:
 * freed once the stack line was made, at the next stack or the query's end. */
static void transient_release(struct store_read *q) {
        for (size_t i = 0; i < q->n_transient; i++)
                location_info_free(q->transient[i]);
        q->n_transient = 0;
}

static int transient_add(struct store_read *q, struct location_info *li) {
        if (q->n_transient == q->transient_cap) {
                size_t cap = MAX(q->transient_cap * 2, 64u);
                struct location_info **t = realloc(q->transient, cap * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                q->transient = t;
                q->transient_cap = cap;
        }
        q->transient[q->n_transient++] = li;
        return 0;
}

int store_read_new(store *s, bool keep_locations) {
        struct store_read *q = calloc(1, sizeof(*q));

        if (!q)
                return log_oom();
        s->read = q;
        q->keep_locations = keep_locations;
        return db_prepare_all(&s->d, stmt_sql, _STMT_MAX, q->stmts);
}

void store_read_free(store *s) {
        struct store_read *q = s->read;

        if (!q)
                return;
        db_finalize_all(q->stmts, _STMT_MAX);
        location_cache_free(q->locations);
        transient_release(q);
        free(q->transient);
        free(q->ids);
        free(q);
        s->read = NULL;
}

int store_stack_frames(store *s, int64_t sid, hashmap *cache, struct store_frame_out **out, size_t *out_cap,
                        size_t *ret_n, int *ret_user_end) {
        sqlite3_stmt *frames_st = s->read->stmts[STMT_SELECT_STACK_FRAMES];
        const int64_t *locs;
        size_t n, n_out = 0;
        int rc, r = 0;

        transient_release(s->read); /* the previous stack's: its line is made */
        sqlite3_bind_int64(frames_st, 1, sid);
        rc = sqlite3_step(frames_st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(frames_st);
                sqlite3_clear_bindings(frames_st);
                return rc == SQLITE_DONE ? -ENOENT : db_fail(&s->d, rc, "stack lookup");
        }
        r = stack_unpack(sqlite3_column_blob(frames_st, 0), (size_t) sqlite3_column_bytes(frames_st, 0),
                         &s->read->ids, &s->read->ids_cap, &n);
        if (r == -EBADMSG) {
                /* as a damaged block is skipped: the answer goes on, its
                 * samples counted under a stack of no frames */
                log_error("Store %s: stack %" PRId64 " has unreadable frames, answered without them.", s->d.path,
                          sid);
                n = 0;
                r = 0;
        }
        if (r < 0) {
                sqlite3_reset(frames_st);
                sqlite3_clear_bindings(frames_st);
                return r;
        }
        locs = s->read->ids;
        *ret_user_end = sqlite3_column_type(frames_st, 1) == SQLITE_NULL ? STORE_END_UNKNOWN
                                                                          : sqlite3_column_int(frames_st, 1);
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct location_info *li;
                int64_t lid;
                void *v;

                lid = locs[i];
                if (hashmap_get(cache, UINT64_TO_KEY(lid), &v) < 0) {
                        r = load_location(s, lid, &li);
                        if (r < 0)
                                break;
                        if (cache == s->read->locations && hashmap_size(cache) >= QUERY_LOCATION_CACHE_MAX)
                                r = transient_add(s->read, li);
                        else
                                r = hashmap_put(cache, UINT64_TO_KEY(lid), li);
                        if (r < 0) {
                                location_info_free(li);
                                break;
                        }
                } else
                        li = v;
                if (n_out + li->n > *out_cap) {
                        size_t cap = MAX(*out_cap * 2, n_out + li->n);
                        struct store_frame_out *no = realloc(*out, cap * sizeof(**out));
                        if (!no) {
                                r = -ENOMEM;
                                break;
                        }
                        *out = no;
                        *out_cap = cap;
                }
                memcpy(*out + n_out, li->frames, li->n * sizeof(**out));
                n_out += li->n;
        }
        sqlite3_reset(frames_st);
        sqlite3_clear_bindings(frames_st);
        if (r < 0)
                return r;
        *ret_n = n_out;
        return 0;
}

/* --- query speed (C2; docs/performance.md, Queries) ------------------------ */

void store_forget_query_caches(store *s) {
        struct store_read *q = s->read;

        location_cache_free(q->locations);
        q->locations = NULL;
        transient_release(q);
        free(q->transient);
        q->transient = NULL;
        q->transient_cap = 0;
        store_release_memory(s);
}

size_t store_query_cached_locations(const store *s) {
        return s->read->locations ? hashmap_size(s->read->locations) : 0;
}

/* The location cache a query uses. A reader connection keeps its locations
 * from one query to the next: retention deletes rows (and SQLite may then
 * give a deleted id to a new location), and the writer changes one kind:
 * a location stored by its symbol alone given its lines later
 * (store_location_add_lines); so the cache is emptied when retention's
 * count of deleted locations or the writer's of changed ones
 * (STORE_CHANGED_LOCATIONS) moved. The check and the query share one read
 * transaction (committed at the end of store_query_stacks), so they see
 * the same store. Anything but a reader gets a new cache, freed after the
 * query. */
hashmap *store_query_location_cache(store *s) {
        struct store_read *q = s->read;
        uint64_t deleted = UINT64_MAX;
        sqlite3_stmt *st = NULL;

        if (!q->keep_locations)
                return hashmap_new_u64();
        if (sqlite3_get_autocommit(s->d.handle) && db_exec(&s->d, "BEGIN") < 0)
                return hashmap_new_u64();
        if (sqlite3_prepare_v2(s->d.handle, "SELECT coalesce(sum(value), 0) FROM retention_totals "
                                      "WHERE name IN ('deleted_locations', '" STORE_CHANGED_LOCATIONS "')",
                                      -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                deleted = (uint64_t) sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (q->locations &&
            (deleted != q->locations_deleted || deleted == UINT64_MAX ||
             hashmap_size(q->locations) > QUERY_LOCATION_CACHE_MAX)) {
                location_cache_free(q->locations);
                q->locations = NULL;
        }
        if (!q->locations)
                q->locations = hashmap_new_u64();
        q->locations_deleted = deleted;
        return q->locations;
}

void store_query_location_cache_done(store *s, hashmap *cache) {
        /* a connection other than a reader's got a cache of its own */
        if (cache != s->read->locations)
                location_cache_free(cache);
        transient_release(s->read);
}

struct stack_sum {
        uint32_t group; /* index in the answer's group names; 0 ungrouped */
        int64_t stack_id;
        uint64_t value;
};

/* A query answer being summed: per (group, stack), and the group names. */
struct stack_sums {
        struct stack_sum *sums;
        size_t n, cap;
        hashmap *index;   /* group << 40 | stack -> index + 1 in sums */
        hashmap *groups;  /* name -> group + 1 (keys are names[group]) */
        char **names;
        size_t n_names;
        hashmap *threads; /* process_id << 22 | tid -> group + 1 (root thread) */
        /* the window holds drains of another rate than the base: values
         * are summed in rate-weight.h's fixed point, rounded at the end */
        bool weighted;
        unsigned base_hz;
        struct rate_map rates;
};

static void stack_sums_done(struct stack_sums *a) {
        free(a->sums);
        hashmap_free(a->index);
        hashmap_free(a->groups);
        hashmap_free(a->threads);
        for (size_t i = 0; i < a->n_names; i++)
                free(a->names[i]);
        free(a->names);
        rate_map_done(&a->rates);
}

/* The drains overlapping q's window (and a minute around it: a timeline
 * block's samples lie within its drain's time, which a wall clock set
 * meanwhile may move by a little) sampled at another rate than the
 * base. Raised drains are few (captures), so the map is small and most
 * windows have none: then nothing is weighted and the sums are those of
 * plain counts. Returns 0 or a negative errno. */
static int stack_sums_load_rates(store *s, const struct store_query *q, struct stack_sums *a) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc, r = 0;

        if (q->kind != 0 || q->base_hz == 0) /* PROFD_KIND_CPU */
                return 0;
        /* one drain by its key, or the window's through drains_end (an OR
         * of the two would read the whole table) */
        rc = sqlite3_prepare_v2(s->d.handle,
                                q->drain_id > 0
                                        ? "SELECT id, frequency_hz FROM drains WHERE id = ?4 AND frequency_hz != ?1"
                                        : "SELECT id, frequency_hz FROM drains WHERE end_ns >= ?2 AND start_ns <= ?3 "
                                          "AND frequency_hz != ?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing the rates' query");
        sqlite3_bind_int64(st, 1, q->base_hz);
        sqlite3_bind_int64(st, 2, (int64_t) (q->from_ns > 60 * NSEC_PER_SEC ? q->from_ns - 60 * NSEC_PER_SEC : 0));
        sqlite3_bind_int64(st, 3, (int64_t) MIN(q->to_ns, (uint64_t) INT64_MAX - 60 * NSEC_PER_SEC) + 60 * (int64_t) NSEC_PER_SEC);
        sqlite3_bind_int64(st, 4, q->drain_id);
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
                r = rate_map_add(&a->rates, sqlite3_column_int64(st, 0), (unsigned) sqlite3_column_int64(st, 1));
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "rates' query");
        if (r < 0)
                return r;
        rate_map_sort(&a->rates);
        a->weighted = a->rates.n > 0;
        a->base_hz = q->base_hz;
        return 0;
}

/* The weighted sums (fixed point) as whole samples of the base rate, in
 * place (rate_weight_apportion): the answer's total is the weighted total
 * rounded. Returns 0 or -ENOMEM. */
static int stack_sums_apportion(struct stack_sums *a) {
        _cleanup_free_ uint64_t *fixed = NULL, *whole = NULL;
        int r;

        if (a->n == 0)
                return 0;
        fixed = malloc(a->n * sizeof(*fixed));
        whole = malloc(a->n * sizeof(*whole));
        if (!fixed || !whole)
                return -ENOMEM;
        for (size_t i = 0; i < a->n; i++)
                fixed[i] = a->sums[i].value;
        r = rate_weight_apportion(fixed, a->n, whole);
        if (r < 0)
                return r;
        for (size_t i = 0; i < a->n; i++)
                a->sums[i].value = whole[i];
        return 0;
}

/* value samples of drain drain_id as the sums count them. */
static uint64_t stack_sums_value(const struct stack_sums *a, int64_t drain_id, uint64_t value) {
        if (!a || !a->weighted)
                return value;
        return rate_weight_fixed(value, rate_map_hz(&a->rates, drain_id), a->base_hz);
}

/* qsort_r's comparison; names: the group names (query workers sort at
 * the same time, so they are passed, not global) */
static int stack_sum_cmp(const void *a, const void *b, void *names) {
        const struct stack_sum *x = a, *y = b;
        char *const *sort_names = names;

        if (x->group != y->group) {
                /* by name as SQLite's BINARY collation orders them */
                int c = strcmp(sort_names[x->group], sort_names[y->group]);
                if (c != 0)
                        return c;
        }
        return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* The group number of name, added when new. */
static int group_of(struct stack_sums *a, const char *name, uint32_t *ret) {
        void *v;
        char *c, **nn;
        int r;

        if (hashmap_get(a->groups, name, &v) >= 0) {
                *ret = (uint32_t) ((uintptr_t) v - 1);
                return 0;
        }
        c = strdup(name);
        nn = c ? realloc(a->names, (a->n_names + 1) * sizeof(*nn)) : NULL;
        if (!nn) {
                free(c);
                return -ENOMEM;
        }
        a->names = nn;
        a->names[a->n_names] = c;
        r = hashmap_put(a->groups, c, (void *) (uintptr_t) (a->n_names + 1));
        if (r < 0)
                return r;
        *ret = (uint32_t) a->n_names++;
        return 0;
}

static int stack_sums_add(struct stack_sums *a, uint32_t group, int64_t stack, uint64_t value) {
        uint64_t key = (uint64_t) group << 40 | (uint64_t) stack;
        void *v;
        int r;

        if (hashmap_get(a->index, UINT64_TO_KEY(key), &v) >= 0) {
                a->sums[(uintptr_t) v - 1].value += value;
                return 0;
        }
        if (a->n == a->cap) {
                size_t cap = MAX(a->cap * 2, (size_t) 1024);
                struct stack_sum *ns = realloc(a->sums, cap * sizeof(*ns));
                if (!ns)
                        return -ENOMEM;
                a->sums = ns;
                a->cap = cap;
        }
        r = hashmap_put(a->index, UINT64_TO_KEY(key), (void *) (uintptr_t) (a->n + 1));
        if (r < 0)
                return r;
        a->sums[a->n++] = (struct stack_sum) { group, stack, value };
        return 0;
}

/* The group of thread tid of process proc for --root thread: its name as
 * stored, else its process's comm (as coalesce(th.comm, p.comm) did). */
static int thread_group(store *s, struct stack_sums *a, sqlite3_stmt *name_st, int64_t proc, uint32_t tid,
                        const char *comm, uint32_t *ret) {
        uint64_t key = (uint64_t) proc << 22 | tid;
        void *v;
        int rc, r;

        if (hashmap_get(a->threads, UINT64_TO_KEY(key), &v) >= 0) {
                *ret = (uint32_t) ((uintptr_t) v - 1);
                return 0;
        }
        sqlite3_bind_int64(name_st, 1, proc);
        sqlite3_bind_int64(name_st, 2, tid);
        rc = sqlite3_step(name_st);
        if (rc == SQLITE_ROW && sqlite3_column_text(name_st, 0))
                r = group_of(a, (const char *) sqlite3_column_text(name_st, 0), ret);
        else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
                r = group_of(a, comm ? comm : "", ret);
        else
                r = db_fail(&s->d, rc, "thread name lookup");
        sqlite3_reset(name_st);
        if (r < 0)
                return r;
        return hashmap_put(a->threads, UINT64_TO_KEY(key), (void *) (uintptr_t) (*ret + 1));
}

/* Sums the entries of the blocks st selects (process_id, group name, then
 * SAMPLE_BLOCK_COLUMNS) per (group, stack), in a hash map: SQLite's GROUP
 * BY would sort every row of the window first. */
/* Does a query of stacks need only the stack and value of each entry (st
 * selects SAMPLE_BLOCK_COLUMNS_STACKS), not its thread or state? */
static bool query_stacks_only(const struct store_query *q) {
        return !q->tid && !q->state_mask && q->group != STORE_GROUP_THREAD;
}

static int query_stacks_sum(store *s, sqlite3_stmt *st, const struct store_query *q, struct stack_sums *a) {
        _cleanup_stmt_ sqlite3_stmt *name_st = NULL;
        bool stacks_only = query_stacks_only(q);
        int rc, r = 0;

        if (q->group == STORE_GROUP_THREAD) {
                rc = sqlite3_prepare_v2(s->d.handle, "SELECT comm FROM threads WHERE process_id = ?1 AND tid = ?2", -1,
                                        &name_st, NULL);
                if (rc != SQLITE_OK)
                        return db_fail(&s->d, rc, "preparing the query");
        }
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t proc = sqlite3_column_int64(st, 0);
                const char *grp = q->group != STORE_GROUP_NONE ? (const char *) sqlite3_column_text(st, 1) : NULL;
                uint64_t mask = (uint64_t) sqlite3_column_int64(st, 2);
                int64_t key = sqlite3_column_int64(st, 3);
                struct sample_block b;
                uint32_t group = 0;
                bool whole;

                r = stacks_only ? sample_block_from_row_stacks(st, 4, &b) : sample_block_from_row(st, 4, &b);
                if (r < 0) {
                        log_error("Store %s: a block of samples of drain-process %" PRId64 " is damaged, ignoring it.",
                                  s->path, proc);
                        r = 0;
                        continue;
                }
                /* a block of one drain (offsets all 0) is in the window
                 * or not as a whole */
                whole = b.width[SAMPLE_FIELD_SPAN] == 0;
                if (whole && !(mask & 1))
                        continue;
                if (q->group != STORE_GROUP_NONE && q->group != STORE_GROUP_THREAD)
                        r = group_of(a, grp ? grp : "", &group);
                /* the common case: only stacks and values are needed */
                if (stacks_only) {
                        int64_t cur = -1;
                        uint64_t sum = 0;

                        /* entries are sorted by stack: a run of one stack is one sum */
                        for (size_t i = 0, at = 0; r >= 0 && i < b.n; i++, at += b.entry_bits) {
                                unsigned span = (unsigned) sample_block_field_at(&b, at, SAMPLE_FIELD_SPAN);
                                int64_t stack;
                                uint64_t value;

                                if (!whole && !entry_in_window(mask, span))
                                        continue;
                                stack = (int64_t) sample_block_field_at(&b, at, SAMPLE_FIELD_STACK);
                                value = stack_sums_value(a, key + span, sample_block_field_at(&b, at, SAMPLE_FIELD_VALUE));
                                if (stack != cur && cur >= 0)
                                        r = stack_sums_add(a, group, cur, sum);
                                if (stack != cur)
                                        cur = stack, sum = 0;
                                sum += value;
                        }
                        if (r >= 0 && cur >= 0)
                                r = stack_sums_add(a, group, cur, sum);
                        continue;
                }
                for (size_t i = 0; r >= 0 && i < b.n; i++) {
                        struct sample_entry e;

                        sample_block_get(&b, i, &e);
                        if (!entry_in_window(mask, e.span) || !entry_matches(q, &e))
                                continue;
                        if (q->group == STORE_GROUP_THREAD)
                                r = thread_group(s, a, name_st, proc, e.tid, grp, &group);
                        if (r >= 0)
                                r = stack_sums_add(a, group, e.stack_id, stack_sums_value(a, key + e.span, e.value));
                }
        }
        if (r >= 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
                r = db_fail(&s->d, rc, "query");
        return r;
}

int store_query_timeline_covers(store *s, const struct store_query *q, bool *ret) {
        int64_t oldest;
        int r;

        *ret = false;
        if (q->drain_id != 0)
                return 0;
        /* the oldest block's start, through the index on end_ns */
        if (q->kind == 1) /* PROFD_KIND_OFFCPU: its blocks have their state */
                r = db_query_i64(&s->d, "SELECT start_ns FROM offcpu_timeline ORDER BY end_ns LIMIT 1", NULL, 0, -1,
                                 &oldest);
        else if (q->kind == 0 && q->state_mask == 0) /* PROFD_KIND_CPU */
                r = db_query_i64(&s->d, "SELECT start_ns FROM timeline_blocks ORDER BY end_ns LIMIT 1", NULL, 0,
                                 -1, &oldest);
        else
                return 0;
        if (r < 0)
                return r;
        *ret = oldest >= 0 && (uint64_t) oldest <= q->from_ns;
        if (*ret) {
                uint64_t gap_start, gap_end;

                r = store_timeline_gap(s, (int) q->kind, q->from_ns, q->to_ns, &gap_start, &gap_end);
                if (r < 0)
                        return r;
                *ret = r == 0;
        }
        return 0;
}

int store_timeline_gap(store *s, int kind, uint64_t from_ns, uint64_t to_ns, uint64_t *ret_start_ns,
                       uint64_t *ret_end_ns) {
        /* the window's drains through the index on end_ns, the timeline
         * rows by their primary keys. A drain's cpu samples are counted in
         * its row; its off-CPU blocks are known only as blocks of that
         * kind, in its own or (after retention packed it) its span's,
         * which may hold another drain's: a drain of a span with none of
         * its own counts as a gap, and the answer falls back to drains,
         * never to a hole. */
        static const char *const sql[2] = {
                "SELECT d.start_ns, d.end_ns FROM drains d WHERE d.end_ns > ?1 AND d.start_ns < ?2 "
                "AND d.samples > 0 "
                "AND NOT EXISTS (SELECT 1 FROM timeline_blocks t WHERE t.drain_id = d.id) ORDER BY d.end_ns LIMIT 1",
                "SELECT d.start_ns, d.end_ns FROM drains d WHERE d.end_ns > ?1 AND d.start_ns < ?2 "
                "AND EXISTS (SELECT 1 FROM sample_blocks b WHERE b.drain_id = COALESCE(d.span, d.id) AND b.kind = 1) "
                "AND NOT EXISTS (SELECT 1 FROM offcpu_timeline t WHERE t.drain_id = d.id) ORDER BY d.end_ns LIMIT 1",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int rc;

        if (kind != 0 && kind != 1)
                return -EINVAL;
        rc = sqlite3_prepare_v2(s->d.handle, sql[kind], -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "preparing the timeline's gap query");
        sqlite3_bind_int64(st, 1, (int64_t) MIN(from_ns, (uint64_t) INT64_MAX));
        sqlite3_bind_int64(st, 2, (int64_t) MIN(to_ns, (uint64_t) INT64_MAX));
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return 0;
        if (rc != SQLITE_ROW)
                return db_fail(&s->d, rc, "the timeline's gap query");
        *ret_start_ns = (uint64_t) sqlite3_column_int64(st, 0);
        *ret_end_ns = (uint64_t) sqlite3_column_int64(st, 1);
        return 1;
}

/* A process's part in a timeline answer: whether the query's process
 * filters keep it, and its group name (as the block query's first columns
 * give them). */
struct timeline_proc {
        bool keep;
        uint32_t group;
        char *comm;     /* STORE_GROUP_THREAD: the name of threads without one */
};

static int timeline_proc_get(store *s, sqlite3_stmt *pst, const struct store_query *q, struct stack_sums *a,
                             hashmap *procs, int64_t id, struct timeline_proc **ret) {
        struct timeline_proc *tp;
        void *v;
        int rc, r = 0;

        if (hashmap_get(procs, UINT64_TO_KEY((uint64_t) id), &v) >= 0) {
                *ret = v;
                return 0;
        }
        tp = calloc(1, sizeof(*tp));
        if (!tp)
                return -ENOMEM;
        sqlite3_bind_int64(pst, sqlite3_bind_parameter_index(pst, ":id"), id);
        rc = sqlite3_step(pst);
        if (rc == SQLITE_ROW) {
                const char *grp = (const char *) sqlite3_column_text(pst, 0);

                tp->keep = true;
                if (q->group == STORE_GROUP_THREAD) {
                        tp->comm = strdup(grp ? grp : "");
                        if (!tp->comm)
                                r = -ENOMEM;
                } else if (q->group != STORE_GROUP_NONE)
                        r = group_of(a, grp ? grp : "", &tp->group);
        } else if (rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "timeline process lookup");
        sqlite3_reset(pst);
        if (r >= 0)
                r = hashmap_put(procs, UINT64_TO_KEY((uint64_t) id), tp);
        if (r < 0) {
                free(tp->comm);
                free(tp);
                return r;
        }
        *ret = tp;
        return 0;
}

/* Called by timeline_scan for each sample of the window that passes the
 * query's filters, with its time, value, key and process: a cpu sample at
 * its time, value 1 (in the sums' fixed point when they are weighted) and
 * hz its drain's rate where that is not the base (else 0); the part of an
 * off-CPU block inside the window, from where it begins there, value its
 * ns, hz 0. */
typedef int (*timeline_sample_fn)(uint64_t at_ns, uint64_t value, unsigned hz, const struct timeline_key *k,
                                  struct timeline_proc *tp, void *userdata);

/* The off-CPU blocks of one offcpu_timeline row (start: its start_ns) in
 * the window, as timeline_scan's loop over a cpu block does. */
static int offtime_row_scan(store *s, const struct store_query *q, struct stack_sums *a, sqlite3_stmt *pst,
                            hashmap *procs, uint64_t start, const struct offtime_set *b, timeline_sample_fn fn,
                            void *userdata) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < b->n_blocks; i++) {
                const struct offtime_key *ok = &b->keys[b->blocks[i].key];
                struct timeline_key k = { ok->process_id, ok->stack_id, ok->tid };
                uint64_t at = 0, part;
                struct timeline_proc *tp;

                /* µs to ns; a stored block ends within the store's ns range */
                part = offtime_clip(start + b->blocks[i].start_us * 1000, b->blocks[i].duration_us * 1000,
                                    q->from_ns, q->to_ns, &at);
                if (part == 0 || (q->tid && ok->tid != q->tid) ||
                    (q->state_mask && (ok->state >= 32 || !((1u << ok->state) & q->state_mask))))
                        continue;
                r = timeline_proc_get(s, pst, q, a, procs, ok->process_id, &tp);
                if (r < 0 || !tp->keep)
                        continue;
                r = fn(at, part, 0, &k, tp, userdata);
        }
        return r;
}

/* Each on-CPU sample the timeline holds whose own time is in [from_ns,
 * to_ns], where its process passes the filters and its thread the tid
 * filter, to fn: blocks in the order of their end, each block's samples in
 * time order. a: the answer's group names (NULL without a group). */
static int timeline_scan(store *s, const struct store_query *q, struct stack_sums *a, timeline_sample_fn fn,
                         void *userdata) {
        struct sql_text t = {};
        sqlite3_stmt *bst = NULL, *pst = NULL;
        hashmap *procs = hashmap_new_u64();
        int rc = SQLITE_DONE, r = procs ? 0 : -ENOMEM;

        switch (q->group) {
        case STORE_GROUP_PROCESS:
                sql_add(&t, "SELECT p.comm || '-' || CASE WHEN p.pid < 0 THEN '*' ELSE p.pid END");
                break;
        case STORE_GROUP_UNIT:
                sql_add(&t, "SELECT coalesce(p.unit, '-')");
                break;
        case STORE_GROUP_THREAD:
                sql_add(&t, "SELECT p.comm");
                break;
        default:
                sql_add(&t, "SELECT NULL");
        }
        sql_add(&t, " FROM processes p WHERE p.id = :id");
        sql_add_process_filters(&t, q);
        if (r >= 0)
                r = query_prepare(s, &t, q, &pst);
        free(t.buf);
        if (r >= 0) {
                /* blocks end by their last sample: those ending before the
                 * window hold none of it (timeline_blocks_end, which also
                 * gives their order); an off-CPU row ends by its last
                 * block's end (offcpu_timeline_end) */
                rc = sqlite3_prepare_v2(s->d.handle,
                                        q->kind == 1 ? "SELECT drain_id, start_ns, data FROM offcpu_timeline "
                                                       "WHERE end_ns >= ?1 AND start_ns <= ?2 ORDER BY end_ns"
                                                     : "SELECT drain_id, start_ns, data FROM timeline_blocks "
                                                       "WHERE end_ns >= ?1 AND start_ns <= ?2 ORDER BY end_ns",
                                        -1, &bst, NULL);
                if (rc != SQLITE_OK)
                        r = db_fail(&s->d, rc, "preparing the query");
                else {
                        sqlite3_bind_int64(bst, 1, (int64_t) q->from_ns);
                        sqlite3_bind_int64(bst, 2, (int64_t) q->to_ns);
                }
        }
        while (r >= 0 && (rc = sqlite3_step(bst)) == SQLITE_ROW) {
                uint64_t start = (uint64_t) sqlite3_column_int64(bst, 1);
                struct timeline_block b = {};

                if (q->kind == 1) { /* PROFD_KIND_OFFCPU */
                        struct offtime_set ob = {};

                        r = offtime_unpack(sqlite3_column_blob(bst, 2), (size_t) sqlite3_column_bytes(bst, 2), &ob);
                        if (r == -EBADMSG) {
                                log_error("Store %s: the off-CPU timeline of drain %" PRId64 " is damaged, ignoring it.",
                                          s->path, (int64_t) sqlite3_column_int64(bst, 0));
                                r = 0;
                                continue;
                        }
                        if (r >= 0)
                                r = offtime_row_scan(s, q, a, pst, procs, start, &ob, fn, userdata);
                        offtime_set_done(&ob);
                        continue;
                }
                r = timeline_unpack(sqlite3_column_blob(bst, 2), (size_t) sqlite3_column_bytes(bst, 2), &b);
                if (r == -EBADMSG) {
                        log_error("Store %s: the timeline of drain %" PRId64 " is damaged, ignoring it.", s->path,
                                  (int64_t) sqlite3_column_int64(bst, 0));
                        r = 0;
                        continue;
                }
                for (size_t i = 0; r >= 0 && i < b.n_samples; i++) {
                        uint64_t at = start + b.samples[i].time_us * 1000;
                        const struct timeline_key *k = &b.keys[b.samples[i].key];
                        struct timeline_proc *tp;

                        if (at < q->from_ns || at > q->to_ns || (q->tid && k->tid != q->tid))
                                continue;
                        r = timeline_proc_get(s, pst, q, a, procs, k->process_id, &tp);
                        if (r < 0 || !tp->keep)
                                continue;
                        int64_t drain = sqlite3_column_int64(bst, 0);

                        r = fn(at, stack_sums_value(a, drain, 1), a ? rate_map_hz(&a->rates, drain) : 0, k, tp,
                               userdata);
                }
                timeline_block_done(&b);
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "timeline query");
        sqlite3_finalize(bst);
        sqlite3_finalize(pst);
        if (procs) {
                const void *key;
                void *v;
                size_t it = 0;

                while (hashmap_iterate(procs, &it, &key, &v)) {
                        struct timeline_proc *tp = v;
                        free(tp->comm);
                        free(tp);
                }
                hashmap_free(procs);
        }
        return r;
}

struct timeline_sums {
        store *s;
        struct stack_sums *a;
        sqlite3_stmt *name_st;
};

static int timeline_sum_sample(uint64_t at_ns _unused_, uint64_t value, unsigned hz _unused_,
                               const struct timeline_key *k,
                               struct timeline_proc *tp, void *userdata) {
        struct timeline_sums *ts = userdata;
        uint32_t group = tp->group;
        int r;

        if (ts->name_st) {
                r = thread_group(ts->s, ts->a, ts->name_st, k->process_id, k->tid, tp->comm, &group);
                if (r < 0)
                        return r;
        }
        return stack_sums_add(ts->a, group, k->stack_id, value);
}

/* The sums of a cpu or offcpu query from the timeline: each sample whose
 * own time is in [from_ns, to_ns] counts 1 for its (group, stack), each
 * off-CPU block the ns of it inside the window, where its process passes
 * the filters and its thread the tid (and state) filter. */
static int query_stacks_timeline(store *s, const struct store_query *q, struct stack_sums *a) {
        _cleanup_stmt_ sqlite3_stmt *name_st = NULL;
        int rc;

        if (q->group == STORE_GROUP_THREAD) {
                rc = sqlite3_prepare_v2(s->d.handle, "SELECT comm FROM threads WHERE process_id = ?1 AND tid = ?2", -1,
                                        &name_st, NULL);
                if (rc != SQLITE_OK)
                        return db_fail(&s->d, rc, "preparing the query");
        }
        return timeline_scan(s, q, a, timeline_sum_sample, &(struct timeline_sums) { s, a, name_st });
}

int store_timeline_oldest(store *s, uint64_t *ret_ns) {
        int64_t oldest;
        int r;

        /* the oldest block's start, through the index on end_ns: retention
         * deletes the oldest first, so the timeline holds all after it */
        r = db_query_i64(&s->d, "SELECT start_ns FROM timeline_blocks ORDER BY end_ns LIMIT 1", NULL, 0, -1, &oldest);
        if (r < 0)
                return r;
        if (oldest < 0)
                return -ENOENT;
        *ret_ns = (uint64_t) oldest;
        return 0;
}

int store_offtime_oldest(store *s, uint64_t *ret_ns) {
        int64_t oldest;
        int r;

        /* as store_timeline_oldest: retention deletes the rows that end
         * first, so the off-CPU timeline holds every block after */
        r = db_query_i64(&s->d, "SELECT start_ns FROM offcpu_timeline ORDER BY end_ns LIMIT 1", NULL, 0, -1, &oldest);
        if (r < 0)
                return r;
        if (oldest < 0)
                return -ENOENT;
        *ret_ns = (uint64_t) oldest;
        return 0;
}

static int timed_add_sample(uint64_t at_ns, uint64_t value _unused_, unsigned hz, const struct timeline_key *k,
                            struct timeline_proc *tp _unused_, void *userdata) {
        return timed_set_add(userdata, at_ns, k->stack_id, hz);
}

int store_query_timed(store *s, const struct store_query *q, struct timed_set *set, store_stack_fn fn,
                      void *userdata) {
        struct store_frame_out *out = NULL;
        size_t out_cap = 0;
        /* only the rates: the samples carry their drain's, for profctl to
         * weigh a range as a query would (issue 44) */
        struct stack_sums rates = {};
        hashmap *cache;
        int r;

        if (q->group != STORE_GROUP_NONE || q->kind != 0 || q->drain_id != 0) /* PROFD_KIND_CPU */
                return -EINVAL;
        /* one read transaction (begun here on a reader) for the samples
         * and their stacks: retention cannot take a stack in between */
        cache = store_query_location_cache(s);
        if (!cache)
                return -ENOMEM;
        r = stack_sums_load_rates(s, q, &rates);
        if (r >= 0)
                r = timeline_scan(s, q, &rates, timed_add_sample, set);
        stack_sums_done(&rates);
        if (r >= 0)
                r = timed_set_finish(set);
        for (size_t i = 0; r >= 0 && i < set->n_stacks; i++) {
                struct store_stack_out so = { .value = set->stack_values[i] };

                r = store_stack_frames(s, set->stack_ids[i], cache, &out, &out_cap, &so.n_frames, &so.user_end);
                if (r < 0)
                        break;
                so.frames = out;
                r = fn(&so, userdata);
        }
        store_query_location_cache_done(s, cache);
        if (s->read->keep_locations && !sqlite3_get_autocommit(s->d.handle))
                (void) db_exec(&s->d, "COMMIT");
        free(out);
        return r;
}

static int timed_add_span(uint64_t at_ns, uint64_t value, unsigned hz _unused_, const struct timeline_key *k,
                          struct timeline_proc *tp _unused_, void *userdata) {
        return timed_span_set_add(userdata, at_ns, value, k->stack_id);
}

int store_query_spans(store *s, const struct store_query *q, struct timed_span_set *set, store_stack_fn fn,
                      void *userdata) {
        struct store_frame_out *out = NULL;
        size_t out_cap = 0;
        hashmap *cache;
        int r;

        if (q->group != STORE_GROUP_NONE || q->kind != 1 || q->drain_id != 0) /* PROFD_KIND_OFFCPU */
                return -EINVAL;
        /* one read transaction, as store_query_timed */
        cache = store_query_location_cache(s);
        if (!cache)
                return -ENOMEM;
        r = timeline_scan(s, q, NULL, timed_add_span, set);
        if (r >= 0)
                timed_span_set_finish(set);
        for (size_t i = 0; r >= 0 && i < set->stacks.n_stacks; i++) {
                struct store_stack_out so = { .value = set->stacks.stack_values[i] };

                r = store_stack_frames(s, set->stacks.stack_ids[i], cache, &out, &out_cap, &so.n_frames,
                                       &so.user_end);
                if (r < 0)
                        break;
                so.frames = out;
                r = fn(&so, userdata);
        }
        store_query_location_cache_done(s, cache);
        if (s->read->keep_locations && !sqlite3_get_autocommit(s->d.handle))
                (void) db_exec(&s->d, "COMMIT");
        free(out);
        return r;
}

int store_query_stacks(store *s, const struct store_query *q, store_stack_fn fn, void *userdata,
                       uint64_t *ret_total, uint64_t *ret_stacks) {
        struct stack_sums a = {};
        struct sql_text t = {};
        sqlite3_stmt *st = NULL;
        hashmap *cache = NULL;
        struct store_frame_out *out = NULL;
        size_t out_cap = 0;
        uint64_t total = 0, stacks = 0;
        int r;

        switch (q->group) {
        case STORE_GROUP_PROCESS:
                /* by name and pid, as the root frame shows it: two instances
                 * of a reused pid with the same comm are one root */
                sql_add(&t, "SELECT b.process_id, p.comm || '-' || CASE WHEN p.pid < 0 THEN '*' ELSE p.pid END");
                break;
        case STORE_GROUP_UNIT:
                sql_add(&t, "SELECT b.process_id, coalesce(p.unit, '-')");
                break;
        case STORE_GROUP_THREAD:
                /* by name alone, as stackcollapse-perf.pl's root frame: the
                 * threads of a pool with one name are one root; the
                 * process's comm for threads without a stored name */
                sql_add(&t, "SELECT b.process_id, p.comm");
                break;
        default:
                sql_add(&t, "SELECT b.process_id, NULL");
        }
        sql_add(&t, ", s.mask, s.k");
        if (query_stacks_only(q))
                sql_add(&t, ", " SAMPLE_BLOCK_COLUMNS_STACKS);
        else
                sql_add(&t, ", " SAMPLE_BLOCK_COLUMNS);
        sql_add_filters(&t, q, q->group != STORE_GROUP_NONE);
        r = query_prepare(s, &t, q, &st);
        free(t.buf);
        if (r < 0)
                return r;
        a.index = hashmap_new_u64();
        a.groups = hashmap_new_string();
        a.threads = hashmap_new_u64();
        cache = store_query_location_cache(s);
        if (!cache || !a.index || !a.groups || !a.threads) {
                r = -ENOMEM;
                goto out;
        }
        if (q->group == STORE_GROUP_NONE)
                r = group_of(&a, "", &(uint32_t) {0});
        if (r >= 0)
                r = stack_sums_load_rates(s, q, &a);
        if (r >= 0)
                r = q->timeline ? query_stacks_timeline(s, q, &a) : query_stacks_sum(s, st, q, &a);
        if (r < 0)
                goto out;
        /* in (group, stack) order, as GROUP BY grp, stack_id ORDER BY grp gave */
        if (a.n > 1) /* an empty answer has no array: qsort(NULL, ...) is undefined */
                qsort_r(a.sums, a.n, sizeof(*a.sums), stack_sum_cmp, a.names);
        if (a.weighted) {
                r = stack_sums_apportion(&a);
                if (r < 0)
                        goto out;
        }
        for (size_t i = 0; i < a.n; i++) {
                struct store_stack_out so = {
                        .value = a.sums[i].value,
                        .group = q->group != STORE_GROUP_NONE ? a.names[a.sums[i].group] : NULL,
                };

                /* weighted to less than half a sample: not in the answer */
                if (so.value == 0)
                        continue;

                r = store_stack_frames(s, a.sums[i].stack_id, cache, &out, &out_cap, &so.n_frames, &so.user_end);
                if (r < 0)
                        goto out;
                so.frames = out;
                total += so.value;
                stacks++;
                r = fn(&so, userdata);
                if (r < 0)
                        goto out;
        }
out:
        sqlite3_finalize(st);
        stack_sums_done(&a);
        store_query_location_cache_done(s, cache);
        if (s->read->keep_locations && !sqlite3_get_autocommit(s->d.handle))
                (void) db_exec(&s->d, "COMMIT");
        free(out);
        if (r >= 0) {
                if (ret_total)
                        *ret_total = total;
                if (ret_stacks)
                        *ret_stacks = stacks;
        }
        return r;
}

struct drain_sum {
        int64_t id;
        uint64_t start_ns, end_ns, value, complete;
        unsigned hz; /* the drain's rate, 0 unknown */
        bool any;
};

static int drain_id_cmp(const void *a, const void *b) {
        const struct drain_sum *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

static int drain_sum_cmp(const void *a, const void *b) {
        const struct drain_sum *x = a, *y = b;

        if (x->start_ns != y->start_ns)
                return x->start_ns < y->start_ns ? -1 : 1;
        if (x->end_ns != y->end_ns)
                return x->end_ns < y->end_ns ? -1 : 1;
        return x->id < y->id ? -1 : x->id > y->id;
}

/* The drains' cpu sums at the base rate, in place, where a drain of the
 * window was sampled at another (a capture's raise): the values, and the
 * complete parts, apportioned over the drains (rate_weight_apportion), so
 * the series adds up to the query's total over the same window. Returns 0
 * or -ENOMEM. */
static int drain_sums_weigh(const struct store_query *q, struct drain_sum *sums, size_t n) {
        _cleanup_free_ uint64_t *fixed = NULL, *whole = NULL;
        bool weighted = false;
        int r;

        if (q->kind != 0 || q->base_hz == 0) /* PROFD_KIND_CPU */
                return 0;
        for (size_t i = 0; i < n && !weighted; i++)
                weighted = sums[i].hz > 0 && sums[i].hz != q->base_hz;
        if (!weighted)
                return 0;
        fixed = malloc(n * sizeof(*fixed));
        whole = malloc(n * sizeof(*whole));
        if (!fixed || !whole)
                return -ENOMEM;
        for (unsigned part = 0; part < 2; part++) {
                for (size_t i = 0; i < n; i++)
                        fixed[i] = rate_weight_fixed(part ? sums[i].complete : sums[i].value, sums[i].hz, q->base_hz);
                r = rate_weight_apportion(fixed, n, whole);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++)
                        if (part)
                                /* apportioned apart, the complete part may
                                 * round up past its whole */
                                sums[i].complete = MIN(whole[i], sums[i].value);
                        else
                                sums[i].value = whole[i];
        }
        return 0;
}

int store_query_drains(store *s, const struct store_query *q, store_drain_value_fn fn, void *userdata) {
        _cleanup_free_ struct drain_sum *sums = NULL;
        _cleanup_stmt_ sqlite3_stmt *cst = NULL;
        struct sql_text t = {};
        sqlite3_stmt *st = NULL;
        hashmap *complete = NULL;
        size_t n = 0, cap = 0;
        bool began = false;
        int rc, r;

        /* the complete stacks: one set built once per answer from the
         * stacks table, not a lookup per sample */
        complete = hashmap_new_u64();
        if (!complete)
                return -ENOMEM;
        /* the window's drains and their blocks are read by two statements:
         * one read transaction, so a merge retention commits in between
         * cannot take drains out of one and put them in the other */
        if (sqlite3_get_autocommit(s->d.handle))
                began = db_exec(&s->d, "BEGIN") >= 0;
        rc = sqlite3_prepare_v2(s->d.handle, "SELECT id FROM stacks WHERE user_end = 0", -1, &cst, NULL);
        r = rc == SQLITE_OK ? 0 : db_fail(&s->d, rc, "series query");
        while (r >= 0 && (rc = sqlite3_step(cst)) == SQLITE_ROW)
                r = hashmap_put(complete, UINT64_TO_KEY(sqlite3_column_int64(cst, 0)), (void *) 1);
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "series query");
        if (r < 0)
                goto out;

        /* the window's drains, by id: a block may hold several of them (a
         * span), so each entry finds its drain's sum by id */
        sql_add(&t, "SELECT d.id, d.start_ns, d.end_ns, coalesce(d.frequency_hz, 0) FROM drains d WHERE ");
        sql_add_window(&t, q);
        sql_add(&t, " ORDER BY d.id");
        r = query_prepare(s, &t, q, &st);
        free(t.buf);
        t = (struct sql_text) {};
        if (r < 0)
                goto out;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (n == cap) {
                        size_t ncap = MAX(cap * 2, (size_t) 256);
                        struct drain_sum *ns = realloc(sums, ncap * sizeof(*ns));
                        if (!ns) {
                                r = -ENOMEM;
                                break;
                        }
                        sums = ns;
                        cap = ncap;
                }
                sums[n++] = (struct drain_sum) {
                        .id = sqlite3_column_int64(st, 0),
                        .start_ns = (uint64_t) sqlite3_column_int64(st, 1),
                        .end_ns = (uint64_t) sqlite3_column_int64(st, 2),
                        .hz = (unsigned) sqlite3_column_int64(st, 3),
                };
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "series query");
        sqlite3_finalize(st);
        st = NULL;
        if (r < 0)
                goto out;

        sql_add(&t, "SELECT s.k, s.mask, " SAMPLE_BLOCK_COLUMNS);
        sql_add_filters(&t, q, false);
        r = query_prepare(s, &t, q, &st);
        free(t.buf);
        if (r < 0)
                goto out;
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t key = sqlite3_column_int64(st, 0);
                uint64_t mask = (uint64_t) sqlite3_column_int64(st, 1);
                struct sample_block b;

                if (sample_block_from_row(st, 2, &b) < 0)
                        continue;
                for (size_t i = 0; i < b.n; i++) {
                        struct drain_sum *ds;
                        struct sample_entry e;
                        void *v;

                        sample_block_get(&b, i, &e);
                        if (!entry_in_window(mask, e.span) || !entry_matches(q, &e))
                                continue;
                        ds = bsearch(&(struct drain_sum) { .id = key + e.span }, sums, n, sizeof(*sums), drain_id_cmp);
                        if (!ds)
                                continue;
                        ds->any = true;
                        ds->value += e.value;
                        if (hashmap_get(complete, UINT64_TO_KEY(e.stack_id), &v) >= 0)
                                ds->complete += e.value;
                }
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "series query");
        if (r < 0)
                goto out;
        if (n > 1)
                qsort(sums, n, sizeof(*sums), drain_sum_cmp);
        r = drain_sums_weigh(q, sums, n);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                if (!sums[i].any) /* nothing the query selects */
                        continue;
                r = fn(sums[i].start_ns, sums[i].end_ns, sums[i].value, sums[i].complete, userdata);
                if (r < 0)
                        break;
        }
out:
        sqlite3_finalize(st);
        sqlite3_finalize(cst);
        cst = NULL;
        hashmap_free(complete);
        /* a read transaction left open would pin this connection's
         * snapshot for every later query */
        if (began && !sqlite3_get_autocommit(s->d.handle) && db_exec(&s->d, "COMMIT") < 0)
                (void) db_exec(&s->d, "ROLLBACK");
        return r;
}

int store_query_drops(store *s, const struct store_query *q, store_drop_fn fn, void *userdata) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        /* the same drains as the query's samples (sql_add_filters) */
        rc = sqlite3_prepare_v2(s->d.handle, q->drain_id > 0 ?
                                "SELECT x.reason, sum(x.count) FROM drops x WHERE x.drain_id = :drain "
                                "GROUP BY x.reason ORDER BY x.reason" :
                                "SELECT x.reason, sum(x.count) FROM drains d CROSS JOIN drops x ON x.drain_id = d.id "
                                "WHERE d.end_ns >= :from AND d.start_ns <= :to GROUP BY x.reason ORDER BY x.reason",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "drops query");
        bind_i64(st, ":drain", q->drain_id);
        bind_i64(st, ":from", (int64_t) q->from_ns);
        bind_i64(st, ":to", (int64_t) q->to_ns);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = fn((const char *) sqlite3_column_text(st, 0), (uint64_t) sqlite3_column_int64(st, 1), userdata);
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "drops query");
        sqlite3_finalize(st);
        return r;
}

int store_last_drain(store *s, int64_t *ret_id, uint64_t *ret_start_ns, uint64_t *ret_end_ns) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(s->d.handle, "SELECT id, start_ns, end_ns FROM drains ORDER BY end_ns DESC, id DESC LIMIT 1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "last drain lookup");
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *ret_id = sqlite3_column_int64(st, 0);
                *ret_start_ns = (uint64_t) sqlite3_column_int64(st, 1);
                *ret_end_ns = (uint64_t) sqlite3_column_int64(st, 2);
        } else
                r = rc == SQLITE_DONE ? -ENOENT : db_fail(&s->d, rc, "last drain lookup");
        sqlite3_finalize(st);
        return r;
}

static int query_u64(store *s, const char *sql, uint64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->d.handle, sql, -1, &st, NULL);

        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "status query");
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(&s->d, rc, "status query");
}

static int store_read_stats(store *s, struct store_stats *ret) {
        struct store_stats st = {};
        sqlite3_stmt *q = NULL;
        struct stat sb;
        char wal[4096];
        int rc, r;

        if ((r = query_u64(s, "SELECT count(*) FROM drains", &st.drains)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(samples), 0) FROM drains", &st.samples)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM stacks", &st.stacks)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM processes", &st.processes)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(max(end_ns), 0) FROM drains", &st.last_drain_ns)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM timeline_blocks", &st.timeline_blocks)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(length(data)), 0) FROM timeline_blocks", &st.timeline_bytes)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(n), 0) FROM timeline_blocks", &st.timeline_samples)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(min(start_ns), 0) FROM timeline_blocks", &st.timeline_oldest_ns)) < 0 ||
            (r = query_u64(s, "SELECT count(*) FROM offcpu_timeline", &st.offtime_rows)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(length(data)), 0) FROM offcpu_timeline", &st.offtime_bytes)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(sum(n), 0) FROM offcpu_timeline", &st.offtime_blocks)) < 0 ||
            (r = query_u64(s, "SELECT coalesce(min(start_ns), 0) FROM offcpu_timeline", &st.offtime_oldest_ns)) < 0)
                return r;
        if (stat(s->path, &sb) == 0)
                st.file_bytes += sb.st_size;
        snprintf(wal, sizeof(wal), "%s-wal", s->path);
        if (stat(wal, &sb) == 0)
                st.file_bytes += sb.st_size;

        rc = sqlite3_prepare_v2(s->d.handle, "SELECT reason, sum(count) FROM drops GROUP BY reason ORDER BY reason",
                                -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_fail(&s->d, rc, "status query");
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                struct store_drop_total *nd = realloc(st.drops, (st.n_drops + 1) * sizeof(*nd));
                if (!nd) {
                        r = -ENOMEM;
                        break;
                }
                st.drops = nd;
                nd[st.n_drops].reason = strdup((const char *) sqlite3_column_text(q, 0));
                nd[st.n_drops].count = (uint64_t) sqlite3_column_int64(q, 1);
                if (!nd[st.n_drops].reason) {
                        r = -ENOMEM;
                        break;
                }
                st.n_drops++;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = db_fail(&s->d, rc, "status query");
        sqlite3_finalize(q);
        if (r < 0) {
                store_stats_done(&st);
                return r;
        }
        *ret = st;
        return 0;
}

int store_get_stats(store *s, struct store_stats *ret) {
        int r = store_read_stats(s, ret);

        /* The counts read every page of the smallest index of stacks and
         * processes (the stacks' hash index: 7.4 MiB after 20 minutes of a
         * build host), and the connection's page cache kept what it read
         * until the next status: at least its 2 MiB, and 7.5 MiB of
         * SQLite's allocations under these counts in a heaptrack of a
         * daemon polled every 10 s on a build host. Nothing else on this
         * connection needs those pages. */
        store_release_memory(s);
        return r;
}

void store_stats_done(struct store_stats *st) {
        for (size_t i = 0; i < st->n_drops; i++)
                free(st->drops[i].reason);
        free(st->drops);
        *st = (struct store_stats) {};
}

