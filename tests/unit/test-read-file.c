/* Whole-file reads (read_full_file, read_full_fileat): every byte of
 * files shorter and longer than the first buffer, empty files, /proc files
 * (no size given), relative to a directory's fd, and the errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "tests.h"

static char dir[] = "/tmp/test-read-file.XXXXXX";

static void write_file(const char *name, const char *bytes, size_t n) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        CHECK(f);
        CHECK_INT_EQ(fwrite(bytes, 1, n, f), n);
        CHECK_INT_EQ(fclose(f), 0);
}

/* Sizes around the first buffer (8192, less the NUL) and its doublings. */
static void test_every_byte_at_any_size(void) {
        static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 100000 };
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        CHECK(dfd >= 0);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t n = sizes[i];
                char *want = malloc(n + 1), *got = NULL, path[4096];

                CHECK(want);
                for (size_t k = 0; k < n; k++)
                        want[k] = (char) ('a' + (k * 7 + n) % 26);
                write_file("f", want, n);
                CHECK_INT_EQ(read_full_fileat(dfd, "f", &got), 0);
                CHECK_INT_EQ(strlen(got), n);
                CHECK(memcmp(got, want, n) == 0);
                free(got);
                got = NULL;
                snprintf(path, sizeof(path), "%s/f", dir);
                CHECK_INT_EQ(read_full_file(path, &got), 0);
                CHECK_INT_EQ(strlen(got), n);
                CHECK(memcmp(got, want, n) == 0);
                free(got);
                free(want);
        }
        close(dfd);
}

/* A page of its own, readable or not by i: neighbours never merge. */
static void *mmap_anon_page(size_t i) {
        void *p = mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        CHECK(p != MAP_FAILED);
        return p;
}

static void mmap_anon_unmap(void *p) {
        CHECK_INT_EQ(munmap(p, 4096), 0);
}

/* /proc files say size 0 and come in pieces: the read goes on to the end.
 * /proc/self/maps of this process, which maps more than a page of lines
 * once a few hundred anonymous mappings are made. */
static void test_proc_files_whole(void) {
        char *got = NULL;
        void *maps[400];
        int pfd;
        size_t lines = 0;

        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                maps[i] = mmap_anon_page(i);
        pfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        CHECK(pfd >= 0);
        CHECK_INT_EQ(read_full_fileat(pfd, "maps", &got), 0);
        CHECK(strlen(got) > 16384);
        for (const char *p = got; (p = strchr(p, '\n')); p++)
                lines++;
        CHECK(lines >= sizeof(maps) / sizeof(maps[0]));
        /* the last line is whole: the vsyscall page, or whatever is last */
        CHECK(got[strlen(got) - 1] == '\n');
        free(got);
        got = NULL;
        CHECK_INT_EQ(read_full_fileat(pfd, "comm", &got), 0);
        CHECK_STR_EQ(got, "test-read-file\n");
        free(got);
        close(pfd);
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                mmap_anon_unmap(maps[i]);
}

static void test_errors(void) {
        char *got = NULL;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        CHECK(dfd >= 0);
        CHECK_INT_EQ(read_full_fileat(dfd, "missing", &got), -ENOENT);
        CHECK(!got);
        /* a directory opens, and its read fails */
        CHECK_INT_EQ(read_full_fileat(dfd, ".", &got), -EISDIR);
        CHECK(!got);
        CHECK_INT_EQ(read_full_fileat(-1, "f", &got), -EBADF);
        CHECK_INT_EQ(read_full_file("/nonexistent-dir/x", &got), -ENOENT);
        close(dfd);
}

int main(void) {
        CHECK(mkdtemp(dir));
        test_every_byte_at_any_size();
        test_proc_files_whole();
        test_errors();
        {
                char path[4096];

                snprintf(path, sizeof(path), "%s/f", dir);
                unlink(path);
                rmdir(dir);
        }
        TESTS_DONE();
}
