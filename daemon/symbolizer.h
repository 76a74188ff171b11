/* Turns addresses into function names: user frames from the ELF symbol
 * tables (.symtab, else .dynsym) of the mapped file, kernel frames from
 * /proc/kallsyms. Files are cached by GNU build-id (else by device, inode,
 * size and mtime), so libc is read once for the whole machine and a process
 * that exited still resolves through the cache. */
#pragma once

#include <stdint.h>

typedef struct symbolizer symbolizer;
typedef struct sym_file sym_file;

/* Returns 0 or -ENOMEM. */
int symbolizer_new(symbolizer **ret);
/* Frees the symbolizer and every cached file; accepts NULL, returns NULL. */
symbolizer *symbolizer_free(symbolizer *s);

/* Loads the symbols of the ELF file at open_path (a plain path, or a
 * /proc/PID/map_files/START-END link that still works after the file was
 * deleted), or finds it in the cache. *ret is owned by the symbolizer and
 * stays valid until symbolizer_free. A valid ELF file without symbols is
 * returned too (its lookups fail). Returns 0, or a negative errno: -ENOENT
 * and other open/stat errors, -ENOEXEC when the file is not ELF. */
int symbolizer_load_file(symbolizer *s, const char *open_path, const sym_file **ret);

/* The GNU build-id as lowercase hex, or NULL when the file has none. */
const char *sym_file_build_id(const sym_file *f);

/* The function whose range contains the address that file_offset (an offset
 * into the file, as /proc/PID/maps gives for a mapping) is loaded at, or
 * NULL. Offsets are turned into ELF virtual addresses through the PT_LOAD
 * program headers. The returned string lives as long as the file. */
const char *sym_file_lookup(const sym_file *f, uint64_t file_offset);

/* (Re)reads a kallsyms-format file (normally /proc/kallsyms, which shows real
 * addresses only to root). Returns 0, a negative errno from opening it, or
 * -ENODATA when every address in it is zero (addresses hidden). */
int symbolizer_load_kallsyms(symbolizer *s, const char *path);

/* The kernel function containing addr, or NULL. *ret_module is set to the
 * module name ("ext4") or NULL for the kernel image. */
const char *symbolizer_lookup_kernel(const symbolizer *s, uint64_t addr, const char **ret_module);
