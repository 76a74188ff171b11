/* The naming cache of runtime pseudo-frames: code objects by (process, address), LRU within a byte budget; those a runtime says are its files' by (file, offset), read once for every process. */
#include "runtime-names.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlist.h"
#include "hashmap.h"
#include "macro.h"
#include "remote-pages.h"

struct rn_key {
        uint32_t pid;
        uint32_t rt;           /* the code's runtime (enum unwind_runtime_id); 0 for a process's own key */
        uint64_t start_ns;
        uint64_t code;         /* 0 for a process's own key */
};

struct rn_code;

/* An object shared by the processes that map its file (code_in_files_shared). */
struct rn_shared_key {
        uint64_t dev, ino;
        /* the mapping's offset in the file and length: an inode number a
         * deleted file freed and another took finds no object of the old
         * one, unless mapped alike */
        uint64_t map_offset, map_length;
        uint64_t offset;       /* the object's offset in the file */
        uint64_t rt;           /* its runtime (enum unwind_runtime_id) */
};

struct runtime_names_shared {
        struct rn_shared_key key;
        runtime_names *owner;
        const struct unwind_runtime *rt;
        unwind_runtime_code *code;     /* never NULL, never changed */
        size_t bytes;                  /* counted in the budget, this struct's included */
        unsigned refs;                 /* processes' entries and reads in flight; under owner's lock */
        uint64_t idle_ns;              /* when refs fell to 0 (CLOCK_MONOTONIC) */
        struct dlist_node idle;        /* while refs is 0: in owner's idle list */
};

struct rn_proc {
        struct rn_key key;
        const struct unwind_runtime *runtime;  /* found's: the one its discovery is of */
        struct unwind_runtime_found found;
        uint64_t bias;
        int handle;            /* the reader's, -1 until needed */
        bool gone;             /* found gone: its names are what was read */
        unsigned gone_drains;  /* drains ended since */
        struct rn_code *codes; /* its code objects (proc_next) */
};

struct rn_code {
        struct rn_key key;
        struct rn_proc *proc;
        const struct unwind_runtime *rt;       /* whose hooks read and name it (the frame's runtime) */
        unwind_runtime_code *code;     /* NULL: not read, see exited and reason; shared's when shared */
        runtime_names_shared *shared;  /* held: the object its file's processes share (never checked) */
        bool exited;                   /* the process was gone before it could be read */
        unsigned reason;               /* why it could not be read */
        size_t bytes;                  /* counted in the budget */
        uint64_t checked_drain;        /* the drain whose first use checked it against reuse */
        uint64_t looked_ns;            /* when it was last read or checked (CLOCK_MONOTONIC) */
        struct dlist_node lru;         /* in the cache's, most recently used first */
        struct rn_code *proc_prev, *proc_next;
};

struct runtime_names {
        const struct unwind_runtime **runtimes;
        size_t n_runtimes;
        struct runtime_names_reader reader;
        uint64_t budget;
        hashmap *procs;        /* struct rn_key * (code 0) -> struct rn_proc * */
        hashmap *codes;        /* struct rn_key * -> struct rn_code * */
        struct dlist lru;      /* struct rn_code, most recently used first */
        uint64_t drain;        /* drains begun: 0 before the first */
        struct remote_pages pages;     /* the reads of code_fill and code_check (this thread's) */
        struct runtime_names_stats stats;
        /* The shared objects: made by runtime_names_read (on the event
         * loop), held and let go on either thread, dropped by the cache's
         * own. Everything below is under shared_lock; their code is
         * immutable and read without it while held. */
        pthread_mutex_t shared_lock;
        hashmap *shared;       /* struct rn_shared_key * -> runtime_names_shared * */
        struct dlist idle;     /* runtime_names_shared with refs 0, most recently let go first */
        uint64_t shared_bytes, shared_count, shared_hits;
        uint64_t idle_bytes;   /* of those in the idle list */
};

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t key_hash(const void *k) {
        const struct rn_key *key = k;

        return hash_u64(key->pid ^ ((uint64_t) key->rt << 32) ^ hash_u64(key->start_ns ^ hash_u64(key->code)));
}

static bool key_eq(const void *a, const void *b) {
        const struct rn_key *x = a, *y = b;

        return x->pid == y->pid && x->rt == y->rt && x->start_ns == y->start_ns && x->code == y->code;
}

static uint64_t shared_key_hash(const void *k) {
        const struct rn_shared_key *key = k;

        return hash_u64(key->dev ^ hash_u64(key->ino ^ hash_u64(key->offset ^ (key->rt << 56)) ^
                                            hash_u64(key->map_offset ^ hash_u64(key->map_length))));
}

static bool shared_key_eq(const void *a, const void *b) {
        const struct rn_shared_key *x = a, *y = b;

        return x->dev == y->dev && x->ino == y->ino && x->offset == y->offset && x->rt == y->rt &&
               x->map_offset == y->map_offset && x->map_length == y->map_length;
}

int runtime_names_new(const struct unwind_runtime *const *runtimes, size_t n_runtimes,
                      const struct runtime_names_reader *reader, uint64_t budget, runtime_names **ret) {
        runtime_names *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->runtimes = calloc(n_runtimes ? n_runtimes : 1, sizeof(*c->runtimes));
        c->procs = hashmap_new(key_hash, key_eq);
        c->codes = hashmap_new(key_hash, key_eq);
        c->shared = hashmap_new(shared_key_hash, shared_key_eq);
        pthread_mutex_init(&c->shared_lock, NULL);
        if (!c->runtimes || !c->procs || !c->codes || !c->shared) {
                runtime_names_free(c);
                return -ENOMEM;
        }
        memcpy(c->runtimes, runtimes, n_runtimes * sizeof(*c->runtimes));
        c->n_runtimes = n_runtimes;
        c->reader = *reader;
        c->budget = budget;
        *ret = c;
        return 0;
}

void runtime_names_set_budget(runtime_names *c, uint64_t budget) {
        c->budget = budget;
}

static void idle_unlink(runtime_names *c, runtime_names_shared *sh) {
        c->idle_bytes -= sh->bytes;
        dlist_unlink(&c->idle, &sh->idle);
}

static void idle_push(runtime_names *c, runtime_names_shared *sh) {
        c->idle_bytes += sh->bytes;
        dlist_push_head(&c->idle, &sh->idle);
}

/* The shared object let go of longest ago (NULL: none idle). */
static runtime_names_shared *idle_oldest(runtime_names *c) {
        return DLIST_ENTRY(c->idle.tail, runtime_names_shared, idle);
}

/* Under c->shared_lock. */
static void shared_ref_locked(runtime_names *c, runtime_names_shared *sh) {
        if (sh->refs++ == 0)
                idle_unlink(c, sh);
}

/* On any thread: one holder fewer; the last makes it idle (the cache's
 * thread drops it when the budget needs the room). */
static void shared_unref(runtime_names_shared *sh) {
        runtime_names *c = sh->owner;

        pthread_mutex_lock(&c->shared_lock);
        if (--sh->refs == 0) {
                sh->idle_ns = now_ns();
                idle_push(c, sh);
        }
        pthread_mutex_unlock(&c->shared_lock);
}

/* Under c->shared_lock: frees sh, idle or not (the cache is freed). */
static void shared_free_locked(runtime_names *c, runtime_names_shared *sh) {
        if (sh->refs == 0)
                idle_unlink(c, sh);
        (void) hashmap_remove(c->shared, &sh->key);
        c->shared_bytes -= sh->bytes;
        c->shared_count--;
        sh->rt->code_free(sh->code);
        free(sh);
}

/* What was read is dropped (a shared object let go); the entry stays, unread. */
static void code_clear(runtime_names *c, struct rn_code *e) {
        if (e->shared)
                shared_unref(TAKE_PTR(e->shared));
        else if (e->code)
                e->rt->code_free(e->code);
        e->code = NULL;
        c->stats.bytes -= e->bytes - sizeof(*e);
        e->bytes = sizeof(*e);
}

static void code_drop(runtime_names *c, struct rn_code *e) {
        code_clear(c, e);
        dlist_unlink(&c->lru, &e->lru);
        if (e->proc_prev)
                e->proc_prev->proc_next = e->proc_next;
        else
                e->proc->codes = e->proc_next;
        if (e->proc_next)
                e->proc_next->proc_prev = e->proc_prev;
        (void) hashmap_remove(c->codes, &e->key);
        c->stats.bytes -= e->bytes;
        c->stats.codes--;
        free(e);
}

static void proc_close(runtime_names *c, struct rn_proc *p) {
        if (p->handle >= 0)
                c->reader.close(c->reader.userdata, p->handle);
        p->handle = -1;
}

static void proc_mark_gone(runtime_names *c, struct rn_proc *p) {
        p->gone = true;
        proc_close(c, p);
}

static void proc_drop(runtime_names *c, struct rn_proc *p) {
        while (p->codes)
                code_drop(c, p->codes);
        proc_close(c, p);
        (void) hashmap_remove(c->procs, &p->key);
        c->stats.bytes -= sizeof(*p);
        c->stats.processes--;
        free(p);
}

runtime_names *runtime_names_free(runtime_names *c) {
        size_t state = 0;
        const void *k;
        void *v;

        if (!c)
                return NULL;
        /* each drop changes the map: take the first one again each time */
        while (c->procs && (state = 0, hashmap_iterate(c->procs, &state, &k, &v)))
                proc_drop(c, v);
        /* every process's entry let go of what it held; no read is in
         * flight (the owner let go of its reads first) */
        while (c->shared && (state = 0, hashmap_iterate(c->shared, &state, &k, &v)))
                shared_free_locked(c, v);
        hashmap_free(c->procs);
        hashmap_free(c->codes);
        hashmap_free(c->shared);
        pthread_mutex_destroy(&c->shared_lock);
        remote_pages_done(&c->pages);
        free(c->runtimes);
        free(c);
        return NULL;
}

void runtime_names_shared_expire(runtime_names *c, uint64_t now) {
        runtime_names_shared *sh;

        pthread_mutex_lock(&c->shared_lock);
        while ((sh = idle_oldest(c)) && (now - sh->idle_ns >= RUNTIME_NAMES_SHARED_IDLE_NS ||
                                         c->idle_bytes > RUNTIME_NAMES_SHARED_IDLE_BYTES))
                shared_free_locked(c, sh);
        pthread_mutex_unlock(&c->shared_lock);
}

/* Down to the budget: shared objects no process holds first (let go of
 * longest ago first), then processes' entries, least recently used first
 * (an entry that held a shared object makes it idle, dropped next). */
static void evict(runtime_names *c) {
        for (;;) {
                runtime_names_shared *sh;
                bool idle;

                pthread_mutex_lock(&c->shared_lock);
                if (c->stats.bytes + c->shared_bytes <= c->budget) {
                        pthread_mutex_unlock(&c->shared_lock);
                        return;
                }
                sh = idle_oldest(c);
                idle = sh;
                if (idle)
                        shared_free_locked(c, sh);
                pthread_mutex_unlock(&c->shared_lock);
                if (!idle && !c->lru.tail)
                        return;
                if (!idle)
                        code_drop(c, DLIST_ENTRY(c->lru.tail, struct rn_code, lru));
                c->stats.evicted++;
        }
}

/* The process's memory as the runtime's hooks read it, opening the
 * reader's handle on first need; remembers whether the process was found
 * gone on the way (the hooks turn a failed read into their own reasons). */
struct rn_read {
        runtime_names *c;
        struct rn_proc *p;
        bool gone;
};

static int rn_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct rn_read *x = userdata;
        runtime_names *c = x->c;
        int r;

        if (x->gone)
                return -ESRCH;
        if (x->p->handle < 0) {
                r = c->reader.open(c->reader.userdata, x->p->key.pid, x->p->key.start_ns);
                if (r < 0) {
                        x->gone = r == -ESRCH;
                        return r;
                }
                x->p->handle = r;
        }
        r = c->reader.read(c->reader.userdata, x->p->handle, addr, buf, size);
        if (r == -ESRCH)
                x->gone = true;
        return r;
}

/* Reads e's code object in full. Another object read replaces what e
 * held; a failed read replaces nothing, only an entry with no name keeps
 * its reason: a pseudo-frame points at a code object that was alive when
 * it was sampled, so when the address holds no code object now (freed
 * since: a module's body after its import), the name read before is the
 * sample's. Returns 0 or -ENOMEM. */
static int code_fill(runtime_names *c, struct rn_code *e) {
        struct rn_proc *p = e->proc;
        struct rn_read x = { .c = c, .p = p };
        unwind_runtime_code *code = NULL;
        size_t bytes = 0;
        unsigned reason = 0;
        int r;

        e->looked_ns = now_ns();
        remote_pages_begin(&c->pages, rn_read, &x);
        r = e->rt->code_read(&p->found, p->bias, remote_pages_read, &c->pages, e->key.code, &code, &bytes,
                             &reason);
        if (r == -ENOMEM)
                return r;
        c->stats.reads++;
        if (x.gone)
                proc_mark_gone(c, p);
        if (r < 0) {
                if (!e->code) {
                        e->exited = x.gone;
                        e->reason = reason;
                }
                return 0;
        }
        code_clear(c, e);
        e->code = code;
        e->exited = false;
        e->reason = 0;
        e->bytes += bytes;
        c->stats.bytes += bytes;
        return 0;
}

/* Whether e still names the object at its address, while the process
 * lives: the head re-read and compared, the object read again in full
 * when it differs (or was not read), replacing the name only when another
 * code object is there. A process found gone keeps what was read.
 * Returns 0 or -ENOMEM. */
static int code_check(runtime_names *c, struct rn_code *e) {
        struct rn_proc *p = e->proc;
        struct rn_read x = { .c = c, .p = p };
        int r;

        if (!e->code)
                return code_fill(c, e);
        e->looked_ns = now_ns();
        if (e->shared)
                /* its file's: the same object while the file is mapped */
                return 0;
        remote_pages_begin(&c->pages, rn_read, &x);
        r = e->rt->code_same(&p->found, p->bias, remote_pages_read, &c->pages, e->key.code, e->code);
        if (x.gone) {
                proc_mark_gone(c, p);
                return 0;
        }
        if (r == 1)
                return 0;
        if (r == 0)
                c->stats.reused++;
        return code_fill(c, e);
}

/* e for (p, rt, code), made (unread) when new. Returns 0 or -ENOMEM. */
static int code_get(runtime_names *c, struct rn_proc *p, const struct unwind_runtime *rt, uint64_t code,
                    struct rn_code **ret, bool *ret_new) {
        struct rn_key key = { .pid = p->key.pid, .rt = rt->id, .start_ns = p->key.start_ns, .code = code };
        struct rn_code *e;
        void *v;

        if (hashmap_get(c->codes, &key, &v) >= 0) {
                *ret = v;
                *ret_new = false;
                return 0;
        }
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = (struct rn_code) { .key = key, .proc = p, .rt = rt, .bytes = sizeof(*e) };
        if (hashmap_put(c->codes, &e->key, e) < 0) {
                free(e);
                return -ENOMEM;
        }
        e->proc_next = p->codes;
        if (p->codes)
                p->codes->proc_prev = e;
        p->codes = e;
        dlist_push_head(&c->lru, &e->lru);
        c->stats.bytes += e->bytes;
        c->stats.codes++;
        *ret = e;
        *ret_new = true;
        return 0;
}

static struct rn_proc *proc_find(runtime_names *c, uint32_t pid, uint64_t start_ns) {
        struct rn_key key = { .pid = pid, .start_ns = start_ns };
        void *v;

        return hashmap_get(c->procs, &key, &v) >= 0 ? v : NULL;
}

static const struct unwind_runtime *runtime_of(const runtime_names *c, const struct unwind_runtime_found *found) {
        const struct unwind_runtime *rt = found->id < c->n_runtimes ? c->runtimes[found->id] : NULL;

        return rt && rt->code_read ? rt : NULL;
}

/* The runtime naming a code object of runtime `id` (a pseudo-frame's, an
 * event's; 0: the process's own) in a process running what `found` says:
 * one with hooks whose discovery is that one (HotSpot's compiled frames
 * in a JVM; never a Python frame in it). NULL: none. */
static const struct unwind_runtime *code_runtime_of(const runtime_names *c, const struct unwind_runtime_found *found,
                                                    unsigned id) {
        const struct unwind_runtime *rt;

        if (id == UNWIND_RUNTIME_NONE)
                return runtime_of(c, found);
        rt = id < c->n_runtimes ? c->runtimes[id] : NULL;
        if (!rt || !rt->code_read || (rt->found_id != UNWIND_RUNTIME_NONE ? rt->found_id : rt->id) != found->id)
                return NULL;
        return rt;
}

/* The process (pid, start_ns), made when new, running `found` in a file
 * loaded at bias. Returns 0 or -ENOMEM. */
static int proc_learn(runtime_names *c, uint32_t pid, uint64_t start_ns, const struct unwind_runtime *rt,
                      const struct unwind_runtime_found *found, uint64_t bias, struct rn_proc **ret) {
        struct rn_proc *p = proc_find(c, pid, start_ns);

        if (!p) {
                p = calloc(1, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                p->key = (struct rn_key) { .pid = pid, .start_ns = start_ns };
                p->handle = -1;
                if (hashmap_put(c->procs, &p->key, p) < 0) {
                        free(p);
                        return -ENOMEM;
                }
                c->stats.bytes += sizeof(*p);
                c->stats.processes++;
        }
        if (p->runtime && (p->runtime != rt || p->bias != bias || p->found.bpf.version != found->bpf.version ||
                           p->found.lo != found->lo || p->found.hi != found->hi))
                /* an exec into another interpreter (the instance keeps its
                 * start): the objects read were the old one's. Told by
                 * what differs between interpreter files, not by names[]'s
                 * bytes (a runtime's struct there may have padding). */
                while (p->codes)
                        code_drop(c, p->codes);
        /* the latest event's: an exec keeps the instance and may map another interpreter */
        p->runtime = rt;
        p->found = *found;
        p->bias = bias;
        *ret = p;
        return 0;
}

int runtime_names_learn(runtime_names *c, uint32_t pid, uint64_t start_ns, const struct unwind_runtime_found *found,
                        uint64_t bias, unsigned rt_id, uint64_t code) {
        const struct unwind_runtime *rt = runtime_of(c, found), *code_rt = code_runtime_of(c, found, rt_id);
        struct rn_proc *p;
        struct rn_code *e;
        bool fresh;
        int r;

        if (!rt || !code_rt)
                return -EPROTONOSUPPORT;
        r = proc_learn(c, pid, start_ns, rt, found, bias, &p);
        if (r < 0)
                return r;
        r = code_get(c, p, code_rt, code, &e, &fresh);
        if (r < 0)
                return r;
        if (fresh && p->gone)
                e->exited = true;
        else if (fresh)
                r = code_fill(c, e);
        else if (!p->gone)
                r = code_check(c, e);
        if (r < 0)
                return r;
        /* between drains: no frame holds names now */
        evict(c);
        return 0;
}

/* The reader for one read, on any thread: the session's handle for the
 * process if it holds one, else opened at the first read. */
struct rn_once {
        const struct runtime_names_reader *reader;
        uint32_t pid;
        uint64_t start_ns;
        int handle;
        bool gone;
};

static int once_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct rn_once *x = userdata;
        int r;

        if (x->gone)
                return -ESRCH;
        if (x->handle < 0) {
                r = x->reader->open(x->reader->userdata, x->pid, x->start_ns);
                if (r < 0) {
                        x->gone = r == -ESRCH;
                        return r;
                }
                x->handle = r;
        }
        r = x->reader->read(x->reader->userdata, x->handle, addr, buf, size);
        if (r == -ESRCH)
                x->gone = true;
        return r;
}

void runtime_names_session_init(struct runtime_names_session *s) {
        *s = (struct runtime_names_session) {};
        for (size_t i = 0; i < RUNTIME_NAMES_SESSION_HANDLES; i++)
                s->held[i].handle = -1;
        remote_pages_init(&s->pages, NULL, NULL);
}

static void session_drop(const runtime_names *c, struct runtime_names_session *s, size_t i) {
        if (s->held[i].handle >= 0)
                c->reader.close(c->reader.userdata, s->held[i].handle);
        free(s->held[i].files);
        s->held[i] = (struct runtime_names_held) { .handle = -1 };
}

void runtime_names_session_close(const runtime_names *c, struct runtime_names_session *s, uint64_t idle_ns) {
        uint64_t now = idle_ns ? now_ns() : 0;

        for (size_t i = 0; i < RUNTIME_NAMES_SESSION_HANDLES; i++)
                if (s->held[i].handle >= 0 && (!idle_ns || now - s->held[i].used_ns >= idle_ns))
                        session_drop(c, s, i);
}

void runtime_names_session_done(const runtime_names *c, struct runtime_names_session *s) {
        runtime_names_session_close(c, s, 0);
        remote_pages_done(&s->pages);
}

static int session_find(const struct runtime_names_session *s, uint32_t pid, uint64_t start_ns) {
        for (size_t i = 0; i < RUNTIME_NAMES_SESSION_HANDLES; i++)
                if (s->held[i].handle >= 0 && s->held[i].pid == pid && s->held[i].start_ns == start_ns)
                        return (int) i;
        return -1;
}

/* Keeps handle, opened for instance (pid, start_ns), in an empty slot or
 * the one used longest ago. Returns the slot. */
static size_t session_install(const runtime_names *c, struct runtime_names_session *s, uint32_t pid,
                              uint64_t start_ns, int handle, uint64_t now) {
        size_t victim = 0;

        for (size_t i = 0; i < RUNTIME_NAMES_SESSION_HANDLES; i++) {
                if (s->held[i].handle < 0) {
                        victim = i;
                        break;
                }
                if (s->held[i].used_ns < s->held[victim].used_ns)
                        victim = i;
        }
        session_drop(c, s, victim);
        s->held[victim] = (struct runtime_names_held) {
                .pid = pid, .start_ns = start_ns, .handle = handle, .used_ns = now,
        };
        return victim;
}

/* After a read through handle (at slot `at`, -1: opened for it): kept for
 * the process's next read while it lives; closed when the process was
 * found gone. */
static void session_keep(const runtime_names *c, struct runtime_names_session *s, int at, const struct rn_once *x,
                         uint64_t now) {
        if (x->gone) {
                if (at >= 0)
                        session_drop(c, s, (size_t) at);
                else
                        c->reader.close(c->reader.userdata, x->handle);
                return;
        }
        if (at >= 0)
                s->held[at].used_ns = now;
        else
                (void) session_install(c, s, x->pid, x->start_ns, x->handle, now);
}

/* The file mapping of `files` (n, in address order) that addr lies in; NULL: none. */
static const struct runtime_names_file *file_of(const struct runtime_names_file *files, size_t n, uint64_t addr) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (addr < files[mid].start)
                        hi = mid;
                else if (addr >= files[mid].end)
                        lo = mid + 1;
                else
                        return &files[mid];
        }
        return NULL;
}

/* For a runtime whose objects in files are the files' (code_in_files_shared):
 * the process's slot in s (*at; opened and kept when it has none), its
 * file mappings (read once a slot), and the object at `code` by (file,
 * offset) in *key. Returns 1 when code lies in a file, with ret->shared
 * held and ret->shared_hit when another process read it; 0 when it lies
 * in none, or the process could not be opened (ret->gone: it is gone);
 * -ENOMEM. */
static int shared_lookup(runtime_names *c, struct runtime_names_session *s, int *at, uint32_t pid,
                         uint64_t start_ns, const struct unwind_runtime *rt, uint64_t code, struct rn_shared_key *key,
                         struct runtime_names_read *ret) {
        const struct runtime_names_file *f;
        struct runtime_names_held *h;
        void *v;
        int r;

        if (*at < 0) {
                r = c->reader.open(c->reader.userdata, pid, start_ns);
                if (r < 0) {
                        /* else the read opens it again and says why */
                        ret->gone = r == -ESRCH;
                        return 0;
                }
                *at = (int) session_install(c, s, pid, start_ns, r, ret->at_ns);
        }
        h = &s->held[*at];
        if (!h->files_read) {
                h->files_read = true;
                r = c->reader.files(c->reader.userdata, pid, start_ns, &h->files, &h->n_files);
                if (r == -ENOMEM)
                        return r;
                if (r == -ESRCH) {
                        session_drop(c, s, (size_t) *at);
                        *at = -1;
                        ret->gone = true;
                        return 0;
                }
                if (r < 0) {
                        /* read as any other object */
                        h->files = NULL;
                        h->n_files = 0;
                }
        }
        f = file_of(h->files, h->n_files, code);
        if (!f)
                return 0;
        *key = (struct rn_shared_key) {
                .dev = f->id.dev, .ino = f->id.ino, .map_offset = f->offset, .map_length = f->end - f->start,
                .offset = code - f->start + f->offset, .rt = rt->id,
        };
        pthread_mutex_lock(&c->shared_lock);
        if (hashmap_get(c->shared, key, &v) >= 0) {
                shared_ref_locked(c, v);
                c->shared_hits++;
                ret->shared = v;
                ret->shared_hit = true;
        }
        pthread_mutex_unlock(&c->shared_lock);
        if (ret->shared)
                h->used_ns = ret->at_ns;
        return 1;
}

/* The object just read (ret->code) kept as the one shared at key, and ret
 * holding it. Out of memory, it stays ret's own. */
static void shared_add(runtime_names *c, const struct rn_shared_key *key, const struct unwind_runtime *rt,
                       struct runtime_names_read *ret) {
        runtime_names_shared *sh;
        void *v;

        pthread_mutex_lock(&c->shared_lock);
        if (hashmap_get(c->shared, key, &v) >= 0) {
                /* read meanwhile (by another thread's session): that one */
                sh = v;
                shared_ref_locked(c, sh);
                rt->code_free(ret->code);
        } else {
                sh = calloc(1, sizeof(*sh));
                if (!sh) {
                        pthread_mutex_unlock(&c->shared_lock);
                        return;
                }
                *sh = (struct runtime_names_shared) {
                        .key = *key, .owner = c, .rt = rt, .code = ret->code, .bytes = sizeof(*sh) + ret->bytes,
                        .refs = 1,
                };
                if (hashmap_put(c->shared, &sh->key, sh) < 0) {
                        pthread_mutex_unlock(&c->shared_lock);
                        free(sh);
                        return;
                }
                c->shared_bytes += sh->bytes;
                c->shared_count++;
        }
        pthread_mutex_unlock(&c->shared_lock);
        ret->code = NULL;
        ret->bytes = 0;
        ret->shared = sh;
}

int runtime_names_read(runtime_names *c, struct runtime_names_session *s, uint32_t pid, uint64_t start_ns,
                       const struct unwind_runtime_found *found, uint64_t bias, unsigned rt_id, uint64_t code,
                       struct runtime_names_read *ret) {
        const struct unwind_runtime *rt = runtime_of(c, found) ? code_runtime_of(c, found, rt_id) : NULL;
        struct rn_once x = { .reader = &c->reader, .pid = pid, .start_ns = start_ns, .handle = -1 };
        struct remote_pages own, *pages = s ? &s->pages : &own;
        int at = s ? session_find(s, pid, start_ns) : -1;
        struct rn_shared_key key;
        bool in_file = false;
        int r;

        if (!rt)
                return -EPROTONOSUPPORT;
        *ret = (struct runtime_names_read) { .runtime = rt, .at_ns = now_ns() };
        if (s && rt->code_in_files_shared && c->reader.files) {
                r = shared_lookup(c, s, &at, pid, start_ns, rt, code, &key, ret);
                if (r < 0)
                        return r;
                if (ret->shared || ret->gone)
                        return 0;
                in_file = r > 0;
        }
        if (at >= 0)
                x.handle = s->held[at].handle;
        if (s)
                remote_pages_begin(pages, once_read, &x);
        else
                remote_pages_init(pages, once_read, &x);
        r = rt->code_read(found, bias, remote_pages_read, pages, code, &ret->code, &ret->bytes, &ret->reason);
        if (!s)
                remote_pages_done(pages);
        if (x.handle >= 0 && s)
                session_keep(c, s, at, &x, ret->at_ns);
        else if (x.handle >= 0)
                c->reader.close(c->reader.userdata, x.handle);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                ret->code = NULL;
                ret->gone = x.gone;
        } else if (in_file)
                shared_add(c, &key, rt, ret);
        return 0;
}

void runtime_names_read_done(struct runtime_names_read *r) {
        if (r->shared)
                shared_unref(TAKE_PTR(r->shared));
        if (r->code)
                r->runtime->code_free(r->code);
        r->code = NULL;
}

int runtime_names_learn_read(runtime_names *c, uint32_t pid, uint64_t start_ns,
                             const struct unwind_runtime_found *found, uint64_t bias, unsigned rt_id, uint64_t code,
                             struct runtime_names_read *read) {
        const struct unwind_runtime *rt = runtime_of(c, found), *code_rt = code_runtime_of(c, found, rt_id);
        struct rn_proc *p;
        struct rn_code *e;
        bool fresh;
        int r;

        if (!rt || !code_rt || code_rt != read->runtime) {
                runtime_names_read_done(read);
                return -EPROTONOSUPPORT;
        }
        r = proc_learn(c, pid, start_ns, rt, found, bias, &p);
        if (r >= 0)
                r = code_get(c, p, code_rt, code, &e, &fresh);
        if (r < 0) {
                runtime_names_read_done(read);
                return r;
        }
        if (!read->shared_hit)
                c->stats.reads++;
        if (!fresh && e->looked_ns > read->at_ns) {
                /* the cache read or checked it after this read: newer */
        } else if (read->gone) {
                /* what was read while it lived stays; nothing was: exited */
                proc_mark_gone(c, p);
                if (!e->code)
                        e->exited = true;
        } else if (read->shared) {
                /* the object of its file, read by this or another process */
                code_clear(c, e);
                e->shared = TAKE_PTR(read->shared);
                e->code = e->shared->code;
                e->exited = false;
                e->reason = 0;
                e->looked_ns = read->at_ns;
        } else if (read->code) {
                /* what is at the address now, the freshest there is */
                code_clear(c, e);
                e->code = TAKE_PTR(read->code);
                e->exited = false;
                e->reason = 0;
                e->bytes += read->bytes;
                e->looked_ns = read->at_ns;
                c->stats.bytes += read->bytes;
        } else if (!e->code) {
                /* a failed read replaces no name (code_fill says why) */
                e->exited = false;
                e->reason = read->reason;
        }
        runtime_names_read_done(read);
        evict(c);
        return 0;
}

void runtime_names_begin_drain(runtime_names *c) {
        c->drain++;
}

int runtime_names_lookup(runtime_names *c, uint32_t pid, uint64_t start_ns, bool live, uint64_t ip,
                         struct runtime_names_frame *ret) {
        struct rn_proc *p = proc_find(c, pid, start_ns);
        const struct unwind_runtime *rt;
        struct rn_code *e;
        bool fresh;
        int r;

        /* the frame's runtime, among those of the process's discovery */
        rt = p ? code_runtime_of(c, &p->found, PROFD_RT_FRAME_ID(ip)) : NULL;
        if (!rt) {
                *ret = (struct runtime_names_frame) { .status = RUNTIME_NAMES_NO_RUNTIME };
                return 0;
        }
        if (!live && !p->gone)
                proc_mark_gone(c, p);
        r = code_get(c, p, rt, PROFD_RT_FRAME_CODE(ip), &e, &fresh);
        if (r < 0)
                return r;
        if (e->checked_drain != c->drain) {
                /* the first use in this drain */
                e->checked_drain = c->drain;
                if (fresh && p->gone)
                        e->exited = true;
                else if (fresh)
                        r = code_fill(c, e);
                else if (!p->gone)
                        r = code_check(c, e);
                if (r < 0)
                        return r;
        }
        dlist_unlink(&c->lru, &e->lru);
        dlist_push_head(&c->lru, &e->lru);
        *ret = (struct runtime_names_frame) { .runtime = rt };
        if (e->code) {
                ret->status = RUNTIME_NAMES_NAMED;
                rt->code_name(e->code, PROFD_RT_FRAME_OFFSET(ip), &ret->name, &ret->reason);
        } else if (e->exited)
                ret->status = RUNTIME_NAMES_EXITED;
        else {
                ret->status = RUNTIME_NAMES_UNREADABLE;
                ret->reason = e->reason;
        }
        return 0;
}

void runtime_names_end_drain(runtime_names *c, bool (*alive)(void *userdata, uint32_t pid, uint64_t start_ns),
                             void *userdata) {
        _cleanup_free_ struct rn_proc **drop = NULL;
        size_t n = 0, state = 0;
        const void *k;
        void *v;

        drop = malloc(MAX(hashmap_size(c->procs), (size_t) 1) * sizeof(*drop));
        while (hashmap_iterate(c->procs, &state, &k, &v)) {
                struct rn_proc *p = v;

                if (!p->gone && alive && !alive(userdata, p->key.pid, p->key.start_ns))
                        proc_mark_gone(c, p);
                if (p->gone && ++p->gone_drains > RUNTIME_NAMES_KEEP_DRAINS && drop)
                        drop[n++] = p;
        }
        /* out of memory for the list: dropped at a later drain */
        for (size_t i = 0; i < n; i++)
                proc_drop(c, drop[i]);
        runtime_names_shared_expire(c, now_ns());
        evict(c);
}

void runtime_names_get_stats(const runtime_names *c, struct runtime_names_stats *ret) {
        pthread_mutex_t *lock = (pthread_mutex_t *) &c->shared_lock;

        *ret = c->stats;
        pthread_mutex_lock(lock);
        ret->bytes += c->shared_bytes;
        ret->shared = c->shared_count;
        ret->shared_hits = c->shared_hits;
        pthread_mutex_unlock(lock);
}

const char *runtime_names_build_id(const struct unwind_runtime *runtime, uint64_t identity, char *buf, size_t size) {
        snprintf(buf, size, "%s-%016" PRIx64, runtime->name, identity);
        return buf;
}
