/* What profd knows of each process instance (pid + start time) that produced
 * samples. The event loop snapshots /proc/PID the moment a process is
 * announced, while it lives, and opens its mapped files; the writer thread
 * keeps the snapshots in the table and reads the files' symbols, so frames
 * still resolve after the process exits or its files are deleted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jitmap.h"
#include "mapfile.h"

/* A mapped file's symbols, as the symbols stage (symbols/symfile.h) keeps
 * them: only pointed at here. */
typedef struct sym_file sym_file;

struct proc_mapping {
        uint64_t start, end, offset;
        unsigned dev_major, dev_minor;
        uint64_t inode;        /* with the device: which file, whatever its path says now */
        char *path;            /* as /proc/PID/maps names it: a file, "[vdso]", or NULL (anonymous) */
        int fd;                /* the mapped file, open from the snapshot until its symbols are read; -1 */
        struct file_key key;   /* keyed: the file as an earlier snapshot found it (snapshot_memo), fd -1 */
        bool keyed;
        const sym_file *file;  /* symbols, or NULL when the file could not be read */
        unsigned stale;        /* re-reads of the maps it was missing from (see proctable_refresh_maps) */
};

/* Which version of a perf map was read, and how far. */
struct proc_jit_file {
        uint64_t dev, ino;
        int64_t size;
        int64_t mtime_ns;
        uint64_t offset;       /* bytes used: up to the last complete line */
        bool more;             /* stopped at the read budget, not at the end */
};

struct proc {
        uint32_t pid;
        uint64_t start_ns;     /* boot-time ns: identity together with pid */
        char comm[16];
        char *exe;             /* NULL when unknown */
        uint32_t uid;          /* effective uid: whose rights it runs with */
        bool have_uid;
        char *cgroup;          /* cgroup v2 path, NULL when unknown */
        bool snapshotted;      /* false: the process was gone before we looked */
        bool maps_only;        /* proc_snapshot_maps: the mappings alone, merged into the instance's */
        uint64_t exited_seq;   /* 0, or the last job queued to the writer when it was first found gone */
        unsigned exited_drains; /* drains queued after exited_seq, written since */
        struct proc_mapping *maps; /* executable mappings, sorted by start, disjoint */
        size_t n_maps;
        uint32_t ns_pid;       /* its pid in its own pid namespace, which names its perf map */

        /* The writer thread's, for frames the snapshot cannot resolve: */
        bool gone;             /* found exited (or its pid reused) on a re-read: /proc is not read again */
        uint64_t maps_round, jit_round; /* the last round (drain) that re-read the maps, the perf map */
        jitmap *jit;           /* the perf map's entries, NULL until one was read; kept after exit */
        int jit_fd;            /* the perf map, held open to read it after the process exits; -1 */
        struct proc_jit_file jit_file;
};

/* What a process event told of the instance (bpf/profd.h), so that the
 * snapshot need not read it from /proc. */
struct proc_hint {
        const char *comm;      /* the leader's name; NULL or "": read comm */
        bool have_ids;         /* euid and ns_pid are the leader's; false: read status */
        uint32_t euid, ns_pid;
        uint64_t cgroup_id;    /* its cgroup v2 id; 0: unknown (cgroup read) */
};

/* What the event loop's snapshots remember between processes, so that
 * the next process in the same cgroup or mapping the same files costs
 * fewer reads (issue 43). Only the event loop's thread uses it.
 *
 * Cgroups: each id's path, read from /proc/PID/cgroup once. A path is kept
 * only once the directory it names under the cgroup v2 mount is the cgroup
 * of that id (its inode number), so a process that changed cgroups between
 * its event and its snapshot is read, not cached under the id it left.
 *
 * Files: the identity (struct file_key: device, inode, size, mtime) of
 * each mapped file a snapshot opened at its path, by the inode its maps
 * line names, for SNAPSHOT_FILES_TTL_NS: a mapping of that inode in another
 * process within that time, whose path a stat finds with that very
 * identity still, is not opened again; the mapping carries the identity
 * for the writer, which has its symbols by then (else it opens the path
 * itself, by the inode again). A file rebuilt under a reused inode number,
 * or rewritten in place, has another size or mtime: opened.
 *
 * Each map holds at most SNAPSHOT_MEMO_MAX entries, then starts over. */
#define SNAPSHOT_MEMO_MAX 4096
#define SNAPSHOT_FILES_TTL_NS (UINT64_C(10) * 1000000000)
typedef struct snapshot_memo snapshot_memo;
/* cgroup_mount: the cgroup v2 mount ("/sys/fs/cgroup"), NULL when there is
 * none (every cgroup read). NULL on OOM. */
snapshot_memo *snapshot_memo_new(const char *cgroup_mount);
snapshot_memo *snapshot_memo_free(snapshot_memo *m);
struct snapshot_memo_counts {
        uint64_t cgroups_named, cgroups_read; /* a new process's cgroup from the memo, from /proc */
        uint64_t files_known, files_opened;   /* mapped files known by identity, opened */
};
void snapshot_memo_counts(const snapshot_memo *m, struct snapshot_memo_counts *ret);

/* Reads /proc/PID under proc_root ("/proc") now and opens the executable
 * mappings' files (through map_files: deleted files and other mount
 * namespaces included). A process already gone (or whose pid now belongs to
 * another instance) still gives a proc, with pid, start and comm only, and
 * *ret_vanished set. ret_maps (unless NULL): a copy of /proc/PID/maps as
 * this snapshot read it (malloc'd), for the unwinder, which then need not
 * read it again; NULL if the process was gone. Returns 0 or -ENOMEM.
 * Cheap: no file is parsed. */
int proc_snapshot(const char *proc_root, uint32_t pid, uint64_t start_ns, const char *comm, struct proc **ret,
                  bool *ret_vanished, char **ret_maps);
/* proc_snapshot, reading from /proc only what hint does not tell (hint:
 * NULL for all of it), and what memo (NULL: none) does not know. */
int proc_snapshot_hinted(const char *proc_root, uint32_t pid, uint64_t start_ns, const struct proc_hint *hint,
                         snapshot_memo *memo, struct proc **ret, bool *ret_vanished, char **ret_maps);
/* Reads only /proc/PID/maps under proc_root now (or takes maps_text, the
 * same file as read moments ago by whoever found the change, changed in
 * place; NULL: read it) and opens the executable mappings' files, for an
 * instance already announced whose mappings have changed since (the
 * unwinder found new ones): proctable_add merges them into the instance's
 * own, as proctable_refresh_maps does, so a library the dynamic loader
 * mapped after the exec's snapshot still resolves once the process has
 * exited. Text read before the instance is checked to be alive under pid
 * was its own: it was announced before. Returns 0, -ENOMEM, or -ESRCH
 * (also when the maps cannot be read) when the process is gone or its pid
 * belongs to another instance. */
int proc_snapshot_maps(const char *proc_root, uint32_t pid, uint64_t start_ns, char *maps_text, struct proc **ret);
/* procmap_signature_add over a snapshot's executable mappings. */
uint64_t proc_maps_signature(const struct proc *p);
/* Frees a snapshot not handed to a table, closing its files. NULL is fine. */
struct proc *proc_free(struct proc *p);

/* Reads the name of thread tid of process pid (proc_root/PID/task/TID/comm,
 * the name pthread_setname_np or PR_SET_NAME gave it) into ret, without
 * the newline. Returns 0; -ENOENT when the thread has ended (or is not
 * pid's), or what reading failed with. */
int proc_thread_comm(const char *proc_root, uint32_t pid, uint32_t tid, char ret[16]);

typedef struct proctable proctable;

/* How the table reads the symbols of a process's mapped file: through fd
 * when it is not negative (taken over: closed in every case), else by
 * opening open_path; as symbolizer_load_file_fd and _at (root_prefix,
 * display_path). The symbols stage sits above processes/, so the one that
 * owns both (the writer) passes it in. Returns 0 with *ret, or a negative
 * errno. */
typedef int (*proctable_load_fn)(void *userdata, int fd, const char *open_path, const char *root_prefix,
                                 const char *display_path, const sym_file **ret);

/* A table that reads mapped files' symbols through load (NULL: none are
 * read, the mappings have no file). Returns 0 or -ENOMEM. */
int proctable_new(proctable_load_fn load, void *userdata, const char *proc_root, proctable **ret);
/* How the table finds the symbols of a mapped file the snapshot did not
 * open (keyed by the memo): those the symbols stage holds under key, or
 * -ENOENT (then the table opens the file by its path and inode). */
typedef int (*proctable_lookup_fn)(void *userdata, const struct file_key *key, const sym_file **ret);
void proctable_set_lookup(proctable *t, proctable_lookup_fn lookup);
/* proc_thread_comm under the table's proc_root. */
int proctable_thread_comm(proctable *t, uint32_t pid, uint32_t tid, char ret[16]);
proctable *proctable_free(proctable *t);

/* Takes a snapshot into the table, replacing an older one of the same
 * instance (after an exec), and reads the symbols of its mapped files,
 * closing them. A maps_only snapshot is merged into the instance's
 * mappings instead (mappings it already has keep their symbols), and added
 * as it is only when the instance has none. Returns 0 or -ENOMEM. */
int proctable_add(proctable *t, struct proc *p);

/* Reads the symbols of every mapped file again, after the symbolizer evicted
 * files (symbolizer_trim): the pointers held until then are no longer valid.
 * Files of processes that exited resolve only if their path still leads to
 * them. */
void proctable_reload_files(proctable *t);

/* Calls fn with the file of every mapping of every process in the table
 * (NULL where there is none): the writer marks them for the symbolizer's
 * next trim (symbolizer_mark_begin), so files no process here maps for a
 * while are then evicted. */
void proctable_foreach_file(proctable *t, void (*fn)(const sym_file *f, void *userdata), void *userdata);

/* The instance (pid, start_ns), or NULL if it was never announced. */
struct proc *proctable_get(proctable *t, uint32_t pid, uint64_t start_ns);

/* The executable mapping containing addr, or NULL. */
const struct proc_mapping *proc_find_mapping(const struct proc *p, uint64_t addr);

/* Whether a mapping is executable memory where a JIT may have put code:
 * anonymous, a named anonymous region ("[anon:...]"), or a memfd
 * ("/memfd:...") whose contents are not an ELF file with symbols. */
bool proc_mapping_is_anonymous(const struct proc_mapping *m);

/* Re-reads /proc/PID/maps of a process that was snapshotted and is not known
 * to be gone, for addresses the snapshot does not cover: code mapped since
 * (a JIT's code space, libraries loaded late, a snapshot taken at exec before
 * the dynamic loader ran). Mappings found again keep their symbols; new file
 * mappings are opened through map_files and their symbols read now. A
 * mapping no longer listed is kept for two more re-reads (samples of the
 * drains in flight may still point into it) unless a new mapping overlaps
 * it, so the list is bounded by what the process maps. If the process is
 * gone or its pid was reused, nothing changes and p->gone is set. Returns 0
 * or -ENOMEM. */
int proctable_refresh_maps(proctable *t, struct proc *p);

/* Reads what the process's perf map gained since the last call: the file
 * /tmp/perf-NSPID.map as the process sees it (through /proc/PID/root,
 * symlinks resolved inside that root, so a container's own /tmp is read),
 * only if it is a regular file owned by root or by the process's effective
 * uid (so nobody else can name another user's code), and last written
 * after the process started (an older one was left by an earlier process
 * with the same pid: nothing deletes these files). A file that changed
 * size or modification time is read from where the last read stopped (a
 * JIT only appends), a replaced or shrunk one from the start; at most
 * PROC_JIT_READ_BUDGET bytes per call, the rest on the next.
 *
 * A map found through the pid is used only if the process is still the
 * same instance after the read (else p->gone is set), and is then held open
 * (up to PROC_JIT_MAX_OPEN across the table), so that what the JIT wrote
 * between the last drain and its exit is still read by the drain holding
 * its last samples; it is closed after that read, or when the process is
 * dropped. The entries stay with the process after it exits. Returns 0
 * (also when there is no map, or it cannot be read: frames then stay
 * unresolved) or -ENOMEM. */
int proctable_refresh_jit(proctable *t, struct proc *p);

/* Why 256: a quarter of the usual soft limit of 1024 open files, leaving
 * room for the mapped files snapshots hold; a JIT process beyond it is
 * still read, by path, while it lives. */
#define PROC_JIT_MAX_OPEN 256

/* Why 4 MiB: about 50 thousand perf map lines, a JVM's startup burst, read
 * in some 10 ms; a bigger backlog is spread over the next drains rather
 * than holding up this one. */
#define PROC_JIT_READ_BUDGET (4u << 20)

/* The perf map's name for addr, or NULL. Lives until the next
 * proctable_refresh_jit of p, or until p is freed. */
const char *proc_jit_lookup(const struct proc *p, uint64_t addr);

/* Perf map entries dropped over JITMAP_MAX_ENTRIES, all processes, since
 * the table was made. */
uint64_t proctable_jit_entries_dropped(const proctable *t);

/* Called after drain job drain_seq was written, with queued_seq the last job
 * queued so far. Forgets processes whose every sample has been written: a
 * process found gone now may have samples in every drain queued (the writer
 * may lag behind by several), in a generation taken out of the kernel but
 * not queued yet, and in the one being collected. So it is kept until two
 * drains queued after queued_seq have been written. */
void proctable_prune(proctable *t, uint64_t drain_seq, uint64_t queued_seq);

size_t proctable_size(const proctable *t);
