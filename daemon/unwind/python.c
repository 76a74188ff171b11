/* CPython, a runtime walker: discovery and naming (the hooks of runtime.h). */
#include "python.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "macro.h"
#include "python-code.h"
#include "python-discover.h"

static uint16_t field16(uint32_t v) {
        return v == PYTHON_NO_FIELD || v > 0xfffe ? 0xffff : (uint16_t) v;
}

int python_found_make(const struct python_binary *bin, const struct python_layout *layout,
                      struct unwind_runtime_found *ret) {
        struct python_names names = { .layout = *layout, .code_type = bin->code_type };
        struct profd_python *py;

        _Static_assert(sizeof(names) <= UNWIND_RUNTIME_NAMES_MAX, "python_names fits");
        if (layout->runtime_tss_key == PYTHON_NO_FIELD || layout->runtime_tss_key + 4 > bin->runtime_size)
                return -EPROTONOSUPPORT;
        /* every offset the walker reads must fit its 16 bits */
        if (field16(layout->current_frame) == 0xffff || field16(layout->frame_code) == 0xffff ||
            field16(layout->frame_previous) == 0xffff || field16(layout->frame_instr) == 0xffff ||
            field16(layout->frame_owner) == 0xffff || field16(layout->code_adaptive) == 0xffff)
                return -EPROTONOSUPPORT;
        *ret = (struct unwind_runtime_found) {
                .id = UNWIND_RUNTIME_PYTHON,
                .lo = bin->eval_start,
                .hi = bin->eval_end,
                .cold_lo = bin->cold_start,
                .cold_hi = bin->cold_end,
                .bpf = { .id = UNWIND_RUNTIME_PYTHON, .version = bin->version },
        };
        py = &ret->bpf.python;
        py->tss_key = bin->runtime + layout->runtime_tss_key;
        py->tstate_cframe = field16(layout->tstate_cframe);
        py->current_frame = field16(layout->current_frame);
        py->frame_code = field16(layout->frame_code);
        py->frame_previous = field16(layout->frame_previous);
        py->frame_instr = field16(layout->frame_instr);
        py->frame_owner = field16(layout->frame_owner);
        py->frame_is_entry = field16(layout->frame_is_entry);
        py->code_adaptive = field16(layout->code_adaptive);
        py->owner_cstack = layout->owner_cstack;
        py->glibc_specific = PYTHON_GLIBC_SPECIFIC;
        memcpy(ret->names, &names, sizeof(names));
        return 0;
}

static int python_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret) {
        struct python_binary bin;
        struct python_layout layout;
        int r;

        (void) key;
        r = python_discover_elf(elf, &bin);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = python_layout_get(bin.version, bin.runtime_head, bin.runtime_head_size, &layout);
        if (r < 0)
                return r;
        r = python_found_make(&bin, &layout, ret);
        return r < 0 ? r : 1;
}

uint64_t python_code_identity(const char *qualname, const char *filename, int32_t firstlineno) {
        /* FNV-1a over qualname NUL filename NUL firstlineno (4 bytes,
         * little-endian), then hash_u64's mix: stored in build_ids, so it
         * never changes (tests/unit/test-runtime-names.c pins a value) */
        uint64_t h = 0xcbf29ce484222325ULL;
        uint8_t line[4];

        for (const char *p = qualname; ; p++) {
                h = (h ^ (uint8_t) *p) * 0x100000001b3ULL;
                if (!*p)
                        break;
        }
        for (const char *p = filename; ; p++) {
                h = (h ^ (uint8_t) *p) * 0x100000001b3ULL;
                if (!*p)
                        break;
        }
        for (unsigned i = 0; i < 4; i++) {
                line[i] = (uint8_t) ((uint32_t) firstlineno >> (8 * i));
                h = (h ^ line[i]) * 0x100000001b3ULL;
        }
        return hash_u64(h);
}

/* The fields of a code object's head that naming reads: another object
 * put at the same address differs in one of them (a code object's own
 * strings and line table live as long as it does). The reference count
 * and the caches around them change while it lives, so they are left out. */
struct python_code_head {
        uint64_t type, qualname, filename, linetable;
        int32_t firstlineno;
};

struct unwind_runtime_code {
        struct python_code code;
        struct python_code_head head;
        uint64_t identity;
};

static struct python_names names_of(const struct unwind_runtime_found *found) {
        struct python_names n;

        memcpy(&n, found->names, sizeof(n));  /* names[] is bytes: no alignment promised */
        return n;
}

static uint64_t head_field(const uint8_t *buf, uint32_t off, unsigned n) {
        uint64_t v = 0;

        for (unsigned i = 0; i < n; i++)
                v |= (uint64_t) buf[off + i] << (8 * i);
        return v;
}

/* Reads the head fields of the object at addr. Returns 0, -EBADMSG when
 * the layout's offsets are past what a head can be, or what read failed
 * with. */
static int code_head_read(const struct python_layout *l, unwind_runtime_read_fn read, void *userdata, uint64_t addr,
                          struct python_code_head *ret) {
        uint8_t buf[1024];
        size_t n = l->object_type + 8;
        int r;

        n = MAX(n, (size_t) l->code_firstlineno + 4);
        n = MAX(n, (size_t) l->code_filename + 8);
        n = MAX(n, (size_t) l->code_qualname + 8);
        n = MAX(n, (size_t) l->code_linetable + 8);
        if (n > sizeof(buf))
                return -EBADMSG;
        r = read(userdata, addr, buf, n);
        if (r < 0)
                return r;
        *ret = (struct python_code_head) {
                .type = head_field(buf, l->object_type, 8),
                .qualname = head_field(buf, l->code_qualname, 8),
                .filename = head_field(buf, l->code_filename, 8),
                .linetable = head_field(buf, l->code_linetable, 8),
                .firstlineno = (int32_t) head_field(buf, l->code_firstlineno, 4),
        };
        return 0;
}

static int python_code_read_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                                 void *userdata, uint64_t addr, unwind_runtime_code **ret, size_t *ret_bytes,
                                 unsigned *ret_reason) {
        struct python_names names = names_of(found);
        uint64_t code_type = names.code_type ? names.code_type + bias : 0;
        _cleanup_free_ unwind_runtime_code *c = calloc(1, sizeof(*c));
        enum python_code_reason reason = PYTHON_CODE_OK;
        int r;

        if (!c)
                return -ENOMEM;
        r = code_head_read(&names.layout, read, userdata, addr, &c->head);
        if (r < 0) {
                *ret_reason = r == -EBADMSG ? PYTHON_CODE_NOT_CODE : PYTHON_CODE_READ_CODE;
                return r;
        }
        r = python_code_read(&names.layout, read, userdata, code_type, addr, &c->code, &reason);
        if (r < 0) {
                *ret_reason = reason;
                return r;
        }
        c->identity = python_code_identity(c->code.qualname, c->code.filename, c->code.firstlineno);
        *ret_bytes = sizeof(*c) + strlen(c->code.qualname) + 1 + strlen(c->code.filename) + 1 +
                     c->code.linetable_size;
        *ret_reason = PYTHON_CODE_OK;
        *ret = TAKE_PTR(c);
        return 0;
}

static int python_code_same_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                                 void *userdata, uint64_t addr, const unwind_runtime_code *code) {
        struct python_names names = names_of(found);
        struct python_code_head now;
        int r;

        (void) bias;
        r = code_head_read(&names.layout, read, userdata, addr, &now);
        if (r == -EBADMSG)
                return 0;
        if (r < 0)
                return r;
        return now.type == code->head.type && now.qualname == code->head.qualname &&
               now.filename == code->head.filename && now.linetable == code->head.linetable &&
               now.firstlineno == code->head.firstlineno;
}

static void python_code_name_hook(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                                  unsigned *ret_reason) {
        enum python_code_reason reason = PYTHON_CODE_OK;
        int32_t line = 0;

        *ret = (struct unwind_runtime_name) {
                .function = code->code.qualname,
                .file = code->code.filename,
                .identity = code->identity,
        };
        /* an offset saturated at the encoding's most (0xffff) is past
         * where it was: its line would be a guess */
        if (offset >= PROFD_RT_FRAME_OFFSET_MAX)
                reason = PYTHON_CODE_OFFSET_PAST_TABLE;
        else if (python_code_line(&code->code, offset, &line, &reason) == 0 && line <= 0)
                reason = PYTHON_CODE_NO_LINE;
        ret->line = reason == PYTHON_CODE_OK ? (uint32_t) line : 0;
        *ret_reason = reason;
}

static void python_code_free_hook(unwind_runtime_code *code) {
        if (code) {
                python_code_done(&code->code);
                free(code);
        }
}

static const char *python_reason_name(unsigned reason) {
        return python_code_reason_name((enum python_code_reason) reason);
}

const struct unwind_runtime python_runtime = {
        .name = "python",
        .id = UNWIND_RUNTIME_PYTHON,
        .discover = python_discover,
        .code_read = python_code_read_hook,
        .code_same = python_code_same_hook,
        .code_name = python_code_name_hook,
        .code_free = python_code_free_hook,
        .code_in_files_shared = true,
        .reason_name = python_reason_name,
        .reasons_max = _PYTHON_CODE_REASON_MAX,
};
