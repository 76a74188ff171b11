/* The writer over a store of its own, for unit tests (writer-fixture.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "hashmap.h"
#include "helpers.h"
#include "macro.h"
#include "procmaps.h"
#include "store.h"
#include "writer-fixture.h"

int writer_fixture_open(struct writer_fixture *f, const char *prefix) {
        store *s = NULL;
        int r;

        *f = (struct writer_fixture) {};
        if (snprintf(f->dir, sizeof f->dir, "%s-XXXXXX", prefix) >= (int) sizeof f->dir)
                return -ENAMETOOLONG;
        if (!mkdtemp(f->dir))
                return -errno;
        snprintf(f->path, sizeof f->path, "%s/profd.db", f->dir);
        r = store_open(f->path, &s);
        if (r < 0)
                return r;
        store_close(s);
        return writer_new(f->path, "/proc", 64 << 20, false, &f->w);
}

static struct stack_trace *trace_of(const uint64_t *ips, size_t n) {
        struct stack_trace *st = malloc(sizeof(*st) + n * sizeof(uint64_t));

        if (!st)
                abort();
        st->n = n;
        st->end = PROFD_END_COMPLETE;
        memcpy(st->ips, ips, n * sizeof(uint64_t));
        return st;
}

int writer_fixture_drain(struct writer_fixture *f, pid_t pid, uint64_t start_ns, const uint64_t *ips, size_t n,
                         uint64_t other, uint64_t *ret_seq) {
        struct drain_batch b = { .user_ends_known = true };
        struct writer_result res = { .error = -ETIMEDOUT };
        int r;

        b.entries = calloc(2, sizeof(*b.entries));
        b.frames = hashmap_new_u64();
        if (!b.entries || !b.frames)
                abort();
        b.n_entries = 2;
        b.entries[0] = (struct drain_entry) {
                .key = { .start_ns = start_ns, .user_stack = 1, .kernel_stack = PROFD_STACK_NONE,
                         .tgid = (uint32_t) pid, .tid = (uint32_t) pid, .kind = PROFD_KIND_CPU },
                .value = 7,
        };
        b.entries[1] = (struct drain_entry) {
                .key = { .start_ns = 1, .user_stack = 2, .kernel_stack = PROFD_STACK_NONE, .tgid = 1, .tid = 1,
                         .kind = PROFD_KIND_CPU },
                .value = 1,
        };
        if (hashmap_put(b.frames, UINT64_TO_KEY(1), trace_of(ips, n)) < 0 ||
            hashmap_put(b.frames, UINT64_TO_KEY(2), trace_of(&other, 1)) < 0)
                abort();
        r = writer_drain(f->w, &b, 1000, 2000, 0, ret_seq);
        if (r < 0)
                return r;
        for (int tries = 0; tries < 300 && !writer_result_pop(f->w, &res); tries++)
                (void) poll(&(struct pollfd) { .fd = writer_fd(f->w), .events = POLLIN }, 1, 100);
        if (res.error == 0 && res.seq != *ret_seq)
                return -ESTALE; /* another job's result */
        return res.error;
}

void writer_fixture_close(struct writer_fixture *f) {
        char wal[PATH_MAX + 8], shm[PATH_MAX + 8];

        if (f->w)
                writer_free(f->w);
        f->w = NULL;
        if (!*f->dir)
                return;
        snprintf(wal, sizeof wal, "%s-wal", f->path);
        snprintf(shm, sizeof shm, "%s-shm", f->path);
        (void) unlink(wal);
        (void) unlink(shm);
        (void) unlink(f->path);
        (void) rmdir(f->dir);
}

uint64_t start_ns_of(pid_t pid) {
        char path[64];
        _cleanup_free_ char *stat = NULL;
        uint64_t ticks = 0;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        if (read_full_file(path, &stat) < 0 || procstat_parse_starttime(stat, &ticks) < 0)
                return 0;
        return ticks * (NSEC_PER_SEC / (uint64_t) sysconf(_SC_CLK_TCK));
}
