/* Stacks recorded from a stopped child (its registers, executable
 * mappings with their tables, stack) and published into the shim's maps as
 * the daemon's unwinder does: see recording.h. */
#include "recording.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"
#include "tests.h"
#include "table-pack.h"
#include "unwind-table.h"

int table_build(const char *path, struct table *ret) {
        _cleanup_(unwind_table_done) struct unwind_table t = {};
        Elf *elf;
        int fd, r;

        *ret = (struct table) {};
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        r = elf ? unwind_table_build(elf, &t) : -EINVAL;
        if (r >= 0)
                r = table_pack_table(&t, &ret->slots, &ret->n_slots);
        if (elf)
                elf_end(elf);
        close(fd);
        return r;
}

int mapping_bias(const char *path, uint64_t start, uint64_t offset, uint64_t *ret) {
        Elf *elf;
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        r = elf ? unwind_mapping_bias(elf, start, offset, ret) : -EINVAL;
        if (elf)
                elf_end(elf);
        close(fd);
        return r;
}

/* Reads the child's executable mappings with their tables (a file with
 * CFI: TABLE; else, the vDSO and anonymous code: FP) and its stack, from
 * the stack pointer's page to the end of the stack's mapping. */
int record_memory(struct recording *r) {
        char path[64], line[4096];
        FILE *f;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int) r->pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                struct procmap m = {};
                struct profd_unwind_mapping *u = &r->maps[r->n_maps];
                uint64_t bias = 0;

                if (procmap_parse_line(line, &m) < 0)
                        continue;
                if (m.path && strcmp(m.path, "[stack]") == 0 && r->regs.sp >= m.start && r->regs.sp < m.end) {
                        r->stack_base = r->regs.sp & ~4095ULL;
                        r->stack_len = m.end - r->stack_base;
                }
                if (m.executable && r->n_maps < 64) {
                        bool file = m.path && m.path[0] == '/';
                        struct table *t = &r->tables[r->n_maps];

                        *u = (struct profd_unwind_mapping) { .start = m.start, .end = m.end,
                                                             .kind = PROFD_MAPPING_FP };
                        if (file && table_build(m.path, t) >= 0 && mapping_bias(m.path, m.start, m.offset, &bias) >= 0) {
                                u->bias = bias;
                                u->kind = PROFD_MAPPING_TABLE;
                                u->rows_n = (uint32_t) t->n_slots;
                        }
                        r->paths[r->n_maps] = m.path ? strdup(m.path) : NULL;
                        r->n_maps++;
                }
                procmap_done(&m);
        }
        fclose(f);
        if (!r->stack_len)
                return -ENOENT;
        r->stack = malloc(r->stack_len);
        snprintf(path, sizeof(path), "/proc/%d/mem", (int) r->pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (!r->stack || fd < 0 || pread(fd, r->stack, r->stack_len, (off_t) r->stack_base) != (ssize_t) r->stack_len) {
                if (fd >= 0)
                        close(fd);
                return -EIO;
        }
        close(fd);
        return 0;
}

const Dwfl_Callbacks recording_dwfl_callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* The name of the function at pc in the recorded process, or "?". */
const char *symbolize(const struct recording *r, uint64_t pc) {
        Dwfl_Module *mod = dwfl_addrmodule(r->dwfl, pc);
        const char *name = mod ? dwfl_module_addrname(mod, pc) : NULL;

        return name ? name : "?";
}

void recording_done(struct recording *r) {
        if (r->pid > 0) {
                kill(r->pid, SIGKILL);
                waitpid(r->pid, NULL, 0);
        }
        if (r->dwfl)
                dwfl_end(r->dwfl);
        for (size_t i = 0; i < r->n_maps; i++) {
                free(r->tables[i].slots);
                free(r->paths[i]);
        }
        free(r->stack);
}

/* --- publishing tables as the daemon does ----------------------------------- */

uint32_t rows_next, maps_next;
static uint32_t rows_scribbled; /* the values below are garbage (scribble_published) */
static uint32_t starts[4096];    /* where publish wrote each table */
static size_t n_starts;
uint64_t versions;



/* Writes the recording's tables (once, as the unwinder shares a file's
 * table between its processes, or again into new slices) and mappings,
 * then its entry under a new version, and moves the epoch: the unwinder's
 * order. Returns the version. */
uint64_t publish(struct recording *r, enum publish_mode mode) {
        uint64_t *values = (void *) shim_map_of(&unwind_rows)->values;
        struct profd_unwind_mapping *maps = (void *) shim_map_of(&unwind_maps)->values;
        struct profd_unwind_proc p = { .start_ns = r->start, .maps_off = maps_next, .maps_n = (uint32_t) r->n_maps,
                                       .version = ++versions };
        uint32_t tgid = (uint32_t) r->pid;

        p.rt_lo = r->rt.rt_lo;
        p.rt_hi = r->rt.rt_hi;
        p.rt_cold_lo = r->rt.rt_cold_lo;
        p.rt_cold_hi = r->rt.rt_cold_hi;
        p.rt_bias = r->rt.rt_bias;
        p.rt_slot = r->rt.rt_slot;

        for (size_t i = 0; i < r->n_maps; i++) {
                struct profd_unwind_mapping m = r->maps[i];
                const struct table *t = &r->tables[i];
                bool fixture = r->paths[i] && strstr(r->paths[i], "stopped");

                if (m.kind == PROFD_MAPPING_TABLE && mode == PUBLISH_FIXTURE_FP && fixture) {
                        m = (struct profd_unwind_mapping) { .start = m.start, .end = m.end, .kind = PROFD_MAPPING_FP };
                } else if (m.kind == PROFD_MAPPING_TABLE) {
                        if (!r->written[i] || r->rows_off[i] < rows_scribbled || mode == PUBLISH_MOVED) {
                                size_t n_values = (t->n_slots + 1) / 2;

                                if (rows_next + n_values > ROWS_MAX)
                                        abort();
                                /* two slots to a value, the even one first */
                                memcpy(values + rows_next, t->slots, t->n_slots * sizeof(*t->slots));
                                r->rows_off[i] = rows_next;
                                r->written[i] = true;
                                if (n_starts == ELEMENTSOF(starts))
                                        abort();
                                starts[n_starts++] = rows_next;
                                rows_next += (uint32_t) n_values;
                        }
                        m.rows_off = r->rows_off[i];
                }
                if (maps_next >= MAPS_MAX)
                        abort();
                maps[maps_next++] = m;
        }
        CHECK(bpf_map_update_elem(&unwind_procs, &tgid, &p, BPF_ANY) == 0);
        __sync_fetch_and_add(&unwind_epoch, 1);
        return p.version;
}

/* Overwrites every slot published so far with rows no walk may follow: a
 * slice released and reused. */
void scribble_published(void) {
        uint64_t *values = (void *) shim_map_of(&unwind_rows)->values;
        struct profd_unwind_mapping *maps = (void *) shim_map_of(&unwind_maps)->values;

        /* at each table's start, a table of one row whose rule is
         * UNSUPPORTED for every pc: a walk through a stale slice ends
         * there; the rest no well-formed table */
        static const uint32_t unsupported[8] = {
                0, 1, 1, 1,                                /* head: page 0, 1 page, 1 row, 1 rule */
                0, 1,                                      /* index */
                0,                                         /* row: pc_lo 0, rule 0 */
                (uint32_t) PROFD_UNWIND_UNSUPPORTED << 16, /* rule: cfa_off 0, kind, rbp_off 0 */
        };

        memset(values, 0xff, rows_next * sizeof(*values));
        for (size_t i = 0; i < n_starts; i++)
                memcpy(values + starts[i], unsupported, sizeof(unsupported));
        for (uint32_t i = 0; i < maps_next; i++)
                maps[i] = (struct profd_unwind_mapping) { .start = 4096, .end = 8192, .kind = PROFD_MAPPING_PENDING };
        rows_scribbled = rows_next;
}
