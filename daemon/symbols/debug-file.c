/* Debug-file lookup: candidates by build-id path and .gnu_debuglink (checked by build-id, else CRC32), then debuginfod. */
#include "debug-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfod-dl.h"
#include "helpers.h"
#include "macro.h"

/* gnu_debuglink files are read whole for their CRC; this much at a time. */
#define CRC_CHUNK_BYTES (UINT64_C(1) << 16)

static char **strv_free(char **v) {
        if (v)
                for (char **p = v; *p; p++)
                        free(*p);
        free(v);
        return NULL;
}

/* Returns a deep copy of the NULL-terminated list, or NULL on OOM. */
static char **strv_copy(const char *const *v) {
        size_t n = 0;
        char **copy;

        while (v[n])
                n++;
        copy = calloc(n + 1, sizeof(*copy));
        if (!copy)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                copy[i] = strdup(v[i]);
                if (!copy[i])
                        return strv_free(copy);
        }
        return copy;
}

int debug_search_init(struct debug_search *ds) {
        static const char *const default_debug_dirs[] = { "/usr/lib/debug", NULL };

        *ds = (struct debug_search) {};
        ds->dirs = strv_copy(default_debug_dirs);
        return ds->dirs ? 0 : -ENOMEM;
}

void debug_search_done(struct debug_search *ds) {
        strv_free(ds->dirs);
        if (ds->debuginfod)
                sym_debuginfod_end(ds->debuginfod);
        hashmap_free_with_keys(ds->debuginfod_missed);
        *ds = (struct debug_search) {};
}

int debug_search_set_dirs(struct debug_search *ds, const char *const *dirs) {
        static const char *const none[] = { NULL };
        char **copy = strv_copy(dirs ? dirs : none);

        if (!copy)
                return -ENOMEM;
        strv_free(ds->dirs);
        ds->dirs = copy;
        return 0;
}

int debug_search_enable_debuginfod(struct debug_search *ds) {
        int r;

        if (ds->debuginfod)
                return 0;
        /* loaded, not linked: only hosts that enable it map libdebuginfod
         * and its libcurl (dynlib.h) */
        r = debuginfod_dl_open();
        if (r < 0)
                return r;
        ds->debuginfod_missed = hashmap_new_string();
        if (!ds->debuginfod_missed)
                return -ENOMEM;
        ds->debuginfod = sym_debuginfod_begin();
        if (!ds->debuginfod) {
                ds->debuginfod_missed = hashmap_free(ds->debuginfod_missed);
                return -ENOMEM;
        }
        return 0;
}

/* The CRC-32 of gnu_debuglink: IEEE 802.3, reflected, as zlib's crc32().
 * Returns 0 and the CRC of the whole file, or a negative errno. */
static int file_crc32(int fd, uint32_t *ret) {
        _cleanup_free_ unsigned char *buf = NULL;
        uint32_t table[256], crc = 0xffffffffU;
        off_t off = 0;

        /* Built per call: 2 KiB of work, nothing next to reading a file. */
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;

                for (int k = 0; k < 8; k++)
                        c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
                table[i] = c;
        }
        buf = malloc(CRC_CHUNK_BYTES);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = pread(fd, buf, CRC_CHUNK_BYTES, off);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                for (ssize_t i = 0; i < n; i++)
                        crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
                off += n;
        }
        *ret = crc ^ 0xffffffffU;
        return 0;
}

void debug_file_done(struct debug_file *d) {
        safe_close(d->fd);
        free(d->path);
        func_table_done(&d->funcs);
        *d = (struct debug_file) { .fd = -1 };
}

/* Opens path as a candidate debug file of q: by_build_id candidates must have
 * q's build-id; debuglink candidates must have it when both have one, else
 * the debuglink's CRC. Returns 1 and fills *ret, 0 when the candidate is
 * missing, unreadable or not the right file (not an error: the search goes
 * on), -ENOMEM. */
static int debug_candidate_open(const struct debug_query *q, const char *path, bool by_build_id,
                                struct debug_file *ret) {
        _cleanup_(elf_endp) Elf *e = NULL;
        _cleanup_free_ char *id = NULL;
        _cleanup_close_ int fd = -1;
        struct debug_file d = { .fd = -1 };
        GElf_Ehdr ehdr;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOMEM ? -ENOMEM : 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if (st.st_dev == q->st.st_dev && st.st_ino == q->st.st_ino)
                return 0;
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr) || elf_check_headers(e, &ehdr) < 0)
                return 0;
        r = elf_read_build_id(e, &id);
        if (r < 0)
                return r;
        if (by_build_id) {
                if (!id || !streq(id, q->build_id))
                        return 0;
        } else if (id && q->build_id) {
                if (!streq(id, q->build_id))
                        return 0;
        } else {
                uint32_t crc;

                r = file_crc32(fd, &crc);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || crc != q->link_crc)
                        return 0;
        }

        d.has_dwarf = elf_has_dwarf(e);
        if (q->want_symtab) {
                r = elf_read_functions(e, true, &d.funcs);
                if (r < 0)
                        return r;
        }
        if (!d.has_dwarf && d.funcs.kind != SYMTAB_FULL) {
                func_table_done(&d.funcs);
                return 0;
        }
        d.path = strdup(path);
        if (!d.path) {
                func_table_done(&d.funcs);
                return -ENOMEM;
        }
        d.fd = TAKE_FD(fd);
        *ret = d;
        return 1;
}

/* Tries path inside the process's root, then on the host. Returns as
 * debug_candidate_open. */
static int debug_candidate_try(const struct debug_query *q, const char *root_prefix, const char *path,
                               bool by_build_id, struct debug_file *ret) {
        int r;

        if (root_prefix) {
                _cleanup_free_ char *in_root = NULL;

                if (asprintf(&in_root, "%s%s", root_prefix, path) < 0)
                        return -ENOMEM;
                r = debug_candidate_open(q, in_root, by_build_id, ret);
                if (r != 0)
                        return r;
        }
        return debug_candidate_open(q, path, by_build_id, ret);
}

/* Asks the configured debuginfod servers for the debug file of build_id.
 * What they don't have is remembered for the symbolizer's life, so a missing
 * file is asked for once (libdebuginfod also keeps a negative cache on disk,
 * across restarts). Returns 1 and fills *ret, 0 when not found, -ENOMEM. */
static int debug_file_from_debuginfod(struct debug_search *ds, const struct debug_query *q, struct debug_file *ret) {
        _cleanup_free_ char *path = NULL;
        char *copy;
        int fd, r;

        if (!ds->debuginfod || !q->build_id || hashmap_get(ds->debuginfod_missed, q->build_id, NULL) >= 0)
                return 0;
        fd = sym_debuginfod_find_debuginfo(ds->debuginfod, (const unsigned char *) q->build_id, 0, &path);
        if (fd >= 0) {
                close(fd); /* debug_candidate_open opens and checks it by path */
                r = debug_candidate_open(q, path, true, ret);
                if (r != 0)
                        return r;
        }
        copy = strdup(q->build_id);
        if (!copy)
                return -ENOMEM;
        r = hashmap_put(ds->debuginfod_missed, copy, copy);
        if (r < 0)
                free(copy);
        return r == -ENOMEM ? r : 0;
}

int debug_file_find(struct debug_search *ds, const struct debug_query *q, const char *root_prefix,
                    const char *display_path, struct debug_file *ret) {
        _cleanup_free_ char *dir = NULL;
        const char *slash;
        int r;

        if (q->build_id && strlen(q->build_id) > 2)
                for (char **d = ds->dirs; *d; d++) {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", *d, q->build_id, q->build_id + 2) < 0)
                                return -ENOMEM;
                        r = debug_candidate_try(q, root_prefix, path, true, ret);
                        if (r != 0)
                                return r;
                }

        if (!q->link_name)
                return debug_file_from_debuginfod(ds, q, ret);
        /* The directory as the process names it; "" for a bare name, so
         * the candidates are relative to the current directory as for
         * eu-addr2line. */
        slash = strrchr(display_path, '/');
        dir = strndup(display_path, slash ? (size_t) (slash - display_path) : 0);
        if (!dir)
                return -ENOMEM;

        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s%s%s%s", dir, slash ? "/" : "", i == 0 ? "" : ".debug/", q->link_name) < 0)
                        return -ENOMEM;
                r = debug_candidate_try(q, root_prefix, path, false, ret);
                if (r != 0)
                        return r;
        }
        if (display_path[0] == '/')
                for (char **d = ds->dirs; *d; d++) {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s%s/%s", *d, dir, q->link_name) < 0)
                                return -ENOMEM;
                        r = debug_candidate_try(q, root_prefix, path, false, ret);
                        if (r != 0)
                                return r;
                }
        /* nothing on this host: the servers, last, as they are the slowest */
        return debug_file_from_debuginfod(ds, q, ret);
}
