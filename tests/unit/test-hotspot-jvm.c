/* The VM-structs reader on a real JVM: starts Debian's java (argv[1]) on
 * Idle.java (argv[2]) as a child, finds libjvm.so in its maps, resolves the
 * tables' symbols from the file and reads them through /proc/PID/mem, as
 * the daemon will. Checks the values against the process itself: the code
 * heaps are mapped, and the segment map leads from the call stub's return
 * address to the blob that holds it, named as HotSpot names it. No root: a
 * parent may read its child's memory.
 *
 * With PROFD_HOTSPOT_CAPTURE=FILE set, also writes the fixture that
 * test-hotspot-vmstructs reads (tests/data/hotspot/vmstructs-jdk17.txt). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "helpers.h"
#include "hotspot-vmstructs.h"
#include "macro.h"
#include "procmaps.h"
#include "tests.h"

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && streq(s + n - k, suffix);
}

/* Reads made, kept for the capture: the statics behind the tables. */
struct read_log {
        uint64_t addr;
        size_t size;
};

struct target {
        pid_t pid;
        int mem_fd;
        struct read_log *log;
        size_t n_log, allocated;
        size_t n_reader_log;    /* the reader's reads: the first n_reader_log of log */
        struct procmap *maps;
        size_t n_maps;
};

static int mem_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct target *t = userdata;
        ssize_t n = pread(t->mem_fd, buf, size, (off_t) addr);

        if (n != (ssize_t) size)
                return -EIO;
        if (t->n_log == t->allocated) {
                t->allocated = MAX(t->allocated * 2, (size_t) 1024);
                t->log = realloc(t->log, t->allocated * sizeof *t->log);
                if (!t->log)
                        abort();
        }
        t->log[t->n_log++] = (struct read_log) { addr, size };
        return 0;
}

static uint64_t mem_u64(struct target *t, uint64_t addr) {
        uint64_t v = 0;

        CHECK(mem_read(t, addr, &v, sizeof v) == 0);
        return v;
}

static void mem_string(struct target *t, uint64_t addr, char *buf, size_t size) {
        size_t n = 0;

        for (; n + 1 < size; n++)
                if (mem_read(t, addr + n, buf + n, 1) < 0 || buf[n] == '\0')
                        break;
        buf[n] = '\0';
}

static void load_maps(struct target *t) {
        char path[64], line[PATH_MAX + 128];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof path, "/proc/%d/maps", (int) t->pid);
        f = fopen(path, "re");
        CHECK(f);
        while (f && fgets(line, sizeof line, f)) {
                t->maps = realloc(t->maps, (t->n_maps + 1) * sizeof *t->maps);
                if (!t->maps)
                        abort();
                if (procmap_parse_line(line, &t->maps[t->n_maps]) == 0)
                        t->n_maps++;
        }
}

static bool mapped(const struct target *t, uint64_t addr) {
        for (size_t i = 0; i < t->n_maps; i++)
                if (addr >= t->maps[i].start && addr < t->maps[i].end)
                        return true;
        return false;
}

/* libjvm.so's path and load bias: its mapping with the lowest file offset,
 * minus the address the file's segments put that offset at. */
static int find_libjvm(const struct target *t, char **ret_path, uint64_t *ret_bias, uint64_t symbols[]) {
        const struct procmap *m = NULL;
        _cleanup_free_ struct load_segment *segs = NULL;
        const struct load_segment *seg;
        const char *missing = NULL;
        uint64_t vaddr;
        size_t n_segs;
        int fd, r;
        Elf *elf;

        for (size_t i = 0; i < t->n_maps; i++)
                if (t->maps[i].path && endswith(t->maps[i].path, "/libjvm.so") &&
                    (!m || t->maps[i].offset < m->offset))
                        m = &t->maps[i];
        if (!m)
                return -ENOENT;
        fd = open(m->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        elf = elf_begin(fd, ELF_C_READ, NULL);
        r = elf ? hotspot_symbols_elf(elf, symbols, &missing) : -EBADMSG;
        if (r < 0)
                fprintf(stderr, "hotspot_symbols_elf: %s (missing %s)\n", strerror(-r), missing ?: "-");
        if (r >= 0 && (elf_read_segments(elf, &segs, &n_segs) < 0 ||
                       !load_segments_vaddr(segs, n_segs, m->offset, &vaddr, &seg)))
                r = -EBADMSG;
        if (elf)
                elf_end(elf);
        close(fd);
        if (r < 0)
                return r;
        *ret_bias = m->start - vaddr;
        *ret_path = strdup(m->path);
        return *ret_path ? 0 : -ENOMEM;
}

/* The blob holding `pc`, as a walker finds it: the code heap's segment
 * map says, per segment, how many segments back to step (0 at a block's
 * first, 0xff for free ones); the blob follows the block's header. */
static uint64_t blob_of(struct target *t, const struct hotspot_vmstructs *vs, uint64_t pc) {
        for (uint32_t i = 0; i < vs->n_heaps; i++) {
                const struct hotspot_code_heap *h = &vs->heaps[i];
                uint64_t seg;
                uint8_t tag;

                if (pc < h->low || pc >= h->high)
                        continue;
                seg = (pc - h->low) >> vs->log2_segment_size;
                for (int steps = 0; steps < 1 << 20; steps++) {
                        if (mem_read(t, h->segmap_low + seg, &tag, 1) < 0 || tag == 0xff || tag > seg)
                                return 0;
                        if (tag == 0)
                                return h->low + (seg << vs->log2_segment_size) + vs->heap_block_size;
                        seg -= tag;
                }
        }
        return 0;
}

static void print_values(const struct hotspot_vmstructs *vs) {
        printf("JDK %d.%d.%d+%d\n", vs->version_major, vs->version_minor, vs->version_security, vs->version_build);
        printf("code cache [0x%" PRIx64 ", 0x%" PRIx64 "), %u heaps, segments of %u bytes, HeapBlock %u\n",
               vs->code_low, vs->code_high, vs->n_heaps, 1u << vs->log2_segment_size, vs->heap_block_size);
        for (uint32_t i = 0; i < vs->n_heaps; i++)
                printf("  heap %u [0x%" PRIx64 ", 0x%" PRIx64 ") segmap 0x%" PRIx64 "\n", i, vs->heaps[i].low,
                       vs->heaps[i].high, vs->heaps[i].segmap_low);
        printf("call stub return 0x%" PRIx64 "\n", vs->call_stub_return_address);
        printf("CodeHeap _memory %u _segmap %u _log2_segment_size %u; VirtualSpace _low_boundary %u _high_boundary %u\n",
               vs->code_heap_memory, vs->code_heap_segmap, vs->code_heap_log2_segment_size,
               vs->virtual_space_low_boundary, vs->virtual_space_high_boundary);
        printf("CodeBlob size %u _name %u _frame_size %u _frame_complete_offset %u _code_begin %d _code_end %d "
               "_code_offset %d _data_offset %d\n",
               vs->blob_size, vs->blob_name, vs->blob_frame_size, vs->blob_frame_complete_offset,
               (int) vs->blob_code_begin, (int) vs->blob_code_end, (int) vs->blob_code_offset,
               (int) vs->blob_data_offset);
        printf("nmethod size %u _method %u _compile_id %u _comp_level %u _orig_pc_offset %u _metadata_offset %u "
               "_scopes_pcs_offset %u _dependencies_offset %u _scopes_data_begin %d _scopes_data_offset %d "
               "_deopt_handler_begin %u\n",
               vs->nmethod_size, vs->nmethod_method, vs->nmethod_compile_id, vs->nmethod_comp_level,
               vs->nmethod_orig_pc_offset, vs->nmethod_metadata_offset, vs->nmethod_scopes_pcs_offset,
               vs->nmethod_dependencies_offset, (int) vs->nmethod_scopes_data_begin,
               (int) vs->nmethod_scopes_data_offset, vs->nmethod_deopt_handler_begin);
        printf("PcDesc size %u _pc_offset %u _scope_decode_offset %u\n", vs->pc_desc_size, vs->pc_desc_pc_offset,
               vs->pc_desc_scope_decode_offset);
        printf("Method _constMethod %u; ConstMethod size %u _constants %u _flags %u _code_size %u _name_index %u "
               "_signature_index %u has_linenumber_table %d\n",
               vs->method_const_method, vs->const_method_size, vs->const_method_constants, vs->const_method_flags,
               vs->const_method_code_size, vs->const_method_name_index, vs->const_method_signature_index,
               vs->const_method_has_linenumber_table);
        printf("ConstantPool size %u _pool_holder %u _source_file_name_index %u; Klass _name %u; "
               "Symbol _length %u _body %u\n",
               vs->constant_pool_size, vs->constant_pool_holder, vs->constant_pool_source_file_name_index,
               vs->klass_name, vs->symbol_length, vs->symbol_body);
        printf("interpreter frame slots (words from fp, %d = not exported): sender_sp %d last_sp %d method %d "
               "mirror %d mdp %d cache %d locals %d bcp %d initial_sp %d\n",
               HOTSPOT_NO_SLOT, vs->interp_sender_sp, vs->interp_last_sp, vs->interp_method, vs->interp_mirror,
               vs->interp_mdp, vs->interp_cache, vs->interp_locals, vs->interp_bcp, vs->interp_initial_sp);
}

/* Types (and their fields) the fixture keeps: what the reader wants, their
 * superclasses, and a few it must pass over. */
static const char *const capture_types[] = {
        "Abstract_VM_Version", "CodeCache", "StubRoutines", "GrowableArrayBase", "GrowableArray<int>",
        "CodeHeap", "VirtualSpace", "HeapBlock", "CodeBlob", "CompiledMethod", "nmethod", "PcDesc",
        "Method", "ConstMethod", "ConstantPool", "Klass", "InstanceKlass", "Symbol", "Metadata",
        "MetaspaceObj", "JavaThread", "Thread", "Universe",
};

static bool capture_type(const char *type) {
        for (size_t i = 0; i < ELEMENTSOF(capture_types); i++)
                if (streq(type, capture_types[i]))
                        return true;
        return false;
}

static bool capture_int(const char *name) {
        return startswith(name, "frame::") || startswith(name, "ConstMethod::") || startswith(name, "Symbol::") ||
                streq(name, "oopSize");
}

/* The fixture: the entry layouts, the entries of the types above in table
 * order, and the bytes of every small read outside the tables (the
 * statics they lead to). A trusted walk: this runs on a real JVM only. */
static void capture(struct target *t, const uint64_t *sym, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "we");
        uint64_t v[_HOTSPOT_SYM_MAX];
        char a[HOTSPOT_VMSTRUCTS_NAME_MAX], b[HOTSPOT_VMSTRUCTS_NAME_MAX], c[HOTSPOT_VMSTRUCTS_NAME_MAX];
        size_t n_before = t->n_reader_log;

        CHECK(f);
        if (!f)
                return;
        for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                v[s] = mem_u64(t, sym[s]);
        fprintf(f, "# HotSpot's VM-structs tables, the parts profd reads, captured from a running\n"
                   "# JVM by test-hotspot-jvm (PROFD_HOTSPOT_CAPTURE). Read by test-hotspot-vmstructs.\n"
                   "# layout TABLE stride, then its fields' offsets; type NAME SUPER SIZE;\n"
                   "# struct TYPE FIELD CTYPE STATIC OFFSET ADDRESS; int/long NAME VALUE;\n"
                   "# mem ADDRESS BYTES: what the reader read of the statics and code heaps (and of\n"
                   "# a few names near a page's end, read in pieces of 8 bytes or fewer).\n");
        fprintf(f, "layout structs %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                v[HOTSPOT_SYM_STRUCT_STRIDE], v[HOTSPOT_SYM_STRUCT_TYPE_NAME], v[HOTSPOT_SYM_STRUCT_FIELD_NAME],
                v[HOTSPOT_SYM_STRUCT_IS_STATIC], v[HOTSPOT_SYM_STRUCT_OFFSET], v[HOTSPOT_SYM_STRUCT_ADDRESS]);
        fprintf(f, "layout types %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v[HOTSPOT_SYM_TYPE_STRIDE],
                v[HOTSPOT_SYM_TYPE_TYPE_NAME], v[HOTSPOT_SYM_TYPE_SUPERCLASS_NAME], v[HOTSPOT_SYM_TYPE_SIZE]);
        fprintf(f, "layout ints %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v[HOTSPOT_SYM_INT_STRIDE],
                v[HOTSPOT_SYM_INT_NAME], v[HOTSPOT_SYM_INT_VALUE]);
        fprintf(f, "layout longs %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v[HOTSPOT_SYM_LONG_STRIDE],
                v[HOTSPOT_SYM_LONG_NAME], v[HOTSPOT_SYM_LONG_VALUE]);

        for (unsigned table = 0; table < 4; table++) {
                static const enum hotspot_symbol bases[] = {
                        HOTSPOT_SYM_TYPES, HOTSPOT_SYM_STRUCTS, HOTSPOT_SYM_INT_CONSTANTS, HOTSPOT_SYM_LONG_CONSTANTS,
                };
                static const enum hotspot_symbol strides[] = {
                        HOTSPOT_SYM_TYPE_STRIDE, HOTSPOT_SYM_STRUCT_STRIDE, HOTSPOT_SYM_INT_STRIDE, HOTSPOT_SYM_LONG_STRIDE,
                };
                uint64_t base = v[bases[table]], stride = v[strides[table]];
                unsigned longs = 0;

                for (uint64_t e = base;; e += stride) {
                        switch (table) {
                        case 0: {
                                uint64_t name = mem_u64(t, e + v[HOTSPOT_SYM_TYPE_TYPE_NAME]);
                                uint64_t super = mem_u64(t, e + v[HOTSPOT_SYM_TYPE_SUPERCLASS_NAME]);

                                if (!name)
                                        goto next;
                                mem_string(t, name, a, sizeof a);
                                mem_string(t, super, b, sizeof b);
                                if (capture_type(a))
                                        fprintf(f, "type %s %s %" PRIu64 "\n", a, super ? b : "-",
                                                mem_u64(t, e + v[HOTSPOT_SYM_TYPE_SIZE]));
                                break;
                        }
                        case 1: {
                                uint64_t name = mem_u64(t, e + v[HOTSPOT_SYM_STRUCT_TYPE_NAME]);
                                uint32_t is_static = 0;

                                if (!name)
                                        goto next;
                                mem_string(t, name, a, sizeof a);
                                if (!capture_type(a))
                                        break;
                                mem_string(t, mem_u64(t, e + v[HOTSPOT_SYM_STRUCT_FIELD_NAME]), b, sizeof b);
                                mem_string(t, mem_u64(t, e + v[HOTSPOT_SYM_STRUCT_TYPE_STRING]), c, sizeof c);
                                CHECK(mem_read(t, e + v[HOTSPOT_SYM_STRUCT_IS_STATIC], &is_static, 4) == 0);
                                /* Type strings have spaces ("unsigned int"). */
                                for (char *p = c; *p; p++)
                                        if (*p == ' ')
                                                *p = '~';
                                fprintf(f, "struct %s %s %s %u %" PRIu64 " 0x%" PRIx64 "\n", a, b, c[0] ? c : "-",
                                        is_static, mem_u64(t, e + v[HOTSPOT_SYM_STRUCT_OFFSET]),
                                        mem_u64(t, e + v[HOTSPOT_SYM_STRUCT_ADDRESS]));
                                break;
                        }
                        case 2: {
                                uint64_t name = mem_u64(t, e + v[HOTSPOT_SYM_INT_NAME]);
                                int32_t value = 0;

                                if (!name)
                                        goto next;
                                mem_string(t, name, a, sizeof a);
                                CHECK(mem_read(t, e + v[HOTSPOT_SYM_INT_VALUE], &value, 4) == 0);
                                if (capture_int(a))
                                        fprintf(f, "int %s %d\n", a, value);
                                break;
                        }
                        default: {
                                uint64_t name = mem_u64(t, e + v[HOTSPOT_SYM_LONG_NAME]);

                                if (!name)
                                        goto next;
                                mem_string(t, name, a, sizeof a);
                                /* A few: the reader walks this table but keeps nothing. */
                                if (longs++ < 4)
                                        fprintf(f, "long %s %" PRIu64 "\n", a, mem_u64(t, e + v[HOTSPOT_SYM_LONG_VALUE]));
                                break;
                        }
                        }
                }
        next:;
        }

        /* Small reads by the reader outside the tables and the layout
         * variables: the statics and the code heaps. */
        for (size_t i = 0; i < n_before; i++) {
                const struct read_log *r = &t->log[i];
                uint8_t bytes[8];
                bool layout = false;

                if (r->size > 8)
                        continue;
                for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                        layout |= r->addr == sym[s];
                if (layout || pread(t->mem_fd, bytes, r->size, (off_t) r->addr) != (ssize_t) r->size)
                        continue;
                fprintf(f, "mem 0x%" PRIx64 " ", r->addr);
                for (size_t k = 0; k < r->size; k++)
                        fprintf(f, "%02x", bytes[k]);
                fputc('\n', f);
        }
        printf("fixture written to %s\n", path);
}

int main(int argc, char **argv) {
        const char *java = argc > 1 ? argv[1] : "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
        const char *program = argc > 2 ? argv[2] : "Idle.java";
        struct target t = { .mem_fd = -1 };
        uint64_t symbols[_HOTSPOT_SYM_MAX], bias = 0;
        struct hotspot_vmstructs vs = {};
        enum hotspot_vmstructs_reason reason;
        const char *what = NULL, *capture_path = getenv("PROFD_HOTSPOT_CAPTURE");
        _cleanup_free_ char *libjvm = NULL;
        char ready[64] = {}, mem[64], name[HOTSPOT_VMSTRUCTS_NAME_MAX];
        int out[2], r, status;
        uint64_t blob;

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        /* A file that is not a JVM exports none of the symbols. */
        {
                int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
                Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;

                CHECK(elf);
                if (elf)
                        CHECK_INT_EQ(hotspot_symbols_elf(elf, symbols, &what), -ENOENT);
                if (elf)
                        elf_end(elf);
                safe_close(fd);
        }
        /* Loud on purpose: CI installs openjdk-17-jre-headless (setup.sh's
         * TEST_PACKAGES), so a missing java is a broken set-up, not a skip. */
        if (access(java, X_OK) < 0) {
                fprintf(stderr, "%s absent: install openjdk-17-jre-headless (./setup.sh test does)\n", java);
                return 1;
        }
        if (pipe2(out, O_CLOEXEC) < 0)
                abort();
        t.pid = fork();
        if (t.pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                /* Small and quick: one compiler thread's worth of heap. */
                execl(java, java, "-Xmx64m", "-XX:+UseSerialGC", program, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        /* The source launcher compiles Idle.java first: a few seconds on a
         * loaded machine. read() waits for main's "ready". */
        CHECK(read(out[0], ready, sizeof ready - 1) > 0);
        CHECK(startswith(ready, "ready"));

        snprintf(mem, sizeof mem, "/proc/%d/mem", (int) t.pid);
        t.mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
        CHECK(t.mem_fd >= 0);
        load_maps(&t);
        r = find_libjvm(&t, &libjvm, &bias, symbols);
        CHECK_INT_EQ(r, 0);
        if (r == 0) {
                printf("%s, load bias 0x%" PRIx64 "\n", libjvm, bias);
                for (unsigned s = 0; s < _HOTSPOT_SYM_MAX; s++)
                        symbols[s] += bias;
                r = hotspot_vmstructs_read(symbols, mem_read, &t, &vs, &reason, &what);
                if (r < 0)
                        fprintf(stderr, "hotspot_vmstructs_read: %s, %s (%s)\n", strerror(-r),
                                hotspot_vmstructs_reason_name(reason), what ?: "-");
                CHECK_INT_EQ(r, 0);
                t.n_reader_log = t.n_log;
                printf("%zu reads\n", t.n_log);
        }
        if (r == 0) {
                print_values(&vs);
                CHECK_INT_EQ(vs.version_major, 17);
                /* The code cache is reserved memory of the process. */
                CHECK(vs.n_heaps >= 1 && vs.n_heaps <= HOTSPOT_CODE_HEAPS_MAX);
                for (uint32_t i = 0; i < vs.n_heaps; i++) {
                        CHECK(mapped(&t, vs.heaps[i].low));
                        CHECK(mapped(&t, vs.heaps[i].high - 1));
                        CHECK(mapped(&t, vs.heaps[i].segmap_low));
                }
                CHECK(mapped(&t, vs.code_low) && mapped(&t, vs.code_high - 1));
                CHECK(vs.log2_segment_size >= 5 && vs.log2_segment_size <= 10);
                /* Offsets a walker reads are inside their objects. */
                CHECK(vs.blob_frame_size < vs.blob_size && vs.blob_name < vs.blob_size);
                CHECK(vs.blob_code_begin < vs.blob_size && vs.blob_code_end < vs.blob_size);
                CHECK(vs.nmethod_method < vs.nmethod_size && vs.nmethod_size > vs.blob_size);
                CHECK(vs.nmethod_scopes_pcs_offset < vs.nmethod_size);
                CHECK(vs.method_const_method < 64);
                CHECK(vs.const_method_name_index < vs.const_method_size);
                CHECK(vs.const_method_signature_index < vs.const_method_size);
                CHECK(vs.constant_pool_holder < vs.constant_pool_size);
                CHECK(vs.klass_name < 64);
                CHECK(vs.symbol_length < vs.symbol_body && vs.symbol_body <= 16);
                CHECK(vs.pc_desc_size == 16);
                /* x86_64's interpreter frame: the sender's sp one word below
                 * the frame pointer, the last sp two. */
                CHECK_INT_EQ(vs.interp_sender_sp, -1);
                CHECK_INT_EQ(vs.interp_last_sp, -2);
                CHECK(vs.const_method_has_linenumber_table > 0);

                /* The segment map leads from an address inside generated code
                 * to its blob: what a walker does for every compiled frame. */
                CHECK(hotspot_vmstructs_in_code(&vs, vs.call_stub_return_address));
                blob = blob_of(&t, &vs, vs.call_stub_return_address);
                CHECK(blob != 0);
                if (blob) {
                        uint64_t begin = mem_u64(&t, blob + vs.blob_code_begin);
                        uint64_t end = mem_u64(&t, blob + vs.blob_code_end);
                        int32_t frame_size = 0;

                        mem_string(&t, mem_u64(&t, blob + vs.blob_name), name, sizeof name);
                        CHECK(mem_read(&t, blob + vs.blob_frame_size, &frame_size, 4) == 0);
                        printf("call stub return 0x%" PRIx64 " is in blob 0x%" PRIx64 " \"%s\" [0x%" PRIx64
                               ", 0x%" PRIx64 ") frame size %d words\n",
                               vs.call_stub_return_address, blob, name, begin, end, frame_size);
                        CHECK(begin <= vs.call_stub_return_address && vs.call_stub_return_address < end);
                        CHECK(startswith(name, "StubRoutines"));
                        CHECK(frame_size >= 0 && frame_size < 1024);
                }
                if (capture_path)
                        capture(&t, symbols, capture_path);
        }

        kill(t.pid, SIGKILL);
        CHECK(waitpid(t.pid, &status, 0) == t.pid);
        safe_close(t.mem_fd);
        for (size_t i = 0; i < t.n_maps; i++)
                free(t.maps[i].path);
        free(t.maps);
        free(t.log);
        TESTS_DONE();
}
