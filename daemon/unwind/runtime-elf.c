/* The runtimes' reads of an ELF file's .dynsym (see runtime-elf.h). */
#include "runtime-elf.h"

#include <errno.h>
#include <string.h>

#include "macro.h"

int runtime_dynsym_find(Elf *elf, const char *prefix, struct runtime_dynsym_want *want, size_t n_want) {
        size_t prefix_len = prefix ? strlen(prefix) : 0;
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;
                int n_found = 0;

                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || shdr.sh_entsize == 0)
                        continue;
                data = elf_getdata(scn, NULL);
                if (!data)
                        return -EBADMSG;
                for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
                        const char *name;
                        GElf_Sym sym;

                        if (!gelf_getsym(data, (int) i, &sym) || sym.st_shndx == SHN_UNDEF)
                                continue;
                        name = elf_strptr(elf, shdr.sh_link, sym.st_name);
                        if (!name || (prefix_len && strncmp(name, prefix, prefix_len) != 0))
                                continue;
                        for (size_t w = 0; w < n_want; w++)
                                if (!want[w].found && streq(name, want[w].name)) {
                                        want[w].sym = sym;
                                        want[w].found = true;
                                        n_found++;
                                }
                }
                return n_found; /* a file has one .dynsym */
        }
        return -ENOENT;
}
