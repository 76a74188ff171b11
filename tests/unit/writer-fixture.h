/* The writer over a store of its own, for unit tests of what a runtime's
 * pseudo-frames become in the store (test-python-walk,
 * test-hotspot-code-jvm): a fresh store in a temporary directory, the
 * writer on it, one drain of a runtime's stack through it, and the files
 * removed after. */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "writer.h"

struct writer_fixture {
        char dir[64];           /* the temporary directory */
        char path[PATH_MAX];    /* the store in it */
        writer *w;              /* NULL once freed (writer_fixture_close) */
};

/* The store created and the writer started on it (its dir from prefix,
 * "/tmp/profd-NAME-XXXXXX"). Returns 0 or a negative errno. */
int writer_fixture_open(struct writer_fixture *f, const char *prefix);

/* One drain of two cpu samples: value 7 of process pid (started at
 * start_ns, boot-time ns) whose user stack is ips[0..n) (innermost
 * first), and value 1 of a process no code event named (tgid 1) whose
 * stack is the one frame `other`; then waits for the writer's result.
 * Returns the result's error (0 when stored), -ETIMEDOUT, or -ESTALE
 * for a result of another job; *ret_seq the drain's sequence number. */
int writer_fixture_drain(struct writer_fixture *f, pid_t pid, uint64_t start_ns, const uint64_t *ips, size_t n,
                         uint64_t other, uint64_t *ret_seq);

/* The writer stopped (its stats read first by the caller), the store,
 * its WAL and the directory removed. */
void writer_fixture_close(struct writer_fixture *f);

/* The process's start as the kernel's keys give it (boot-time ns), to
 * the clock tick /proc/PID/stat has; 0 if it cannot be read. */
uint64_t start_ns_of(pid_t pid);
