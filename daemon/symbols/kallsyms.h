/* The kernel's symbol table from a kallsyms-format file: read it, and find the function containing an address. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 16 bytes: a kernel has 100-200 k text symbols, and the table stays in
 * memory as long as profd runs. */
struct kernel_sym {
        uint64_t start;
        uint32_t name_off; /* into kernel_table.names */
        uint32_t module_off; /* into kernel_table.names, or UINT32_MAX for the kernel image */
};

/* A range of kernel code, [start, end). */
struct kernel_range {
        uint64_t start, end;
};

/* Empty ({}) until loaded; then only text symbols, one per address. The
 * two arrays are in the heap, or in one read-only mapping of a private
 * file (kernel_table_map). */
struct kernel_table {
        struct kernel_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        struct kernel_range text; /* the image's text, [_stext, _etext); {} when the file
                                   * names neither */
        char *names;
        size_t names_size;
        void *map; /* the mapping both arrays are in, or NULL: in the heap */
        size_t map_size;
        /* An address was looked up in the mapping since its pages were
         * last dropped (the memo's answers read none of them). */
        bool map_read;
        /* In the heap: the start of every KERNEL_BLOCK_SYMS-th symbol
         * (~4 KiB), so that a lookup reads one block of syms. */
        uint64_t *block_starts;
        /* In the heap: the answers of the addresses looked up lately
         * (kernel_table_lookup), at most KERNEL_MEMO_MAX of them. */
        struct hashmap *memo;
};

/* The heap the table holds: its two arrays, each allocated to fit, unless
 * they are mapped, its index and its memo. */
uint64_t kernel_table_bytes(const struct kernel_table *t);

/* The size of the table's mapping (0: in the heap). */
uint64_t kernel_table_mapped_bytes(const struct kernel_table *t);

/* Frees (or unmaps) the table's arrays and empties it; an empty table is
 * fine. */
void kernel_table_done(struct kernel_table *t);

/* Moves a loaded table out of the heap: writes both arrays to an unlinked
 * file in dir (O_TMPFILE, mode 0600) and maps it read-only, so that the
 * table (about 5 MiB, for as long as profd runs) is page cache, of which a
 * drain's lookups keep a few pages resident until kernel_table_drop_pages.
 * Only when dir's filesystem keeps room (dwarf_copy_fits). Returns 0 (also
 * for an empty or already mapped table), -ENOSPC without room, or a
 * negative errno of writing or mapping; on failure the table stays in the
 * heap, whole. */
int kernel_table_map(struct kernel_table *t, const char *dir);

/* Brings a mapped table back into the heap and unmaps it, which frees its
 * file (the store's disk is full). Returns the bytes of disk given back,
 * 0 for a table in the heap, or -ENOMEM (the table stays mapped). */
int64_t kernel_table_unmap(struct kernel_table *t);

/* Lets the kernel take back the resident pages of a mapped table, if a
 * lookup read it since they were last given back: a drain's keys are
 * mostly answered by the memo, and each drop (every 64 keys) was a
 * madvise whose TLB flush reaches every CPU profd ran on. */
void kernel_table_drop_pages(struct kernel_table *t);

/* Reads a kallsyms-format file (normally /proc/kallsyms) into *t, replacing
 * what it held. Lines of another shape are skipped. Returns 0, a negative
 * errno from opening it, -EIO or -ENOMEM from reading it, -EAGAIN when it
 * grew each time between the two passes that read it, or -ENODATA when
 * every address in it is zero (addresses hidden); on failure *t is
 * unchanged. */
int kernel_table_load(struct kernel_table *t, const char *path);

/* Finds the addresses of n symbols of the kernel image (not of modules) in
 * a kallsyms-format file: ret[i] is names[i]'s address, or 0 when the file
 * has no such symbol. Returns 0, a negative errno from opening it, -EIO
 * from reading it, or -ENODATA when every address in it is zero. */
int kallsyms_find(const char *path, const char *const *names, size_t n, uint64_t *ret);

/* kallsyms_find, and each symbol's end in ret_end: the next higher address
 * of a symbol of the image after it (the image's symbols come sorted by
 * address), or 0 when it is not found or the last. */
int kallsyms_find_ranges(const char *path, const char *const *names, size_t n, uint64_t *ret, uint64_t *ret_end);

/* Whether the table names addr as one read now would, although kernel code
 * came or went since it was read: addr is in the image's text, or in one of
 * the n ranges of code that was there when the table was read and is
 * still (own: profd's own BPF programs, by their JIT addresses; sorted by
 * start, not overlapping). Anything else (a module, another BPF program)
 * may be code loaded since, named after the nearest older symbol. */
bool kernel_table_covers(const struct kernel_table *t, const struct kernel_range *own, size_t n_own, uint64_t addr);

/* Sorts n ranges by start, for kernel_table_covers. */
void kernel_ranges_sort(struct kernel_range *r, size_t n);

/* The most addresses a table remembers its answers for (in 8192 slots of
 * 24 bytes: 192 KiB). A drain's keys bring the same few hundred kernel
 * addresses again and again; a host running builds met 12 k in 7 minutes. */
#define KERNEL_MEMO_MAX 6144

/* The kernel function containing addr, or NULL (also for an empty table).
 * *ret_module (if ret_module is not NULL) is set to the module name or
 * NULL for the kernel image. Strings live as long as the table, until it
 * is loaded again or moved (kernel_table_map, kernel_table_unmap). An
 * address asked about lately is answered from the memo, without reading
 * the syms: in a mapped table every block read maps 64 KiB of it (the
 * kernel's fault-around), and the blocks of a drain's kernel frames are
 * spread over all of it. The strings are not read either. On OOM the
 * memo is left as it was. */
const char *kernel_table_lookup(struct kernel_table *t, uint64_t addr, const char **ret_module);
