/* DWARF sections copied out of a binary or debug file, decompressed, into an unlinked file of profd's own that libdw then reads through a read-only mapping. */
#include "dwarf-copy.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "macro.h"

#define ERRNO_IS_DISK_FULL(e) ((e) == ENOSPC || (e) == EDQUOT)

/* Read and write in pieces this big: the copy streams through a fixed
 * buffer whatever the size of the sections. */
#define COPY_CHUNK (64 * 1024)

/* zlib's deflate cannot expand more than about 1032:1; a header claiming
 * more is crafted, and is left to libelf (which refuses it) as before. */
#define ZLIB_MAX_RATIO 1032

/* A copy must leave this much of its filesystem free, and a twentieth of
 * it: the copies go next to the store, and a drain that cannot be stored
 * is lost while a copy not made only costs heap. */
#define COPY_FREE_MARGIN (UINT64_C(64) << 20)

bool dwarf_copy_fits(const char *dir, uint64_t size) {
        struct statvfs vfs;
        uint64_t avail, total;

        if (statvfs(dir, &vfs) < 0)
                return false;
        avail = (uint64_t) vfs.f_bavail * vfs.f_frsize;
        total = (uint64_t) vfs.f_blocks * vfs.f_frsize;
        return avail >= size && avail - size >= COPY_FREE_MARGIN + total / 20;
}

/* The largest write scratch_map makes (see dwarf-copy.h). */
#define SCRATCH_WRITE_CHUNK (64 * 1024)

int scratch_map(const char *dir, const void *const *bufs, const size_t *sizes, size_t n, void **ret_map,
                size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        size_t total = 0, off = 0;
        void *map;

        for (size_t i = 0; i < n; i++)
                total += sizes[i];
        if (total == 0)
                return -EINVAL;
        if (!dwarf_copy_fits(dir, total))
                return -ENOSPC;
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        for (size_t i = 0; i < n; i++)
                for (size_t done = 0; done < sizes[i]; done += SCRATCH_WRITE_CHUNK) {
                        size_t len = MIN(sizes[i] - done, (size_t) SCRATCH_WRITE_CHUNK);
                        int r = pwrite_all(fd, (const char *) bufs[i] + done, len, off);

                        if (r < 0)
                                return r;
                        off += len;
                }
        map = mmap(NULL, total, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        *ret_map = map;
        *ret_size = total;
        return 0;
}

/* One kept section: where its bytes are in the source, where they go. */
struct copy_section {
        GElf_Shdr shdr; /* as in the source */
        const char *name;
        bool compressed;
        uint64_t src_offset, src_size; /* the bytes to read (after the compression header) */
        uint64_t out_offset, out_size, out_align;
};

static uint64_t align_up(uint64_t v, uint64_t a) {
        return (v + a - 1) / a * a;
}

/* Copies or inflates one section into out. Returns 0, or a negative errno
 * (-EBADMSG: the compressed data does not inflate to its stated size). */
static int copy_section_data(int src, int out, const struct copy_section *c, char *in_buf, char *out_buf) {
        z_stream z = {};
        uint64_t done = 0, written = 0;
        size_t n_out;
        int r = 0, zr = Z_OK;

        if (!c->compressed) {
                while (done < c->src_size) {
                        size_t n = (size_t) MIN((uint64_t) COPY_CHUNK, c->src_size - done);

                        r = pread_all(src, in_buf, n, c->src_offset + done);
                        if (r < 0)
                                return r;
                        r = pwrite_all(out, in_buf, n, c->out_offset + done);
                        if (r < 0)
                                return r;
                        done += n;
                }
                return 0;
        }

        if (inflateInit(&z) != Z_OK)
                return -ENOMEM;
        while (zr != Z_STREAM_END) {
                if (z.avail_in == 0) {
                        size_t n = (size_t) MIN((uint64_t) COPY_CHUNK, c->src_size - done);

                        if (n == 0) {
                                r = -EBADMSG;
                                break;
                        }
                        r = pread_all(src, in_buf, n, c->src_offset + done);
                        if (r < 0)
                                break;
                        done += n;
                        z.next_in = (Bytef *) in_buf;
                        z.avail_in = (uInt) n;
                }
                z.next_out = (Bytef *) out_buf;
                z.avail_out = COPY_CHUNK;
                zr = inflate(&z, Z_NO_FLUSH);
                if (zr != Z_OK && zr != Z_STREAM_END) {
                        r = zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
                        break;
                }
                n_out = COPY_CHUNK - z.avail_out;
                if (written + n_out > c->out_size) {
                        r = -EBADMSG;
                        break;
                }
                r = pwrite_all(out, out_buf, n_out, c->out_offset + written);
                if (r < 0)
                        break;
                written += n_out;
        }
        inflateEnd(&z);
        if (r == 0 && written != c->out_size)
                r = -EBADMSG;
        return r;
}

/* Fills in where a kept section's bytes come from. Returns 1, 0 when the
 * copy cannot reproduce it (the caller then falls back), or -errno. */
static int copy_section_source(int src, uint64_t file_size, struct copy_section *c) {
        Elf64_Chdr chdr;
        int r;

        if (c->shdr.sh_type == SHT_NOBITS) {
                c->out_size = c->shdr.sh_size;
                c->out_align = 1;
                return 1;
        }
        if (c->shdr.sh_offset > file_size || c->shdr.sh_size > file_size - c->shdr.sh_offset)
                return 0;
        c->compressed = c->shdr.sh_flags & SHF_COMPRESSED;
        if (!c->compressed) {
                c->src_offset = c->shdr.sh_offset;
                c->src_size = c->out_size = c->shdr.sh_size;
                c->out_align = c->shdr.sh_addralign;
        } else {
                if (c->shdr.sh_size < sizeof(chdr))
                        return 0;
                r = pread_all(src, &chdr, sizeof(chdr), c->shdr.sh_offset);
                if (r < 0)
                        return r == -EIO ? 0 : r;
                c->src_offset = c->shdr.sh_offset + sizeof(chdr);
                c->src_size = c->shdr.sh_size - sizeof(chdr);
                if (chdr.ch_type != ELFCOMPRESS_ZLIB || chdr.ch_size > c->src_size * ZLIB_MAX_RATIO + 64)
                        return 0;
                c->out_size = chdr.ch_size;
                c->out_align = chdr.ch_addralign;
        }
        /* Only powers of two up to a page: anything else is nonsense that
         * byte-wise readers do not need. */
        if (c->out_align == 0 || c->out_align > 4096 || (c->out_align & (c->out_align - 1)))
                c->out_align = 1;
        return 1;
}

/* What the copy holds and where: the kept sections, their name table and
 * headers, and the ELF header. */
struct copy_plan {
        GElf_Ehdr src_ehdr;
        struct copy_section *secs;
        size_t n_secs, secs_allocated;
        char *shstr;               /* the section name table */
        size_t shstr_len;
        Elf64_Shdr *shdrs;         /* n_secs + 2: the null one, the kept ones, .shstrtab */
        uint64_t shstrtab_off, shdrs_off;
        Elf64_Ehdr ehdr;
};

static void copy_plan_done(struct copy_plan *p) {
        free(p->secs);
        free(p->shstr);
        free(p->shdrs);
}

/* The copy's size in all. */
static uint64_t copy_plan_size(const struct copy_plan *p) {
        return p->shdrs_off + (p->n_secs + 2) * sizeof(*p->shdrs);
}

/* Finds the .debug_* sections of e to copy. Returns 1, 0 when the file is
 * not one this handles (the caller falls back), or a negative errno. */
static int copy_plan_sections(Elf *e, int src_fd, uint64_t file_size, struct copy_plan *p) {
        GElf_Ehdr *ehdr = &p->src_ehdr;
        size_t n_scns, shstrndx;
        Elf_Scn *scn = NULL;
        int r;

        if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, ehdr) || elf_getshdrnum(e, &n_scns) < 0 ||
            elf_getshdrstrndx(e, &shstrndx) < 0)
                return 0;
        /* The copy is written with the host's structs. */
        if (ehdr->e_ident[EI_CLASS] != ELFCLASS64 || ehdr->e_type == ET_REL ||
            ehdr->e_ident[EI_DATA] != (BYTE_ORDER == LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB))
                return 0;

        p->shstr_len = 1;
        while ((scn = elf_nextscn(e, scn))) {
                struct copy_section c = {};
                const char *name;

                if (!gelf_getshdr(scn, &c.shdr))
                        return 0;
                name = elf_strptr(e, shstrndx, c.shdr.sh_name);
                if (!name)
                        continue;
                /* dwz's shared file is found relative to the original's
                 * directory, GNU-style .zdebug has a format of its own: both
                 * left to libdw reading the original. */
                if (strncmp(name, ".zdebug", 7) == 0 || streq(name, ".gnu_debugaltlink"))
                        return 0;
                if (strncmp(name, ".debug_", 7) != 0)
                        continue;
                r = copy_section_source(src_fd, file_size, &c);
                if (r <= 0)
                        return r;
                c.name = name;
                r = array_grow((void **) &p->secs, &p->secs_allocated, p->n_secs + 1, sizeof(*p->secs));
                if (r < 0)
                        return r;
                p->secs[p->n_secs++] = c;
                p->shstr_len += strlen(name) + 1;
        }
        return p->n_secs > 0;
}

/* Lays the copy out: ELF header, each section at its alignment, the name
 * table, the section headers. Returns 0 or -ENOMEM. */
static int copy_plan_layout(struct copy_plan *p) {
        size_t name_at = 1;
        uint64_t off;

        p->shstr_len += sizeof(".shstrtab");
        p->shstr = calloc(1, p->shstr_len);
        p->shdrs = calloc(p->n_secs + 2, sizeof(*p->shdrs));
        if (!p->shstr || !p->shdrs)
                return -ENOMEM;
        off = sizeof(Elf64_Ehdr);
        for (size_t i = 0; i < p->n_secs; i++) {
                struct copy_section *c = &p->secs[i];

                off = align_up(off, c->out_align);
                c->out_offset = off;
                if (c->shdr.sh_type != SHT_NOBITS)
                        off += c->out_size;
                p->shdrs[i + 1] = (Elf64_Shdr) {
                        .sh_name = (Elf64_Word) name_at,
                        .sh_type = c->shdr.sh_type,
                        .sh_flags = c->shdr.sh_flags & ~(uint64_t) SHF_COMPRESSED,
                        .sh_addr = c->shdr.sh_addr,
                        .sh_offset = c->out_offset,
                        .sh_size = c->out_size,
                        .sh_addralign = c->out_align,
                        .sh_entsize = c->shdr.sh_entsize,
                };
                strcpy(p->shstr + name_at, c->name);
                name_at += strlen(c->name) + 1;
        }
        strcpy(p->shstr + name_at, ".shstrtab");
        p->shstrtab_off = off;
        p->shdrs[p->n_secs + 1] = (Elf64_Shdr) {
                .sh_name = (Elf64_Word) name_at,
                .sh_type = SHT_STRTAB,
                .sh_offset = p->shstrtab_off,
                .sh_size = p->shstr_len,
                .sh_addralign = 1,
        };
        p->shdrs_off = align_up(p->shstrtab_off + p->shstr_len, 8);
        p->ehdr = (Elf64_Ehdr) {
                .e_type = p->src_ehdr.e_type,
                .e_machine = p->src_ehdr.e_machine,
                .e_version = p->src_ehdr.e_version,
                .e_entry = p->src_ehdr.e_entry,
                .e_shoff = p->shdrs_off,
                .e_flags = p->src_ehdr.e_flags,
                .e_ehsize = sizeof(Elf64_Ehdr),
                .e_shentsize = sizeof(Elf64_Shdr),
                .e_shnum = (Elf64_Half) (p->n_secs + 2),
                .e_shstrndx = (Elf64_Half) (p->n_secs + 1),
        };
        memcpy(p->ehdr.e_ident, p->src_ehdr.e_ident, EI_NIDENT);
        return 0;
}

/* Writes the copy into out: the sections' bytes, then the name table and
 * headers. Returns 1, 0 when it cannot be made (the caller falls back),
 * -ENOSPC (the disk is full) or -ENOMEM. */
static int copy_write(int src_fd, int out, const struct copy_plan *p, char *in_buf, char *out_buf) {
        int r;

        for (size_t i = 0; i < p->n_secs; i++) {
                if (p->secs[i].shdr.sh_type == SHT_NOBITS)
                        continue;
                r = copy_section_data(src_fd, out, &p->secs[i], in_buf, out_buf);
                if (r == -ENOMEM)
                        return r;
                if (ERRNO_IS_DISK_FULL(-r))
                        return -ENOSPC;
                if (r < 0)
                        return 0;
        }
        r = pwrite_all(out, p->shstr, p->shstr_len, p->shstrtab_off);
        if (r >= 0)
                r = pwrite_all(out, p->shdrs, (p->n_secs + 2) * sizeof(*p->shdrs), p->shdrs_off);
        if (r >= 0)
                r = pwrite_all(out, &p->ehdr, sizeof(p->ehdr), 0);
        if (ERRNO_IS_DISK_FULL(-r))
                return -ENOSPC;
        return r < 0 ? 0 : 1;
}

/* dwarf_copy_make with the source open as e. */
static int copy_make(Elf *e, int src_fd, uint64_t file_size, const char *dir, int *ret_fd, uint64_t *ret_size) {
        _cleanup_(copy_plan_done) struct copy_plan p = {};
        _cleanup_free_ char *in_buf = NULL, *out_buf = NULL;
        _cleanup_close_ int out = -1;
        int r;

        r = copy_plan_sections(e, src_fd, file_size, &p);
        if (r <= 0)
                return r;
        in_buf = malloc(COPY_CHUNK);
        out_buf = malloc(COPY_CHUNK);
        if (!in_buf || !out_buf)
                return -ENOMEM;
        r = copy_plan_layout(&p);
        if (r < 0)
                return r;
        if (p.n_secs + 2 >= SHN_LORESERVE)
                return 0;
        if (!dwarf_copy_fits(dir, copy_plan_size(&p)))
                return -ENOSPC;
        out = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (out < 0)
                return ERRNO_IS_DISK_FULL(errno) ? -ENOSPC : 0;
        r = copy_write(src_fd, out, &p, in_buf, out_buf);
        if (r <= 0)
                return r;
        *ret_size = copy_plan_size(&p);
        *ret_fd = TAKE_FD(out);
        return 1;
}

int dwarf_copy_make(int src_fd, const char *dir, int *ret_fd, uint64_t *ret_size) {
        struct stat st;
        Elf *e;
        int r;

        if (!dir || fstat(src_fd, &st) < 0)
                return 0;
        e = elf_begin(src_fd, ELF_C_READ, NULL);
        r = copy_make(e, src_fd, (uint64_t) st.st_size, dir, ret_fd, ret_size);
        elf_end(e);
        return r;
}
