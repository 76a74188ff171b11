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
#include "jvm-target.h"
#include "hotspot-names.h"
#include "hotspot-vmstructs.h"
#include "macro.h"
#include "procmaps.h"
#include "tests.h"

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

        CHECK_INT_EQ(t.missing, 0);
        kill(t.pid, SIGKILL);
        CHECK(waitpid(t.pid, &status, 0) == t.pid);
        safe_close(t.mem_fd);
        TESTS_DONE();
}
