/* When the process table forgets a process that exited: not before every
 * drain that may hold its samples has been written, however far the writer
 * lags behind the drains queued to it (a fake proc root here). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "macro.h"
#include "procmaps.h"
#include "proctable.h"
#include "tests.h"

#define PID 42
#define START_NS 123450000000ULL /* 12345 clock ticks of 10 ms */

static char root[] = "/tmp/profd-proctable-XXXXXX";

static void set_alive(bool alive) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        FILE *f;

        CHECK(asprintf(&dir, "%s/%d", root, PID) > 0);
        CHECK(asprintf(&path, "%s/stat", dir) > 0);
        if (!alive) {
                CHECK(unlink(path) == 0 || errno == ENOENT);
                return;
        }
        (void) mkdir(dir, 0755);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        /* fields 3..21, then starttime (22) in clock ticks */
        fprintf(f, "%d (spin) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
                START_NS / (1000000000ULL / (unsigned long long) (hz > 0 ? hz : 100)));
        fclose(f);
}

static proctable *table_with_process(void) {
        proctable *t = NULL;
        struct proc *p = NULL;
        bool vanished;

        CHECK_INT_EQ(proctable_new(NULL, NULL, root, &t), 0);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS, "spin", &p, &vanished, NULL), 0);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        return t;
}

/* The writer keeps up: found gone after drain 10 with nothing more queued;
 * drain 11 (the generation being collected then) and drain 12 (one taken
 * out of the kernel but not yet queued, had the manager been between the
 * two) may still hold samples. */
static void test_forgotten_two_drains_after_exit(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        proctable_prune(t, 10, 10);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        set_alive(false);
        proctable_prune(t, 11, 11); /* found gone */
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_prune(t, 12, 12);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_prune(t, 13, 13);
        CHECK(proctable_get(t, PID, START_NS) == NULL);
        CHECK_INT_EQ((int) proctable_size(t), 0);
        proctable_free(t);
}

/* The writer lags: when it finds the process gone after writing drain 3,
 * drains up to 9 are queued already, each with samples of the process. */
static void test_kept_while_the_writer_lags(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        set_alive(false);
        proctable_prune(t, 3, 9);
        for (uint64_t seq = 4; seq <= 10; seq++) {
                proctable_prune(t, seq, 12);
                CHECK(proctable_get(t, PID, START_NS) != NULL);
        }
        proctable_prune(t, 11, 12);
        CHECK(proctable_get(t, PID, START_NS) == NULL);
        proctable_free(t);
}

/* A process alive at every prune stays, whatever the sequence numbers. */
static void test_live_process_kept(void) {
        proctable *t;

        set_alive(true);
        t = table_with_process();
        for (uint64_t seq = 1; seq < 20; seq++)
                proctable_prune(t, seq, seq + 5);
        CHECK(proctable_get(t, PID, START_NS) != NULL);
        proctable_free(t);
        set_alive(false);
}

static void set_maps(const char *text) {
        _cleanup_free_ char *path = NULL;
        FILE *f;

        CHECK(asprintf(&path, "%s/%d/maps", root, PID) > 0);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        fputs(text, f);
        fclose(f);
}

#define MAP_EXE "1000-2000 r-xp 00000000 00:00 0\n"
#define MAP_LIB "5000-6000 r-xp 00000000 00:00 0 [anon:lib]\n"
#define MAP_DATA "7000-8000 rw-p 00000000 00:00 0\n"

/* A snapshot of the mappings alone (the unwinder found new ones) is merged
 * into the announced instance: what it had stays, with its other fields;
 * what is new is added; one no longer listed is kept for a while. */
static void test_maps_only_merged(void) {
        proctable *t;
        struct proc *p = NULL, *got;

        set_alive(true);
        set_maps(MAP_EXE MAP_DATA);
        t = table_with_process();
        got = proctable_get(t, PID, START_NS);
        CHECK_INT_EQ((int) got->n_maps, 1);
        CHECK_STR_EQ(got->comm, "spin");

        /* the dynamic loader mapped a library since */
        set_maps(MAP_EXE MAP_LIB MAP_DATA);
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, NULL, &p), 0);
        CHECK(proc_maps_signature(p) == procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x5000, 0x6000));
        CHECK_INT_EQ(proctable_add(t, p), 0);
        CHECK(proctable_get(t, PID, START_NS) == got); /* the same entry, merged into */
        CHECK_INT_EQ((int) got->n_maps, 2);
        CHECK_STR_EQ(got->comm, "spin");
        CHECK(proc_find_mapping(got, 0x1800) != NULL);
        CHECK(proc_find_mapping(got, 0x5800) != NULL);
        CHECK(proc_find_mapping(got, 0x7800) == NULL); /* not executable */

        /* unmapped since: kept (samples in flight may point into it),
         * however many merges come before the drains' re-reads */
        set_maps(MAP_EXE MAP_DATA);
        for (int i = 0; i < 5; i++) {
                CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, NULL, &p), 0);
                CHECK_INT_EQ(proctable_add(t, p), 0);
                CHECK(proc_find_mapping(got, 0x5800) != NULL);
        }
        /* the drains' re-reads keep it for two of them */
        for (int i = 0; i < 2; i++) {
                CHECK_INT_EQ(proctable_refresh_maps(t, got), 0);
                CHECK(proc_find_mapping(got, 0x5800) != NULL);
        }
        CHECK_INT_EQ(proctable_refresh_maps(t, got), 0);
        CHECK(proc_find_mapping(got, 0x5800) == NULL);

        /* another instance under the pid, or none: nothing to merge */
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS + 1000000000ULL, NULL, &p), -ESRCH);
        set_alive(false);
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, NULL, &p), -ESRCH);
        CHECK_INT_EQ((int) proctable_get(t, PID, START_NS)->n_maps, 1);
        proctable_free(t);
}

/* The mappings alone as the unwinder read them (the text handed over):
 * what the text lists is taken, not what the file says now, and only for
 * the instance still under the pid. */
static void test_maps_only_from_given_text(void) {
        proctable *t;
        struct proc *p = NULL, *got;
        char text[] = MAP_EXE MAP_LIB MAP_DATA, other[] = MAP_EXE MAP_LIB;

        set_alive(true);
        set_maps(MAP_EXE MAP_DATA);
        t = table_with_process();
        got = proctable_get(t, PID, START_NS);
        CHECK_INT_EQ((int) got->n_maps, 1);
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, text, &p), 0);
        CHECK_INT_EQ((int) p->n_maps, 2);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        CHECK_INT_EQ((int) got->n_maps, 2);
        CHECK(proc_find_mapping(got, 0x5800) != NULL);
        CHECK_STR_EQ(got->comm, "spin");
        /* another instance under the pid: its text is not taken */
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS + 1000000000ULL, other, &p), -ESRCH);
        set_alive(false);
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, other, &p), -ESRCH);
        proctable_free(t);
}

/* The announcement found the process gone (a vanished entry, no mappings),
 * yet it lived on: the mappings alone take its place, with its comm. */
static void test_maps_only_replaces_vanished(void) {
        proctable *t = NULL;
        struct proc *p = NULL, *got;
        bool vanished;

        CHECK_INT_EQ(proctable_new(NULL, NULL, root, &t), 0);
        set_alive(false);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS, "spin", &p, &vanished, NULL), 0);
        CHECK(vanished);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        set_alive(true);
        set_maps(MAP_EXE MAP_LIB);
        CHECK_INT_EQ(proc_snapshot_maps(root, PID, START_NS, NULL, &p), 0);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        got = proctable_get(t, PID, START_NS);
        CHECK(got != NULL && got->snapshotted && !got->maps_only);
        CHECK_INT_EQ((int) got->n_maps, 2);
        CHECK_STR_EQ(got->comm, "spin");
        proctable_free(t);
        set_alive(false);
}

/* The exec's snapshot hands the maps it read to the unwinder (issue 43:
 * one read of a process's maps): the copy is the file as read, whole, and
 * the snapshot's own mappings are parsed from the same read. A process
 * gone gives no copy. */
static void test_snapshot_gives_its_maps(void) {
        _cleanup_free_ char *maps = NULL;
        proctable *t = NULL;
        struct proc *p = NULL, *got;
        bool vanished;

        set_alive(true);
        set_maps(MAP_EXE MAP_LIB MAP_DATA);
        CHECK_INT_EQ(proctable_new(NULL, NULL, root, &t), 0);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS, "spin", &p, &vanished, &maps), 0);
        CHECK(!vanished);
        CHECK_STR_EQ(maps, MAP_EXE MAP_LIB MAP_DATA);
        CHECK(proc_maps_signature(p) == procmap_signature_add(procmap_signature_add(0, 0x1000, 0x2000), 0x5000, 0x6000));
        CHECK_INT_EQ(proctable_add(t, p), 0);
        got = proctable_get(t, PID, START_NS);
        CHECK(got != NULL && got->snapshotted);
        CHECK_INT_EQ((int) got->n_maps, 2);
        proctable_free(t);
        free(maps);
        maps = NULL;

        /* another instance under the pid, or none: no copy */
        CHECK_INT_EQ(proctable_new(NULL, NULL, root, &t), 0);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS + 1000000000ULL, "spin", &p, &vanished, &maps), 0);
        CHECK(vanished && maps == NULL);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        set_alive(false);
        CHECK_INT_EQ(proc_snapshot(root, PID, START_NS, "spin", &p, &vanished, &maps), 0);
        CHECK(vanished && maps == NULL);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        proctable_free(t);
}

/* Writes `text` to root/REL (directories made as needed). */
static void put_file(const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL, *cmd = NULL;
        FILE *f;

        CHECK(asprintf(&path, "%s/%s", root, rel) > 0);
        CHECK(asprintf(&cmd, "mkdir -p \"$(dirname '%s')\"", path) > 0);
        CHECK_INT_EQ(system(cmd), 0);
        f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        fputs(text, f);
        fclose(f);
}

/* /proc/PID/status as the kernel writes it for a process of euid `uid`;
 * with ns_pids (e.g. "\t42\t7") an NSpid line, the last field its pid in
 * its own namespace; without one, as kernels before 4.1 write it. */
static void set_status(unsigned uid, const char *ns_pids) {
        _cleanup_free_ char *text = NULL;

        CHECK(asprintf(&text, "Name:\tspin\nUid:\t%u\t%u\t%u\t%u\n%s%s%s", uid, uid, uid, uid,
                       ns_pids ? "NSpid:" : "", ns_pids ? ns_pids : "", ns_pids ? "\n" : "") > 0);
        put_file("42/status", text);
}

/* The name the perf map of the announced process gives 0x1010, read as the
 * writer reads it (a table of its own each time: nothing cached); NULL
 * when no map was used. The returned string lives in a static buffer. */
static const char *perf_map_name(void) {
        static char name[64];
        proctable *t = NULL;
        struct proc *p;
        const char *n;

        name[0] = '\0';
        t = table_with_process();
        p = proctable_get(t, PID, START_NS);
        CHECK(p != NULL && p->snapshotted);
        if (!p)
                return NULL;
        CHECK_INT_EQ(proctable_refresh_jit(t, p), 0);
        n = p->jit ? jitmap_lookup(p->jit, 0x1010) : NULL;
        if (n)
                snprintf(name, sizeof(name), "%s", n);
        proctable_free(t);
        return n ? name : NULL;
}

/* A JIT writes /tmp/perf-PID.map under the pid it knows itself by, in the
 * /tmp it sees: in a container, its own pid namespace's number (NSpid's
 * last field) and its own mount namespace's /tmp. profd reads it through
 * /proc/PID/root, never the host's /tmp, and resolves symlinks inside that
 * root, so a container cannot point profd at a host file. */
static void test_perf_map_read_in_the_process_root_by_its_ns_pid(void) {
        _cleanup_free_ char *host_map = NULL, *inside = NULL;

        set_alive(true);
        set_maps(MAP_EXE);
        put_file("42/root/tmp/perf-7.map", "1000 100 in_its_namespace\n");
        put_file("42/root/tmp/perf-42.map", "1000 100 under_the_host_pid\n");

        /* in a pid namespace of its own: NSpid 42 (host) 7 (its own) */
        set_status((unsigned) geteuid(), "\t42\t7");
        CHECK_STR_EQ(perf_map_name(), "in_its_namespace");

        /* no namespace of its own (NSpid names one pid), and a kernel
         * without NSpid: the pid is the host's */
        set_status((unsigned) geteuid(), "\t42");
        CHECK_STR_EQ(perf_map_name(), "under_the_host_pid");
        set_status((unsigned) geteuid(), NULL);
        CHECK_STR_EQ(perf_map_name(), "under_the_host_pid");

        /* a symlink to an absolute path is resolved inside the process's
         * root: the same path on the host holds another file, never read */
        CHECK(asprintf(&host_map, "%s/host.map", root) > 0);
        put_file("host.map", "1000 100 a_host_file\n");
        CHECK(asprintf(&inside, "42/root%s", host_map) > 0);
        put_file(inside, "1000 100 in_its_root\n");
        {
                _cleanup_free_ char *link = NULL;

                CHECK(asprintf(&link, "%s/42/root/tmp/perf-7.map", root) > 0);
                CHECK_INT_EQ(unlink(link), 0);
                CHECK_INT_EQ(symlink(host_map, link), 0);
        }
        set_status((unsigned) geteuid(), "\t42\t7");
        {
                const char *n = perf_map_name();

                /* NULL where openat2 is missing (before Linux 5.6): the
                 * fallback refuses a symlink outright */
                CHECK(!n || strcmp(n, "a_host_file") != 0);
                CHECK(!n || strcmp(n, "in_its_root") == 0);
        }

        /* a map owned by a uid that is neither root nor the process's is
         * not used (a user cannot name another's code) */
        {
                _cleanup_free_ char *path = NULL;

                CHECK(asprintf(&path, "%s/42/root/tmp/perf-7.map", root) > 0);
                CHECK_INT_EQ(unlink(path), 0);
                put_file("42/root/tmp/perf-7.map", "1000 100 another_users\n");
                if (geteuid() == 0) {
                        CHECK_INT_EQ(chown(path, 12345, 12345), 0);
                        set_status(0, "\t42\t7");
                } else
                        set_status((unsigned) geteuid() + 1, "\t42\t7");
                CHECK(perf_map_name() == NULL);
        }
        set_alive(false);
}


/* A process event's hint (issue 43: the exec event carries the leader's
 * euid, pid in its namespace and cgroup id): what it tells is taken, not
 * read; without ids status is read. A cgroup's path is read once per id,
 * and kept only when the cgroup mount's directory of that path is the
 * cgroup of that id (its inode number): a process that moved between its
 * event and its snapshot is read each time, not cached under the id it
 * left. Without a cgroup mount nothing is kept, every read counted. */
static void test_hinted_snapshot(void) {
        _cleanup_free_ char *mount = NULL, *dir = NULL;
        struct snapshot_memo_counts c;
        snapshot_memo *memo;
        struct proc *p = NULL;
        struct stat st;
        uint64_t id;
        bool vanished;

        set_alive(true);
        set_maps(MAP_EXE);
        put_file("42/comm", "fromproc\n");
        put_file("42/status", "Name:\tfromproc\nUid:\t1000\t1001\t1001\t1001\nNSpid:\t42\t7\n");
        put_file("42/cgroup", "0::/system.slice/a.service\n");
        CHECK(asprintf(&mount, "%s/cgroupfs", root) > 0);
        put_file("cgroupfs/system.slice/a.service/cgroup.procs", "");
        CHECK(asprintf(&dir, "%s/system.slice/a.service", mount) > 0);
        CHECK_INT_EQ(stat(dir, &st), 0);
        id = (uint64_t) st.st_ino;
        memo = snapshot_memo_new(mount);
        CHECK(memo != NULL);

        /* no ids: read from /proc, the event's comm kept */
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, &(struct proc_hint) { .comm = "event" }, memo, &p,
                                          &vanished, NULL), 0);
        CHECK(!vanished);
        CHECK_STR_EQ(p->comm, "event");
        CHECK(p->have_uid && p->uid == 1001 && p->ns_pid == 7);
        CHECK_STR_EQ(p->cgroup, "/system.slice/a.service");
        proc_free(p);

        /* the ids told: taken; the cgroup read once more, and learned */
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS,
                                          &(struct proc_hint) { .comm = "event", .have_ids = true, .euid = 0,
                                                                .ns_pid = 9, .cgroup_id = id },
                                          memo, &p, &vanished, NULL), 0);
        CHECK(p->have_uid && p->uid == 0 && p->ns_pid == 9);
        CHECK_STR_EQ(p->cgroup, "/system.slice/a.service");
        proc_free(p);
        snapshot_memo_counts(memo, &c);
        CHECK(c.cgroups_named == 0 && c.cgroups_read == 2);

        /* known now: not read (the file says otherwise, the id decides) */
        put_file("42/cgroup", "0::/elsewhere.service\n");
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS,
                                          &(struct proc_hint) { .comm = "event", .have_ids = true, .cgroup_id = id },
                                          memo, &p, &vanished, NULL), 0);
        CHECK_STR_EQ(p->cgroup, "/system.slice/a.service");
        proc_free(p);
        snapshot_memo_counts(memo, &c);
        CHECK(c.cgroups_named == 1 && c.cgroups_read == 2);

        /* an id whose directory is not the path read: read every time */
        for (int i = 0; i < 2; i++) {
                CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS,
                                                  &(struct proc_hint) { .have_ids = true, .cgroup_id = id + 1 }, memo,
                                                  &p, &vanished, NULL), 0);
                CHECK_STR_EQ(p->cgroup, "/elsewhere.service");
                CHECK_STR_EQ(p->comm, "fromproc"); /* no comm told: read */
                proc_free(p);
        }
        snapshot_memo_counts(memo, &c);
        CHECK(c.cgroups_named == 1 && c.cgroups_read == 4);
        snapshot_memo_free(memo);

        /* no cgroup mount: read each time, nothing kept */
        memo = snapshot_memo_new(NULL);
        for (int i = 0; i < 2; i++) {
                CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS,
                                                  &(struct proc_hint) { .have_ids = true, .cgroup_id = id }, memo,
                                                  &p, &vanished, NULL), 0);
                CHECK_STR_EQ(p->cgroup, "/elsewhere.service");
                proc_free(p);
        }
        snapshot_memo_counts(memo, &c);
        CHECK(c.cgroups_named == 0 && c.cgroups_read == 2);
        snapshot_memo_free(memo);
}

/* What the fake symbols stage was asked. */
static int loads_by_fd, lookups;
static const sym_file *looked_up;
#define FAKE_FILE ((const sym_file *) &loads_by_fd)

static int loads_by_path;

static int fake_load(void *userdata, int fd, const char *open_path, const char *root_prefix,
                     const char *display_path, const sym_file **ret) {
        if (fd < 0) {
                loads_by_path++;
                *ret = FAKE_FILE;
                return 0;
        }
        close(fd);
        loads_by_fd++;
        *ret = FAKE_FILE;
        return 0;
}

static int fake_lookup(void *userdata, const struct file_key *key, const sym_file **ret) {
        lookups++;
        if (!looked_up)
                return -ENOENT;
        *ret = looked_up;
        return 0;
}

/* A mapped file the memo knows (issue 43: files known by identity not
 * opened again): the first snapshot opens it at its path, by the inode
 * its maps line names, and learns its identity; the next within the TTL
 * does not open it when a stat of the path finds that identity still, its
 * mapping keyed by it; the table finds the symbols by it, or, when the
 * symbols stage no longer has them, opens the path by the inode itself. A
 * file rebuilt at the path (its inode number reused or not) is opened, not
 * keyed. */
static void test_known_files_not_opened_again(void) {
        _cleanup_free_ char *file = NULL, *maps = NULL;
        struct snapshot_memo_counts c;
        snapshot_memo *memo = snapshot_memo_new(NULL);
        proctable *t = NULL;
        struct proc *p = NULL, *got;
        struct file_key want;
        struct stat st;
        bool vanished;

        CHECK(asprintf(&file, "%s/lib.so", root) > 0);
        put_file("lib.so", "not ELF: the fake stage reads nothing");
        CHECK_INT_EQ(stat(file, &st), 0);
        want = file_key_from_stat(&st);
        CHECK(asprintf(&maps, "1000-2000 r-xp 00000000 %x:%x %llu %s\n", major(st.st_dev), minor(st.st_dev),
                       (unsigned long long) st.st_ino, file) > 0);
        set_alive(true);
        set_maps(maps);
        CHECK_INT_EQ(proctable_new(fake_load, NULL, root, &t), 0);
        proctable_set_lookup(t, fake_lookup);

        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, NULL, memo, &p, &vanished, NULL), 0);
        CHECK(p->n_maps == 1 && p->maps[0].fd >= 0 && !p->maps[0].keyed);
        proc_free(p);
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, NULL, memo, &p, &vanished, NULL), 0);
        CHECK(p->n_maps == 1 && p->maps[0].fd < 0 && p->maps[0].keyed);
        CHECK(memcmp(&p->maps[0].key, &want, sizeof(want)) == 0);
        snapshot_memo_counts(memo, &c);
        CHECK(c.files_opened == 1 && c.files_known == 1);

        /* the stage has it: looked up, not opened */
        looked_up = (const sym_file *) &lookups;
        CHECK_INT_EQ(proctable_add(t, p), 0);
        got = proctable_get(t, PID, START_NS);
        CHECK(got && got->maps[0].file == looked_up);
        CHECK(lookups == 1 && loads_by_fd == 0);
        proctable_free(t);

        /* the stage has it no more: opened by the writer, by its inode */
        CHECK_INT_EQ(proctable_new(fake_load, NULL, root, &t), 0);
        proctable_set_lookup(t, fake_lookup);
        looked_up = NULL;
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, NULL, memo, &p, &vanished, NULL), 0);
        CHECK(p->maps[0].keyed);
        CHECK_INT_EQ(proctable_add(t, p), 0);
        got = proctable_get(t, PID, START_NS);
        CHECK(got && got->maps[0].file == FAKE_FILE);
        CHECK(lookups == 2 && loads_by_fd == 1);
        proctable_free(t);

        /* rebuilt between the snapshot and the writer, with the stage no
         * longer holding it: the writer opens nothing (not the new file
         * at the path, whether its inode number was reused or not) */
        CHECK_INT_EQ(proctable_new(fake_load, NULL, root, &t), 0);
        proctable_set_lookup(t, fake_lookup);
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, NULL, memo, &p, &vanished, NULL), 0);
        CHECK(p->maps[0].keyed);
        CHECK_INT_EQ(unlink(file), 0);
        put_file("lib.so", "rebuilt");
        CHECK_INT_EQ(proctable_add(t, p), 0);
        got = proctable_get(t, PID, START_NS);
        CHECK(got && got->maps[0].file == NULL);
        CHECK(lookups == 3 && loads_by_fd == 1 && loads_by_path == 0);
        proctable_free(t);

        /* another file at the path (a new inode, or the same number
         * reused, as here on tmpfs and ext4): opened, not keyed */
        CHECK_INT_EQ(stat(file, &st), 0);
        free(maps);
        CHECK(asprintf(&maps, "1000-2000 r-xp 00000000 %x:%x %llu %s\n", major(st.st_dev), minor(st.st_dev),
                       (unsigned long long) st.st_ino, file) > 0);
        set_maps(maps);
        CHECK_INT_EQ(proc_snapshot_hinted(root, PID, START_NS, NULL, memo, &p, &vanished, NULL), 0);
        CHECK(p->maps[0].fd >= 0 && !p->maps[0].keyed);
        proc_free(p);
        snapshot_memo_free(memo);
}

int main(void) {
        _cleanup_free_ char *cmd = NULL;

        CHECK(mkdtemp(root) != NULL);
        test_forgotten_two_drains_after_exit();
        test_kept_while_the_writer_lags();
        test_live_process_kept();
        test_maps_only_merged();
        test_maps_only_replaces_vanished();
        test_maps_only_from_given_text();
        test_snapshot_gives_its_maps();
        test_perf_map_read_in_the_process_root_by_its_ns_pid();
        test_hinted_snapshot();
        test_known_files_not_opened_again();
        CHECK(asprintf(&cmd, "rm -rf %s", root) > 0);
        CHECK_INT_EQ(system(cmd), 0);
        TESTS_DONE();
}
