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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "bsearch.h"
#include "hashmap.h"
#include "jitmap.h"
#include "log.h"
#include "macro.h"
#include "mapfile.h"
#include "procmaps.h"
#include "helpers.h"

struct proc_key {
        uint32_t pid;
        uint64_t start_ns;
};

struct proctable {
        proctable_load_fn load; /* reads a mapped file's symbols; NULL: none */
        proctable_lookup_fn lookup; /* finds those of a keyed mapping; NULL: opened */
        void *load_userdata;
        char *proc_root;        /* "/proc", overridable for tests */
        hashmap *procs;         /* struct proc_key* (inside struct entry) -> struct entry* */
        uint64_t jit_dropped;   /* perf map entries over the bound, all processes */
        size_t jit_fds_open;    /* perf maps held open by processes (struct proc.jit_fd) */
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

static void mappings_free(struct proc_mapping *maps, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(maps[i].path);
                safe_close(maps[i].fd);
        }
        free(maps);
}

static void proc_clear_snapshot(struct proc *p) {
        mappings_free(p->maps, p->n_maps);
        p->maps = NULL;
        p->n_maps = 0;
        p->jit = jitmap_free(p->jit);
        p->jit_fd = safe_close(p->jit_fd);
        p->jit_file = (struct proc_jit_file) {};
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

/* Closes the perf map a process holds open, keeping its entries. */
static void proc_close_jit_fd(proctable *t, struct proc *p) {
        if (p->jit_fd >= 0) {
                p->jit_fd = safe_close(p->jit_fd);
                t->jit_fds_open--;
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

int proc_thread_comm(const char *proc_root, uint32_t pid, uint32_t tid, char ret[16]) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX];
        size_t n;
        int r;

        if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/comm", proc_root, pid, tid) >=
            (int) sizeof(path))
                return -ENAMETOOLONG;
        r = read_full_file(path, &text);
        if (r < 0)
                return r;
        n = strcspn(text, "\n");
        if (n == 0)
                return -ENODATA;
        snprintf(ret, 16, "%.*s", (int) MIN(n, (size_t) 15), text);
        return 0;
}

void proctable_set_lookup(proctable *t, proctable_lookup_fn lookup) {
        t->lookup = lookup;
}

int proctable_thread_comm(proctable *t, uint32_t pid, uint32_t tid, char ret[16]) {
        return proc_thread_comm(t->proc_root, pid, tid, ret);
}

int proctable_new(proctable_load_fn load, void *userdata, const char *proc_root, proctable **ret) {
        proctable *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->load = load;
        t->load_userdata = userdata;
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

/* Opens the mapped file the one way every stage does (mapfile_open): its
 * map_files link, then root/PATH. -1 if neither works (the writer then
 * tries the path). */
static int open_mapping_file(const char *proc_root, uint32_t pid, const struct proc_mapping *m) {
        struct mapfile_paths paths;
        int fd;

        mapfile_paths(proc_root, pid, m->start, m->end, m->path, &paths);
        fd = mapfile_open(&paths);
        return fd >= 0 ? fd : -1;
}

static uint64_t now_monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static bool memo_file(snapshot_memo *m, const struct file_ident *id, uint64_t now_ns, struct file_key *ret);
static int memo_file_learn(snapshot_memo *m, const struct file_ident *id, const struct stat *st, uint64_t now_ns);
static void memo_file_opened(snapshot_memo *m);
static void memo_file_known(snapshot_memo *m);

/* open_mapping_file through pfd, the process's /proc/PID (proc_dir_open):
 * its path first, which memo (NULL: none) learns the file's identity from;
 * or not at all when memo knows the inode (then m->keyed). Returns 0 or
 * -ENOMEM. */
static int open_mapping_fileat(int pfd, struct proc_mapping *m, snapshot_memo *memo, uint64_t now_ns) {
        struct file_ident id = { makedev(m->dev_major, m->dev_minor), m->inode };
        struct stat st;
        int fd;

        /* known, and still that file at its path: one stat, where opening
         * it is three calls here and two more in the writer. The stat
         * tells a file rebuilt since under a reused inode number by its
         * size and mtime. */
        if (memo_file(memo, &id, now_ns, &m->key) && m->path && m->path[0] == '/' && stat(m->path, &st) >= 0 &&
            (uint64_t) st.st_dev == id.dev && (uint64_t) st.st_ino == id.ino) {
                struct file_key now = file_key_from_stat(&st);

                if (file_key_eq(&now, &m->key)) {
                        m->keyed = true;
                        memo_file_known(memo);
                        return 0;
                }
        }
        fd = mapfile_open_at_path_stat(m->path, &id, &st);
        if (fd >= 0) {
                m->fd = fd;
                return memo_file_learn(memo, &id, &st, now_ns);
        }
        fd = mapfile_openat(pfd, m->start, m->end, m->path);
        m->fd = fd >= 0 ? fd : -1;
        if (fd >= 0)
                memo_file_opened(memo);
        return 0;
}

/* Reads the symbols of a mapping's file (through its fd while it is open)
 * and closes it. */
static const sym_file *load_mapping_file(proctable *t, uint32_t pid, struct proc_mapping *m) {
        const sym_file *f = NULL;
        char root[64];

        /* debug files are looked for in the process's file system view too */
        snprintf(root, sizeof(root), "%s/%" PRIu32 "/root", t->proc_root, pid);
        /* a file an earlier snapshot opened: its symbols are the symbols
         * stage's by now, else it is opened here, by its inode again */
        if (m->keyed && m->fd < 0) {
                struct file_ident id = { makedev(m->dev_major, m->dev_minor), m->inode };
                struct stat st;

                m->keyed = false;
                if (t->lookup && t->lookup(t->load_userdata, &m->key, &f) >= 0)
                        return f;
                f = NULL;
                /* the very file (its inode number may have been reused by
                 * a rebuild since: then its size or mtime differ) */
                m->fd = mapfile_open_at_path_stat(m->path, &id, &st);
                if (m->fd >= 0) {
                        struct file_key now = file_key_from_stat(&st);

                        if (!file_key_eq(&now, &m->key))
                                m->fd = safe_close(m->fd);
                }
                if (m->fd < 0)
                        m->fd = open_mapping_file(t->proc_root, pid, m);
                /* not the path unchecked, as below: the file there may
                 * have been rebuilt since the snapshot */
                if (m->fd < 0) {
                        log_debug("Cannot open %s (inode %" PRIu64 ") for pid %" PRIu32 " any more, ignoring.",
                                  m->path, m->inode, pid);
                        return NULL;
                }
        }
        if (m->fd >= 0) {
                int fd = TAKE_FD(m->fd);

                /* read through the file held, not opened again */
                if (!t->load)
                        safe_close(fd);
                else if (t->load(t->load_userdata, fd, NULL, root, m->path, &f) < 0)
                        f = NULL;
        }
        if (!f && t->load && t->load(t->load_userdata, -1, m->path, root, m->path, &f) < 0)
                f = NULL;
        if (!f)
                log_debug("Cannot read symbols of %s for pid %" PRIu32 ", ignoring.", m->path, pid);
        return f;
}

/* The executable mappings of /proc/PID/maps, sorted by start, files not
 * opened yet. Returns 0, -ENOMEM, or the error reading the file failed
 * with (the process is gone). */
static int parse_exec_maps(char *text, struct proc_mapping **ret, size_t *ret_n) {
        struct proc_mapping *maps = NULL;
        size_t n = 0, cap = 0;
        int r;

        for (char *line = text, *next; line && *line; line = next) {
                struct procmap m;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                r = procmap_parse_exec_line(line, &m);
                if (r < 0 && r != -ENOMEM) {
                        log_debug("Unparsable line in a maps file, ignoring: %s", line);
                        continue;
                }
                if (r == -ENOMEM) {
                        mappings_free(maps, n);
                        return r;
                }
                if (r == 0)
                        continue; /* not executable: no path was copied */
                if (n == cap) {
                        struct proc_mapping *nm = realloc(maps, (cap = cap ? cap * 2 : 16) * sizeof(*maps));
                        if (!nm) {
                                procmap_done(&m);
                                mappings_free(maps, n);
                                return -ENOMEM;
                        }
                        maps = nm;
                }
                maps[n++] = (struct proc_mapping) {
                        .start = m.start,
                        .end = m.end,
                        .offset = m.offset,
                        .dev_major = m.dev_major,
                        .dev_minor = m.dev_minor,
                        .inode = m.inode,
                        .fd = -1,
                        .path = TAKE_PTR(m.path),
                };
        }
        if (n > 0) /* qsort must not get NULL, even for zero items */
                qsort(maps, n, sizeof(*maps), mapping_cmp);
        if (n > 0 && n < cap) {
                /* kept as long as the process is: a build host tracks
                 * thousands, most with a few mappings in an array of 16 */
                struct proc_mapping *fit = realloc(maps, n * sizeof(*maps));
                if (fit)
                        maps = fit;
        }
        *ret = maps;
        *ret_n = n;
        return 0;
}

/* parse_exec_maps of pfd's maps (pfd: a /proc/PID directory). Returns 0,
 * -ENOMEM, or the error reading failed with. */
static int read_exec_maps(int pfd, struct proc_mapping **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_fileat(pfd, "maps", &text);
        if (r < 0)
                return r;
        return parse_exec_maps(text, ret, ret_n);
}

static bool mapping_has_file(const struct proc_mapping *m) {
        return m->path && m->path[0] == '/';
}

/* text: the process's maps as read already (changed in place), or NULL:
 * read through pfd. */
static int snapshot_maps(int pfd, char *text, struct proc *p, snapshot_memo *memo) {
        uint64_t now_ns = memo ? now_monotonic_ns() : 0;
        int r;

        r = text ? parse_exec_maps(text, &p->maps, &p->n_maps) : read_exec_maps(pfd, &p->maps, &p->n_maps);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_maps; i++)
                if (mapping_has_file(&p->maps[i])) {
                        r = open_mapping_fileat(pfd, &p->maps[i], memo, now_ns);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Is the stat file at path (relative to dirfd) the instance that started
 * at start_ns? 0, -ESRCH, or the error reading it failed with. */
static int check_identity_at(int dirfd, const char *path, uint64_t start_ns) {
        _cleanup_free_ char *stat = NULL;
        uint64_t ticks;
        int r;

        r = read_full_fileat(dirfd, path, &stat);
        if (r < 0)
                return r;
        r = procstat_parse_starttime(stat, &ticks);
        if (r < 0)
                return r;
        return ticks == start_ns / ns_per_tick() ? 0 : -ESRCH;
}

/* Is /proc/PID still the instance that started at start_ns? */
static int check_identity(const char *proc_root, uint32_t pid, uint64_t start_ns) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", proc_root, pid);
        return check_identity_at(AT_FDCWD, path, start_ns);
}

/* /proc/PID of instance (pid, start_ns) as a directory (O_PATH), checked
 * once: what is read through it afterwards is that instance's, or fails
 * once it is gone (its entries no longer open; a pid reused meanwhile is
 * another directory). A snapshot read through it needs no second check.
 * Returns the fd, -ESRCH (another instance), or the negative errno opening
 * or reading failed with (the process is gone). */
static int proc_dir_open(const char *proc_root, uint32_t pid, uint64_t start_ns) {
        char path[PATH_MAX];
        int fd, r;

        snprintf(path, sizeof(path), "%s/%" PRIu32, proc_root, pid);
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = check_identity_at(fd, "stat", start_ns);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return fd;
}

/* From /proc/PID/status, the last field of "NSpid:": the pid as the
 * process's own (innermost) pid namespace numbers it. -EINVAL when the
 * line is missing (kernels before 4.1) or malformed. */
static int parse_ns_pid(const char *status, uint32_t *ret) {
        const char *p = strstr(status, "\nNSpid:");
        uint64_t v = 0;
        bool any = false;

        if (!p)
                return -EINVAL;
        p += strlen("\nNSpid:");
        while (*p == '\t' || *p == ' ') {
                p += strspn(p, "\t ");
                if (*p < '0' || *p > '9')
                        break;
                for (v = 0; *p >= '0' && *p <= '9'; p++) {
                        v = v * 10 + (uint64_t) (*p - '0');
                        if (v > UINT32_MAX)
                                return -EINVAL;
                }
                any = true;
        }
        if (!any || (*p != '\n' && *p != '\0'))
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

/* A mapped file's identity, as a snapshot found it at its path. */
struct memo_file {
        struct file_ident id;
        struct file_key key;
        uint64_t until_ns; /* CLOCK_MONOTONIC */
};

struct snapshot_memo {
        char *cgroup_mount; /* NULL: no cgroup v2 mount, nothing kept */
        hashmap *cgroups;   /* cgroup id -> its path (malloc'd) */
        hashmap *files;     /* file_ident_hash -> struct memo_file * */
        struct snapshot_memo_counts counts;
};

static void free_values(hashmap *h) {
        size_t i = 0;
        void *v;

        while (h && hashmap_iterate(h, &i, NULL, &v))
                free(v);
}

snapshot_memo *snapshot_memo_new(const char *cgroup_mount) {
        snapshot_memo *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        m->cgroups = hashmap_new_u64();
        m->files = hashmap_new_u64();
        if (cgroup_mount)
                m->cgroup_mount = strdup(cgroup_mount);
        if (!m->cgroups || !m->files || (cgroup_mount && !m->cgroup_mount))
                return snapshot_memo_free(m);
        return m;
}

snapshot_memo *snapshot_memo_free(snapshot_memo *m) {
        if (!m)
                return NULL;
        free_values(m->cgroups);
        free_values(m->files);
        hashmap_free(m->cgroups);
        hashmap_free(m->files);
        free(m->cgroup_mount);
        free(m);
        return NULL;
}

void snapshot_memo_counts(const snapshot_memo *m, struct snapshot_memo_counts *ret) {
        *ret = m ? m->counts : (struct snapshot_memo_counts) {};
}

/* Puts value under key in *h, emptied first when it holds
 * SNAPSHOT_MEMO_MAX; takes value (freed on failure). Returns 0 or
 * -ENOMEM. */
static int memo_put(hashmap **h, uint64_t key, void *value) {
        void *old;
        int r;

        if (hashmap_size(*h) >= SNAPSHOT_MEMO_MAX) {
                hashmap *fresh = hashmap_new_u64();

                if (!fresh) {
                        free(value);
                        return -ENOMEM;
                }
                free_values(*h);
                hashmap_free(*h);
                *h = fresh;
        }
        if (hashmap_get(*h, UINT64_TO_KEY(key), &old) >= 0) {
                (void) hashmap_remove(*h, UINT64_TO_KEY(key));
                free(old);
        }
        r = hashmap_put(*h, UINT64_TO_KEY(key), value);
        if (r < 0)
                free(value);
        return r < 0 ? r : 0;
}

/* The path of cgroup id, or NULL when it is not known. */
static const char *memo_cgroup(snapshot_memo *m, uint64_t id) {
        void *v;

        if (!m || id == 0 || hashmap_get(m->cgroups, UINT64_TO_KEY(id), &v) < 0)
                return NULL;
        m->counts.cgroups_named++;
        return v;
}

/* Counts a cgroup read, and keeps path as cgroup id's if the mount's
 * directory of that path is that cgroup. Returns 0 (kept or not) or
 * -ENOMEM. */
static int memo_cgroup_learn(snapshot_memo *m, uint64_t id, const char *path) {
        _cleanup_free_ char *dir = NULL;
        char *copy;
        struct stat st;

        if (!m)
                return 0;
        m->counts.cgroups_read++;
        if (!m->cgroup_mount || id == 0 || !path)
                return 0;
        if (asprintf(&dir, "%s%s", m->cgroup_mount, path) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || (uint64_t) st.st_ino != id)
                return 0;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        return memo_put(&m->cgroups, id, copy);
}

/* The identity of the file at inode id, if a snapshot opened it at its
 * path within SNAPSHOT_FILES_TTL_NS. */
static bool memo_file(snapshot_memo *m, const struct file_ident *id, uint64_t now_ns, struct file_key *ret) {
        struct memo_file *f;
        void *v;

        if (!m || hashmap_get(m->files, UINT64_TO_KEY(file_ident_hash(id)), &v) < 0)
                return false;
        f = v;
        if (f->id.dev != id->dev || f->id.ino != id->ino || now_ns >= f->until_ns)
                return false;
        *ret = f->key;
        return true;
}

static void memo_file_known(snapshot_memo *m) {
        m->counts.files_known++;
}

static void memo_file_opened(snapshot_memo *m) {
        if (m)
                m->counts.files_opened++;
}

static int memo_file_learn(snapshot_memo *m, const struct file_ident *id, const struct stat *st, uint64_t now_ns) {
        struct memo_file *f;

        if (!m)
                return 0;
        m->counts.files_opened++;
        f = malloc(sizeof(*f));
        if (!f)
                return -ENOMEM;
        *f = (struct memo_file) { *id, file_key_from_stat(st), now_ns + SNAPSHOT_FILES_TTL_NS };
        return memo_put(&m->files, file_ident_hash(id), f);
}

/* ret_maps: NULL, or where a copy of the maps file as read goes. hint:
 * what need not be read (NULL: read everything). */
static int snapshot(const char *proc_root, struct proc *p, char **ret_maps, const struct proc_hint *hint,
                    snapshot_memo *memo) {
        _cleanup_close_ int pfd = -1;
        _cleanup_free_ char *text = NULL, *maps = NULL;
        const char *cgroup = NULL;
        char buf[PATH_MAX];
        ssize_t n;
        int r;

        pfd = proc_dir_open(proc_root, p->pid, p->start_ns);
        if (pfd < 0)
                return pfd;
        /* the event's name is the leader's, read as the kernel has it */
        if ((!hint || !hint->comm || !hint->comm[0]) && read_full_fileat(pfd, "comm", &text) >= 0) {
                text[strcspn(text, "\n")] = '\0';
                snprintf(p->comm, sizeof(p->comm), "%s", text);
                text = (free(text), NULL);
        }
        n = readlinkat(pfd, "exe", buf, sizeof(buf) - 1);
        if (n > 0) {
                buf[n] = '\0';
                p->exe = strdup(buf);
                if (!p->exe)
                        return -ENOMEM;
        }
        if (hint && hint->have_ids) {
                p->uid = hint->euid;
                p->have_uid = true;
                p->ns_pid = hint->ns_pid;
        } else if (read_full_fileat(pfd, "status", &text) >= 0) {
                p->have_uid = procstatus_parse_euid(text, &p->uid) >= 0;
                if (parse_ns_pid(text, &p->ns_pid) < 0)
                        p->ns_pid = p->pid;
                text = (free(text), NULL);
        }
        if (hint && (cgroup = memo_cgroup(memo, hint->cgroup_id))) {
                p->cgroup = strdup(cgroup);
                if (!p->cgroup)
                        return -ENOMEM;
        } else if (read_full_fileat(pfd, "cgroup", &text) >= 0) {
                r = proccgroup_parse_v2(text, &p->cgroup);
                if (r == -ENOMEM)
                        return r;
                text = (free(text), NULL);
                if (memo_cgroup_learn(memo, hint ? hint->cgroup_id : 0, p->cgroup) < 0)
                        return -ENOMEM;
        }
        /* the process may exit while it is read: through pfd, its maps are
         * then empty or unreadable, never another process's */
        if (ret_maps) {
                r = read_full_fileat(pfd, "maps", &text);
                if (r < 0)
                        return r;
                maps = strdup(text);
                if (!maps)
                        return -ENOMEM;
        }
        r = snapshot_maps(pfd, text, p, memo);
        if (r < 0)
                return r;
        p->snapshotted = true;
        if (ret_maps)
                *ret_maps = TAKE_PTR(maps);
        return 0;
}

/* A table entry for instance (pid, start_ns), nothing read yet; NULL
 * without memory. */
static struct entry *entry_new(uint32_t pid, uint64_t start_ns) {
        struct entry *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        e->key = (struct proc_key) { pid, start_ns };
        e->proc.pid = pid;
        e->proc.start_ns = start_ns;
        e->proc.jit_fd = -1;
        return e;
}

/* A snapshot of instance (pid, start_ns) named comm until read. */
static int snapshot_new(const char *proc_root, uint32_t pid, uint64_t start_ns, const char *comm,
                        const struct proc_hint *hint, snapshot_memo *memo, struct proc **ret, bool *ret_vanished,
                        char **ret_maps) {
        struct entry *e = entry_new(pid, start_ns);
        int r;

        if (ret_maps)
                *ret_maps = NULL;
        if (!e)
                return -ENOMEM;
        snprintf(e->proc.comm, sizeof(e->proc.comm), "%s", comm ?: "");
        r = snapshot(proc_root, &e->proc, ret_maps, hint, memo);
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

int proc_snapshot(const char *proc_root, uint32_t pid, uint64_t start_ns, const char *comm, struct proc **ret,
                  bool *ret_vanished, char **ret_maps) {
        return snapshot_new(proc_root, pid, start_ns, comm, NULL, NULL, ret, ret_vanished, ret_maps);
}

int proc_snapshot_hinted(const char *proc_root, uint32_t pid, uint64_t start_ns, const struct proc_hint *hint,
                         snapshot_memo *memo, struct proc **ret, bool *ret_vanished, char **ret_maps) {
        return snapshot_new(proc_root, pid, start_ns, hint ? hint->comm : NULL, hint, memo, ret, ret_vanished,
                            ret_maps);
}

int proc_snapshot_maps(const char *proc_root, uint32_t pid, uint64_t start_ns, char *maps_text, struct proc **ret) {
        struct entry *e = entry_new(pid, start_ns);
        _cleanup_close_ int pfd = -1;
        int r;

        if (!e)
                return -ENOMEM;
        e->proc.maps_only = true;
        pfd = proc_dir_open(proc_root, pid, start_ns);
        r = pfd < 0 ? pfd : snapshot_maps(pfd, maps_text, &e->proc, NULL);
        if (r < 0) {
                entry_free(e);
                return r == -ENOMEM ? r : -ESRCH;
        }
        e->proc.snapshotted = true;
        *ret = &e->proc;
        return 0;
}

uint64_t proc_maps_signature(const struct proc *p) {
        uint64_t sig = 0;

        for (size_t i = 0; i < p->n_maps; i++)
                sig = procmap_signature_add(sig, p->maps[i].start, p->maps[i].end);
        return sig;
}

static bool mapping_same(const struct proc_mapping *a, const struct proc_mapping *b) {
        return a->start == b->start && a->end == b->end && a->offset == b->offset && a->inode == b->inode &&
               a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
               !a->path == !b->path; /* anonymous stays anonymous */
}

static bool mappings_overlap(const struct proc_mapping *maps, size_t n, uint64_t start, uint64_t end) {
        /* disjoint and sorted: only the last one starting before end can reach into [start, end) */
        size_t lo = LOWER_BOUND_BY(maps, n, start, end);

        return lo > 0 && maps[lo - 1].end > start;
}

/* Why 2: a mapping gone at one re-read may still have samples in the
 * generation being collected (the drain after the one being written). */
#define STALE_REREADS_KEPT 2

/* Makes fresh (what /proc/PID/maps lists now: sorted, disjoint, owned;
 * the files of new mappings open or not) p's mappings: a mapping found again
 * keeps its path (a file deleted since is listed as "PATH (deleted)") and
 * its symbols, and its fresh file is closed; a new one's symbols are read
 * now; one no longer listed is kept unless a new mapping overlaps it, for
 * STALE_REREADS_KEPT more re-reads at drains (count_reread: this merge is
 * one; the event loop's merges come at any moment, many within a drain,
 * and do not count). Returns 0 or -ENOMEM (fresh freed). */
static int maps_merge(proctable *t, struct proc *p, struct proc_mapping *fresh, size_t n_fresh, bool count_reread) {
        _cleanup_free_ bool *taken = NULL;   /* p->maps[k] is mapped still */
        struct proc_mapping *merged;
        size_t n = 0;

        taken = calloc(p->n_maps + 1, sizeof(*taken));
        merged = calloc(n_fresh + p->n_maps + 1, sizeof(*merged));
        if (!taken || !merged) {
                free(merged);
                mappings_free(fresh, n_fresh);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_fresh; i++) {
                const struct proc_mapping *old = proc_find_mapping(p, fresh[i].start);

                if (old && mapping_same(old, &fresh[i])) {
                        size_t k = (size_t) (old - p->maps);

                        taken[k] = true;
                        free(fresh[i].path);
                        safe_close(fresh[i].fd);
                        merged[n] = p->maps[k];
                        merged[n++].stale = 0;
                        continue;
                }
                if (mapping_has_file(&fresh[i])) {
                        fresh[i].file = load_mapping_file(t, p->pid, &fresh[i]);
                        log_debug("Process %" PRIu32 " (%s) mapped %s since it was last read.", p->pid, p->comm,
                                  fresh[i].path);
                }
                merged[n++] = fresh[i];
        }
        free(fresh);
        /* what is gone, for a while, where nothing new took its place */
        for (size_t k = 0; k < p->n_maps; k++) {
                struct proc_mapping *old = &p->maps[k];

                if (taken[k])
                        continue;
                if (old->stale < STALE_REREADS_KEPT && !mappings_overlap(merged, n_fresh, old->start, old->end)) {
                        merged[n] = *old;
                        merged[n++].stale += count_reread;
                } else {
                        free(old->path);
                        safe_close(old->fd);
                }
        }
        qsort(merged, n, sizeof(*merged), mapping_cmp);
        if (n > 0) {
                struct proc_mapping *fit = realloc(merged, n * sizeof(*merged));
                if (fit)
                        merged = fit;
        }
        free(p->maps);
        p->maps = merged;
        p->n_maps = n;
        return 0;
}

int proctable_add(proctable *t, struct proc *p) {
        struct entry *e = entry_of(p), *old;
        int r;

        if (p->maps_only) {
                if (hashmap_get(t->procs, &e->key, (void **) &old) < 0)
                        old = NULL;
                if (old && old->proc.snapshotted) {
                        struct proc_mapping *maps = TAKE_PTR(p->maps);
                        size_t n = p->n_maps;

                        p->n_maps = 0;
                        entry_free(e);
                        return maps_merge(t, &old->proc, maps, n, false);
                }
                /* the announcement's snapshot found the process gone (or
                 * there was none): these mappings are all there is */
                if (old)
                        snprintf(p->comm, sizeof(p->comm), "%s", old->proc.comm);
                p->maps_only = false;
        }
        for (size_t i = 0; i < p->n_maps; i++)
                if (mapping_has_file(&p->maps[i]))
                        p->maps[i].file = load_mapping_file(t, p->pid, &p->maps[i]);
        old = hashmap_remove(t->procs, &e->key);
        if (old)
                proc_close_jit_fd(t, &old->proc);
        entry_free(old);
        r = hashmap_put(t->procs, &e->key, e);
        if (r < 0)
                entry_free(e);
        return r;
}

void proctable_reload_files(proctable *t) {
        const void *k;
        void *v;
        size_t i = 0;

        while (hashmap_iterate(t->procs, &i, &k, &v)) {
                struct proc *p = &((struct entry *) v)->proc;

                for (size_t j = 0; j < p->n_maps; j++) {
                        struct proc_mapping *m = &p->maps[j];

                        m->file = NULL;
                        if (!m->path || m->path[0] != '/')
                                continue;
                        /* the process's own view first: the file may be gone from ours */
                        if (p->exited_seq == 0)
                                m->fd = open_mapping_file(t->proc_root, p->pid, m);
                        m->file = load_mapping_file(t, p->pid, m);
                }
        }
}

void proctable_foreach_file(proctable *t, void (*fn)(const sym_file *f, void *userdata), void *userdata) {
        const void *k;
        void *v;
        size_t i = 0;

        while (hashmap_iterate(t->procs, &i, &k, &v)) {
                const struct proc *p = &((struct entry *) v)->proc;

                for (size_t j = 0; j < p->n_maps; j++)
                        fn(p->maps[j].file, userdata);
        }
}

struct proc *proctable_get(proctable *t, uint32_t pid, uint64_t start_ns) {
        struct proc_key key = { pid, start_ns };
        void *v;

        if (hashmap_get(t->procs, &key, &v) < 0)
                return NULL;
        return &((struct entry *) v)->proc;
}

const struct proc_mapping *proc_find_mapping(const struct proc *p, uint64_t addr) {
        /* sorted and disjoint: only the last one starting at or before addr can hold it */
        size_t i = UPPER_BOUND_BY(p->maps, p->n_maps, start, addr);

        return i > 0 && addr < p->maps[i - 1].end ? &p->maps[i - 1] : NULL;
}

void proctable_prune(proctable *t, uint64_t drain_seq, uint64_t queued_seq) {
        _cleanup_free_ struct entry **gone = NULL;
        size_t n_gone = 0, i = 0;
        const void *k;
        void *v;

        gone = calloc(hashmap_size(t->procs) + 1, sizeof(*gone));
        if (!gone)
                return; /* try again after the next drain */
        while (hashmap_iterate(t->procs, &i, &k, &v)) {
                struct entry *e = v;

                if (e->proc.exited_seq == 0) {
                        if (check_identity(t->proc_root, e->key.pid, e->key.start_ns) < 0)
                                e->proc.exited_seq = MAX(queued_seq, (uint64_t) 1);
                } else if (drain_seq > e->proc.exited_seq && ++e->proc.exited_drains >= 2)
                        gone[n_gone++] = e;
        }
        for (i = 0; i < n_gone; i++) {
                hashmap_remove(t->procs, &gone[i]->key);
                proc_close_jit_fd(t, &gone[i]->proc);
                entry_free(gone[i]);
        }
}

size_t proctable_size(const proctable *t) {
        return hashmap_size(t->procs);
}


bool proc_mapping_is_anonymous(const struct proc_mapping *m) {
        if (!m->path)
                return true;
        if (strncmp(m->path, "[anon:", strlen("[anon:")) == 0)
                return true;
        return !m->file && strncmp(m->path, "/memfd:", strlen("/memfd:")) == 0;
}

int proctable_refresh_maps(proctable *t, struct proc *p) {
        _cleanup_close_ int pfd = -1;
        struct proc_mapping *fresh = NULL;
        size_t n_fresh = 0;
        int r;

        if (!p->snapshotted || p->gone)
                return 0;
        pfd = proc_dir_open(t->proc_root, p->pid, p->start_ns);
        r = pfd < 0 ? pfd : read_exec_maps(pfd, &fresh, &n_fresh);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                p->gone = true;
                return 0;
        }
        /* only new mappings' files are opened: the others keep their symbols */
        for (size_t i = 0; i < n_fresh; i++) {
                const struct proc_mapping *old = proc_find_mapping(p, fresh[i].start);

                if (!(old && mapping_same(old, &fresh[i])) && mapping_has_file(&fresh[i]))
                        (void) open_mapping_fileat(pfd, &fresh[i], NULL, 0); /* no memo: cannot fail */
        }
        return maps_merge(t, p, fresh, n_fresh, true);
}

/* Opens /tmp/perf-NSPID.map as the process sees it: from its root, with
 * symlinks resolved inside that root (RESOLVE_IN_ROOT), so a container can
 * not point profd at a file of the host. Returns the fd or a negative errno. */
static int open_perf_map(const char *proc_root, const struct proc *p) {
        char root[PATH_MAX], name[64];
        _cleanup_close_ int dfd = -1;
        struct open_how how = {
                /* O_NONBLOCK: a FIFO put there must not hang the writer */
                .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        int fd;

        snprintf(root, sizeof(root), "%s/%" PRIu32 "/root", proc_root, p->pid);
        dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        snprintf(name, sizeof(name), "tmp/perf-%" PRIu32 ".map", p->ns_pid ? p->ns_pid : p->pid);
        fd = (int) syscall(SYS_openat2, dfd, name, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                /* before Linux 5.6: at least the file itself must not be a symlink */
                fd = openat(dfd, name, (int) how.flags | O_NOFOLLOW);
        return fd < 0 ? negative_errno() : fd;
}

/* Reads up to size bytes at offset, fewer only at the end of the file.
 * Returns the number read or a negative errno. */
static ssize_t pread_full(int fd, char *buf, size_t size, uint64_t offset) {
        size_t n = 0;

        while (n < size) {
                ssize_t k = pread(fd, buf + n, size - n, (off_t) (offset + n));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        return (ssize_t) n;
}

/* The process's start as CLOCK_REALTIME ns, to compare with file times. */
static int64_t proc_start_realtime_ns(const struct proc *p) {
        struct timespec real, boot;

        clock_gettime(CLOCK_REALTIME, &real);
        clock_gettime(CLOCK_BOOTTIME, &boot);
        return (int64_t) real.tv_sec * (int64_t) NSEC_PER_SEC + real.tv_nsec -
               ((int64_t) boot.tv_sec * (int64_t) NSEC_PER_SEC + boot.tv_nsec) + (int64_t) p->start_ns;
}

/* Opens the perf map by path and checks it may be used: a regular file,
 * owned by root or the process's effective uid, written since the process
 * started. Returns the fd, or -1. */
static int open_perf_map_checked(proctable *t, const struct proc *p) {
        _cleanup_close_ int fd = open_perf_map(t->proc_root, p);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -1; /* most processes have no perf map */
        if (st.st_uid != 0 && !(p->have_uid && st.st_uid == p->uid)) {
                log_debug("Perf map of process %" PRIu32 " (%s) belongs to uid %u, not to the process, ignoring.",
                          p->pid, p->comm, (unsigned) st.st_uid);
                return -1;
        }
        /* Nobody deletes these files: one last written before this process
         * started was left by an earlier process with the same pid. (A
         * second of slack for clocks read at different times.) */
        if ((int64_t) st.st_mtim.tv_sec * (int64_t) NSEC_PER_SEC + st.st_mtim.tv_nsec <
            proc_start_realtime_ns(p) - (int64_t) NSEC_PER_SEC)
                return -1;
        return TAKE_FD(fd);
}

int proctable_refresh_jit(proctable *t, struct proc *p) {
        _cleanup_close_ int opened = -1; /* opened by path now, not yet known to be this process's */
        _cleanup_free_ char *buf = NULL;
        struct jitmap_stats before, after;
        struct proc_jit_file now;
        uint64_t from, want;
        bool restart;
        struct stat st;
        ssize_t got;
        size_t used;
        int fd, r;

        if (!p->snapshotted)
                return 0;
        if (p->jit_fd >= 0 && fstat(p->jit_fd, &st) >= 0 && st.st_nlink == 0 && !p->gone)
                proc_close_jit_fd(t, p); /* deleted: look for a new one at the path */
        if (p->jit_fd < 0) {
                if (p->gone)
                        return 0;
                opened = open_perf_map_checked(t, p);
                if (opened < 0)
                        return 0;
        }
        fd = p->jit_fd >= 0 ? p->jit_fd : opened;
        if (fstat(fd, &st) < 0)
                return 0;
        now = (struct proc_jit_file) {
                .dev = st.st_dev,
                .ino = st.st_ino,
                .size = st.st_size,
                .mtime_ns = (int64_t) st.st_mtim.tv_sec * (int64_t) NSEC_PER_SEC + st.st_mtim.tv_nsec,
        };
        restart = !p->jit || now.dev != p->jit_file.dev || now.ino != p->jit_file.ino;
        if (!restart && now.size == p->jit_file.size && now.mtime_ns == p->jit_file.mtime_ns && !p->jit_file.more) {
                if (p->gone)
                        proc_close_jit_fd(t, p); /* nothing more will come */
                return 0; /* unchanged since the last read */
        }
        /* appended to (the normal case), or shrunk or rewritten in place */
        if (!restart && ((uint64_t) now.size < p->jit_file.offset ||
                         (now.size == p->jit_file.size && !p->jit_file.more)))
                restart = true;
        from = restart ? 0 : p->jit_file.offset;
        want = MIN((uint64_t) now.size - from, (uint64_t) PROC_JIT_READ_BUDGET);
        buf = malloc(want + 1);
        if (!buf)
                return -ENOMEM;
        got = pread_full(fd, buf, want, from);
        if (got < 0) {
                log_debug_errno((int) got, "Cannot read the perf map of process %" PRIu32 " (%s), ignoring: %m",
                                p->pid, p->comm);
                return 0;
        }
        if (check_identity(t->proc_root, p->pid, p->start_ns) < 0) {
                /* A file just found through the pid may be another
                 * process's; one held open since is this process's, and
                 * what it wrote before it exited is read now, once. Unless
                 * it was rewritten: then a process that took over the pid
                 * may be writing it. */
                p->gone = true;
                if (p->jit_fd < 0 || restart) {
                        proc_close_jit_fd(t, p);
                        return 0;
                }
        }
        if (!p->jit) {
                r = jitmap_new(JITMAP_MAX_ENTRIES, &p->jit);
                if (r < 0)
                        return r;
        } else if (restart)
                jitmap_reset(p->jit);
        jitmap_get_stats(p->jit, &before);
        r = jitmap_feed(p->jit, buf, (size_t) got, &used);
        if (r < 0)
                return r;
        jitmap_get_stats(p->jit, &after);
        t->jit_dropped += after.dropped - before.dropped;
        log_debug("Perf map of process %" PRIu32 " (%s): read %zd bytes at %" PRIu64 "%s, %zu entries kept.",
                  p->pid, p->comm, got, from, restart ? " (from the start)" : "", jitmap_size(p->jit));
        if (before.dropped == 0 && after.dropped > 0)
                log_warning("Perf map of process %" PRIu32 " (%s) names more than %d live code ranges; "
                            "newer ones stay unresolved (counted as jit_map_entries_dropped).",
                            p->pid, p->comm, JITMAP_MAX_ENTRIES);
        if (after.invalid > before.invalid)
                log_debug("Perf map of process %" PRIu32 " (%s): %" PRIu64 " unparsable lines, ignoring.", p->pid,
                          p->comm, after.invalid - before.invalid);
        p->jit_file = now;
        p->jit_file.offset = from + used;
        p->jit_file.more = from + (uint64_t) got < (uint64_t) now.size;

        /* Held open, the map is still read after the process exits, for what
         * it wrote since the last drain. */
        if (opened >= 0 && t->jit_fds_open < PROC_JIT_MAX_OPEN) {
                p->jit_fd = TAKE_FD(opened);
                t->jit_fds_open++;
        }
        if (p->gone && !p->jit_file.more)
                proc_close_jit_fd(t, p);
        return 0;
}

const char *proc_jit_lookup(const struct proc *p, uint64_t addr) {
        return p->jit ? jitmap_lookup(p->jit, addr) : NULL;
}

uint64_t proctable_jit_entries_dropped(const proctable *t) {
        return t->jit_dropped;
}
