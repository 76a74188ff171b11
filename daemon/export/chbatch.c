/* A drain as ClickHouse INSERT bodies (see chbatch.h). */
#include "chbatch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hashmap.h"
#include "macro.h"

/* Column lists in the order the rows below are written. */
const char chbatch_insert_samples[] =
        "INSERT INTO profd.samples (host, drain_start, drain_end, time, day, pid, process_start, comm, exe, uid, "
        "cgroup, unit, container, tid, cgroup_id, kind, state, peer_tid, stack, value) FORMAT TabSeparated";
const char chbatch_insert_stacks[] = "INSERT INTO profd.stacks (day, id, frames, user_end) FORMAT TabSeparated";
const char chbatch_insert_frames[] =
        "INSERT INTO profd.frames (day, id, name, raw_name, module, build_id, file, address, line, has_address, "
        "kernel, resolved, inlined, jit, unresolved) FORMAT TabSeparated";
const char chbatch_insert_drops[] =
        "INSERT INTO profd.drops (host, drain_start, drain_end, time, day, reason, value) FORMAT TabSeparated";
const char chbatch_insert_timeline[] =
        "INSERT INTO profd.timeline (host, drain_start, drain_end, day, t, time, pid, process_start, comm, exe, uid, "
        "cgroup, unit, container, tid, stack, frequency_hz, base_hz) FORMAT TabSeparated";

struct chbatch {
        struct chbuf samples, stacks, frames, drops, timeline;
        size_t n_samples, n_stacks, n_frames, n_drops, n_drains, n_ticks;
        char *host;            /* escaped for TabSeparated */
        struct chbuf prefix;   /* host and the drain's columns: every sample row starts so */
        struct chbuf tprefix;  /* host, drain_start, drain_end, day: every timeline row starts so */
        unsigned hz, base_hz;  /* the current drain's raise (chbatch_drain_rate); 0, 0: none */
        char day[11];          /* the batch's */
        char sent_day[11];     /* the day of sent_stacks and sent_frames */
        hashmap *sent_stacks, *sent_frames; /* ids stored in ClickHouse for sent_day */
        hashmap *new_stacks, *new_frames;   /* ids in the current drain's bodies */
        hashmap *memo;         /* the store's stack id -> ours, for the current drain */
        hashmap *procs;        /* the store's process id -> its columns (malloc'd), for the current drain */
        uint64_t *ids;         /* frame ids of the stack being added */
        size_t ids_cap;
};

/* --- buffers ------------------------------------------------------------------- */

static int chbuf_put(struct chbuf *b, const char *s, size_t n) {
        if (b->len + n + 1 > b->cap) {
                size_t cap = MAX(b->cap * 2, b->len + n + 1);
                char *d = realloc(b->data, MAX(cap, (size_t) 4096));
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = MAX(cap, (size_t) 4096);
        }
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

int chbuf_append(struct chbuf *b, const char *s, size_t n) {
        return chbuf_put(b, s, n);
}

static int chbuf_char(struct chbuf *b, char c) {
        return chbuf_put(b, &c, 1);
}

/* v in decimal, then sep (when not '\0'). */
static int chbuf_u64(struct chbuf *b, uint64_t v, char sep) {
        char d[24];
        size_t i = sizeof(d);

        if (sep)
                d[--i] = sep;
        do {
                d[--i] = (char) ('0' + v % 10);
                v /= 10;
        } while (v);
        return chbuf_put(b, d + i, sizeof(d) - i);
}

int chbuf_escaped(struct chbuf *b, const char *s) {
        const char *run = s;
        int r;

        if (!s)
                return 0;
        for (; *s; s++) {
                char esc;

                switch (*s) {
                case '\\': esc = '\\'; break;
                case '\t': esc = 't'; break;
                case '\n': esc = 'n'; break;
                case '\r': esc = 'r'; break;
                case '\b': esc = 'b'; break;
                case '\f': esc = 'f'; break;
                default: continue;
                }
                if ((r = chbuf_put(b, run, (size_t) (s - run))) < 0 || (r = chbuf_char(b, '\\')) < 0 ||
                    (r = chbuf_char(b, esc)) < 0)
                        return r;
                run = s + 1;
        }
        return chbuf_put(b, run, (size_t) (s - run));
}

static int chbuf_field(struct chbuf *b, const char *s) {
        int r = chbuf_escaped(b, s);
        return r < 0 ? r : chbuf_char(b, '\t');
}

/* --- content ids --------------------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
        const unsigned char *p = data;
        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= FNV_PRIME;
        }
        return h;
}

/* A string and its terminating NUL, so ("ab", "c") and ("a", "bc") differ;
 * NULL hashes like "", as ClickHouse stores it. */
static uint64_t fnv_str(uint64_t h, const char *s) {
        return fnv(h, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* Integers little-endian whatever the machine, so ids agree across hosts. */
static uint64_t fnv_u64(uint64_t h, uint64_t v) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
                le[i] = (unsigned char) (v >> (8 * i));
        return fnv(h, le, sizeof(le));
}

/* MurmurHash3's fmix64: FNV's low bits alone mix poorly. */
static uint64_t fmix64(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53ULL;
        k ^= k >> 33;
        return k;
}

static unsigned frame_flags(const struct store_frame_out *f) {
        return (unsigned) f->has_address | (unsigned) f->kernel << 1 | (unsigned) f->resolved << 2 |
               (unsigned) f->inlined << 3 | (unsigned) f->jit << 4;
}

uint64_t chbatch_frame_id(const struct store_frame_out *f) {
        uint64_t h = FNV_OFFSET;

        h = fnv_str(h, f->name);
        h = fnv_str(h, f->raw_name);
        h = fnv_str(h, f->module);
        h = fnv_str(h, f->build_id);
        h = fnv_str(h, f->file);
        h = fnv_u64(h, f->address);
        h = fnv_u64(h, f->line);
        h = fnv_u64(h, frame_flags(f));
        /* version 2's reason, only when known: every other frame keeps
         * its version-1 id, and the rows version 1 sent read as 0 */
        if (f->unresolved)
                h = fnv_u64(h, f->unresolved);
        return fmix64(h);
}

uint8_t chbatch_user_end(int user_end) {
        return user_end >= 0 && user_end < CHBATCH_END_UNKNOWN ? (uint8_t) user_end : CHBATCH_END_UNKNOWN;
}

uint64_t chbatch_stack_id(const uint64_t *frame_ids, size_t n, int user_end) {
        uint64_t h = fnv_u64(FNV_OFFSET, n);

        for (size_t i = 0; i < n; i++)
                h = fnv_u64(h, frame_ids[i]);
        /* always: a version-1 row of the same frames (its end read as
         * unknown) has another id than a stack whose end is known */
        h = fnv_u64(h, chbatch_user_end(user_end));
        return fmix64(h);
}

void chbatch_day(uint64_t ns, char ret[11]) {
        time_t t = (time_t) (ns / NSEC_PER_SEC);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(ret, 11, "%Y-%m-%d", &tm) != 10)
                snprintf(ret, 11, "1970-01-01");
}

/* --- batches ------------------------------------------------------------------- */

static hashmap *set_renew(hashmap *m) {
        hashmap_free(m);
        return hashmap_new_u64();
}

static void procs_free(hashmap *m) {
        void *v;

        for (size_t i = 0; hashmap_iterate(m, &i, NULL, &v);)
                free(v);
        hashmap_free(m);
}

bool chbatch_host_name_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 255)
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") == n;
}

int chbatch_new(chbatch **ret) {
        chbatch *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        b->sent_stacks = hashmap_new_u64();
        b->sent_frames = hashmap_new_u64();
        b->new_stacks = hashmap_new_u64();
        b->new_frames = hashmap_new_u64();
        b->memo = hashmap_new_u64();
        b->procs = hashmap_new_u64();
        if (!b->sent_stacks || !b->sent_frames || !b->new_stacks || !b->new_frames || !b->memo || !b->procs) {
                chbatch_free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

chbatch *chbatch_free(chbatch *b) {
        if (!b)
                return NULL;
        free(b->samples.data);
        free(b->stacks.data);
        free(b->frames.data);
        free(b->drops.data);
        free(b->timeline.data);
        free(b->prefix.data);
        free(b->tprefix.data);
        free(b->host);
        hashmap_free(b->sent_stacks);
        hashmap_free(b->sent_frames);
        hashmap_free(b->new_stacks);
        hashmap_free(b->new_frames);
        hashmap_free(b->memo);
        procs_free(b->procs);
        free(b->ids);
        free(b);
        return NULL;
}

void chbatch_forget(chbatch *b) {
        b->sent_day[0] = '\0';
}

int chbatch_begin(chbatch *b, const char *host) {
        struct chbuf h = {};
        int r;

        b->samples.len = b->stacks.len = b->frames.len = b->drops.len = b->timeline.len = b->prefix.len = 0;
        b->n_samples = b->n_stacks = b->n_frames = b->n_drops = b->n_drains = b->n_ticks = 0;
        b->new_stacks = set_renew(b->new_stacks);
        b->new_frames = set_renew(b->new_frames);
        if (!b->new_stacks || !b->new_frames)
                return -ENOMEM;
        r = chbuf_escaped(&h, host);
        if (r >= 0 && !h.data)
                r = chbuf_put(&h, "", 0);
        if (r < 0) {
                free(h.data);
                return r;
        }
        free(b->host);
        b->host = h.data;
        return 0;
}

int chbatch_drain(chbatch *b, uint64_t start_ns, uint64_t end_ns) {
        char day[11];
        int r;

        chbatch_day(end_ns, day);
        if (b->n_drains > 0 && !streq(day, b->day))
                return -EXDEV;
        if (b->n_drains == 0 && !streq(day, b->sent_day)) {
                b->sent_stacks = set_renew(b->sent_stacks);
                b->sent_frames = set_renew(b->sent_frames);
                memcpy(b->sent_day, day, sizeof(day));
                if (!b->sent_stacks || !b->sent_frames) {
                        b->sent_day[0] = '\0'; /* the sets are not whole: start them over */
                        return -ENOMEM;
                }
        }
        memcpy(b->day, day, sizeof(day));
        /* a store's stack ids mean the same frames within one read */
        b->memo = set_renew(b->memo);
        procs_free(b->procs);
        b->procs = hashmap_new_u64();
        if (!b->memo || !b->procs)
                return -ENOMEM;
        /* host, drain_start, drain_end, time, day */
        b->prefix.len = 0;
        if ((r = chbuf_put(&b->prefix, b->host, strlen(b->host))) < 0 || (r = chbuf_char(&b->prefix, '\t')) < 0 ||
            (r = chbuf_u64(&b->prefix, start_ns, '\t')) < 0 || (r = chbuf_u64(&b->prefix, end_ns, '\t')) < 0 ||
            (r = chbuf_u64(&b->prefix, end_ns / NSEC_PER_SEC, '\t')) < 0 || (r = chbuf_field(&b->prefix, b->day)) < 0)
                return r;
        b->tprefix.len = 0;
        if ((r = chbuf_put(&b->tprefix, b->host, strlen(b->host))) < 0 || (r = chbuf_char(&b->tprefix, '\t')) < 0 ||
            (r = chbuf_u64(&b->tprefix, start_ns, '\t')) < 0 || (r = chbuf_u64(&b->tprefix, end_ns, '\t')) < 0 ||
            (r = chbuf_field(&b->tprefix, b->day)) < 0)
                return r;
        b->hz = b->base_hz = 0;
        b->n_drains++;
        return 0;
}

int chbatch_drain_rate(chbatch *b, unsigned hz, unsigned base_hz) {
        if (b->n_drains == 0)
                return -EINVAL;
        /* one definition of "raised", the exporter's weighting's: a rate
         * unknown (drains before schema 14) or equal to the base is none */
        if (hz == 0 || base_hz == 0 || hz == base_hz)
                hz = base_hz = 0;
        b->hz = hz;
        b->base_hz = base_hz;
        return 0;
}

size_t chbatch_drains(const chbatch *b) {
        return b->n_drains;
}

static bool seen(const hashmap *sent, const hashmap *added, uint64_t id) {
        void *v;
        return hashmap_get(sent, UINT64_TO_KEY(id), &v) >= 0 || hashmap_get(added, UINT64_TO_KEY(id), &v) >= 0;
}

/* day, id, name, raw_name, module, build_id, file, address, line, has_address, kernel, resolved, inlined, jit,
 * unresolved */
static int add_frame(chbatch *b, const struct store_frame_out *f, uint64_t id) {
        struct chbuf *o = &b->frames;
        int r;

        if ((r = chbuf_field(o, b->day)) < 0 || (r = chbuf_u64(o, id, '\t')) < 0 || (r = chbuf_field(o, f->name)) < 0 ||
            (r = chbuf_field(o, f->raw_name)) < 0 || (r = chbuf_field(o, f->module)) < 0 ||
            (r = chbuf_field(o, f->build_id)) < 0 || (r = chbuf_field(o, f->file)) < 0 ||
            (r = chbuf_u64(o, f->address, '\t')) < 0 || (r = chbuf_u64(o, f->line, '\t')) < 0 ||
            (r = chbuf_u64(o, f->has_address, '\t')) < 0 || (r = chbuf_u64(o, f->kernel, '\t')) < 0 ||
            (r = chbuf_u64(o, f->resolved, '\t')) < 0 || (r = chbuf_u64(o, f->inlined, '\t')) < 0 ||
            (r = chbuf_u64(o, f->jit, '\t')) < 0 || (r = chbuf_u64(o, f->unresolved, '\n')) < 0)
                return r;
        b->n_frames++;
        return hashmap_put(b->new_frames, UINT64_TO_KEY(id), NULL);
}

/* day, id, frames, user_end */
static int add_stack(chbatch *b, const uint64_t *ids, size_t n, int user_end, uint64_t id) {
        struct chbuf *o = &b->stacks;
        int r;

        if ((r = chbuf_field(o, b->day)) < 0 || (r = chbuf_u64(o, id, '\t')) < 0 || (r = chbuf_char(o, '[')) < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if ((r = chbuf_u64(o, ids[i], i + 1 < n ? ',' : '\0')) < 0)
                        return r;
        if ((r = chbuf_put(o, "]\t", 2)) < 0 || (r = chbuf_u64(o, chbatch_user_end(user_end), '\n')) < 0)
                return r;
        b->n_stacks++;
        return hashmap_put(b->new_stacks, UINT64_TO_KEY(id), NULL);
}

/* Our id of the sample's stack, its stack and frames added when new. */
static int stack_of(chbatch *b, const struct store_outbox_sample *smp, uint64_t *ret) {
        uint64_t id;
        void *v;
        int r;

        if (hashmap_get(b->memo, UINT64_TO_KEY(smp->stack_id), &v) >= 0) {
                *ret = (uint64_t) (uintptr_t) v;
                return 0;
        }
        if (smp->n_frames > b->ids_cap) {
                size_t cap = MAX(smp->n_frames, b->ids_cap * 2);
                uint64_t *ids = realloc(b->ids, cap * sizeof(*ids));
                if (!ids)
                        return -ENOMEM;
                b->ids = ids;
                b->ids_cap = cap;
        }
        for (size_t i = 0; i < smp->n_frames; i++) {
                b->ids[i] = chbatch_frame_id(&smp->frames[i]);
                if (!seen(b->sent_frames, b->new_frames, b->ids[i]) && (r = add_frame(b, &smp->frames[i], b->ids[i])) < 0)
                        return r;
        }
        id = chbatch_stack_id(b->ids, smp->n_frames, smp->user_end);
        if (!seen(b->sent_stacks, b->new_stacks, id) &&
            (r = add_stack(b, b->ids, smp->n_frames, smp->user_end, id)) < 0)
                return r;
        _Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "ids are kept in pointers");
        r = hashmap_put(b->memo, UINT64_TO_KEY(smp->stack_id), (void *) (uintptr_t) id);
        if (r < 0)
                return r;
        *ret = id;
        return 0;
}

/* The process's columns of a row (pid, process_start, comm, exe, uid,
 * cgroup, unit, container, each followed by a tab), kept for the drain's
 * timeline rows. */
static int process_of(chbatch *b, const struct store_outbox_sample *smp, const char **ret) {
        struct chbuf o = {};
        char uid[16];
        void *v;
        int r;

        if (hashmap_get(b->procs, UINT64_TO_KEY((uint64_t) smp->process_id), &v) >= 0) {
                *ret = v;
                return 0;
        }
        if (smp->have_uid)
                snprintf(uid, sizeof(uid), "%" PRIu32 "\t", smp->uid);
        else
                snprintf(uid, sizeof(uid), "-1\t");
        if ((r = chbuf_u64(&o, smp->pid, '\t')) < 0 || (r = chbuf_u64(&o, smp->process_start_ns, '\t')) < 0 ||
            (r = chbuf_field(&o, smp->comm)) < 0 || (r = chbuf_field(&o, smp->exe)) < 0 ||
            (r = chbuf_put(&o, uid, strlen(uid))) < 0 || (r = chbuf_field(&o, smp->cgroup)) < 0 ||
            (r = chbuf_field(&o, smp->unit)) < 0 || (r = chbuf_field(&o, smp->container)) < 0 ||
            (r = hashmap_put(b->procs, UINT64_TO_KEY((uint64_t) smp->process_id), o.data)) < 0) {
                free(o.data);
                return r;
        }
        *ret = o.data;
        return 0;
}

/* prefix (host .. day), pid, process_start, comm, exe, uid, cgroup, unit,
 * container, tid, cgroup_id, kind, state, peer_tid, stack, value */
int chbatch_add(chbatch *b, const struct store_outbox_sample *smp) {
        struct chbuf *o = &b->samples;
        const char *proc;
        uint64_t stack;
        int r;

        if ((r = stack_of(b, smp, &stack)) < 0 || (r = process_of(b, smp, &proc)) < 0)
                return r;
        if ((r = chbuf_put(o, b->prefix.data, b->prefix.len)) < 0 || (r = chbuf_put(o, proc, strlen(proc))) < 0 ||
            (r = chbuf_u64(o, smp->tid, '\t')) < 0 ||
            (r = chbuf_u64(o, smp->cgroup_id, '\t')) < 0 || (r = chbuf_u64(o, (uint64_t) smp->kind, '\t')) < 0 ||
            (r = chbuf_u64(o, (uint64_t) smp->state, '\t')) < 0 || (r = chbuf_u64(o, smp->peer_tid, '\t')) < 0 ||
            (r = chbuf_u64(o, stack, '\t')) < 0 || (r = chbuf_u64(o, smp->value, '\n')) < 0)
                return r;
        b->n_samples++;
        return 0;
}

/* tprefix (host, drain_start, drain_end, day), t, time, the process's
 * columns (pid .. container), tid, stack, frequency_hz, base_hz */
int chbatch_tick(chbatch *b, const struct store_outbox_tick *t) {
        struct chbuf *o = &b->timeline;
        void *proc, *stack;
        int r;

        if (b->n_drains == 0)
                return -EINVAL;
        if (hashmap_get(b->procs, UINT64_TO_KEY((uint64_t) t->process_id), &proc) < 0 ||
            hashmap_get(b->memo, UINT64_TO_KEY(t->stack_id), &stack) < 0)
                return -ENOENT;
        if ((r = chbuf_put(o, b->tprefix.data, b->tprefix.len)) < 0 || (r = chbuf_u64(o, t->time_ns, '\t')) < 0 ||
            (r = chbuf_u64(o, t->time_ns / NSEC_PER_SEC, '\t')) < 0 || (r = chbuf_put(o, proc, strlen(proc))) < 0 ||
            (r = chbuf_u64(o, t->tid, '\t')) < 0 || (r = chbuf_u64(o, (uint64_t) (uintptr_t) stack, '\t')) < 0 ||
            (r = chbuf_u64(o, b->hz, '\t')) < 0 || (r = chbuf_u64(o, b->base_hz, '\n')) < 0)
                return r;
        b->n_ticks++;
        return 0;
}

/* prefix (host .. day), reason, value */
int chbatch_drop(chbatch *b, const char *reason, uint64_t count) {
        struct chbuf *o = &b->drops;
        int r;

        if (b->n_drains == 0)
                return -EINVAL;
        if (count == 0)
                return 0;
        if ((r = chbuf_put(o, b->prefix.data, b->prefix.len)) < 0 || (r = chbuf_field(o, reason)) < 0 ||
            (r = chbuf_u64(o, count, '\n')) < 0)
                return r;
        b->n_drops++;
        return 0;
}

static struct chbatch_body body(const struct chbuf *o, size_t rows) {
        return (struct chbatch_body) { .data = o->data ? o->data : "", .len = o->len, .rows = rows };
}

struct chbatch_body chbatch_samples(const chbatch *b) {
        return body(&b->samples, b->n_samples);
}

struct chbatch_body chbatch_stacks(const chbatch *b) {
        return body(&b->stacks, b->n_stacks);
}

struct chbatch_body chbatch_frames(const chbatch *b) {
        return body(&b->frames, b->n_frames);
}

struct chbatch_body chbatch_drops(const chbatch *b) {
        return body(&b->drops, b->n_drops);
}

struct chbatch_body chbatch_timeline(const chbatch *b) {
        return body(&b->timeline, b->n_ticks);
}

static int set_merge(hashmap *into, const hashmap *from) {
        const void *k;
        size_t i = 0;

        while (hashmap_iterate(from, &i, &k, NULL)) {
                int r = hashmap_put(into, k, NULL);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

int chbatch_commit(chbatch *b) {
        int r;

        if ((r = set_merge(b->sent_stacks, b->new_stacks)) < 0 || (r = set_merge(b->sent_frames, b->new_frames)) < 0) {
                b->sent_day[0] = '\0'; /* partly merged: send them all again rather than miss one */
                return r;
        }
        b->new_stacks = set_renew(b->new_stacks);
        b->new_frames = set_renew(b->new_frames);
        return b->new_stacks && b->new_frames ? 0 : -ENOMEM;
}
