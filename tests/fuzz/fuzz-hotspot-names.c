/* libFuzzer target: the HotSpot name decoder on memory the JVM controls.
 * The input is a memory image mapped at 0x1000 with a Method at its first
 * byte, read with JDK 17's offsets; the same bytes are also decoded as a
 * line table in both formats, for a method of as many bytes of bytecode
 * as the first two say. Invariants: no read outside the image, every
 * failure a named reason, a name only when every part of it is one, line
 * rows inside the code, the reuse key read alone equal to the names'. */
#include <errno.h>

#include "fuzz.h"
#include "hotspot-names.h"
#include "../unit/hotspot-jdk17.h"

#define IMAGE_BASE UINT64_C(0x1000)

struct image {
        const uint8_t *bytes;
        size_t size;
};

static int image_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        const struct image *m = userdata;

        if (addr < IMAGE_BASE || addr - IMAGE_BASE > m->size || size > m->size - (addr - IMAGE_BASE))
                return -EFAULT;
        memcpy(buf, m->bytes + (addr - IMAGE_BASE), size);
        return 0;
}

static void check_lines(const struct hotspot_line *lines, size_t n, uint32_t code_size) {
        FUZZ_CHECK(n <= HOTSPOT_LINES_MAX);
        FUZZ_CHECK(n == 0 || lines);
        for (size_t i = 0; i < n; i++) {
                int line = hotspot_lines_lookup(lines, n, lines[i].bci);

                FUZZ_CHECK(lines[i].bci < code_size && lines[i].line <= UINT16_MAX);
                /* A row's own bci finds the first row at it. */
                for (size_t k = 0; k < n; k++)
                        if (lines[k].bci == lines[i].bci) {
                                FUZZ_CHECK(line == (int) lines[k].line);
                                break;
                        }
        }
        FUZZ_CHECK(hotspot_lines_lookup(lines, n, 0) >= -ENOENT);
}

static void fuzz_lines(const uint8_t *data, size_t size) {
        uint32_t code_size = size >= 2 ? (uint32_t) (data[0] | data[1] << 8) : 0;

        for (int f = 0; f < 2 && size >= 2; f++) {
                struct hotspot_line *lines = NULL;
                size_t n = 0, used = 0;
                int r;

                r = hotspot_lines_decode(data + 2, size - 2,
                                         f ? HOTSPOT_LINES_UNSIGNED5_NO_ZERO : HOTSPOT_LINES_UNSIGNED5, code_size,
                                         &lines, &n, &used);
                FUZZ_CHECK(r == 0 || r == -ENODATA || r == -EBADMSG);
                if (r == 0) {
                        FUZZ_CHECK(used >= 1 && used <= size - 2 && data[2 + used - 1] == 0);
                        check_lines(lines, n, code_size);
                }
                free(lines);
        }
}

static void check_name(const char *s, enum hotspot_symbol_kind kind) {
        FUZZ_CHECK(s);
        FUZZ_CHECK(strlen(s) <= (kind == HOTSPOT_SYMBOL_SIGNATURE ? HOTSPOT_SIGNATURE_MAX : HOTSPOT_NAME_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* JDK 17's offsets, as test-hotspot-jvm reads them. */
        static const struct hotspot_vmstructs vs = {
                .version_major = 17,
                HOTSPOT_JDK17_NAME_FIELDS,
        };
        struct image m = { data, size };
        enum hotspot_names_reason reason = _HOTSPOT_NAMES_REASON_MAX;
        struct hotspot_method h = {};
        int r;

        fuzz_lines(data, size);

        r = hotspot_method_read(&vs, image_read, &m, IMAGE_BASE, &h, &reason);
        FUZZ_CHECK((unsigned) reason < _HOTSPOT_NAMES_REASON_MAX);
        FUZZ_CHECK(strcmp(hotspot_names_reason_name(reason), "unknown") != 0);
        if (r < 0) {
                FUZZ_CHECK(r == -EIO || r == -EBADMSG || r == -EPROTONOSUPPORT);
                FUZZ_CHECK(reason != HOTSPOT_NAMES_OK);
                FUZZ_CHECK(!h.function && !h.class_name && !h.lines);
                return 0;
        }
        FUZZ_CHECK(reason == HOTSPOT_NAMES_OK);
        /* The reuse check reads the same key from the same memory. */
        {
                struct hotspot_method_key key;

                FUZZ_CHECK(hotspot_method_key_read(&vs, image_read, &m, IMAGE_BASE, &key, &reason) == 0);
                FUZZ_CHECK(hotspot_method_key_equal(&key, &h.key));
        }
        check_name(h.class_name, HOTSPOT_SYMBOL_CLASS);
        check_name(h.method_name, HOTSPOT_SYMBOL_METHOD);
        check_name(h.signature, HOTSPOT_SYMBOL_SIGNATURE);
        FUZZ_CHECK(!strchr(h.class_name, '/'));
        FUZZ_CHECK(h.signature[0] == '(');
        FUZZ_CHECK(!strchr(h.method_name, '.'));
        /* package.Class.method: the class, a dot, the method. */
        FUZZ_CHECK(strlen(h.function) == strlen(h.class_name) + 1 + strlen(h.method_name));
        FUZZ_CHECK(strncmp(h.function, h.class_name, strlen(h.class_name)) == 0);
        FUZZ_CHECK(strcmp(h.function + strlen(h.class_name) + 1, h.method_name) == 0);
        if (h.source_file)
                check_name(h.source_file, HOTSPOT_SYMBOL_SOURCE_FILE);
        FUZZ_CHECK((unsigned) h.lines_reason < _HOTSPOT_NAMES_REASON_MAX);
        if (h.lines_reason == HOTSPOT_NAMES_OK)
                check_lines(h.lines, h.n_lines, h.code_size);
        else
                FUZZ_CHECK(!h.lines && h.n_lines == 0);
        hotspot_method_done(&h);
        return 0;
}
