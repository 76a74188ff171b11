/* One file identity and one way to a process's mapped file (mapfile.h):
 * the key from a stat, the paths' form, and the order they are tried in,
 * on a directory laid out as /proc would be; the cheap way by path, only
 * for the very inode. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mapfile.h"
#include "tests.h"

static void test_key_from_stat(void) {
        struct stat st = { .st_dev = 0x801, .st_ino = 42, .st_size = 4096 };
        struct file_key a, b;

        st.st_mtim.tv_sec = 1700000000;
        st.st_mtim.tv_nsec = 123;
        a = file_key_from_stat(&st);
        CHECK_INT_EQ(a.dev, 0x801);
        CHECK_INT_EQ(a.ino, 42);
        CHECK_INT_EQ(a.size, 4096);
        CHECK_INT_EQ(a.mtime_sec, 1700000000);
        CHECK_INT_EQ(a.mtime_nsec, 123);
        b = a;
        CHECK(file_key_eq(&a, &b));
        CHECK(file_key_hash(&a) == file_key_hash(&b));
        /* a rebuilt file: same inode, new mtime */
        st.st_mtim.tv_nsec = 124;
        b = file_key_from_stat(&st);
        CHECK(!file_key_eq(&a, &b));
}

static void test_paths(void) {
        struct mapfile_paths p;
        char *long_path = malloc(PATH_MAX);

        mapfile_paths("/proc", 1234, 0x7f0000001000, 0x7f0000002000, "/usr/lib/libc.so.6", &p);
        CHECK_STR_EQ(p.by_map, "/proc/1234/map_files/7f0000001000-7f0000002000");
        CHECK_STR_EQ(p.by_root, "/proc/1234/root/usr/lib/libc.so.6");
        mapfile_paths("/proc", 1, 0x1000, 0x2000, NULL, &p);
        CHECK_STR_EQ(p.by_root, "");
        /* a path too long for root/PATH leaves map_files alone */
        memset(long_path, 'a', PATH_MAX - 1);
        long_path[0] = '/';
        long_path[PATH_MAX - 1] = '\0';
        mapfile_paths("/proc", 1, 0x1000, 0x2000, long_path, &p);
        CHECK_STR_EQ(p.by_root, "");
        CHECK_STR_EQ(p.by_map, "/proc/1/map_files/1000-2000");
        /* a proc_root too long for map_files: neither path, nothing opened */
        long_path[300] = '\0';
        mapfile_paths(long_path, 1, 0x1000, 0x2000, "/lib/x.so", &p);
        CHECK_STR_EQ(p.by_map, "");
        CHECK(mapfile_open(&p) < 0);
        free(long_path);
}

static void put(const char *path, const char *text) {
        FILE *f = fopen(path, "w");

        CHECK(f != NULL);
        if (!f)
                return;
        fputs(text, f);
        fclose(f);
}

static char read_first(int fd) {
        char c = 0;

        CHECK(read(fd, &c, 1) == 1);
        close(fd);
        return c;
}

/* map_files first (the very inode mapped), then root/PATH, then nothing. */
static void test_fallback_order(void) {
        char dir[] = "/tmp/test-mapfile-XXXXXX", path[PATH_MAX];
        struct mapfile_paths p;
        struct file_key by_map, by_root, k;
        struct stat st;
        int fd, pfd;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/7", dir);
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof(path), "%s/7/map_files", dir);
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof(path), "%s/7/root", dir);
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof(path), "%s/7/root/lib", dir);
        CHECK(mkdir(path, 0700) == 0);
        mapfile_paths(dir, 7, 0x1000, 0x3000, "/lib/x.so", &p);
        put(p.by_map, "M");
        put(p.by_root, "R");
        CHECK(stat(p.by_map, &st) == 0);
        by_map = file_key_from_stat(&st);
        CHECK(stat(p.by_root, &st) == 0);
        by_root = file_key_from_stat(&st);
        CHECK(!file_key_eq(&by_map, &by_root));

        snprintf(path, sizeof(path), "%s/7", dir);
        pfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        CHECK(pfd >= 0);

        fd = mapfile_open(&p);
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_INT_EQ(read_first(fd), 'M');
        fd = mapfile_openat(pfd, 0x1000, 0x3000, "/lib/x.so");
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_INT_EQ(read_first(fd), 'M');
        CHECK_INT_EQ(mapfile_key(&p, &k), 0);
        CHECK(file_key_eq(&k, &by_map));

        CHECK(unlink(p.by_map) == 0);
        fd = mapfile_open(&p);
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_INT_EQ(read_first(fd), 'R');
        fd = mapfile_openat(pfd, 0x1000, 0x3000, "/lib/x.so");
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_INT_EQ(read_first(fd), 'R');
        /* no path: map_files only */
        CHECK_INT_EQ(mapfile_openat(pfd, 0x1000, 0x3000, NULL), -ENOENT);
        CHECK_INT_EQ(mapfile_key(&p, &k), 0);
        CHECK(file_key_eq(&k, &by_root));

        CHECK(unlink(p.by_root) == 0);
        CHECK_INT_EQ(mapfile_open(&p), -ENOENT);
        CHECK_INT_EQ(mapfile_openat(pfd, 0x1000, 0x3000, "/lib/x.so"), -ENOENT);
        CHECK_INT_EQ(mapfile_key(&p, &k), -ENOENT);
        close(pfd);

        /* no root/PATH to fall back on */
        put(p.by_root, "R");
        p.by_root[0] = '\0';
        CHECK_INT_EQ(mapfile_open(&p), -ENOENT);
        CHECK_INT_EQ(mapfile_key(&p, &k), -ENOENT);

        snprintf(path, sizeof(path), "%s/7/root/lib/x.so", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/7/root/lib", dir);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/7/root", dir);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/7/map_files", dir);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/7", dir);
        rmdir(path);
        CHECK(rmdir(dir) == 0);
}

/* Through the real /proc/self: this test's own executable, by the
 * map_files link of its first mapping (root may open those), else by its
 * path in root/. Its mapping is looked for by path: the first lines of
 * the maps are others' under AddressSanitizer (its shadow memory). */
static void test_openat_proc_self(void) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[4096], path[PATH_MAX], exe[PATH_MAX];
        unsigned long start = 0, end = 0;
        struct stat want, got;
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        bool found = false;
        int pfd, fd;

        CHECK(f != NULL);
        CHECK(n > 0);
        if (!f || n <= 0)
                return;
        exe[n] = '\0';
        while (!found && fgets(line, sizeof(line), f))
                found = sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &start, &end, path) == 3 &&
                        strcmp(path, exe) == 0;
        fclose(f);
        CHECK(found);
        if (!found)
                return;
        CHECK(stat(path, &want) == 0);
        pfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        CHECK(pfd >= 0);
        fd = mapfile_openat(pfd, start, end, path);
        CHECK(fd >= 0);
        CHECK(fstat(fd, &got) == 0);
        CHECK(got.st_dev == want.st_dev && got.st_ino == want.st_ino);
        close(fd);
        /* a range nothing maps, and no path */
        CHECK(mapfile_openat(pfd, 0x1000, 0x2000, NULL) < 0);
        close(pfd);
}

/* The cheap way, by path in this process's own namespace: only when the
 * path holds the very inode the maps line names. */
static void test_at_path(void) {
        char dir[] = "/tmp/test-mapfile-XXXXXX", path[PATH_MAX], other[PATH_MAX];
        struct file_ident id, wrong;
        struct file_key key, want;
        struct stat st;
        int fd;

        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/lib.so", dir);
        snprintf(other, sizeof(other), "%s/other.so", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, "ELF", 3) == 3);
        close(fd);
        fd = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK(stat(path, &st) == 0);
        id = (struct file_ident) { (uint64_t) st.st_dev, (uint64_t) st.st_ino };

        CHECK_INT_EQ(mapfile_key_at_path(path, &id, &key), 0);
        want = file_key_from_stat(&st);
        CHECK(file_key_eq(&key, &want));
        fd = mapfile_open_at_path(path, &id);
        CHECK(fd >= 0);
        if (fd >= 0) {
                struct stat got;

                CHECK(fstat(fd, &got) == 0 && got.st_ino == st.st_ino);
                close(fd);
        }
        /* another inode at the path (the file replaced, another namespace's) */
        wrong = id;
        wrong.ino++;
        CHECK_INT_EQ(mapfile_key_at_path(path, &wrong, &key), -ENOENT);
        CHECK_INT_EQ(mapfile_open_at_path(path, &wrong), -ENOENT);
        wrong = id;
        wrong.dev++;
        CHECK_INT_EQ(mapfile_key_at_path(path, &wrong, &key), -ENOENT);
        /* the inode moved: the path now names another file */
        CHECK(rename(other, path) == 0);
        CHECK_INT_EQ(mapfile_key_at_path(path, &id, &key), -ENOENT);
        CHECK_INT_EQ(mapfile_open_at_path(path, &id), -ENOENT);
        /* gone, relative, none, as maps lists "(deleted)" */
        CHECK(unlink(path) == 0);
        CHECK_INT_EQ(mapfile_key_at_path(path, &id, &key), -ENOENT);
        CHECK_INT_EQ(mapfile_open_at_path(path, &id), -ENOENT);
        CHECK_INT_EQ(mapfile_key_at_path("lib.so", &id, &key), -ENOENT);
        CHECK_INT_EQ(mapfile_open_at_path(NULL, &id), -ENOENT);
        CHECK_INT_EQ(mapfile_key_at_path(NULL, &id, &key), -ENOENT);
        CHECK(rmdir(dir) == 0);
}

int main(void) {
        test_key_from_stat();
        test_paths();
        test_fallback_order();
        test_openat_proc_self();
        test_at_path();
        TESTS_DONE();
}
