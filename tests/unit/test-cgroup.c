/* Unit and container id from cgroup paths: the rules on the layouts systemd,
 * docker, containerd, CRI-O, podman and kubelet make, and the agreement of
 * the C code (rows profd writes) with the SQL of the schema 2 migration
 * (rows written before it): a store of version 1 is migrated and every row
 * must get what cgroup_unit() and cgroup_container_id() say. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "schema.h"
#include "store.h"
#include "tests.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const struct {
        const char *path, *unit, *container; /* NULL: none */
} cases[] = {
        { "/system.slice/nginx.service", "nginx.service", NULL },
        { "/user.slice/user-1000.slice/session-3.scope", "session-3.scope", NULL },
        /* the deepest unit: an app scope inside the user manager's service */
        { "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-x-42.scope", "app-gnome-x-42.scope", NULL },
        /* a process in a sub-cgroup of its service (delegation) */
        { "/system.slice/nginx.service/worker", "nginx.service", NULL },
        { "/system.slice/docker-" ID ".scope", "docker-" ID ".scope", ID },
        { "/docker/" ID, NULL, ID },
        { "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-" ID ".scope",
          "cri-containerd-" ID ".scope", ID },
        { "/kubepods.slice/kubepods-pod2.slice/crio-" ID ".scope", "crio-" ID ".scope", ID },
        { "/machine.slice/libpod-" ID ".scope", "libpod-" ID ".scope", ID },
        { "/machine.slice/libpod-" ID ".scope/container", "libpod-" ID ".scope", ID },
        { "/kubepods/burstable/pod9f1c/" ID, NULL, ID },
        /* docker in docker: the innermost container */
        { "/docker/" ID "/docker/" ID2, NULL, ID2 },
        /* not ids: too short, uppercase, a conmon scope */
        { "/docker/0123456789ab", NULL, NULL },
        { "/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL, NULL },
        { "/machine.slice/libpod-conmon-" ID ".scope", "libpod-conmon-" ID ".scope", NULL },
        { "/", NULL, NULL },
        { "/system.slice", NULL, NULL },
        { "/init.scope", "init.scope", NULL },
        /* a bare suffix is no unit name */
        { "/x/.service", NULL, NULL },
        { "/system.slice/a.service-extra.service", "a.service-extra.service", NULL },
        { "", NULL, NULL },
};

static void test_rules(void) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *unit = NULL, *id = NULL;
                int ru = cgroup_unit(cases[i].path, &unit), rc = cgroup_container_id(cases[i].path, &id);

                CHECK_INT_EQ(ru, cases[i].unit ? 0 : -ENOENT);
                CHECK_INT_EQ(rc, cases[i].container ? 0 : -ENOENT);
                if (cases[i].unit)
                        CHECK_STR_EQ(unit, cases[i].unit);
                if (cases[i].container)
                        CHECK_STR_EQ(id, cases[i].container);
                free(unit);
                free(id);
        }
        CHECK_INT_EQ(cgroup_unit(NULL, &(char *) { NULL }), -ENOENT);
}

static int exec(sqlite3 *db, const char *sql) {
        char *err = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
        if (rc != SQLITE_OK) {
                fprintf(stderr, "SQL failed: %s\n", err);
                sqlite3_free(err);
                tests_failed++;
        }
        return rc;
}

static void test_migration_agrees_with_c(void) {
        char path[] = "/tmp/test-cgroup-XXXXXX.db";
        int fd = mkstemps(path, 3);
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        store *s = NULL;
        size_t n = sizeof(cases) / sizeof(cases[0]);

        CHECK(fd >= 0);
        close(fd);
        /* a store as schema version 1 left it, with processes in it */
        CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
        exec(db, schema_migrations[0]);
        exec(db, "PRAGMA user_version = 1");
        sqlite3_prepare_v2(db, "INSERT INTO processes (pid, start_ns, comm, cgroup) VALUES (?1, 0, 'p', ?2)", -1, &st,
                           NULL);
        for (size_t i = 0; i < n; i++) {
                sqlite3_bind_int64(st, 1, (int64_t) i + 1);
                sqlite3_bind_text(st, 2, cases[i].path, -1, SQLITE_STATIC);
                CHECK_INT_EQ(sqlite3_step(st), SQLITE_DONE);
                sqlite3_reset(st);
        }
        /* and one whose cgroup profd could not read */
        sqlite3_bind_int64(st, 1, 9999);
        sqlite3_bind_null(st, 2);
        CHECK_INT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);

        /* profd opens it: migrated to the current version */
        CHECK_INT_EQ(store_open(path, &s), 0);
        store_close(s);

        CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_prepare_v2(db, "SELECT pid, cgroup, unit, container FROM processes ORDER BY pid", -1, &st,
                                        NULL), SQLITE_OK);
        for (size_t i = 0; i <= n; i++) {
                const char *cg, *unit, *id;
                char *want_unit = NULL, *want_id = NULL;

                CHECK_INT_EQ(sqlite3_step(st), SQLITE_ROW);
                cg = (const char *) sqlite3_column_text(st, 1);
                unit = (const char *) sqlite3_column_text(st, 2);
                id = (const char *) sqlite3_column_text(st, 3);
                (void) cgroup_unit(cg, &want_unit);
                (void) cgroup_container_id(cg, &want_id);
                if ((unit == NULL) != (want_unit == NULL) || (unit && strcmp(unit, want_unit) != 0) ||
                    (id == NULL) != (want_id == NULL) || (id && strcmp(id, want_id) != 0)) {
                        fprintf(stderr, "cgroup \"%s\": migration gave unit %s container %s, C gives %s and %s\n",
                                cg ? cg : "(null)", unit ? unit : "NULL", id ? id : "NULL",
                                want_unit ? want_unit : "NULL", want_id ? want_id : "NULL");
                        tests_failed++;
                }
                free(want_unit);
                free(want_id);
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        unlink(path);
        {
                char aux[sizeof(path) + 8];
                snprintf(aux, sizeof(aux), "%s-wal", path);
                unlink(aux);
                snprintf(aux, sizeof(aux), "%s-shm", path);
                unlink(aux);
        }
}

/* Rows profd writes get both columns from the C rules; a later sighting
 * without a cgroup keeps them. */
static void test_store_fills_new_rows(void) {
        char path[] = "/tmp/test-cgroup-XXXXXX.db";
        int fd = mkstemps(path, 3);
        struct store_frame f = { .module = "/bin/x", .address = 16, .function = "main" };
        struct store_process p = { .pid = 5, .start_ns = 1, .comm = "x", .cgroup = "/system.slice/docker-" ID ".scope" };
        struct store_process again = { .pid = 5, .start_ns = 1, .comm = "x" };
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        store *s = NULL;

        CHECK(fd >= 0);
        close(fd);
        unlink(path);
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK_INT_EQ(store_drain_begin(s, 1, 2), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &p, .tid = 5, .frames = &f, .n_frames = 1,
                                                                 .value = 1 }), 0);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        store_close(s);
        /* a new store connection has no cache: the upsert runs again */
        CHECK_INT_EQ(store_open(path, &s), 0);
        CHECK_INT_EQ(store_drain_begin(s, 2, 3), 0);
        CHECK_INT_EQ(store_drain_add(s, &(struct store_sample) { .process = &again, .tid = 5, .frames = &f,
                                                                 .n_frames = 1, .value = 1 }), 0);
        CHECK_INT_EQ(store_drain_commit(s, NULL, NULL, NULL), 0);
        store_close(s);

        CHECK_INT_EQ(sqlite3_open(path, &db), SQLITE_OK);
        CHECK_INT_EQ(sqlite3_prepare_v2(db, "SELECT unit, container, count(*) OVER () FROM processes", -1, &st, NULL),
                     SQLITE_OK);
        CHECK_INT_EQ(sqlite3_step(st), SQLITE_ROW);
        CHECK_STR_EQ((const char *) sqlite3_column_text(st, 0), "docker-" ID ".scope");
        CHECK_STR_EQ((const char *) sqlite3_column_text(st, 1), ID);
        CHECK_INT_EQ(sqlite3_column_int(st, 2), 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        unlink(path);
        {
                char aux[sizeof(path) + 8];
                snprintf(aux, sizeof(aux), "%s-wal", path);
                unlink(aux);
                snprintf(aux, sizeof(aux), "%s-shm", path);
                unlink(aux);
        }
}

/* cgroup2_mount_point of mountinfo is want (NULL: -ENOENT). */
static void check_mount_point(const char *mountinfo, const char *want) {
        char *m = NULL;

        CHECK_INT_EQ(cgroup2_mount_point(mountinfo, &m), want ? 0 : -ENOENT);
        if (want)
                CHECK_STR_EQ(m, want);
        free(m);
}

/* The cgroup v2 mount from mountinfo: unified (Debian 12's default),
 * hybrid (v1 controllers, v2 under unified), v1 only with a last line
 * whose type is cgroup2 but has no source (still its mount point), an
 * escaped space, a line with several optional fields, none at all, a line
 * too short to have a mount point. */
static void test_cgroup2_mount_point(void) {
        check_mount_point("22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                          "26 21 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                          "rw,nsdelegate\n",
                          "/sys/fs/cgroup");
        check_mount_point("25 21 0:22 / /sys/fs/cgroup ro,nosuid shared:5 - tmpfs tmpfs ro,mode=755\n"
                          "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:6 master:2 - cgroup2 cgroup2 rw\n"
                          "27 25 0:24 / /sys/fs/cgroup/cpu rw shared:7 - cgroup cgroup rw,cpu\n",
                          "/sys/fs/cgroup/unified");
        check_mount_point("25 21 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                          "27 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                          "28 25 0:25 / /sys/fs/cgroup/x rw - cgroup2",
                          "/sys/fs/cgroup/x");
        check_mount_point("26 21 0:23 / /mnt/my\\040cgroups rw - cgroup2 none rw\n", "/mnt/my cgroups");
        check_mount_point("25 21 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", NULL);
        check_mount_point("", NULL);
        check_mount_point("26 21 0:23 - cgroup2\n", NULL);
}

int main(void) {
        test_rules();
        test_migration_agrees_with_c();
        test_store_fills_new_rows();
        test_cgroup2_mount_point();
        TESTS_DONE();
}
