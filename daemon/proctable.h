/* The process table: what profd knows of each process instance (pid + start
 * time) that produced samples, snapshotted from /proc/PID while it lived, so
 * its frames still resolve after it exits. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer.h"

struct proc_mapping {
        uint64_t start, end, offset;
        char *path;            /* as /proc/PID/maps names it: a file, "[vdso]", or NULL (anonymous) */
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

typedef struct proctable proctable;

int proctable_new(symbolizer *sym, const char *proc_root, proctable **ret);
proctable *proctable_free(proctable *t);

/* Records a process instance announced by the BPF programs and snapshots
 * /proc/PID. exec: the image was replaced, so an existing snapshot is taken
 * again. A process that is already gone is still recorded (with the comm from
 * the event) and counted as vanished. Returns 0 or -ENOMEM. */
int proctable_learn(proctable *t, uint32_t pid, uint64_t start_ns, const char *comm, bool exec);

/* The instance (pid, start_ns), or NULL if it was never announced. */
struct proc *proctable_get(proctable *t, uint32_t pid, uint64_t start_ns);

/* The executable mapping containing addr, or NULL. */
const struct proc_mapping *proc_find_mapping(const struct proc *p, uint64_t addr);

/* Forgets processes that exited before the previous call: their samples have
 * been drained by now (a process found gone now may still have samples in
 * the generation being written, so it is kept one more round). */
void proctable_prune(proctable *t);

size_t proctable_size(const proctable *t);
/* Processes that exited before they could be snapshotted, since start. */
uint64_t proctable_vanished(const proctable *t);
