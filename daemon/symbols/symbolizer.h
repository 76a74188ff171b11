/* Turns addresses into function names: user frames from the ELF symbol
 * tables (.symtab, else .dynsym) and DWARF (inline frames, file:line) of the
 * mapped file or its separate debug file, kernel frames from /proc/kallsyms.
 * Files are cached by GNU build-id (else by device, inode, size and mtime),
 * so libc is read once for the whole machine and a process that exited still
 * resolves through the cache.
 *
 * Lifetime: every sym_file pointer stays valid until symbolizer_free, or
 * until a symbolizer_trim that evicts the file; strings from
 * sym_file_resolve until the next symbolizer_trim or symbolizer_bound
 * (which may close the DWARF they point into). Nothing else frees them, so
 * what was taken is safe to use until the caller itself trims or bounds;
 * symbolizer_generation tells holders of older file pointers that they must
 * load their files again.
 *
 * Memory: a file's DWARF is opened at the first address that needs it and
 * closed again after a minute without use, when no tracked process maps
 * the file, or when the cache is over its budget; with a scratch directory
 * its sections are read through a mapping of a decompressed private copy,
 * not the heap; the copy (disk, next to the store) is kept while the file
 * stays cached, unless the disk fills (symbolizer_release_copies). Symbol
 * names of 64 KiB or more are kept the same way (func_table_map). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The file object (sym_file): what one loaded file answers. */
#include "symfile.h"

/* Returns 0 or -ENOMEM. */
int symbolizer_new(symbolizer **ret);
/* Frees the symbolizer and every cached file; accepts NULL, returns NULL. */
symbolizer *symbolizer_free(symbolizer *s);

/* Where separate debug files are looked for: a NULL-terminated list of
 * directories, each searched as DIR/.build-id/xx/rest.debug and as
 * DIR/<directory of the file>/<debuglink name>. The default is
 * {"/usr/lib/debug"}; an empty list leaves only the file itself and the
 * debuglink next to it. Applies to files loaded afterwards. Returns 0 or
 * -ENOMEM (the old list then stays). */
int symbolizer_set_debug_dirs(symbolizer *s, const char *const *dirs);

/* Asks debuginfod servers for debug files found nowhere on the host, as a
 * last resort. libdebuginfod takes its servers, cache directory and timeout
 * from the environment ($DEBUGINFOD_URLS, $DEBUGINFOD_CACHE_PATH,
 * $DEBUGINFOD_TIMEOUT; profd sets them from its settings). A build-id the
 * servers did not have is not asked for again. Call from the thread that
 * loads files: the client is not shared. Loads libdebuginfod on first use
 * (dynlib.h). Returns 0, -ENOMEM, or -ENOENT/-ENOSYS when libdebuginfod
 * cannot be loaded (logged). */
int symbolizer_enable_debuginfod(symbolizer *s);

/* The file the cache holds under key (the identity its stat gave when it
 * was loaded), marked used; -ENOENT when it holds none (then the caller
 * opens the file). */
int symbolizer_lookup_key(symbolizer *s, const struct file_key *key, const sym_file **ret);
/* Loads the symbols of the ELF file at open_path (a plain path, or a
 * /proc/PID/map_files/START-END link that still works after the file was
 * deleted), or finds it in the cache. *ret is owned by the symbolizer (see
 * Lifetime above). A valid ELF file without symbols is returned too (its
 * lookups fail). Returns 0, or a negative errno: -ENOENT and other
 * open/stat errors, -ENOEXEC when the file is not ELF.
 *
 * Same as symbolizer_load_file_at(s, open_path, NULL, open_path, ret). */
int symbolizer_load_file(symbolizer *s, const char *open_path, const sym_file **ret);

/* As symbolizer_load_file, for a file that belongs to a process:
 * display_path is the file's path as the process sees it (from
 * /proc/PID/maps; NULL means open_path), root_prefix the process's root as
 * the daemon reaches it ("/proc/PID/root"; NULL or "" for the host's).
 *
 * DWARF and a full .symtab are taken from the first of: the file itself;
 * DEBUG_DIR/.build-id/xx/rest.debug for each debug dir, whose build-id must
 * match; the .gnu_debuglink name in the file's directory, in its .debug/
 * subdirectory and under DEBUG_DIR/<the file's directory>, accepted when its
 * build-id matches the file's or, when either has none, when its CRC32
 * matches the debuglink's. Every candidate path is tried under root_prefix
 * first (the debug package installed in the container) and then on the host
 * (installed where profd runs); the checks make a wrong pick impossible.
 * The first load of a file decides: a later load with another root_prefix
 * is answered from the cache. */
int symbolizer_load_file_at(symbolizer *s, const char *open_path, const char *root_prefix,
                            const char *display_path, const sym_file **ret);

/* As symbolizer_load_file_at, through fd, which it takes over (closed in
 * every case): a process's file opened when its maps were read (its
 * map_files link), read without opening /proc/self/fd/N again. */
int symbolizer_load_file_fd(symbolizer *s, int fd, const char *root_prefix, const char *display_path,
                            const sym_file **ret);

/* Where DWARF sections are copied, decompressed, to be mapped rather than
 * read into the heap (see dwarf_index_open): a directory on a disk (its
 * page cache is what the kernel can take back), where profd may create
 * unlinked files (O_TMPFILE). NULL (the default): no copies. Applies to
 * DWARF opened afterwards. Returns 0 or -ENOMEM (the old one then stays). */
int symbolizer_set_scratch_dir(symbolizer *s, const char *dir);

/* The cache budget in bytes (default CACHE_BUDGET_DEFAULT, see
 * symbolizer.c). */
void symbolizer_set_cache_budget(symbolizer *s, uint64_t bytes);
/* The estimated heap the cached files hold (symbol tables, names, libdw's
 * tables of open DWARF (its sections too when read, not mapped), scope
 * trees, resolved addresses; what the budget bounds) and the kernel's
 * table (exact, outside the budget). */
uint64_t symbolizer_cache_bytes(const symbolizer *s);
/* Marking, before a trim: symbolizer_mark_begin, then
 * symbolizer_mark_mapped for the file of every mapping of every process
 * still tracked (NULL is ignored). The trim then evicts the files that no
 * tracked process mapped at the last six trims (a minute at the default
 * interval), whatever the budget; without marking it does not. */
void symbolizer_mark_begin(symbolizer *s);
void symbolizer_mark_mapped(symbolizer *s, const sym_file *f);
/* Between drains: evicts the files no tracked process maps (above) and
 * closes the DWARF of those none maps now, closes DWARF unused for a
 * minute, gives back the resident pages of the mapped copies, then, while
 * the estimate is over the budget, closes the DWARF of least recently used
 * files (loaded, looked up or resolved) and, if that is not enough, evicts
 * whole files: with marking only files no tracked process maps now (the
 * symbol tables of the others are the floor of the budget), without it
 * any, and the generation moves. Every string from sym_file_resolve
 * becomes invalid, and every sym_file pointer of an evicted file: call it
 * when no frame of the last drain is still being used. Returns the number
 * of files evicted. */
size_t symbolizer_trim(symbolizer *s);
/* Within a drain, every few keys: while the estimate is over the budget,
 * closes the DWARF of least recently used files that were not used since
 * the last bound; then, while it is over the budget by more than a
 * quarter, of those used since too. Never the file used last; evicts no
 * file, so every sym_file pointer stays valid. The heap freed is left to
 * the caller to trim (heap_trim, once a drain). Every string from
 * sym_file_resolve becomes invalid: call it between two frames' uses,
 * when none is still being used. Returns the number of files whose DWARF
 * was closed. */
size_t symbolizer_bound(symbolizer *s);
/* Lets the kernel take back the resident pages of every mapped DWARF copy,
 * of mapped symbol names and of the kernel's table (symbolizer_trim does
 * it too). Strings stay
 * valid: what is read again faults back in from the page cache. */
void symbolizer_drop_pages(symbolizer *s);
/* The size of the DWARF copies and of the kernel's table mapped now (file
 * pages: at most this much of it is resident, and the kernel can take it
 * back). */
uint64_t symbolizer_mapped_bytes(const symbolizer *s);
/* The most symbolizer_cache_bytes plus symbolizer_mapped_bytes came to
 * since symbolizer_new, sampled at each symbolizer_trim before it trims and
 * at each symbolizer_bound that finds the cache over the budget (the cache
 * only grows between them, so this is a drain's peak). */
uint64_t symbolizer_peak_bytes(const symbolizer *s);
/* The disk the copies take is wanted (the store's filesystem is full):
 * closes every file's DWARF and its copy, and brings mapped symbol names
 * and the kernel's table back into the heap; the next open makes a copy only if there is room
 * again (the kernel's table: the next load). Invalidates strings as symbolizer_trim does.
 * Returns the bytes given back, or -ENOMEM. */
int64_t symbolizer_release_copies(symbolizer *s);
/* Forgets every file's sym_file_mark_stored (the store deleted locations).
 * Returns 0 or -ENOMEM. */
int symbolizer_forget_stored(symbolizer *s);
/* Changes whenever symbolizer_trim without marking evicted a file for the
 * budget: a caller that keeps sym_file pointers across trims (per mapping)
 * reloads them when it moved. With marking, every file evicted is one no
 * marked mapping points to, so it does not change. */
uint64_t symbolizer_generation(const symbolizer *s);

/* (Re)reads a kallsyms-format file (normally /proc/kallsyms, which shows real
 * addresses only to root); with a scratch directory with room, the table is
 * then kept in a mapped file there (kernel_table_map), not the heap. Returns 0, a negative errno from opening it, or
 * -ENODATA when every address in it is zero (addresses hidden). */
int symbolizer_load_kallsyms(symbolizer *s, const char *path);

/* The kernel function containing addr, or NULL. *ret_module is set to the
 * module name ("ext4") or NULL for the kernel image. */
const char *symbolizer_lookup_kernel(symbolizer *s, uint64_t addr, const char **ret_module);

/* kernel_table_covers (kallsyms.h) on the kernel's table. */
struct kernel_range;
bool symbolizer_kernel_covers(symbolizer *s, const struct kernel_range *own, size_t n_own, uint64_t addr);
