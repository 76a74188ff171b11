/* The --output file of profctl's commands, written beside itself and renamed
 * over it at the end (output.h). */
#include "output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "util.h"

/* A file given by --output is written beside itself under a temporary name
 * and renamed over it at the end: a failed query leaves the old file, not a
 * truncated one a script would take for whole. */
int output_open(struct output *o, const char *path) {
        _cleanup_free_ char *tmp = NULL;
        mode_t mask;
        int fd;

        *o = (struct output) { .f = stdout, .path = path };
        if (!path)
                return 0;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return cli_error(-ENOMEM, "%m");
        fd = mkstemp(tmp);
        if (fd < 0)
                return cli_error(negative_errno(), "cannot create '%s': %m", tmp);
        /* mkstemp makes 0600; a file from the shell would be 0666 & ~umask */
        mask = umask(0);
        umask(mask);
        (void) fchmod(fd, 0666 & ~mask);
        o->f = fdopen(fd, "w");
        if (!o->f) {
                int r = negative_errno();
                close(fd);
                unlink(tmp);
                return cli_error(r, "cannot open '%s': %m", tmp);
        }
        o->tmp_path = TAKE_PTR(tmp);
        return 0;
}

/* ok: the output is complete. Returns 0, or -EIO after an error message. */
int output_close(struct output *o, bool ok) {
        int r = 0;

        if (!o->tmp_path)
                return 0;
        if (fclose(o->f) != 0 && ok)
                r = cli_error(negative_errno(), "cannot write '%s': %m", o->path);
        o->f = NULL;
        if (ok && r == 0 && rename(o->tmp_path, o->path) < 0)
                r = cli_error(negative_errno(), "cannot rename '%s' to '%s': %m", o->tmp_path, o->path);
        if (!ok || r < 0)
                unlink(o->tmp_path);
        free(o->tmp_path);
        o->tmp_path = NULL;
        return r;
}

int output_finish(struct output *o, int r) {
        /* buffered bytes may fail only now (a full disk) */
        if (r >= 0 && (fflush(o->f) != 0 || ferror(o->f)))
                r = cli_error(-EIO, "cannot write %s", o->path ? o->path : "to standard output");
        if (output_close(o, r >= 0) < 0)
                r = -EIO;
        return r;
}
