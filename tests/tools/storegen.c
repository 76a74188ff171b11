/* storegen: creates or extends a profd store with known content, through the
 * daemon's own store code, so tests can run `profd --kinds none` on it and
 * check exact answers. The input format is in tests/tools/README.md:
 *
 *   storegen [--now TIME] STORE < spec.jsonl
 *
 * One JSON object per line (blank lines and lines starting with '#' are
 * skipped):
 *   {"ago_s": 30, "interval_s": 10, "kind": "cpu", "state": "S",
 *    "pid": 100, "tid": 100, "comm": "app", "exe": "/usr/bin/app", "uid": 1000,
 *    "cgroup": "/system.slice/app.service", "value": 120,
 *    "stack": [{"name": "main", "module": "/usr/bin/app", ...}, ...]}
 * or a drain's drops: {"ago_s": 30, "drops": {"map_full": 12}}.
 * Every field is checked; an unknown one is an error naming the line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../bpf/profd.h"
#include "helpers.h"
#include "macro.h"
#include "store.h"
#include "timestamp.h"

/* A drain is 10 s unless a line says otherwise: profd's default interval. */
#define DEFAULT_INTERVAL_S 10.0

struct line {
        unsigned lineno;
        double ago_s, interval_s;
        json_t *obj;
};

static int fail(unsigned lineno, const char *fmt, ...) _printf_(2, 3);
static int fail(unsigned lineno, const char *fmt, ...) {
        va_list ap;

        if (lineno)
                fprintf(stderr, "storegen: line %u: ", lineno);
        else
                fprintf(stderr, "storegen: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return -EINVAL;
}

static bool only_keys(json_t *o, const char *const *keys, unsigned lineno, const char *what) {
        const char *key;
        json_t *v;

        json_object_foreach(o, key, v) {
                bool known = false;
                for (size_t i = 0; keys[i]; i++)
                        known = known || streq(keys[i], key);
                if (!known) {
                        fail(lineno, "unknown field '%s' in %s", key, what);
                        return false;
                }
        }
        return true;
}

static int get_string(json_t *o, const char *key, bool required, const char **ret, unsigned lineno) {
        json_t *v = json_object_get(o, key);

        if (!v) {
                *ret = NULL;
                return required ? fail(lineno, "missing field '%s'", key) : 0;
        }
        if (!json_is_string(v))
                return fail(lineno, "field '%s' must be a string", key);
        *ret = json_string_value(v);
        return 0;
}

static int get_uint(json_t *o, const char *key, bool required, uint64_t max, uint64_t *ret, bool *ret_have,
                    unsigned lineno) {
        json_t *v = json_object_get(o, key);

        if (ret_have)
                *ret_have = v != NULL;
        if (!v)
                return required ? fail(lineno, "missing field '%s'", key) : 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t) json_integer_value(v) > max)
                return fail(lineno, "field '%s' must be an integer from 0 to %" PRIu64, key, max);
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

/* An address: an integer (negative ones are taken as their 64 bits, as
 * profd answers kernel addresses above 2^63), or a "0x..." hex string. */
static int get_address(json_t *o, uint64_t *ret, bool *ret_have, unsigned lineno) {
        json_t *v = json_object_get(o, "address");
        const char *s;
        char *end;

        *ret_have = v != NULL;
        if (!v)
                return 0;
        if (json_is_integer(v)) {
                *ret = (uint64_t) json_integer_value(v);
                return 0;
        }
        s = json_is_string(v) ? json_string_value(v) : "";
        errno = 0;
        *ret = strtoull(s, &end, 16);
        if (strncmp(s, "0x", 2) != 0 || s[2] == '\0' || *end != '\0' || errno != 0)
                return fail(lineno, "field 'address' must be an integer or a hex string such as \"0xffffffff81000000\"");
        return 0;
}

static int get_bool(json_t *o, const char *key, bool *ret, unsigned lineno) {
        json_t *v = json_object_get(o, key);

        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return fail(lineno, "field '%s' must be true or false", key);
        *ret = json_is_true(v);
        return 0;
}

static int get_seconds(json_t *o, const char *key, double def, double *ret, unsigned lineno) {
        json_t *v = json_object_get(o, key);

        if (!v) {
                *ret = def;
                return 0;
        }
        if (!json_is_number(v) || json_number_value(v) < 0 || !isfinite(json_number_value(v)))
                return fail(lineno, "field '%s' must be a number of seconds >= 0", key);
        *ret = json_number_value(v);
        return 0;
}

/* FNV-1a, for default addresses that stay the same from run to run. */
static uint64_t fnv(uint64_t h, const char *s) {
        for (; s && *s; s++)
                h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
        return (h ^ 0xff) * 0x100000001b3ULL;
}

/* One location being built from a frame and the inlined frames after it. */
struct loc {
        struct store_frame frame;
        struct store_line *lines;
        size_t n_lines;
        bool explicit_address;
        uint64_t hash; /* of everything at the location, for a default address */
};

static void locs_free(struct loc *locs, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(locs[i].lines);
        free(locs);
}

/* Turns a line's "stack" into store frames: a frame with "inlined": true is
 * an inlined call inside the frame before it, so it joins that frame's
 * location (the same address), as profd's symbolizer stores inline chains. */
static int build_stack(json_t *stack, uint32_t pid, uint64_t start_ns, unsigned lineno, struct loc **ret,
                       size_t *ret_n) {
        static const char *const frame_keys[] = { "name", "module", "build_id", "file", "line", "address",
                                                  "kernel", "inlined", "jit", "resolved", "raw_name",
                                                  "unresolved", NULL };
        /* enum store_unresolved, by the names of the quality report */
        static const char *const unresolved_names[] = {
                [STORE_UNRESOLVED_NO_SYMBOLS] = "no_symbols",
                [STORE_UNRESOLVED_NO_FILE] = "no_file",
                [STORE_UNRESOLVED_JIT_WITHOUT_MAP] = "jit_without_map",
                [STORE_UNRESOLVED_UNKNOWN_MAPPING] = "unknown_mapping",
                [STORE_UNRESOLVED_PYTHON_NO_RUNTIME] = "python_no_runtime",
                [STORE_UNRESOLVED_PYTHON_EXITED] = "python_exited",
                [STORE_UNRESOLVED_PYTHON_READ_CODE] = "python_read_code",
                [STORE_UNRESOLVED_PYTHON_NOT_CODE] = "python_not_code",
                [STORE_UNRESOLVED_PYTHON_READ_STRING] = "python_read_string",
                [STORE_UNRESOLVED_PYTHON_BAD_STRING] = "python_bad_string",
                [STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME] = "hotspot_no_runtime",
                [STORE_UNRESOLVED_HOTSPOT_EXITED] = "hotspot_exited",
                [STORE_UNRESOLVED_HOTSPOT_READ] = "hotspot_read",
                [STORE_UNRESOLVED_HOTSPOT_BAD] = "hotspot_bad",
                [STORE_UNRESOLVED_HOTSPOT_NO_SCOPE] = "hotspot_no_scope",
        };
        struct loc *locs = NULL;
        size_t n = 0, i;
        json_t *f;
        int r = 0;

        if (!json_is_array(stack) || json_array_size(stack) == 0)
                return fail(lineno, "field 'stack' must be a non-empty array of frames, root first");
        locs = calloc(json_array_size(stack), sizeof(*locs));
        if (!locs)
                return -ENOMEM;
        json_array_foreach(stack, i, f) {
                const char *name, *module, *build_id, *file, *raw_name, *why;
                enum store_unresolved unresolved = STORE_UNRESOLVED_NONE;
                bool kernel = false, inlined = false, jit = false, resolved = true, have_address;
                uint64_t address = 0, line = 0;
                struct store_line *nl;
                struct loc *l;

                if (!json_is_object(f)) {
                        r = fail(lineno, "frame %zu is not an object", i);
                        break;
                }
                if (!only_keys(f, frame_keys, lineno, "a frame")) {
                        r = -EINVAL;
                        break;
                }
                if ((r = get_string(f, "name", true, &name, lineno)) < 0 ||
                    (r = get_string(f, "module", true, &module, lineno)) < 0 ||
                    (r = get_string(f, "build_id", false, &build_id, lineno)) < 0 ||
                    (r = get_string(f, "file", false, &file, lineno)) < 0 ||
                    (r = get_string(f, "raw_name", false, &raw_name, lineno)) < 0 ||
                    (r = get_string(f, "unresolved", false, &why, lineno)) < 0 ||
                    (r = get_uint(f, "line", false, UINT32_MAX, &line, NULL, lineno)) < 0 ||
                    (r = get_address(f, &address, &have_address, lineno)) < 0 ||
                    (r = get_bool(f, "kernel", &kernel, lineno)) < 0 ||
                    (r = get_bool(f, "inlined", &inlined, lineno)) < 0 ||
                    (r = get_bool(f, "jit", &jit, lineno)) < 0 ||
                    (r = get_bool(f, "resolved", &resolved, lineno)) < 0)
                        break;
                if (why) {
                        for (size_t k = 1; k < ELEMENTSOF(unresolved_names); k++)
                                if (streq(why, unresolved_names[k]))
                                        unresolved = (enum store_unresolved) k;
                        /* hotspot_no_scope: a Java frame named after its
                         * method alone, the one reason stored on a frame
                         * with a function (common/protocol.h) */
                        bool named = unresolved == STORE_UNRESOLVED_HOTSPOT_NO_SCOPE;

                        if (unresolved == STORE_UNRESOLVED_NONE || kernel ||
                            (!named && json_is_true(json_object_get(f, "resolved"))) ||
                            (named && json_is_false(json_object_get(f, "resolved")))) {
                                r = fail(lineno, "frame %zu: 'unresolved' is why a user frame has no function: "
                                                 "no_symbols, no_file, jit_without_map or unknown_mapping "
                                                 "(and not \"resolved\": true), or hotspot_no_scope on a "
                                                 "named Java frame", i);
                                break;
                        }
                        resolved = named;
                }
                if (jit && !streq(module, "[jit]")) {
                        r = fail(lineno, "frame %zu: JIT frames are in module \"[jit]\", as profd stores them", i);
                        break;
                }
                if (inlined) {
                        if (n == 0 || !streq(locs[n - 1].frame.module, module)) {
                                r = fail(lineno, "frame %zu: an inlined frame follows a frame of the same module "
                                                 "(its caller)", i);
                                break;
                        }
                        if (have_address || build_id || kernel != locs[n - 1].frame.kernel) {
                                r = fail(lineno, "frame %zu: an inlined frame shares its caller's address, "
                                                 "build_id and kernel flag; give them on the caller", i);
                                break;
                        }
                        l = &locs[n - 1];
                } else {
                        static char jit_tag[64];
                        l = &locs[n++];
                        if (jit && !build_id) {
                                /* what the writer tags a process's JIT code with */
                                snprintf(jit_tag, sizeof(jit_tag), "jit-%" PRIu32 "-%" PRIu64 "-0", pid, start_ns);
                                build_id = jit_tag;
                        }
                        l->frame = (struct store_frame) {
                                .module = module,
                                .build_id = build_id ? strdup(build_id) : NULL,
                                .address = address,
                                .function = resolved ? name : NULL,
                                .raw_function = raw_name,
                                .kernel = kernel,
                                .unresolved = unresolved,
                        };
                        l->explicit_address = have_address;
                        l->hash = fnv(fnv(0xcbf29ce484222325ULL, module), build_id);
                        if (build_id && !l->frame.build_id) {
                                r = -ENOMEM;
                                break;
                        }
                }
                {
                        char num[32];
                        snprintf(num, sizeof(num), "%" PRIu64 "%s", line, resolved ? "" : "?");
                        l->hash = fnv(fnv(fnv(fnv(l->hash, name), file), raw_name), num);
                }
                if (!resolved && (inlined || file || line)) {
                        r = fail(lineno, "frame %zu: an unresolved frame has no function, so no file, line or "
                                         "inlined calls", i);
                        break;
                }
                /* no lines at all when nothing says where in the source */
                if (inlined || file || line || l->n_lines > 0) {
                        if (l->n_lines == 0 && inlined) {
                                r = fail(lineno, "frame %zu: give the caller of an inlined frame a file or line", i);
                                break;
                        }
                        nl = realloc(l->lines, (l->n_lines + 1) * sizeof(*nl));
                        if (!nl) {
                                r = -ENOMEM;
                                break;
                        }
                        l->lines = nl;
                        l->lines[l->n_lines++] = (struct store_line) {
                                .function = name, .raw_function = raw_name, .file = file,
                                .line = (unsigned) line, .inlined = inlined,
                        };
                }
        }
        if (r < 0) {
                for (size_t k = 0; k < n; k++)
                        free((char *) locs[k].frame.build_id);
                locs_free(locs, n);
                return r;
        }
        /* the store wants each inline chain innermost first */
        for (size_t k = 0; k < n; k++) {
                struct loc *l = &locs[k];
                for (size_t a = 0, b = l->n_lines ? l->n_lines - 1 : 0; a < b; a++, b--) {
                        struct store_line t = l->lines[a];
                        l->lines[a] = l->lines[b];
                        l->lines[b] = t;
                }
                l->frame.lines = l->lines;
                l->frame.n_lines = l->n_lines;
                /* Locations are (module, address): the same frame (with the
                 * same inlined calls) gets the same address in every run,
                 * and different frames different ones. */
                if (!l->explicit_address)
                        l->frame.address = 0x1000 + (l->hash & 0xfffffff0ULL);
        }
        *ret = locs;
        *ret_n = n;
        return 0;
}

static int parse_state(const char *s, int kind, int *ret, unsigned lineno) {
        static const char letters[] = "RSDTI";
        const char *p;

        if (kind == PROFD_KIND_CPU) {
                if (s)
                        return fail(lineno, "field 'state' is for kinds offcpu and wakeup");
                *ret = PROFD_STATE_NONE;
                return 0;
        }
        if (!s) {
                *ret = PROFD_STATE_SLEEPING;
                return 0;
        }
        p = strchr(letters, s[0]);
        if (!p || s[0] == '\0' || s[1] != '\0')
                return fail(lineno, "field 'state' must be one of R, S, D, T, I");
        *ret = PROFD_STATE_RUNNING + (int) (p - letters);
        return 0;
}

/* How a sample's user stack ended ("end"): stacks.user_end by name. */
static int parse_end(const char *s, int *ret, unsigned lineno) {
        static const struct {
                const char *name;
                int end;
        } ends[] = {
                { "complete", PROFD_END_COMPLETE },       { "no_process", PROFD_END_NO_PROCESS },
                { "pending", PROFD_END_PENDING },         { "no_mapping", PROFD_END_NO_MAPPING },
                { "unsupported", PROFD_END_UNSUPPORTED }, { "read_fault", PROFD_END_READ_FAULT },
                { "depth", PROFD_END_DEPTH },             { "fp_end", PROFD_END_FP_END },
                { "cfa_stuck", PROFD_END_CFA_STUCK },     { "lost", STORE_END_LOST },
                { "unknown", STORE_END_UNKNOWN },
        };

        *ret = PROFD_END_COMPLETE;
        if (!s)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(ends); i++)
                if (streq(s, ends[i].name)) {
                        *ret = ends[i].end;
                        return 0;
                }
        return fail(lineno, "field 'end' must be complete, no_process, pending, no_mapping, unsupported, "
                            "read_fault, depth, fp_end, cfa_stuck, lost or unknown");
}

/* A line of drops: {"ago_s": ..., "drops": {"reason": count, ...}}. Checks
 * it and, with a store, adds the counts to the open drain. */
static int add_drops(store *st, const struct line *ln) {
        static const char *const keys[] = { "ago_s", "interval_s", "drops", NULL };
        json_t *drops = json_object_get(ln->obj, "drops"), *v;
        const char *reason;
        int r;

        if (!only_keys(ln->obj, keys, ln->lineno, "a drops line"))
                return -EINVAL;
        if (!json_is_object(drops))
                return fail(ln->lineno, "field 'drops' must be an object of reason: count");
        json_object_foreach(drops, reason, v) {
                if (!json_is_integer(v) || json_integer_value(v) <= 0)
                        return fail(ln->lineno, "drop '%s' must be a count > 0", reason);
                if (st) {
                        r = store_drain_drop(st, reason, (uint64_t) json_integer_value(v));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Checks one line and, with a store, adds its sample to the open drain. */
static int add_sample(store *st, const struct line *ln) {
        static const char *const keys[] = { "ago_s", "interval_s", "kind", "state", "pid", "tid", "start_ns",
                                            "comm", "exe", "uid", "cgroup", "cgroup_id", "peer_tid", "value",
                                            "stack", "end", NULL };
        json_t *o = ln->obj;
        const char *kind_s, *state_s, *comm, *exe, *cgroup, *end_s;
        uint64_t pid, tid = 0, start_ns = 0, uid = 0, cgroup_id = 0, peer_tid = 0, value;
        bool have_tid, have_uid;
        int kind, state = PROFD_STATE_NONE, user_end, r;
        struct loc *locs = NULL;
        struct store_frame *frames = NULL;
        size_t n = 0;

        if (json_object_get(o, "drops"))
                return add_drops(st, ln);
        if (!only_keys(o, keys, ln->lineno, "a sample"))
                return -EINVAL;
        if ((r = get_string(o, "kind", false, &kind_s, ln->lineno)) < 0 ||
            (r = get_string(o, "state", false, &state_s, ln->lineno)) < 0 ||
            (r = get_string(o, "comm", true, &comm, ln->lineno)) < 0 ||
            (r = get_string(o, "exe", false, &exe, ln->lineno)) < 0 ||
            (r = get_string(o, "cgroup", false, &cgroup, ln->lineno)) < 0 ||
            (r = get_string(o, "end", false, &end_s, ln->lineno)) < 0 ||
            (r = get_uint(o, "pid", true, INT32_MAX, &pid, NULL, ln->lineno)) < 0 ||
            (r = get_uint(o, "tid", false, INT32_MAX, &tid, &have_tid, ln->lineno)) < 0 ||
            (r = get_uint(o, "start_ns", false, INT64_MAX, &start_ns, NULL, ln->lineno)) < 0 ||
            (r = get_uint(o, "uid", false, UINT32_MAX - 1, &uid, &have_uid, ln->lineno)) < 0 ||
            (r = get_uint(o, "cgroup_id", false, INT64_MAX, &cgroup_id, NULL, ln->lineno)) < 0 ||
            (r = get_uint(o, "peer_tid", false, INT32_MAX, &peer_tid, NULL, ln->lineno)) < 0 ||
            (r = get_uint(o, "value", true, INT64_MAX, &value, NULL, ln->lineno)) < 0)
                return r;
        if (!kind_s || streq(kind_s, "cpu"))
                kind = PROFD_KIND_CPU;
        else if (streq(kind_s, "offcpu"))
                kind = PROFD_KIND_OFFCPU;
        else if (streq(kind_s, "wakeup"))
                kind = PROFD_KIND_WAKEUP;
        else
                return fail(ln->lineno, "field 'kind' must be cpu, offcpu or wakeup");
        r = parse_state(state_s, kind, &state, ln->lineno);
        if (r < 0)
                return r;
        r = parse_end(end_s, &user_end, ln->lineno);
        if (r < 0)
                return r;
        if (value == 0)
                return fail(ln->lineno, "field 'value' must be > 0: profd stores no empty samples");
        r = build_stack(json_object_get(o, "stack"), (uint32_t) pid, start_ns, ln->lineno, &locs, &n);
        if (r < 0)
                return r;
        frames = calloc(n, sizeof(*frames));
        if (!frames)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                frames[i] = locs[i].frame;
        if (r >= 0 && st) {
                struct store_process p = {
                        .pid = (uint32_t) pid,
                        .start_ns = start_ns,
                        .comm = comm,
                        .exe = exe,
                        .cgroup = cgroup,
                        .uid = (uint32_t) uid,
                        .have_uid = have_uid,
                };
                r = store_drain_add(st, &(struct store_sample) {
                        .process = &p,
                        .tid = (uint32_t) (have_tid ? tid : pid),
                        .cgroup_id = cgroup_id,
                        .kind = kind,
                        .state = state,
                        .peer_tid = (uint32_t) peer_tid,
                        .frames = frames,
                        .n_frames = n,
                        .user_end = user_end,
                        .value = value,
                });
                if (r < 0)
                        fprintf(stderr, "storegen: line %u: storing the sample failed: %s\n", ln->lineno,
                                strerror(-r));
        }
        for (size_t i = 0; i < n; i++)
                free((char *) locs[i].frame.build_id);
        locs_free(locs, n);
        free(frames);
        return r;
}

/* Oldest drain first, so drain ids grow with time as profd's do; lines of a
 * drain keep their order. */
static int line_compare(const void *a, const void *b) {
        const struct line *x = a, *y = b;

        if (x->ago_s != y->ago_s)
                return x->ago_s > y->ago_s ? -1 : 1;
        return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

static void help(void) {
        printf("Usage: storegen [--now TIME] STORE < SPEC.jsonl\n"
               "Creates or extends a profd store with the samples SPEC describes (one JSON\n"
               "object per line; see tests/tools/README.md). Samples with the same ago_s\n"
               "share a drain that ends ago_s seconds before now and lasts interval_s.\n"
               "\n"
               "  --now TIME   RFC 3339 time taken as now (default: the clock)\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "now", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        struct line *lines = NULL;
        size_t n_lines = 0;
        char *buf = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        uint64_t now;
        struct timespec ts;
        store *st = NULL;
        int c, r = 0;

        clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'n':
                        if (parse_timestamp_ns(optarg, &now) < 0) {
                                fprintf(stderr, "storegen: --now: \"%s\" is not an RFC 3339 time\n", optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return 2;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "storegen: expected one argument, the store\nTry 'storegen --help'.\n");
                return 2;
        }

        for (ssize_t len; (len = getline(&buf, &cap, stdin)) >= 0;) {
                json_error_t jerr;
                struct line *nl;
                json_t *o;

                lineno++;
                if (strspn(buf, " \t\r\n") == (size_t) len || buf[0] == '#')
                        continue;
                o = json_loads(buf, JSON_REJECT_DUPLICATES, &jerr);
                if (!o || !json_is_object(o)) {
                        json_decref(o);
                        r = o ? fail(lineno, "not a JSON object") : fail(lineno, "malformed JSON: %s", jerr.text);
                        goto out;
                }
                nl = realloc(lines, (n_lines + 1) * sizeof(*nl));
                if (!nl) {
                        json_decref(o);
                        r = -ENOMEM;
                        goto out;
                }
                lines = nl;
                lines[n_lines] = (struct line) { .lineno = lineno, .obj = o };
                n_lines++;
                if ((r = get_seconds(o, "ago_s", -1, &lines[n_lines - 1].ago_s, lineno)) < 0 ||
                    (r = get_seconds(o, "interval_s", DEFAULT_INTERVAL_S, &lines[n_lines - 1].interval_s, lineno)) < 0)
                        goto out;
                if (lines[n_lines - 1].ago_s < 0) {
                        r = fail(lineno, "missing field 'ago_s'");
                        goto out;
                }
        }
        qsort(lines, n_lines, sizeof(*lines), line_compare);
        /* every line is checked before the store is touched: a bad spec
         * leaves no half-written store behind */
        for (size_t i = 0; i < n_lines; i++) {
                if (i > 0 && lines[i].ago_s == lines[i - 1].ago_s && lines[i].interval_s != lines[i - 1].interval_s) {
                        r = fail(lines[i].lineno, "samples with ago_s %g share a drain, but their interval_s "
                                                  "differ (%g, line %u: %g)", lines[i].ago_s, lines[i].interval_s,
                                 lines[i - 1].lineno, lines[i - 1].interval_s);
                        goto out;
                }
                r = add_sample(NULL, &lines[i]);
                if (r < 0)
                        goto out;
        }

        r = store_open(argv[optind], &st);
        if (r < 0) {
                fprintf(stderr, "storegen: cannot open store %s: %s\n", argv[optind], strerror(-r));
                goto out;
        }
        for (size_t i = 0; i < n_lines;) {
                const struct line *first = &lines[i];
                uint64_t end_ns = now - (uint64_t) llround(first->ago_s * 1e9);
                uint64_t start_ns = end_ns - (uint64_t) llround(first->interval_s * 1e9);

                r = store_drain_begin(st, start_ns, end_ns);
                for (; r >= 0 && i < n_lines && lines[i].ago_s == first->ago_s; i++)
                        r = add_sample(st, &lines[i]);
                if (r >= 0)
                        r = store_drain_commit(st, NULL, NULL, NULL);
                if (r < 0) {
                        store_drain_abort(st);
                        goto out;
                }
        }
out:
        store_close(st);
        for (size_t i = 0; i < n_lines; i++)
                json_decref(lines[i].obj);
        free(lines);
        free(buf);
        if (r == -ENOMEM)
                fprintf(stderr, "storegen: out of memory\n");
        return r < 0 ? 1 : 0;
}
