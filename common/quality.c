/* The quality report's names, its JSON form and profctl's summary line. */
#include "quality.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

const struct quality_name quality_truncated_names[_QUALITY_TRUNC_MAX] = {
        [QUALITY_TRUNC_NO_TABLE] = { "no_table", "no table yet" },
        [QUALITY_TRUNC_NO_MAPPING] = { "no_mapping", "no mapping" },
        [QUALITY_TRUNC_UNSUPPORTED] = { "unsupported", "unsupported" },
        [QUALITY_TRUNC_READ_FAULT] = { "read_fault", "read fault" },
        [QUALITY_TRUNC_DEPTH] = { "depth", "depth" },
        [QUALITY_TRUNC_FP_END] = { "fp_end", "frame pointer ended" },
        [QUALITY_TRUNC_CFA_STUCK] = { "cfa_stuck", "stack did not grow" },
        [QUALITY_TRUNC_STACK_LOST] = { "stack_lost", "stack lost" },
};

const struct quality_name quality_unresolved_names[_QUALITY_UNRES_MAX] = {
        [QUALITY_UNRES_NO_SYMBOLS] = { "no_symbols", "no symbols" },
        [QUALITY_UNRES_NO_FILE] = { "no_file", "no file" },
        [QUALITY_UNRES_JIT_WITHOUT_MAP] = { "jit_without_map", "JIT without map" },
        [QUALITY_UNRES_UNKNOWN_MAPPING] = { "unknown_mapping", "unknown mapping" },
        [QUALITY_UNRES_PYTHON_NO_RUNTIME] = { "python_no_runtime", "Python: no runtime" },
        [QUALITY_UNRES_PYTHON_EXITED] = { "python_exited", "Python: exited before read" },
        [QUALITY_UNRES_PYTHON_READ_CODE] = { "python_read_code", "Python: code unreadable" },
        [QUALITY_UNRES_PYTHON_NOT_CODE] = { "python_not_code", "Python: not code" },
        [QUALITY_UNRES_PYTHON_READ_STRING] = { "python_read_string", "Python: name unreadable" },
        [QUALITY_UNRES_PYTHON_BAD_STRING] = { "python_bad_string", "Python: bad name" },
        [QUALITY_UNRES_HOTSPOT_NO_RUNTIME] = { "hotspot_no_runtime", "Java: no runtime" },
        [QUALITY_UNRES_HOTSPOT_EXITED] = { "hotspot_exited", "Java: exited before read" },
        [QUALITY_UNRES_HOTSPOT_READ] = { "hotspot_read", "Java: unreadable" },
        [QUALITY_UNRES_HOTSPOT_BAD] = { "hotspot_bad", "Java: not a method" },
        [QUALITY_UNRES_HOTSPOT_NO_SCOPE] = { "hotspot_no_scope", "Java: inlined calls unknown" },
        [QUALITY_UNRES_UNKNOWN] = { "unknown", "reason not recorded" },
};

/* keys: the drop reasons as the store and `profctl status` name them */
const struct quality_name quality_lost_names[_QUALITY_LOST_MAX] = {
        [QUALITY_LOST_MAP_FULL] = { "map_full", "map full" },
        [QUALITY_LOST_STACK_MAP_FULL] = { "stack_map_full", "stack map full" },
        [QUALITY_LOST_USER_STACK_ERROR] = { "user_stack_error", "user stack error" },
        [QUALITY_LOST_KERNEL_STACK_ERROR] = { "kernel_stack_error", "kernel stack error" },
        [QUALITY_LOST_RINGBUF_FULL] = { "ringbuf_full", "ring buffer full" },
        [QUALITY_LOST_TASK_STORAGE_FULL] = { "task_storage_full", "task storage full" },
        [QUALITY_LOST_PROCESS_VANISHED] = { "process_vanished", "process vanished" },
        [QUALITY_LOST_STORE_WRITE_FAILED] = { "store_write_failed", "store write failed" },
        [QUALITY_LOST_SWITCH_MISSED] = { "switch_missed", "switch missed" },
};

uint64_t quality_truncated_total(const struct quality *q) {
        uint64_t t = 0;

        for (size_t i = 0; i < _QUALITY_TRUNC_MAX; i++)
                t += q->truncated[i];
        return t;
}

void quality_add(struct quality *into, const struct quality *q) {
        into->total += q->total;
        into->complete += q->complete;
        into->unknown += q->unknown;
        for (size_t i = 0; i < _QUALITY_TRUNC_MAX; i++)
                into->truncated[i] += q->truncated[i];
        into->unresolved += q->unresolved;
        for (size_t i = 0; i < _QUALITY_UNRES_MAX; i++)
                into->unresolved_by[i] += q->unresolved_by[i];
        for (size_t i = 0; i < _QUALITY_LOST_MAX; i++)
                into->lost[i] += q->lost[i];
        into->partial = into->partial || q->partial;
}

int quality_by_host_check(const json_t *o) {
        const char *host;
        json_t *v;

        if (!json_is_object(o))
                return -EBADMSG;
        json_object_foreach((json_t *) o, host, v) {
                struct quality q;

                if (quality_from_json(v, &q) < 0)
                        return -EBADMSG;
        }
        return 0;
}

static json_t *counts_to_json(const struct quality_name *names, const uint64_t *v, size_t n) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < n; i++)
                if (json_object_set_new(o, names[i].key, json_integer((json_int_t) v[i])) < 0) {
                        json_decref(o);
                        return NULL;
                }
        return o;
}

json_t *quality_to_json(const struct quality *q) {
        /* every key always: a reader sees a 0, not a missing field */
        return json_pack("{s:b, s:I, s:I, s:I, s:I, s:o*, s:I, s:o*, s:o*}",
                         "partial", q->partial,
                         "total", (json_int_t) q->total,
                         "complete", (json_int_t) q->complete,
                         "unknown", (json_int_t) q->unknown,
                         "truncated_total", (json_int_t) quality_truncated_total(q),
                         "truncated", counts_to_json(quality_truncated_names, q->truncated, _QUALITY_TRUNC_MAX),
                         "unresolved", (json_int_t) q->unresolved,
                         "unresolved_by", counts_to_json(quality_unresolved_names, q->unresolved_by, _QUALITY_UNRES_MAX),
                         "lost", counts_to_json(quality_lost_names, q->lost, _QUALITY_LOST_MAX));
}

static int get_u64(const json_t *o, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(o, key);

        if (!v) {
                *ret = 0;
                return 0;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

static int counts_from_json(const json_t *o, const struct quality_name *names, uint64_t *v, size_t n) {
        if (o && !json_is_object(o))
                return -EBADMSG;
        for (size_t i = 0; i < n; i++)
                if (get_u64(o, names[i].key, &v[i]) < 0)
                        return -EBADMSG;
        return 0;
}

int quality_from_json(const json_t *o, struct quality *ret) {
        struct quality q = {};

        if (!json_is_object(o))
                return -EBADMSG;
        if (json_object_get(o, "partial") && !json_is_boolean(json_object_get(o, "partial")))
                return -EBADMSG;
        q.partial = json_is_true(json_object_get(o, "partial"));
        if (get_u64(o, "total", &q.total) < 0 || get_u64(o, "complete", &q.complete) < 0 ||
            get_u64(o, "unknown", &q.unknown) < 0 || get_u64(o, "unresolved", &q.unresolved) < 0 ||
            counts_from_json(json_object_get(o, "truncated"), quality_truncated_names, q.truncated,
                             _QUALITY_TRUNC_MAX) < 0 ||
            counts_from_json(json_object_get(o, "unresolved_by"), quality_unresolved_names, q.unresolved_by,
                             _QUALITY_UNRES_MAX) < 0 ||
            counts_from_json(json_object_get(o, "lost"), quality_lost_names, q.lost, _QUALITY_LOST_MAX) < 0)
                return -EBADMSG;
        *ret = q;
        return 0;
}

/* A growing string; on out of memory it is freed and stays NULL. */
struct text {
        char *s;
        size_t len;
        bool oom;
};

static void text_add(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void text_add(struct text *t, const char *fmt, ...) {
        char *n = NULL;
        va_list ap;
        int k;

        if (t->oom)
                return;
        va_start(ap, fmt);
        k = vasprintf(&n, fmt, ap);
        va_end(ap);
        if (k >= 0) {
                char *g = realloc(t->s, t->len + (size_t) k + 1);
                if (g) {
                        memcpy(g + t->len, n, (size_t) k + 1);
                        t->s = g;
                        t->len += (size_t) k;
                        free(n);
                        return;
                }
                free(n);
        }
        t->oom = true;
        free(t->s);
        t->s = NULL;
}

/* "12.3%" of total; "<0.1%" when not 0 but below what one decimal shows. */
static void text_share(struct text *t, uint64_t part, uint64_t total) {
        double pct = total ? 100.0 * (double) part / (double) total : 0;

        if (part > 0 && pct < 0.05)
                text_add(t, "<0.1%%");
        else
                text_add(t, "%.1f%%", pct);
}

/* " (a 1.2%, b 0.3%)" for the non-zero parts. */
static void text_parts(struct text *t, const struct quality_name *names, const uint64_t *v, size_t n,
                       uint64_t total) {
        bool any = false;

        for (size_t i = 0; i < n; i++) {
                if (v[i] == 0)
                        continue;
                text_add(t, "%s%s ", any ? ", " : " (", names[i].label);
                text_share(t, v[i], total);
                any = true;
        }
        if (any)
                text_add(t, ")");
}

char *quality_summary(const struct quality *q) {
        struct text t = {};
        uint64_t truncated = quality_truncated_total(q);
        bool any_lost = false;

        text_add(&t, "quality: ");
        if (q->total == 0)
                text_add(&t, "no samples");
        else if (q->partial) {
                text_share(&t, q->complete, q->total);
                text_add(&t, " complete stacks; ");
                text_share(&t, q->total - q->complete, q->total);
                text_add(&t, " not complete (profctl query --quality tells why)");
        } else {
                text_share(&t, q->complete, q->total);
                text_add(&t, " complete stacks; ");
                text_share(&t, truncated, q->total);
                text_add(&t, " truncated");
                text_parts(&t, quality_truncated_names, q->truncated, _QUALITY_TRUNC_MAX, q->total);
                if (q->unknown > 0) {
                        text_add(&t, "; ");
                        text_share(&t, q->unknown, q->total);
                        text_add(&t, " end not recorded");
                }
                text_add(&t, "; ");
                text_share(&t, q->unresolved, q->total);
                text_add(&t, " unresolved");
                text_parts(&t, quality_unresolved_names, q->unresolved_by, _QUALITY_UNRES_MAX, q->total);
        }
        text_add(&t, "; lost: ");
        for (size_t i = 0; i < _QUALITY_LOST_MAX; i++) {
                if (q->lost[i] == 0)
                        continue;
                text_add(&t, "%s%s %" PRIu64, any_lost ? ", " : "", quality_lost_names[i].label, q->lost[i]);
                any_lost = true;
        }
        text_add(&t, any_lost ? " (host-wide)" : "none");
        return t.s;
}
