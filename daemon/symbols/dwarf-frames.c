/* DWARF lines and inlines: a file's DWARF opened on first use, its CUs indexed by address, frame chains as eu-addr2line -f -i gives them. */
#include "dwarf-frames.h"

#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bsearch.h"
#include "dwarf-copy.h"
#include "dwarf-scopes.h"
#include "helpers.h"
#include "macro.h"

/* A CU whose line program libdw reads (dwarf-lines.h leaves it to libdw). */
static char lines_by_libdw;

/* What libdw holds per line-table row once it read a CU's line program
 * (Dwarf_Line, the file list, the sorted copy), measured with mallinfo2 on
 * libc's debug file (67 bytes) and the C++ test fixture (82 bytes): for the
 * CUs whose line program is left to libdw (dwarf-lines.h). */
#define DWARF_LINE_BYTES 80
/* What libdw holds for a CU once its DIEs were read: the unit itself (~1
 * KiB, and libdw interns the units before it too) and its abbreviations
 * (1.1 KiB a CU in libc's debug file, 4 KiB in libpython's), measured with
 * mallinfo2 around dwarf_get_units and a walk of every DIE. */
#define DWARF_CU_BYTES 2560

/* Sums the section data libdw holds after dwarf_begin_elf (which
 * decompresses SHF_COMPRESSED sections in place, so sh_size is the size in
 * memory). Line tables are added per CU as they are read. */
static uint64_t dwarf_estimate_bytes(Elf *e) {
        Elf_Scn *scn = NULL;
        uint64_t total = 0;
        size_t shstrndx;

        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return 0;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr shdr;
                const char *name;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
                        continue;
                name = elf_strptr(e, shstrndx, shdr.sh_name);
                if (name && (strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0))
                        total += shdr.sh_size;
        }
        return total;
}

/* An address range of one CU, while the runs are collected. */
struct cu_range {
        uint64_t start, end;
        Dwarf_Off cu_offset;
};


static int cu_range_compare(const void *a, const void *b) {
        const struct cu_range *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->cu_offset < y->cu_offset ? -1 : x->cu_offset > y->cu_offset;
}

static int dwarf_off_compare(const void *a, const void *b) {
        const Dwarf_Off *x = a, *y = b;

        return *x < *y ? -1 : *x > *y;
}

/* Adds the ranges of the CUs .debug_aranges does not list (clang and rustc
 * emit no .debug_aranges by default; there libdw 0.188, and so
 * eu-addr2line, find no CU at all). listed is sorted. Returns 0 or -ENOMEM. */
static int cu_ranges_add_unlisted(Dwarf *dwarf, const Dwarf_Off *listed, size_t n_listed,
                                  struct cu_range **ranges, size_t *n_ranges, size_t *allocated) {
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie;
        uint8_t unit_type;

        while (dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
                Dwarf_Off off = dwarf_dieoffset(&cudie);
                size_t at = LOWER_BOUND(listed, n_listed, off);
                Dwarf_Addr base, start, end;
                ptrdiff_t it = 0;

                if (unit_type != DW_UT_compile || (at < n_listed && listed[at] == off))
                        continue;
                while ((it = dwarf_ranges(&cudie, it, &base, &start, &end)) > 0) {
                        int r;

                        if (start >= end)
                                continue;
                        r = array_grow((void **) ranges, allocated, *n_ranges + 1, sizeof(**ranges));
                        if (r < 0)
                                return r;
                        (*ranges)[(*n_ranges)++] = (struct cu_range) { start, end, off };
                }
        }
        return 0;
}

/* Groups the CUs' address ranges into runs of one CU each, as libdwfl does
 * with .debug_aranges, plus the ranges of CUs missing there. Returns 0 (no
 * ranges: no CU is ever found) or -ENOMEM. */
static int dwarf_index_read_cu_runs(struct dwarf_index *d) {
        _cleanup_free_ struct cu_range *ranges = NULL;
        _cleanup_free_ Dwarf_Off *listed = NULL;
        size_t n_ranges = 0, ranges_allocated = 0, n_aranges = 0;
        Dwarf_Aranges *aranges;
        int r;

        if (dwarf_getaranges(d->dwarf, &aranges, &n_aranges) != 0)
                n_aranges = 0;
        if (n_aranges > 0) {
                ranges = reallocarray(NULL, n_aranges, sizeof(*ranges));
                listed = reallocarray(NULL, n_aranges, sizeof(*listed));
                if (!ranges || !listed)
                        return -ENOMEM;
                ranges_allocated = n_aranges;
        }
        for (size_t i = 0; i < n_aranges; i++) {
                Dwarf_Addr addr;
                Dwarf_Word length;
                Dwarf_Off offset;

                if (dwarf_getarangeinfo(dwarf_onearange(aranges, i), &addr, &length, &offset) != 0)
                        continue;
                listed[n_ranges] = offset;
                ranges[n_ranges++] = (struct cu_range) { addr, addr + length, offset };
        }
        n_aranges = n_ranges;
        if (n_aranges > 0)
                qsort(listed, n_aranges, sizeof(*listed), dwarf_off_compare);
        r = cu_ranges_add_unlisted(d->dwarf, listed, n_aranges, &ranges, &n_ranges, &ranges_allocated);
        if (r < 0)
                return r;
        /* libdw sorted the aranges; only added ranges need sorting again,
         * so a file fully listed keeps exactly libdwfl's order. */
        if (n_ranges > n_aranges)
                qsort(ranges, n_ranges, sizeof(*ranges), cu_range_compare);

        for (size_t i = 0; i < n_ranges; i++) {
                if (d->n_cu_runs > 0 && d->cu_runs[d->n_cu_runs - 1].cu_offset == ranges[i].cu_offset)
                        continue;
                r = array_grow((void **) &d->cu_runs, &d->cu_runs_allocated, d->n_cu_runs + 1, sizeof(*d->cu_runs));
                if (r < 0)
                        return r;
                d->cu_runs[d->n_cu_runs++] = (struct cu_run) {
                        .start = ranges[i].start,
                        .cu_offset = ranges[i].cu_offset,
                };
        }
        if (n_ranges > 0)
                d->cu_runs_end = ranges[n_ranges - 1].end;
        d->runs_read = true;
        return 0;
}

/* Whether every string section of the Elf ends with a NUL. libdw 0.188
 * (and our strlen on the names it returns) read the last string of
 * .debug_str and .debug_line_str up to a NUL, past the end of a crafted
 * section; files whose DWARF fails this are resolved without it. */
static bool elf_string_sections_terminated(Elf *e) {
        /* libdw decompressed them already; these are the same buffers. */
        struct line_sections s = line_sections_of(e);

        return e && (s.str_size == 0 || s.str[s.str_size - 1] == '\0') &&
               (s.line_str_size == 0 || s.line_str[s.line_str_size - 1] == '\0');
}

static bool elf_little_endian(Elf *e) {
        const char *ident = elf_getident(e, NULL);

        return ident && ident[EI_DATA] == ELFDATA2LSB;
}

/* Maps the decompressed copy of d's DWARF sections, made now if there is
 * none yet and one can be made, and opens an Elf on it; else an Elf
 * reading d->fd into the heap. Returns 0 (d->elf NULL when neither works)
 * or -ENOMEM. */
static int dwarf_index_open_elf(struct dwarf_index *d, const char *scratch_dir) {
        void *map;
        int r;

        if (d->copy_fd < 0 && !d->copy_refused && scratch_dir) {
                r = dwarf_copy_make(d->fd, scratch_dir, &d->copy_fd, &d->copy_size);
                if (r == -ENOMEM)
                        return r;
                if (r == 0)
                        d->copy_refused = true;
                /* -ENOSPC: read into the heap this time, tried again at the
                 * next open */
        }
        if (d->copy_fd >= 0 && d->copy_size <= SIZE_MAX) {
                /* Read-only and private: nothing writes the copy. */
                map = mmap(NULL, (size_t) d->copy_size, PROT_READ, MAP_PRIVATE, d->copy_fd, 0);
                if (map != MAP_FAILED) {
                        /* ELF_C_READ_MMAP semantics: libelf never writes
                         * into a memory image. */
                        d->elf = elf_memory(map, (size_t) d->copy_size);
                        if (d->elf) {
                                d->map = map;
                                d->map_size = (size_t) d->copy_size;
                                return 0;
                        }
                        munmap(map, (size_t) d->copy_size);
                }
        }
        /* ELF_C_READ rather than mmap for the original: a file truncated
         * under us then gives short reads, not SIGBUS. */
        d->elf = elf_begin(d->fd, ELF_C_READ, NULL);
        return 0;
}

/* Ends the Elf and the mapping under it. */
static void dwarf_index_close_elf(struct dwarf_index *d) {
        if (d->elf)
                elf_end(TAKE_PTR(d->elf));
        if (d->map)
                munmap(TAKE_PTR(d->map), d->map_size);
        d->map_size = 0;
        d->unreleased = 0;
}

int dwarf_index_open(struct dwarf_index *d, const char *scratch_dir) {
        int r;

        if (d->dwarf || d->failed)
                return 0;
        if (d->fd < 0) {
                d->failed = true;
                return 0;
        }
        r = dwarf_index_open_elf(d, scratch_dir);
        if (r < 0)
                return r;
        if (d->elf)
                d->dwarf = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
        if (d->dwarf) {
                /* The dwz file shared by several debug files, if any, is
                 * read through too; open it now to check it as well. */
                Dwarf *alt = dwarf_getalt(d->dwarf);

                if (!elf_string_sections_terminated(d->elf) ||
                    (alt && !elf_string_sections_terminated(dwarf_getelf(alt))))
                        dwarf_end(TAKE_PTR(d->dwarf));
        }
        if (!d->dwarf) {
                dwarf_index_close_elf(d);
                /* libdw does not tell OOM apart from bad DWARF here. */
                d->failed = true;
                return 0;
        }
        /* Big-endian DWARF (a foreign binary run under emulation) is left
         * to libdw, which swaps: no sections for the line-table reader. */
        if (elf_little_endian(d->elf))
                d->sections = line_sections_of(d->elf);
        /* Mapped sections are page cache, not heap. */
        d->bytes = d->map ? 0 : dwarf_estimate_bytes(d->elf);
        if (!d->runs_read) {
                r = dwarf_index_read_cu_runs(d);
                if (r < 0)
                        return r;
                /* That read every CU's header, a page or more apart: most
                 * of a mapped copy (6.6 of libc's 10 MiB with libc6-dbg,
                 * 6 of libpython's 16.6), resident until the drain's trim
                 * when several files were opened in one drain. The lookups
                 * that follow fault in the few pages they read. */
                dwarf_index_drop_pages(d);
        }
        d->bytes += d->cu_runs_allocated * sizeof(*d->cu_runs);
        return 0;
}

bool dwarf_index_is_open(const struct dwarf_index *d) {
        return d->dwarf;
}

uint64_t dwarf_index_release_copy(struct dwarf_index *d) {
        uint64_t size = d->copy_size;

        if (d->map || d->copy_fd < 0)
                return 0;
        d->copy_fd = safe_close(d->copy_fd);
        d->copy_size = 0;
        return size;
}

void dwarf_index_drop_pages(struct dwarf_index *d) {
        /* A private read-only file mapping that was never written: the
         * pages are only unmapped from us, their contents stay the file's. */
        if (d->map)
                (void) madvise(d->map, d->map_size, MADV_DONTNEED);
        d->unreleased = 0;
}

/* The CU trees read in a copy beyond which its pages are given back at
 * once, not at the caller's next drop (every 64 keys of a drain, then at
 * its end). A scope tree reads its CU's whole DIE tree: libpython's
 * ceval.c alone is megabytes, worth giving back before the next key. A
 * test program's CUs are a few KiB to a few hundred: a madvise after each
 * (a zap, the range's page tables freed, a TLB flush IPI to every CPU the
 * daemon ran on) was 3% of the daemon's CPU on a build host, to give back
 * a few pages the 64-key drop gives back anyway. */
#define CU_TREES_DROP_BYTES (UINT64_C(256) << 10)

/* The bytes of .debug_info the CU at cudie spans, header included; the
 * threshold (read all) when it cannot be told. */
static uint64_t cu_span_bytes(Dwarf_Die *cudie) {
        Dwarf *dw = dwarf_cu_getdwarf(cudie->cu);
        Dwarf_Off die_off = dwarf_dieoffset(cudie), in_cu = dwarf_cuoffset(cudie), next;

        if (!dw || in_cu > die_off || dwarf_next_unit(dw, die_off - in_cu, &next, NULL, NULL, NULL, NULL, NULL,
                                                     NULL, NULL) != 0 || next <= die_off - in_cu)
                return CU_TREES_DROP_BYTES;
        return next - (die_off - in_cu);
}

/* The CU containing vaddr, by libdwfl's rule: the run starting at or before
 * it, where the last run ends with the last arange (inclusive, as there). */
static Dwarf_Die *dwarf_index_cu_die(struct dwarf_index *d, uint64_t vaddr) {
        size_t lo = UPPER_BOUND_BY(d->cu_runs, d->n_cu_runs, start, vaddr);
        struct cu_run *run;

        if (lo == 0)
                return NULL;
        if (lo == d->n_cu_runs && vaddr > d->cu_runs_end)
                return NULL;
        run = &d->cu_runs[lo - 1];
        if (!run->has_die) {
                if (!dwarf_offdie(d->dwarf, run->cu_offset, &run->die))
                        return NULL;
                run->has_die = true;
        }
        return &run->die;
}

/* A DIE's name as eu-addr2line takes it: the linkage name (mangled, with
 * the parameter types that tell overloads apart) else the plain name,
 * through abstract origins and specifications. NULL when it has none (or
 * an empty one). */
static const char *die_name(Dwarf_Die *die) {
        Dwarf_Attribute attr;
        const char *name;

        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) ?:
                                dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
        if (!name)
                name = dwarf_diename(die);
        return name && name[0] ? name : NULL;
}

/* A source file name as eu-addr2line prints it: relative names (as GCC
 * records them when given relative paths, and as -fdebug-prefix-map makes
 * them) prefixed with the CU's DW_AT_comp_dir. Kept per name pointer, which
 * stays put while the Dwarf is open. NULL for NULL; on OOM, *ret_oom. */
static const char *dwarf_index_source_path(struct dwarf_index *d, Dwarf_Die *cudie, const char *src, bool *ret_oom) {
        Dwarf_Attribute attr;
        const char *comp_dir;
        char *joined;
        void *cached;

        if (!src || src[0] == '/')
                return src;
        if (!d->paths) {
                d->paths = hashmap_new_u64();
                if (!d->paths)
                        goto oom;
        }
        if (hashmap_get(d->paths, src, &cached) >= 0)
                return cached;
        comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
        if (!comp_dir)
                joined = (char *) src;
        else if (asprintf(&joined, "%s/%s", comp_dir, src) < 0)
                goto oom;
        if (hashmap_put(d->paths, src, joined) < 0) {
                if (joined != src)
                        free(joined);
                goto oom;
        }
        d->cache_bytes += HASH_ENTRY_BYTES + (joined != src ? strlen(joined) + 1 : 0);
        return joined;
oom:
        *ret_oom = true;
        return NULL;
}

/* Adds a frame named raw; its display name is the caller's to set (the
 * demangled names are cached per file). Returns 0 or -ENOMEM. */
static int frame_list_push(struct frame_list *l, const char *raw, const char *file, unsigned line, bool inlined) {
        int r;

        r = array_grow((void **) &l->frames, &l->allocated, l->n_frames + 1, sizeof(*l->frames));
        if (r < 0)
                return r;
        l->frames[l->n_frames++] = (struct sym_frame) {
                .raw_function = raw,
                .file = file,
                .line = line,
                .inlined = inlined,
        };
        return 0;
}

/* The scope tree of the CU at cudie, built on first use. NULL and *ret_oom
 * on OOM. */
static struct cu_scopes *dwarf_index_cu_scopes(struct dwarf_index *d, Dwarf_Die *cudie, bool *ret_oom) {
        _cleanup_(cu_scopes_freep) struct cu_scopes *c = NULL;
        Dwarf_Off off = dwarf_dieoffset(cudie);
        void *cached;

        if (!d->cu_scopes) {
                d->cu_scopes = hashmap_new_u64();
                if (!d->cu_scopes)
                        goto oom;
        }
        if (hashmap_get(d->cu_scopes, UINT64_TO_KEY(off), &cached) >= 0)
                return cached;
        if (cu_scopes_build(cudie, &c) < 0 || hashmap_put(d->cu_scopes, UINT64_TO_KEY(off), c) < 0)
                goto oom;
        d->bytes += cu_scopes_bytes(c) + HASH_ENTRY_BYTES + DWARF_CU_BYTES;
        /* Starting it read the CU's children, skipping over their own (the
         * whole span of the CU's DIEs when they have no DW_AT_sibling, as
         * clang's); what lookups read again faults back in. Given back once
         * the trees read add up to CU_TREES_DROP_BYTES. */
        if (d->map) {
                d->unreleased += cu_span_bytes(cudie);
                if (d->unreleased >= CU_TREES_DROP_BYTES)
                        dwarf_index_drop_pages(d);
        }
        return TAKE_PTR(c);
oom:
        *ret_oom = true;
        return NULL;
}

/* The line table of the CU at cudie, read on first use; NULL when libdw
 * reads it instead (dwarf-lines.h), and on OOM with *ret_oom. */
static const struct line_table *dwarf_index_cu_lines(struct dwarf_index *d, Dwarf_Die *cudie, bool *ret_oom) {
        _cleanup_(line_table_freep) struct line_table *t = NULL;
        Dwarf_Off off = dwarf_dieoffset(cudie);
        Dwarf_Attribute attr;
        Dwarf_Word stmt_list;
        uint8_t address_size, offset_size;
        void *cached;
        int r = -EINVAL;

        if (!d->cu_lines) {
                d->cu_lines = hashmap_new_u64();
                if (!d->cu_lines)
                        goto oom;
        }
        if (hashmap_get(d->cu_lines, UINT64_TO_KEY(off), &cached) >= 0)
                return cached == &lines_by_libdw ? NULL : cached;
        if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &stmt_list) == 0 &&
            dwarf_diecu(cudie, &(Dwarf_Die) {}, &address_size, &offset_size))
                r = line_table_read(&d->sections, stmt_list,
                                    dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr)), address_size, &t);
        if (r == -ENOMEM)
                goto oom;
        if (r < 0) {
                Dwarf_Lines *lines;
                size_t n_lines;

                if (hashmap_put(d->cu_lines, UINT64_TO_KEY(off), &lines_by_libdw) < 0)
                        goto oom;
                /* libdw reads it now, as the lookup would. */
                if (dwarf_getsrclines(cudie, &lines, &n_lines) == 0)
                        d->bytes += (uint64_t) n_lines * DWARF_LINE_BYTES;
                d->bytes += HASH_ENTRY_BYTES;
                return NULL;
        }
        if (hashmap_put(d->cu_lines, UINT64_TO_KEY(off), t) < 0)
                goto oom;
        d->bytes += line_table_bytes(t) + HASH_ENTRY_BYTES;
        return TAKE_PTR(t);
oom:
        *ret_oom = true;
        return NULL;
}

/* The frames the inlined subroutines on the path from node outwards add:
 * each names the next enclosing function (inline or not) and where it
 * called the inlined one, from DW_AT_call_file and DW_AT_call_line (as
 * eu-addr2line does from dwarf_getscopes_die). Returns 0 or -ENOMEM; broken
 * DWARF just ends the chain. */
static int dwarf_inline_chain(struct dwarf_index *d, Dwarf_Die *cudie, const struct line_table *lines,
                              const struct cu_scopes *c, uint32_t node, struct frame_list *l) {
        Dwarf_Files *files = NULL;

        if (!lines && dwarf_getsrcfiles(cudie, &files, NULL) != 0)
                return 0;

        for (; node != SCOPE_NONE; node = cu_scopes_parent(c, node)) {
                Dwarf_Die *die = cu_scopes_die(c, node), *parent = NULL;
                Dwarf_Attribute attr;
                Dwarf_Word value;
                const char *src = NULL;
                unsigned line = 0;
                bool oom = false;
                int r;

                if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
                        continue;
                for (uint32_t p = cu_scopes_parent(c, node); p != SCOPE_NONE && !parent; p = cu_scopes_parent(c, p)) {
                        int tag = dwarf_tag(cu_scopes_die(c, p));

                        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point ||
                            tag == DW_TAG_subprogram)
                                parent = cu_scopes_die(c, p);
                }
                if (!parent)
                        break;
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0)
                        src = dwarf_index_source_path(d, cudie,
                                                      lines ? line_table_file(lines, value) :
                                                              dwarf_filesrc(files, value, NULL, NULL),
                                                      &oom);
                if (oom)
                        return -ENOMEM;
                if (src && dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0)
                        line = (unsigned) value;
                r = frame_list_push(l, die_name(parent) ?: "??", src, line,
                                    dwarf_tag(parent) == DW_TAG_inlined_subroutine);
                if (r < 0)
                        return r;
        }
        return 0;
}

int dwarf_index_collect(struct dwarf_index *d, uint64_t vaddr, const char *symbol, struct frame_list *l) {
        const struct line_table *lines = NULL;
        struct cu_scopes *scopes = NULL;
        uint32_t innermost = SCOPE_NONE;
        Dwarf_Die *cudie;
        const char *file = NULL;
        uint64_t bytes;
        unsigned line = 0;
        bool oom = false;
        int r;

        cudie = dwarf_index_cu_die(d, vaddr);
        if (cudie) {
                int lineno;

                lines = dwarf_index_cu_lines(d, cudie, &oom);
                if (oom)
                        return -ENOMEM;
                if (lines) {
                        if (line_table_find(lines, vaddr, &file, &lineno) > 0 && file && lineno > 0)
                                line = (unsigned) lineno;
                } else {
                        Dwarf_Line *dl = dwarf_getsrc_die(cudie, vaddr);

                        if (dl && (file = dwarf_linesrc(dl, NULL, NULL)) && dwarf_lineno(dl, &lineno) == 0 &&
                            lineno > 0)
                                line = (unsigned) lineno;
                }
                file = dwarf_index_source_path(d, cudie, file, &oom);
                scopes = oom ? NULL : dwarf_index_cu_scopes(d, cudie, &oom);
                if (oom)
                        return -ENOMEM;
                bytes = cu_scopes_bytes(scopes);
                r = cu_scopes_innermost(scopes, vaddr, &innermost);
                /* what the descent read stays, counted, even on OOM */
                d->bytes += cu_scopes_bytes(scopes) - bytes;
                if (r < 0)
                        return r;
        }

        for (uint32_t node = innermost; node != SCOPE_NONE; node = cu_scopes_parent(scopes, node)) {
                Dwarf_Die *die = cu_scopes_die(scopes, node);
                int tag = dwarf_tag(die);
                const char *raw;

                if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
                        continue;
                /* Without a name eu-addr2line says "??"; the symbol table may know. */
                raw = die_name(die) ?: symbol ?: "??";
                r = frame_list_push(l, raw, file, line, tag == DW_TAG_inlined_subroutine);
                if (r < 0)
                        return r;
                return dwarf_inline_chain(d, cudie, lines, scopes, innermost, l);
        }

        if (!symbol)
                return 0;
        return frame_list_push(l, symbol, file, line, false);
}

void dwarf_index_init(struct dwarf_index *d) {
        *d = (struct dwarf_index) { .fd = -1, .copy_fd = -1 };
}

void dwarf_index_close(struct dwarf_index *d) {
        const void *key;
        void *value;
        size_t state = 0;

        if (d->paths)
                while (hashmap_iterate(d->paths, &state, &key, &value))
                        if (value != key)
                                free(value);
        d->paths = hashmap_free(d->paths);
        state = 0;
        if (d->cu_scopes)
                while (hashmap_iterate(d->cu_scopes, &state, NULL, &value))
                        cu_scopes_free(value);
        d->cu_scopes = hashmap_free(d->cu_scopes);
        state = 0;
        if (d->cu_lines)
                while (hashmap_iterate(d->cu_lines, &state, NULL, &value))
                        if (value != &lines_by_libdw)
                                line_table_free(value);
        d->cu_lines = hashmap_free(d->cu_lines);
        d->sections = (struct line_sections) {};
        /* The CU DIEs point into the Dwarf. */
        for (size_t i = 0; i < d->n_cu_runs; i++)
                d->cu_runs[i].has_die = false;
        /* libdw's strings and line tables go with it; the caller dropped its
         * copies of pointers into them first. */
        if (d->dwarf)
                dwarf_end(TAKE_PTR(d->dwarf));
        dwarf_index_close_elf(d);
        d->bytes = d->cu_runs_allocated * sizeof(*d->cu_runs);
        d->cache_bytes = 0;
}

void dwarf_index_done(struct dwarf_index *d) {
        dwarf_index_close(d);
        safe_close(d->fd);
        safe_close(d->copy_fd);
        free(d->cu_runs);
        free(d->path);
        dwarf_index_init(d);
}
