/* The name decoder on a real JVM: starts Debian's java (argv[1]) on
 * Names.java (argv[2]) as a child, reads its VM-structs tables as the
 * daemon will, then finds the Method* of two known methods the way the
 * serviceability agent does (ClassLoaderDataGraph → each loader's classes
 * → the class named demo/app/Names → its methods) and names them through
 * /proc/PID/mem: package, class, inner class, signature, source file, and
 * the lines of their bytecodes against the source. No root: a parent may
 * read its child's memory.
 *
 * The walk to the Method* is the test's own, trusted, with offsets looked
 * up here by name: the decoder under test gets only the Method*. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "helpers.h"
#include "hotspot-names.h"
#include "hotspot-vmstructs.h"
#include "macro.h"
#include "procmaps.h"
#include "tests.h"

struct target {
        pid_t pid;
        int mem_fd;
};

static int mem_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct target *t = userdata;

        return pread(t->mem_fd, buf, size, (off_t) addr) == (ssize_t) size ? 0 : -EIO;
}

static uint64_t mem_u64(struct target *t, uint64_t addr) {
        uint64_t v = 0;

        if (mem_read(t, addr, &v, sizeof v) < 0)
                return 0;
        return v;
}

static void mem_string(struct target *t, uint64_t addr, char *buf, size_t size) {
        size_t n = 0;

        for (; n + 1 < size; n++)
                if (mem_read(t, addr + n, buf + n, 1) < 0 || buf[n] == '\0')
                        break;
        buf[n] = '\0';
}

static bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && streq(s + n - k, suffix);
}

/* libjvm.so's symbols, with the load bias added: its mapping with the
 * lowest file offset, minus the address its segments put that offset at. */
static int find_libjvm(struct target *t, uint64_t symbols[]) {
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
static uint64_t vm_field(struct target *t, const uint64_t *sym, const char *type, const char *field) {
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
        CHECK(false);
        return 0;
}

/* The Klass named `name` (internal form), through every class loader's list. */
static uint64_t find_class(struct target *t, const uint64_t *sym, const struct hotspot_vmstructs *vs,
                           const char *name) {
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

/* The class's Method* whose name the decoder gives as `method`, named. */
static int name_method(struct target *t, const uint64_t *sym, const struct hotspot_vmstructs *vs, uint64_t klass,
                       const char *method, struct hotspot_method *ret) {
        uint64_t methods = mem_u64(t, klass + vm_field(t, sym, "InstanceKlass", "_methods"));
        uint64_t data = vm_field(t, sym, "Array<Method*>", "_data");
        int32_t n = 0;

        if (!methods || mem_read(t, methods + vs->array_length, &n, 4) < 0)
                return -EIO;
        for (int32_t i = 0; i < n && i < 65536; i++) {
                enum hotspot_names_reason reason;
                struct hotspot_method m;
                int r;

                r = hotspot_method_read(vs, mem_read, t, mem_u64(t, methods + data + 8 * (uint64_t) i), &m, &reason);
                if (r < 0) {
                        fprintf(stderr, "method %d: %s (%s)\n", i, strerror(-r), hotspot_names_reason_name(reason));
                        CHECK(false);
                        continue;
                }
                printf("  %s%s  %s, %u bytes of bytecode, lines: %s", m.function, m.signature,
                       m.source_file ?: "-", m.code_size, hotspot_names_reason_name(m.lines_reason));
                for (size_t k = 0; k < m.n_lines; k++)
                        printf(" %u:%u", m.lines[k].bci, m.lines[k].line);
                printf("\n");
                {
                        struct hotspot_method_key key;

                        CHECK_INT_EQ(hotspot_method_key_read(vs, mem_read, t, mem_u64(t, methods + data + 8 * (uint64_t) i),
                                                             &key, &reason), 0);
                        CHECK(hotspot_method_key_equal(&key, &m.key));
                }
                if (streq(m.method_name, method)) {
                        *ret = m;
                        return 0;
                }
                hotspot_method_done(&m);
        }
        return -ENOENT;
}

int main(int argc, char **argv) {
        const char *java = argc > 1 ? argv[1] : "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
        const char *program = argc > 2 ? argv[2] : "Names.java";
        struct target t = { .mem_fd = -1 };
        uint64_t symbols[_HOTSPOT_SYM_MAX], klass;
        struct hotspot_vmstructs vs = {};
        struct hotspot_method m = {};
        enum hotspot_vmstructs_reason reason;
        const char *what = NULL;
        char ready[64] = {}, mem[64];
        int out[2], r, status;

        CHECK(elf_version(EV_CURRENT) != EV_NONE);
        /* Loud on purpose, as test-hotspot-jvm: CI installs the JRE. A
         * JDK setup.sh does not install is passed with "optional": skipped
         * (77) where absent. */
        if (access(java, X_OK) < 0 && argc > 3 && streq(argv[3], "optional")) {
                fprintf(stderr, "%s absent, skipped\n", java);
                return 77;
        }
        if (access(java, X_OK) < 0) {
                fprintf(stderr, "%s absent: install openjdk-17-jre-headless (./setup.sh test does)\n", java);
                return 1;
        }
        if (pipe2(out, O_CLOEXEC) < 0)
                abort();
        t.pid = fork();
        if (t.pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                execl(java, java, "-Xmx64m", "-XX:+UseSerialGC", program, (char *) NULL);
                _exit(127);
        }
        close(out[1]);
        /* The source launcher compiles Names.java first: a few seconds. */
        CHECK(read(out[0], ready, sizeof ready - 1) > 0);
        CHECK(strncmp(ready, "ready", 5) == 0);

        snprintf(mem, sizeof mem, "/proc/%d/mem", (int) t.pid);
        t.mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
        CHECK(t.mem_fd >= 0);
        r = find_libjvm(&t, symbols);
        CHECK_INT_EQ(r, 0);
        if (r == 0) {
                r = hotspot_vmstructs_read(symbols, mem_read, &t, &vs, &reason, &what);
                if (r < 0)
                        fprintf(stderr, "hotspot_vmstructs_read: %s, %s (%s)\n", strerror(-r),
                                hotspot_vmstructs_reason_name(reason), what ?: "-");
                CHECK_INT_EQ(r, 0);
        }
        if (r == 0) {
                /* What the decoder checks against, all described by JDK 17 and 25. */
                printf("JDK %d, line tables in %s\n", vs.version_major,
                       hotspot_lines_format_of(vs.version_major) == HOTSPOT_LINES_UNSIGNED5 ? "UNSIGNED5"
                                                                                              : "UNSIGNED5 without 0 bytes");
                printf("ConstantPool _length %u _tags %u; Array<int> _length %u; Array<u1> _data %u; "
                       "InstanceKlass _constants %u; Symbol _length_and_refcount %d\n",
                       vs.constant_pool_length, vs.constant_pool_tags, vs.array_length, vs.array_u1_data,
                       vs.instance_klass_constants, (int) vs.symbol_length_and_refcount);
                CHECK(vs.constant_pool_length < vs.constant_pool_size);
                CHECK(vs.constant_pool_tags < vs.constant_pool_size);
                CHECK_INT_EQ(vs.array_length, 0);
                CHECK_INT_EQ(vs.array_u1_data, 4);
                CHECK(vs.instance_klass_constants != HOTSPOT_NO_FIELD);
                CHECK_INT_EQ(vs.symbol_length_and_refcount, HOTSPOT_NO_FIELD);

                klass = find_class(&t, symbols, &vs, "demo/app/Names");
                CHECK(klass != 0);
                if (klass && name_method(&t, symbols, &vs, klass, "compute", &m) == 0) {
                        CHECK_STR_EQ(m.function, "demo.app.Names.compute");
                        CHECK_STR_EQ(m.class_name, "demo.app.Names");
                        CHECK_STR_EQ(m.signature, "(I)J");
                        CHECK_STR_EQ(m.source_file, "Names.java");
                        CHECK_INT_EQ(m.lines_reason, HOTSPOT_NAMES_OK);
                        /* `long sum = 0;` opens it; the loop's body and the
                         * return are at their lines; the last bytecode
                         * (lreturn) is the return's. */
                        CHECK_INT_EQ(hotspot_lines_lookup(m.lines, m.n_lines, 0), 11);
                        CHECK_INT_EQ(hotspot_lines_lookup(m.lines, m.n_lines, m.code_size - 1), 15);
                        for (size_t k = 0; k < m.n_lines; k++)
                                CHECK(m.lines[k].line >= 11 && m.lines[k].line <= 15 && m.lines[k].line != 14);
                        hotspot_method_done(&m);
                } else
                        CHECK(false);
                klass = find_class(&t, symbols, &vs, "demo/app/Names$Inner");
                CHECK(klass != 0);
                if (klass && name_method(&t, symbols, &vs, klass, "twice", &m) == 0) {
                        CHECK_STR_EQ(m.function, "demo.app.Names$Inner.twice");
                        CHECK_STR_EQ(m.signature, "(J)J");
                        CHECK_STR_EQ(m.source_file, "Names.java");
                        CHECK_INT_EQ(m.n_lines, 1);
                        CHECK_INT_EQ(hotspot_lines_lookup(m.lines, m.n_lines, 0), 6);
                        hotspot_method_done(&m);
                } else
                        CHECK(false);
                /* A JDK class, from the boot loader's list and the CDS archive. */
                klass = find_class(&t, symbols, &vs, "java/lang/String");
                CHECK(klass != 0);
                if (klass && name_method(&t, symbols, &vs, klass, "hashCode", &m) == 0) {
                        CHECK_STR_EQ(m.function, "java.lang.String.hashCode");
                        CHECK_STR_EQ(m.signature, "()I");
                        CHECK_STR_EQ(m.source_file, "String.java");
                        CHECK(m.n_lines > 0);
                        hotspot_method_done(&m);
                } else
                        CHECK(false);
        }

        kill(t.pid, SIGKILL);
        CHECK(waitpid(t.pid, &status, 0) == t.pid);
        safe_close(t.mem_fd);
        TESTS_DONE();
}
