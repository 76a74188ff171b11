/* switch-audit: which context switches the kernel does not report to the
 * sched_switch tracepoint, whose they are (kernel or user threads, by name
 * and process), and what each costs profd's off-CPU time: the figures of
 * docs/reliability.md's row on unreported switches and of `switch_missed`
 * (docs/protocol.md). Runs beside profd or alone, as root, on kernels with
 * sched_exit_tp (about 6.16 on), which ends every switch and so shows the
 * ones sched_switch left out. Usage: switch-audit [SECONDS] (default 60). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "macro.h"
#include "switch_audit.h"
#include "switch_audit.skel.h"

/* the threads listed under each row, most frequent first */
#define TOP_THREADS 12
/* longer runs are better split: the counts are per run */
#define MAX_SECONDS 86400

struct row {
        struct switch_audit_key key;
        struct switch_audit_value value;
};

struct rows {
        struct row *v;
        size_t n, size;
};

static void rows_done(struct rows *r) {
        free(r->v);
}

static const char *const kind_title[SWITCH_AUDIT__MAX] = {
        [SWITCH_AUDIT_REPORTED] = "switches reported to sched_switch (by the thread switched in)",
        [SWITCH_AUDIT_SWITCHES] = "switches (sched_exit_tp, by the thread switched in)",
        [SWITCH_AUDIT_HIDDEN_BY] = "switches sched_switch did not report, by the thread switched out",
        [SWITCH_AUDIT_HIDDEN_IN] = "unreported switch-ins ending a reported switch-out (profd without "
                                   "sched_exit_tp: a lost block, switch_missed)",
        [SWITCH_AUDIT_MISSED] = "switch-outs finding the last one open although sched_exit_tp ends "
                                "blocks (profd's switch_missed)",
        [SWITCH_AUDIT_UNSEEN_BLOCK] = "blocks begun by an unreported switch-out (neither timed nor counted "
                                      "by profd)",
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct switch_audit_bpf *, switch_audit_bpf__destroy);

/* a signal only ends the wait */
static void on_signal(int sig) {
}

/* Reads every row of the counts map into r. Returns 0 or a negative errno. */
static int rows_read(int fd, struct rows *r) {
        struct switch_audit_key key, next;
        void *prev = NULL;

        while (bpf_map_get_next_key(fd, prev, &next) == 0) {
                if (r->n == r->size) {
                        size_t size = r->size ? 2 * r->size : 256;
                        struct row *v = realloc(r->v, size * sizeof(*v));

                        if (!v)
                                return -ENOMEM;
                        r->v = v;
                        r->size = size;
                }
                if (bpf_map_lookup_elem(fd, &next, &r->v[r->n].value) == 0) {
                        r->v[r->n].key = next;
                        r->n++;
                }
                key = next;
                prev = &key;
        }
        return 0;
}

static int row_by_count(const void *a, const void *b) {
        const struct row *x = a, *y = b;

        if (x->value.n != y->value.n)
                return x->value.n < y->value.n ? 1 : -1;
        return strncmp(x->key.comm, y->key.comm, sizeof(x->key.comm));
}

static void print_kind(const struct rows *r, unsigned kind, double seconds) {
        uint64_t all = 0, kernel = 0, user = 0, idle = 0, ns = 0;
        unsigned listed = 0;

        for (size_t i = 0; i < r->n; i++) {
                const struct row *w = &r->v[i];

                if (w->key.kind != kind)
                        continue;
                all += w->value.n;
                ns += w->value.ns;
                if (w->key.tgid == 0)
                        idle += w->value.n;
                else if (w->key.kthread)
                        kernel += w->value.n;
                else
                        user += w->value.n;
        }
        printf("\n%s:\n  %" PRIu64 " (%.2f/s): kernel threads %" PRIu64 " (%.2f/s), user threads %" PRIu64
               " (%.2f/s), idle tasks %" PRIu64,
               kind_title[kind], all, all / seconds, kernel, kernel / seconds, user, user / seconds, idle);
        if (kind == SWITCH_AUDIT_HIDDEN_IN || kind == SWITCH_AUDIT_UNSEEN_BLOCK)
                printf("; %.1f ms off the CPU", ns / 1e6);
        printf("\n");
        if (kind == SWITCH_AUDIT_REPORTED || kind == SWITCH_AUDIT_SWITCHES)
                return;
        for (size_t i = 0; i < r->n && listed < TOP_THREADS; i++) {
                const struct row *w = &r->v[i];

                if (w->key.kind != kind)
                        continue;
                printf("    %-16.16s tgid %-7" PRIu32 " %-6s %8" PRIu64, w->key.comm, w->key.tgid,
                       w->key.tgid == 0 ? "idle" : w->key.kthread ? "kernel" : "user", (uint64_t) w->value.n);
                if (kind == SWITCH_AUDIT_HIDDEN_IN || kind == SWITCH_AUDIT_UNSEEN_BLOCK)
                        printf("  %10.1f ms", w->value.ns / 1e6);
                printf("\n");
                listed++;
        }
}

int main(int argc, char **argv) {
        _cleanup_(switch_audit_bpf__destroyp) struct switch_audit_bpf *skel = NULL;
        _cleanup_(rows_done) struct rows rows = {};
        struct timespec t0, t1;
        unsigned long seconds = 60;
        double elapsed;
        char *end;
        int r;

        /* strtoul would take "-1" as ULONG_MAX: digits only, a day at most */
        if (argc > 2 || (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9' ||
                                       (seconds = strtoul(argv[1], &end, 10)) == 0 || *end ||
                                       seconds > MAX_SECONDS))) {
                fprintf(stderr, "usage: switch-audit [SECONDS]: a whole number of seconds from 1 to %d\n",
                        MAX_SECONDS);
                return 2;
        }
        skel = switch_audit_bpf__open_and_load();
        if (!skel) {
                fprintf(stderr, "Failed to load the BPF programs (root, and a kernel with sched_exit_tp, "
                                "are needed): %s\n", strerror(errno));
                return 1;
        }
        /* sched_exit_tp first: a switch-out the other program notes cannot
         * then have its switch-in missed by both (as in profd) */
        skel->links.audit_switch_done = bpf_program__attach(skel->progs.audit_switch_done);
        if (!skel->links.audit_switch_done) {
                fprintf(stderr, "Failed to attach to sched_exit_tp: %s\n", strerror(errno));
                return 1;
        }
        skel->links.audit_switch = bpf_program__attach(skel->progs.audit_switch);
        if (!skel->links.audit_switch) {
                fprintf(stderr, "Failed to attach to sched_switch: %s\n", strerror(errno));
                return 1;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* returns early on SIGINT or SIGTERM: the figures so far are printed */
        sleep(seconds);
        /* counting stops before the map is read, so that its rows agree */
        bpf_link__destroy(skel->links.audit_switch);
        skel->links.audit_switch = NULL;
        bpf_link__destroy(skel->links.audit_switch_done);
        skel->links.audit_switch_done = NULL;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;

        r = rows_read(bpf_map__fd(skel->maps.counts), &rows);
        if (r < 0) {
                fprintf(stderr, "Failed to read the counts: %s\n", strerror(-r));
                return 1;
        }
        qsort(rows.v, rows.n, sizeof(*rows.v), row_by_count);
        printf("switch-audit: %.1f s, %ld CPUs online, rows of (thread name, process)\n", elapsed,
               sysconf(_SC_NPROCESSORS_ONLN));
        for (unsigned k = 0; k < SWITCH_AUDIT__MAX; k++)
                print_kind(&rows, k, elapsed);
        return 0;
}
