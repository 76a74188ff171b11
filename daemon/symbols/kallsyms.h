/* The kernel's symbol table from a kallsyms-format file: read it, and find the function containing an address. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* 16 bytes: a kernel has 100-200 k text symbols, and the table stays in
 * memory as long as profd runs. */
struct kernel_sym {
        uint64_t start;
        uint32_t name_off; /* into kernel_table.names */
        uint32_t module_off; /* into kernel_table.names, or UINT32_MAX for the kernel image */
};

/* Empty ({}) until loaded; then only text symbols, one per address. */
struct kernel_table {
        struct kernel_sym *syms; /* sorted by start, starts unique */
        size_t n_syms;
        char *names;
        size_t names_size;
};

/* The heap the table holds: its two arrays, each allocated to fit. */
uint64_t kernel_table_bytes(const struct kernel_table *t);

/* Frees the table's arrays and empties it; an empty table is fine. */
void kernel_table_done(struct kernel_table *t);

/* Reads a kallsyms-format file (normally /proc/kallsyms) into *t, replacing
 * what it held. Lines of another shape are skipped. Returns 0, a negative
 * errno from opening it, -EIO or -ENOMEM from reading it, or -ENODATA when
 * every address in it is zero (addresses hidden); on failure *t is
 * unchanged. */
int kernel_table_load(struct kernel_table *t, const char *path);

/* Finds the addresses of n symbols of the kernel image (not of modules) in
 * a kallsyms-format file: ret[i] is names[i]'s address, or 0 when the file
 * has no such symbol. Returns 0, a negative errno from opening it, -EIO
 * from reading it, or -ENODATA when every address in it is zero. */
int kallsyms_find(const char *path, const char *const *names, size_t n, uint64_t *ret);

/* The kernel function containing addr, or NULL (also for an empty table).
 * *ret_module (if ret_module is not NULL) is set to the module name or
 * NULL for the kernel image. Strings live as long as the table. */
const char *kernel_table_lookup(const struct kernel_table *t, uint64_t addr, const char **ret_module);
