/* One identity for a file's contents (struct file_key) and one way to reach
 * a file a process maps: its /proc/PID/map_files link, then the path in the
 * process's root. The unwinder keys its tables and the symbolizer its files
 * by the one; the unwinder and the process snapshots open files by the
 * other. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Identity of a file's contents as far as stat can tell; every field is
 * 64-bit so the struct has no padding and can be hashed as bytes. */
struct file_key {
        uint64_t dev;
        uint64_t ino;
        uint64_t size;
        uint64_t mtime_sec;
        uint64_t mtime_nsec;
};
struct file_key file_key_from_stat(const struct stat *st);
/* For a hashmap keyed by struct file_key *. */
uint64_t file_key_hash(const void *k);
bool file_key_eq(const void *a, const void *b);

/* Which file a mapping maps as /proc/PID/maps tells it (device and inode,
 * no stat): the writer names the files samples went through by it, and
 * the unwinder finds their tables by the key's dev and ino. */
struct file_ident {
        uint64_t dev;          /* as st_dev: makedev(major, minor) */
        uint64_t ino;
};
/* A 64-bit hash of id, for a hashmap_new_u64 key (UINT64_TO_KEY). */
uint64_t file_ident_hash(const struct file_ident *id);

/* The two ways to a process's mapped file, in the order they are tried:
 * map_files reaches the very inode mapped (deleted or replaced files,
 * other mount namespaces), root/PATH the process's view of its path.
 * Either is empty when it does not fit (a long proc_root or path), by_root
 * when there is no path. */
struct mapfile_paths {
        char by_map[256];
        char by_root[PATH_MAX];
};

/* The paths to the file process pid maps at [start, end) from path (as
 * /proc/PID/maps names it; NULL: none), under proc_root ("/proc"). */
void mapfile_paths(const char *proc_root, uint32_t pid, uint64_t start, uint64_t end, const char *path,
                   struct mapfile_paths *ret);
/* Opens the file read-only by the first path that works. Returns the fd,
 * or the negative errno of the last path tried. */
int mapfile_open(const struct mapfile_paths *p);
/* mapfile_open through proc_dirfd, /proc/PID opened as a directory: the
 * same two ways, relative to it (map_files/START-END, then root/PATH;
 * path NULL: the first only). */
int mapfile_openat(int proc_dirfd, uint64_t start, uint64_t end, const char *path);
/* The identity of the file at the first path that stat reaches. Returns 0,
 * or -ENOENT when neither does. */
int mapfile_key(const struct mapfile_paths *p, struct file_key *ret);

/* The cheap way first, for a file whose inode a maps line names (id):
 * path as profd's own mount namespace resolves it, if that is the very
 * inode. A process's files are mostly the host's own (its libraries, its
 * program), and a path in profd's namespace is a walk of the dentry
 * cache, where map_files/ and root/ are lookups in the process's /proc
 * that take its mmap lock. The inode cannot be another file's while the
 * process maps it; a process elsewhere (another mount namespace, a file
 * replaced or deleted since) gives another inode or none, and the caller
 * goes the two ways above. mapfile_key_at_path returns 0, or -ENOENT
 * (another file or none there); mapfile_open_at_path the fd (read-only,
 * close-on-exec, as mapfile_open), or -ENOENT. */
int mapfile_key_at_path(const char *path, const struct file_ident *id, struct file_key *ret);
int mapfile_open_at_path(const char *path, const struct file_ident *id);
/* mapfile_open_at_path, with the file's stat in *ret_st. */
int mapfile_open_at_path_stat(const char *path, const struct file_ident *id, struct stat *ret_st);
