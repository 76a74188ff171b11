/* A JVM child of a unit test, read through /proc/PID/mem (jvm-target.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "helpers.h"
#include "jvm-target.h"
#include "macro.h"
#include "procmaps.h"

int mem_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct target *t = userdata;

        return pread(t->mem_fd, buf, size, (off_t) addr) == (ssize_t) size ? 0 : -EIO;
}

uint64_t mem_u64(struct target *t, uint64_t addr) {
        uint64_t v = 0;

        if (mem_read(t, addr, &v, sizeof v) < 0)
                return 0;
        return v;
}

void mem_string(struct target *t, uint64_t addr, char *buf, size_t size) {
        size_t n = 0;

        for (; n + 1 < size; n++)
                if (mem_read(t, addr + n, buf + n, 1) < 0 || buf[n] == '\0')
                        break;
        buf[n] = '\0';
}

bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && streq(s + n - k, suffix);
}

/* libjvm.so's symbols, with the load bias added: its mapping with the
 * lowest file offset, minus the address its segments put that offset at. */
int find_libjvm(struct target *t, uint64_t symbols[]) {
        char path[64], line[PATH_MAX + 128];
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ struct load_segment *segs = NULL;
        _cleanup_free_ char *lib = NULL;
        const struct load_segment *seg;
        uint64_t start = 0, offset = UINT64_MAX, vaddr;
        size_t n_segs;
        int fd, r;
        Elf *elf;

        snprintf(path, sizeof path, "/proc/%d/maps", (int) t->pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                struct procmap m;

                if (procmap_parse_line(line, &m) < 0)
                        continue;
                if (m.path && endswith(m.path, "/libjvm.so") && m.offset < offset) {
                        free(lib);
                        lib = TAKE_PTR(m.path);
                        start = m.start;
                        offset = m.offset;
                }
                free(m.path);
        }
        if (!lib)
                return -ENOENT;
        fd = open(lib, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        r = elf ? hotspot_symbols_elf(elf, symbols, NULL) : -EBADMSG;
        if (r >= 0 && (elf_read_segments(elf, &segs, &n_segs) < 0 ||
                       !load_segments_vaddr(segs, n_segs, offset, &vaddr, &seg)))
                r = -EBADMSG;
        if (elf)
                elf_end(elf);
        close(fd);
        if (r < 0)
                return r;
        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                symbols[s] += start - vaddr;
        return 0;
}

/* A field's offset (or a static's address) from gHotSpotVMStructs, by
 * name: a plain walk, trusted, for the test's own way to a Method*. */
uint64_t vm_field(struct target *t, const uint64_t *sym, const char *type, const char *field) {
        uint64_t base = mem_u64(t, sym[HOTSPOT_SYM_STRUCTS]), stride = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_STRIDE]);
        uint64_t o_type = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_TYPE_NAME]);
        uint64_t o_field = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_FIELD_NAME]);
        uint64_t o_static = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_IS_STATIC]);
        uint64_t o_offset = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_OFFSET]);
        uint64_t o_address = mem_u64(t, sym[HOTSPOT_SYM_STRUCT_ADDRESS]);
        char a[128], b[128];

        for (uint64_t e = base; stride && e < base + stride * 100000; e += stride) {
                uint64_t name = mem_u64(t, e + o_type);
                uint32_t is_static = 0;

                if (!name)
                        break;
                mem_string(t, name, a, sizeof a);
                if (!streq(a, type))
                        continue;
                mem_string(t, mem_u64(t, e + o_field), b, sizeof b);
                if (!streq(b, field))
                        continue;
                mem_read(t, e + o_static, &is_static, 4);
                return is_static ? mem_u64(t, e + o_address) : mem_u64(t, e + o_offset);
        }
        fprintf(stderr, "%s::%s not in the tables\n", type, field);
        t->missing++;
        return 0;
}

/* The Klass named `name` (internal form), through every class loader's list. */
uint64_t find_class(struct target *t, const uint64_t *sym, const struct hotspot_vmstructs *vs, const char *name) {
        uint64_t head = vm_field(t, sym, "ClassLoaderDataGraph", "_head");
        uint64_t cld_next = vm_field(t, sym, "ClassLoaderData", "_next");
        uint64_t cld_klasses = vm_field(t, sym, "ClassLoaderData", "_klasses");
        uint64_t klass_next = vm_field(t, sym, "Klass", "_next_link");
        unsigned n_loaders = 0, n_classes = 0;

        if (!head)
                return 0;
        for (uint64_t cld = mem_u64(t, head); cld && n_loaders < 100000; cld = mem_u64(t, cld + cld_next), n_loaders++)
                for (uint64_t k = mem_u64(t, cld + cld_klasses); k && n_classes < 1000000;
                     k = mem_u64(t, k + klass_next), n_classes++) {
                        uint64_t s = mem_u64(t, k + vs->klass_name);
                        uint16_t len = 0;
                        char buf[256];

                        if (!s || mem_read(t, s + vs->symbol_length, &len, 2) < 0 || len != strlen(name) ||
                            mem_read(t, s + vs->symbol_body, buf, len) < 0)
                                continue;
                        if (memcmp(buf, name, len) == 0) {
                                printf("%s: Klass 0x%" PRIx64 " (%u loaders, %u classes looked at)\n", name, k,
                                       n_loaders + 1, n_classes + 1);
                                return k;
                        }
                }
        return 0;
}
