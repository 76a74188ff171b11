/* A file's identity and the paths to a process's mapped file (mapfile.h). */
#include "mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hashmap.h"
#include "macro.h"

struct file_key file_key_from_stat(const struct stat *st) {
        return (struct file_key) {
                .dev = (uint64_t) st->st_dev,
                .ino = (uint64_t) st->st_ino,
                .size = (uint64_t) st->st_size,
                .mtime_sec = (uint64_t) st->st_mtim.tv_sec,
                .mtime_nsec = (uint64_t) st->st_mtim.tv_nsec,
        };
}

uint64_t file_ident_hash(const struct file_ident *id) {
        return hash_bytes(id, sizeof(*id));
}

uint64_t file_key_hash(const void *k) {
        return hash_bytes(k, sizeof(struct file_key));
}

bool file_key_eq(const void *a, const void *b) {
        return memcmp(a, b, sizeof(struct file_key)) == 0;
}

void mapfile_paths(const char *proc_root, uint32_t pid, uint64_t start, uint64_t end, const char *path,
                   struct mapfile_paths *ret) {
        if (snprintf(ret->by_map, sizeof(ret->by_map), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, proc_root,
                     pid, start, end) >= (int) sizeof(ret->by_map))
                ret->by_map[0] = '\0';
        if (!path ||
            snprintf(ret->by_root, sizeof(ret->by_root), "%s/%" PRIu32 "/root%s", proc_root, pid, path) >=
                    (int) sizeof(ret->by_root))
                ret->by_root[0] = '\0';
}

int mapfile_open(const struct mapfile_paths *p) {
        const char *paths[] = { p->by_map, p->by_root };
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                int fd;

                if (!paths[i][0])
                        continue;
                /* O_NONBLOCK: a FIFO put at the path cannot hang the caller */
                fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd >= 0)
                        return fd;
                r = -errno;
        }
        return r;
}

int mapfile_key(const struct mapfile_paths *p, struct file_key *ret) {
        struct stat st;

        if ((!p->by_map[0] || stat(p->by_map, &st) < 0) && (!p->by_root[0] || stat(p->by_root, &st) < 0))
                return -ENOENT;
        *ret = file_key_from_stat(&st);
        return 0;
}

static bool is_inode(const struct stat *st, const struct file_ident *id) {
        return (uint64_t) st->st_dev == id->dev && (uint64_t) st->st_ino == id->ino;
}

int mapfile_key_at_path(const char *path, const struct file_ident *id, struct file_key *ret) {
        struct stat st;

        if (!path || path[0] != '/' || stat(path, &st) < 0 || !is_inode(&st, id))
                return -ENOENT;
        *ret = file_key_from_stat(&st);
        return 0;
}

int mapfile_open_at_path_stat(const char *path, const struct file_ident *id, struct stat *ret_st) {
        int fd;

        if (!path || path[0] != '/')
                return -ENOENT;
        /* O_NONBLOCK: a FIFO put at the path cannot hang the caller */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -ENOENT;
        if (fstat(fd, ret_st) < 0 || !is_inode(ret_st, id)) {
                close(fd);
                return -ENOENT;
        }
        return fd;
}

int mapfile_open_at_path(const char *path, const struct file_ident *id) {
        struct stat st;

        return mapfile_open_at_path_stat(path, id, &st);
}

int mapfile_openat(int proc_dirfd, uint64_t start, uint64_t end, const char *path) {
        char by_map[64], by_root[PATH_MAX];
        const char *paths[] = { by_map, by_root };
        int r = -ENOENT;

        snprintf(by_map, sizeof(by_map), "map_files/%" PRIx64 "-%" PRIx64, start, end);
        if (!path || snprintf(by_root, sizeof(by_root), "root%s", path) >= (int) sizeof(by_root))
                by_root[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                int fd;

                if (!paths[i][0])
                        continue;
                /* O_NONBLOCK: a FIFO put at the path cannot hang the caller */
                fd = openat(proc_dirfd, paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd >= 0)
                        return fd;
                r = -errno;
        }
        return r;
}
