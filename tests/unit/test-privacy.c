/* Private files: the judge of owner and mode, then the real calls on a
 * temporary directory under umask 022 (a shell's): what profd creates comes
 * out 0750/0600, what others may read is tightened, what others may write
 * or another user owns is refused. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "privacy.h"
#include "tests.h"

static void test_judge(void) {
        static const struct {
                uid_t owner;
                mode_t mode, allowed;
                enum privacy_verdict verdict;
                mode_t fixed;
        } cases[] = {
                { 0, 0600, 0600, PRIVACY_OK, 0600 },
                { 0, 0400, 0600, PRIVACY_OK, 0400 },
                { 0, 0644, 0600, PRIVACY_TIGHTEN, 0600 },
                { 0, 0640, 0600, PRIVACY_TIGHTEN, 0600 },
                { 0, 0604, 0600, PRIVACY_TIGHTEN, 0600 },
                { 0, 0666, 0600, PRIVACY_WRITABLE, 0666 },
                { 0, 0620, 0600, PRIVACY_WRITABLE, 0620 },
                { 0, 0602, 0600, PRIVACY_WRITABLE, 0602 },
                { 1000, 0600, 0600, PRIVACY_FOREIGN_OWNER, 0600 },
                /* directories: the group may list, not write */
                { 0, 040750, 0750, PRIVACY_OK, 0750 },
                { 0, 040700, 0750, PRIVACY_OK, 0700 },
                { 0, 040755, 0750, PRIVACY_TIGHTEN, 0750 },
                { 0, 042755, 0750, PRIVACY_TIGHTEN, 02750 }, /* setgid kept */
                { 0, 040770, 0750, PRIVACY_WRITABLE, 0770 },
                { 0, 041777, 0750, PRIVACY_WRITABLE, 01777 }, /* /tmp */
                { 65534, 040700, 0750, PRIVACY_FOREIGN_OWNER, 0700 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                mode_t fixed = 0;
                enum privacy_verdict v = privacy_judge(cases[i].owner, cases[i].mode, 0, cases[i].allowed, &fixed);

                CHECK_INT_EQ(v, cases[i].verdict);
                CHECK_INT_EQ(fixed, cases[i].fixed);
        }
        /* another user's private file, judged as that user: fine */
        mode_t fixed;
        CHECK_INT_EQ(privacy_judge(1000, 0600, 1000, 0600, &fixed), PRIVACY_OK);
}

static mode_t mode_of(const char *path) {
        struct stat st;

        if (stat(path, &st) < 0)
                return (mode_t) -1;
        return st.st_mode & 07777;
}

static void test_on_files(void) {
        char tmp[] = "/tmp/profd-privacy-XXXXXX";
        _cleanup_free_ char *dir = NULL, *store = NULL, *wal = NULL, *open_dir = NULL;

        umask(022);
        CHECK(mkdtemp(tmp) != NULL);
        CHECK(asprintf(&dir, "%s/a/b/state", tmp) > 0);
        CHECK(asprintf(&store, "%s/profd.db", dir) > 0);
        CHECK(asprintf(&wal, "%s/profd.db-wal", dir) > 0);
        CHECK(asprintf(&open_dir, "%s/open", tmp) > 0);

        /* created: the directory 0750, its missing parents 0755, the file 0600 */
        CHECK_INT_EQ(privacy_make_dir(dir, PRIVACY_DIR_MODE, false), 0);
        CHECK_INT_EQ(mode_of(dir), 0750);
        {
                _cleanup_free_ char *parent = NULL;
                CHECK(asprintf(&parent, "%s/a/b", tmp) > 0);
                CHECK_INT_EQ(mode_of(parent), 0755);
        }
        CHECK_INT_EQ(privacy_make_file(store), 0);
        CHECK_INT_EQ(mode_of(store), 0600);
        /* again: nothing changes */
        CHECK_INT_EQ(privacy_make_dir(dir, PRIVACY_DIR_MODE, false), 0);
        CHECK_INT_EQ(privacy_make_file(store), 0);
        CHECK_INT_EQ(mode_of(store), 0600);

        /* readable by others: tightened */
        CHECK_INT_EQ(chmod(store, 0644), 0);
        CHECK_INT_EQ(privacy_make_file(store), 0);
        CHECK_INT_EQ(mode_of(store), 0600);
        CHECK_INT_EQ(chmod(dir, 0755), 0);
        CHECK_INT_EQ(privacy_make_dir(dir, PRIVACY_DIR_MODE, false), 0);
        CHECK_INT_EQ(mode_of(dir), 0750);
        /* unless shared (the socket lives there too): the files in it are
         * private themselves; writable by others is refused all the same */
        CHECK_INT_EQ(chmod(dir, 0755), 0);
        CHECK_INT_EQ(privacy_make_dir(dir, PRIVACY_DIR_MODE, true), 0);
        CHECK_INT_EQ(mode_of(dir), 0755);
        CHECK_INT_EQ(chmod(dir, 0775), 0);
        CHECK_INT_EQ(privacy_make_dir(dir, PRIVACY_DIR_MODE, true), -EPERM);
        CHECK_INT_EQ(chmod(dir, 0750), 0);

        /* writable by others: refused, and left as it is */
        CHECK_INT_EQ(chmod(store, 0666), 0);
        CHECK_INT_EQ(privacy_make_file(store), -EPERM);
        CHECK_INT_EQ(mode_of(store), 0666);
        CHECK_INT_EQ(chmod(store, 0600), 0);
        CHECK_INT_EQ(mkdir(open_dir, 0777), 0);
        CHECK_INT_EQ(chmod(open_dir, 01777), 0);
        CHECK_INT_EQ(privacy_make_dir(open_dir, PRIVACY_DIR_MODE, false), -EPERM);
        CHECK_INT_EQ(mode_of(open_dir), 01777);

        /* a missing WAL is fine; an existing one is judged like the store */
        CHECK_INT_EQ(privacy_check_file(wal), 0);
        {
                FILE *f = fopen(wal, "w");
                CHECK(f != NULL);
                if (f)
                        fclose(f);
        }
        CHECK_INT_EQ(mode_of(wal), 0644);
        CHECK_INT_EQ(privacy_check_file(wal), 0);
        CHECK_INT_EQ(mode_of(wal), 0600);
        CHECK_INT_EQ(chmod(wal, 0622), 0);
        CHECK_INT_EQ(privacy_check_file(wal), -EPERM);

        /* a regular file where the directory should be */
        CHECK_INT_EQ(privacy_make_dir(store, PRIVACY_DIR_MODE, false), -ENOTDIR);

        unlink(wal);
        unlink(store);
        rmdir(open_dir);
        rmdir(dir);
        {
                _cleanup_free_ char *b = NULL, *a = NULL;
                CHECK(asprintf(&b, "%s/a/b", tmp) > 0 && asprintf(&a, "%s/a", tmp) > 0);
                rmdir(b);
                rmdir(a);
        }
        CHECK_INT_EQ(rmdir(tmp), 0);
}

int main(void) {
        test_judge();
        test_on_files();
        return tests_failed ? 1 : 0;
}
