/* Process snapshots from /proc (comm, exe, uid, cgroup, executable mappings
 * with their files held open) and the writer thread's table of them. */
#include "proctable.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hashmap.h"
#include "log.h"
#include "macro.h"
#include "procmaps.h"
#include "helpers.h"

struct proc_key {
        uint32_t pid;
        uint64_t start_ns;
};

struct proctable {
        symbolizer *sym;
        char *proc_root;        /* "/proc", overridable for tests */
        hashmap *procs;         /* struct proc_key* (inside struct entry) -> struct entry* */
};

struct entry {
        struct proc_key key;
        struct proc proc;
};

static uint64_t key_hash(const void *k) {
        const struct proc_key *p = k;
        return hash_u64(((uint64_t) p->pid << 32) ^ p->start_ns);
}

static bool key_eq(const void *a, const void *b) {
        const struct proc_key *x = a, *y = b;
        return x->pid == y->pid && x->start_ns == y->start_ns;
}

static void proc_clear_snapshot(struct proc *p) {
        for (size_t i = 0; i < p->n_maps; i++) {
                free(p->maps[i].path);
                p->maps[i].fd = safe_close(p->maps[i].fd);
        }
        free(p->maps);
        p->maps = NULL;
        p->n_maps = 0;
        free(p->exe);
        p->exe = NULL;
        free(p->cgroup);
        p->cgroup = NULL;
        p->have_uid = false;
        p->snapshotted = false;
}

static void entry_free(struct entry *e) {
        if (e) {
                proc_clear_snapshot(&e->proc);
                free(e);
        }
}

/* A snapshot is made inside a table entry from the start, so the table can
 * take it over without copying. */
static struct entry *entry_of(struct proc *p) {
        return (struct entry *) ((char *) p - offsetof(struct entry, proc));
}

struct proc *proc_free(struct proc *p) {
        if (p)
                entry_free(entry_of(p));
        return NULL;
}

/* /proc/PID/stat counts start time in USER_HZ ticks. */
static uint64_t ns_per_tick(void) {
        long hz = sysconf(_SC_CLK_TCK);
        return NSEC_PER_SEC / (hz > 0 ? (uint64_t) hz : 100);
}

int proctable_new(symbolizer *sym, const char *proc_root, proctable **ret) {
        proctable *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->sym = sym;
        t->proc_root = strdup(proc_root ? proc_root : "/proc");
        t->procs = hashmap_new(key_hash, key_eq);
        if (!t->proc_root || !t->procs) {
                proctable_free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

proctable *proctable_free(proctable *t) {
        const void *k;
        void *v;
        size_t i = 0;

        if (!t)
                return NULL;
        if (t->procs)
                while (hashmap_iterate(t->procs, &i, &k, &v))
                        entry_free(v);
        hashmap_free(t->procs);
        free(t->proc_root);
        free(t);
        return NULL;
}

static int mapping_cmp(const void *a, const void *b) {
        const struct proc_mapping *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Opens the mapped file: map_files reaches the very inode mapped (deleted or
 * replaced files, other mount namespaces); root/PATH reaches the process's
 * file system view. -1 if neither works (the writer then tries the path). */
static int open_mapping_file(const char *proc_root, uint32_t pid, const struct procmap *m) {
        char path[PATH_MAX];
        int fd;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid, m->start,
                 m->end);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0)
                return fd;
        if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/root%s", proc_root, pid, m->path) < (int) sizeof(path))
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd;
}

/* Reads the symbols of a mapping's file (through its fd while it is open)
 * and closes it. */
static const sym_file *load_mapping_file(proctable *t, uint32_t pid, struct proc_mapping *m) {
        const sym_file *f = NULL;
        char path[64];

        if (m->fd >= 0) {
                snprintf(path, sizeof(path), "/proc/self/fd/%d", m->fd);
                if (symbolizer_load_file(t->sym, path, &f) < 0)
                        f = NULL;
                m->fd = safe_close(m->fd);
        }
        if (!f && symbolizer_load_file(t->sym, m->path, &f) < 0)
                f = NULL;
        if (!f)
                log_debug("Cannot read symbols of %s for pid %" PRIu32 ", ignoring.", m->path, pid);
        return f;
}

static int snapshot_maps(const char *proc_root, struct proc *p) {
        char path[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        struct proc_mapping *maps = NULL;
        size_t n = 0, cap = 0;
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_root, p->pid);
        r = read_full_file(path, &text);
        if (r < 0)
                return r;
        for (char *line = text, *next; line && *line; line = next) {
                struct procmap m;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (procmap_parse_line(line, &m) < 0) {
                        log_debug("Unparsable line in %s, ignoring: %s", path, line);
                        continue;
                }
                if (!m.executable) {
                        procmap_done(&m);
                        continue;
                }
                if (n == cap) {
                        struct proc_mapping *nm = realloc(maps, (cap = cap ? cap * 2 : 16) * sizeof(*maps));
                        if (!nm) {
                                procmap_done(&m);
                                r = -ENOMEM;
                                goto fail;
                        }
                        maps = nm;
                }
                maps[n] = (struct proc_mapping) {
                        .start = m.start,
                        .end = m.end,
                        .offset = m.offset,
                        .fd = -1,
                };
                if (m.path && m.path[0] == '/')
                        maps[n].fd = open_mapping_file(proc_root, p->pid, &m);
                maps[n++].path = TAKE_PTR(m.path);
        }
        if (n > 0) /* qsort must not get NULL, even for zero items */
                qsort(maps, n, sizeof(*maps), mapping_cmp);
        p->maps = maps;
        p->n_maps = n;
        return 0;
fail:
        for (size_t i = 0; i < n; i++) {
                free(maps[i].path);
                safe_close(maps[i].fd);
        }
        free(maps);
        return r;
}

/* Is /proc/PID still the instance that started at start_ns? */
static int check_identity(const char *proc_root, uint32_t pid, uint64_t start_ns) {
        char path[PATH_MAX];
        _cleanup_free_ char *stat = NULL;
        uint64_t ticks;
        int r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", proc_root, pid);
        r = read_full_file(path, &stat);
        if (r < 0)
                return r;
        r = procstat_parse_starttime(stat, &ticks);
        if (r < 0)
                return r;
        return ticks == start_ns / ns_per_tick() ? 0 : -ESRCH;
}

static int snapshot(const char *proc_root, struct proc *p) {
        char path[PATH_MAX], buf[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        ssize_t n;
        int r;

        r = check_identity(proc_root, p->pid, p->start_ns);
        if (r < 0)
                return r;

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/comm", proc_root, p->pid);
        if (read_full_file(path, &text) >= 0) {
                text[strcspn(text, "\n")] = '\0';
                snprintf(p->comm, sizeof(p->comm), "%s", text);
                text = (free(text), NULL);
        }
        snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", proc_root, p->pid);
        n = readlink(path, buf, sizeof(buf) - 1);
        if (n > 0) {
                buf[n] = '\0';
                p->exe = strdup(buf);
                if (!p->exe)
                        return -ENOMEM;
        }
        snprintf(path, sizeof(path), "%s/%" PRIu32 "/status", proc_root, p->pid);
        if (read_full_file(path, &text) >= 0) {
                p->have_uid = procstatus_parse_euid(text, &p->uid) >= 0;
                text = (free(text), NULL);
        }
        snprintf(path, sizeof(path), "%s/%" PRIu32 "/cgroup", proc_root, p->pid);
        if (read_full_file(path, &text) >= 0) {
                r = proccgroup_parse_v2(text, &p->cgroup);
                if (r == -ENOMEM)
                        return r;
                text = (free(text), NULL);
        }
        r = snapshot_maps(proc_root, p);
        if (r < 0)
                return r;
        /* the process may have exited and its pid been reused while we read */
        r = check_identity(proc_root, p->pid, p->start_ns);
        if (r < 0)
                return r;
        p->snapshotted = true;
        return 0;
}

int proc_snapshot(const char *proc_root, uint32_t pid, uint64_t start_ns, const char *comm, struct proc **ret,
                  bool *ret_vanished) {
        struct entry *e = calloc(1, sizeof(*e));
        int r;

        if (!e)
                return -ENOMEM;
        e->key = (struct proc_key) { pid, start_ns };
        e->proc.pid = pid;
        e->proc.start_ns = start_ns;
        snprintf(e->proc.comm, sizeof(e->proc.comm), "%s", comm);
        r = snapshot(proc_root, &e->proc);
        if (r == -ENOMEM) {
                entry_free(e);
                return r;
        }
        if (r < 0) {
                proc_clear_snapshot(&e->proc);
                log_debug("Process %" PRIu32 " (%s) exited before it could be read: %s", pid, e->proc.comm,
                          strerror(-r));
        }
        *ret_vanished = r < 0;
        *ret = &e->proc;
        return 0;
}

int proctable_add(proctable *t, struct proc *p) {
        struct entry *e = entry_of(p), *old;
        int r;

        for (size_t i = 0; i < p->n_maps; i++)
                if (p->maps[i].path && p->maps[i].path[0] == '/')
                        p->maps[i].file = load_mapping_file(t, p->pid, &p->maps[i]);
        old = hashmap_remove(t->procs, &e->key);
        entry_free(old);
        r = hashmap_put(t->procs, &e->key, e);
        if (r < 0)
                entry_free(e);
        return r;
}

struct proc *proctable_get(proctable *t, uint32_t pid, uint64_t start_ns) {
        struct proc_key key = { pid, start_ns };
        void *v;

        if (hashmap_get(t->procs, &key, &v) < 0)
                return NULL;
        return &((struct entry *) v)->proc;
}

const struct proc_mapping *proc_find_mapping(const struct proc *p, uint64_t addr) {
        size_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (addr < p->maps[mid].start)
                        hi = mid;
                else if (addr >= p->maps[mid].end)
                        lo = mid + 1;
                else
                        return &p->maps[mid];
        }
        return NULL;
}

void proctable_prune(proctable *t) {
        _cleanup_free_ struct entry **gone = NULL;
        size_t n_gone = 0, i = 0;
        const void *k;
        void *v;

        gone = calloc(hashmap_size(t->procs) + 1, sizeof(*gone));
        if (!gone)
                return; /* try again after the next drain */
        while (hashmap_iterate(t->procs, &i, &k, &v)) {
                struct entry *e = v;
                if (e->proc.exited_drains > 0 || check_identity(t->proc_root, e->key.pid, e->key.start_ns) < 0) {
                        if (e->proc.exited_drains++ > 0)
                                gone[n_gone++] = e;
                }
        }
        for (i = 0; i < n_gone; i++) {
                hashmap_remove(t->procs, &gone[i]->key);
                entry_free(gone[i]);
        }
}

size_t proctable_size(const proctable *t) {
        return hashmap_size(t->procs);
}

