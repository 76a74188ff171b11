/* Private files and directories: profd's store, its WAL and SHM, and the
 * debuginfod cache hold every process's stacks, commands and kernel
 * addresses, so only profd's own user may read them, whatever the umask or
 * the launcher. A pure judge of a file's owner and mode (unit-tested), and
 * the few system calls that apply its verdict. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Modes profd gives what it creates: its state and cache directories may
 * be listed by their group (root's, or the one the admin chose) so an
 * operator in it can see sizes; the files are for profd alone. */
#define PRIVACY_DIR_MODE 0750
#define PRIVACY_FILE_MODE 0600

enum privacy_verdict {
        PRIVACY_OK,              /* owned by us, no permission beyond allowed */
        PRIVACY_TIGHTEN,         /* ours, but others may read: *ret_mode fixes it */
        PRIVACY_FOREIGN_OWNER,   /* another user owns it: refuse */
        PRIVACY_WRITABLE,        /* group or others may write it: refuse */
};

/* Judges a file or directory of the given owner and mode (st_mode's
 * permission bits; type and special bits are ignored and kept) for a
 * process running as self, where allowed is the most it may grant
 * (PRIVACY_DIR_MODE, PRIVACY_FILE_MODE). Group or others' write is never
 * tightened away silently: someone may already have changed the file, so
 * it is refused. *ret_mode gets the mode to set on PRIVACY_TIGHTEN and the
 * current one otherwise. Never fails. */
enum privacy_verdict privacy_judge(uid_t owner, mode_t mode, uid_t self, mode_t allowed, mode_t *ret_mode);

/* The verdict in words, for messages ("is writable by its group or by
 * others"); never NULL. */
const char *privacy_verdict_to_string(enum privacy_verdict v);

/* Creates the missing parent directories of path with 0755, whatever the
 * umask (they hold nothing of profd's; the socket's must let clients
 * through). Returns 0 or what mkdir/chmod failed with (logged with the
 * directory). */
int privacy_make_parents(const char *path);

/* Creates directory path with mode (explicitly, whatever the umask) when it
 * is missing, and its missing parents with 0755 (they hold nothing of
 * ours). An existing directory is refused when another user owns it or its
 * group or others may write it (they could replace the files in it); one
 * that others may list is tightened to mode (and logged) unless shared: it
 * also holds what others must reach (the query socket), and the files in
 * it are private themselves. Returns 0; -EPERM (refused, logged with the
 * path), -ENOTDIR, or what mkdir/stat/chmod failed with (logged with the
 * path). */
int privacy_make_dir(const char *path, mode_t mode, bool shared);

/* Judges an existing file against PRIVACY_FILE_MODE: tightens (and logs)
 * or refuses it. A missing file is fine. Returns 0; -EPERM (refused,
 * logged with the path), or what stat/chmod failed with (logged). */
int privacy_check_file(const char *path);

/* privacy_check_file, then creates path with PRIVACY_FILE_MODE when it is
 * missing (an empty file: SQLite takes it as a new database). Returns 0 or
 * a negative errno as privacy_check_file, or what open failed with
 * (logged with the path). */
int privacy_make_file(const char *path);
