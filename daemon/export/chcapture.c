/* Captures as ClickHouse rows, and what ClickHouse holds (see chcapture.h). */
#include "chcapture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "macro.h"

const char chcapture_insert[] =
        "INSERT INTO profd.captures (host, id, state, day, time, trigger_ns, from_ns, to_ns, cause, origin, uid, "
        "value_centi, pinned_bytes) FORMAT TabSeparated";

/* The rows' state column is the store's enum: its values are the schema's. */
_Static_assert(STORE_CAPTURE_ACTIVE == 0 && STORE_CAPTURE_PINNED == 1 && STORE_CAPTURE_UNPINNED == 2,
               "profd.captures.state is 0 active, 1 pinned, 2 unpinned");

static int text(struct chbuf *b, const char *s) {
        return chbuf_append(b, s, strlen(s));
}

/* Numbers and separators, which need no escaping. */
_printf_(2, 3) static int put(struct chbuf *b, const char *fmt, ...) {
        char tmp[160];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(tmp))
                return -EINVAL;
        return chbuf_append(b, tmp, (size_t) n);
}

int chcapture_row(struct chbuf *b, const char *host, const struct store_capture *c) {
        char day[11];
        int r;

        if (c->id < 0 || (unsigned) c->state >= CHCAPTURE_STATES)
                return -EINVAL;
        chbatch_day(c->trigger_ns, day);
        if ((r = chbuf_escaped(b, host)) < 0 ||
            (r = put(b, "\t%" PRId64 "\t%u\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", c->id,
                     (unsigned) c->state, day, (uint64_t) (c->trigger_ns / NSEC_PER_SEC), c->trigger_ns, c->from_ns,
                     c->to_ns)) < 0 ||
            (r = chbuf_escaped(b, c->cause)) < 0 || (r = chbuf_append(b, "\t", 1)) < 0 ||
            (r = chbuf_escaped(b, c->origin)) < 0 ||
            (r = put(b, "\t%" PRIu32 "\t%" PRId64 "\t%" PRIu64 "\n", c->uid,
                     c->has_value ? (int64_t) c->value_centi : (int64_t) -1, c->pinned_bytes)) < 0)
                return r;
        return 0;
}

/* --- what ClickHouse holds ------------------------------------------------------ */

/* Sorted by id: captures come one per cool-down at most, a few hundred a
 * day at the very most, so a sorted array with a binary search is enough. */
struct sent_entry {
        int64_t id;
        unsigned states; /* bit (1 << state) */
};

struct chcapture_sent {
        struct sent_entry *e;
        size_t n, cap;
};

int chcapture_sent_new(chcapture_sent **ret) {
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : -ENOMEM;
}

chcapture_sent *chcapture_sent_free(chcapture_sent *s) {
        if (s)
                free(s->e);
        free(s);
        return NULL;
}

/* The index of id's entry, or where it would go. */
static size_t sent_find(const chcapture_sent *s, int64_t id) {
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->e[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

bool chcapture_sent_has(const chcapture_sent *s, int64_t id, enum store_capture_state state) {
        size_t i = sent_find(s, id);

        return (unsigned) state < CHCAPTURE_STATES && i < s->n && s->e[i].id == id &&
               (s->e[i].states & (1u << state));
}

int chcapture_sent_add(chcapture_sent *s, int64_t id, enum store_capture_state state) {
        size_t i = sent_find(s, id);

        if ((unsigned) state >= CHCAPTURE_STATES)
                return -EINVAL;
        if (i < s->n && s->e[i].id == id) {
                s->e[i].states |= 1u << state;
                return 0;
        }
        if (s->n == s->cap) {
                size_t cap = MAX(s->cap * 2, (size_t) 16);
                struct sent_entry *e = reallocarray(s->e, cap, sizeof(*e));

                if (!e)
                        return -ENOMEM;
                s->e = e;
                s->cap = cap;
        }
        memmove(s->e + i + 1, s->e + i, (s->n - i) * sizeof(*s->e));
        s->e[i] = (struct sent_entry) { .id = id, .states = 1u << state };
        s->n++;
        return 0;
}

int chcapture_lookup_sql(const char *host, const int64_t *ids, size_t n, char **ret) {
        struct chbuf b = {};
        char num[32];
        int r;

        /* host names need no quoting (chbatch_host_name_valid); host and id
         * lead the table's sort key, so the look-up reads few granules */
        r = text(&b, "SELECT DISTINCT id, state FROM profd.captures WHERE host = '");
        if (r >= 0)
                r = chbuf_escaped(&b, host);
        if (r >= 0)
                r = text(&b, "' AND id IN (");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                int len = snprintf(num, sizeof(num), "%s%" PRId64, i ? "," : "", ids[i]);
                r = chbuf_append(&b, num, (size_t) len);
        }
        if (r >= 0)
                r = text(&b, n ? ")" : "-1)"); /* no id is -1: an empty answer */
        if (r < 0) {
                free(b.data);
                return r;
        }
        *ret = b.data;
        return 0;
}

int chcapture_lookup_parse(chcapture_sent *s, char *answer, const char **ret_bad) {
        struct { int64_t id; unsigned state; } *pairs = NULL;
        size_t n = 0, cap = 0;
        char *save = NULL;
        int r = 0;

        *ret_bad = NULL;
        /* all lines checked before any is added: a bad answer adds nothing */
        for (char *line = answer ? strtok_r(answer, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
                char *tab = strchr(line, '\t');
                uint64_t id, state;

                if (!tab) {
                        *ret_bad = line;
                        r = -EBADMSG;
                        break;
                }
                *tab = '\0';
                if (parse_uint_strict(line, INT64_MAX, &id) < 0 ||
                    parse_uint_strict(tab + 1, CHCAPTURE_STATES - 1, &state) < 0) {
                        *tab = '\t';
                        *ret_bad = line;
                        r = -EBADMSG;
                        break;
                }
                if (n == cap) {
                        size_t c = MAX(cap * 2, (size_t) 16);
                        void *p = reallocarray(pairs, c, sizeof(*pairs));

                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        pairs = p;
                        cap = c;
                }
                pairs[n].id = (int64_t) id;
                pairs[n++].state = (unsigned) state;
        }
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = chcapture_sent_add(s, pairs[i].id, (enum store_capture_state) pairs[i].state);
        free(pairs);
        return r;
}
