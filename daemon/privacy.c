/* Private files and directories: the judge of an owner and mode, and the
 * creation, tightening or refusal that follows from it (privacy.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "privacy.h"

enum privacy_verdict privacy_judge(uid_t owner, mode_t mode, uid_t self, mode_t allowed, mode_t *ret_mode) {
        /* only the group's and others' bits are judged: the owner is us */
        mode_t extra = mode & 077 & ~allowed;

        *ret_mode = mode & 07777;
        if (owner != self)
                return PRIVACY_FOREIGN_OWNER;
        if (mode & (S_IWGRP | S_IWOTH) & ~allowed)
                return PRIVACY_WRITABLE;
        if (extra == 0)
                return PRIVACY_OK;
        *ret_mode = mode & 07777 & ~extra;
        return PRIVACY_TIGHTEN;
}

const char *privacy_verdict_to_string(enum privacy_verdict v) {
        switch (v) {
        case PRIVACY_OK:
                return "is private";
        case PRIVACY_TIGHTEN:
                return "is readable by others";
        case PRIVACY_FOREIGN_OWNER:
                return "is owned by another user";
        case PRIVACY_WRITABLE:
                return "is writable by its group or by others";
        }
        return "is in an unknown state";
}

/* Applies the verdict on path (a file or directory of st, allowed mode). */
static int privacy_apply(const char *path, const struct stat *st, mode_t allowed) {
        enum privacy_verdict v;
        mode_t fixed;

        v = privacy_judge(st->st_uid, st->st_mode, geteuid(), allowed, &fixed);
        switch (v) {
        case PRIVACY_OK:
                return 0;
        case PRIVACY_TIGHTEN:
                if (chmod(path, fixed) < 0)
                        return log_error_errno(negative_errno(), "Failed to make %s private (mode %04o): %m",
                                               path, (unsigned) fixed);
                log_warning("%s was mode %04o, readable by others; changed it to %04o.", path,
                            (unsigned) (st->st_mode & 07777), (unsigned) fixed);
                return 0;
        case PRIVACY_FOREIGN_OWNER:
                log_error("Refusing to use %s: it %s (uid %u, profd runs as uid %u), who could read or "
                          "change what profd stores. Give it to uid %u or choose another path.",
                          path, privacy_verdict_to_string(v), (unsigned) st->st_uid, (unsigned) geteuid(),
                          (unsigned) geteuid());
                return -EPERM;
        case PRIVACY_WRITABLE:
                log_error("Refusing to use %s: it %s (mode %04o), who could replace or change what profd "
                          "stores. Check nobody did, then chmod go-w it or choose another path.",
                          path, privacy_verdict_to_string(v), (unsigned) (st->st_mode & 07777));
                return -EPERM;
        }
        return -EINVAL;
}

/* Creates dir with mode whatever the umask; 1 if created, 0 if it existed. */
static int make_one_dir(const char *dir, mode_t mode) {
        if (mkdir(dir, mode) < 0)
                return errno == EEXIST ? 0 : negative_errno();
        if (chmod(dir, mode) < 0)
                return negative_errno();
        return 1;
}

int privacy_make_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);
        int r;

        if (!p)
                return log_oom();
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                if (s[1] == '\0')
                        break; /* a trailing slash: the directory itself */
                *s = '\0';
                r = make_one_dir(p, 0755);
                if (r < 0)
                        return log_error_errno(r, "Failed to create directory %s: %m", p);
                *s = '/';
        }
        return 0;
}

int privacy_make_dir(const char *path, mode_t mode, bool shared) {
        struct stat st;
        int r;

        r = privacy_make_parents(path);
        if (r < 0)
                return r;
        r = make_one_dir(path, mode);
        if (r < 0)
                return log_error_errno(r, "Failed to create directory %s: %m", path);
        if (r > 0)
                return 0;
        if (stat(path, &st) < 0)
                return log_error_errno(negative_errno(), "Failed to check directory %s: %m", path);
        if (!S_ISDIR(st.st_mode))
                return log_error_errno(-ENOTDIR, "Failed to use %s as a directory: %m", path);
        return privacy_apply(path, &st, shared ? mode | S_IRGRP | S_IXGRP | S_IROTH | S_IXOTH : mode);
}

int privacy_check_file(const char *path) {
        struct stat st;

        if (stat(path, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return log_error_errno(negative_errno(), "Failed to check %s: %m", path);
        }
        /* a directory or device: whoever opens it reports the real error */
        if (!S_ISREG(st.st_mode))
                return 0;
        return privacy_apply(path, &st, PRIVACY_FILE_MODE);
}

int privacy_make_file(const char *path) {
        _cleanup_close_ int fd = -1;
        int r;

        r = privacy_check_file(path);
        if (r < 0)
                return r;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, PRIVACY_FILE_MODE);
        if (fd < 0) {
                /* it exists (checked above), or its directory is missing or
                 * not one: SQLite's open says which, naming the path */
                if (errno == EEXIST || errno == ENOENT || errno == ENOTDIR || errno == EISDIR)
                        return 0;
                return log_error_errno(negative_errno(), "Failed to create %s: %m", path);
        }
        if (fchmod(fd, PRIVACY_FILE_MODE) < 0)
                return log_error_errno(negative_errno(), "Failed to make %s private: %m", path);
        return 0;
}
