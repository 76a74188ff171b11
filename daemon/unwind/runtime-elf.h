/* What the runtimes' discovery reads from an interpreter's or a VM's ELF
 * file: the defined .dynsym symbols it exports (CPython's _PyRuntime,
 * HotSpot's gHotSpotVM* tables). Pure: an Elf handle in, values out. */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>

struct runtime_dynsym_want {
        const char *name;
        GElf_Sym sym;   /* set when found */
        bool found;
};

/* Fills the defined symbols of the file's .dynsym among want[0..n_want).
 * prefix, when not NULL, is one every wanted name starts with: the other
 * names are passed over without comparing each wanted one (libjvm exports
 * 30,000 symbols, 20 of which are wanted). Returns how many were found,
 * -ENOENT without a .dynsym, -EBADMSG when it cannot be read. */
int runtime_dynsym_find(Elf *elf, const char *prefix, struct runtime_dynsym_want *want, size_t n_want);
