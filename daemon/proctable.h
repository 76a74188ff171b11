/* What profd knows of each process instance (pid + start time) that produced
 * samples. The event loop snapshots /proc/PID the moment a process is
 * announced, while it lives, and opens its mapped files; the writer thread
 * keeps the snapshots in the table and reads the files' symbols, so frames
 * still resolve after the process exits or its files are deleted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer.h"

struct proc_mapping {
        uint64_t start, end, offset;
        char *path;            /* as /proc/PID/maps names it: a file, "[vdso]", or NULL (anonymous) */
        int fd;                /* the mapped file, open from the snapshot until its symbols are read; -1 */
        const sym_file *file;  /* symbols, or NULL when the file could not be read */
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
        unsigned exited_drains; /* drains since it was first found gone */
        struct proc_mapping *maps; /* executable mappings, sorted by start */
        size_t n_maps;
};

/* Reads /proc/PID under proc_root ("/proc") now and opens the executable
 * mappings' files (through map_files: deleted files and other mount
 * namespaces included). A process already gone (or whose pid now belongs to
 * another instance) still gives a proc, with pid, start and comm only, and
 * *ret_vanished set. Returns 0 or -ENOMEM. Cheap: no file is parsed. */
int proc_snapshot(const char *proc_root, uint32_t pid, uint64_t start_ns, const char *comm, struct proc **ret,
                  bool *ret_vanished);
/* Frees a snapshot not handed to a table, closing its files. NULL is fine. */
struct proc *proc_free(struct proc *p);

typedef struct proctable proctable;

int proctable_new(symbolizer *sym, const char *proc_root, proctable **ret);
proctable *proctable_free(proctable *t);

/* Takes a snapshot into the table, replacing an older one of the same
 * instance (after an exec), and reads the symbols of its mapped files,
 * closing them. Returns 0 or -ENOMEM. */
int proctable_add(proctable *t, struct proc *p);

/* The instance (pid, start_ns), or NULL if it was never announced. */
struct proc *proctable_get(proctable *t, uint32_t pid, uint64_t start_ns);

/* The executable mapping containing addr, or NULL. */
const struct proc_mapping *proc_find_mapping(const struct proc *p, uint64_t addr);

/* Forgets processes that exited before the previous call: their samples have
 * been drained by now (a process found gone now may still have samples in
 * the generation being written, so it is kept one more round). */
void proctable_prune(proctable *t);

size_t proctable_size(const proctable *t);
